"""Mutations of valid inputs: JSON documents, CSV and trace text, raw bytes, file kinds and option values.

Every function takes a :class:`random.Random` and returns the mutated content and a short label of what was done
(``json:null@jobs[1].gpus``), so a case is named by its surface, its seed and this label.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from dataclasses import dataclass
from typing import Any

import yaml

MARKUP = ["[/]", "[red]x", "[bold]job[/bold]", ":smile:", "[link=file:///etc/passwd]x[/link]"]
CONTROL = ["\x00", "\x1b[31mred\x1b[0m", "a\rb", "tab\there", "\u202eevil", "line\nbreak"]
SUPERSCRIPT = ["\u00b2", "1\u00b2", "\u2078", "\u00b9\u2070"]
BIG_STRING_CHARS = 20_000

JSON_VALUE_KINDS = [
    "delete",
    "null",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1",
    "0",
    "1.5",
    "huge-int",
    "wrong-type-str",
    "wrong-type-list",
    "wrong-type-object",
    "wrong-type-bool",
    "empty-string",
    "huge-string",
    "markup",
    "control",
    "superscript",
    "duplicate-key",
    "deep-nesting",
    "empty-container",
]
JSON_BYTE_KINDS = ["truncate", "bom", "invalid-utf8", "empty"]
CSV_KINDS = [
    "truncate-row",
    "extra-column",
    "missing-column",
    "duplicate-column",
    "unterminated-quote",
    "timezone",
    "unit-suffix",
    "not-available",
    "nan-cell",
    "inf-cell",
    "huge-cell",
    "negative-cell",
    "zero-cell",
    "empty-cell",
    "markup-cell",
    "superscript-cell",
    "blank-lines",
    "header-repeated",
    "nul-byte",
    "reorder-columns",
    "header-only",
    "drop-header",
    "crlf",
]
TEXT_BYTE_KINDS = ["truncate", "bom", "invalid-utf8", "empty"]
FILE_KINDS = ["missing", "directory"]

_DUP = "__hostile_duplicate__"
_DEEP = "__hostile_deep__"


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) to a value inside ``doc``, the root excluded."""
    found: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.append((*prefix, key))
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found.append((*prefix, index))
            found.extend(_paths(value, (*prefix, index)))
    return found


def path_text(path: tuple[Any, ...]) -> str:
    """``("jobs", 1, "gpus")`` -> ``jobs[1].gpus`` (the notation of wattplan's problem paths)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _replacement(kind: str, old: Any, rng: random.Random) -> Any:
    """The new value for a JSON value mutation ``kind`` (``old`` is the value it replaces)."""
    table: dict[str, Any] = {
        "null": None,
        "nan": math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "1e308": 1e308,
        "-1": -1,
        "0": 0,
        "1.5": 1.5,
        "huge-int": 10**30,
        "wrong-type-str": "x",
        "wrong-type-list": [old] if not isinstance(old, list) else "x",
        "wrong-type-object": {"value": old},
        "wrong-type-bool": True,
        "empty-string": "",
        "huge-string": "x" * BIG_STRING_CHARS,
        "markup": rng.choice(MARKUP),
        "control": rng.choice(CONTROL),
        "superscript": rng.choice(SUPERSCRIPT),
        "deep-nesting": _DEEP,
        "empty-container": {} if isinstance(old, dict) else [],
    }
    return table[kind]


def _serialise(doc: Any, rng: random.Random) -> str:
    """JSON text with NaN/Infinity literals, a repeated key and deep nesting where the mutation asked for them."""
    text = json.dumps(doc, indent=1, ensure_ascii=rng.random() < 0.5, allow_nan=True)
    if _DUP in text:
        text = text.replace(json.dumps(_DUP), json.dumps(rng.choice(["id", "type", "gpus", "schema", "name"])), 1)
    if _DEEP in text:
        depth = rng.choice([64, 1_000, 100_000])
        text = text.replace(json.dumps(_DEEP), "[" * depth + "]" * depth, 1)
    return text


def mutate_json(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of a JSON document: a value at a random path, or the file's bytes."""
    if rng.random() < 0.15:
        return mutate_bytes(data, rng, "json")
    doc = json.loads(data)
    paths = _paths(doc)
    if not paths:
        return mutate_bytes(data, rng, "json")
    # favour the structure a reader looks at first: the top levels and the first items of each list
    path = rng.choice([p for p in paths if len(p) <= rng.choice([1, 2, 3, 4, 8])] or paths)
    kind = rng.choice(JSON_VALUE_KINDS)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "duplicate-key":
        target = parent[last] if isinstance(parent[last], dict) else parent if isinstance(parent, dict) else None
        if target is None:
            kind = "null"
            parent[last] = None
        else:
            target[_DUP] = rng.choice([None, 0, "x", [1]])
    else:
        parent[last] = _replacement(kind, parent[last], rng)
    return _serialise(doc, rng).encode("utf-8", "surrogatepass"), f"json:{kind}@{path_text(path)}"


def mutate_bytes(data: bytes, rng: random.Random, fmt: str) -> tuple[bytes, str]:
    """A mutation of the file's bytes: cut at a random byte, a UTF-8 BOM, an invalid UTF-8 byte, or empty."""
    kind = rng.choice(JSON_BYTE_KINDS)
    if kind == "truncate":
        at = rng.randrange(len(data)) if data else 0
        return data[:at], f"{fmt}:truncate@byte {at}"
    if kind == "bom":
        return b"\xef\xbb\xbf" + data, f"{fmt}:bom"
    if kind == "invalid-utf8":
        at = rng.randrange(len(data) + 1)
        return data[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"]) + data[at:], f"{fmt}:invalid-utf8@{at}"
    return b"", f"{fmt}:empty"


def _cell(kind: str, old: str, rng: random.Random) -> str:
    """The new text of a CSV cell for a cell mutation ``kind``."""
    stripped = old.strip()
    lead = old[: len(old) - len(old.lstrip())]
    table = {
        "unit-suffix": f"{stripped} {rng.choice(['mW', 'kW', 'dBm', 'W', 'MiB', '%'])}",
        "not-available": rng.choice(["[N/A]", "[Not Supported]", "N/A"]),
        "nan-cell": rng.choice(["nan", "NaN", "-nan"]),
        "inf-cell": rng.choice(["inf", "-inf", "Infinity"]),
        "huge-cell": rng.choice(["1e308", "-1e308", "1e309", "9" * 400]),
        "negative-cell": "-1" if not stripped.startswith("-") else stripped[1:],
        "zero-cell": "0",
        "empty-cell": "",
        "markup-cell": rng.choice(MARKUP),
        "superscript-cell": rng.choice(SUPERSCRIPT),
    }
    return lead + table[kind]


def _timezone(cell: str, rng: random.Random) -> str:
    """A timestamp cell with its zone dropped, or a zone added (mixed naive and zone-aware times)."""
    for zone in ("+00:00", "Z"):
        if cell.endswith(zone):
            return cell[: -len(zone)]
    return cell + rng.choice(["+02:00", "Z", "-05:00"])


def mutate_table(data: bytes, rng: random.Random, sep: str, header: bool, fmt: str) -> tuple[bytes, str]:
    """One mutation of a CSV (``sep`` ``,``) or Gavel trace (``sep`` tab, no header) file."""
    if rng.random() < 0.12:
        return mutate_bytes(data, rng, fmt)
    lines = data.decode("utf-8").splitlines()
    first = 1 if header else 0
    if len(lines) <= first:
        return mutate_bytes(data, rng, fmt)
    kind = rng.choice([k for k in CSV_KINDS if header or k not in ("header-repeated", "header-only", "drop-header")])
    rows = [line.split(sep) for line in lines]
    width = len(rows[0])
    r = rng.randrange(first, len(rows))
    c = rng.randrange(len(rows[r]))
    where = f"line {r + 1}"
    if kind == "truncate-row":
        cut = rng.randrange(max(len(lines[r]), 1))
        lines[r] = lines[r][:cut]
    elif kind == "extra-column":
        rows[r].append(rng.choice(["x", "1", ""]))
        lines[r] = sep.join(rows[r])
    elif kind == "missing-column":
        rows[r].pop(c)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind == "duplicate-column":
        c = rng.randrange(width)
        lines = [sep.join([*row, row[c]] if c < len(row) else row) for row in rows]
        where = f"col {c + 1}"
    elif kind == "unterminated-quote":
        rows[r][c] = '"' + rows[r][c]
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind == "timezone":
        c = next((k for k, v in enumerate(rows[r]) if ":" in v and "-" in v or "/" in v), c)
        rows[r][c] = _timezone(rows[r][c], rng)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind in ("blank-lines", "header-repeated"):
        lines.insert(r, "" if kind == "blank-lines" else lines[0])
    elif kind == "nul-byte":
        at = rng.randrange(len(lines[r]) + 1)
        lines[r] = lines[r][:at] + "\x00" + lines[r][at:]
    elif kind == "reorder-columns":
        order = list(range(width))
        rng.shuffle(order)
        lines = [sep.join(row[k] for k in order if k < len(row)) for row in rows]
        where = "all"
    elif kind == "header-only":
        lines = lines[:1]
        where = "all"
    elif kind == "drop-header":
        lines = lines[1:]
        where = "line 1"
    elif kind == "crlf":
        return ("\r\n".join(lines) + "\r\n").encode("utf-8"), f"{fmt}:crlf"
    else:
        rows[r][c] = _cell(kind, rows[r][c], rng)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    return ("\n".join(lines) + "\n").encode("utf-8"), f"{fmt}:{kind}@{where}"


FLOAT_VALUES = ["nan", "inf", "-inf", "0", "-1", "1e308", "-1e308", "1e-308", "abc", "", "\u00b2", "1e400"]
INT_VALUES = ["0", "-1", "99999999999999999999", "1.5", "abc", "nan", "", "\u00b2", "2147483648"]
LIST_VALUES = ["0.1,,nan", ",", "nan", "inf,-1", "1e308", "x", "0.1;0.2", "[0.1]", "", "-0.5", "0.1,0.1", "1e400"]
INT_LIST_VALUES = ["3,,x", ",", "0", "-3", "1e308", "nan", "3;4", "99999999999", "", "1.5", "\u00b9"]
TEXT_VALUES = ["", "[/]", "[red]x", "\x00", "x" * 5_000, "\u00b2", "../../etc/passwd", "a,b,,c", ":", "nan"]
OPTION_VALUES: dict[str, list[str]] = {
    "float": FLOAT_VALUES,
    "int": INT_VALUES,
    "float-list": LIST_VALUES,
    "int-list": INT_LIST_VALUES,
    "text": TEXT_VALUES,
}


def option_value(kind: str, rng: random.Random, extra: list[str] | None = None) -> str:
    """A hostile value for an option of ``kind`` (float, int, float-list, int-list, text), or one of ``extra``."""
    return rng.choice(OPTION_VALUES[kind] + (extra or []))


# ---------------------------------------------------------------------------------------------- issue 41: new kinds

PWNED = "PWNED"
"""The file a shell metacharacter's injection would create (the oracle looks for it in the case's folder)."""
HOSTILE_TEXT = [
    "\x00",
    "a\x00b",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x1b[31mred\x1b[0m",
    "\x9b2J",
    "a\nb",
    "a\rb",
    "tab\there",
    f"$(touch {PWNED})",
    f"`touch {PWNED}`",
    f"x; touch {PWNED}",
    f"x' ; touch {PWNED}; '",
    'x" ; touch PWNED; "',
    "--help",
    "-rf",
    "../../etc/passwd",
    "\u202eevil",
    "=cmd|' /C calc'!A0",
    "x" * 5_000,
]
"""User-controlled text an attacker or a careless user writes: NUL, ESC and OSC sequences, C1 CSI, newlines,
shell metacharacters, option-like words, path traversal, bidi overrides, a spreadsheet formula, 5,000 chars."""
ESCAPES = ("\x1b", "\x9b", "\x07", "\x00", "\x08")
"""Characters that must never reach the terminal raw (the oracle's ``raw-control``)."""

YAML_IMPLICIT = ["0755", "1:30", "yes", "no", "on", "off", "y", "n", "2001-12-14", "0x1F", "1_000", "+12", ".inf"]
"""Plain scalars YAML 1.1 (PyYAML) reads as something other than the string written (octal, sexagesimal,
booleans, dates, hex, underscores, a sign, infinity). A safe loader keeps each as the text written."""
YAML_NULLS = ["~", "null", ""]
YAML_TAGS = [
    "!!binary aGVsbG8=",
    "!!set {a: null}",
    "!!timestamp 2001-12-14",
    "!!float 1",
    "!!python/object/apply:os.system [touch PWNED]",
    "!!python/name:os.system",
    "!custom x",
]
YAML_KINDS = [
    "value",
    "hostile-text",
    "implicit-type",
    "null-token",
    "alias-bomb",
    "alias",
    "duplicate-key",
    "deep-nesting",
    "tab-indent",
    "document-separator",
    "multi-doc",
    "document-end",
    "tag",
]
BOMB_LEVELS = (6, 9)
"""Levels of the alias bomb (9 items per level): 9**9 = 387 million strings once expanded, from ~400 bytes."""
JOB_CSV_KINDS = ["repeated-column", "hostile-text-cell", "quoted-newline", "implicit-cell"]
"""Extra CSV kinds of job lists (on top of :data:`CSV_KINDS`)."""

_HOLE = "__hostile_hole__"


@dataclass(frozen=True)
class Mutated:
    """A mutated file: its bytes and label, whether it must be refused, and its control.

    ``must_refuse``: reading it without a refusal is a defect; ``control``: the same file with the mutated scalar
    quoted, which a correct reader reads the same way.
    """

    content: bytes
    label: str
    must_refuse: bool = False
    control: bytes | None = None


def _dump_yaml(doc: Any) -> str:
    """Block-style YAML of ``doc`` in its own key order."""
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)


def _bomb(levels: int) -> str:
    """A billion-laughs flow sequence of ``levels`` anchored levels of 9 aliases each, one line."""
    parts = ["&l0 [" + ", ".join(["lol"] * 9) + "]"]
    for k in range(1, levels):
        parts.append(f"&l{k} [" + ", ".join([f"*l{k - 1}"] * 9) + "]")
    return "[" + ", ".join(parts) + "]"


def _yaml_path(doc: Any, rng: random.Random) -> tuple[Any, ...]:
    """A path into ``doc`` favouring the first levels and the first items."""
    paths = _paths(doc)
    return rng.choice([p for p in paths if len(p) <= rng.choice([1, 2, 3, 4])] or paths)


def _with_hole(doc: Any, path: tuple[Any, ...]) -> Any:
    """``doc`` with the value at ``path`` replaced by the placeholder."""
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = _HOLE
    return doc


def _fill(text: str, raw: str) -> str:
    """The YAML text with its placeholder replaced by ``raw`` (raw YAML source)."""
    return text.replace(_HOLE, raw, 1)


def mutate_yaml(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of a YAML document (job list or cluster file): see :data:`YAML_KINDS`."""
    if rng.random() < 0.08:
        new, label = mutate_bytes(data, rng, "yaml")
        return Mutated(new, label)
    doc = yaml.safe_load(data)
    kind = rng.choice(YAML_KINDS)
    path = _yaml_path(doc, rng)
    if kind in ("implicit-type", "hostile-text", "null-token") and rng.random() < 0.85:  # mostly a scalar
        path = rng.choice([p for p in _paths(doc) if not isinstance(_at(doc, p), dict | list)])
    where = path_text(path)
    if kind == "value":
        value_kind = rng.choice([k for k in JSON_VALUE_KINDS if k not in ("nan", "inf", "-inf", "duplicate-key")])
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        if value_kind == "delete":
            del parent[path[-1]]
            return Mutated(_dump_yaml(doc).encode(), f"yaml:delete@{where}")
        new_value = _replacement(value_kind, parent[path[-1]], rng)
        if new_value == _DEEP:
            kind = "deep-nesting"
        else:
            parent[path[-1]] = new_value
            return Mutated(_dump_yaml(doc).encode("utf-8", "surrogatepass"), f"yaml:{value_kind}@{where}")
    if kind == "hostile-text":
        text = rng.choice(HOSTILE_TEXT)
        return Mutated(_fill(_dump_yaml(_with_hole(doc, path)), json.dumps(text)).encode(), f"yaml:{kind}@{where}")
    if kind == "implicit-type":
        token = rng.choice(YAML_IMPLICIT)
        text = _dump_yaml(_with_hole(doc, path))
        control = _fill(text, json.dumps(token)).encode()
        return Mutated(_fill(text, token).encode(), f"yaml:{kind}={token}@{where}", control=control)
    if kind == "null-token":
        token = rng.choice(YAML_NULLS)
        return Mutated(_fill(_dump_yaml(_with_hole(doc, path)), token).encode(), f"yaml:{kind}@{where}")
    if kind == "alias-bomb":
        levels = rng.choice(BOMB_LEVELS)
        text = _fill(_dump_yaml(_with_hole(doc, path)), _bomb(levels))
        return Mutated(text.encode(), f"yaml:{kind}({levels} levels)@{where}", must_refuse=levels >= 9)
    if kind == "alias":
        return _alias(doc, rng)
    if kind == "duplicate-key":
        return _duplicate_key(doc, path, rng)
    if kind == "deep-nesting":
        depth = rng.choice([64, 1_000, 100_000])
        text = _fill(_dump_yaml(_with_hole(doc, path)), "[" * depth + "]" * depth)
        return Mutated(text.encode(), f"yaml:deep-nesting({depth})@{where}")
    text = _dump_yaml(doc)
    lines = text.splitlines()
    at = rng.randrange(1, len(lines))
    if kind == "tab-indent":
        indented = [k for k, line in enumerate(lines) if line.startswith(" ")] or [at]
        at = rng.choice(indented)
        lines[at] = "\t" + lines[at].lstrip(" ")
    elif kind == "document-separator":
        lines.insert(at, "---")
    elif kind == "document-end":
        lines.insert(at, "...")
    elif kind == "multi-doc":
        return Mutated((text + "---\n" + text).encode(), f"yaml:{kind}", must_refuse=True)
    else:  # tag
        tag = rng.choice(YAML_TAGS)
        return Mutated(_fill(_dump_yaml(_with_hole(doc, path)), tag).encode(), f"yaml:tag={tag.split()[0]}@{where}")
    return Mutated(("\n".join(lines) + "\n").encode(), f"yaml:{kind}@line {at + 1}", must_refuse=kind != "tab-indent")


def _alias(doc: Any, rng: random.Random) -> Mutated:
    """One scalar anchored (``&x``) and another scalar replaced by its alias (``*x``): one alias, no bomb."""
    scalars = [p for p in _paths(doc) if not isinstance(_at(doc, p), dict | list)]
    first, second = sorted(rng.sample(scalars, 2))  # document order: the anchor comes first
    value = _at(doc, first)
    _with_hole(doc, first)
    _with_hole(doc, second)
    text = _dump_yaml(doc).replace(_HOLE, "&x " + json.dumps(value), 1).replace(_HOLE, "*x", 1)
    return Mutated(text.encode(), f"yaml:alias@{path_text(first)}->{path_text(second)}")


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` inside ``doc``."""
    for part in path:
        doc = doc[part]
    return doc


def _duplicate_key(doc: Any, path: tuple[Any, ...], rng: random.Random) -> Mutated:
    """A mapping on ``path`` with one key given a second time, with another value (the last one must not win)."""
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    mapping = parent if isinstance(parent, dict) else parent[path[-1]] if isinstance(parent[path[-1]], dict) else doc
    key = rng.choice(list(mapping))
    old = mapping[key]
    other: Any = old * 100 if isinstance(old, int | float) and not isinstance(old, bool) else f"{old}-2"
    if isinstance(old, list | dict):
        other = old
    mapping[_DUP] = other
    text = _dump_yaml(doc).replace(_DUP, str(key), 1)
    return Mutated(text.encode(), f"yaml:duplicate-key@{key}", must_refuse=True)


def mutate_job_csv(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of a CSV job list: the CSV kinds of :func:`mutate_table` or :data:`JOB_CSV_KINDS`."""
    if rng.random() < 0.6:
        new, label = mutate_table(data, rng, ",", True, "csv")
        return Mutated(new, label, must_refuse=label.startswith("csv:duplicate-column"))
    kind = rng.choice(JOB_CSV_KINDS)
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header, body = rows[0], rows[1:]
    r = rng.randrange(len(body))
    c = rng.randrange(len(header))
    where = f"line {r + 2} col {header[c]}"
    if kind == "repeated-column":
        other = {"gpus": "4", "remaining_steps": "99", "weight": "7", "user": "root", "id": "spoof"}
        name = rng.choice(list(other))
        header.append(name)
        for row in body:
            row.append(other[name])
        where = f"col {name}"
    elif kind == "hostile-text-cell":
        body[r][c] = rng.choice(HOSTILE_TEXT)
    elif kind == "quoted-newline":
        body[r][c] = body[r][c] + "\nx,y,z"
    else:
        body[r][c] = rng.choice(YAML_IMPLICIT)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *body])
    return Mutated(buffer.getvalue().encode(), f"csv:{kind}@{where}", must_refuse=kind == "repeated-column")


def mutate_json_hostile(data: bytes, rng: random.Random) -> Mutated:
    """A JSON mutation of :func:`mutate_json`, or a value replaced by a :data:`HOSTILE_TEXT` string."""
    if rng.random() < 0.75:
        new, label = mutate_json(data, rng)
        return Mutated(new, label)
    doc = json.loads(data)
    path = _yaml_path(doc, rng)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = rng.choice(HOSTILE_TEXT)
    return Mutated(json.dumps(doc, indent=1).encode(), f"json:hostile-text@{path_text(path)}")


# ---------------------------------------------------------------------------------------------- the agent's inputs

OPT_IN_VARIANTS = [
    "wattplan:type=ResNet-18 (batch size 64);steps=100",
    " wattplan:type=ResNet-18 (batch size 64);steps=100",
    "WATTPLAN:type=ResNet-18 (batch size 64);steps=100",
    "wattplan\u200b:type=ResNet-18 (batch size 64);steps=100",
    "wattplan:type=ResNet-18 (batch size 64);steps=100;steps=5",
    "wattplan:type=ResNet-18 (batch size 64);steps=0",
    "wattplan:type=ResNet-18 (batch size 64);steps=99999999999999999999",
    "wattplan:type=ResNet-18 (batch size 64);steps=\uff15",
    "wattplan:type=ResNet-18\x1b[2J;steps=5",
    "wattplan:type=\u202eResNet-18 (batch size 64);steps=5",
    "wattplan:type=ResNet-18 (batch size 64);steps=5\n",
    "wattplan:type=ResNet-18 (batch size 64);steps=5;user=root",
    "wattplan:type=ResNet-18 (batch size 64)",
    "wattplan:",
    "wattplan:type=Nope;steps=5",
    "wattplan:type=ResNet-18 (batch size 64);steps=5\x00",
]
"""Slurm comments near the opt-in syntax: valid, with look-alike prefixes, repeated or unknown keys, bad counts,
control characters, another job type."""
SQUEUE_FIELDS = {
    "comment": 5.0,
    "name": 2.0,
    "user_name": 2.0,
    "account": 1.0,
    "state_reason": 3.0,
    "job_state": 1.5,
    "tres_per_node": 1.0,
    "nodes": 1.0,
    "node_count": 0.5,
    "job_id": 0.5,
    "start_time": 0.5,
    "submit_time": 0.3,
    "partition": 0.5,
    "tres_per_job": 0.5,
}
"""Fields of a ``squeue --json`` job the agent reads, by how often a case mutates each (user-controlled ones most)."""
STATE_REASONS = ["JobHeldAdmin", "JobHeldAdmin", "JobHeldUser", "None", "Resources", "", "Priority"]
JOB_STATES = ["RUNNING", "PENDING", "REQUEUE_HOLD", "SUSPENDED", "COMPLETING", "CONFIGURING", "CANCELLED", ""]
SINFO_FIELDS = {"name": 2.0, "state": 1.5, "state_flags": 1.0, "gres": 2.0, "active_features": 0.5, "partitions": 0.5}
GRES_VALUES = ["gpu:v100:8(S:0-1)", "gpu:v100:99999999999", "gpu:v100:-1", "gpu:v100:0", "gpu:a100:8", "gpu:8",
               "gpu:v100:4,gpu:p100:4", "gpu", ""]  # fmt: skip
NODE_STATES = ["idle", "mixed", "allocated", "down", "drained", "future", "IDLE", "", "unknown"]


def _weighted(table: dict[str, float], rng: random.Random) -> str:
    return rng.choices(list(table), weights=list(table.values()))[0]


def _slurm_value(field: str, old: Any, rng: random.Random) -> tuple[Any, str]:
    """A hostile value of a Slurm JSON field, and its kind."""
    roll = rng.random()
    if field == "comment" and roll < 0.7:
        return rng.choice(OPT_IN_VARIANTS), "opt-in"
    if field == "state_reason" and roll < 0.7:
        return rng.choice(STATE_REASONS), "reason"
    if field == "job_state" and roll < 0.7:
        return rng.choice(JOB_STATES), "state"
    if field in ("gres", "tres_per_node") and roll < 0.6:
        value = rng.choice(GRES_VALUES)
        return (f"gres:{value}" if field == "tres_per_node" else value), "gres"
    if field == "state" and roll < 0.6:
        return rng.choice(NODE_STATES), "state"
    if isinstance(old, str) and roll < 0.85:
        return rng.choice(HOSTILE_TEXT), "hostile-text"
    kind = rng.choice([k for k in JSON_VALUE_KINDS if k not in ("delete", "duplicate-key", "deep-nesting")])
    return _replacement(kind, old, rng), kind


def _mutate_slurm(data: bytes, rng: random.Random, key: str, fields: dict[str, float], fmt: str) -> Mutated:
    """A user-controlled field of one item of a Slurm JSON document (``jobs`` or ``nodes``), else any mutation."""
    roll = rng.random()
    if roll < 0.08:
        new, label = mutate_bytes(data, rng, fmt)
        return Mutated(new, label)
    if roll < 0.2:
        new, label = mutate_json(data, rng)
        return Mutated(new, label.replace("json:", f"{fmt}:", 1))
    doc = json.loads(data)
    items = doc[key]
    k = rng.randrange(len(items))
    changes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        field_name = _weighted(fields, rng)
        value, kind = _slurm_value(field_name, items[k].get(field_name), rng)
        if (
            field_name == "comment"
            and kind == "opt-in"
            and items[k].get("job_state") == "RUNNING"
            and rng.random() < 0.5
        ):
            items[k]["state_reason"] = "None"
        items[k][field_name] = value
        changes.append(f"{kind}@{key}[{k}].{field_name}")
    if key == "jobs" and rng.random() < 0.25:  # an administrator's hold on a job that opted in
        target = rng.choice([i for i, j in enumerate(items) if j.get("job_state") == "PENDING"] or [k])
        items[target]["state_reason"] = "JobHeldAdmin"
        changes.append(f"admin-hold@jobs[{target}]")
    text = json.dumps(doc, indent=1, ensure_ascii=rng.random() < 0.5, allow_nan=True)
    return Mutated(text.encode("utf-8", "surrogatepass"), f"{fmt}:" + " + ".join(changes))


def mutate_squeue(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of ``squeue --json``: mostly a job's comment, name, user, account, state or hold reason."""
    return _mutate_slurm(data, rng, "jobs", SQUEUE_FIELDS, "squeue")


def mutate_sinfo(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of ``sinfo --json``: mostly a node's name, state, flags or GRES."""
    return _mutate_slurm(data, rng, "nodes", SINFO_FIELDS, "sinfo")


SCONTROL_LINES = [
    "JobId=5 JobName=x\n     Nodes=v100-1 CPU_IDs=0 Mem=0 GRES=gpu:v100:8(IDX:0-7)",
    "     Nodes=v100-[" + ",".join(["0-99999"] * 30) + "] CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "     Nodes=v100-[0-99999999999] CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "     Nodes=v100-[5-1] CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "     Nodes=v100-[1-[2]] CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "     Nodes=v100-[0-1 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:" + ",".join(["0-99999"] * 30) + ")",
    "     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:-1)",
    "     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:99999999999999999999)",
    "     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:a)",
    "     Nodes=\x1b[2Jv100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "JobId=abc JobName=x",
    "JobId=99999999999999999999 JobName=x",
    "JobId=1 JobName=\x1b]0;title\x07",
    "JobId=1 JobName=m0\n     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)",
    "No jobs in the system",
]


def mutate_scontrol(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of ``scontrol show job -d`` text: a spoofed, huge or malformed line, or the bytes."""
    if rng.random() < 0.15:
        new, label = mutate_bytes(data, rng, "scontrol")
        return Mutated(new, label)
    lines = data.decode("utf-8").splitlines()
    kind = rng.choice(["insert", "replace", "crlf", "nul"])
    at = rng.randrange(len(lines) + 1)
    if kind == "crlf":
        return Mutated(("\r\n".join(lines) + "\r\n").encode(), "scontrol:crlf")
    if kind == "nul":
        at = min(at, len(lines) - 1)
        lines[at] = lines[at] + "\x00"
    else:
        line = rng.choice(SCONTROL_LINES)
        if kind == "replace" and at < len(lines):
            lines[at] = line
        else:
            lines.insert(at, line)
    return Mutated(("\n".join(lines) + "\n").encode(), f"scontrol:{kind}@line {at + 1}")


PROMETHEUS_VALUES = ["1e400", "nan", "Infinity", "0x10", "1_000", " 1", "", "-", "1e", "+Inf", "-Inf", "NaN"]


def mutate_prometheus(data: bytes, rng: random.Random) -> Mutated:
    """One mutation of a Prometheus answer: a sample value written oddly, a hostile label, or any JSON mutation."""
    if rng.random() < 0.6:
        return mutate_json_hostile(data, rng)
    doc = json.loads(data)
    item = rng.choice(doc["data"]["result"])
    if rng.random() < 0.5:
        values = [item["value"]] if "value" in item else item["values"]
        rng.choice(values)[1] = rng.choice(PROMETHEUS_VALUES)
        return Mutated(json.dumps(doc).encode(), "prometheus:value")
    item["metric"][rng.choice(list(item["metric"]))] = rng.choice(HOSTILE_TEXT)
    return Mutated(json.dumps(doc).encode(), "prometheus:hostile-label")


SERVER_FAULTS = ["answer", "answer", "hang", "drip", "close", "reset", "http-500", "redirect", "not-json",
                 "slow-headers", "huge-header", "wrong-length"]  # fmt: skip
"""How a fake Prometheus server behaves: it answers (a mutated answer), accepts and never answers, trickles one
byte at a time, closes or resets mid-answer, fails with hostile text, redirects, answers no JSON, stalls after
the status line, sends a 1 MB header, or declares a longer body than it sends."""


def mutate_prometheus_server(data: bytes, rng: random.Random) -> Mutated:
    """A server fault (:data:`SERVER_FAULTS`) and the answer it would send: a JSON spec for the case's server."""
    fault = rng.choice(SERVER_FAULTS)
    body = mutate_prometheus(data, rng).content if fault == "answer" and rng.random() < 0.7 else data
    if fault == "http-500":
        body = json.dumps({"status": "error", "error": rng.choice(HOSTILE_TEXT)}).encode()
    spec = {"fault": fault, "body": body.decode("utf-8", "replace")}
    return Mutated(json.dumps(spec).encode(), f"server:{fault}")
