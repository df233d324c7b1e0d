"""The greedy plan: the documented fallback when no solver plan is available in time.

Rule (exclusive allocations only, no sharing):

1. For every job and every profiled option ``o = (g, n, s)`` compute its progress
   ``w * pi_o`` and its full energy cost ``c_o = e_o + n * T * (Pnode_g / K_g + Pidle_g)``
   (its dynamic energy plus its share of powered-on node and idle power, J).
2. Take options in decreasing ``w * pi_o / c_o`` (progress per joule; ties: more progress,
   then job order, GPU type name, count, setting) and accept one when its job has no
   option yet, its GPU type still has ``n`` free GPUs, and the round's energy with the
   nodes it needs, ``sum e + sum_g ceil(used_g / K_g) * T * (Pnode_g + K_g * Pidle_g)``,
   stays within the budget.

It runs in ``O(options * log options)``, never fails, and its plan is feasible by
construction; the validator checks it like any other plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.assemble import Allocation
from planner.domain import Instance
from planner.economics import job_outcome


@dataclass(frozen=True, slots=True)
class _Candidate:
    density: float
    progress: float
    order: int
    allocation: Allocation
    energy_j: float


def _candidates(instance: Instance) -> list[_Candidate]:
    T = instance.round.duration_s
    out = []
    for order, job in enumerate(instance.jobs):
        for g in instance.gpu_types:
            for n in job.gpus:
                if n > g.total_gpus:
                    continue
                for s in g.settings:
                    o = job_outcome(instance, job, g, n, s)
                    if o is None or o.progress <= 0:
                        continue
                    cost = o.energy_j + n * T * (g.node_power_w / g.gpus_per_node + g.idle_power_w)
                    value = job.weight * o.progress
                    out.append(
                        _Candidate(
                            value / cost if cost > 0 else math.inf,
                            value,
                            order,
                            Allocation((job.id,), g.name, n, s),
                            o.energy_j,
                        )
                    )
    out.sort(
        key=lambda c: (-c.density, -c.progress, c.order, c.allocation.gpu_type, c.allocation.gpus, c.allocation.setting)
    )
    return out


def greedy_allocations(instance: Instance) -> list[Allocation]:
    """Exclusive allocations chosen by progress per joule within capacity and budget."""
    T = instance.round.duration_s
    budget = instance.round.budget_j
    used = {g.name: 0 for g in instance.gpu_types}
    dynamic = 0.0
    chosen: dict[str, Allocation] = {}

    def node_energy(used_now: dict[str, int]) -> float:
        return sum(math.ceil(used_now[g.name] / g.gpus_per_node) * T * g.powered_node_w for g in instance.gpu_types)

    for c in _candidates(instance):
        a = c.allocation
        g = instance.gpu_type(a.gpu_type)
        if a.job_ids[0] in chosen or used[g.name] + a.gpus > g.total_gpus:
            continue
        trial = dict(used)
        trial[g.name] += a.gpus
        if budget is not None and dynamic + c.energy_j + node_energy(trial) > budget:
            continue
        chosen[a.job_ids[0]] = a
        used = trial
        dynamic += c.energy_j
    return [chosen[j.id] for j in instance.jobs if j.id in chosen]
