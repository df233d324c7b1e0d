"""Solver processes die with the process that started them, also when it is killed with SIGKILL (issue 41).

A forked solver worker held both ends of its own pipe, so a parent killed with ``kill -9`` (the agent in
``tests/test_agent_live.py``, ``plan``, ``simulate``) left it waiting, or solving, forever: ``make test`` leaked two
of about 99 MB each. Each test here starts a real parent, waits (polling the process tree against a generous
deadline, never a fixed sleep) until the solver it started is mid-solve, kills the parent with SIGKILL and checks
that every process below it is gone: the watchdog's workers and their sentinels, a command solver's processes,
process-pool workers and benchmark workers.

The solver is a command solver that sleeps (``cmd:sh -c "sleep 600" {mps} {sol}``): it stands for any solve that
outlives its parent and costs no CPU. The agent is stood in for by a script calling what the agent's loop calls to
plan a round (``planning.Planner(request).plan(instance)``, :mod:`planner.agent.loop`), from the main thread and
from another thread (where the parent-death signal is not asked for and the sentinel alone must do it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import QuickBackend, pid_alive
from tests.sim_helpers import write_gavel_trace
from wattplan.formulations import watchdog
from wattplan.formulations.backends import SolverResult
from wattplan.planner.contracts.lifetime import ORPHANED_EXIT
from wattplan.planner.executor import descendants

ROOT = Path(__file__).resolve().parents[1]
SLEEPING_SOLVER = 'cmd:sh -c "sleep 600" {mps} {sol}'
"""A command solver that never answers (within the test): a solve under way for as long as the parent lives."""
STARTED_S = 180.0
"""Generous deadline for a parent to reach its solve (imports and model building on a loaded machine)."""
GONE_S = 30.0
"""Generous deadline for the processes below a killed parent to be gone (they go within milliseconds)."""


def _wait_for(what: str, ready: Callable[[], bool], timeout_s: float, proc: subprocess.Popen[bytes]) -> None:
    """Poll ``ready`` until it holds; fail naming ``what`` (with the parent's output) at ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the parent ended ({proc.returncode}) before {what}: {err.decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout_s:g} s")
        time.sleep(0.1)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _sleeping_solver_below(pid: int) -> bool:
    """A ``sleep 600`` (the command solver) runs below ``pid``."""
    return any(_cmdline(p) == "sleep 600" for p in descendants(pid))


def _live(pids: list[int]) -> list[str]:
    """Those of ``pids`` still alive (zombies count as gone), with their command lines."""
    return [f"{p} {_cmdline(p)}" for p in pids if pid_alive(p)]


def _kill_and_check_below(proc: subprocess.Popen[bytes], expected: int) -> None:
    """SIGKILL ``proc``; every process that was below it (at least ``expected`` of them) must be gone soon after."""
    below = descendants(proc.pid)
    assert len(below) >= expected, [f"{p} {_cmdline(p)}" for p in below]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + GONE_S
    try:
        while _live(below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _live(below), f"outlived their SIGKILLed parent: {_live(below)}"
    finally:
        for p in below:  # never leak them into the rest of the run, even when the test fails
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The children's environment: this checkout importable, scratch folders under ``tmp_path``."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    yield {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)}


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def test_plan_killed_with_sigkill_takes_its_solver_workers_and_the_solve_with_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    args = ["-m", "wattplan", "plan", str(ROOT / "instances" / "default.json"), "--solver", SLEEPING_SOLVER]
    proc = _start([*args, "--time-limit", "300", "--out", str(tmp_path / "plan.json")], env, tmp_path)
    try:
        _wait_for("command solver mid-solve", lambda: _sleeping_solver_below(proc.pid), STARTED_S, proc)
        # the worker, its sentinel, sh and sleep (an LP bound's HiGHS worker, idle, and its sentinel too)
        _kill_and_check_below(proc, expected=4)
    finally:
        proc.kill()
        proc.communicate()
    assert not (tmp_path / "plan.json").exists()


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_simulate_killed_with_sigkill_takes_its_pool_workers_and_their_solves_with_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    rows = [("ResNet-50 (batch size 64)", 4000, 0, 1), ("A3C", 9000, 0, 1), ("A3C", 5000, 100, 2)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    args = ["-m", "wattplan", "simulate", str(trace), "--cluster", "v100:8", "-p", "fifo-max", "-p", "wattplan"]
    args += ["--solver", SLEEPING_SOLVER, "--time-limit", "300", "--workers", "2", "-q", "--out", str(tmp_path / "o")]
    proc = _start(args, env, tmp_path)
    try:
        _wait_for("command solver mid-solve", lambda: _sleeping_solver_below(proc.pid), STARTED_S, proc)
        # two pool workers (one idle once fifo-max is done), the solver worker, its sentinel, sh and sleep
        _kill_and_check_below(proc, expected=5)
    finally:
        proc.kill()
        proc.communicate()


AGENT_STAND_IN = """
import sys, threading, time
from wattplan.planner import planning
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.request import PlanRequest

def plan_a_round():  # what the agent's loop calls each round (planner/agent/loop.py)
    planning.Planner(PlanRequest(solver=sys.argv[1], time_limit_s=300.0)).plan(load_instance(sys.argv[2]))

if sys.argv[3] == "thread":
    threading.Thread(target=plan_a_round, daemon=True).start()
    time.sleep(3600)
else:
    plan_a_round()
"""


@pytest.mark.parametrize("where", ["main", "thread"])
def test_an_agent_killed_with_sigkill_mid_round_takes_its_solver_workers_with_it(
    tmp_path: Path, env: dict[str, str], where: str
) -> None:
    """The agent's round planning, in the main thread or another one (no parent-death signal: the sentinel)."""
    instance = ROOT / "instances" / "default.json"
    proc = _start(["-c", AGENT_STAND_IN, SLEEPING_SOLVER, str(instance), where], env, ROOT)
    try:
        _wait_for("command solver mid-solve", lambda: _sleeping_solver_below(proc.pid), STARTED_S, proc)
        _kill_and_check_below(proc, expected=4)
    finally:
        proc.kill()
        proc.communicate()


IDLE_WORKER = """
import os, sys, time
from tests.helpers.processes import quick_solve_backend
from wattplan.formulations.watchdog import run_with_deadline

print(run_with_deadline(quick_solve_backend().solve, (), 60.0).message, flush=True)
if os.fork() == 0:  # a process forked afterwards (as the agent forks): it must not keep the worker's pipe open
    time.sleep(3600)
time.sleep(3600)
"""


def test_an_idle_worker_ends_with_its_parent_even_where_a_later_fork_lives_on(tmp_path: Path) -> None:
    """An idle worker goes with its parent while a process the parent forked later lives on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", IDLE_WORKER], cwd=ROOT, env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    later: list[int] = []
    below: list[int] = []
    try:
        worker = int(proc.stdout.readline())

        def forked_later() -> bool:
            later[:] = [p for p in descendants(proc.pid) if _ppid(p) == proc.pid and p != worker]
            return bool(later)

        _wait_for("forked child", forked_later, STARTED_S, proc)  # type: ignore[arg-type]
        below[:] = [p for p in descendants(proc.pid) if p not in later]
        assert worker in below
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + GONE_S
        while _live(below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _live(below), f"outlived their SIGKILLed parent: {_live(below)}"
        assert all(pid_alive(p) for p in later)  # the later fork lives on: the worker went by itself
    finally:
        proc.kill()
        proc.wait()
        for p in [*later, *below]:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


POOL = """
import time
from wattplan.planner.executor import run_tasks

for _ in run_tasks(time.sleep, [(600.0,), (600.0,), (600.0,)], workers=2):
    pass
"""


def test_process_pool_workers_end_with_a_parent_killed_with_sigkill(tmp_path: Path, env: dict[str, str]) -> None:
    proc = _start(["-c", POOL], env, ROOT)
    try:
        _wait_for(
            "two pool workers",
            lambda: (
                sum("multiprocessing" in _cmdline(p) and "spawn_main" in _cmdline(p) for p in descendants(proc.pid))
                >= 2
            ),
            STARTED_S,
            proc,
        )
        _kill_and_check_below(proc, expected=2)
    finally:
        proc.kill()
        proc.communicate()


BENCH_RUNNER = """
import sys
from pathlib import Path
from wattplan.planner.bench.runner import RunSpec, run_one

spec = RunSpec(solver="highs", seed=0, time_limit_s=600.0, rel_gap=0.01, threads=1, memory_limit_mb=None, grace_s=5.0)
run_one(spec, Path(sys.argv[1]).read_bytes())
"""


def test_a_benchmark_worker_ends_with_a_runner_killed_with_sigkill(tmp_path: Path, env: dict[str, str]) -> None:
    """The ``hang`` fault ignores SIGTERM and sleeps forever: only the parent-death tie can end it."""
    instance = ROOT / "instances" / "default.json"
    proc = _start(["-c", BENCH_RUNNER, str(instance)], {**env, "WATTPLAN_BENCH_FAULT": "hang"}, ROOT)
    try:
        _wait_for(
            "benchmark worker",
            lambda: any("wattplan.planner.bench.worker" in _cmdline(p) for p in descendants(proc.pid)),
            STARTED_S,
            proc,
        )
        _kill_and_check_below(proc, expected=1)
    finally:
        proc.kill()
        proc.communicate()


def test_a_helper_whose_parent_is_already_gone_exits_at_once() -> None:
    """The race check: the tie is made after the fork, so a parent dead by then must end the helper."""
    code = "from wattplan.planner.contracts.lifetime import die_with_parent; die_with_parent(1); print('alive')"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert done.returncode == ORPHANED_EXIT and b"alive" not in done.stdout
    env["WATTPLAN_BENCH_PARENT"] = "1"  # a runner that is not this worker's parent (any more)
    worker = [sys.executable, "-m", "wattplan.planner.bench.worker", "task.json", "result.json"]
    done = subprocess.run(worker, cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert done.returncode == ORPHANED_EXIT, done.stderr.decode()


def test_a_forked_child_holds_none_of_its_parents_worker_pipes() -> None:
    """The at-fork hook: a worker's pipe and the lifeline's write end are closed in every forked child."""
    assert watchdog.run_with_deadline(QuickBackend().solve, (), 60.0).status == "optimal"
    (w,) = [w for w in watchdog._WORKERS.values() if w.owner_pid == os.getpid() and "QuickBackend" in w.proc.name]
    assert watchdog._LIFELINE is not None
    fds = [w.conn.fileno(), watchdog._LIFELINE[2]]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status only
        still_open = 0
        for fd in fds:
            try:
                os.fstat(fd)
                still_open += 1
            except OSError:
                pass
        os._exit(still_open)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "a forked child kept the parent's ends open"
    os.fstat(fds[0])  # still open here, in the parent
    watchdog.shutdown_workers()


def test_a_solve_whose_worker_cannot_be_forked_leaves_no_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def no_fork(family: str) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(watchdog, "_worker", no_fork)
    with pytest.raises(BlockingIOError):
        watchdog.run_with_deadline(QuickBackend().solve, (), 60.0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_a_worker_retired_past_its_deadline_takes_a_command_solvers_group_with_it(tmp_path: Path) -> None:
    """The deadline kills the worker's whole session: a command solver runs in a process group of its own in it."""
    marker = tmp_path / "pids"
    script = f"echo $$ > {marker}; exec sleep 600"
    result = watchdog.run_with_deadline(run_command_in_worker().solve, (["sh", "-c", script], str(tmp_path)), 3.0)
    assert result.status == "no_solution" and "watchdog" in result.message
    sleeper = int(marker.read_text())
    deadline = time.monotonic() + GONE_S
    try:
        while pid_alive(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(sleeper), "the command solver outlived its worker's deadline"
    finally:
        try:
            os.kill(sleeper, signal.SIGKILL)
        except ProcessLookupError:
            pass


class CommandRunner:
    """A stand-in backend whose ``solve`` runs a command as the command solver does (a group of its own)."""

    name = "command-runner"

    def solve(self, words: list[str], cwd: str) -> SolverResult:
        """Run ``words`` through :func:`formulations.backends.command.run_command`, waiting up to 600 s."""
        from wattplan.formulations.backends.command import run_command

        run = run_command(words, Path(cwd), 600.0)
        return SolverResult("optimal", message=json.dumps(run.returncode))


def run_command_in_worker() -> CommandRunner:
    return CommandRunner()
