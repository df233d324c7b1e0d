"""Reading JSON with clear errors and writing files atomically (temp file + rename)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from planner.problems import InputError, Problem, format_path


def read_json(path: Path) -> Any:
    """Parse ``path`` as JSON; unreadable files and syntax errors become :class:`InputError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), [Problem("unreadable", "(file)", exc.strerror or str(exc))]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), [Problem("bad-json", f"line {exc.lineno} column {exc.colno}", exc.msg)]) from None


def non_finite_numbers(doc: Any, path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Every NaN or infinite number in a parsed document (Python's json accepts them)."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return [Problem("not-finite", format_path(path), f"{doc} is not a finite number")]
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in non_finite_numbers(v, (*path, str(k)))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in non_finite_numbers(v, (*path, i))]
    return []


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half.

    Writes a temporary file in the target directory, flushes it to disk, then renames it
    over ``path`` (``os.replace`` is atomic on POSIX within one file system).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are shared files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc: Any) -> None:
    """Serialise ``doc`` (finite numbers only) and write it atomically."""
    write_text_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
