"""The agent's event-by-event ``fifo-max`` reference equals the replay's round-by-round one, to the millisecond."""

from __future__ import annotations

import pytest

from wattplan.planner.agent.reference import fifo_reference
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.engine import SimConfig, simulate
from wattplan.planner.sim.policies import make_policy
from wattplan.planner.sim.replay import ReplaySpec, prepare


@pytest.mark.slow
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


def test_slurm_reference_by_hand() -> None:
    """Continuous-time fifo-max on 16 V100: two 8-GPU jobs fill the cluster, the third starts at the first end."""
    from dataclasses import replace

    from wattplan.planner.agent.reference import _rates, slurm_reference

    spec = ReplaySpec(trace=shipped("live/gavel_mix.trace"), cluster="v100:16", max_jobs=40, rules=RoundRules())
    workload, ctx = prepare(spec)
    eights = [replace(s, requested_gpus=8) for s in workload.jobs]
    a, b, c = [s for s in eights if _rates(ctx, s)][:3]
    a, b, c = replace(a, arrival_s=0.0), replace(b, arrival_s=10.0), replace(c, arrival_s=20.0)
    x = {s.id: _rates(ctx, s)[0][1] for s in (a, b, c)}
    finish = slurm_reference([c, b, a], ctx, start_s=30.0)
    fa = 0.0 + 30.0 + a.total_steps / x[a.id]
    fb = 10.0 + 30.0 + b.total_steps / x[b.id]
    assert finish[a.id] == pytest.approx(fa) and finish[b.id] == pytest.approx(fb)
    assert finish[c.id] == pytest.approx(min(fa, fb) + 30.0 + c.total_steps / x[c.id])
    # a job no type can run never finishes; the others are unaffected
    big = replace(c, id="big", requested_gpus=32)
    assert slurm_reference([a, big], ctx)["big"] is None
