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
from pathlib import Path
from typing import Any, Literal

from planner.defaults import (
    BUDGET_FRACTION,
    GPUS_PER_NODE,
    MIN_PAIR_RATE,
    NODE_POWER_W,
    RESTART_S,
    ROUND_S,
)
from planner.domain import GpuType, Instance, Job, PairSlowdown, Profile, RoundSpec, is_power_of_two
from planner.economics import full_power_w
from planner.jsonio import read_json
from planner.list_options import split_list
from planner.problems import InputError, Problem
from planner.profile_checks import library_problems
from planner.traces import TraceJob, read_gavel_trace, read_philly_csv

REFERENCE_GPU_TYPE = "v100"
TraceFormat = Literal["auto", "gavel", "philly"]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """GPUs per type, e.g. ``v100:64,p100:32`` with ``gpus_per_node`` GPUs a node."""

    gpus: tuple[tuple[str, int], ...]
    gpus_per_node: int = GPUS_PER_NODE
    node_power_w: float = NODE_POWER_W


MIN_GPUS_PER_NODE, MAX_GPUS_PER_NODE = 1, 64
"""GPUs per node a cluster may have (the instance schema's ``gpus_per_node`` range)."""
MAX_NODE_POWER_W = 1e6
"""Largest node base power (W) a cluster may have: a real node draws kW, 1e6 W keeps every product finite."""


def parse_cluster_spec(
    text: str, gpus_per_node: int = GPUS_PER_NODE, node_power_w: float = NODE_POWER_W
) -> ClusterSpec:
    """Parse ``type:GPUS[,type:GPUS...]``; each count must be a whole number of nodes.

    Problems name ``--cluster[k]``: an empty item, a GPU type given twice, a count that is no whole number of
    nodes.

    ``gpus_per_node`` must be in [1, 64] (the instance schema's range) and ``node_power_w`` (W) finite in
    [0, 1e6]; either out of range is a ``bad-option`` naming ``--gpus-per-node`` or ``--node-power-w`` (a count of
    2**31 GPUs per node was reported as a bad ``--cluster``).
    """
    options = []
    if not MIN_GPUS_PER_NODE <= gpus_per_node <= MAX_GPUS_PER_NODE:
        options.append(
            Problem(
                "bad-option",
                "--gpus-per-node",
                f"must be in [{MIN_GPUS_PER_NODE}, {MAX_GPUS_PER_NODE}], got {gpus_per_node}",
            )
        )
    if not (math.isfinite(node_power_w) and 0.0 <= node_power_w <= MAX_NODE_POWER_W):
        options.append(
            Problem("bad-option", "--node-power-w", f"must be in [0, {MAX_NODE_POWER_W:g}] W, got {node_power_w}")
        )
    if options:
        raise InputError(options[0].path if len(options) == 1 else "options", options)
    out: list[tuple[str, int]] = []
    problems: list[Problem] = []
    parts = split_list(text, "--cluster", key=lambda part: part.partition(":")[0].strip().lower())
    for k, part in enumerate(parts):
        name, sep, count = part.partition(":")
        if not sep or not (count.strip().isascii() and count.strip().isdigit()):  # isdigit alone takes '²'
            problems.append(Problem("bad-cluster", f"--cluster[{k}]", f"{part!r} is not TYPE:GPUS"))
            continue
        n = int(count)
        if n <= 0 or n % gpus_per_node:
            problems.append(
                Problem(
                    "bad-cluster",
                    f"--cluster[{k}]",
                    f"{n} GPUs is not a positive multiple of {gpus_per_node} GPUs per node",
                )
            )
            continue
        out.append((name.strip().lower(), n))
    if not out and not problems:
        problems.append(Problem("bad-cluster", "--cluster", "no GPU types given"))
    if problems:
        raise InputError("--cluster", problems)
    return ClusterSpec(tuple(out), gpus_per_node, node_power_w)


ProfileKey = tuple[str, str, int, int]  # (job type, GPU type, GPU count, setting)
PairKey = tuple[str, str, str, int]  # (type a, type b, GPU type, GPU count)
_PROFILE_FIELDS = ("type", "gpu_type", "gpus", "setting", "steps_per_s", "power_w")
_PAIR_FIELDS = ("a", "b", "gpu_type", "gpus", "rho_a", "rho_b")


@dataclass(frozen=True)
class ProfileLibrary:
    """Profiles built by ``wattplan profiles build`` or ``fit`` (schema ``wattplan.profiles/1``).

    ``profile_extras`` / ``pair_extras`` keep the optional keys of an entry (``basis``,
    ``utilisation``; :mod:`planner.profiling`) by its key; ``measurements`` the library's measured
    points as documents (parsed by :mod:`planner.profiling.points` where needed).
    """

    gpu_types: dict[str, dict[str, Any]]
    profiles: tuple[Profile, ...]
    pairs: tuple[PairSlowdown, ...]
    sources: list[Any]
    profile_extras: dict[ProfileKey, dict[str, Any]] = field(default_factory=dict)
    pair_extras: dict[PairKey, dict[str, Any]] = field(default_factory=dict)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    # Lookup tables, filled by __post_init__: the top-setting profile per (type, GPU type, count)
    # and the largest profiled count per job type.
    _top: dict[tuple[str, str, int], Profile] = field(init=False, repr=False, compare=False)
    _max_count: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        top: dict[tuple[str, str, int], Profile] = {}
        for p in self.profiles:
            key = (p.type, p.gpu_type, p.gpus)
            if key not in top or p.setting > top[key].setting:
                top[key] = p
        object.__setattr__(self, "_top", top)
        n_max: dict[str, int] = {}
        for t, _, n in top:
            n_max[t] = max(n_max.get(t, 0), n)
        object.__setattr__(self, "_max_count", n_max)

    def max_count(self, job_type: str) -> int:
        """The largest GPU count profiled for ``job_type`` on any GPU type (0 if none)."""
        return self._max_count.get(job_type, 0)

    def counts(self, job_type: str, gpu_types: Sequence[str]) -> set[int]:
        """GPU counts profiled for ``job_type`` on at least one of ``gpu_types``."""
        return {n for (t, g, n) in self._top if t == job_type and g in gpu_types}

    def top_throughput(self, job_type: str, gpu_type: str, gpus: int) -> float | None:
        """Throughput at the highest setting profiled for (type, GPU type, count)."""
        p = self._top.get((job_type, gpu_type, gpus))
        return None if p is None else p.steps_per_s


def profile_key(p: Profile) -> ProfileKey:
    """``(type, gpu_type, gpus, setting)`` of a profile."""
    return (p.type, p.gpu_type, p.gpus, p.setting)


def pair_key(p: PairSlowdown) -> PairKey:
    """``(a, b, gpu_type, gpus)`` of a pair entry."""
    return (p.a, p.b, p.gpu_type, p.gpus)


def library_from_doc(doc: Any, source: str) -> ProfileLibrary:
    """A library from its ``wattplan.profiles/1`` document; optional keys go to the extras.

    ``InputError`` naming ``source`` (the file) with every problem of
    :func:`planner.profile_checks.library_problems` unless the document passes them all.
    """
    if not isinstance(doc, dict) or doc.get("schema") != "wattplan.profiles/1":
        raise InputError(source, [Problem("schema", "schema", "not a wattplan.profiles/1 file")])
    if problems := library_problems(doc):
        raise InputError(source, problems)
    profiles, pairs = [], []
    profile_extras: dict[ProfileKey, dict[str, Any]] = {}
    pair_extras: dict[PairKey, dict[str, Any]] = {}
    for raw in doc["profiles"]:
        p = Profile(**{k: raw[k] for k in _PROFILE_FIELDS}, basis=raw.get("basis"))
        profiles.append(p)
        if extra := {k: v for k, v in raw.items() if k not in _PROFILE_FIELDS}:
            profile_extras[profile_key(p)] = extra
    for raw in doc["pairs"]:
        q = PairSlowdown(**{k: raw[k] for k in _PAIR_FIELDS})
        pairs.append(q)
        if extra := {k: v for k, v in raw.items() if k not in _PAIR_FIELDS}:
            pair_extras[pair_key(q)] = extra
    return ProfileLibrary(
        gpu_types={g["name"]: g for g in doc["gpu_types"]},
        profiles=tuple(profiles),
        pairs=tuple(pairs),
        sources=doc.get("sources", []),
        profile_extras=profile_extras,
        pair_extras=pair_extras,
        measurements=list(doc.get("measurements", [])),
    )


def load_profile_library(path: Path) -> ProfileLibrary:
    """Read a ``wattplan.profiles/1`` file (``InputError`` if ``path`` holds another schema)."""
    return library_from_doc(read_json(Path(path)), str(path))


def normalise_request(requested: int, n_max: int) -> int:
    """Smallest power of two >= ``min(requested, n_max)``, at most ``n_max``."""
    n = min(requested, n_max)
    return min(1 << (n - 1).bit_length(), n_max)


def allowed_counts(requested: int, profiled: set[int]) -> tuple[int, ...]:
    """Profiled powers of two up to twice the request (always includes the request if profiled)."""
    return tuple(sorted(n for n in profiled if is_power_of_two(n) and n <= 2 * requested))


@dataclass(frozen=True, slots=True)
class RoundOptions:
    """How :func:`build_round` cuts a round from a trace.

    The round starts at ``at_s`` (s) and lasts ``duration_s`` (s); its budget is ``budget_j``
    (J) if given, else ``budget_fraction`` of the cluster's full power over the round
    (``fraction * P_full * T``, J), else none; ``max_jobs`` keeps only the first ``max_jobs``
    queued jobs (by arrival).
    """

    at_s: float
    round_index: int = 0
    duration_s: float = ROUND_S
    budget_fraction: float | None = BUDGET_FRACTION
    budget_j: float | None = None
    restart_s: float = RESTART_S
    min_pair_rate: float = MIN_PAIR_RATE
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
        GpuType(
            name=name,
            nodes=count // cluster.gpus_per_node,
            gpus_per_node=cluster.gpus_per_node,
            idle_power_w=float(lib.gpu_types[name]["idle_power_w"]),
            node_power_w=cluster.node_power_w,
            setting_unit=lib.gpu_types[name]["setting_unit"],
            settings=tuple(lib.gpu_types[name]["settings"]),
        )
        for name, count in cluster.gpus
    )
    jobs, capped = queued_jobs(trace, lib, names, opts.at_s)
    if opts.max_jobs is not None:
        jobs = jobs[: opts.max_jobs]
    types = {j.type for j in jobs}
    profiles = tuple(
        p
        for p in lib.profiles
        if p.type in types
        and p.gpu_type in names
        and p.gpus <= max(g.total_gpus for g in gpu_types if g.name == p.gpu_type)
    )
    pairs = tuple(p for p in lib.pairs if p.a in types and p.b in types and p.gpu_type in names)
    extra = {"source": {**(source or {}), "at_s": opts.at_s, "capped_requests": capped}}
    draft = Instance(RoundSpec(opts.round_index, opts.duration_s, None), gpu_types, tuple(jobs), profiles, pairs)
    budget = opts.budget_j
    if budget is None and opts.budget_fraction is not None:
        budget = opts.budget_fraction * full_power_w(draft) * opts.duration_s
        extra["source"]["budget_fraction_of_full_power"] = opts.budget_fraction
    spec = RoundSpec(
        index=opts.round_index,
        duration_s=opts.duration_s,
        budget_j=None if budget is None else math.floor(budget),
        restart_s=opts.restart_s,
        min_pair_rate=opts.min_pair_rate,
    )
    return Instance(spec, gpu_types, tuple(jobs), profiles, pairs, extra)


def trace_format(path: Path, fmt: TraceFormat = "auto") -> Literal["gavel", "philly"]:
    """``fmt`` itself, or by extension when ``auto``: ``.csv`` is Philly, anything else Gavel."""
    if fmt != "auto":
        return fmt
    return "philly" if Path(path).suffix.lower() == ".csv" else "gavel"


def read_trace(
    path: Path,
    lib: ProfileLibrary,
    fmt: TraceFormat = "auto",
    seed: int = 0,
    virtual_cluster: str | None = None,
) -> list[TraceJob]:
    """Every job of a Gavel or Philly trace; a Philly row's type is drawn with ``seed``.

    A Philly row names no model: its type is drawn among the library's types that have a
    throughput at the row's (normalised) GPU count on the reference GPU type, and its steps
    are its duration times that throughput (:func:`planner.traces.read_philly_csv`).
    """
    if trace_format(path, fmt) == "gavel":
        return read_gavel_trace(path)
    types = sorted({p.type for p in lib.profiles})
    return read_philly_csv(
        path,
        types,
        lambda t, n: lib.top_throughput(t, REFERENCE_GPU_TYPE, normalise_request(n, lib.max_count(t))),
        seed=seed,
        virtual_cluster=virtual_cluster,
    )
