"""Write a rendered launch folder so that readers see the old folder or the new one, never half of one.

All files go into a fresh temporary folder next to the target, which then takes the target's place by
``rename``. An existing target is replaced only when it is empty or is itself a wattplan launch folder
(it holds a ``MANIFEST.json`` with our schema), so no one's other files are ever deleted, and only when
no job its node scripts started still runs: their PID files (``run/HOST/NAME.pid``) are what ``HOST.sh
stop`` needs. A PID counts as running when this host has a process of that id (``kill -0``), so the check
is exact where the scripts ran on this host and a guess for scripts run elsewhere on a shared folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.launch.render import LaunchFile

MANIFEST = "MANIFEST.json"
MANIFEST_SCHEMA = "wattplan.launch/1"
RUN_DIR = "run"
PID_FILES = "*/*.pid"
"""PID files under :data:`RUN_DIR`: ``HOST/NAME.pid``, as the shell target's node scripts write them."""
_PID_BYTES = 32  # a PID file holds one decimal number; read no more


def _is_launch_folder(path: Path) -> bool:
    try:
        doc = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("schema") == MANIFEST_SCHEMA


def _pid_in(pid_file: Path) -> int | None:
    """The process id a PID file holds; ``None`` unless it is a readable regular file holding a positive number."""
    if not pid_file.is_file():  # a pipe would block the read
        return None
    try:
        with open(pid_file, "rb") as fh:
            text = fh.read(_PID_BYTES)
        pid = int(text.strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def is_running(pid: int) -> bool:
    """Whether this host has a process ``pid`` (signal 0; a process of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):
        return False
    return True


def running_jobs(folder: Path) -> list[tuple[Path, int]]:
    """``(PID file, pid)`` of every job whose PID file is in ``folder``'s :data:`RUN_DIR` and still runs."""
    run = folder / RUN_DIR
    if not run.is_dir():
        return []
    found = ((f, _pid_in(f)) for f in sorted(run.glob(PID_FILES)))
    return [(f, pid) for f, pid in found if pid is not None and is_running(pid)]


def _running_problem(out_dir: Path, pid_file: Path, pid: int) -> Problem:
    host, job = pid_file.parent.name, pid_file.stem
    return Problem(
        "jobs-running",
        pid_file.relative_to(out_dir).as_posix(),
        f"job {job!r} (pid {pid}) still runs and this is its PID file: stop it first ({host}.sh stop on {host}) "
        f"or choose another --out; if pid {pid} is another program, delete the file",
    )


def _check_target(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise InputError("--out", [Problem("bad-out", str(out_dir), "exists and is not a folder")])
    if any(out_dir.iterdir()) and not _is_launch_folder(out_dir):
        raise InputError(
            "--out",
            [Problem("bad-out", str(out_dir), f"is not empty and holds no wattplan {MANIFEST}; choose another folder")],
        )
    running = running_jobs(out_dir)
    if running:
        raise InputError(str(out_dir), [_running_problem(out_dir, f, pid) for f, pid in running])


def _safe_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise ValueError(f"internal: refusing to write outside the output folder: {path!r}")
    return rel


def _write_file(root: Path, f: LaunchFile) -> None:
    target = root.joinpath(*_safe_relative(f.path).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(f.text)
        fh.flush()
        os.fsync(fh.fileno())
    target.chmod(0o755 if f.executable else 0o644)


def write_folder(out_dir: Path, files: Sequence[LaunchFile], manifest: dict[str, Any]) -> list[str]:
    """Write ``files`` plus ``MANIFEST.json`` (``manifest`` with our schema and the file list) as ``out_dir``.

    Returns the relative paths written. Raises :class:`InputError` when ``out_dir`` may not be replaced:
    it is not a folder, holds other files, or holds PID files of jobs that still run.
    """
    out_dir = Path(out_dir)
    _check_target(out_dir)
    paths = [f.path for f in files]
    if len(paths) != len(set(paths)) or MANIFEST in paths:
        raise ValueError("internal: two rendered files share a path")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    old: Path | None = None
    try:
        for f in files:
            _write_file(tmp, f)
        doc = {"schema": MANIFEST_SCHEMA, **manifest, "files": sorted(paths)}
        _write_file(tmp, LaunchFile(MANIFEST, json.dumps(doc, indent=1, ensure_ascii=True) + "\n"))
        tmp.chmod(0o755)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            old.rmdir()
            os.rename(out_dir, old)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            if old is not None:
                os.rename(old, out_dir)
                old = None
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return sorted(paths)
