"""The batched option outcomes equal the one-option-at-a-time ones bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.random_instances import tiny_rounds
from wattplan.planner.contracts.domain import GpuType, Instance
from wattplan.planner.core.economics_batched import JobGroup, allowed, exclusive_outcomes, group_outcomes, job_groups


@st.composite
def rounds_with_bounds(draw: st.DrawFn) -> Instance:
    """Tiny rounds with some tail bounds and slowdown limits, a restart cost of 0, the default or above the round."""
    inst = draw(tiny_rounds(max_jobs=6))
    jobs = tuple(
        dataclasses.replace(
            j,
            min_steps=min(draw(st.sampled_from([0.0, 1.0, 1e9])), j.remaining_steps),
            min_rate=draw(st.sampled_from([0.0, 1.0, 10.0, 1e9])),
        )
        for j in inst.jobs
    )
    restart = draw(st.sampled_from([inst.round.restart_s, 0.0, 1e6]))
    return dataclasses.replace(inst, jobs=jobs, round=dataclasses.replace(inst.round, restart_s=restart))


def _rate(inst: Instance, group: JobGroup, g: GpuType, n: int, setting: int) -> float:
    """The exclusive rate ``X`` (steps/s) of the group's type on ``n`` GPUs of ``g`` at ``setting``."""
    prof = inst.profile(group.type, g.name, n, setting)
    assert prof is not None
    return prof.steps_per_s


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(rounds_with_bounds())
def test_exclusive_outcomes_equal_group_outcomes(inst: Instance) -> None:
    rows = []
    for group in job_groups(inst):
        for gi, g in enumerate(inst.gpu_types):
            for k, n in enumerate(group.counts):
                if n > g.total_gpus:
                    continue
                for si, s in enumerate(g.settings):
                    out = group_outcomes(inst, group, gi, g, n, s, 1.0)
                    if out is not None:
                        for m, j in enumerate(group.index.tolist()):
                            keep = bool(allowed(out[0][None, :], group, np.array([_rate(inst, group, g, n, s)]))[0, m])
                            rows.append((j, gi, n, s, k, si, out[0][m].hex(), out[1][m].hex(), keep))
    x = exclusive_outcomes(inst)
    got = list(
        zip(
            x.job.tolist(),
            x.gpu.tolist(),
            x.gpus.tolist(),
            x.setting.tolist(),
            x.count_pos.tolist(),
            x.setting_pos.tolist(),
            [float(v).hex() for v in x.progress],
            [float(v).hex() for v in x.energy_j],
            x.keep.tolist(),
            strict=True,
        )
    )
    assert got == rows
    assert exclusive_outcomes(inst) is x  # kept in instance.derived
    assert not x.progress.flags.writeable


@settings(max_examples=5, deadline=None)
@given(tiny_rounds(max_jobs=2))
def test_no_jobs_no_options(inst: Instance) -> None:
    empty = dataclasses.replace(inst, jobs=())
    x = exclusive_outcomes(empty)
    assert len(x.job) == 0 and x.progress.dtype == np.int64
