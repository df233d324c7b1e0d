"""An exhaustive planner for tiny rounds: the oracle the solver backends are compared with.

It shares no code with :mod:`formulations`: it walks every assignment of jobs to "wait",
an exclusive option ``(g, n, s)`` or a pair with a later job at ``(g, n, s)``, keeps the
ones within capacity (``sum n <= K_g N_g``, pairs counted once) and budget (dynamic energy
plus ``ceil(used_g / K_g) T (Pnode_g + K_g Pidle_g)``), and returns the best progress ``P*``
and, among plans with progress ``>= (1 - 1e-6) P*`` (the planner's lexicographic rule), the
least energy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.core.economics import job_outcome, ordered_pair_rates


@dataclass(frozen=True)
class Optimum:
    progress: float
    energy_j: float


def _choices(inst: Instance, j: int, taken: frozenset[int]):
    """(partner index or None, gpu type, n, progress, dynamic energy) for job j's options."""
    job = inst.jobs[j]
    for g in inst.gpu_types:
        for n in job.gpus:
            for s in g.settings:
                o = job_outcome(inst, job, g, n, s)
                if o is not None:
                    yield None, g, n, job.weight * o.progress, o.energy_j
                for k in range(j + 1, len(inst.jobs)):
                    other = inst.jobs[k]
                    if k in taken or n not in other.gpus:
                        continue
                    rates = ordered_pair_rates(inst, job, other, g.name, n)
                    if rates is None or min(rates) < inst.round.min_pair_rate:
                        continue
                    a = job_outcome(inst, job, g, n, s, rates[0])
                    b = job_outcome(inst, other, g, n, s, rates[1])
                    if a is None or b is None:
                        continue
                    value = job.weight * a.progress + other.weight * b.progress
                    yield k, g, n, value, a.energy_j + b.energy_j


def brute_force(inst: Instance) -> Optimum:
    """Best (progress, then least energy) over every feasible plan."""
    T = inst.round.duration_s
    budget = inst.round.budget_j
    leaves: list[tuple[float, float]] = []

    def node_energy(used: dict[str, int]) -> float | None:
        total = 0.0
        for g in inst.gpu_types:
            nodes = math.ceil(used.get(g.name, 0) / g.gpus_per_node)
            if nodes > g.nodes:
                return None
            total += nodes * T * g.powered_node_w
        return total

    def walk(j: int, taken: frozenset[int], used: dict[str, int], progress: float, energy: float) -> None:
        if j == len(inst.jobs):
            nodes = node_energy(used)
            if nodes is None:
                return
            total = energy + nodes
            if budget is None or total <= budget * (1 + 1e-12):
                leaves.append((progress, total))
            return
        if j in taken:
            walk(j + 1, taken, used, progress, energy)
            return
        walk(j + 1, taken, used, progress, energy)  # j waits
        for partner, g, n, value, e in _choices(inst, j, taken):
            new_used = dict(used)
            new_used[g.name] = new_used.get(g.name, 0) + n
            if new_used[g.name] > g.total_gpus:
                continue
            new_taken = taken if partner is None else taken | {partner}
            walk(j + 1, new_taken, new_used, progress + value, energy + e)

    walk(0, frozenset(), {}, 0.0, 0.0)
    p_star = max(p for p, _ in leaves)
    return Optimum(p_star, min(e for p, e in leaves if p >= (1 - 1e-6) * p_star))
