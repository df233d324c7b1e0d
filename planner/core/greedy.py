"""The greedy plan: the documented fallback when no solver plan is available in time.

Rule (exclusive allocations only, no sharing, but for running pairs whose jobs run only together):

0. Every running pair of ``pair_only`` jobs (the Slurm start rule's, :mod:`planner.sim.pinned`) is offered first,
   as it runs: its GPU type and count, its current setting if allowed, else the highest allowed one.
1. For every job and every profiled option ``o = (g, n, s)`` compute its progress
   ``w * pi_o`` and its full energy cost ``c_o = e_o + n * T * (Pnode_g / K_g + Pidle_g)``
   (its dynamic energy plus its share of powered-on node and idle power, J).
2. Take options in decreasing ``w * pi_o / c_o`` (progress per joule; ties: more progress,
   then job order, GPU type name, count, setting), the options of jobs with a tail bound
   (``min_steps > 0``, only their options that give them that many steps) before all others, and
   accept one by the acceptance rule of :func:`accept_in_order`.

Acceptance rule (shared with the LP-guided start of :mod:`formulations.lp_rounding`): take
candidate allocations in the order given and accept one when none of its jobs has an
allocation yet, its GPU type still has ``n`` free GPUs (a pair's GPUs count once), and the
round's energy with the nodes it needs,
``sum e + sum_g ceil(used_g / K_g) * T * (Pnode_g + K_g * Pidle_g) <= B``, stays within the
budget. On a GPU type whose running jobs are pinned (:func:`planner.core.kept_blocks.pinned_gpus`) a new
allocation (one of no pinned job) must also fit the aligned blocks the pinned jobs and the new allocations accepted
before it leave free (:class:`planner.core.kept_blocks.FreeBlocks`): the count of the model's rows ``blocks[g,b]``,
so that buddy placement moves no pinned job.

It runs in ``O(options * log options)``, never fails, and its plan is feasible by
construction; the validator checks it like any other plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.core.economics import job_outcome, ordered_pair_rates, powered_energy_j, within_budget
from wattplan.planner.core.economics_batched import exclusive_outcomes
from wattplan.planner.core.kept_blocks import FreeBlocks, pinned_gpus, pinned_types


@dataclass(frozen=True, slots=True)
class Candidate:
    """An allocation offered to the acceptance rule with its dynamic energy (J)."""

    allocation: Allocation
    energy_j: float


def allocation_outcome(instance: Instance, a: Allocation) -> tuple[float, float] | None:
    """``(sum w pi, sum e)`` of an allocation, exclusive or pair (J); None when not allowed.

    A pair is allowed when the pair entry exists and both slowdowns are at least
    ``min_pair_rate`` (docs/design.md §3.2); no job may run below its ``min_rate`` (steps/s), nor a ``pair_only``
    job alone.
    """
    g = instance.gpu_type(a.gpu_type)
    jobs = [instance.job(j) for j in a.job_ids]
    rates: tuple[float, ...] = (1.0,)
    if a.is_pair:
        pair = ordered_pair_rates(instance, jobs[0], jobs[1], g.name, a.gpus)
        if pair is None or min(pair) < instance.round.min_pair_rate:
            return None
        rates = pair
    if not a.is_pair and jobs[0].pair_only:
        return None
    progress = energy = 0.0
    for job, rho in zip(jobs, rates, strict=True):
        o = job_outcome(instance, job, g, a.gpus, a.setting, rho)
        if o is None or o.steps_per_s < job.min_rate:
            return None
        progress += job.weight * o.progress
        energy += o.energy_j
    return progress, energy


def ranked_candidates(instance: Instance) -> list[Candidate]:
    """Every exclusive option with progress, in the greedy's order (tail-bound jobs first, then progress per joule).

    Options are read from :func:`planner.core.economics_batched.exclusive_outcomes` (computed once per instance,
    shared with the round model's options) and ordered by decreasing ``w pi / c``, then decreasing
    ``w pi``, job order, GPU type name, count and setting. The options of jobs that must run (``min_steps > 0``)
    come first, and among them a job's options that keep its GPU type and count, then those with fewer GPUs: the
    rules that make jobs run (:mod:`planner.sim.tail_bound`, :mod:`planner.sim.slurm_starts`) admit them only
    while their current or smallest options fit together, so the greedy plan runs them all.
    """
    T = instance.round.duration_s
    names = sorted(g.name for g in instance.gpu_types)
    x = exclusive_outcomes(instance)
    keep = x.keep
    share = np.array([g.powered_share_w for g in instance.gpu_types], dtype=float)
    gpu_rank = np.array([names.index(g.name) for g in instance.gpu_types], dtype=np.int64)
    gpu, gpus, value, energy = x.gpu[keep], x.gpus[keep], x.progress[keep], x.energy_j[keep]
    cost = energy + gpus * T * share[gpu]  # the scalar rule's n * T * share, operation for operation
    with np.errstate(divide="ignore"):
        density = np.where(cost > 0, value / np.where(cost > 0, cost, 1.0), np.inf)
    job, rank, setting = x.job[keep], gpu_rank[gpu], x.setting[keep]
    free = np.array([j.min_steps <= 0 for j in instance.jobs], dtype=bool)[job]  # tail-bound jobs come first
    now_gpu = np.array([_gpu_index(instance, j.current.gpu_type) if j.current else -1 for j in instance.jobs])
    now_gpus = np.array([j.current.gpus if j.current else 0 for j in instance.jobs], dtype=np.int64)
    moves = (now_gpu[job] != gpu) | (now_gpus[job] != gpus)
    bound_moves = np.where(free, False, moves)  # a bound job's own option first ...
    bound_gpus = np.where(free, 0, gpus)  # ... then its fewest GPUs: the bound jobs fit together
    order = np.lexsort((setting, gpus, rank, job, -value, -density, bound_gpus, bound_moves, free))
    jobs = instance.jobs
    return [
        Candidate(Allocation((jobs[j].id,), names[r], n, s), e)
        for j, r, n, s, e in zip(
            job[order].tolist(),
            rank[order].tolist(),
            gpus[order].tolist(),
            setting[order].tolist(),
            energy[order].tolist(),
            strict=True,
        )
    ]


def _gpu_index(instance: Instance, name: str) -> int:
    """The index of GPU type ``name`` in ``instance.gpu_types``."""
    return next(i for i, g in enumerate(instance.gpu_types) if g.name == name)


def accept_in_order(instance: Instance, candidates: Iterable[Candidate]) -> list[Allocation]:
    """The acceptance rule of the module docstring; allocations in instance order of their first job."""
    budget = instance.round.budget_j
    used = {g.name: 0 for g in instance.gpu_types}
    dynamic = 0.0
    taken: set[str] = set()
    chosen: dict[str, Allocation] = {}
    held = pinned_gpus(instance)
    blocks = FreeBlocks.around([g for g in instance.gpu_types if g.name in held], held)
    pinned = pinned_types(instance, held)
    for c in candidates:
        a = c.allocation
        g = instance.gpu_type(a.gpu_type)
        if taken.intersection(a.job_ids) or used[g.name] + a.gpus > g.total_gpus:
            continue
        new = (
            {g.name: a.gpus}
            if g.name in held and not pinned.intersection(instance.job(j).type for j in a.job_ids)
            else {}
        )
        if new and not blocks.fits(new):
            continue
        trial = dict(used)
        trial[g.name] += a.gpus
        if not within_budget(dynamic + c.energy_j + powered_energy_j(instance, trial), budget):
            continue
        blocks.take(new)
        chosen[a.job_ids[0]] = a
        taken.update(a.job_ids)
        used = trial
        dynamic += c.energy_j
    return [chosen[j.id] for j in instance.jobs if j.id in chosen]


def greedy_allocations(instance: Instance) -> list[Allocation]:
    """Running pairs kept, then exclusive allocations chosen by progress per joule within capacity and budget."""
    return accept_in_order(instance, [*running_pairs(instance), *ranked_candidates(instance)])


def running_pairs(instance: Instance) -> list[Candidate]:
    """Each running pair of ``pair_only`` jobs as it runs (rule 0 of the module docstring), in instance order."""
    order = {j.id: i for i, j in enumerate(instance.jobs)}
    out: list[Candidate] = []
    for job in instance.jobs:
        cur = job.current
        if not job.pair_only or cur is None or cur.shares_with not in order:
            continue
        partner = instance.job(cur.shares_with)
        if not partner.pair_only or order[partner.id] < order[job.id]:
            continue
        settings = sorted(instance.gpu_type(cur.gpu_type).settings, key=lambda s: (s != cur.setting, -s))
        for s in settings:
            a = Allocation((job.id, partner.id), cur.gpu_type, cur.gpus, s)
            outcome = allocation_outcome(instance, a)
            if outcome is not None:
                out.append(Candidate(a, outcome[1]))
                break
    return out


def progress_of(instance: Instance, allocations: Iterable[Allocation]) -> float:
    """``sum w pi`` of ``allocations`` on ``instance`` (an allocation that is not allowed counts 0)."""
    total = 0.0
    for a in allocations:
        outcome = allocation_outcome(instance, a)
        total += outcome[0] if outcome else 0.0
    return total
