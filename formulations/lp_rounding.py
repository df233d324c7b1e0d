"""An LP-guided start: round the LP relaxation's solution into a feasible plan.

The round model is a multiple-choice knapsack with a few coupling rows (GPUs per type, the
energy budget, the pair balance rows), so a vertex of its LP relaxation has few fractional
columns (11 of 81,473 on a 500-job round of the shipped traces). Rounding it therefore loses
little, and gives the MIP solver a start close to the optimum in the time of one LP solve.

Rule. From the LP solution ``v``:

1. candidates: every exclusive option with ``x_o > 0`` scored ``x_o``; and per pair slot the
   jobs with ``z_p > 0`` on each side, sorted by ``z_p`` (then job order), matched side A to
   side B in that order (same-type slots: consecutive members), a pair scored
   ``min(z_j, z_k)`` and kept only when the pair is allowed (both slowdowns at least
   ``min_pair_rate``);
2. take them in decreasing score (ties: more progress, then job order), then every exclusive
   option in the greedy's order, through the greedy's acceptance rule
   (:func:`planner.greedy.accept_in_order`): each job at most once, GPUs per type, and the
   energy budget with whole powered-on nodes. The result is feasible by construction.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import chain

import numpy as np

from formulations.options import Slot, match_slot
from formulations.round_model import RoundModel
from planner.assemble import Allocation
from planner.greedy import Candidate, accept_in_order, allocation_outcome, ranked_candidates

EPS = 1e-6


def _scored_pairs(rm: RoundModel, values: np.ndarray) -> list[tuple[float, int, Allocation]]:
    """``(score, first job index, pair allocation)`` for the pairs the LP solution uses."""
    jobs = rm.instance.jobs
    sides: dict[Slot, list[list[tuple[float, int]]]] = defaultdict(lambda: [[], []])
    for i, p in enumerate(rm.options.pair_sides):
        z = float(values[rm.z_cols[i]])
        if z > EPS:
            sides[p.slot][p.side].append((z, p.job))
    out = []
    for slot, (first, second) in sides.items():
        by_z = sorted(first, key=lambda t: (-t[0], t[1])), sorted(second, key=lambda t: (-t[0], t[1]))
        for (zj, j), (zk, k) in match_slot(slot, slot in rm.ordered_slots, *by_z):
            a, b = sorted((j, k))
            out.append((min(zj, zk), a, Allocation((jobs[a].id, jobs[b].id), slot.gpu_type, slot.gpus, slot.setting)))
    return out


def lp_guided_allocations(rm: RoundModel, values: np.ndarray) -> list[Allocation]:
    """A feasible plan rounded from the LP solution ``values`` (see the module docstring)."""
    inst = rm.instance
    jobs = inst.jobs
    scored: list[tuple[float, float, int, Candidate]] = []
    for i, o in enumerate(rm.options.exclusive):
        x = float(values[rm.x_cols[i]])
        if x > EPS:
            scored.append(
                (
                    x,
                    o.progress,
                    o.job,
                    Candidate(Allocation((jobs[o.job].id,), o.gpu_type, o.gpus, o.setting), o.energy_j),
                )
            )
    for score, first, a in _scored_pairs(rm, values):
        outcome = allocation_outcome(inst, a)
        if outcome is not None:
            scored.append((score, outcome[0], first, Candidate(a, outcome[1])))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return accept_in_order(inst, chain((c for *_, c in scored), ranked_candidates(inst)))
