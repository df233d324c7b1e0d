"""The MaxQ rule: per job type and GPU type, the lowest setting that keeps 97% of full speed.

NVIDIA's power profiles (MaxQ) trade about 15% of the energy for at most 3% of the speed, applied to every job by a
Slurm prolog. The profile library gives the same rule per job type ``t`` and GPU type ``g``: the lowest setting
``s`` (power limit, W, or SM clock, MHz, by the type's unit) with

    X(t, g, n, s) >= KEEP * X(t, g, n, s_top(t, g, n))    for every GPU count n profiled,

``X`` the throughput (steps/s) and ``s_top`` the largest setting profiled at that count. Only settings profiled at
every count are candidates; a (type, GPU type) with none keeps the GPUs' default. A prolog knows the job's type (an
operator's table) and its node's GPU type, not how many GPUs the job will get: hence every count.

Used by the ``maxq`` baseline of the replay (Slurm alone with such a prolog, :mod:`planner.control.slurm_replay`), by
``cluster submit --maxq`` (the emulated cluster's prolog table) and by the ``fifo-maxq`` policy (the same baseline
decided round by round by the loop, :mod:`planner.sim.policies.fifo_maxq`), each on its own profiles: the library's
or a round instance's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from wattplan.planner.contracts.domain import Profile

KEEP = 0.97
"""The share of full-power throughput MaxQ keeps."""


def maxq_settings(profiles: Iterable[Profile], keep: float = KEEP) -> dict[tuple[str, str], int]:
    """``{(job type, GPU type): setting}`` of the module docstring's rule, from ``profiles`` (e.g. a library's)."""
    speeds: dict[tuple[str, str], dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for p in profiles:
        speeds[(p.type, p.gpu_type)][p.gpus][p.setting] = p.steps_per_s
    out: dict[tuple[str, str], int] = {}
    for key, by_count in speeds.items():
        common = set.intersection(*(set(d) for d in by_count.values()))
        fine = [s for s in common if all(d[s] >= keep * d[max(d)] for d in by_count.values())]
        if fine:
            out[key] = min(fine)
    return out
