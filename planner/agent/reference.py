"""The agent's JCT reference: ``fifo-max`` over the jobs seen so far, computed event by event.

The replay's reference (:func:`planner.sim.replay.reference_run`) plays ``fifo-max`` round by round: at each
round start ``t0 + r T`` the running jobs keep their GPUs, then the waiting jobs, in arrival order, start at their
requested count on the fastest GPU type with that many free GPUs, at its top setting (greedy backfill); a job
that starts loses ``tau`` (the restart cost) and finishes mid-round at ``start + tau + steps / X``; it frees its
GPUs at the next round start. With no budget and no node placement limit, nothing changes between a round and
the next unless a job arrives or frees its GPUs, so this module jumps from one such round to the next:
``O(events x queue)`` instead of ``O(rounds x queue)``, a few hundred milliseconds for 1,000 jobs where the
round-by-round replay takes about a minute. GPUs are counted per type (the replay's buddy placement never fails
for exclusive jobs of power-of-two counts on nodes of a power-of-two size).

``tests/test_agent_reference.py`` checks the finish times against the replay's ``fifo-max`` on both live
workload families.

:func:`slurm_reference` is the same policy without rounds, which is what Slurm itself does with the same
submissions: a job starts the moment it arrives or GPUs are freed and it fits (waiting jobs in arrival order,
first fit, as above), pays ``start_s`` (its own start-up, not a requeue's cost) and frees its GPUs when it
ends. The agent, whose rounds also start on arrivals and completions, steers by this one.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobSpec


def _rates(ctx: ClusterContext, spec: JobSpec) -> list[tuple[str, float]]:
    """``[(GPU type, X at its top setting)]`` for the requested count, fastest first (ties: cluster order)."""
    ranked = []
    for k, g in enumerate(ctx.gpu_types):
        if spec.requested_gpus > g.total_gpus:
            continue
        profs = [
            p for p in ctx.profiles_by_type.get(spec.type, ()) if p.gpu_type == g.name and p.gpus == spec.requested_gpus
        ]
        if profs:
            top = max(profs, key=lambda p: p.setting)
            ranked.append((-top.steps_per_s, k, g.name, top.steps_per_s))
    return [(name, x) for _, _, name, x in sorted(ranked)]


def _start_fitting(
    waiting: Sequence[JobSpec],
    rates: dict[str, list[tuple[str, float]]],
    free: dict[str, int],
    now: float,
    cost_s: float,
    finish: dict[str, float | None],
) -> tuple[list[JobSpec], list[tuple[float, str, int]]]:
    """Start, in order, each waiting job whose requested count of some type is free (the fastest such type).

    A job started at ``now`` finishes at ``now + cost_s + total_steps / X`` (written to ``finish``); ``free`` loses
    its GPUs. Returns the jobs still waiting and ``(finish time, GPU type, count)`` of each job started.
    """
    still: list[JobSpec] = []
    started: list[tuple[float, str, int]] = []
    for s in waiting:
        for g, x in rates[s.id]:
            if free[g] >= s.requested_gpus:
                free[g] -= s.requested_gpus
                end = now + cost_s + s.total_steps / x
                finish[s.id] = end
                started.append((end, g, s.requested_gpus))
                break
        else:
            still.append(s)
    return still, started


def fifo_reference(specs: Sequence[JobSpec], ctx: ClusterContext, t0_s: float | None = None) -> dict[str, float | None]:
    """``{job id: finish time (s)}`` under ``fifo-max`` from round start ``t0_s`` (default: the first arrival).

    ``remaining`` steps are each spec's ``total_steps``. A job no GPU type can run finishes never (None).
    """
    T = ctx.rules.duration_s
    tau = ctx.rules.restart_s
    jobs = sorted(specs, key=lambda s: s.arrival_s)
    finish: dict[str, float | None] = {s.id: None for s in jobs}
    if not jobs:
        return finish
    start = jobs[0].arrival_s if t0_s is None else t0_s
    free = {g.name: g.total_gpus for g in ctx.gpu_types}
    rates = {s.id: _rates(ctx, s) for s in jobs}
    waiting: list[JobSpec] = []
    running: list[tuple[int, str, int]] = []  # (round it frees its GPUs, GPU type, count)
    nxt = 0  # next job to arrive
    r = 0
    while nxt < len(jobs) or waiting:
        now = start + r * T
        while nxt < len(jobs) and jobs[nxt].arrival_s <= now + 1e-9:
            if rates[jobs[nxt].id]:
                waiting.append(jobs[nxt])
            nxt += 1
        for item in [x for x in running if x[0] <= r]:
            running.remove(item)
            free[item[1]] += item[2]
        waiting, started = _start_fitting(waiting, rates, free, now, tau, finish)
        running.extend((math.floor((end - start) / T + 1e-9) + 1, g, n) for end, g, n in started)
        candidates = [x[0] for x in running]
        if nxt < len(jobs):
            candidates.append(max(r + 1, math.ceil((jobs[nxt].arrival_s - start) / T - 1e-9)))
        if not candidates:
            break  # waiting jobs that can never fit
        r = max(r + 1, min(candidates))
    return finish


def slurm_reference(specs: Sequence[JobSpec], ctx: ClusterContext, start_s: float = 0.0) -> dict[str, float | None]:
    """``{job id: finish time (s)}`` under ``fifo-max`` in continuous time (module docstring).

    At every arrival and every finish ``t``: the finished jobs free their GPUs, then each waiting job in arrival
    order starts if its requested count of some GPU type is free (the fastest such type, at its top setting)
    and finishes at ``t + start_s + total_steps / X``. A job no GPU type can run finishes never (None).
    """
    jobs = sorted(specs, key=lambda s: s.arrival_s)
    finish: dict[str, float | None] = {s.id: None for s in jobs}
    free = {g.name: g.total_gpus for g in ctx.gpu_types}
    rates = {s.id: _rates(ctx, s) for s in jobs}
    waiting: list[JobSpec] = []
    ends: list[tuple[float, str, int]] = []  # heap of (finish time, GPU type, count)
    nxt = 0
    while nxt < len(jobs) or (waiting and ends):
        now = min(jobs[nxt].arrival_s if nxt < len(jobs) else math.inf, ends[0][0] if ends else math.inf)
        while ends and ends[0][0] <= now + 1e-9:
            _, g, n = heapq.heappop(ends)
            free[g] += n
        while nxt < len(jobs) and jobs[nxt].arrival_s <= now + 1e-9:
            if rates[jobs[nxt].id]:
                waiting.append(jobs[nxt])
            nxt += 1
        waiting, started = _start_fitting(waiting, rates, free, now, start_s, finish)
        for item in started:
            heapq.heappush(ends, item)
    return finish
