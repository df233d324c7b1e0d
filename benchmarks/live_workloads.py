"""Workload families for live runs on the emulated cluster, built differently, short enough to run live.

A live run takes real time: at 30 emulated seconds per real second a 3-hour workload runs for 6 minutes. The
shipped traces' first 40 jobs span 80 to 800 hours, so the live measurements use two families built here, each
written as a Gavel trace (the replay and ``wattplan cluster submit`` read both the same way):

- ``gavel_mix``: the job types and GPU counts of the first jobs of Gavel's trace 0e4a51 (those profiled on V100),
  each job's length drawn log-uniform in [10, 60] minutes alone at the top setting, Poisson arrivals whose mean
  gap gives an offered load of ``--load`` of the cluster's GPUs.
- ``philly_shape``: consecutive jobs of Microsoft's Philly trace (virtual cluster 6214e9, ``instances/sources/pollux/
  philly.csv``): their GPU counts (rounded up to a power of two, at most 8) and their arrival gaps and durations,
  all compressed by one factor so that the median job lasts 25 minutes (durations then clipped to [5, 90]
  minutes); job types drawn uniformly among the Gavel types profiled at that GPU count on V100.
- ``two_waves`` (issue 43's third family, built apart from both): two waves of jobs 75 minutes apart, each
  arriving uniformly within 15 minutes; every fourth job a long one (4 or 8 GPUs, 30-60 minutes, type and count
  drawn among the V100 profiles of 4 and 8 GPUs), the others short 1-GPU jobs (log-uniform 5-20 minutes).
- ``short_jobs`` (issue 44, item 8: a workload of short jobs, held out from the others): the first consecutive
  jobs of another Philly virtual cluster (6c71a0) that ran 2 to 20 minutes, with their GPU counts (rounded up to a
  power of two, at most 8) and their own durations (minutes each, not compressed); only their arrival gaps are
  compressed, by one factor, so that the offered load is ``--load`` of ``--gpus``. Job types as in
  ``philly_shape``.

Usage: ``python benchmarks/live_workloads.py --out DIR [--jobs 40] [--gpus 16] [--load 1.0] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import statistics
from pathlib import Path

from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.traces import read_gavel_trace

ROOT = Path(__file__).resolve().parent.parent
GAVEL = ROOT / "instances/sources/gavel/traces/0e4a51.trace"
PHILLY = ROOT / "instances/sources/pollux/philly.csv"


def _rates() -> dict[tuple[str, int], float]:
    """Steps per second alone on V100 at the top setting, by (type, GPUs)."""
    lib = load_profile_library(None)
    best: dict[tuple[str, int], tuple[int, float]] = {}
    for p in lib.profiles:
        if p.gpu_type == "v100" and ((p.type, p.gpus) not in best or p.setting > best[(p.type, p.gpus)][0]):
            best[(p.type, p.gpus)] = (p.setting, p.steps_per_s)
    return {k: v[1] for k, v in best.items()}


def _row(job_type: str, gpus: int, steps: int, arrival_s: float) -> str:
    return f"{job_type}\tcmd\t-n\t1\t{steps}\t{arrival_s:.6f}\t{gpus}"


def gavel_mix(jobs: int, gpus_total: int, load: float, rng: random.Random) -> list[str]:
    """The ``gavel_mix`` family (module docstring)."""
    rates = _rates()
    picked = [(j.type, j.requested_gpus) for j in read_gavel_trace(GAVEL) if (j.type, j.requested_gpus) in rates]
    picked = picked[:jobs]
    minutes = [math.exp(rng.uniform(math.log(10), math.log(60))) for _ in picked]
    gpu_s = statistics.mean(m * 60 * g for m, (_, g) in zip(minutes, picked, strict=True))
    gap = gpu_s / (gpus_total * load)
    t = 0.0
    rows = []
    for (job_type, g), m in zip(picked, minutes, strict=True):
        rows.append(_row(job_type, g, max(1, int(rates[(job_type, g)] * m * 60)), t))
        t += rng.expovariate(1.0 / gap)
    return rows


def philly_shape(jobs: int, rng: random.Random) -> list[str]:
    """The ``philly_shape`` family (module docstring)."""
    rates = _rates()
    with PHILLY.open() as f:
        rows = [r for r in csv.DictReader(f) if r["cluster"] == "6214e9" and float(r["duration"]) > 0]
    rows.sort(key=lambda r: r["timestamp"])
    rows = rows[:jobs]
    factor = statistics.median(float(r["duration"]) for r in rows) / (25 * 60)
    first = _seconds(rows[0]["timestamp"])
    out = []
    for r in rows:
        g = min(8, 1 << (max(1, int(r["num_gpus"])) - 1).bit_length())
        types = sorted(t for (t, n) in rates if n == g)
        job_type = rng.choice(types)
        minutes = min(90.0, max(5.0, float(r["duration"]) / factor / 60))
        arrival = (_seconds(r["timestamp"]) - first) / factor
        out.append(_row(job_type, g, max(1, int(rates[(job_type, g)] * minutes * 60)), arrival))
    return out


def short_jobs(jobs: int, gpus_total: int, load: float, rng: random.Random) -> list[str]:
    """The ``short_jobs`` family (module docstring): Philly 6c71a0's jobs of 2-20 minutes, their own lengths."""
    rates = _rates()
    with PHILLY.open() as f:
        rows = [r for r in csv.DictReader(f) if r["cluster"] == "6c71a0" and 120 <= float(r["duration"]) <= 1200]
    rows.sort(key=lambda r: r["timestamp"])
    rows = rows[:jobs]
    counts = [min(8, 1 << (max(1, int(r["num_gpus"])) - 1).bit_length()) for r in rows]
    gpu_s = sum(float(r["duration"]) * g for r, g in zip(rows, counts, strict=True))
    first = _seconds(rows[0]["timestamp"])
    span = _seconds(rows[-1]["timestamp"]) - first
    factor = span / (gpu_s / (gpus_total * load))  # real seconds of arrival gap per emulated second
    out = []
    for r, g in zip(rows, counts, strict=True):
        job_type = rng.choice(sorted(t for (t, n) in rates if n == g))
        arrival = (_seconds(r["timestamp"]) - first) / factor
        out.append(_row(job_type, g, max(1, int(rates[(job_type, g)] * float(r["duration"]))), arrival))
    return out


def two_waves(jobs: int, rng: random.Random) -> list[str]:
    """The ``two_waves`` family (module docstring): two bursts of short 1-GPU jobs among long 4- and 8-GPU ones."""
    rates = _rates()
    small = sorted(t for (t, n) in rates if n == 1)
    large = sorted((t, n) for (t, n) in rates if n in (4, 8))
    rows = []
    for k in range(jobs):
        wave = 0.0 if k < jobs // 2 else 75 * 60.0
        if k % 4 == 3:
            job_type, g = rng.choice(large)
            minutes = rng.uniform(30, 60)
        else:
            job_type, g = rng.choice(small), 1
            minutes = math.exp(rng.uniform(math.log(5), math.log(20)))
        arrival = wave + rng.uniform(0, 15 * 60)
        rows.append((arrival, _row(job_type, g, max(1, int(rates[(job_type, g)] * minutes * 60)), arrival)))
    return [row for _, row in sorted(rows)]


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


def main() -> None:
    """Write the families' traces into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--gpus", type=int, default=16)
    parser.add_argument("--load", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    families = {
        "gavel_mix": gavel_mix(args.jobs, args.gpus, args.load, random.Random(args.seed)),
        "philly_shape": philly_shape(args.jobs, random.Random(args.seed)),
        "two_waves": two_waves(args.jobs, random.Random(args.seed)),
        "short_jobs": short_jobs(args.jobs, args.gpus, args.load, random.Random(args.seed)),
    }
    for name, rows in families.items():
        (args.out / f"{name}.trace").write_text("\n".join(rows) + "\n")
        print(f"{args.out / (name + '.trace')}: {len(rows)} jobs")


if __name__ == "__main__":
    main()
