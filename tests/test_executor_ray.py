"""planner.executor on a local Ray instance: the same outcomes as local processes; frontier and simulate on Ray.

simulate runs on its default engine (the agent's loop on the simulated Slurm), frontier on its own default.

Slow: starting Ray takes a few seconds. Skipped where Ray is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import csv
import math
import operator
import os
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.executor import TaskFailed, call_portably, run_tasks

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a local Ray instance (one work unit with the other local-Ray modules: conftest.py)
runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module; the executor uses it and leaves it running."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    yield
    ray.shutdown()


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    return write_gavel_trace(tmp_path / "tiny.trace", rows)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_ray_outcomes_equal_local_ones(local_ray: None, mode: str, tmp_path: Path) -> None:
    tasks = [(pow, (2, 10)), (math.sqrt, (-1.0,)), (read_json, (tmp_path / "missing.json",)), (operator.mul, (4, 5))]
    got = dict(run_tasks(call_portably, tasks, workers=2, ray_address="auto", mode=mode))
    assert ray.is_initialized()  # not ours to stop
    assert got[0].value == 1024 and got[3].value == 20
    assert isinstance(got[1].error, ValueError)
    assert isinstance(got[2].error, TaskFailed) and got[2].error.kind == "InputError"


def test_a_dying_ray_task_is_broken_process_pool_like_a_local_one(local_ray: None) -> None:
    tasks = [(operator.add, (1, 2)), (os._exit, (3,))]
    got = dict(run_tasks(call_portably, tasks, workers=2, ray_address="auto"))
    assert got[0].value == 3 and isinstance(got[1].error, BrokenProcessPool)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _no_timings(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if not k.startswith("solver_s") and k not in ("wall_s", "cpu_s")} for r in rows]


def test_frontier_and_simulate_on_ray_equal_local_runs(local_ray: None, tmp_path: Path, tiny_trace: Path) -> None:
    common = [str(tiny_trace), "--cluster", "v100:8", "--solver", "greedy"]
    sweep = ["--deltas", "0.1", "--max-jct-increase", "", "--baselines", "fifo-max"]
    for name, extra in (("local", []), ("ray", ["--ray", "auto"])):
        r = runner.invoke(app, ["frontier", *common, *sweep, "-o", str(tmp_path / f"fr-{name}"), *extra])
        assert r.exit_code == 0, r.output
        r = runner.invoke(
            app,
            [
                "simulate",
                *common,
                "-p",
                "zeus",
                "-p",
                "wattplan",
                "--no-plots",
                "-q",
                "-o",
                str(tmp_path / f"sim-{name}"),
            ]
            + extra,
        )
        assert r.exit_code == 0, r.output
    assert _no_timings(_csv(tmp_path / "fr-ray" / "frontier.csv")) == _no_timings(
        _csv(tmp_path / "fr-local" / "frontier.csv")
    )
    assert (tmp_path / "fr-ray" / "runs" / "wattplan-efficiency-delta-0.1" / "jobs.csv").exists()
    assert _no_timings(_csv(tmp_path / "sim-ray" / "comparison.csv")) == _no_timings(
        _csv(tmp_path / "sim-local" / "comparison.csv")
    )
