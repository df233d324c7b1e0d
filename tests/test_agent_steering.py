"""The agent's steering between rounds (:mod:`planner.agent.steering`): one record, a reference that grows."""

from __future__ import annotations

import pytest

from wattplan.planner.agent.reference import slurm_reference
from wattplan.planner.agent.steering import LiveSteering, RoundSteer
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.governor import Steering
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobState

RULES = RoundRules(duration_s=360.0, objective="efficiency", delta=0.05)


def _jobs(n: int) -> tuple[list[JobState], ClusterContext]:
    workload, ctx = prepare(ReplaySpec(trace=shipped("live/gavel_mix.trace"), cluster="v100:16", max_jobs=n))
    return [JobState.new(s) for s in workload.jobs], ctx


def test_nothing_steers_without_a_bound_a_signal_or_a_tail() -> None:
    states, ctx = _jobs(3)
    live = LiveSteering(Steering(None), RULES, 30.0)
    assert live.round(ctx, ctx, states, states, 0.0, None) == RoundSteer(None, None, None)
    assert live.governor is None and live.tail is None


def test_the_governor_steps_once_per_round_length_and_keeps_its_delta_when_jobs_arrive() -> None:
    """An early round keeps the last ``delta``; a new job rebuilds the reference and the governor from it."""
    states, ctx = _jobs(6)
    live = LiveSteering(Steering(0.0, "projected"), RULES, 30.0)
    first = live.round(ctx, ctx, states[:3], states[:3], 400.0, None)
    assert live.governor is not None and first.delta == live.governor.delta
    assert live.reference_finish_s == slurm_reference([s.spec for s in states[:3]], ctx, 30.0)
    history = list(live.governor.history)
    early = live.round(ctx, ctx, states[:3], states[:3], 500.0, None)
    assert early.delta == first.delta and live.governor.history == history  # no step within a round length
    carried, before = live.governor.delta, live.governor
    arrival = live.round(ctx, ctx, states[:4], states[:4], 600.0, None)  # early: 200 s after the last step
    assert set(live.reference_finish_s) == {s.id for s in states[:4]}  # rebuilt over the jobs seen
    assert live.governor is not before and live.governor.delta == carried and arrival.delta == carried
    assert live.governor.history == []
    stepped = live.round(ctx, ctx, states[:4], states[:4], 800.0, None)  # a round length after the last step
    assert len(live.governor.history) == 1 and stepped.delta == pytest.approx(live.governor.delta)


def test_the_tail_bound_is_set_again_over_the_jobs_seen() -> None:
    states, ctx = _jobs(5)
    live = LiveSteering(Steering(None, tail_bound=0.1), RULES, 30.0)
    live.round(ctx, ctx, states[:2], states[:2], 0.0, None)
    assert live.tail is not None and set(live.tail.reference_finish_s) == {s.id for s in states[:2]}
    live.round(ctx, ctx, states, states, 100.0, None)
    expected = Steering(None, tail_bound=0.1).tail(ctx, slurm_reference([s.spec for s in states], ctx, 30.0), states)
    assert live.tail == expected
    assert live.round(ctx, ctx, states, states, 200.0, 1e9).min_steps == {}  # a budget: none
