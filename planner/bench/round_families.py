"""Rounds of N jobs for solver benchmarks: ``trace`` and ``sampled`` (from the shipped traces), and ``long``.

Every family builds its instance with :func:`planner.rounds.builder.build_round`, so profiles,
pair tables, allowed GPU counts and budgets follow the same rules as ``wattplan instance
from-trace`` (and remaining steps too, but for ``long``'s own rule). The cluster is whole nodes of
8 GPUs (:func:`cluster_nodes`).

**trace** (:class:`TracePool`, :func:`make_round`; used by ``benchmarks/solve_scaling.py``):
the real queues of the shipped Gavel traces that have at least :data:`MIN_TRACE_JOBS` jobs.
The round builder keeps the jobs that arrived by ``at`` and are not finished, so each trace is
scanned at up to :data:`CANDIDATE_TIMES` of its arrival times (every k-th distinct arrival time
and the last, :func:`candidate_times`) for its queue (a *snapshot*). If one snapshot holds N
jobs, the round is that trace at that time, cut to the N earliest arrivals
(``RoundOptions(max_jobs=N)``). Otherwise snapshots are added greedily, the one bringing the
most new jobs first (several traces, and a trace again at another time, without repeating a job
of that trace); their jobs are merged into one list, ids renamed ``TRACE:ID``, arrivals shifted
by ``A - at_k`` so every snapshot's queue is queued at the common time ``A`` with the remaining
steps it had at ``at_k``, and the merged queue is cut to N. The instance's ``source`` records
the snapshots. The queues can supply a bounded number of jobs (13,579 in all):
:meth:`TracePool.snapshots` returns fewer than N when they run out.

**sampled** (:class:`JobPopulation`, :func:`sampled_round`): N jobs drawn i.i.d., with
replacement, by ``numpy.random.default_rng(seed)``, from the pooled queued jobs of *every*
shipped trace: the 15 Gavel traces in ``instances/sources/gavel/traces`` (all of them, however
short) and the Philly trace ``instances/sources/pollux/philly.csv`` (all virtual clusters; as
:func:`planner.rounds.traces.read_trace` reads it with seed 0, so a Philly row's job type is
drawn uniformly among the profiled types that run at its GPU count, and its total steps are its
duration times that type's reference throughput). Each trace is snapshotted at its
:func:`candidate_times`; one *record* is one job queued at one snapshot (by the round builder's
rule, :func:`planner.rounds.builder.queued_jobs`: arrived, not finished when run from its arrival
at its request on V100 at the top setting), and a job queued at several snapshots gives several
records, each with its own progress. A record holds, jointly:

* the job type,
* the requested GPU count as written in the trace (the round builder normalises it to a profiled
  power of two and counts capped requests, as for a trace round),
* the total steps of the job,
* the remaining fraction ``remaining_steps / total_steps`` at the snapshot (carried exactly as the
  seconds the job had run, ``at_k - arrival``, from which the round builder recomputes it).

Every record weighs the same, so traces with long queues weigh more (of the 331,805 records of
4,162 snapshots, ``6214e9``, ``philly.csv`` and ``6c71a0`` hold about two thirds, Philly 21%:
see :meth:`JobPopulation.shares`). The ``seed`` chooses the draws only: the population
itself is fixed by the shipped files. The i-th draw becomes job ``s{i:06d}``, arrived ``elapsed``
seconds before the round at ``t = 0``; then :func:`build_round` makes the instance, so its jobs
come in the round builder's order (earliest arrival, i.e. most progressed, first).

**long** (:func:`long_round`): rounds of long jobs that a round barely moves, the badly scaled case:
no option moves a job by more than 1e-2, so the progress coefficients ``pi = X t / R`` span about
1e-5..1e-2 (median ~4e-4) and a round's progress is about 1e-3 per running job. Drawn by
``numpy.random.default_rng(seed)`` from the profile library, not from a trace: for job ``i``
(``l{i:06d}``) a job type uniformly among the types profiled on the cluster's GPU types, then a
requested GPU count uniformly among that type's profiled powers of two there (the round builder
allows the powers of two up to twice the request), then ``u_i`` uniform in
``[log10 f_lo, log10 f_hi)`` (:data:`LONG_FRACTION`). The remaining steps are set so that the
job's *best per-round fraction* is ``f_i = 10^u_i``, log-uniform in ``[1e-4, 1e-2)``:
``R_i = sigma_max,i / f_i`` with ``sigma_max,i = max_{g, n, s} X_{g,n,s} t_{g,n}`` (steps) the
most steps any exclusive option of the job makes in the round (:func:`best_round_steps`; a job
that waits restarts, so ``t = T - tau``; a pair only slows a job, ``rho <= 1``). So one round
does at most 0.01-1% of any job's remaining work. Every job arrived at the round's time ``t = 0``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from wattplan.planner.contracts.defaults import GPUS_PER_NODE
from wattplan.planner.contracts.domain import Instance, Job, is_power_of_two
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.core.economics import effective_time_s
from wattplan.planner.files.resources import GAVEL_TRACES, PHILLY_TRACE, shipped
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.builder import RoundOptions, allowed_counts, build_round
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import (
    REFERENCE_GPU_TYPE,
    TraceJob,
    normalise_request,
    read_gavel_trace,
    read_philly_csv,
)

TRACE_GPU_TYPES = ("v100", "p100")
"""GPU types whose profiles decide whether a job can run at all when queues are scanned."""
MIN_TRACE_JOBS = 500
"""The trace family uses the Gavel traces with at least this many jobs."""
CANDIDATE_TIMES = 300
"""Snapshot times scanned per trace: every k-th distinct arrival time (k = count // 300), and the last."""
DEFAULT_GPU_MIX: tuple[tuple[str, float], ...] = (("v100", 2.0), ("p100", 1.0))
"""Node weights per GPU type: two thirds V100, one third P100."""
DEFAULT_JOBS_PER_NODE = 4.0
"""Jobs per node when sizing a cluster for N jobs."""
SAMPLED_AT_S = 0.0
"""The round time of a sampled round (sampled jobs arrive before it)."""
PHILLY_TYPE_SEED = 0
"""The seed with which the Philly trace's job types are drawn for the sampled family's population."""
LONG_FRACTION = (1e-4, 1e-2)
"""The long family's best per-round fraction ``sigma_max / R`` is log-uniform in ``[1e-4, 1e-2)``."""
LONG_AT_S = 0.0
"""The round time of a long round (its jobs arrive then)."""


# --------------------------------------------------------------------------------------------
# Queues of a trace, vectorised


def candidate_times(jobs: Sequence[TraceJob]) -> list[float]:
    """Up to :data:`CANDIDATE_TIMES` arrival times of a trace: every k-th distinct one, and the last."""
    times = sorted({j.arrival_s for j in jobs})
    if not times:
        return []
    step = max(1, len(times) // CANDIDATE_TIMES)
    return sorted(set(times[::step]) | {times[-1]})


@dataclass(frozen=True)
class _TraceArrays:
    """A trace's jobs as arrays, with what :func:`~planner.rounds.builder.queued_jobs` needs per job.

    ``runnable`` is False for a job whose type has no profile, or no allowed count on the GPU
    types; ``rate`` is the reference throughput (steps/s) at the normalised request, 0 if none.
    """

    jobs: tuple[TraceJob, ...]
    arrival: np.ndarray
    total: np.ndarray
    rate: np.ndarray
    runnable: np.ndarray

    @classmethod
    def of(cls, jobs: Sequence[TraceJob], lib: ProfileLibrary, gpu_types: Sequence[str]) -> _TraceArrays:
        """The arrays of ``jobs`` (the per-job rules of ``queued_jobs``, computed once per (type, request))."""

        @functools.cache
        def static(job_type: str, requested: int) -> tuple[bool, float]:
            n_max = lib.max_count(job_type)
            if n_max == 0:
                return False, 0.0
            req = normalise_request(requested, n_max)
            rate = lib.top_throughput(job_type, REFERENCE_GPU_TYPE, req) or 0.0
            return bool(allowed_counts(req, lib.counts(job_type, gpu_types))), rate

        flags = [static(j.type, j.requested_gpus) for j in jobs]
        return cls(
            jobs=tuple(jobs),
            arrival=np.array([j.arrival_s for j in jobs], dtype=np.float64),
            total=np.array([j.total_steps for j in jobs], dtype=np.float64),
            rate=np.array([f[1] for f in flags], dtype=np.float64),
            runnable=np.array([f[0] for f in flags], dtype=bool),
        )

    def queued(self, at_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Indices of the jobs queued at ``at_s``, their elapsed times ``at_s - arrival`` (s) and remaining steps.

        The same float operations as :func:`~planner.rounds.builder.queued_jobs`:
        ``remaining = total - min(total, (at - arrival) * rate) > 0``.
        """
        elapsed = at_s - self.arrival
        remaining = self.total - np.minimum(self.total, elapsed * self.rate)
        idx = np.flatnonzero(self.runnable & (self.arrival <= at_s) & (remaining > 0))
        return idx, elapsed[idx], remaining[idx]


# --------------------------------------------------------------------------------------------
# Cluster


def cluster_nodes(
    n: int, mix: Sequence[tuple[str, float]] = DEFAULT_GPU_MIX, jobs_per_node: float = DEFAULT_JOBS_PER_NODE
) -> tuple[tuple[str, int], ...]:
    """Nodes per GPU type for ``n`` jobs: about ``n / jobs_per_node`` nodes split by the mix's weights.

    ``nodes = max(len(mix), round(n / jobs_per_node))``; type k gets
    ``round(nodes * W_k / W) - round(nodes * W_{k-1} / W)`` nodes (``W_k`` the cumulative weight),
    at least one. With the default mix this is :func:`cluster_for`.
    """
    nodes = max(len(mix), round(n / jobs_per_node))
    total = sum(w for _, w in mix)
    out, cum, before = [], 0.0, 0
    for name, weight in mix:
        cum += weight
        upto = round(nodes * cum / total)
        out.append((name, max(1, upto - before)))
        before = upto
    return tuple(out)


def cluster_for(n: int) -> tuple[int, int]:
    """Nodes ~ n / 4: two thirds V100, one third P100, whole nodes, at least one of each."""
    (_, v100), (_, p100) = cluster_nodes(n)
    return v100, p100


def cluster_text(nodes: Iterable[tuple[str, int]], gpus_per_node: int = GPUS_PER_NODE) -> str:
    """``v100:64,p100:32``: GPUs per type of a cluster given in nodes."""
    return ",".join(f"{name}:{count * gpus_per_node}" for name, count in nodes)


# --------------------------------------------------------------------------------------------
# The trace family


@dataclass(frozen=True)
class Snapshot:
    """The queue of one trace at one time: the ids not taken by an earlier snapshot of the round."""

    trace: str
    at_s: float
    job_ids: frozenset[str]

    def describe(self) -> str:
        """``6c71a0@1900000(512)``: trace, time, jobs."""
        return f"{self.trace}@{self.at_s:.0f}({len(self.job_ids)})"


class TracePool:
    """The shipped traces, their queues at candidate times, and rounds of N jobs drawn from them."""

    def __init__(self, lib: ProfileLibrary, trace_dir: Path | None = None) -> None:
        """Read the Gavel traces of ``trace_dir`` (default: the shipped ones) with >= MIN_TRACE_JOBS jobs."""
        self.lib = lib
        self.traces: dict[str, list[TraceJob]] = {}
        for path in sorted((trace_dir or shipped(GAVEL_TRACES)).glob("*.trace")):
            jobs = read_gavel_trace(path)
            if len(jobs) >= MIN_TRACE_JOBS:
                self.traces[path.stem] = jobs
        self._queues: dict[str, list[tuple[float, frozenset[str]]]] | None = None
        self._snapshots: dict[int, list[Snapshot]] = {}

    def queues(self) -> dict[str, list[tuple[float, frozenset[str]]]]:
        """Per trace, the queued ids at its :func:`candidate_times`."""
        if self._queues is None:
            self._queues = {}
            for name, jobs in self.traces.items():
                arrays = _TraceArrays.of(jobs, self.lib, TRACE_GPU_TYPES)
                self._queues[name] = [
                    (at, frozenset(jobs[int(i)].id for i in arrays.queued(at)[0])) for at in candidate_times(jobs)
                ]
        return self._queues

    def snapshots(self, n: int) -> list[Snapshot]:
        """Greedy: the snapshot with the most new jobs first (the first such in trace and time order).

        Stops at ``n`` jobs or more, or when no snapshot brings a new job (then fewer than ``n``).
        """
        if n not in self._snapshots:
            self._snapshots[n] = self._greedy(n)
        return list(self._snapshots[n])

    def _greedy(self, n: int) -> list[Snapshot]:
        """The snapshots of :meth:`snapshots`, computed."""
        queues = self.queues()
        names = sorted(queues)
        used: dict[str, set[str]] = {name: set() for name in names}
        new = {name: [len(ids) for _, ids in queues[name]] for name in names}  # new ids per candidate
        chosen: list[Snapshot] = []
        total = 0
        while total < n:
            best: tuple[int, str, int] | None = None
            for name in names:
                for k, count in enumerate(new[name]):
                    if best is None or count > best[0]:
                        best = (count, name, k)
            if best is None or best[0] == 0:
                break
            count, name, k = best
            at, ids = queues[name][k]
            fresh = frozenset(ids - used[name])
            chosen.append(Snapshot(name, at, fresh))
            used[name] |= fresh
            total += count
            new[name] = [len(other - used[name]) for _, other in queues[name]]  # only this trace's change
        return chosen

    def supply(self) -> int:
        """The most jobs the queues can supply (every snapshot until none brings a new job)."""
        return sum(len(s.job_ids) for s in self.snapshots(2**62))

    def round_jobs(self, n: int) -> tuple[list[TraceJob], float, list[Snapshot]]:
        """The trace jobs and the time ``at`` whose queue (cut to ``n``) is the round's."""
        snaps = self.snapshots(n)
        if len(snaps) == 1:
            s = snaps[0]
            return self.traces[s.trace], s.at_s, snaps
        common = max(s.at_s for s in snaps)
        merged: list[TraceJob] = []
        for s in snaps:
            shift = common - s.at_s
            for j in self.traces[s.trace]:
                if j.id in s.job_ids:
                    arrival = min(j.arrival_s + shift, common)  # never after `common` by rounding
                    merged.append(TraceJob(f"{s.trace}:{j.id}", j.type, arrival, j.requested_gpus, j.total_steps))
        return merged, common, snaps


def make_round(
    pool: TracePool,
    n: int,
    budget: float,
    nodes: Sequence[tuple[str, int]] | None = None,
    source: dict[str, Any] | None = None,
) -> tuple[Instance, list[Snapshot], tuple[tuple[str, int], ...]]:
    """A trace-family round of (up to) ``n`` jobs with budget ``budget`` x full power x T.

    ``nodes`` per GPU type defaults to :func:`cluster_nodes` of ``n``; ``source`` (default
    ``{"benchmark": "solve_scaling"}``) is recorded in the instance with the snapshots.
    Returns the instance, its snapshots and the nodes per GPU type.
    """
    jobs, at, snaps = pool.round_jobs(n)
    nodes = tuple(nodes or cluster_nodes(n))
    cluster = parse_cluster_spec(cluster_text(nodes), GPUS_PER_NODE)
    info = {
        **(source if source is not None else {"benchmark": "solve_scaling"}),
        "snapshots": [{"trace": s.trace, "at_s": s.at_s, "jobs": len(s.job_ids)} for s in snaps],
        "merged": len(snaps) > 1,
    }
    inst = build_round(jobs, cluster, pool.lib, RoundOptions(at_s=at, budget_fraction=budget, max_jobs=n), info)
    return inst, snaps, nodes


# --------------------------------------------------------------------------------------------
# The sampled family


def read_philly_population_trace(lib: ProfileLibrary, path: Path | None = None) -> list[TraceJob]:
    """The Philly trace as :func:`planner.rounds.traces.read_trace` reads it (seed :data:`PHILLY_TYPE_SEED`).

    The same call of :func:`planner.rounds.traces.read_philly_csv` with the same throughput function,
    memoised per (type, GPU count): the result is identical, in a fraction of the time.
    """
    types = sorted({p.type for p in lib.profiles})

    @functools.cache
    def steps_per_s(job_type: str, gpus: int) -> float | None:
        return lib.top_throughput(job_type, REFERENCE_GPU_TYPE, normalise_request(gpus, lib.max_count(job_type)))

    return read_philly_csv(path or shipped(PHILLY_TRACE), types, steps_per_s, seed=PHILLY_TYPE_SEED)


@dataclass(frozen=True)
class JobPopulation:
    """The records the sampled family draws from: one per job queued at one snapshot of one trace.

    Arrays of equal length, in trace order (Gavel traces by name, then ``philly.csv``), then
    snapshot time, then the trace's job order. ``types`` lists the job type names ``type_index``
    points into; ``traces`` the trace names ``trace_index`` points into; ``snapshots`` counts
    snapshot times per trace.
    """

    types: tuple[str, ...]
    traces: tuple[str, ...]
    snapshots: tuple[int, ...]
    type_index: np.ndarray
    trace_index: np.ndarray
    at_s: np.ndarray
    requested_gpus: np.ndarray
    total_steps: np.ndarray
    elapsed_s: np.ndarray
    remaining_fraction: np.ndarray

    def __len__(self) -> int:
        """The number of records."""
        return len(self.type_index)

    @classmethod
    def build(cls, lib: ProfileLibrary, traces: Sequence[tuple[str, Sequence[TraceJob]]]) -> JobPopulation:
        """The records of ``traces`` (name, jobs) at each trace's :func:`candidate_times`."""
        type_names = sorted({p.type for p in lib.profiles})
        type_of = {t: k for k, t in enumerate(type_names)}
        gpu_types = sorted(lib.gpu_types)
        keys = ("type", "trace", "at", "req", "total", "elapsed", "remaining")
        parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
        counts = []
        for t_index, (_, jobs) in enumerate(traces):
            arrays = _TraceArrays.of(jobs, lib, gpu_types)
            job_type = np.array([type_of.get(j.type, -1) for j in jobs], dtype=np.int64)
            requested = np.array([j.requested_gpus for j in jobs], dtype=np.int64)
            times = candidate_times(jobs)
            counts.append(len(times))
            for at in times:
                idx, elapsed, remaining = arrays.queued(at)
                parts["type"].append(job_type[idx])
                parts["trace"].append(np.full(len(idx), t_index, dtype=np.int64))
                parts["at"].append(np.full(len(idx), at, dtype=np.float64))
                parts["req"].append(requested[idx])
                parts["total"].append(arrays.total[idx])
                parts["elapsed"].append(elapsed)
                parts["remaining"].append(remaining)
        cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
        total = cat["total"].astype(np.float64)
        return cls(
            types=tuple(type_names),
            traces=tuple(name for name, _ in traces),
            snapshots=tuple(counts),
            type_index=cat["type"].astype(np.int64),
            trace_index=cat["trace"].astype(np.int64),
            at_s=cat["at"].astype(np.float64),
            requested_gpus=cat["req"].astype(np.int64),
            total_steps=total,
            elapsed_s=cat["elapsed"].astype(np.float64),
            remaining_fraction=cat["remaining"].astype(np.float64) / total,
        )

    @classmethod
    def shipped(cls, lib: ProfileLibrary) -> JobPopulation:
        """The population of every shipped trace: all Gavel ``*.trace`` files by name, then ``philly.csv``."""
        traces: list[tuple[str, Sequence[TraceJob]]] = [
            (path.name, read_gavel_trace(path)) for path in sorted(shipped(GAVEL_TRACES).glob("*.trace"))
        ]
        traces.append((Path(PHILLY_TRACE).name, read_philly_population_trace(lib)))
        return cls.build(lib, traces)

    def type_frequencies(self) -> dict[str, float]:
        """The share of records of each job type (types without a record left out)."""
        counts = np.bincount(self.type_index, minlength=len(self.types))
        return {t: float(c) / len(self) for t, c in zip(self.types, counts, strict=True) if c}

    def shares(self) -> dict[str, int]:
        """Records per trace."""
        counts = np.bincount(self.trace_index, minlength=len(self.traces))
        return {name: int(c) for name, c in zip(self.traces, counts, strict=True)}

    def describe(self) -> dict[str, Any]:
        """What an instance's ``source`` records about the population."""
        return {
            "traces": list(self.traces),
            "snapshots": int(sum(self.snapshots)),
            "records": len(self),
            "philly_type_seed": PHILLY_TYPE_SEED,
        }

    def sample(self, n: int, seed: int) -> list[TraceJob]:
        """``n`` records drawn i.i.d. (with replacement) by ``default_rng(seed)``, as trace jobs.

        Draw ``i`` becomes job ``s{i:06d}``, arrived ``elapsed_s`` before :data:`SAMPLED_AT_S`, so
        the round builder gives it the remaining fraction of its record.
        """
        picks = np.random.default_rng(seed).integers(0, len(self), size=n)
        return [
            TraceJob(
                f"s{i:06d}",
                self.types[int(self.type_index[k])],
                SAMPLED_AT_S - float(self.elapsed_s[k]),
                int(self.requested_gpus[k]),
                float(self.total_steps[k]),
            )
            for i, k in enumerate(picks)
        ]


def sampled_round(
    population: JobPopulation,
    n: int,
    seed: int,
    budget: float,
    nodes: Sequence[tuple[str, int]],
    lib: ProfileLibrary,
    source: dict[str, Any] | None = None,
) -> Instance:
    """A sampled-family round: ``n`` jobs of ``population`` drawn with ``seed``, on ``nodes`` per GPU type."""
    jobs = population.sample(n, seed)
    cluster = parse_cluster_spec(cluster_text(nodes), GPUS_PER_NODE)
    info = {**(source or {}), "seed": seed, "population": population.describe()}
    inst = build_round(jobs, cluster, lib, RoundOptions(at_s=SAMPLED_AT_S, budget_fraction=budget), info)
    if len(inst.jobs) != n:  # a drawn job no GPU type of the cluster can run
        names = ", ".join(name for name, _ in nodes)
        raise InputError(
            "--gpu-mix",
            [
                Problem(
                    "unrunnable-jobs", "--gpu-mix", f"{n - len(inst.jobs)} of {n} sampled jobs cannot run on {names}"
                )
            ],
        )
    return inst


# --------------------------------------------------------------------------------------------
# The long family


def long_choices(lib: ProfileLibrary, gpu_types: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Per job type profiled on ``gpu_types`` (sorted by name), its profiled powers of two there, ascending."""
    out = {}
    for job_type in sorted({p.type for p in lib.profiles}):
        counts = tuple(sorted(n for n in lib.counts(job_type, gpu_types) if is_power_of_two(n)))
        if counts:
            out[job_type] = counts
    return out


def best_round_steps(instance: Instance, job: Job) -> float:
    """``sigma_max = max_{g, n, s} X_{g,n,s} t_{g,n}``: the most steps any exclusive option of ``job`` makes (steps).

    Over the profiled options that fit the cluster (:func:`planner.core.economics.profiled_options`'s
    rule), ``t`` the effective time of the round (``T - tau`` for a job that starts).
    """
    best = 0.0
    for g in instance.gpu_types:
        for n in job.gpus:
            if n > g.total_gpus:
                continue
            t = effective_time_s(instance, job, g.name, n)
            for setting in g.settings:
                p = instance.profile(job.type, g.name, n, setting)
                if p is not None:
                    best = max(best, p.steps_per_s * t)
    return best


def long_draws(lib: ProfileLibrary, gpu_types: Sequence[str], n: int, seed: int) -> list[tuple[str, int, float]]:
    """``n`` draws ``(job type, requested GPUs, best per-round fraction f)`` by ``default_rng(seed)``.

    In order, per job: the type uniformly among :func:`long_choices`, its count uniformly among the
    type's counts, ``u`` uniform in ``[log10 f_lo, log10 f_hi)`` and ``f = 10^u`` (module docstring).
    """
    choices = long_choices(lib, gpu_types)
    if not choices:
        raise InputError(
            "--gpu-mix", [Problem("unrunnable-jobs", "--gpu-mix", f"no job type is profiled on {', '.join(gpu_types)}")]
        )
    types = list(choices)
    rng = np.random.default_rng(seed)
    lo, hi = (math.log10(f) for f in LONG_FRACTION)
    draws = []
    for _ in range(n):
        job_type = types[int(rng.integers(0, len(types)))]
        counts = choices[job_type]
        gpus = counts[int(rng.integers(0, len(counts)))]
        draws.append((job_type, gpus, float(10.0 ** rng.uniform(lo, hi))))
    return draws


def long_round(
    lib: ProfileLibrary,
    n: int,
    seed: int,
    budget: float,
    nodes: Sequence[tuple[str, int]],
    source: dict[str, Any] | None = None,
) -> Instance:
    """A long-family round: ``n`` jobs drawn with ``seed`` (:func:`long_draws`) on ``nodes`` per GPU type.

    The round builder makes the round with a placeholder of 1 step per job; each job's remaining
    steps then become ``R = sigma_max / f`` (:func:`best_round_steps` on that round).
    """
    draws = long_draws(lib, [name for name, _ in nodes], n, seed)
    jobs = [TraceJob(f"l{i:06d}", job_type, LONG_AT_S, gpus, 1.0) for i, (job_type, gpus, _) in enumerate(draws)]
    cluster = parse_cluster_spec(cluster_text(nodes), GPUS_PER_NODE)
    lo, hi = LONG_FRACTION
    info = {**(source or {}), "seed": seed, "best_round_fraction": {"low": lo, "high": hi, "law": "log-uniform"}}
    draft = build_round(jobs, cluster, lib, RoundOptions(at_s=LONG_AT_S, budget_fraction=budget), info)
    fraction = {f"l{i:06d}": f for i, (_, _, f) in enumerate(draws)}
    long_jobs = tuple(replace(j, remaining_steps=best_round_steps(draft, j) / fraction[j.id]) for j in draft.jobs)
    return replace(draft, jobs=long_jobs)
