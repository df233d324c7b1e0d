"""Energy floor of replay workloads: the LP's value and wall time from 150 to 10,000+ jobs.

The four 150-job slices of ``benchmarks/slices.py`` (Gavel traces and Philly 6214e9, the slice
rule of that script), then two families of large workloads built differently: the first N jobs
by arrival of the Philly CSV (every virtual cluster; job types drawn with seed 0 from Gavel's
types, GPU counts from Philly) and of all 15 Gavel traces merged (Gavel's own job types, steps
and counts), N = 1,000, 10,000 and 50,000 where the source has that many. Cluster
``v100:32,p100:16``. Wall time covers building the floor instance, the LP and its certificate
(the LP runs in a forked child).

    .venv/bin/python benchmarks/energy_floor.py
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.files.resources import resolve_trace, shipped_traces
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.rounds.traces import TraceJob, read_trace
from wattplan.planner.sim.replay import ReplaySpec, prepare, workload_floor
from wattplan.planner.sim.workload import build_workload, select_jobs

SLICES = (
    ("Gavel 6214e9", "6214e9.trace", None, 4180536),
    ("Gavel 6c71a0", "6c71a0.trace", None, 2510560),
    ("Gavel b436b2", "b436b2.trace", None, 2716761),
    ("Philly 6214e9", "philly.csv", "6214e9", 2320523),
)


def _kwh(f: EnergyFloor) -> str:
    return "not solved" if f.energy_kwh is None else f"{f.energy_kwh:.2f}"


def _share(f: EnergyFloor) -> str:
    return "-" if f.paired_step_share is None else f"{f.paired_step_share:.1%}"


def merged_gavel(lib: ProfileLibrary) -> list[TraceJob]:
    """Every job of every shipped Gavel trace, ids prefixed by the trace (15,264 jobs, own arrival clocks)."""
    jobs = []
    for _, path in sorted(shipped_traces().items()):
        if path.suffix == ".trace":
            jobs += [replace(j, id=f"{path.stem}/{j.id}") for j in read_trace(path, lib, seed=0)]
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cluster", default="v100:32,p100:16")
    args = ap.parse_args()
    lib = load_profile_library()
    print("| workload | jobs | classes | LP columns | floor kWh | paired steps | wall s | method |")
    print("|---|---|---|---|---|---|---|---|")
    for name, trace, vc, start in SLICES:
        spec = ReplaySpec(
            trace=resolve_trace(Path(trace)), cluster=args.cluster, virtual_cluster=vc, start_s=start, max_jobs=150
        )
        wl, ctx = prepare(spec, lib)
        begin = time.perf_counter()
        f = workload_floor(wl, ctx)
        wall = time.perf_counter() - begin
        row = f"| {name} slice | {len(wl.jobs)} | {f.classes} | {f.columns} | {_kwh(f)} | {_share(f)}"
        print(f"{row} | {wall:.2f} | {f.note} |")
    base = ReplaySpec(trace=resolve_trace(Path("philly.csv")), cluster=args.cluster, max_jobs=10)
    _, ctx = prepare(base, lib)
    families = {
        "Philly, all VCs": read_trace(resolve_trace(Path("philly.csv")), lib, seed=0),
        "Gavel, 15 traces merged": merged_gavel(lib),
    }
    for name, jobs in families.items():
        for n in (1_000, 10_000, 50_000):
            if n > len(jobs):
                continue
            chosen = select_jobs(jobs, max_jobs=n)
            wl = build_workload(chosen, lib, ctx.type_names)
            begin = time.perf_counter()
            f = workload_floor(wl, ctx)
            wall = time.perf_counter() - begin
            row = (
                f"| {name}, first {len(chosen)} | {len(wl.jobs)} | {f.classes} | {f.columns} | {_kwh(f)} | {_share(f)}"
            )
            print(f"{row} | {wall:.2f} | {f.note} |")


if __name__ == "__main__":
    main()
