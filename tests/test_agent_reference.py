"""The agent's ``fifo-max`` reference in continuous time, by hand (Slurm alone agrees: ``tests/test_sim_slurm.py``)."""

from __future__ import annotations

import pytest

from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.replay import ReplaySpec, prepare


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
