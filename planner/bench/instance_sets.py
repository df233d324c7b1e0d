"""``wattplan instance sweep``: reproducible sets of round instances for solver benchmarks.

One ``wattplan.instance/1`` file per (size, budget, seed), named ``FAMILY-nN-bB-sS.json``
(``sampled-n2000-b0.30-s0.json``), and ``manifest.csv`` listing them (:data:`MANIFEST_FIELDS`),
all in one folder. The rounds come from :mod:`planner.bench.round_families`:

* ``trace``: the real queues of the shipped Gavel traces, one snapshot or several merged
  (the rounds of ``benchmarks/solve_scaling.py``). The traces supply at most about 13,500
  jobs; a larger size is refused (``--sizes``). These rounds do not depend on the seed: each
  seed gets a file, and the files of one (size, budget) differ only in name.
* ``sampled``: N jobs drawn i.i.d. with the seed from the queued jobs of every shipped trace
  (type, requested GPUs, total steps and remaining fraction jointly). Up to
  :data:`MAX_SWEEP_JOBS` jobs.
* ``long``: N long jobs drawn with the seed from the profile library (type, then GPU count), each
  with remaining steps such that one round does at most a log-uniform 0.01-1% of its work: the
  badly scaled case (progress coefficients about 1e-5..1e-2, ~1e-3 of progress per running job).
  Up to :data:`MAX_SWEEP_JOBS` jobs.

The cluster is whole nodes of 8 GPUs, about ``N / jobs_per_node`` of them, split by the
``--gpu-mix`` weights with at least one node of each named type
(:func:`planner.bench.round_families.cluster_nodes`). The budget is ``budget_fraction`` of the
cluster's full power over the round (``RoundOptions(budget_fraction=...)``). ``jobs_per_node``
is refused outside :data:`JOBS_PER_NODE_RANGE`, and a size whose cluster would have more than
:data:`MAX_NODES_PER_TYPE` nodes of one type is refused (the instance schema's limit).

Every instance is checked against the instance schema before it is written; one that breaks
it stops the sweep with an :class:`~planner.contracts.problems.InputError` naming the option that made it.

With ``mps`` each round's first-stage model (most progress under the budget) is also written as
``FAMILY-nN-bB-sS.mps`` by :mod:`formulations.mps` (a minimisation of ``-progress``, like every
wattplan MPS file); a 10,000-job model is large, so it is off by default. The same options give
byte-identical files and manifest on every run: nothing depends on the clock or on set order.
Every file is written atomically.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from wattplan.planner.bench.round_families import (
    JobPopulation,
    TracePool,
    cluster_nodes,
    cluster_text,
    long_round,
    make_round,
    sampled_round,
)
from wattplan.planner.console.list_options import split_list
from wattplan.planner.contracts.defaults import GPUS_PER_NODE
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.profile_library.library import ProfileLibrary

Family = Literal["trace", "sampled", "long"]
FAMILIES: tuple[Family, ...] = ("trace", "sampled", "long")
MANIFEST = "manifest.csv"
MANIFEST_FIELDS = (
    "file",
    "family",
    "size",
    "jobs",
    "nodes",
    "gpus",
    "gpu_types",
    "budget_fraction",
    "budget_j",
    "seed",
    "source",
    "sha256",
)
"""Columns of ``manifest.csv``; with ``mps``, ``mps_file`` and ``mps_sha256`` follow."""
MPS_FIELDS = ("mps_file", "mps_sha256")
DEFAULT_SIZES = "50,100,500,1000,2000,5000,10000"
DEFAULT_BUDGETS = "0.3,0.6,1.0"
DEFAULT_SEEDS = "0"
DEFAULT_GPU_MIX = "v100:2,p100:1"

MAX_SWEEP_JOBS = 100_000
"""Largest ``--sizes`` of the sampled and long families: ten times the largest default size.

A round is held whole in memory several times over (jobs, profiles, the model); 2,000,000 jobs
ran out of memory after a minute. The trace family is bounded by its traces' queues instead."""

JOBS_PER_NODE_RANGE = (0.25, 64.0)
"""Smallest and largest ``--jobs-per-node``: below 0.25 each job has over 4 nodes (32 GPUs) to
itself, more than any trace job asks for, so the cluster is mostly idle; above 64 eight jobs
queue for each GPU, so almost none run. Both ends leave benchmark rounds that measure nothing."""

MAX_NODES_PER_TYPE = 100_000
"""Most nodes of one GPU type: the instance schema's ``gpu_types[].nodes`` maximum."""


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep writes: one instance per (size, budget, seed) of ``family`` into ``out``."""

    out: Path
    sizes: tuple[int, ...]
    budgets: tuple[float, ...]
    seeds: tuple[int, ...]
    family: Family = "trace"
    gpu_mix: tuple[tuple[str, float], ...] = (("v100", 2.0), ("p100", 1.0))
    jobs_per_node: float = 4.0
    mps: bool = False

    def items(self) -> list[tuple[int, float, int]]:
        """Every (size, budget, seed), sizes outermost."""
        return [(n, b, s) for n in self.sizes for b in self.budgets for s in self.seeds]

    def name(self, n: int, budget: float, seed: int) -> str:
        """The file stem of one round: ``sampled-n2000-b0.30-s0``."""
        return f"{self.family}-n{n}-b{budget:.2f}-s{seed}"

    def mix_text(self) -> str:
        """The GPU mix as an option value: ``v100:2,p100:1``."""
        return ",".join(f"{name}:{weight:g}" for name, weight in self.gpu_mix)


# --------------------------------------------------------------------------------------------
# Options


def _items(text: str, option: str, problems: list[Problem]) -> list[str]:
    """The comma-separated items of an option value, stripped; an empty item (``1,,2``) is a problem."""
    try:
        return split_list(text, option, repeats=True)
    except InputError as exc:
        problems.extend(exc.problems)
        return [x.strip() for x in text.split(",") if x.strip()]


def _ints(text: str, option: str, least: int, problems: list[Problem]) -> list[int]:
    """Whole numbers >= ``least``; each bad item is a problem naming ``option``."""
    values = []
    items = _items(text, option, problems)
    for item in items:
        try:
            value = int(item)
        except ValueError:
            problems.append(Problem("bad-option", option, f"{item!r} is not a whole number"))
            continue
        if value < least:
            problems.append(Problem("bad-option", option, f"{value} is below {least}"))
            continue
        values.append(value)
    if not items and text.strip() == "":
        problems.append(Problem("bad-option", option, "no value given"))
    return values


def _budgets(text: str, problems: list[Problem]) -> list[float]:
    """Budget fractions, each in (0, 1]."""
    values = []
    items = _items(text, "--budgets", problems)
    for item in items:
        try:
            value = float(item)
        except ValueError:
            problems.append(Problem("bad-option", "--budgets", f"{item!r} is not a number"))
            continue
        if not (math.isfinite(value) and 0 < value <= 1):
            problems.append(Problem("bad-option", "--budgets", f"{item} is not a fraction of full power in (0, 1]"))
            continue
        values.append(value)
    if not items and text.strip() == "":
        problems.append(Problem("bad-option", "--budgets", "no value given"))
    return values


def parse_gpu_mix(text: str, known: Sequence[str], problems: list[Problem]) -> list[tuple[str, float]]:
    """``v100:2,p100:1`` -> ``[("v100", 2.0), ("p100", 1.0)]``: GPU types of ``known``, positive weights."""
    out: list[tuple[str, float]] = []
    items = _items(text, "--gpu-mix", problems)
    for item in items:
        name, sep, weight_text = item.partition(":")
        name = name.strip().lower()
        try:
            weight = float(weight_text) if sep else 1.0
        except ValueError:
            problems.append(Problem("bad-option", "--gpu-mix", f"{item!r} is not TYPE:WEIGHT"))
            continue
        if name not in known:
            problems.append(
                Problem("bad-option", "--gpu-mix", f"unknown GPU type {name!r} (profiled: {', '.join(sorted(known))})")
            )
        elif not (math.isfinite(weight) and weight > 0):
            problems.append(Problem("bad-option", "--gpu-mix", f"weight of {name} must be > 0, not {weight_text}"))
        elif name in (n for n, _ in out):
            problems.append(Problem("bad-option", "--gpu-mix", f"{name} is named twice"))
        else:
            out.append((name, weight))
    if not items and text.strip() == "":
        problems.append(Problem("bad-option", "--gpu-mix", "no GPU type given"))
    return out


def _node_problems(sizes: Sequence[int], mix: Sequence[tuple[str, float]], jobs_per_node: float) -> list[Problem]:
    """A problem naming ``--jobs-per-node`` for each size whose cluster has too many nodes of one type."""
    out = []
    for n in sizes:
        most = max(count for _, count in cluster_nodes(n, mix, jobs_per_node))
        if most > MAX_NODES_PER_TYPE:
            message = (
                f"{n} jobs at {jobs_per_node:g} jobs per node need {most:,} nodes of one type, "
                f"over the {MAX_NODES_PER_TYPE:,} an instance may have: "
                "give a larger --jobs-per-node or smaller --sizes"
            )
            out.append(Problem("too-many-nodes", "--jobs-per-node", message))
    return out


def sweep_spec(
    out: Path,
    sizes: str = DEFAULT_SIZES,
    budgets: str = DEFAULT_BUDGETS,
    seeds: str = DEFAULT_SEEDS,
    family: str = "trace",
    gpu_mix: str = DEFAULT_GPU_MIX,
    jobs_per_node: float = 4.0,
    mps: bool = False,
    gpu_types: Sequence[str] = ("v100", "p100"),
) -> SweepSpec:
    """Check the command's options; every bad one is a problem naming it (one :class:`InputError`).

    ``gpu_types`` are the GPU types the profile library describes (``--gpu-mix`` may name only those).
    """
    problems: list[Problem] = []
    n = _ints(sizes, "--sizes", 1, problems)
    b = _budgets(budgets, problems)
    s = _ints(seeds, "--seeds", 0, problems)
    mix = parse_gpu_mix(gpu_mix, gpu_types, problems)
    if family not in FAMILIES:
        problems.append(Problem("bad-option", "--family", f"{family!r} is not one of {', '.join(FAMILIES)}"))
    low, high = JOBS_PER_NODE_RANGE
    if not (math.isfinite(jobs_per_node) and low <= jobs_per_node <= high):
        message = f"{jobs_per_node:g} is outside [{low:g}, {high:g}] (must be > 0 and a cluster that runs its jobs)"
        problems.append(Problem("bad-option", "--jobs-per-node", message))
    elif mix:
        problems += _node_problems([x for x in n if x <= MAX_SWEEP_JOBS], mix, jobs_per_node)  # larger: too-large
    if family != "trace":  # the trace family's sizes are bounded by its traces (check_supply)
        problems += [
            Problem("too-large", "--sizes", f"{x} jobs: the {family} family builds at most {MAX_SWEEP_JOBS:,} jobs")
            for x in n
            if x > MAX_SWEEP_JOBS
        ]
    names = [f"b{x:.2f}" for x in b]
    if len(set(names)) < len(names):
        problems.append(Problem("bad-option", "--budgets", "two budgets round to the same 2 decimals of a file name"))
    if problems:
        options = sorted({p.path for p in problems})
        raise InputError(options[0] if len(options) == 1 else "options", problems)
    return SweepSpec(
        out=Path(out),
        sizes=tuple(dict.fromkeys(n)),
        budgets=tuple(dict.fromkeys(b)),
        seeds=tuple(dict.fromkeys(s)),
        family=cast(Family, family),  # checked against FAMILIES above
        gpu_mix=tuple(mix),
        jobs_per_node=jobs_per_node,
        mps=mps,
    )


# --------------------------------------------------------------------------------------------
# Writing


class RoundSources:
    """The traces a sweep draws from, read on first use and kept (one object may serve several sweeps)."""

    def __init__(self, lib: ProfileLibrary) -> None:
        """Sources over the profile library ``lib``; nothing is read yet."""
        self.lib = lib
        self._pool: TracePool | None = None
        self._population: JobPopulation | None = None

    def pool(self) -> TracePool:
        """The trace family's pool (the shipped Gavel traces and their queues)."""
        if self._pool is None:
            self._pool = TracePool(self.lib)
            self._pool.queues()
        return self._pool

    def population(self) -> JobPopulation:
        """The sampled family's population (every shipped trace)."""
        if self._population is None:
            self._population = JobPopulation.shipped(self.lib)
        return self._population


def check_supply(spec: SweepSpec, sources: RoundSources) -> None:
    """For the trace family, refuse sizes the traces' queues cannot supply (``InputError`` naming ``--sizes``)."""
    if spec.family != "trace":
        return
    largest = max(spec.sizes)
    got = sum(len(s.job_ids) for s in sources.pool().snapshots(largest))
    if got < largest:
        raise InputError(
            "--sizes",
            [
                Problem(
                    "too-large-for-traces",
                    "--sizes",
                    f"{n} jobs: the shipped traces' queues hold at most {got} jobs for the trace family; "
                    "give smaller --sizes, or --family sampled",
                )
                for n in spec.sizes
                if n > got
            ],
        )


def sweep_round(spec: SweepSpec, sources: RoundSources, n: int, budget: float, seed: int) -> tuple[Instance, str]:
    """The round of (``n``, ``budget``, ``seed``) and a one-line description of where its jobs come from."""
    nodes = cluster_nodes(n, spec.gpu_mix, spec.jobs_per_node)
    source = {
        "sweep": spec.family,
        "size": n,
        "cluster": cluster_text(nodes, GPUS_PER_NODE),
        "gpu_mix": spec.mix_text(),
        "jobs_per_node": spec.jobs_per_node,
    }
    if spec.family == "sampled":
        population = sources.population()
        inst = sampled_round(population, n, seed, budget, nodes, sources.lib, source)
        d = population.describe()
        return inst, f"{d['records']} records of {d['snapshots']} snapshots of {len(d['traces'])} traces"
    if spec.family == "long":
        inst = long_round(sources.lib, n, seed, budget, nodes, source)
        return inst, "profile library: best per-round fraction log-uniform in [1e-4, 1e-2)"
    inst, snaps, _ = make_round(sources.pool(), n, budget, nodes, source)
    if len(inst.jobs) != n:
        raise InputError(
            "--sizes",
            [Problem("too-large-for-traces", "--sizes", f"{n} jobs: the trace round has only {len(inst.jobs)}")],
        )
    if len(snaps) == 1:
        return inst, snaps[0].describe()
    traces = len({s.trace for s in snaps})
    return inst, f"{len(snaps)} snapshots of {traces} traces merged at {inst.extra['source']['at_s']:.0f}"


_OPTION_OF_FIELD = (("gpu_types", "--jobs-per-node"), ("jobs", "--sizes"), ("round.budget", "--budgets"))
"""The option that sizes each part of a sweep's instance, by the start of the schema path."""


def checked_doc(inst: Instance, name: str) -> dict[str, Any]:
    """The document of ``inst``, checked against the instance schema before it is written.

    Raises :class:`~planner.contracts.problems.InputError` naming the option that made the broken part
    (``--jobs-per-node`` for the cluster, ``--sizes`` for the jobs, ``--budgets`` for the budget)
    and, in each problem, the file that was not written.
    """
    from wattplan.planner.contracts.instance_io import instance_to_doc
    from wattplan.planner.contracts.schema_check import INSTANCE_SCHEMA, schema_problems

    doc = instance_to_doc(inst)
    problems = schema_problems(doc, INSTANCE_SCHEMA, "bad-sweep-instance")
    if not problems:
        return doc
    options = {next((o for f, o in _OPTION_OF_FIELD if p.path.startswith(f)), "options") for p in problems}
    source = options.pop() if len(options) == 1 else "options"
    raise InputError(source, [Problem(p.code, f"{name}: {p.path}", p.message) for p in problems])


def manifest_row(
    spec: SweepSpec, n: int, budget: float, seed: int, inst: Instance, path: Path, where: str
) -> dict[str, Any]:
    """The manifest row of one written instance (without the MPS columns)."""
    return {
        "file": path.name,
        "family": spec.family,
        "size": n,
        "jobs": len(inst.jobs),
        "nodes": sum(g.nodes for g in inst.gpu_types),
        "gpus": sum(g.total_gpus for g in inst.gpu_types),
        "gpu_types": ",".join(f"{g.name}:{g.total_gpus}" for g in inst.gpu_types),
        "budget_fraction": repr(budget),
        "budget_j": "" if inst.round.budget_j is None else f"{inst.round.budget_j:.0f}",
        "seed": seed,
        "source": where,
        "sha256": file_sha256(path),
    }


def manifest_text(rows: Sequence[dict[str, Any]], mps: bool) -> str:
    """``manifest.csv``: a header and one line per instance, Unix line ends."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*MANIFEST_FIELDS, *(MPS_FIELDS if mps else ())], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def export_mps(inst: Instance, path: Path) -> None:
    """Write the round's first-stage model (most progress under the budget) with wattplan's one MPS writer.

    The file is a minimisation of ``-progress`` (:func:`planner.planning.write_round_mps`), like every export.
    """
    from wattplan.planner.planning import write_round_mps

    write_round_mps(inst, path)


def sweep(
    spec: SweepSpec,
    lib: ProfileLibrary | None = None,
    on_written: Callable[[dict[str, Any]], None] | None = None,
    on_prepared: Callable[[], None] | None = None,
    sources: RoundSources | None = None,
) -> list[dict[str, Any]]:
    """Write every instance of ``spec`` and ``manifest.csv``; returns the manifest rows.

    ``lib`` is the profile library (default: the shipped one); ``sources`` the traces already
    read (default: read here, with ``lib``). ``on_prepared`` is called once the traces are read,
    ``on_written`` with each manifest row after its files are written.
    """
    from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic
    from wattplan.planner.profile_library.library import load_profile_library

    if sources is None:
        sources = RoundSources(lib or load_profile_library())
    check_supply(spec, sources)
    if spec.family == "sampled":
        sources.population()
    if on_prepared is not None:
        on_prepared()
    spec.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, budget, seed in spec.items():
        inst, where = sweep_round(spec, sources, n, budget, seed)
        path = spec.out / f"{spec.name(n, budget, seed)}.json"
        write_json_atomic(path, checked_doc(inst, path.name))
        row = manifest_row(spec, n, budget, seed, inst, path, where)
        if spec.mps:
            mps = path.with_suffix(".mps")
            export_mps(inst, mps)
            row.update(mps_file=mps.name, mps_sha256=file_sha256(mps))
        rows.append(row)
        if on_written is not None:
            on_written(row)
    write_text_atomic(spec.out / MANIFEST, manifest_text(rows, spec.mps))
    return rows
