"""Live runs of wattplan against the operators' live baselines, over common windows (issue 44).

Reads the reports ``benchmarks/live_compare.py`` wrote: one managed run (``FOLDER/managed.json``) and the
unmanaged runs of the same trace on the same cluster (``BASELINE=FOLDER/unmanaged.json``: Slurm alone with every
node on, with its power saving, and ``maxq``; a folder with only a ``managed.json`` is another managed run, e.g.
wattplan without ``--power-down``). For each baseline it prints both runs' energy over the same window
(from the first submission to the later last end; the run that ended first draws the idle cluster until its nodes
power down, ``live_compare.common_window``), the managed run's change, its average and p95 JCT against the
baseline's, and the median and p95 start delays (submission to first start, the agent's own latency included).

Usage: ``python benchmarks/live_baselines.py --managed DIR --baseline NAME=DIR [...] [--gpus v100:32]``. A
run that ended first powers its nodes down 660 s later (Slurm's ``SuspendTime`` and the shutdown), a managed one
too although its agent powered them down sooner: between two managed runs the one that ended first is
overcharged, so read each run's own-window energy beside it. A baseline named ``slurm`` has no power saving and
idles to the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_compare import common_window, idle_cluster_w, start_delays  # noqa: E402

SUSPEND_S = 600.0
"""Slurm's idle time before power-down in the live runs (``cluster up --power-save`` default), plus 60 s to off."""


def _load(folder: Path, name: str) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads((folder / name).read_text())
    except FileNotFoundError:
        raise SystemExit(f"{folder}: no {name} (a run of benchmarks/live_compare.py that has ended)") from None
    return doc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--managed", type=Path, required=True, help="Folder of the managed run (managed.json).")
    p.add_argument("--baseline", action="append", required=True, help="NAME=FOLDER of an unmanaged run.")
    p.add_argument("--gpus", default="v100:32")
    p.add_argument("--truth", type=Path)
    args = p.parse_args()
    m = _load(args.managed, "managed.json")
    idle_w = idle_cluster_w(argparse.Namespace(gpus=args.gpus, truth=args.truth))
    delay = start_delays(m)
    print(f"managed {args.managed}: {m['energy_kwh']:.3f} kWh own window (to {m['window']['end_s']:.0f} s), "
          f"avg JCT {m['avg_jct_s']:.0f} s, p95 {m['p95_jct_s']:.0f} s, "
          f"start delay median {delay['median_s']:.0f} s, p95 {delay['p95_s']:.0f} s")  # fmt: skip
    print(
        "| baseline | kWh own | window end s | kWh common (baseline) | kWh common (wattplan) | energy "
        "| avg JCT x | p95 JCT x | start delay median / p95 s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for item in args.baseline:
        name, _, folder = item.partition("=")
        u = _load(Path(folder), "unmanaged.json" if (Path(folder) / "unmanaged.json").exists() else "managed.json")
        idle_for = float("inf") if name == "slurm" else SUSPEND_S + 60.0
        common = common_window(m, u, idle_w, idle_for)
        # the managed run (power saving) idles at most until its nodes power down, whatever the baseline does
        extra_m = min(common["end_s"] - m["window"]["end_s"], SUSPEND_S + 60.0) * idle_w / 3.6e6
        managed_kwh = m["energy_kwh"] + extra_m
        d = start_delays(u)
        print(
            f"| {name} | {u['energy_kwh']:.3f} | {u['window']['end_s']:.0f} | {common['unmanaged_kwh']:.3f} "
            f"| {managed_kwh:.3f} | {managed_kwh / common['unmanaged_kwh'] - 1:+.1%} "
            f"| {m['avg_jct_s'] / u['avg_jct_s']:.3f} | {m['p95_jct_s'] / u['p95_jct_s']:.3f} "
            f"| {d['median_s']:.0f} / {d['p95_s']:.0f} |"
        )


if __name__ == "__main__":
    main()
