"""The Slurm start rule: a job starts when Slurm would start it and, once running, is never stopped to wait.

With ``--slurm-starts`` (the rules' ``slurm_starts``) wattplan no longer chooses *when* a job runs, only *how*
(GPU type and count, power limit or clock, partner), within the slowdown limit (``--max-slowdown``, each job's
``min_rate``, :func:`planner.sim.round_instance.rate_floors`). At a round start the jobs that must run are

1. every running job that some setting keeps allowed where it runs (its rate ``rho X`` at least its ``min_rate``
   on its current GPU type and count, with its partner): it keeps its GPUs in the count below, and the round
   keeps it there (:mod:`planner.sim.pinned`);
2. then the other queued jobs in arrival order (ties by id), each admitted when Slurm's first fit finds room for
   its *requested* count ``n`` on the nodes left (``sched/backfill`` with no time limits, as
   :mod:`planner.control.sim_slurm` plays it): GPU types in cluster order, nodes in order; ``n <= K`` takes the
   first node with ``n`` free GPUs, ``n > K`` needs ``ceil(n / K)`` wholly free nodes; a type that does not
   profile ``n`` is skipped. A job that does not fit is skipped, and so is every later job of the same count
   (Slurm's blocked shapes); later jobs of other counts may start.

Each such job gets ``min_steps = max(0.999999 min(R, r (T - tau)), 1e-9 R)`` (steps) with ``r`` its ``min_rate``:
every allowed option gives at least that, restart or not, so the round model only has to run it
(:mod:`formulations.round_model`'s ``must_run`` rows). The rows are jointly feasible: the running jobs keep their
current options and the admitted ones take their requested count at full power on the GPUs first fit found, which
is at least ``min_rate`` by its definition. A job whose requested count is profiled on no GPU type is never
forced to run. Rounds with an energy budget get no start rule (the rule could contradict the budget), as they get
no tail bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.sim.pinned import keeps_floor, pair_now

MIN_STEPS_SHARE = 0.999999
"""``min_steps`` is at most this share of the least steps an allowed option gives (rounding margin)."""
MIN_PROGRESS_SHARE = 1e-9
"""The least ``min_steps`` as a share of the steps left: a job with no rate floor must still run."""


def slurm_start_steps(
    instance: Instance, requested: Mapping[str, int], arrival_s: Mapping[str, float]
) -> dict[str, float]:
    """``min_steps`` (steps) of every job the rule makes run this round (module docstring); empty with a budget.

    ``requested``: each job's requested GPU count; ``arrival_s``: its arrival (s), the order Slurm starts jobs in.
    """
    if instance.round.budget_j is not None:
        return {}
    free = {g.name: [g.gpus_per_node] * g.nodes for g in instance.gpu_types}
    kept = _kept(instance)
    _hold(instance, kept, free)
    must = {j.id for j in kept}
    blocked: set[int] = set()
    for job in sorted((j for j in instance.jobs if j.id not in must), key=lambda j: (arrival_s.get(j.id, 0.0), j.id)):
        n = requested.get(job.id)
        if n is None or n in blocked:
            continue
        if _first_fit(instance, job, n, free):
            must.add(job.id)
        else:
            blocked.add(n)
    return {j.id: _least_steps(instance, j) for j in instance.jobs if j.id in must}


def running_steps(instance: Instance) -> dict[str, float]:
    """``min_steps`` (steps) of the running jobs that keep running where they run (item 1 of the module docstring).

    Without the start rule, what the no-restart rule (the rules' ``pin_running``) makes run: a round that stopped
    one of them would restart it. Empty with a budget, as the start rule is.
    """
    if instance.round.budget_j is not None:
        return {}
    return {j.id: _least_steps(instance, j) for j in _kept(instance)}


def _kept(instance: Instance) -> list[Job]:
    """The running jobs that some setting keeps allowed where they run (:func:`_keeps`), in instance order."""
    by_id = {j.id: j for j in instance.jobs}
    return [j for j in instance.jobs if _keeps(instance, j, by_id)]


def _keeps(instance: Instance, job: Job, by_id: Mapping[str, Job]) -> bool:
    """True when ``job`` runs now where some setting keeps it allowed: its rate ``rho X`` at least its ``min_rate``.

    A setting changes without a restart, so the job's current GPU type, count and partner are what must still
    allow it (:func:`planner.sim.pinned.keeps_floor`).
    """
    cur = job.current
    if cur is None:
        return False
    if cur.shares_with is None:
        return keeps_floor(instance, job)
    pair = pair_now(instance, job, by_id)
    return pair is not None and keeps_floor(instance, job, pair[1][0])


def _hold(instance: Instance, kept: Sequence[Job], free: dict[str, list[int]]) -> None:
    """Take the kept jobs' GPUs out of ``free`` (per GPU type, free GPUs per node); a pair's GPUs count once."""
    taken: set[tuple[str, int]] = set()
    unplaced: list[Job] = []
    for job in kept:
        cur = job.current
        if cur is None or cur.placement is None:
            unplaced.append(job)
            continue
        names = {n: i for i, n in enumerate(instance.gpu_type(cur.gpu_type).node_names())}
        for part in cur.placement:
            for gpu in part.gpu_indices:
                if (part.node, gpu) not in taken and part.node in names:
                    taken.add((part.node, gpu))
                    free[cur.gpu_type][names[part.node]] -= 1
    hosts = {j.id for j in unplaced}
    for job in unplaced:
        cur = job.current
        assert cur is not None
        if cur.shares_with is not None and cur.shares_with in hosts and cur.shares_with < job.id:
            continue  # its partner holds the pair's GPUs
        need = cur.gpus
        nodes = free[cur.gpu_type]
        for i in range(len(nodes)):
            used = min(need, nodes[i])
            nodes[i] -= used
            need -= used
            if need == 0:
                break


def _first_fit(instance: Instance, job: Job, n: int, free: dict[str, list[int]]) -> bool:
    """Slurm's first fit of ``n`` GPUs for ``job`` (module docstring); takes them from ``free`` when it fits."""
    for g in instance.gpu_types:
        if not _profiled(instance, job, g, n):
            continue
        nodes = free[g.name]
        k = g.gpus_per_node
        if n <= k:
            for i, left in enumerate(nodes):
                if left >= n:
                    nodes[i] -= n
                    return True
            continue
        whole = [i for i, left in enumerate(nodes) if left == k][: math.ceil(n / k)]
        if len(whole) == math.ceil(n / k):
            for i in whole:
                nodes[i] = 0
            return True
    return False


def _profiled(instance: Instance, job: Job, g: GpuType, n: int) -> bool:
    """True when ``job``'s type has a profile of ``n`` GPUs of ``g`` at some setting."""
    return any(instance.profile(job.type, g.name, n, s) is not None for s in g.settings)


def _least_steps(instance: Instance, job: Job) -> float:
    """``max(0.999999 min(R, r (T - tau)), 1e-9 R)``: what every allowed option gives ``job`` at least (steps)."""
    t = max(instance.round.duration_s - instance.round.restart_s, 0.0)
    least = MIN_STEPS_SHARE * min(job.remaining_steps, job.min_rate * t)
    return max(least, MIN_PROGRESS_SHARE * job.remaining_steps)
