"""The agent's JCT reference: ``fifo-max`` in continuous time over the jobs seen so far, which is Slurm alone.

What Slurm itself does with the same submissions: at every arrival and every finish, the finished jobs free their
GPUs, then each waiting job in arrival order starts if its requested count of some GPU type is free (the fastest
such type, at its top setting; first fit), pays ``start_s`` (its own start-up, not a requeue's cost) and frees
its GPUs when it ends. ``O(events x queue)``: a few hundred milliseconds for 1,000 jobs. GPUs are counted per type
(first fit never fails for exclusive jobs of power-of-two counts on nodes of a power-of-two size).

It is the one ``fifo-max`` the loop steers by, live and in a replay on the simulated Slurm, where Slurm alone
(``--policy slurm``) finishes every job when this says (``tests/test_sim_slurm.py``). The ``fifo-max`` policy
(:mod:`planner.sim.policies.fifo_max`) is the same rule as a policy the loop runs round by round; the governor
compares against what Slurm would do.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobSpec


@dataclass(frozen=True, slots=True)
class ReferenceRun:
    """How the reference runs one job: where, how fast, when it ends and the GPU energy its steps take.

    ``energy_j = gpus * power_w * total_steps / steps_per_s``: the profile's power per GPU at the top setting over
    the time its steps take (J; its start-up is not counted: what a GPU draws while a job loads is not profiled).
    """

    gpu_type: str
    gpus: int
    steps_per_s: float
    power_w: float
    finish_s: float
    energy_j: float


def _rates(ctx: ClusterContext, spec: JobSpec) -> list[tuple[str, float, float]]:
    """``[(GPU type, X, power per GPU (W))]`` at each type's top setting for the requested count, fastest first.

    Ties keep the cluster's order.
    """
    ranked = []
    for k, g in enumerate(ctx.gpu_types):
        if spec.requested_gpus > g.total_gpus:
            continue
        profs = [
            p for p in ctx.profiles_by_type.get(spec.type, ()) if p.gpu_type == g.name and p.gpus == spec.requested_gpus
        ]
        if profs:
            top = max(profs, key=lambda p: p.setting)
            ranked.append((-top.steps_per_s, k, g.name, top.steps_per_s, top.power_w))
    return [(name, x, w) for _, _, name, x, w in sorted(ranked)]


def _start_fitting(
    waiting: Sequence[JobSpec],
    rates: dict[str, list[tuple[str, float, float]]],
    free: dict[str, int],
    now: float,
    cost_s: float,
    runs: dict[str, ReferenceRun | None],
) -> tuple[list[JobSpec], list[tuple[float, str, int]]]:
    """Start, in order, each waiting job whose requested count of some type is free (the fastest such type).

    A job started at ``now`` finishes at ``now + cost_s + total_steps / X`` (its run written to ``runs``); ``free``
    loses its GPUs. Returns the jobs still waiting and ``(finish time, GPU type, count)`` of each job started.
    """
    still: list[JobSpec] = []
    started: list[tuple[float, str, int]] = []
    for s in waiting:
        for g, x, w in rates[s.id]:
            if free[g] >= s.requested_gpus:
                free[g] -= s.requested_gpus
                steps_s = s.total_steps / x
                end = now + cost_s + steps_s
                runs[s.id] = ReferenceRun(g, s.requested_gpus, x, w, end, s.requested_gpus * w * steps_s)
                started.append((end, g, s.requested_gpus))
                break
        else:
            still.append(s)
    return still, started


def slurm_reference(specs: Sequence[JobSpec], ctx: ClusterContext, start_s: float = 0.0) -> dict[str, float | None]:
    """``{job id: finish time (s)}`` under ``fifo-max`` in continuous time (:func:`slurm_reference_runs`)."""
    return {
        job: None if run is None else run.finish_s for job, run in slurm_reference_runs(specs, ctx, start_s).items()
    }


def slurm_reference_runs(
    specs: Sequence[JobSpec], ctx: ClusterContext, start_s: float = 0.0
) -> dict[str, ReferenceRun | None]:
    """``{job id: its run}`` under ``fifo-max`` in continuous time (module docstring).

    At every arrival and every finish ``t``: the finished jobs free their GPUs, then each waiting job in arrival
    order starts if its requested count of some GPU type is free (the fastest such type, at its top setting)
    and finishes at ``t + start_s + total_steps / X``. A job no GPU type can run never runs (None).
    """
    jobs = sorted(specs, key=lambda s: s.arrival_s)
    runs: dict[str, ReferenceRun | None] = {s.id: None for s in jobs}
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
        waiting, started = _start_fitting(waiting, rates, free, now, start_s, runs)
        for item in started:
            heapq.heappush(ends, item)
    return runs
