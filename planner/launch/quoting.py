"""Everything that puts outside text (job ids, paths, arguments) into a script or an object name.

Job ids, commands, paths and environment values come from the instance and may hold anything:
``x; rm -rf /``, ``$(reboot)``, quotes, backticks, newlines. The rules:

- in shell code a value only ever appears through :func:`sh_quote` (a single-quoted word) or as
  the value of a variable that is expanded inside double quotes;
- in a shell comment a value only ever appears through :func:`comment_text` (one line of
  printable ASCII, so it cannot end the comment);
- Slurm ``#SBATCH`` lines are parsed by ``sbatch``, not by a shell, so they only hold tokens that
  pass :func:`checked_token` (no quotes, spaces or shell characters at all);
- names (files, Slurm job names, Kubernetes objects and labels) are made by :func:`safe_name`,
  a lowercase slug plus a hash of the original text, so two ids never share a name.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable

# Put right after the shebang of scripts that hold outside text: ShellCheck's SC2016 ("expressions don't
# expand in single quotes") is exactly what sh_quote is for.
SHELLCHECK_SINGLE_QUOTES = (
    "# Values are single-quoted on purpose: nothing in them may expand.\n# shellcheck disable=SC2016"
)

_SAFE_TOKEN = re.compile(r"[A-Za-z0-9._,:=/%+@-]+")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
HASH_LEN = 8
K8S_NAME_MAX = 63
"""Longest Kubernetes DNS-1123 label, label value or namespace (characters)."""


def sh_quote(text: str) -> str:
    """One shell word that the shell reads back as exactly ``text``; nothing in it is expanded.

    Raises ``ValueError`` for a NUL character, which no shell word or argv entry can hold.
    """
    if "\0" in text:
        raise ValueError(f"{comment_text(text)} contains a NUL character, which no command line can carry")
    return shlex.quote(text)


def sh_words(words: Iterable[str]) -> str:
    """The words quoted one by one and joined with spaces: an argv the shell passes unchanged."""
    return " ".join(sh_quote(w) for w in words)


def comment_text(text: str) -> str:
    """``text`` as a double-quoted JSON string: one line of printable ASCII, safe inside a ``#`` comment."""
    return json.dumps(text, ensure_ascii=True)


def is_plain_token(text: str) -> bool:
    """Whether ``text`` is one plain token (letters, digits and ``._,:=/%+@-``): what an ``#SBATCH`` line may hold."""
    return _SAFE_TOKEN.fullmatch(text) is not None


def checked_token(text: str) -> str:
    """``text`` unchanged if it is one plain token (letters, digits and ``._,:=/%+@-``), else ``ValueError``.

    Used for every value written on a ``#SBATCH`` line, which ``sbatch`` (not a shell) parses.
    """
    if not is_plain_token(text):
        raise ValueError(f"{comment_text(text)} is not a plain token; refusing to write it on an #SBATCH line")
    return text


def short_hash(*parts: str) -> str:
    """The first 8 hex digits of SHA-256 over the parts (separated by NUL): stable across runs."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LEN]


def slug(text: str, max_len: int = 40) -> str:
    """Lowercase letters, digits and single dashes from ``text``, at most ``max_len`` long; ``x`` if none."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:max_len].strip("-")
    return out or "x"


def safe_name(prefix: str, *ids: str, max_len: int = K8S_NAME_MAX) -> str:
    """``prefix`` + slugs of ``ids`` + a hash of the ids: a DNS-1123 label (also a fine file name).

    Guarantees: at most ``max_len`` characters, only ``[a-z0-9-]``, starts and ends with a letter or
    digit (given a prefix that does), and different id tuples give different names (up to the hash).
    """
    digest = short_hash(*ids)
    room = max_len - len(prefix) - len(digest) - 1
    if room < 1:
        raise ValueError(f"prefix {prefix!r} leaves no room for a name of {max_len} characters")
    body = "-".join(slug(i) for i in ids)[:room].strip("-")
    name = f"{prefix}{body}-{digest}" if body else f"{prefix}{digest}"
    if not is_dns1123_label(name):
        raise ValueError(f"internal: {name!r} is not a DNS-1123 label")
    return name


def is_dns1123_label(text: str) -> bool:
    """True for a Kubernetes DNS-1123 label: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 63 characters."""
    return len(text) <= K8S_NAME_MAX and bool(_DNS_LABEL.fullmatch(text))


def is_dns1123_subdomain(text: str) -> bool:
    """True for a DNS-1123 subdomain (dot-separated labels, at most 253 characters): a valid node name."""
    return 0 < len(text) <= 253 and all(_DNS_LABEL.fullmatch(part) for part in text.split("."))


def is_label_value(text: str) -> bool:
    """True for a Kubernetes label value (at most 63 characters of ``[A-Za-z0-9_.-]``, alphanumeric ends)."""
    return len(text) <= K8S_NAME_MAX and bool(_LABEL_VALUE.fullmatch(text))
