"""The watchdog's long-lived solver workers (formulations.watchdog): reused, replaced when they overrun, same answers.

A backend's ``solve`` goes to a worker forked once per backend class; these tests check that the worker is reused
between calls, gives the answer a child forked for the call gives, is killed with its subprocesses at a deadline
(and a fresh one serves the next call), and that HiGHS can change its thread count within one worker.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.processes import pid_alive
from wattplan.formulations import watchdog
from wattplan.formulations.backends import SolveParams, SolverResult, get_backend
from wattplan.formulations.round_model import build_round_model
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.lifetime import start_ticks
from wattplan.planner.files.resources import DEFAULT_INSTANCE_NAME, shipped

NODE_LIMIT = 1_000
"""The default round's 5% proof is HiGHS's root node; a node limit, not the clock, bounds the search (§5.15)."""
SAFETY_NET_S = 300.0
"""Only so that a hung solve ends: 9 s is what HiGHS took on a loaded 2-core machine, against 30 s before."""
GONE_S = 60.0
"""How long a killed process may take to disappear (a deadline: the test goes on as soon as it has)."""


class SleepyBackend:
    """A stand-in backend: its ``solve`` starts a subprocess, writes both pids to ``marker`` and sleeps."""

    name = "sleepy"

    def solve(self, marker: str, sleep_s: float) -> SolverResult:
        """Report the worker's pid (and a child's) through ``marker``; sleep ``sleep_s`` s; answer ``optimal``."""
        child = subprocess.Popen(["sleep", "600"])
        Path(marker).write_text(f"{os.getpid()} {child.pid}")
        time.sleep(sleep_s)
        child.kill()
        child.wait()
        return SolverResult("optimal", message=str(os.getpid()))


def _default_model() -> tuple[object, ...]:
    lm = build_round_model(load_instance(shipped(DEFAULT_INSTANCE_NAME))).lm
    params = SolveParams(time_limit_s=SAFETY_NET_S, rel_gap=0.05, threads=1, seed=0, node_limit=NODE_LIMIT)
    return (lm, "progress", True, params)


@pytest.mark.slow
def test_a_backend_solve_is_served_by_one_worker_and_answers_as_a_forked_child_does() -> None:
    args = _default_model()
    solve = get_backend("highs").solve
    first = run_with_deadline(solve, args, 2 * SAFETY_NET_S)
    worker = watchdog._WORKERS[watchdog._solver_family(solve) or ""]
    second = run_with_deadline(solve, args, 2 * SAFETY_NET_S)
    assert watchdog._WORKERS[watchdog._solver_family(solve) or ""] is worker and worker.proc.is_alive()
    assert worker.proc.pid != os.getpid()
    alone = watchdog._run_in_child(solve, args, 2 * SAFETY_NET_S)
    assert first.status == second.status == alone.status == "optimal"  # within the 5% gap
    assert first.values is not None and alone.values is not None and second.values is not None
    assert np.array_equal(first.values, alone.values) and np.array_equal(second.values, alone.values)
    assert first.objective == alone.objective


def test_a_worker_past_its_deadline_is_killed_with_its_subprocess_and_replaced(tmp_path: Path) -> None:
    backend = SleepyBackend()
    marker = tmp_path / "pids"
    quick = run_with_deadline(backend.solve, (str(marker), 0.0), 30.0)
    assert quick.status == "optimal" and int(quick.message) != os.getpid()
    worker_pid = int(quick.message)
    assert run_with_deadline(backend.solve, (str(marker), 0.0), 30.0).message == str(worker_pid)  # reused

    slow = run_with_deadline(backend.solve, (str(marker), 60.0), 1.0)
    assert slow.status == "no_solution" and "watchdog" in slow.message
    pids = [int(p) for p in marker.read_text().split()]
    assert pids[0] == worker_pid
    deadline = time.monotonic() + GONE_S
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(p) for p in pids), "the worker or its subprocess outlived the deadline"

    again = run_with_deadline(backend.solve, (str(marker), 0.0), 30.0)
    assert again.status == "optimal" and int(again.message) not in (worker_pid, os.getpid())


def test_a_call_that_cannot_be_pickled_runs_in_a_child_of_its_own() -> None:
    class Local:  # a class local to a function cannot be pickled by reference
        name = "local"

        def solve(self) -> SolverResult:
            return SolverResult("optimal", message=str(os.getpid()))

    result = run_with_deadline(Local().solve, (), 30.0)
    assert result.status == "optimal" and int(result.message) != os.getpid()
    assert "tests.test_solver_worker.Local" not in "".join(watchdog._WORKERS)


@pytest.mark.slow
def test_highs_changes_its_thread_count_within_one_process() -> None:
    """HiGHS sizes one scheduler per process at its first run; a worker meets 1-thread and 2-thread stages."""
    lm, objective, maximize, params = _default_model()
    assert isinstance(params, SolveParams)
    backend = get_backend("highs")
    statuses = []
    for threads in (1, 2, 1):
        p = replace(params, threads=threads)
        statuses.append(backend.solve(lm, objective, maximize, p).status)  # type: ignore[arg-type]
    assert statuses == ["optimal"] * 3


class _ReapedWorker:
    """A worker process reaped already: ``pid`` is what the kernel gave to someone else since."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def is_alive(self) -> bool:
        return False  # reaped: multiprocessing knows its exit code

    def kill(self) -> None:
        raise AssertionError("a reaped worker is never signalled")

    def join(self, timeout: float | None = None) -> None:
        return None


def test_retiring_a_reaped_worker_never_kills_the_session_that_reused_its_pid() -> None:
    """A dead worker reaped before it is retired: its pid now leads a stranger's session, which must live on."""
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert os.getsid(stranger.pid) == stranger.pid  # the stranger leads a session whose id is the old pid
        began = start_ticks(stranger.pid)
        assert began is not None
        mine, theirs = watchdog.mp.get_context("fork").Pipe()
        theirs.close()
        worker = watchdog._Worker(_ReapedWorker(stranger.pid), mine, os.getpid(), began - 1)  # type: ignore[arg-type]
        watchdog._retire(worker)
        assert stranger.poll() is None, "retiring a reaped worker killed the session that reused its pid"
        # The same worker not reaped (its start time is the pid's): its session is killed, as before.
        watchdog._retire(watchdog._Worker(_ReapedWorker(stranger.pid), mine, os.getpid(), began))
        assert stranger.wait(timeout=30) == -9
    finally:
        if stranger.poll() is None:
            stranger.kill()
            stranger.wait()
