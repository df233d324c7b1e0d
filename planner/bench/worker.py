"""One benchmark run in a fresh process: ``python -m wattplan.planner.bench.worker TASK.json RESULT.json``.

``TASK.json`` holds ``instance`` (a path), ``solver``, ``seed``, ``time_limit_s``, ``rel_gap``,
``threads``, ``node_limit`` and ``memory_limit_mb`` (each of the last two or null). The worker caps its address space at
``memory_limit_mb`` (``setrlimit(RLIMIT_AS)``, inherited by the solver processes it forks),
reads the instance and plans it through the front door :func:`planner.planning.plan`, the clock
started before reading, as ``wattplan plan`` does. It writes ``RESULT.json`` atomically
(:func:`result_doc`) and exits 0, also when planning raised (``status: error`` and the
message). Out of memory (:func:`out_of_memory`: ``MemoryError``, or a library that cannot be
mapped under the cap) exits :data:`EXIT_OOM` after trying to write ``status: oom``. Every
result carries the worker's ``peak_mb`` (:func:`peak_mb`). The parent
(:mod:`planner.bench.runner`) measures wall time and kills the process group at its deadline.
The worker ends with its parent, also one killed with SIGKILL (:func:`tie_to_parent`: the runner's pid comes in
:data:`PARENT_ENV`), and its solves end with it (:mod:`formulations.watchdog`).

Testing hook: the environment variable :data:`FAULT_ENV` (``WATTPLAN_BENCH_FAULT``) injects a
failure, as a comma-separated list of ``MODE`` or ``MODE:SOLVER`` (only runs of that solver):

===========  ====================================================================
crash        print a line to stderr and abort (SIGABRT)
killed       SIGKILL itself, as ``kill -9`` by someone else would (not out of memory)
hang         ignore SIGTERM and sleep forever (the parent's deadline must kill it)
orphan       fork a child that leaves for a session of its own (as a solve does) and
             sleeps forever, print ``injected orphan pid N`` to stderr, then hang
slow         sleep ``1.2 x limit + 1`` s on the planning clock, then plan: a late answer
oom          allocate 64 MiB blocks until ``MemoryError`` (under ``memory_limit_mb``;
             with no limit, raise ``MemoryError`` at once rather than eat the machine)
error        raise ``RuntimeError``: a run that fails cleanly
wrong_bound  plan as usual, then record a ``bound`` 10% of ``|value|`` past the plan's own
             evaluated value (below it when maximising, above when minimising; 1 past a
             value of 0): a wrong bound that the wrong-result check must catch
===========  ====================================================================

It exists for the runner's and the wrong-result check's tests; never set it for a real
benchmark.

The recorded ``objective`` is the plan's *evaluated* value, recomputed from the instance by the
independent re-check of :mod:`planner.bench.check` (the planner's own value is
``claimed_objective``; ``valid`` and ``recheck`` say whether the plan passed), beside the plan's
proven ``bound`` and ``lp_bound``: what :func:`planner.bench.summary.wrong_reasons` judges.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.lifetime import die_with_parent

FAULT_ENV = "WATTPLAN_BENCH_FAULT"
PARENT_ENV = "WATTPLAN_BENCH_PARENT"
"""Environment variable: the pid of the process that started the worker (the runner sets it), which the worker
must not outlive; unset, the worker's parent at its start."""
FAULT_MODES = ("crash", "killed", "hang", "orphan", "slow", "oom", "error", "wrong_bound")
EXIT_OOM = 75
"""Exit status of a worker that ran out of memory (``MemoryError``)."""
EXIT_USAGE = 64
"""Exit status for a wrong command line (not two file arguments)."""
_BLOCK = 64 * 1024 * 1024
WRONG_BOUND_SHARE = 0.1
"""How far past its plan's value the ``wrong_bound`` fault puts a run's bound (a share of ``|value|``)."""


def vm_hwm_mb(pid: int | str) -> float | None:
    """The high-water resident set (``VmHWM``, MiB) of process ``pid`` (``self`` too) from ``/proc``; None without."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def injected_fault(spec: str | None, solver: str) -> str | None:
    """The fault ``spec`` (:data:`FAULT_ENV`'s value) injects into a run of ``solver``, if any."""
    for item in (spec or "").split(","):
        mode, _, only = item.strip().partition(":")
        if mode in FAULT_MODES and (not only or only == solver):
            return mode
    return None


def limit_memory(megabytes: int | None) -> None:
    """Cap this process's address space (and its children's) at ``megabytes`` MiB; None: no cap."""
    if megabytes is not None:
        cap = int(megabytes) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def apply_fault(mode: str | None, task: dict[str, Any]) -> None:
    """Carry out the injected fault ``mode`` (see the module docstring); None does nothing."""
    if mode == "crash":
        sys.stderr.write("injected crash (WATTPLAN_BENCH_FAULT)\n")
        sys.stderr.flush()
        os.abort()
    if mode == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "orphan":
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only sleeps until it is killed
            os.setsid()
            while True:
                time.sleep(3600)
        sys.stderr.write(f"injected orphan pid {pid}\n")
        sys.stderr.flush()
    if mode in ("hang", "orphan"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    if mode == "slow":
        time.sleep(1.2 * float(task["time_limit_s"]) + 1.0)
    if mode == "oom":
        if task.get("memory_limit_mb") is None:
            raise MemoryError("injected (no memory limit set)")
        blocks = []
        while True:
            blocks.append(bytearray(_BLOCK))
    if mode == "error":
        raise RuntimeError("injected error (WATTPLAN_BENCH_FAULT)")


def peak_mb() -> float:
    """This worker's peak memory (MiB): its ``VmHWM`` since ``exec``, or a solver process's it waited for if larger.

    Not ``RUSAGE_SELF``: Linux carries the forking parent's resident set into it at ``exec``.
    """
    own = vm_hwm_mb("self")
    if own is None:
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)


SEARCH_COLUMNS = ("nodes", "lp_iterations", "branches", "conflicts")
"""The search effort a run records (:data:`formulations.backends.base.SEARCH_STATS`, repeated: this module imports
no solver code before its clock starts)."""


def search_effort(stages: Any) -> dict[str, float | None]:
    """Per :data:`SEARCH_COLUMNS` key, the sum over the plan's stages that report it; None when none does (unknown)."""
    totals: dict[str, float | None] = dict.fromkeys(SEARCH_COLUMNS)
    for stage in stages:
        for key, value in (stage.stats or {}).items():
            if key in totals:
                totals[key] = (totals[key] or 0.0) + float(value)
    return {k: int(v) if v is not None and v.is_integer() else v for k, v in totals.items()}  # counts: 12, not 12.0


def result_doc(plan: Any, instance: Any, time_s: float, read_s: float = 0.0) -> dict[str, Any]:
    """A planned run's result: status, values, sizes and timeline of ``plan`` for the instance's objective.

    ``objective`` is the plan's value recomputed from ``instance`` and ``valid`` the independent
    re-check (:func:`planner.bench.check.plan_check`, which adds ``claimed_objective``,
    ``recheck``, ``progress`` and ``progress_target``). ``bound`` and ``lp_bound`` are the plan's
    when the plan is for the instance's objective (a plan that switched objective has bounds in
    other units). ``round`` is the plan's whole ``round`` object (the solve report included).
    ``nodes``, ``lp_iterations``, ``branches``, ``conflicts``: :func:`search_effort`.
    ``time_s``: seconds from the clock's start to the plan; ``read_s``: of those, the seconds
    before planning began (the incumbent timeline's offset,
    :func:`planner.bench.incumbents.incumbent_trace`).
    """
    from wattplan.planner.bench.check import plan_check
    from wattplan.planner.bench.incumbents import incumbent_trace
    from wattplan.planner.contracts.plan import plan_to_doc

    objective = instance.round.objective
    r = plan.round
    model = r.report.model
    same = r.objective == objective
    check = plan_check(instance, plan, objective)
    trace = incumbent_trace(plan, objective, read_s, time_s, value=check["objective"])
    return {
        "status": r.status,
        **check,
        "bound": r.bound if same else None,
        "lp_bound": r.report.lp_bound if same else None,
        "build_s": None if model is None else model.build_s,
        "solve_s": r.solve_s,
        "time_s": time_s,
        "columns": None if model is None else model.columns,
        "rows": None if model is None else model.rows,
        "plan_solver": r.solver,
        "plan_objective": r.objective,
        **search_effort(r.report.stages),
        "message": "; ".join(f"{k}: {v}" for k, v in r.report.notes.items()),
        "incumbents": [list(p) for p in trace],
        "round": plan_to_doc(plan)["round"],
    }


def falsify_bound(doc: dict[str, Any], maximize: bool) -> dict[str, Any]:
    """``doc`` with the ``wrong_bound`` fault's bound: :data:`WRONG_BOUND_SHARE` of ``|v|`` past its value ``v``."""
    value = doc.get("objective")
    if value is None:
        return doc
    step = WRONG_BOUND_SHARE * abs(value) if value else 1.0
    return {**doc, "bound": value - step if maximize else value + step}


def plan_task(task: dict[str, Any], started_at: float, fault: str | None = None) -> dict[str, Any]:
    """Read the instance and plan it as ``task`` asks; the clock started at ``started_at`` (modules already loaded).

    ``fault`` ``wrong_bound`` falsifies the recorded bound (:func:`falsify_bound`, tests only).
    """
    from wattplan.planner.bench.incumbents import maximizes
    from wattplan.planner.contracts.instance_io import parse_instance
    from wattplan.planner.contracts.jsonio import parse_json_text
    from wattplan.planner.contracts.request import PlanRequest
    from wattplan.planner.planning import plan

    # not load_instance: its reader reserves a buffer of the largest input (512 MiB), over a small --memory-limit-mb
    source = str(task["instance"])
    instance = parse_instance(parse_json_text(Path(source).read_bytes().decode("utf-8-sig"), source), source)
    request = PlanRequest(
        solver=task["solver"],
        time_limit_s=float(task["time_limit_s"]),
        rel_gap=float(task["rel_gap"]),
        threads=int(task["threads"]),
        seed=int(task["seed"]),
        node_limit=None if task.get("node_limit") is None else int(task["node_limit"]),
    )
    read_s = time.perf_counter() - started_at
    result = plan(instance, request, started_at=started_at)
    doc = result_doc(result, instance, time.perf_counter() - started_at, read_s)
    if fault == "wrong_bound":
        doc = falsify_bound(doc, maximizes(instance.round.objective))
    return doc


def _write(path: Path, doc: dict[str, Any]) -> None:
    from wattplan.planner.contracts.jsonio import write_json_atomic

    write_json_atomic(path, {**doc, "peak_mb": peak_mb()})


def out_of_memory(exc: BaseException) -> bool:
    """``exc`` says memory ran out: ``MemoryError``, ``ENOMEM``, or a library that could not be mapped."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    text = str(exc).lower()
    return isinstance(exc, ImportError) and ("cannot allocate memory" in text or "failed to map segment" in text)


def _oom(result_path: Path, exc: BaseException) -> int:
    """Try to write ``status: oom`` (writing may need memory too: the exit status says it all)."""
    try:
        _write(result_path, {"status": "oom", "message": f"{type(exc).__name__}: {exc}"})
    except BaseException:
        pass
    return EXIT_OOM


def tie_to_parent() -> None:
    """End this worker when the runner that started it ends, kill -9 included.

    The parent-death signal, and an exit at once if the runner is gone already
    (:func:`~planner.contracts.lifetime.die_with_parent`).

    Safe from any runner thread: the thread that starts a worker waits for it to the end.
    """
    given = os.environ.get(PARENT_ENV, "")
    die_with_parent(int(given) if given.isdigit() else os.getppid())


def main(argv: list[str] | None = None) -> int:
    """Run the task of ``argv = [TASK.json, RESULT.json]``; the exit status (see the module docstring)."""
    if argv is None:  # the worker process itself, not a call from a test
        tie_to_parent()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.stderr.write("usage: python -m wattplan.planner.bench.worker TASK.json RESULT.json\n")
        return EXIT_USAGE
    task_path, result_path = Path(args[0]), Path(args[1])
    task = json.loads(task_path.read_text(encoding="utf-8"))
    limit_memory(task.get("memory_limit_mb"))
    try:  # load the planner's modules before the clock starts, as `wattplan plan` does
        import wattplan.planner.bench.check
        import wattplan.planner.bench.incumbents
        import wattplan.planner.contracts.instance_io
        import wattplan.planner.planning  # noqa: F401
    except Exception as exc:
        if out_of_memory(exc):
            return _oom(result_path, exc)
        raise
    started_at = time.perf_counter()
    try:
        fault = injected_fault(os.environ.get(FAULT_ENV), task["solver"])
        apply_fault(fault, task)
        doc = plan_task(task, started_at, fault)
    except Exception as exc:  # any failure of this run is its result
        if out_of_memory(exc):
            return _oom(result_path, exc)
        traceback.print_exc()
        message = str(exc).strip() or "(no message)"
        doc = {"status": "error", "message": f"{type(exc).__name__}: {message}"}
    _write(result_path, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
