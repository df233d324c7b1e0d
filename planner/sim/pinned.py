"""Running jobs pinned to what they run on: the by-job mode's round never restarts a job (docs/design.md §11.6).

On Slurm a running job restarts (requeue, wait, launch, checkpoint load) when it changes GPU type or count, moves,
becomes a pair's guest (a guest holds no GPU of its own: it runs on its host's) or loses its host. Under the Slurm
start rule (:mod:`planner.sim.slurm_starts`: the by-job mode) no round may do that, so the round instance itself
leaves no such option:

* every running job ``j`` of type ``T`` gets a type of its own, ``T (running j)``, whose profiles are ``T``'s at
  its current GPU type and count only (every setting: a new power limit or clock costs no restart), and its
  allowed counts are its current one;
* a running job alone may become the *host* of a pair with a job that has not started (the newcomer is the guest
  and the host keeps running): its own type gets ``T``'s pair entries with the types of the waiting jobs, at its
  GPU type and count, for each type whose every waiting job is expected to end before the host would (both in
  the pair at the top setting, :func:`pair_seconds`): a guest whose host ends first restarts. It never pairs
  with another running job (one of them would have to become a guest);
* a running pair keeps its partner: its two own types have one pair entry, with each other, at the pair's GPU type
  and count and the rates the two had, and both jobs are ``pair_only`` (neither runs alone: the guest would
  restart, and the host alone would leave its guest to do so).

A waiting job keeps its type, its counts and the library's pair entries with other waiting jobs' types (two jobs
that start together as a pair restart nothing; the agent makes the one expected to run longer the host,
:func:`planner.agent.decide.decide`). What stays possible: a guest whose host ends first against the estimate
restarts (counted as a requeue; benchmarks/RESULTS.md measures them).

A job's slowdown limit (``min_rate``) comes from its own type before pinning and stays. A running job that no
setting keeps within it where it runs (or a pair that does not keep both) is not pinned: under the start rule it
queues again and may restart (:mod:`planner.sim.slurm_starts`). The start rule's ``min_steps`` are computed on the
pinned instance: the pinned options are a subset of the job's own, so they stay jointly feasible (the greedy
fallback offers running pairs first, as they run: :func:`planner.core.greedy.running_pairs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from wattplan.planner.contracts.domain import Instance, Job, PairSlowdown, Profile
from wattplan.planner.core.economics import ordered_pair_rates


def own_type(job: Job, taken: set[str]) -> str:
    """``job``'s own type while it runs, ``"TYPE (running ID)"``, made unique against ``taken`` (then added)."""
    name = f"{job.type} (running {job.id})"
    while name in taken:
        name += "'"
    taken.add(name)
    return name


def fastest_here(instance: Instance, job: Job, rho: float = 1.0) -> float:
    """``rho max_s X`` (steps/s): the running ``job``'s fastest rate where it runs.

    Over the settings of its current GPU type and count (a setting changes without a restart); 0 without a profile
    there.
    """
    cur = job.current
    assert cur is not None
    g = instance.gpu_type(cur.gpu_type)
    profs = [instance.profile(job.type, g.name, cur.gpus, s) for s in g.settings]
    return rho * max((p.steps_per_s for p in profs if p is not None), default=0.0)


def keeps_floor(instance: Instance, job: Job, rho: float = 1.0) -> bool:
    """True when ``job`` can keep running where it runs within its slowdown limit (``min_rate``) at some setting."""
    fastest = fastest_here(instance, job, rho)
    return fastest > 0 and fastest >= job.min_rate


def pair_now(instance: Instance, job: Job, by_id: Mapping[str, Job]) -> tuple[Job, tuple[float, float]] | None:
    """``(partner, (rho_job, rho_partner))`` of the pair ``job`` runs in now, at its GPU type and count.

    None when ``job`` does not run shared, its partner is not in ``by_id`` or the library has no rates for the two
    there (:func:`planner.core.economics.ordered_pair_rates`).
    """
    cur = job.current
    partner = by_id.get(cur.shares_with) if cur is not None and cur.shares_with is not None else None
    if cur is None or partner is None:
        return None
    rates = ordered_pair_rates(instance, job, partner, cur.gpu_type, cur.gpus)
    return None if rates is None else (partner, rates)


def _running_pair(instance: Instance, job: Job, by_id: Mapping[str, Job]) -> tuple[Job, tuple[float, float]] | None:
    """``(partner, (rho_job, rho_partner))`` when ``job`` runs in a pair that keeps both within their limits.

    The partner must run and name ``job`` as its partner; both rates ``rho X`` at some setting at least their
    ``min_rate``. Else None.
    """
    pair = pair_now(instance, job, by_id)
    if pair is None:
        return None
    partner, rates = pair
    if partner.current is None or partner.current.shares_with != job.id:
        return None
    if not (keeps_floor(instance, job, rates[0]) and keeps_floor(instance, partner, rates[1])):
        return None
    return pair


def pin_running(instance: Instance) -> Instance:
    """``instance`` with every running job pinned to its GPU type, count and partner (module docstring).

    A running job that no setting keeps within its slowdown limit where it runs is left as it is (it queues again
    under the Slurm start rule: :mod:`planner.sim.slurm_starts`).
    """
    by_id = {j.id: j for j in instance.jobs}
    pairs_now = {j.id: p for j in instance.jobs if (p := _running_pair(instance, j, by_id)) is not None}
    running = [j for j in instance.jobs if j.current is not None and (j.id in pairs_now or keeps_floor(instance, j))]
    if not running:
        return instance
    taken = {j.type for j in instance.jobs} | {p.type for p in instance.profiles}
    own = {j.id: own_type(j, taken) for j in running}
    waiting: dict[str, list[Job]] = {}  # jobs that start now, by type
    for j in instance.jobs:
        if j.current is None:
            waiting.setdefault(j.type, []).append(j)
    waiting_types = sorted(waiting)
    profiles: list[Profile] = list(instance.profiles)
    paired: set[str] = set()
    pairs: list[PairSlowdown] = list(instance.pairs)
    for j in running:
        cur = j.current
        assert cur is not None
        here = (instance.profile(j.type, cur.gpu_type, cur.gpus, s) for s in instance.gpu_type(cur.gpu_type).settings)
        profiles += [replace(p, type=own[j.id]) for p in here if p is not None]
        if j.id in pairs_now:
            partner, (rho_j, rho_k) = pairs_now[j.id]
            paired.add(j.id)
            if j.id < partner.id:  # the pair's entry, once
                pairs.append(PairSlowdown(own[j.id], own[partner.id], cur.gpu_type, cur.gpus, rho_j, rho_k))
            continue
        for b in waiting_types:
            rates = instance.pair_rates(j.type, b, cur.gpu_type, cur.gpus)
            if rates is None:
                continue
            rho_host, rho_guest = rates
            if b == j.type:  # which of two same-type jobs gets rho_a follows their order: take the worse for both
                rho_host = rho_guest = min(rates)
            if _outlives(instance, j, rho_host, waiting[b], rho_guest):
                pairs.append(PairSlowdown(own[j.id], b, cur.gpu_type, cur.gpus, rho_host, rho_guest))
    jobs = tuple(
        replace(j, type=own[j.id], gpus=(j.current.gpus,), pair_only=j.id in paired)
        if j.id in own and j.current is not None
        else j
        for j in instance.jobs
    )
    return Instance(instance.round, instance.gpu_types, jobs, tuple(profiles), tuple(pairs), instance.extra)


def pair_seconds(instance: Instance, job: Job, rho: float, gpu_type: str, gpus: int) -> float | None:
    """``R / (rho X)`` (s): how long ``job`` would take in a pair on ``gpus`` GPUs of ``gpu_type``.

    At the type's top setting; ``R`` its steps left, ``X`` its profiled rate there. None without a profile or a
    rate.
    """
    top = max(instance.gpu_type(gpu_type).settings)
    prof = instance.profile(job.type, gpu_type, gpus, top)
    if prof is None or prof.steps_per_s <= 0 or rho <= 0:
        return None
    return job.remaining_steps / (rho * prof.steps_per_s)


def _outlives(instance: Instance, host: Job, rho_host: float, guests: list[Job], rho_guest: float) -> bool:
    """True when the running ``host`` is expected to end after every one of ``guests`` would, all in the pair.

    A guest runs on its host's GPUs, so a host that ends first leaves its guest to restart; the pair entry is
    given only when each waiting job of the type would finish first (at the top setting, both slowed by the pair).
    """
    cur = host.current
    assert cur is not None
    t_host = pair_seconds(instance, host, rho_host, cur.gpu_type, cur.gpus)
    if t_host is None:
        return False
    for guest in guests:
        t_guest = pair_seconds(instance, guest, rho_guest, cur.gpu_type, cur.gpus)
        if t_guest is None or t_guest >= t_host:
            return False
    return True
