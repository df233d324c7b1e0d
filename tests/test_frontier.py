"""The energy-JCT frontier's points and their replays: labels, checks before anything runs, failed and dying replays.

Every point replays on the simulated Slurm (:data:`planner.control.frontier.SLURM_ENGINE`); the rows, the captured
share, resuming and the command are tests/test_frontier_slurm.py's.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.control import frontier as cf
from wattplan.planner.control.frontier import SLURM_ENGINE, SlurmFrontier, run_slurm_frontier, slurm_frontier_sweep
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.frontier import frontier_points, replay_points
from wattplan.planner.sim.options import FrontierOptions
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.session import FrontierSweep

R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"


@pytest.fixture
def base(tmp_path: Path) -> ReplaySpec:
    """Five short jobs on eight V100s; wattplan plans greedily (the sweep's mechanics, not the solver)."""
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    request = replace(REPLAY_REQUEST, solver="greedy", time_limit_s=2.0)
    return ReplaySpec(trace=trace, cluster="v100:8", policy_options=PolicyOptions(request=request))


def test_sweep_points_labels_knobs_and_specs(base: ReplaySpec) -> None:
    capped = replace(
        base,
        power_cap_w=3000.0,
        policy_options=replace(base.policy_options, request=replace(REPLAY_REQUEST, objective="progress")),
    )
    points = frontier_points(capped, [0.1, 0.25, 0.1], [0.05, 0.07], ["fifo-max", "all"])
    labels = [p.label for p in points]
    assert labels == [
        "fifo-max",
        "fifo-maxq",
        "zeus",
        "eaco",
        "powerflow",
        "wattplan-progress",
        "wattplan-delta-0.1",
        "wattplan-delta-0.25",
        "wattplan-jct+5%",
        "wattplan-jct+7%",
    ]
    assert len(set(labels)) == len(labels)
    by = {p.label: p for p in points}
    for p in points:
        assert p.spec.policies == (p.policy,) and p.spec.power_cap_w == 3000.0
    assert all(by[b].knob == "baseline" and by[b].value is None for b in ("fifo-max", "zeus", "eaco", "powerflow"))
    prog = by["wattplan-progress"]
    assert (prog.knob, prog.value, prog.spec.rules.objective, prog.spec.max_jct_increase) == (
        "progress",
        None,
        "progress",
        None,
    )
    d = by["wattplan-delta-0.25"]
    assert (d.knob, d.value, d.spec.rules.objective, d.spec.rules.delta) == ("delta", 0.25, "energy", 0.25)
    j = by["wattplan-jct+7%"]
    assert (j.knob, j.value, j.spec.max_jct_increase, j.spec.rules.objective) == (
        "max_jct_increase",
        0.07,
        0.07,
        "energy",
    )
    # the request's own objective would override the rules' on every wattplan point
    assert all(p.spec.policy_options.request.objective is None for p in points if p.policy == "wattplan")
    assert all(p.spec.rules.duration_s == base.rules.duration_s for p in points)


def test_bad_baseline_and_bad_values_raise_before_anything_runs(base: ReplaySpec, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown-policy"):
        frontier_points(base, [], [], ["wattplan"])
    with pytest.raises(InputError, match="--delta"):
        replay_points(frontier_points(base, [1.5], [], ["fifo-max"]), tmp_path / "bad", 2, engine=SLURM_ENGINE)
    negative = SlurmFrontier(FrontierSweep(base, (), (-0.1,), ("fifo-max",)), SimulatedCluster())
    with pytest.raises(InputError, match="--max-jct-increase"):
        run_slurm_frontier(negative, tmp_path / "bad", workers=2)
    assert not (tmp_path / "bad").exists()


def test_under_a_cap_the_points_are_capped_and_the_reference_is_slurm_alone_without(
    base: ReplaySpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a cap every point replays with it; the reference, Slurm alone, knows no cap: as replayed without one."""
    options = {"solver": "greedy", "workers": 1, "deltas": [], "max_jct_increase": [], "baselines": ["fifo-max"]}
    front = slurm_frontier_sweep(base.trace, "v100:8", FrontierOptions.checked({**options, "power_cap_w": 2500}))
    replayed: list[tuple[str, float | None]] = []

    def counted(spec: ReplaySpec, policy: str, *args: Any, **kwargs: Any) -> Any:
        replayed.append((policy, spec.power_cap_w))
        return replay_on_slurm(spec, policy, *args, **kwargs)

    monkeypatch.setattr(cf, "replay_on_slurm", counted)
    result = run_slurm_frontier(front, tmp_path / "cap", workers=1, figures=None)
    assert [r["label"] for r in result.rows] == ["fifo-max", "wattplan-progress"]
    assert all(r["frontier_spec"]["power_cap_w"] == 2500.0 for r in result.rows)
    assert replayed == [("fifo-max", 2500.0), ("wattplan", 2500.0), ("slurm", 2500.0)]  # the reference: no point
    assert result.reference["policy"] == "slurm" and "label" not in result.reference
    uncapped = replace(front.sweep.base, power_cap_w=None, policies=("slurm",))
    alone = replay_on_slurm(uncapped, "slurm", front.setup).summary
    assert (result.reference["avg_jct_s"], result.reference["energy_own_kwh"]) == (
        alone["avg_jct_s"],
        alone["energy_kwh"],
    )


class WorkerBomb:
    """A trace path that kills the process unpickling it (a pool worker), as a crash or the OOM killer would."""

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (os._exit, (3,))

    def __deepcopy__(self, memo: dict) -> WorkerBomb:
        return self

    def __str__(self) -> str:
        return "worker-bomb.trace"


@pytest.mark.slow  # spawned workers, a broken pool and its retries: over 3 s
def test_a_failed_or_dying_replay_is_a_row_with_its_error_and_the_rest_complete(
    base: ReplaySpec, tmp_path: Path
) -> None:
    """A replay that raises in its worker (a missing trace), or kills it, costs only its own row.

    The error travels as text (an :class:`InputError` does not unpickle); a dead worker is charged to the replay
    that killed it (``BrokenProcessPool``), the replays its pool lost are retried. Neither failed row is saved.
    """
    points = SlurmFrontier(FrontierSweep(base, (), (), ("fifo-max", "zeus")), SimulatedCluster()).points()[:2]
    bomb = replace(points[1], label="bomb", spec=replace(points[1].spec, trace=WorkerBomb()))
    broken = replace(points[0], label="broken", spec=replace(points[0].spec, trace=tmp_path / "missing.trace"))
    out = tmp_path / "fr"
    rows = replay_points([points[0], bomb, broken, points[1]], out, 2, engine=SLURM_ENGINE)
    assert [r["label"] for r in rows] == ["fifo-max", "bomb", "broken", "zeus"]
    assert rows[1]["error"].startswith("BrokenProcessPool")
    assert rows[2]["error"].startswith("InputError") and "missing.trace" in rows[2]["error"]
    assert all("error" not in r and r["jobs_completed"] == 5 for r in (rows[0], rows[3]))
    saved = {r["label"]: (out / "runs" / r["label"] / "summary.json").is_file() for r in rows}
    assert saved == {"fifo-max": True, "bomb": False, "broken": False, "zeus": True}
