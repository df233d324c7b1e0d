"""Heavier replay slices: days of arrivals, multi-GPU jobs, offered load above 1.

The 150-job slices of ``benchmarks/slices.py`` are three-hour bursts of 1-GPU jobs. This script
picks, by one rule that looks only at the trace (never at a policy's result), windows where
queues form and jobs use several GPUs:

* a window is ``H`` hours of arrivals (default 48) starting at a job's arrival (the first of the
  jobs sharing that arrival time, so ``--start-s S --end-s S+H*3600`` reproduces it);
* its **offered load** on a cluster of ``G`` GPUs is ``rho = sum_j n_j d_j / (G H)`` with ``n_j`` the
  requested GPU count and ``d_j`` the job alone at that count on the fastest GPU at its top
  setting (:attr:`~planner.sim.state.JobSpec.reference_duration_s`);
* eligible windows have ``rho >= 1``, at least 30% of their jobs on 2 or more GPUs, at least 20
  jobs, and no job longer than the window itself (``max_j d_j <= H``; a longer job would make the
  replay mostly one job's tail);
* among them, the window whose ``rho`` is closest to the target (default 1.2) is the slice.

Sources: every shipped Gavel trace and every Philly virtual cluster (job types drawn with seed
0, as ``wattplan instance from-trace`` draws them). On ``v100:32,p100:16`` three windows qualify:
Gavel ``ee9e8c`` and the Philly virtual clusters ``2869ce`` and ``ee9e8c``; the replays use the
first two (two families built differently: Gavel's own job types and step counts, and Philly
durations mapped onto profiled types).

    PYTHONPATH=. .venv/bin/python benchmarks/heavy_slices.py            # prints the windows and the commands
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.files.resources import GAVEL_TRACES, PHILLY_TRACE, shipped
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import read_trace
from wattplan.planner.sim.state import JobSpec
from wattplan.planner.sim.workload import build_workload, select_jobs


@dataclass(frozen=True)
class HeavyWindow:
    """One eligible window: where it starts and what it offers (loads on the cluster's GPUs)."""

    start_s: float
    jobs: int
    offered_load: float
    multi_gpu_share: float
    longest_job_h: float


def windows(specs: Sequence[JobSpec], gpus: int, hours: float, min_multi: float = 0.3) -> list[HeavyWindow]:
    """Every eligible window of ``specs`` (sorted by arrival) under the module's rule."""
    span = hours * 3600.0
    out = []
    for i, first in enumerate(specs):
        if i > 0 and specs[i - 1].arrival_s == first.arrival_s:
            continue  # a window starts at the first job of its arrival time
        inside = [j for j in specs[i:] if j.arrival_s < first.arrival_s + span]
        if len(inside) < 20:
            continue
        longest = max(j.reference_duration_s for j in inside)
        load = sum(j.requested_gpus * j.reference_duration_s for j in inside) / (gpus * span)
        multi = sum(j.requested_gpus > 1 for j in inside) / len(inside)
        if longest <= span and load >= 1.0 and multi >= min_multi:
            out.append(HeavyWindow(first.arrival_s, len(inside), load, multi, longest / 3600.0))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="v100:32,p100:16")
    ap.add_argument("--hours", type=float, default=48.0, help="window of arrivals (h)")
    ap.add_argument("--target-load", type=float, default=1.2)
    args = ap.parse_args(argv)
    lib = load_profile_library()
    cluster = parse_cluster_spec(args.cluster)
    types = tuple(name for name, _ in cluster.gpus)
    gpus = sum(n for _, n in cluster.gpus)
    gavel = sorted(shipped(GAVEL_TRACES).glob("*.trace"))
    sources: list[tuple[str, Path, str | None]] = [(p.stem, p, None) for p in gavel]
    philly = shipped(PHILLY_TRACE)
    vcs = sorted({line.rsplit(",", 1)[-1].strip() for line in philly.read_text().splitlines()[1:] if line})
    sources += [(f"philly-{vc}", philly, vc) for vc in vcs]
    print("| source | start s | jobs | offered load | multi-GPU jobs | longest job h |\n|---|---|---|---|---|---|")
    for name, path, vc in sources:
        trace = read_trace(path, lib, seed=0, virtual_cluster=vc)
        specs = list(build_workload(select_jobs(trace), lib, types).jobs)
        found = windows(specs, gpus, args.hours)
        if not found:
            continue
        w = min(found, key=lambda h: abs(h.offered_load - args.target_load))
        print(
            f"| {name} | {w.start_s:.0f} | {w.jobs} | {w.offered_load:.2f} | {w.multi_gpu_share:.0%} | "
            f"{w.longest_job_h:.1f} |"
        )
        vc_opt = f" --vc {vc}" if vc else ""
        trace_name = path.name
        print(
            f"<!-- wattplan frontier {trace_name}{vc_opt} --cluster {args.cluster} --start-s {w.start_s:.0f} "
            f"--end-s {w.start_s + args.hours * 3600:.0f} -->"
        )


if __name__ == "__main__":
    main()
