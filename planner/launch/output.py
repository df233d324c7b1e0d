"""Write a rendered launch folder: never delete what wattplan did not write, never lose what its scripts recorded.

A launch folder is *ours* when it holds ``MANIFEST.json`` with our schema (the marker wattplan writes last),
and the manifest lists every file wattplan wrote there. Everything else in the folder belongs to someone
else: the records the scripts keep (``submitted.tsv``, ``applied.tsv``, ``jobs.tsv``), the jobs' logs and PID
files, an operator's notes. So:

- a new folder is staged next to the target and renamed into place (readers see it whole or not at all);
- an existing folder (empty, or ours) is updated in place: the new files are staged inside it, then each
  replaces its old version by ``rename``, files the old manifest lists and the new render lacks are deleted,
  and the manifest comes last; nothing else in the folder is touched, nor the folder's own mode or owner;
- a non-empty folder that is not ours is refused (``bad-out``), and so is a folder whose records belong to a
  different launch (another target, round or plan; ``launch-state``): those records are how ``apply.sh`` and
  ``submit.sh`` know what they already did, so a round's folder keeps them and a new round needs a new folder;
- a folder whose node scripts started jobs that still run (``run/HOST/NAME.pid``) is refused
  (``jobs-running``). A PID counts as running when this host has a process of that id (``kill -0``), so the
  check is exact where the scripts ran on this host and a guess for scripts run elsewhere on a shared folder.

Rendered paths must stay inside the folder, and no folder on the way may be a symlink.
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


STATE_FILES = ("submitted.tsv", "applied.tsv", "jobs.tsv")
"""What the rendered scripts record in the folder (never listed in the manifest, never deleted by a launch)."""
STAGE_PREFIX = ".wattplan-new-"
"""Staging folders inside a launch folder being updated; one left by a killed launch does not make it foreign."""
SAME_LAUNCH_KEYS = ("target", "round", "from_round", "units")
"""Manifest fields that must match for a new render to take over a folder whose scripts recorded something."""


def launch_manifest(path: Path) -> dict[str, Any] | None:
    """The folder's manifest when it is ours (``MANIFEST.json`` with our schema), else ``None``."""
    try:
        doc = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == MANIFEST_SCHEMA else None


def _is_launch_folder(path: Path) -> bool:
    return launch_manifest(path) is not None


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


def _recorded(out_dir: Path) -> list[str]:
    """The state files of ``out_dir`` that record something (exist and are not empty)."""
    out = []
    for name in STATE_FILES:
        try:
            if (out_dir / name).stat().st_size > 0:
                out.append(name)
        except OSError:
            continue
    return out


def _check_target(out_dir: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """Refuse a target we may not write (see the module docstring); the old manifest of a folder of ours."""
    if not out_dir.exists() and not out_dir.is_symlink():
        return None
    if not out_dir.is_dir():
        raise InputError("--out", [Problem("bad-out", str(out_dir), "exists and is not a folder")])
    old = launch_manifest(out_dir)
    if old is None and any(not p.name.startswith(STAGE_PREFIX) for p in out_dir.iterdir()):
        raise InputError(
            "--out",
            [Problem("bad-out", str(out_dir), f"is not empty and holds no wattplan {MANIFEST}; choose another folder")],
        )
    running = running_jobs(out_dir)
    if running:
        raise InputError(str(out_dir), [_running_problem(out_dir, f, pid) for f, pid in running])
    recorded = _recorded(out_dir)
    if old is not None and recorded and any(old.get(k) != manifest.get(k) for k in SAME_LAUNCH_KEYS):
        what = f"round {old.get('round')} ({old.get('target')})"
        raise InputError(
            "--out",
            [
                Problem(
                    "launch-state",
                    str(out_dir / recorded[0]),
                    f"records what the scripts of another launch did ({what}: {', '.join(recorded)}); "
                    "render this plan into a new folder (one folder per round), or move this one away "
                    "once its jobs are gone",
                )
            ],
        )
    return old


def _safe_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts or any(p in ("", ".") for p in rel.parts):
        raise ValueError(f"internal: refusing to write outside the output folder: {path!r}")
    return rel


def _write_file(root: Path, f: LaunchFile) -> None:
    target = root.joinpath(*_safe_relative(f.path).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "x", encoding="utf-8") as fh:
        fh.write(f.text)
        fh.flush()
        os.fsync(fh.fileno())
    target.chmod(0o755 if f.executable else 0o644)


def _plain_parents(out_dir: Path, rel: PurePosixPath) -> bool:
    """Whether every folder on the way from ``out_dir`` to ``rel`` is a real folder or absent (no symlink)."""
    here = out_dir
    for part in rel.parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            return False
    return True


def _check_in_place(out_dir: Path, paths: list[str]) -> None:
    """Refuse to update ``out_dir`` in place where a rendered path meets a folder or a symlinked folder."""
    problems = []
    for path in paths:
        rel = _safe_relative(path)
        target = out_dir.joinpath(*rel.parts)
        if not _plain_parents(out_dir, rel) or (target.is_dir() and not target.is_symlink()):
            problems.append(Problem("bad-out", str(target), "is in the way of a file to write (a folder or a symlink)"))
    if problems:
        raise InputError("--out", problems)


def _new_folder(out_dir: Path, files: Sequence[LaunchFile]) -> None:
    """Stage every file in a fresh folder next to ``out_dir`` and rename it into place."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        for f in files:
            _write_file(tmp, f)
        tmp.chmod(0o755)  # our own folder (mkdtemp made it 0700)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _stale(out_dir: Path, old: dict[str, Any] | None, paths: list[str]) -> list[Path]:
    """Files the old manifest lists and the new render lacks: ours to delete (plain files and links only)."""
    listed = old.get("files") if old is not None else None
    if not isinstance(listed, list):
        return []
    out = []
    for path in listed:
        if not isinstance(path, str) or path in paths or path == MANIFEST:
            continue
        try:
            rel = _safe_relative(path)
        except ValueError:
            continue  # a manifest someone edited: delete nothing it names outside the folder
        target = out_dir.joinpath(*rel.parts)
        if _plain_parents(out_dir, rel) and (target.is_symlink() or target.is_file()):
            out.append(target)
    return out


def _update_in_place(out_dir: Path, files: Sequence[LaunchFile], old: dict[str, Any] | None) -> None:
    """Stage inside ``out_dir``, rename each file over its old version, delete stale files, manifest last."""
    paths = [f.path for f in files]
    _check_in_place(out_dir, paths)
    stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=out_dir))
    try:
        for f in files:
            _write_file(stage, f)
        for path in [*(p for p in paths if p != MANIFEST), MANIFEST]:  # the manifest, our marker, last
            if path == MANIFEST:
                for gone in _stale(out_dir, old, paths):
                    gone.unlink(missing_ok=True)
                    _remove_empty_parents(out_dir, gone.parent)
            rel = _safe_relative(path)
            target = out_dir.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage.joinpath(*rel.parts), target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _remove_empty_parents(out_dir: Path, folder: Path) -> None:
    """Remove ``folder`` and its parents up to ``out_dir`` (excluded) while they are empty."""
    while folder != out_dir and out_dir in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def write_folder(out_dir: Path, files: Sequence[LaunchFile], manifest: dict[str, Any]) -> list[str]:
    """Write ``files`` plus ``MANIFEST.json`` (``manifest`` with our schema and the file list) as ``out_dir``.

    Returns the relative paths written. Raises :class:`InputError` when ``out_dir`` may not be written:
    it is not a folder, holds other files and no manifest of ours, holds PID files of jobs that still run,
    or records what another launch's scripts did (module docstring).
    """
    out_dir = Path(out_dir)
    paths = [f.path for f in files]
    if len(paths) != len(set(paths)) or MANIFEST in paths:
        raise ValueError("internal: two rendered files share a path")
    for path in paths:
        _safe_relative(path)
    doc = {"schema": MANIFEST_SCHEMA, **manifest, "files": sorted(paths)}
    old = _check_target(out_dir, doc)
    everything = [*files, LaunchFile(MANIFEST, json.dumps(doc, indent=1, ensure_ascii=True) + "\n")]
    if out_dir.exists():
        _update_in_place(out_dir, everything, old)
    else:
        _new_folder(out_dir, everything)
    return sorted(paths)
