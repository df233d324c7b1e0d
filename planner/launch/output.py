"""Write a rendered launch folder so that readers see the old folder or the new one, never half of one.

All files go into a fresh temporary folder next to the target, which then takes the target's place by
``rename``. An existing target is replaced only when it is empty or is itself a wattplan launch folder
(it holds a ``MANIFEST.json`` with our schema), so no one's other files are ever deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from planner.launch.render import LaunchFile
from planner.problems import InputError, Problem

MANIFEST = "MANIFEST.json"
MANIFEST_SCHEMA = "wattplan.launch/1"


def _is_launch_folder(path: Path) -> bool:
    try:
        doc = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("schema") == MANIFEST_SCHEMA


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

    Returns the relative paths written. Raises :class:`InputError` when ``out_dir`` may not be replaced.
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
