"""Run one hostile case in-process and classify what it did.

A command-line case runs through typer's CliRunner; an agent or API case through
:func:`tests.hostile.inprocess.run_inprocess`. Classes, checked in this order:

``hang``                no result within the case's deadline (SIGALRM)
``traceback``           an exception escaped (``result.exception`` is not a ``SystemExit``; for an in-process
                        case, anything but the surface's refusal: ``InputError``, ``SlurmError``,
                        ``PrometheusError``); a ``MemoryError`` under the case's memory limit counts here
``internal-error``      the output says ``internal error``
``destroyed``           an input, a protected file (a previous launch's ``submitted.tsv``, ``applied.tsv`` and
                        logs, a foreign folder's file) changed or vanished, inside ``--out`` too
``injected``            a file named ``PWNED`` appeared: a shell metacharacter of an input was run
``previous-lost``       exit != 0 and an output an earlier run left changed (a failure must leave it in place)
``written-on-failure``  exit != 0 and a file appeared under the case's folder, or the temporary folder is not empty
``bad-exit``            exit not 0 or 2 (1 only where the surface allows it, for an invalid plan)
``unsafe-action``       the agent sent a call naming a job that did not opt in, or released an administrator's hold;
                        or a Prometheus call ran past its budget
``raw-control``         ESC, CSI, BEL, NUL or backspace in what was printed (user text must be stripped)
``bad-script``          exit 0 and a written ``.sh`` file that ``bash -n`` refuses
``accepted``            exit 0 on an input that must be refused (a duplicate key or column, several documents)
``yaml11-typed``        exit 0, and the same file with the mutated YAML scalar quoted is refused or written
                        otherwise: a YAML 1.1 implicit type changed the value (``0755``, ``1:30``, ``yes``)
``leftover-child``      a child process of the runner outlived the case (after the solver workers' shutdown)
``unlocated``           exit 2 and the output names neither the mutated file nor the mutated option
``ok``                  none of the above
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from typer.testing import CliRunner

from cli import app
from tests.hostile import mutate
from tests.hostile.inprocess import api_names, run_inprocess
from tests.hostile.surfaces import Case

CLASSES = (
    "ok",
    "traceback",
    "internal-error",
    "unlocated",
    "bad-exit",
    "destroyed",
    "written-on-failure",
    "hang",
    "injected",
    "previous-lost",
    "unsafe-action",
    "raw-control",
    "bad-script",
    "accepted",
    "yaml11-typed",
    "leftover-child",
)
WIDE = {"COLUMNS": "1000", "WATTPLAN_DEBUG": ""}
DEFAULT_DEADLINE_S = 120
CASE_DEADLINE_S = 30
"""The pytest module's deadline per case (a case that runs for longer is a defect there, not a wait)."""
MEMORY_MB = int(os.environ.get("WATTPLAN_HOSTILE_MEMORY_MB", "3072"))
"""Address space a case may add to the runner's (MiB): an alias bomb ends in MemoryError, not the machine's OOM."""
CHILD_GRACE_S = 3.0
VOLATILE_KEYS = frozenset({"written_by", "provenance", "solve_s", "seconds", "wall_s", "elapsed_s", "created"})
"""Keys of a written JSON document that differ between two identical runs (dropped before comparing)."""


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


def _file_hashes(paths: tuple[Path, ...]) -> dict[str, str]:
    """SHA-256 of each file (``missing`` when it is not a file)."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "missing" for p in paths}


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


@contextmanager
def _memory_limit(extra_mb: int) -> Iterator[None]:
    """Cap the address space at the current size plus ``extra_mb`` for the case (restored after it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * resource.getpagesize()
    except OSError:
        yield
        return
    limit = size + extra_mb * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def _temporary_folder(folder: Path) -> Iterator[None]:
    """Point :mod:`tempfile` (and the commands' ``TMPDIR``) at ``folder`` for the case."""
    old, old_env = tempfile.tempdir, os.environ.get("TMPDIR")
    folder.mkdir(exist_ok=True)
    tempfile.tempdir = str(folder)
    os.environ["TMPDIR"] = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = old
        if old_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_env


def _children() -> set[int]:
    """The pids of this process's descendants (from /proc)."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parent_of[int(entry.name)] = int(fields[1])
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, parent in parent_of.items() if parent in mine} - mine
        mine |= more
        grew = bool(more)
    return {pid for pid in mine - {os.getpid()} if not _helper(pid)}


def _helper(pid: int) -> bool:
    """Whether ``pid`` is one of multiprocessing's helpers (resource tracker, fork server).

    They live as long as the runner by design, started by the first case that needs them: not a leak.
    """
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(name in command for name in (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver"))


def _leftover_children(before: set[int]) -> set[int]:
    """Descendants that were not there before the case and are still alive after the solver workers' shutdown."""
    from wattplan.formulations.watchdog import shutdown_workers

    shutdown_workers()
    deadline = time.monotonic() + CHILD_GRACE_S
    left = _children() - before
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _children() - before
    return left


def first_error_line(output: str) -> str:
    """The first line of the output that reads like an error (else its first non-blank line), at most 200 chars."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    keys = ("error", "problem", "Invalid value", "Usage", "invalid", "refused")
    pick = next((line for line in lines if any(k in line for k in keys)), lines[0] if lines else "")
    return pick[:200]


@dataclass
class _Run:
    """What one run of a case gave: exit code, output, the exception that escaped, the agent's unsafe call."""

    code: int | None
    output: str
    exception: BaseException | None
    unsafe: str | None = None


def _run(case: Case) -> _Run:
    """Run the case once in its folder (the working directory, so stray writes land there)."""
    if case.surface.kind == "cli":
        result = CliRunner().invoke(app, case.argv, env=WIDE)
        exc = result.exception if not isinstance(result.exception, SystemExit) else None
        return _Run(result.exit_code, result.output, exc)
    outcome = run_inprocess(case)
    return _Run(outcome.code, outcome.output, outcome.exception, outcome.unsafe)


def _bad_scripts(case: Case, before: set[str]) -> str | None:
    """The first new ``.sh`` file under the case's folder that ``bash -n`` refuses, with bash's words."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    for rel in sorted(_files(case.folder) - before):
        if rel.endswith(".sh"):
            check = subprocess.run([bash, "-n", str(case.folder / rel)], capture_output=True, text=True, check=False)
            if check.returncode != 0:
                return f"{rel}: {check.stderr.strip()[:160]}"
    return None


def _comparable(path: Path) -> object:
    """A written output for comparison: JSON without its volatile keys, else the bytes; None when absent."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    try:
        doc = json.loads(data)
    except ValueError:
        return data

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(doc)


def _control_differs(case: Case, deadline_s: int) -> str | None:
    """Run the case again on its control file (the mutated scalar quoted); what differs, or None."""
    assert case.control is not None
    outputs = [case.outputs / name for name in case.surface.compare]
    first = [_comparable(p) for p in outputs]
    path, content = case.control
    for p in outputs:
        if p.is_file():
            p.unlink()
    path.write_bytes(content)
    cwd = os.getcwd()
    os.chdir(case.folder)
    try:
        with _deadline(deadline_s):
            again = _run(case)
    finally:
        os.chdir(cwd)
    if again.code != 0:
        return f"the quoted scalar is refused (exit {again.code}: {first_error_line(again.output)})"
    for p, old in zip(outputs, first, strict=True):
        if _comparable(p) != old:
            return f"{p.name} differs from the one written with the scalar quoted"
    return None


def run_case(case: Case, deadline_s: int = DEFAULT_DEADLINE_S) -> Verdict:
    """Run ``case`` in its folder and classify it (module docstring)."""
    before = _hashes(case.inputs)
    protected = _file_hashes(case.protected)
    previous = _file_hashes(case.previous)
    files_before = _files(case.folder)
    children = _children()
    scratch = case.folder / "tmp"
    cwd = os.getcwd()
    os.chdir(case.folder)
    try:
        with _temporary_folder(scratch), _deadline(deadline_s), _memory_limit(MEMORY_MB):
            run = _run(case)
    except CaseTimeout as exc:
        return Verdict("hang", None, str(exc), "")
    finally:
        os.chdir(cwd)
    verdict = _classify(case, run, before, protected, previous, files_before, scratch)
    left = _leftover_children(children)
    if verdict.cls == "ok" and left:
        return Verdict("leftover-child", run.code, f"{len(left)} child process(es) left: {sorted(left)}", run.output)
    if verdict.cls == "ok" and case.control is not None and run.code == 0:
        differs = _control_differs(case, deadline_s)
        if differs is not None:
            return Verdict("yaml11-typed", run.code, differs, run.output)
    return verdict


def _classify(
    case: Case,
    run: _Run,
    before: dict[str, str],
    protected: dict[str, str],
    previous: dict[str, str],
    files_before: set[str],
    scratch: Path,
) -> Verdict:
    """The class of one run (module docstring), but ``leftover-child`` and ``yaml11-typed``."""
    output, code = run.output, run.code
    line = first_error_line(output)
    if run.exception is not None:
        exc = run.exception
        return Verdict("traceback", code, f"{type(exc).__name__}: {exc}"[:200], output)
    if "internal error" in output:
        return Verdict("internal-error", code, line, output)
    if _hashes_changed(before, _hashes(case.inputs)) or _hashes_changed(protected, _file_hashes(case.protected)):
        return Verdict("destroyed", code, line, output)
    if any(p.name == mutate.PWNED for p in case.folder.rglob("*")):
        return Verdict("injected", code, line, output)
    if code != 0 and _hashes_changed(previous, _file_hashes(case.previous)):
        return Verdict("previous-lost", code, line, output)
    if code != 0 and (_files(case.folder) - files_before or any(scratch.iterdir())):
        return Verdict("written-on-failure", code, line, output)
    allowed = {0, 2} | ({1} if case.surface.exit1 and case.surface.exit1 in output else set())
    if code not in allowed:
        return Verdict("bad-exit", code, line, output)
    if run.unsafe is not None:
        return Verdict("unsafe-action", code, run.unsafe, output)
    raw = next((c for c in mutate.ESCAPES if c in output), None)
    if raw is not None:
        at = output.index(raw)
        return Verdict("raw-control", code, f"{raw!r} printed raw: {output[max(0, at - 60) : at + 20]!r}", output)
    if code == 0:
        script = _bad_scripts(case, files_before)
        if script is not None:
            return Verdict("bad-script", code, script, output)
        if case.must_refuse:
            return Verdict("accepted", code, f"{case.mutation[:160]} was read without a refusal", output)
    names = api_names(case) if case.surface.kind == "api" else case.names
    located = case.surface.kind in ("cli", "api")  # the agent's readers name the job or query, not a file
    if code == 2 and located and names and not any(name in output for name in names):
        return Verdict("unlocated", code, line, output)
    return Verdict("ok", code, line, output)


def _hashes_changed(before: dict[str, str], after: dict[str, str]) -> bool:
    """Whether a file that was there before is gone or differs (new files are not counted here)."""
    return any(after.get(path) != digest for path, digest in before.items())
