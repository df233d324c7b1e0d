"""From a trace file to the jobs a replay runs.

Both trace formats the planner reads are supported (:mod:`planner.rounds.traces`): Gavel ``.trace``
and Philly-derived CSV (chosen by extension when ``fmt="auto"``: ``.csv`` is Philly). A Philly
row names no model, so its job type is drawn with the replay's seed exactly as
``wattplan instance from-trace`` draws it.

Selection, in this order: keep jobs with ``start_s <= arrival_s < end_s`` (seconds on the
trace's clock), sort by arrival (trace order breaks ties), keep the first ``max_jobs``. Each
kept job then becomes a :class:`~planner.sim.state.JobSpec` by the round builder's rules
(:func:`planner.rounds.traces.normalise_request`, :func:`~planner.rounds.builder.allowed_counts`);
a job whose type has no profile on the cluster's GPU types (none at all, none at its GPU count, or no
throughput at its count) is dropped. Dropping is not silent: the workload keeps the dropped job ids by job
type (:attr:`Workload.dropped_by_type`), its ``source`` records them (``dropped_no_profile``: how many,
``dropped_by_type``: the ids per type, in every ``summary.json``), and :func:`dropped_text` says which types,
how many jobs and the first job id of each for the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.builder import allowed_counts
from wattplan.planner.rounds.traces import TraceJob, normalise_request
from wattplan.planner.sim.state import JobSpec


@dataclass(frozen=True)
class Workload:
    """The jobs of one replay, sorted by arrival, and where they came from."""

    jobs: tuple[JobSpec, ...]
    source: dict[str, Any] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    """Ids of the selected trace jobs not replayed (no profile on the cluster's GPU types), in trace order."""
    dropped_by_type: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The same ids by job type (types in order of their first dropped job)."""


def select_jobs(
    jobs: Sequence[TraceJob], start_s: float | None = None, end_s: float | None = None, max_jobs: int | None = None
) -> list[TraceJob]:
    """Jobs with ``start_s <= arrival_s < end_s``, earliest first, at most ``max_jobs``."""
    order = {tj.id: i for i, tj in enumerate(jobs)}
    kept = [
        tj for tj in jobs if (start_s is None or tj.arrival_s >= start_s) and (end_s is None or tj.arrival_s < end_s)
    ]
    kept.sort(key=lambda tj: (tj.arrival_s, order[tj.id]))
    return kept if max_jobs is None else kept[:max_jobs]


def job_spec(tj: TraceJob, lib: ProfileLibrary, cluster_types: Sequence[str]) -> JobSpec | None:
    """The replay's view of one trace job, or None when no cluster GPU type can run it.

    The reference throughput is the fastest cluster GPU type's throughput at the requested
    count and that type's top setting.
    """
    n_max = lib.max_count(tj.type)
    if n_max == 0:
        return None
    req = normalise_request(tj.requested_gpus, n_max)
    counts = allowed_counts(req, lib.counts(tj.type, cluster_types))
    rates = [r for g in cluster_types if (r := lib.top_throughput(tj.type, g, req))]
    if not counts or req not in counts or not rates:
        return None
    return JobSpec(
        id=tj.id,
        type=tj.type,
        arrival_s=tj.arrival_s,
        total_steps=tj.total_steps,
        requested_gpus=req,
        allowed_gpus=counts,
        reference_steps_per_s=max(rates),
    )


def build_workload(
    trace_jobs: Sequence[TraceJob],
    lib: ProfileLibrary,
    cluster_types: Sequence[str],
    source: dict[str, Any] | None = None,
) -> Workload:
    """Convert selected trace jobs (see :func:`select_jobs`) into a :class:`Workload`."""
    specs, dropped = [], []
    by_type: dict[str, list[str]] = {}
    for tj in trace_jobs:
        spec = job_spec(tj, lib, cluster_types)
        if spec is None:
            dropped.append(tj.id)
            by_type.setdefault(tj.type, []).append(tj.id)
        else:
            specs.append(spec)
    info = {
        **(source or {}),
        "jobs": len(specs),
        "dropped_no_profile": len(dropped),
        "dropped_by_type": {t: list(ids) for t, ids in by_type.items()},
    }
    frozen = {t: tuple(ids) for t, ids in by_type.items()}
    return Workload(jobs=tuple(specs), source=info, dropped=tuple(dropped), dropped_by_type=frozen)


def dropped_text(by_type: Mapping[str, Sequence[str]], cluster_types: Sequence[str]) -> str:
    """``"3 job(s) dropped, no profile on v100: 'A' 2 jobs (first 17), 'B' 1 job (first 40)"``; ``""`` for none."""
    if not by_type:
        return ""
    total = sum(len(ids) for ids in by_type.values())
    parts = [
        f"{t!r} {len(ids)} job{'s' if len(ids) != 1 else ''} (first {ids[0]})" for t, ids in by_type.items() if ids
    ]
    return f"{total} job(s) dropped, no profile on {', '.join(cluster_types)}: {', '.join(parts)}"
