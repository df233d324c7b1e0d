"""The agent's event-by-event ``fifo-max`` reference equals the replay's round-by-round one, to the millisecond."""

from __future__ import annotations

import pytest

from planner.agent.reference import fifo_reference
from planner.contracts.rules import RoundRules
from planner.files.resources import shipped
from planner.sim.engine import SimConfig, simulate
from planner.sim.policies import make_policy
from planner.sim.replay import ReplaySpec, prepare


@pytest.mark.parametrize(
    ("trace", "cluster", "jobs"),
    [
        ("live/gavel_mix.trace", "v100:16", 40),
        ("live/philly_shape.trace", "v100:16", 40),
        ("sources/gavel/traces/0e4a51.trace", "v100:32,p100:16", 60),  # two GPU types, 4-GPU jobs
        ("sources/gavel/traces/2869ce.trace", "v100:16", 30),  # 8-GPU jobs
    ],
)
def test_event_reference_matches_the_replay(trace: str, cluster: str, jobs: int) -> None:
    spec = ReplaySpec(trace=shipped(trace), cluster=cluster, max_jobs=jobs, rules=RoundRules(restart_s=240.0))
    workload, ctx = prepare(spec)
    replayed = simulate(workload, ctx, make_policy("fifo-max"), None, SimConfig())
    mine = fifo_reference(workload.jobs, ctx)
    assert set(mine) == {s.id for s in replayed.jobs}
    for s in replayed.jobs:
        assert s.finish_s is not None and mine[s.id] == pytest.approx(s.finish_s, abs=1e-3), s.id
