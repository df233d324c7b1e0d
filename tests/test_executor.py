"""wattplan.planner.executor: one interface for local processes, threads and Ray; failures are outcomes, not aborts."""

from __future__ import annotations

import importlib.machinery
import math
import operator
import os
import socket
import sys
import time
import types
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from wattplan.planner import executor
from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.executor import Outcome, TaskFailed, call_portably, run_tasks

# Module-level library functions only: they pickle by reference in a spawned process and on a Ray node.
TASKS = [(2, 10), (3, 4), (5, 2)]


def results(outcomes) -> dict[int, Outcome]:
    return dict(outcomes)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_every_task_runs_once_and_comes_back_with_its_index(mode: str) -> None:
    got = results(run_tasks(pow, TASKS, workers=2, mode=mode))
    assert sorted(got) == [0, 1, 2]
    assert [got[i].value for i in range(3)] == [1024, 81, 25]
    assert all(o.ok for o in got.values())


def test_a_raising_task_is_its_outcome_and_the_rest_complete() -> None:
    got = results(run_tasks(math.sqrt, [(4.0,), (-1.0,), (9.0,)], workers=2))
    assert got[0].value == 2.0 and got[2].value == 3.0
    assert isinstance(got[1].error, ValueError) and got[1].value is None and not got[1].ok


def test_an_exception_that_cannot_be_unpickled_travels_as_text(tmp_path: Path) -> None:
    """InputError's arguments do not rebuild it: sent as is, it would break the whole pool."""
    missing = tmp_path / "missing.json"
    got = results(run_tasks(read_json, [(missing,), (missing,)], workers=2))
    for outcome in got.values():
        assert isinstance(outcome.error, TaskFailed) and outcome.error.kind == "InputError"
        assert "missing.json" in str(outcome.error) and str(outcome.error).startswith("InputError: ")
    with pytest.raises(TaskFailed):
        call_portably(read_json, [missing])


def test_a_dying_worker_costs_only_its_own_task() -> None:
    """os._exit kills the pool's worker: the lost tasks are retried alone, the killer is BrokenProcessPool."""
    tasks = [(operator.add, (1, 2)), (os._exit, (3,)), (operator.mul, (4, 5)), (operator.add, (6, 7))]
    got = results(run_tasks(call_portably, tasks, workers=2))
    assert got[0].value == 3 and got[2].value == 20 and got[3].value == 13
    assert isinstance(got[1].error, BrokenProcessPool)


def test_bad_workers_and_missing_ray_are_input_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="--workers"):
        run_tasks(pow, TASKS, workers=0)
    with pytest.raises(InputError, match="--ray"):
        run_tasks(pow, TASKS, ray_address=" ")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(InputError, match="ray-unavailable"):
        run_tasks(pow, TASKS, ray_address="local")


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_a_ray_address_nothing_answers_is_refused_not_awaited(dead_port: int) -> None:
    """Issue 22: ``--ray HOST:PORT`` where no Ray listens hung in ``ray.init`` forever."""
    pytest.importorskip("ray")
    for address in (f"127.0.0.1:{dead_port}", f"ray://127.0.0.1:{dead_port}"):
        begin = time.monotonic()
        with pytest.raises(InputError) as caught:
            run_tasks(pow, TASKS, ray_address=address)
        assert time.monotonic() - begin < 10
        [problem] = caught.value.problems
        assert (problem.code, problem.path) == ("ray-unreachable", "--ray") and address in problem.message
    with pytest.raises(InputError, match="HOST:PORT"):
        run_tasks(pow, TASKS, ray_address="nowhere")


def test_no_tasks_yields_nothing() -> None:
    assert list(run_tasks(pow, [], workers=3)) == []


def test_one_worker_runs_the_tasks_here_without_a_pool() -> None:
    """Issue 42: ``workers=1`` still started a spawn pool (an interpreter, and the caller's script run again)."""
    got = results(run_tasks(os.getpid, [(), ()], workers=1))
    assert [got[i].value for i in range(2)] == [os.getpid(), os.getpid()]
    alone = results(run_tasks(os.getpid, [()], workers=4))  # one task needs one worker, whatever is allowed
    assert alone[0].value == os.getpid()
    failed = results(run_tasks(read_json, [(Path("/nonexistent/missing.json"),)], workers=1))
    assert isinstance(failed[0].error, InputError)  # here, the task's own exception: nothing had to travel
    assert [o.value for _, o in run_tasks(pow, TASKS, workers=1)] == [1024, 81, 25]  # in task order


GUARDED = """import os
if __name__ == "__main__":
    main(
        1,
    )
else:
    other()
"""


@pytest.mark.parametrize(
    ("line", "guarded"), [(1, False), (2, False), (3, True), (4, True), (5, True), (7, False), (8, False)]
)
def test_the_main_guard_covers_only_its_own_body(line: int, guarded: bool) -> None:
    assert executor._guarded(GUARDED, line) is guarded


def test_the_main_guard_in_its_other_spellings() -> None:
    assert executor._guarded("if '__main__' == __name__:\n    main()\n", 2)
    assert executor._guarded("import sys\nif __name__ == '__main__' and sys.argv:\n    main()\n", 3)
    assert not executor._guarded("if __name__ != '__main__':\n    main()\n", 2)
    assert not executor._guarded("if DEBUG:\n    main()\n", 2)


def test_what_a_spawned_worker_runs_again() -> None:
    def module(spec_name: str | None, file: str | None) -> types.ModuleType:
        m = types.ModuleType("__main__")
        m.__spec__ = None if spec_name is None else importlib.machinery.ModuleSpec(spec_name, None)
        if file is not None:
            m.__file__ = file
        return m

    assert executor._reruns_main(module(None, "/tmp/script.py"))  # python script.py
    assert executor._reruns_main(module("tool", "/tmp/tool.py"))  # python -m tool
    assert not executor._reruns_main(module("pkg.__main__", "/tmp/pkg/__main__.py"))  # python -m pkg
    assert not executor._reruns_main(module(None, None))  # python -c, a notebook, standard input
