"""Run one hostile case in-process (typer's CliRunner) and classify what the command did.

Classes, checked in this order: ``hang`` (no result within the case's deadline), ``traceback`` (an exception
escaped the command: ``result.exception`` is not a ``SystemExit``), ``internal-error`` (the output says
``internal error``), ``destroyed`` (an input file's SHA-256 changed, or it vanished), ``written-on-failure`` (exit
!= 0 and a file appeared under the case's folder), ``bad-exit`` (exit not 0 or 2; 1 only where the surface allows
it, for an invalid plan), ``unlocated`` (exit 2 and the output names neither the mutated file nor the mutated
option), else ``ok``.
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from typer.testing import CliRunner

from cli import app
from tests.hostile.surfaces import Case

CLASSES = ("ok", "traceback", "internal-error", "unlocated", "bad-exit", "destroyed", "written-on-failure", "hang")
WIDE = {"COLUMNS": "1000", "WATTPLAN_DEBUG": ""}
DEFAULT_DEADLINE_S = 120


class CaseTimeout(BaseException):
    """Raised in the main thread when a case runs past its deadline (a BaseException: no handler swallows it)."""


@dataclass(frozen=True)
class Verdict:
    """The class of a case's outcome, its exit code, and the first line of what it printed."""

    cls: str
    exit_code: int | None
    first_line: str
    output: str


def _hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` (``dir`` for a folder), by path relative to it."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        found[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _files(folder: Path) -> set[str]:
    """Every file (not folder) under ``folder``, relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Raise :class:`CaseTimeout` after ``seconds`` (SIGALRM; the main thread only)."""

    def fire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"no result within {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def first_error_line(output: str) -> str:
    """The first line of the output that reads like an error (else its first non-blank line), at most 200 chars."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    keys = ("error", "problem", "Invalid value", "Usage", "invalid", "refused")
    pick = next((line for line in lines if any(k in line for k in keys)), lines[0] if lines else "")
    return pick[:200]


def run_case(case: Case, deadline_s: int = DEFAULT_DEADLINE_S) -> Verdict:
    """Run ``case`` in its folder (the working directory, so stray writes land there) and classify it."""
    before = _hashes(case.inputs)
    files_before = _files(case.folder)
    cwd = os.getcwd()
    os.chdir(case.folder)
    try:
        with _deadline(deadline_s):
            result = CliRunner().invoke(app, case.argv, env=WIDE)
    except CaseTimeout as exc:
        return Verdict("hang", None, str(exc), "")
    finally:
        os.chdir(cwd)
    output = result.output
    code = result.exit_code
    line = first_error_line(output)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        return Verdict("traceback", code, f"{type(exc).__name__}: {exc}"[:200], output)
    if "internal error" in output:
        return Verdict("internal-error", code, line, output)
    if _hashes_changed(before, _hashes(case.inputs)):
        return Verdict("destroyed", code, line, output)
    if code != 0 and _files(case.folder) - files_before:
        return Verdict("written-on-failure", code, line, output)
    allowed = {0, 2} | ({1} if case.surface.exit1 and case.surface.exit1 in output else set())
    if code not in allowed:
        return Verdict("bad-exit", code, line, output)
    if code == 2 and not any(name in output for name in case.names):
        return Verdict("unlocated", code, line, output)
    return Verdict("ok", code, line, output)


def _hashes_changed(before: dict[str, str], after: dict[str, str]) -> bool:
    """Whether a file that was there before is gone or differs (new files are not counted here)."""
    return any(after.get(path) != digest for path, digest in before.items())
