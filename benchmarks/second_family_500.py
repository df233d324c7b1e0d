"""A 500-job round built unlike the solve-scaling rounds, for the 500-job target's second family.

The scaling benchmark's 500-job rounds are the earliest 500 jobs of one Gavel snapshot (6214e9) on
83 V100 + 42 P100 nodes at 30% and 60% of full power. This round merges two other traces'
longest queues (Philly-derived CSV at t = 3,358,824 s, 362 queued, the longest of that trace, and
Gavel 6c71a0 at t = 2,510,861 s, 307 queued), each queue shifted to one common time as the scaling
benchmark merges snapshots, cut to the earliest 500 arrivals, on a V100-only cluster of 480 GPUs at
40% of full power. It is planned with each solver at a 10 s limit through the front door, and the LP
relaxation is solved once more with a 120 s limit as the reference bound.

    .venv/bin/python benchmarks/second_family_500.py [--out benchmarks/results/second_family_500.csv]
"""

from __future__ import annotations

import argparse
import csv
import time
from dataclasses import replace
from pathlib import Path

from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import write_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.files.resources import GAVEL_TRACES, PHILLY_TRACE, profile_library, shipped
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.builder import RoundOptions, build_round
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import read_trace

SNAPSHOTS = (
    (shipped(PHILLY_TRACE), "philly", 3358823.5294117643),
    (shipped(GAVEL_TRACES) / "6c71a0.trace", "6c71a0", 2510861.0),
)
CLUSTER = "v100:480"
BUDGET_FRACTION = 0.4
JOBS = 500


def build() -> Instance:
    """The merged 500-job round (see the module docstring)."""
    lib = load_profile_library(profile_library())
    common = max(at for _, _, at in SNAPSHOTS)
    merged = []
    for path, name, at in SNAPSHOTS:
        for tj in read_trace(path, lib):
            if tj.arrival_s <= at:
                merged.append(replace(tj, id=f"{name}:{tj.id}", arrival_s=tj.arrival_s + common - at))
    opts = RoundOptions(at_s=common, budget_fraction=BUDGET_FRACTION, max_jobs=JOBS)
    return build_round(merged, parse_cluster_spec(CLUSTER), lib, opts, {"benchmark": "second_family_500"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/second_family_500.csv"))
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args()
    inst = build()
    write_instance(inst, args.out.with_suffix(".instance.json"))
    ref = planning.lp_reference(inst, "highs", 120.0)
    lp_ref = ref.bound
    rows = []
    for solver in ("cbc", "highs", "cpsat", "greedy"):
        begin = time.perf_counter()
        r = planning.plan(inst, PlanRequest(solver=solver, time_limit_s=args.time_limit, threads=2)).round
        wall = time.perf_counter() - begin
        to_lp = None if lp_ref is None else (lp_ref - r.progress) / lp_ref
        rows.append(
            {
                "jobs": len(inst.jobs),
                "columns": ref.columns,
                "solver": solver,
                "plan": r.solver,
                "status": r.status,
                "progress": round(r.progress, 6),
                "lp_ref": lp_ref,
                "to_lp": to_lp,
                "wall_s": round(wall, 2),
                "note": "; ".join(r.notes().values()),
            }
        )
        print(rows[-1], flush=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
