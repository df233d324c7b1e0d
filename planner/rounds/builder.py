"""Build a round instance from a trace, a cluster spec and the profile library.

The queue at time ``at``: every job that arrived by then and is not finished. A trace
holds no schedule, so a job's progress assumes it ran, from its arrival, at its requested
GPU count on the reference GPU type at its top setting, without waiting:
``done = min(S, (at - arrival) * X_ref)``; ``remaining = S - done``. Jobs are then queued
as waiting (``current = null``): a cold start, where every job pays the restart cost.
The simulator produces rounds with running jobs.

Requested counts are normalised to what the profiles cover: up to the largest profiled
count ``n_max`` (8 for Gavel), rounded up to a power of two (a request of 7 GPUs becomes 8;
12, 16, ... become 8, counted in the instance's ``source.capped_requests``). Allowed counts
are the profiled powers of two up to twice the normalised request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wattplan.planner.contracts.defaults import BUDGET_FRACTION
from wattplan.planner.contracts.domain import GpuType, Instance, Job, PairSlowdown, Profile, RoundSpec, is_power_of_two
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.core.economics import full_power_w, round_budget_j
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.cluster_spec import ClusterSpec
from wattplan.planner.rounds.traces import REFERENCE_GPU_TYPE, TraceJob, normalise_request


def allowed_counts(requested: int, profiled: set[int]) -> tuple[int, ...]:
    """Profiled powers of two up to twice the request (always includes the request if profiled)."""
    return tuple(sorted(n for n in profiled if is_power_of_two(n) and n <= 2 * requested))


@dataclass(frozen=True, slots=True)
class RoundOptions:
    """How :func:`build_round` cuts a round from a trace.

    The round starts at ``at_s`` (s) and is played by ``rules`` (its length ``T``, restart cost, least
    pair rate, objective and ``delta``); its budget is ``budget_j`` (J) if given, else ``budget_fraction``
    of the cluster's full power over the round (``fraction * P_full * T``, J,
    :func:`~planner.core.economics.round_budget_j`), else none; ``max_jobs`` keeps only the first
    ``max_jobs`` queued jobs (by arrival).
    """

    at_s: float
    round_index: int = 0
    rules: RoundRules = field(default_factory=RoundRules)
    budget_fraction: float | None = BUDGET_FRACTION
    budget_j: float | None = None
    max_jobs: int | None = None


def queued_jobs(
    trace: Sequence[TraceJob], lib: ProfileLibrary, cluster_types: Sequence[str], at_s: float
) -> tuple[list[Job], int]:
    """The queue at ``at_s`` (s) and how many of its requests were capped.

    Jobs arrived by ``at_s`` and not finished, with their remaining steps; and how many
    requests were capped to the largest profiled count.
    """
    jobs, capped = [], 0
    for tj in sorted(trace, key=lambda t: (t.arrival_s, t.id)):
        if tj.arrival_s > at_s:
            continue
        n_max = lib.max_count(tj.type)
        if n_max == 0:
            continue
        req = normalise_request(tj.requested_gpus, n_max)
        capped += tj.requested_gpus > n_max
        rate = lib.top_throughput(tj.type, REFERENCE_GPU_TYPE, req) or 0.0
        remaining = tj.total_steps - min(tj.total_steps, (at_s - tj.arrival_s) * rate)
        counts = allowed_counts(req, lib.counts(tj.type, cluster_types))
        if remaining <= 0 or not counts:
            continue
        jobs.append(Job(id=tj.id, type=tj.type, remaining_steps=remaining, gpus=counts))
    return jobs, capped


def library_gpu_type(lib: ProfileLibrary, name: str, nodes: int, gpus_per_node: int, node_power_w: float) -> GpuType:
    """GPU type ``name``: ``nodes`` nodes of ``gpus_per_node`` GPUs, base power ``node_power_w`` (W).

    Its idle power (W per GPU), setting unit and settings come from the library (``name`` must be one of its types).
    """
    spec = lib.gpu_types[name]
    return GpuType(
        name=name,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        idle_power_w=float(spec["idle_power_w"]),
        node_power_w=node_power_w,
        setting_unit=spec["setting_unit"],
        settings=tuple(spec["settings"]),
    )


def library_tables(
    lib: ProfileLibrary, job_types: set[str], gpu_types: Sequence[GpuType]
) -> tuple[tuple[Profile, ...], tuple[PairSlowdown, ...]]:
    """The library's profiles and pair entries a round needs.

    Profiles of ``job_types`` on ``gpu_types`` with at most the type's GPUs; pairs of two of ``job_types`` on them.
    """
    total = {g.name: g.total_gpus for g in gpu_types}
    profiles = tuple(
        p for p in lib.profiles if p.type in job_types and p.gpu_type in total and p.gpus <= total[p.gpu_type]
    )
    pairs = tuple(p for p in lib.pairs if p.a in job_types and p.b in job_types and p.gpu_type in total)
    return profiles, pairs


def build_round(
    trace: Sequence[TraceJob],
    cluster: ClusterSpec,
    lib: ProfileLibrary,
    opts: RoundOptions,
    source: dict[str, Any] | None = None,
) -> Instance:
    """The round instance at ``opts.at_s`` (see the module docstring for the rules)."""
    problems = [
        Problem(
            "unknown-gpu-type", f"--cluster[{k}]", f"no profiles for GPU type {name!r} (have {sorted(lib.gpu_types)})"
        )
        for k, (name, _) in enumerate(cluster.gpus)
        if name not in lib.gpu_types
    ]
    if problems:
        raise InputError("--cluster", problems)
    names = [name for name, _ in cluster.gpus]
    gpu_types = tuple(
        library_gpu_type(lib, name, count // cluster.gpus_per_node, cluster.gpus_per_node, cluster.node_power_w)
        for name, count in cluster.gpus
    )
    jobs, capped = queued_jobs(trace, lib, names, opts.at_s)
    if opts.max_jobs is not None:
        jobs = jobs[: opts.max_jobs]
    profiles, pairs = library_tables(lib, {j.type for j in jobs}, gpu_types)
    extra = {"source": {**(source or {}), "at_s": opts.at_s, "capped_requests": capped}}
    draft = Instance(RoundSpec.from_rules(opts.round_index, opts.rules, None), gpu_types, tuple(jobs), profiles, pairs)
    budget = opts.budget_j
    if budget is None and opts.budget_fraction is not None:
        budget = round_budget_j(opts.rules.duration_s, fraction=opts.budget_fraction, full_power_w=full_power_w(draft))
        extra["source"]["budget_fraction_of_full_power"] = opts.budget_fraction
    spec = RoundSpec.from_rules(opts.round_index, opts.rules, None if budget is None else math.floor(budget))
    return Instance(spec, gpu_types, tuple(jobs), profiles, pairs, extra)
