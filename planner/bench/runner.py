"""The benchmark run: instances x solvers x seeds, each run in its own process, resumable.

Instances (:func:`find_instances`): ``SET`` is one instance file, or a folder with a
``manifest.csv`` (``wattplan instance sweep``'s: its ``file`` column names the instances,
relative to the folder, and every other column is carried into the results; every file must lie
inside the folder and match the manifest's ``sha256`` when it has one, else nothing runs), or else a folder
whose ``*.json`` files are the instances (sorted by name).

A run (:func:`run_one`) is ``python -m wattplan.planner.bench.worker`` (:mod:`planner.bench.worker`) in a
new session, so it leads its own process group, in a scratch folder that receives the
instance's bytes: nothing but those bytes needs to reach the machine that runs it (a Ray node).
The parent waits until the hard deadline ``limit + grace`` (grace ``max(5 s, 0.5 x limit)``
unless given), then kills with SIGKILL the worker's group and every process below the worker
(a solve runs in a session of its own, :mod:`formulations.watchdog`). The worker's group is
killed after every run too; a solve process of a worker that crashed mid-solve is no longer
below it and ends at its own solver limit. Interrupted (Ctrl-C, SIGTERM: exit 130, 143), the
bench run kills its running workers and saves nothing half-done. Status of a run:

=========  ==============================================================================
optimal,   the plan's status (the worker answered within the limit, give or take
feasible,  :func:`late_after` of slack)
fallback
timeout    the worker answered, but later than :func:`late_after` (the plan's values are kept)
hang       no answer by the deadline: the worker and every process it started were killed
oom        ``MemoryError`` in the worker (exit :data:`~planner.bench.worker.EXIT_OOM`, e.g. under
           ``--memory-limit-mb``); a worker killed by SIGKILL not sent by us while the kernel
           killed a process for memory (``oom_kill`` of ``/proc/vmstat`` went up during the
           run) or after its peak reached :data:`NEAR_LIMIT_SHARE` of the memory cap; or one
           that failed saying so on stderr (:data:`MEMORY_FAILURE`: OpenBLAS, ``bad_alloc``)
crash      any other non-zero exit or signal, a SIGKILL from someone else (``kill -9``) included
           (``stderr_tail`` keeps the end of stderr)
error      the worker reported an exception (bad instance, planner error)
=========  ==============================================================================

Memory: ``os.wait4``'s ``ru_maxrss`` (KiB on Linux) of a child covers the child and the
processes it waited for, but Linux also carries into it the resident set of the process that
forked it, as it was at ``exec`` (this bench run's own: 500 MiB here make every run report 500
MiB). It is kept as ``maxrss_wait4_mb``, an upper bound. ``peak_mb`` is the worker's own
count: the high-water mark of its memory after ``exec`` (``VmHWM``) or of any solver process it
forked (``RUSAGE_CHILDREN``), whichever is larger; for a worker that could not report (crash,
hang) the last ``VmHWM`` the parent read from ``/proc`` while waiting. ``wall_s`` is the
parent's clock from start to reaping, interpreter start-up included; ``time_s`` is the
worker's planning call, what the time limit covers.

Resuming: a run's key is the instance's SHA-256, solver, seed, limit, gap, threads, memory cap,
grace and node limit (:func:`run_key`); each finished run is written at once to ``OUT/runs/<file>.json``
(atomically), and a rerun skips every task whose file holds its key. Saved runs of no task of
the bench run (an instance edited since, other options) are stale: never read, and counted. The tables are rebuilt
from those files (:mod:`planner.bench.report`).
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.bench.worker import EXIT_OOM, PARENT_ENV, vm_hwm_mb
from wattplan.planner.contracts.jsonio import read_json, read_text, write_json_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.request import GREEDY, PlanRequest
from wattplan.planner.executor import cancel_on_signals, descendants

MANIFEST = "manifest.csv"
MAX_SEEDS = 1000
"""Most runs per instance and solver (``--seeds``): the task list is built before anything runs."""
RUNS_DIR = "runs"
LOCK_FILE = "bench.lock"
"""The lock file a bench run holds in ``--out`` while it runs (its pid inside): a second bench run there is refused."""
MIN_GRACE_S = 5.0
GRACE_SHARE = 0.5
LATE_SHARE = 0.1
LATE_S = 0.5
STDERR_TAIL = 2000
"""Characters of a failed worker's stderr kept in its record."""
POLL_S = 0.02
MEMORY_FAILURE = re.compile(r"MemoryError|memory allocation|cannot allocate memory|bad_alloc|out of memory", re.I)
"""What a crashed worker's stderr says when it died for memory (OpenBLAS, a C++ library, the loader)."""
NEAR_LIMIT_SHARE = 0.9
"""A worker killed by SIGKILL whose peak reached this share of ``--memory-limit-mb`` died for memory."""

Record = dict[str, Any]
ProgressFn = Callable[[Record], None]

_CANCEL = threading.Event()
"""Set when the bench run is interrupted: every waiting :func:`run_one` kills its worker and returns."""


@dataclass(frozen=True, slots=True)
class InstanceEntry:
    """One instance of the set: its name (path relative to the set), file, SHA-256 and manifest columns.

    ``objective`` and ``jobs`` are read from the file when it parses (None otherwise: the
    worker then reports the problem as the run's ``error``).
    """

    name: str
    path: Path
    sha256: str
    objective: str | None
    jobs: int | None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What one worker is asked: the solve options, the memory cap (MiB) and the grace after the limit (s)."""

    solver: str
    seed: int
    time_limit_s: float
    rel_gap: float
    threads: int
    memory_limit_mb: int | None
    grace_s: float
    node_limit: int | None = None


@dataclass(frozen=True, slots=True)
class BenchTask:
    """One run of the benchmark: the instance, what the worker is asked, the key and the result file name."""

    entry: InstanceEntry
    spec: RunSpec
    key: str
    file_name: str


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """A bench run as ``wattplan bench`` asks for it (see the module docstring; ``grace_s`` None: the default)."""

    instances: Path
    solvers: tuple[str, ...]
    time_limit_s: float
    seeds: int
    out: Path
    rel_gap: float = 1e-4
    threads: int = 1
    workers: int | None = None
    ray_address: str | None = None
    memory_limit_mb: int | None = None
    grace_s: float | None = None
    node_limit: int | None = None

    @property
    def grace(self) -> float:
        """Seconds a run may take past its limit before it is killed: ``max(5, 0.5 x limit)`` unless given."""
        if self.grace_s is not None:
            return self.grace_s
        return max(MIN_GRACE_S, GRACE_SHARE * self.time_limit_s)


def late_after(limit_s: float) -> float:
    """A worker whose planning call took longer than ``limit x 1.1 + 0.5`` s answered late (``timeout``)."""
    return limit_s * (1 + LATE_SHARE) + LATE_S


def config_problems(config: BenchConfig) -> list[Problem]:
    """Every bad value of ``config``: the set, the solvers (the front door's checks), limits and counts."""
    from wattplan.planner.planning import request_problems, solvers_with

    problems: list[Problem] = []
    if not config.instances.exists():
        problems.append(Problem("no-such-file", "SET", f"{config.instances} does not exist"))
    if not config.solvers:
        problems.append(Problem("bad-option", "--solvers", "name at least one solver"))
    base = PlanRequest(
        solver="greedy", time_limit_s=config.time_limit_s, rel_gap=config.rel_gap, threads=config.threads
    )
    problems += request_problems(base)
    if config.node_limit is not None and config.node_limit < 1:
        problems.append(Problem("bad-option", "--node-limit", f"must be >= 1 nodes, got {config.node_limit}"))
    for k, solver in enumerate(config.solvers):
        for p in request_problems(PlanRequest(solver=solver, node_limit=_node_limit(config, solver))):
            if p.path.startswith("node_limit"):
                takers = ", ".join(solvers_with("node_limit"))
                message = f"--solvers[{k}] {solver} takes no node limit (these do: {takers}; greedy runs as it is)"
                problems.append(Problem(p.code, "--node-limit", message))
            else:
                problems.append(Problem(p.code, f"--solvers[{k}]", p.message))
    if not 1 <= config.seeds <= MAX_SEEDS:  # 2**31 seeds listed 2**31 tasks before the first ran: a hang
        problems.append(Problem("bad-option", "--seeds", f"must be in [1, {MAX_SEEDS}], got {config.seeds}"))
    if config.workers is not None and config.workers < 1:
        problems.append(Problem("bad-option", "--workers", f"must be >= 1, got {config.workers}"))
    if config.memory_limit_mb is not None and config.memory_limit_mb < 1:
        problems.append(Problem("bad-option", "--memory-limit-mb", f"must be >= 1, got {config.memory_limit_mb}"))
    if config.grace_s is not None and not config.grace_s > 0:
        problems.append(Problem("bad-option", "--grace", f"must be > 0, got {config.grace_s}"))
    return problems


def _node_limit(config: BenchConfig, solver: str) -> int | None:
    """The node limit ``solver`` runs under: ``--node-limit`` (>= 1 only), except for greedy, which searches no tree."""
    limit = config.node_limit
    return None if solver == GREEDY or limit is None or limit < 1 else limit


def _entry(name: str, path: Path, extra: dict[str, str]) -> InstanceEntry:
    """Read ``path`` once: its hash, and its objective and job count when it is a JSON object."""
    data = path.read_bytes()
    objective, jobs = None, None
    try:
        doc = json.loads(data)
        objective = str(doc["round"]["objective"])
        jobs = len(doc["jobs"])
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: deep nesting (an internal error)
        pass  # the worker reports what is wrong with it
    return InstanceEntry(name, path, hashlib.sha256(data).hexdigest(), objective, jobs, extra)


SHA256_COLUMN = "sha256"
"""The manifest column holding each instance file's SHA-256 (hex), verified before anything runs."""


def _row_file_problem(folder: Path, name: str, where: str) -> Problem | None:
    """What is wrong with a manifest row's ``file`` (``name``): empty, absolute, ``..``, outside the set, missing."""
    if not name:
        return Problem("no-such-file", where, "empty: name the instance file, relative to the set folder")
    if "\0" in name:  # no file name holds one: the path calls raise 'embedded null byte'
        return Problem("no-such-file", where, f"{name!r} holds a NUL byte: no file has such a name")
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        return Problem("outside-set", where, f"{name!r} must be a path inside the set folder {folder}, without '..'")
    path = folder / rel
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return Problem("outside-set", where, f"{path} cannot be resolved: {exc}")
    if not inside:
        return Problem("outside-set", where, f"{path} leads outside the set folder {folder} (a symbolic link)")
    if not path.is_file():
        return Problem("no-such-file", where, f"{path} does not exist")
    return None


def _hash_problem(entry: InstanceEntry, expected: str, where: str) -> Problem | None:
    """A problem when the manifest's ``expected`` SHA-256 is not the instance file's."""
    if entry.sha256 == expected.strip().lower():
        return None
    if not expected.strip():
        return Problem("bad-manifest", where, f"empty: give the SHA-256 of {entry.name} ({entry.path})")
    return Problem(
        "sha256-mismatch",
        where,
        f"{entry.name} has SHA-256 {entry.sha256}, the manifest says {expected.strip()!r}: "
        f"the instance ({entry.path}) or the manifest was edited",
    )


def _manifest_entries(folder: Path) -> list[InstanceEntry]:
    """The instances named by ``folder/manifest.csv`` (column ``file``) with the other columns, verified.

    Every row's file must lie inside ``folder`` (no absolute path, no ``..``, no symbolic link
    leading out), exist, and, when the manifest has a ``sha256`` column, have that SHA-256.
    Every bad row is listed in one :class:`InputError` (row numbers count the header as 1), so
    nothing runs. A byte-order mark at the start of the manifest is allowed.
    """
    path = folder / MANIFEST
    # read_text: invalid UTF-8 or an oversized file is an InputError naming the manifest (was a bare
    # UnicodeDecodeError, exit 1, no file named)
    text = read_text(path).removeprefix("\ufeff")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = list(reader)
        columns = list(reader.fieldnames or [])
    except csv.Error as exc:
        raise InputError(str(path), [Problem("bad-manifest", f"row {reader.line_num}", str(exc))]) from None
    if "file" not in columns:
        raise InputError(str(path), [Problem("bad-manifest", "file", "the manifest has no 'file' column")])
    problems: list[Problem] = []
    for k, row in enumerate(rows):
        problem = _row_file_problem(folder, (row.get("file") or "").strip(), f"row {k + 2}.file")
        if problem is not None:
            problems.append(problem)
    if problems:
        raise InputError(str(path), problems)
    extra_columns = [c for c in columns if c != "file"]
    entries = []
    for k, row in enumerate(rows):
        name = (row.get("file") or "").strip()
        entry = _entry(name, folder / name, {c: row.get(c) or "" for c in extra_columns})
        if SHA256_COLUMN in columns:
            problem = _hash_problem(entry, row.get(SHA256_COLUMN) or "", f"row {k + 2}.{SHA256_COLUMN}")
            if problem is not None:
                problems.append(problem)
        entries.append(entry)
    if problems:
        raise InputError(str(path), problems)
    return entries


def find_instances(path: Path) -> list[InstanceEntry]:
    """The instances of ``SET`` (see the module docstring); none found is an :class:`InputError`."""
    path = Path(path)
    if path.is_file():
        return [_entry(path.name, path, {})]
    if (path / MANIFEST).is_file():
        entries = _manifest_entries(path)
    else:
        entries = [_entry(p.name, p, {}) for p in sorted(path.glob("*.json")) if p.is_file()]
    if not entries:
        raise InputError(str(path), [Problem("no-instances", "SET", "no manifest.csv and no *.json instance")])
    return entries


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def run_key(sha256: str, spec: RunSpec) -> str:
    """What identifies a run's result: instance hash, solver, seed, limit, gap, threads, memory cap, grace, nodes.

    Every option that can change a run's record is in it (the memory cap decides ``oom``, the
    grace ``hang``), so a record saved under other options or another instance content is
    never reused.
    """
    return (
        f"{sha256}|{spec.solver}|{spec.seed}|{spec.time_limit_s!r}|{spec.rel_gap!r}|{spec.threads}"
        f"|mem={spec.memory_limit_mb}|grace={spec.grace_s!r}"
        + ("" if spec.node_limit is None else f"|nodes={spec.node_limit}")  # runs saved before the option keep keys
    )


def result_file_name(sha256: str, spec: RunSpec) -> str:
    """``<hash>-<solver>-s<seed>-<hash of the key>.json``: readable, file-system safe and unique per key."""
    digest = hashlib.sha256(run_key(sha256, spec).encode()).hexdigest()[:10]
    return f"{sha256[:12]}-{_slug(spec.solver)}-s{spec.seed}-{digest}.json"


def make_tasks(config: BenchConfig, entries: Sequence[InstanceEntry]) -> list[BenchTask]:
    """Every instance x solver x seed (seeds ``0 .. K-1``), in that order."""
    tasks = []
    for entry in entries:
        for solver in config.solvers:
            for seed in range(config.seeds):
                spec = RunSpec(
                    solver,
                    seed,
                    config.time_limit_s,
                    config.rel_gap,
                    config.threads,
                    config.memory_limit_mb,
                    config.grace,
                    _node_limit(config, solver),
                )
                tasks.append(BenchTask(entry, spec, run_key(entry.sha256, spec), result_file_name(entry.sha256, spec)))
    return tasks


def stored_record(path: Path, key: str) -> Record | None:
    """The saved result at ``path`` when it is the result of ``key``, else None."""
    if not path.is_file():
        return None
    try:
        doc = read_json(path)
    except InputError:
        return None
    return doc if isinstance(doc, dict) and doc.get("key") == key else None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_tree(pid: int) -> None:
    """SIGKILL the worker's group and every process below it, with theirs.

    A solve runs in a process of its own session (the watchdog's ``setsid``), out of the
    worker's group: it is found by its parent links, read before anything dies.
    """
    below = descendants(pid)
    _kill_group(pid)
    for p in below:
        _kill_group(p)  # a group leader below (the watchdog's child) takes its solver with it
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int, Any, bool, float | None]:
    """Reap ``proc`` by ``deadline`` (``time.monotonic``), else kill it and what it started.

    Returns ``(status, rusage, killed, hwm)``, ``hwm`` the last :func:`vm_hwm_mb` read while
    waiting. The exit is seen without reaping (``WNOWAIT``), so the worker's group is killed
    while its zombie still holds the group id (no other process can have it yet), then reaped.
    """
    killed = False
    hwm: float | None = None
    try:
        while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            hwm = vm_hwm_mb(proc.pid) or hwm
            if time.monotonic() >= deadline or _CANCEL.is_set():
                _kill_tree(proc.pid)
                killed = True
                break
            time.sleep(POLL_S)
    except BaseException:  # interrupted while waiting (a cancelled Ray task): the worker goes too
        _kill_tree(proc.pid)
        raise
    finally:
        _kill_group(proc.pid)  # whatever the worker left in its group (a solver process)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return status, usage, killed, hwm


def oom_kills() -> int | None:
    """How many processes the kernel has killed for memory since boot (``oom_kill``, ``/proc/vmstat``); None unknown."""
    try:
        with open("/proc/vmstat", encoding="ascii") as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def _killed_for_memory(before: int | None, peak_mb: float | None, limit_mb: int | None) -> bool:
    """A worker killed by SIGKILL (not by us) died for memory: an OOM kill happened meanwhile, or it neared its cap."""
    after = oom_kills()
    if before is not None and after is not None and after > before:
        return True
    return limit_mb is not None and peak_mb is not None and peak_mb >= NEAR_LIMIT_SHARE * limit_mb


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:].strip()
    except OSError:
        return ""


def _read_result(path: Path) -> Record | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _package_root() -> str:
    """The folder holding the ``wattplan`` package, so the worker imports the same code as this process.

    This module is ``wattplan/planner/bench/runner.py`` under it, installed or in a checkout (where ``wattplan/planner``
    is a link to ``planner/``: the path is taken as imported, not resolved).
    """
    return str(next(p for p in Path(__file__).parents if (p / "wattplan" / "__init__.py").is_file()))


def run_one(spec: RunSpec, instance: bytes) -> Record:
    """Run the worker on ``instance`` (the file's bytes) as ``spec`` asks; the run's record (module docstring).

    Module level and argument-only so it runs the same in a thread here and in a Ray task on
    another machine.
    """
    from wattplan.planner import planning

    with tempfile.TemporaryDirectory(prefix="wattplan-bench-") as scratch:
        folder = Path(scratch)
        (folder / "instance.json").write_bytes(instance)
        task = {**asdict(spec), "instance": str(folder / "instance.json")}
        (folder / "task.json").write_text(json.dumps(task), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        env[PARENT_ENV] = str(os.getpid())  # the worker dies with this process (kill -9 included)
        env.setdefault(planning.COMMAND_CWD_ENV, os.getcwd())  # a cmd: solver's relative paths: where bench was started
        cmd = [
            sys.executable,
            "-m",
            "wattplan.planner.bench.worker",
            str(folder / "task.json"),
            str(folder / "result.json"),
        ]
        stderr_path = folder / "stderr.txt"
        kills_before = oom_kills()
        begin = time.monotonic()
        with open(folder / "stdout.txt", "wb") as out, open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=folder, env=env, start_new_session=True
            )
            status, usage, killed, hwm = _wait(proc, begin + spec.time_limit_s + spec.grace_s)
        wall = time.monotonic() - begin
        code = os.waitstatus_to_exitcode(status)
        result = _read_result(folder / "result.json")
        maxrss = usage.ru_maxrss / 1024.0
        peak = (result or {}).get("peak_mb") or hwm
        record: Record = {"wall_s": wall, "exit_code": code, "maxrss_wait4_mb": maxrss}
        if killed:
            why = "interrupted" if _CANCEL.is_set() else f"no answer within {spec.time_limit_s + spec.grace_s:g} s"
            record.update(status="hang", message=f"{why} (limit + grace): process group killed")
        elif code == 0 and result is not None:
            record.update(result)
            if result["status"] not in ("error", "oom") and float(result["time_s"]) > late_after(spec.time_limit_s):
                record.update(status="timeout", plan_status=result["status"])
                record["message"] = f"answered after {float(result['time_s']):.2f} s, limit {spec.time_limit_s:g} s"
        elif code == EXIT_OOM or (result is not None and result.get("status") == "oom"):
            record.update(status="oom", message=(result or {}).get("message", "MemoryError"))
        elif code == -signal.SIGKILL and _killed_for_memory(kills_before, peak, spec.memory_limit_mb):
            record.update(status="oom", message="killed by SIGKILL, not by the runner, for memory")
        elif code == -signal.SIGKILL:
            record.update(status="crash", message="killed by SIGKILL, not by the runner (no out-of-memory kill seen)")
        else:
            what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            tail = _tail(stderr_path)
            memory = MEMORY_FAILURE.search(tail)
            kind = "oom" if memory else "crash"
            record.update(status=kind, message=f"{what}: {memory.group(0)}" if memory else what)
        record["peak_mb"] = peak if peak is not None else maxrss
        if record["status"] in ("hang", "oom", "crash", "error"):
            record["stderr_tail"] = _tail(stderr_path)
        return record


def task_record(task: BenchTask, record: Record) -> Record:
    """``record`` with the run's identity: key, instance hash, solver, seed and the options asked."""
    spec = task.spec
    return {
        **record,
        "key": task.key,
        "instance_sha256": task.entry.sha256,
        "solver": spec.solver,
        "seed": spec.seed,
        "time_limit_s": spec.time_limit_s,
        "rel_gap": spec.rel_gap,
        "threads": spec.threads,
        "node_limit": spec.node_limit,
        "memory_limit_mb": spec.memory_limit_mb,
    }


def failed_record(error: BaseException) -> Record:
    """The record of a run whose driver itself failed (a Ray node lost, no scratch space): ``crash``."""
    message = str(error).strip() or "(no message)"
    return {"status": "crash", "message": f"runner: {type(error).__name__}: {message}"}


def stale_runs(runs: Path, tasks: Sequence[BenchTask]) -> int:
    """How many saved runs in ``runs`` (``*.json``) hold the key of none of ``tasks`` (see :class:`SweepResult`)."""
    keys = {task.key for task in tasks}
    count = 0
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else []:
        try:
            doc = read_json(path)
        except InputError:
            continue  # not a run's record
        count += isinstance(doc, dict) and "key" in doc and doc["key"] not in keys
    return count


@dataclass(frozen=True)
class SweepResult:
    """The records of every task (task order; None where a run is missing), how many ran now and were reused.

    ``stale``: saved runs under ``out/runs`` that are no task's of this bench run (their instance
    changed, or they ran under other options), left as they are and not used.
    """

    tasks: list[BenchTask]
    records: list[Record | None]
    ran: int
    reused: int
    stale: int = 0


@contextmanager
def bench_lock(out: Path) -> Iterator[None]:
    """Hold ``out/bench.lock`` (``flock``, released when this process ends, however it ends) for the block.

    A second bench run into the same ``out`` is an :class:`InputError` naming ``--out`` and the pid
    of the bench run holding it: two bench runs would both run every task.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            why = f"{out} is in use by another wattplan bench (pid {holder}, lock {path}); wait, or give another --out"
            raise InputError("--out", [Problem("out-in-use", "--out", why)]) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def prepare_runs(config: BenchConfig) -> list[BenchTask]:
    """Check ``config`` and list its tasks; bad options, a bad set or a missing Ray raise :class:`InputError`."""
    from wattplan.planner.executor import require_ray

    problems = config_problems(config)
    if problems:
        raise InputError("options", problems)
    if config.ray_address is not None:
        require_ray()
    return make_tasks(config, find_instances(config.instances))


def run_bench(
    config: BenchConfig, tasks: Sequence[BenchTask] | None = None, progress: ProgressFn | None = None
) -> SweepResult:
    """Run every task (default :func:`prepare_runs`'s) not already saved under ``out/runs``; save each as it ends.

    ``progress(record)`` is called here for every task, reused ones first. Runs go through
    :func:`planner.executor.run_tasks` in ``thread`` mode (each thread drives a worker process;
    ``workers`` default 1) or as Ray tasks (``ray_address``; each asks for ``threads`` CPUs).
    Interrupted (Ctrl-C), the running workers are killed and the finished runs stay saved.
    Another bench run into the same ``out`` is refused (:func:`bench_lock`).
    """
    tasks = prepare_runs(config) if tasks is None else list(tasks)
    with bench_lock(Path(config.out)):
        return _run_locked(config, tasks, progress)


def _run_locked(config: BenchConfig, tasks: list[BenchTask], progress: ProgressFn | None) -> SweepResult:
    """:func:`run_bench`'s body, run while this bench run holds ``out``'s lock (:func:`bench_lock`)."""
    from wattplan.planner.executor import run_tasks

    runs = Path(config.out) / RUNS_DIR
    records: list[Record | None] = [None] * len(tasks)
    todo: list[int] = []
    done_keys: dict[str, int] = {}
    for i, task in enumerate(tasks):
        stored = stored_record(runs / task.file_name, task.key)
        if stored is not None:
            records[i] = stored
            if progress is not None:
                progress(stored)
        elif task.key in done_keys:  # the same content under another name: one run serves both
            continue
        else:
            done_keys[task.key] = i
            todo.append(i)
    reused = sum(r is not None for r in records)
    contents: dict[Path, bytes] = {}
    args = [(tasks[i].spec, contents.setdefault(tasks[i].entry.path, tasks[i].entry.path.read_bytes())) for i in todo]
    workers = config.workers if config.workers is not None or config.ray_address is not None else 1
    _CANCEL.clear()
    outcomes = run_tasks(
        run_one, args, workers=workers, ray_address=config.ray_address, mode="thread", cpus_per_task=config.threads
    )
    with cancel_on_signals(lambda _signum: _CANCEL.set()):  # the waiting runs kill their workers
        try:
            for k, outcome in outcomes:
                i = todo[k]
                raw = outcome.value if outcome.value is not None else failed_record(outcome.error or RuntimeError())
                record = task_record(tasks[i], raw)
                write_json_atomic(runs / tasks[i].file_name, record)
                records[i] = record
                if progress is not None:
                    progress(record)
        except BaseException:  # interrupted: the waiting runs kill their workers; nothing half-done is saved
            _CANCEL.set()
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()  # shut the pool down now: its threads return once their workers are dead
            raise
    for i, task in enumerate(tasks):  # a task that shared its content with another reads that one's result
        shared = records[done_keys[task.key]] if records[i] is None and task.key in done_keys else None
        if shared is not None:
            records[i] = shared
            if progress is not None:
                progress(shared)
    return SweepResult(tasks, records, len(todo), reused, stale_runs(runs, tasks))


__all__ = [
    "BenchConfig",
    "BenchTask",
    "InstanceEntry",
    "RunSpec",
    "SweepResult",
    "config_problems",
    "find_instances",
    "late_after",
    "make_tasks",
    "prepare_runs",
    "run_key",
    "run_one",
    "run_bench",
    "bench_lock",
]
