"""Which folder an emulated cluster may use, and what in it wattplan may delete (docs/design.md §11.7).

``wattplan cluster up --dir D`` runs as root and may be handed any folder: ``/tmp``, a home folder, a typo. It
takes D only when D does not exist (it creates it), is empty, or holds the marker file ``.wattplan-cluster`` that
an earlier ``cluster up`` wrote; any other folder is refused before anything in it is touched. The marker records
whether wattplan created D and the entries of D that belong to the cluster (:data:`OWNED_NAMES`: the layout's
folders, the manifest, the agent's default state file). The marker is written before any of them is made, so a
``cluster up`` that fails half-way still leaves a record; the next one deletes exactly the recorded entries that
exist (never a name outside :data:`OWNED_NAMES`, never through a symbolic link), nothing else.

D's mode is changed only when wattplan created D (munge's clients need every folder above its socket searchable);
a folder the user made keeps its mode, and :func:`searchable_note` says when other users therefore cannot reach
the cluster.

A path that Slurm's configuration, ``PATH`` or a Unix socket cannot carry is refused by :func:`path_problem`:
control characters (a newline included), whitespace and the characters ``slurm.conf`` and ``gres.conf`` read as
syntax, ``:`` (it would split ``PATH``) and a path too long for munge's socket. Every other character (quotes,
``$``, parentheses, back quotes) is carried literally: the ``bin/`` wrappers quote every word.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.contracts.jsonio import write_json_atomic
from wattplan.planner.contracts.problems import InputError, Problem

MARKER = ".wattplan-cluster"
"""The marker file in a cluster folder wattplan owns."""

MARKER_FORMAT = "wattplan-cluster-dir/1"

OWNED_NAMES = (
    "cluster.json",
    "bin",
    "slurm-bin",
    "settings",
    "node",
    "emu",
    "work",
    "submit",
    "log",
    "prometheus",
    "slurm",
    "agent.db",
    "agent.db-wal",
    "agent.db-shm",
    "agent.db-journal",
    "agent.db.lock",
)
"""Every entry of a cluster folder that the cluster's parts create: the only names ever deleted."""

REFUSED_CHARACTERS = '"\\#%,:[]'
"""Characters of a folder path that slurm.conf, gres.conf or ``PATH`` read as syntax; whitespace too (Slurm splits
device lists, ``gres.conf``'s ``File=``, on it)."""

SOCKET_SUFFIX = "/slurm/munge/munge.socket"
SOCKET_PATH_MAX = 107
"""The longest Unix socket path (``sun_path`` holds 108 bytes with the final NUL)."""

SOURCE = "--dir"


@dataclass(frozen=True, slots=True)
class ClusterFolder:
    """A folder ``cluster up`` may use: whether wattplan created it, what an earlier run recorded in it."""

    root: Path
    create: bool
    """Whether ``root`` does not exist yet: :func:`prepare` makes it."""
    created_root: bool
    """Whether wattplan made ``root`` (now or in an earlier run): only then may it change its mode."""
    recorded: tuple[str, ...]
    """The entries an earlier run recorded (each one of :data:`OWNED_NAMES`): :func:`prepare` deletes them."""


def _refuse(root: Path, message: str) -> InputError:
    """The error naming ``root`` (quoted when it holds characters a terminal would act on) and what to do."""
    text = str(root)
    return InputError(
        SOURCE, [Problem("bad-option", SOURCE, f"{text if text.isprintable() else ascii(text)}: {message}")]
    )


def path_problem(root: Path) -> str | None:
    """Why the cluster's files cannot live under ``root`` (absolute), or None (module docstring)."""
    text = str(root)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "the path holds a control character (a newline?): choose a plain folder name"
    bad = sorted({c for c in text if c in REFUSED_CHARACTERS or c.isspace()})
    if bad:
        return (
            f"the path holds {', '.join(repr(c) for c in bad)}, which Slurm's configuration or PATH read as syntax: "
            "choose a folder without them"
        )
    if len((text + SOCKET_SUFFIX).encode()) > SOCKET_PATH_MAX:
        return f"too long for munge's socket ({SOCKET_PATH_MAX} bytes with {SOCKET_SUFFIX}): choose a shorter path"
    return None


def read_marker(root: Path) -> dict[str, object] | None:
    """The marker's record in ``root``; None when there is none. InputError when it is damaged."""
    path = root / MARKER
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise _refuse(root, f"{MARKER} is not a plain file: this folder was not made by wattplan cluster up")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _refuse(root, f"{MARKER} is damaged ({e}): remove the folder or choose another one") from None
    if not isinstance(doc, dict) or doc.get("format") != MARKER_FORMAT or not isinstance(doc.get("entries"), list):
        raise _refuse(root, f"{MARKER} is not a {MARKER_FORMAT} record: remove the folder or choose another one")
    return doc


def claim(root: Path) -> ClusterFolder:
    """Whether ``cluster up`` may use ``root`` (module docstring); reads only. InputError naming the folder if not."""
    if problem := path_problem(root):
        raise _refuse(root, problem)
    if not root.exists():
        if root.is_symlink():
            raise _refuse(root, "a symbolic link to nothing: choose a new or empty folder")
        return ClusterFolder(root, create=True, created_root=True, recorded=())
    if not root.is_dir():
        raise _refuse(root, "not a folder: choose a new or empty folder")
    marker = read_marker(root)
    if marker is not None:
        recorded = tuple(str(n) for n in marker["entries"] if str(n) in OWNED_NAMES)  # type: ignore[attr-defined]
        return ClusterFolder(root, create=False, created_root=marker.get("created_root") is True, recorded=recorded)
    try:
        first = next(iter(sorted(p.name for p in root.iterdir())), None)
    except OSError as e:
        raise _refuse(root, f"cannot be read ({e.strerror})") from None
    if first is not None:
        raise _refuse(
            root,
            f"not empty (it holds {first!r}) and not made by wattplan cluster up (no {MARKER} file); "
            "wattplan deletes only what it made: choose a new or empty folder",
        )
    return ClusterFolder(root, create=False, created_root=False, recorded=())


def _remove(path: Path) -> None:
    """Delete one recorded entry: a link or file is unlinked, a folder removed with what it holds."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def prepare(folder: ClusterFolder) -> None:
    """Create the folder if needed, record the cluster's entries in the marker, delete what an earlier run made.

    The marker is written before anything is deleted or made, so every entry made from here on is recorded.
    """
    root = folder.root
    if folder.create:
        root.mkdir(parents=True)
        root.chmod(0o755)  # ours: munge's clients (any user's sbatch) need it searchable
    write_json_atomic(
        root / MARKER,
        {
            "format": MARKER_FORMAT,
            "created_root": folder.created_root,
            "entries": list(OWNED_NAMES),
            "note": "written by wattplan cluster up: the entries listed are the cluster's; nothing else is deleted",
        },
    )
    for name in folder.recorded:
        _remove(root / name)


def searchable_note(root: Path) -> str | None:
    """A note when some folder above ``root``'s munge socket is not searchable by other users, else None."""
    for folder in (root, *root.parents):
        try:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return (
                    f"note: {folder} is not searchable by other users: only root can submit to this cluster "
                    f"(wattplan leaves the mode of folders it did not create as it is)"
                )
        except OSError:
            return None
    return None


def agent_using(root: Path) -> str | None:
    """Who holds the lock of the agent's default state file in ``root`` (``pid N``), or None when nobody does.

    A running agent keeps an exclusive ``flock`` on ``agent.db.lock`` (planner.agent.store): its state must not
    be deleted under it.
    """
    lock = root / "agent.db.lock"
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return f"pid {pid}" if pid.isdigit() else "a process"
    finally:
        os.close(fd)
    return None
