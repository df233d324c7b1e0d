"""Small hand-made replays shared by the simulator tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from hypothesis import strategies as st

from wattplan.planner.contracts.domain import GpuType, PairSlowdown, Profile
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobSpec
from wattplan.planner.sim.workload import Workload

A, B = "A", "B"
R50 = "ResNet-50 (batch size 64)"
"""A job type of the shipped Gavel traces and profiles, for :func:`write_gavel_trace`."""
A3C = "A3C"
"""Another job type of the shipped Gavel traces and profiles."""

# One node of two V100-like GPUs: idle 30 W per GPU, node base 100 W, power limits 150 and 250 W.
HAND_GPU = GpuType(
    name="v100",
    nodes=1,
    gpus_per_node=2,
    idle_power_w=30.0,
    node_power_w=100.0,
    setting_unit="power_limit_w",
    settings=(150, 250),
)
HAND_PROFILES = (
    Profile(A, "v100", 1, 150, 4.0, 130.0),
    Profile(A, "v100", 1, 250, 5.0, 230.0),
    Profile(A, "v100", 2, 150, 7.0, 125.0),
    Profile(A, "v100", 2, 250, 9.0, 220.0),
    Profile(B, "v100", 1, 250, 2.5, 180.0),
)
HAND_PAIRS = (PairSlowdown(A, B, "v100", 1, 0.8, 0.6),)
NO_SLURM_WAITS = {"pass_delay_s": 0.0, "completing_s": 0.0}
""":class:`~planner.control.slurm_replay.SimulatedCluster` fields for a hand computation that leaves out Slurm's
measured waits (a scheduler pass after each change, a job's ``COMPLETING``): ``tests/test_sim_slurm_latency.py``
computes those by hand."""


def hand_context(duration_s: float = 100.0, restart_s: float = 10.0, nodes: int = 1, **rules) -> ClusterContext:
    """The hand cluster: ``nodes`` nodes of 2 GPUs, round ``duration_s``, restart ``restart_s``."""
    gpu = dataclasses.replace(HAND_GPU, nodes=nodes)
    by_type: dict[str, tuple[Profile, ...]] = {}
    for p in HAND_PROFILES:
        by_type[p.type] = (*by_type.get(p.type, ()), p)
    return ClusterContext((gpu,), by_type, HAND_PAIRS, RoundRules(duration_s=duration_s, restart_s=restart_s, **rules))


def hand_job(job_id: str, job_type: str, arrival_s: float, steps: float, gpus: int = 1) -> JobSpec:
    """A job of the hand cluster; allowed counts up to twice the request, as the round builder does."""
    profiled = {p.gpus for p in HAND_PROFILES if p.type == job_type}
    allowed = tuple(sorted(n for n in profiled if n <= 2 * gpus))
    top = max((p for p in HAND_PROFILES if p.type == job_type and p.gpus == gpus), key=lambda p: p.setting)
    return JobSpec(job_id, job_type, arrival_s, steps, gpus, allowed, top.steps_per_s)


def workload(jobs: Sequence[JobSpec]) -> Workload:
    return Workload(jobs=tuple(jobs), source={"trace": "hand"})


def write_gavel_trace(path: Path, rows: Sequence[tuple[str, float, float, int]]) -> Path:
    """A Gavel trace: (job type, total steps, arrival s, GPUs) per row."""
    lines = [f"{t}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}" for t, steps, arrival, gpus in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


jobs_strategy = st.lists(
    st.tuples(
        st.sampled_from([A, B]),
        st.integers(0, 600),  # arrival (s)
        st.integers(1, 4000),  # steps
        st.sampled_from([1, 2]),  # requested GPUs (B only has 1)
    ),
    min_size=1,
    max_size=7,
)
"""Hypothesis rows ``(job type, arrival s, steps, requested GPUs)`` of 1 to 7 jobs for :func:`hand_job`."""
