"""Readers for job traces users already have: Gavel ``.trace`` and Philly-derived CSV.

Both produce :class:`TraceJob` records; a Philly row names no model, so a job type is drawn
for it (seeded, uniformly among the profiled types), as Gavel does when it turns Philly
durations into jobs, and its step count is its duration times the type's reference
throughput at the requested count.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from planner.problems import InputError, Problem


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: arrival time (s from the trace's start), requested GPUs, total steps."""

    id: str
    type: str
    arrival_s: float
    requested_gpus: int
    total_steps: float


GAVEL_COLUMNS = 7


def read_gavel_trace(path: Path) -> list[TraceJob]:
    """Parse a Gavel trace: tab-separated ``job_type, command, num_steps_arg, needs_data_dir,
    total_steps, arrival_time_s, scale_factor`` (scale factor = requested GPU count)."""
    jobs, problems = [], []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != GAVEL_COLUMNS:
            problems.append(Problem("bad-trace-row", f"line {i + 1}", f"{len(cols)} columns, expected {GAVEL_COLUMNS}"))
            continue
        try:
            steps, arrival, gpus = float(cols[4]), float(cols[5]), int(cols[6])
        except ValueError as exc:
            problems.append(Problem("bad-trace-row", f"line {i + 1}", str(exc)))
            continue
        if steps <= 0 or arrival < 0 or gpus <= 0:
            problems.append(Problem("bad-trace-row", f"line {i + 1}", "steps and GPUs must be > 0, arrival >= 0"))
            continue
        jobs.append(TraceJob(f"j{i}", cols[0], arrival, gpus, steps))
    if problems:
        raise InputError(str(path), problems)
    return jobs


PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


def read_philly_csv(
    path: Path,
    job_types: Sequence[str],
    steps_per_s: Callable[[str, int], float | None],
    seed: int = 0,
    virtual_cluster: str | None = None,
) -> list[TraceJob]:
    """Parse a Philly-derived CSV (``timestamp,duration,num_gpus,gpu_time,cluster``).

    Rows with an empty field are skipped; ``virtual_cluster`` keeps one cluster's rows.
    Arrivals are seconds after the earliest kept timestamp. Each row gets a type drawn
    with ``random.Random(seed)`` among ``job_types`` whose ``steps_per_s(type, gpus)``
    is known, and ``total_steps = duration_s * steps_per_s(type, gpus)``.
    """
    with Path(path).open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != PHILLY_COLUMNS:
            raise InputError(
                str(path), [Problem("bad-trace-header", "line 1", f"expected columns {','.join(PHILLY_COLUMNS)}")]
            )
        rows = []
        for i, row in enumerate(reader):
            if any(not (row.get(c) or "").strip() for c in PHILLY_COLUMNS):
                continue
            if virtual_cluster is not None and row["cluster"] != virtual_cluster:
                continue
            rows.append((i, datetime.fromisoformat(row["timestamp"]), float(row["duration"]), int(row["num_gpus"])))
    if not rows:
        raise InputError(
            str(path),
            [
                Problem(
                    "empty-trace",
                    "(file)",
                    "no usable rows" + (f" for cluster {virtual_cluster}" if virtual_cluster else ""),
                )
            ],
        )
    start = min(r[1] for r in rows)
    rng = random.Random(seed)
    jobs = []
    for i, stamp, duration, gpus in sorted(rows, key=lambda r: (r[1], r[0])):
        usable = [t for t in job_types if steps_per_s(t, gpus)]
        if not usable or duration <= 0:
            continue
        job_type = rng.choice(usable)
        jobs.append(
            TraceJob(f"p{i}", job_type, (stamp - start).total_seconds(), gpus, duration * steps_per_s(job_type, gpus))
        )  # type: ignore[operator]
    return jobs
