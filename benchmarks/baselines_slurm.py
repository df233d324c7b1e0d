"""wattplan against the baselines operators would pick, on the simulated Slurm with power saving (issue 44).

Per live workload family (``instances/live/*.trace``: Gavel's mix, Philly's shape, two waves) and cluster
(``v100:16``, the live runs' two nodes; ``v100:32``, four nodes, so that some idle), one ``wattplan simulate`` of
the baselines ``slurm`` (Slurm alone, every node on), ``slurm-powersave`` (Slurm's power saving: a node idle 600 s
is powered down, one given a job boots in 300 s) and ``maxq`` (``slurm-powersave`` with every job at MaxQ's power
limit), and wattplan through the agent on the same power-saving cluster in the runtime-bounded energy mode
(``--power-save --max-jct-increase 3``, HiGHS 2 s per round, time scale 30, the restart cost the simulated Slurm
charges), without and with the tail bound (``--tail-bound 10``), and with ``--max-slowdown X`` for each ``X`` given
the mode whose JCT is bounded job by job (``--slurm-starts --max-slowdown X --objective energy --delta 0.9``: each
job starts when Slurm would start it, is never stopped to wait and never runs below ``1 / (1 + X/100)`` of its
request's full speed; no governor). Writes ``OUT/FAMILY-CLUSTER[-tail|-sdX]/`` (the replays) and
``OUT/baselines.md``: per run each policy's energy, wattplan's change against ``slurm`` and ``maxq``, its average
and p95 JCT against ``slurm``'s, its requeues, and the floor's share of ``slurm``'s saving it captured. Reuses a run
whose ``comparison.json`` exists. ``--power-down`` runs each by-job variant also with the agent powering idle nodes
down itself (``--power-down``; rows ``... power-down``), ``--pairs`` runs the last by-job variant of each limit also
with co-location (``--pairs``; rows ``... pairs``), ``--power-up`` the last of those also with the agent booting
nodes ahead of a burst (``--power-up``; rows ``... power-up``), ``--no-steered`` skips the steered variants.
``--pinned X[,Y]`` adds the steered mode without restarts (``--pin-running --max-slowdown X``, and ``--power-down`` with
``--power-down``; rows ``pinned X`` and, with ``--pairs``, ``pinned X pairs``); ``--pinned-tail`` each of those
also with the tail bound (``--tail-bound 10``; rows ``pinned X tail``).

Usage: ``python benchmarks/baselines_slurm.py --out OUT [--max-slowdown 5,10] [--power-down [--power-up]] [--pairs]
[--no-steered] [--pinned 10,25 [--pinned-tail]]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

WATTPLAN = [sys.executable, "-m", "wattplan"]
ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("gavel_mix", "philly_shape", "two_waves")
CLUSTERS = ("v100:16", "v100:32")
BASELINES = ("slurm", "slurm-powersave", "maxq")
COMMON = ["--power-save", "--solver", "highs", "--time-limit", "2", "--time-scale", "30"]
STEERED = ["--max-jct-increase", "3"]
"""The runtime-bounded energy mode: the governor steers each round's delta to hold the average JCT within 3%."""


def by_construction(slowdown: str) -> list[str]:
    """The mode whose JCT is bounded job by job: Slurm's starts, no preemption, at most ``slowdown`` % slower."""
    return ["--slurm-starts", "--max-slowdown", slowdown, "--objective", "energy", "--delta", "0.9"]


VARIANTS = {"": STEERED, "tail 10": [*STEERED, "--tail-bound", "10"]}
"""The variants run always, by the suffix of their row's name."""


def replay(family: str, cluster: str, variant: str, mode: list[str], out: Path) -> dict[str, dict[str, Any]]:
    """One family on one cluster: the baselines and wattplan in ``mode`` (reused when done); each policy's summary."""
    suffix = "" if not variant else "-" + variant.replace("tail 10", "tail").replace("slowdown ", "sd")
    suffix = suffix.replace(" power-down", "-pd").replace(" pairs", "-pairs").replace("pinned ", "pin")
    suffix = suffix.replace(" tail", "-tail").replace(" power-up", "-pu")
    folder = out / f"{family}-{cluster.replace(':', '')}{suffix}"
    if not (folder / "comparison.json").exists():
        trace = ROOT / "instances" / "live" / f"{family}.trace"
        policies = [arg for p in (*BASELINES, "wattplan") for arg in ("-p", p)]
        argv = [
            *WATTPLAN, "simulate", str(trace), "--cluster", cluster, *policies, *COMMON, *mode,
            "--out", str(folder), "--no-plots", "-q",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return {p: json.loads((folder / p / "summary.json").read_text()) for p in (*BASELINES, "wattplan")}


def row(name: str, s: dict[str, dict[str, Any]]) -> tuple[float, str]:
    """``(wattplan's change against maxq, the table's row)``."""
    e = {p: s[p]["energy_kwh"] for p in s}
    w, ref = s["wattplan"], s["slurm"]
    vs_slurm, vs_maxq = e["wattplan"] / e["slurm"] - 1, e["wattplan"] / e["maxq"] - 1
    share = w.get("captured_share")
    cells = [
        name,
        *(f"{e[p]:.3f}" for p in (*BASELINES, "wattplan")),
        f"{w['energy_floor_kwh']:.3f}",
        f"{vs_slurm:+.1%}",
        f"{vs_maxq:+.1%}",
        f"{w['avg_jct_s'] / ref['avg_jct_s']:.3f}",
        f"{w['p95_jct_s'] / ref['p95_jct_s']:.3f}",
        f"{s['maxq']['avg_jct_s'] / ref['avg_jct_s']:.3f}",
        "-" if share is None else f"{share:.1%}",
        str(w["requeues"]),
        f"{w['completed']}/{w['jobs']}",
    ]
    return vs_maxq, "| " + " | ".join(cells) + " |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--max-slowdown", default="", help="Comma-separated slowdown limits (%%) of the by-job mode.")
    p.add_argument("--power-down", action="store_true", help="Each by-job variant also with --power-down.")
    p.add_argument("--pairs", action="store_true", help="The last by-job variant of each limit also with --pairs.")
    p.add_argument("--power-up", action="store_true", help="The last --power-down variant also with --power-up.")
    p.add_argument("--no-steered", dest="steered", action="store_false", help="Skip the steered variants.")
    p.add_argument("--pinned", default="", help="Slowdown limits (%%) of the steered mode without restarts.")
    p.add_argument("--pinned-tail", action="store_true", help="Each --pinned variant also with --tail-bound 10.")
    args = p.parse_args()
    if args.power_up and not args.power_down:
        p.error("--power-up is part of the agent's node power rule: give --power-down")
    variants = dict(VARIANTS) if args.steered else {}
    for x in filter(None, args.pinned.split(",")):
        mode = [*STEERED, "--pin-running", "--max-slowdown", x, *(["--power-down"] if args.power_down else [])]
        variants[f"pinned {x}"] = mode
        if args.pairs:
            variants[f"pinned {x} pairs"] = [*mode, "--pairs"]
        if args.pinned_tail:
            variants[f"pinned {x} tail"] = [*mode, "--tail-bound", "10"]
    for x in filter(None, args.max_slowdown.split(",")):
        name, mode = f"slowdown {x}", by_construction(x)
        variants[name] = mode
        if args.power_down:
            name, mode = f"{name} power-down", [*mode, "--power-down"]
            variants[name] = mode
        if args.pairs:
            variants[f"{name} pairs"] = [*mode, "--pairs"]
        if args.power_up:
            last = f"{name} pairs" if args.pairs else name
            variants[f"{last} power-up"] = [*variants[last], "--power-up"]
    args.out.mkdir(parents=True, exist_ok=True)
    head = (
        "| run | slurm kWh | slurm-powersave kWh | maxq kWh | wattplan kWh | floor kWh | vs slurm | vs maxq "
        "| avg JCT x | p95 JCT x | maxq avg JCT x | captured | requeues | done |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    rows = []
    for variant, mode in variants.items():
        for family in FAMILIES:
            for cluster in CLUSTERS:
                name = f"{family} {cluster}{' ' + variant if variant else ''}"
                rows.append(row(name, replay(family, cluster, variant, mode, args.out)))
                print(rows[-1][1], flush=True)
    lines += [r for _, r in sorted(rows, key=lambda r: -r[0])]  # worst (least saving against maxq) first
    (args.out / "baselines.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
