"""wattplan against the baselines operators would pick, on the simulated Slurm with power saving (issue 44).

Per live workload family (``instances/live/*.trace``: Gavel's mix, Philly's shape, two waves) and cluster
(``v100:16``, the live runs' two nodes; ``v100:32``, four nodes, so that some idle), one ``wattplan simulate`` of
the baselines ``slurm`` (Slurm alone, every node on), ``slurm-powersave`` (Slurm's power saving: a node idle 600 s
is powered down, one given a job boots in 300 s) and ``maxq`` (``slurm-powersave`` with every job at MaxQ's power
limit), and wattplan through the agent on the same power-saving cluster in the runtime-bounded energy mode
(``--power-save --max-jct-increase 3``, HiGHS 2 s per round, time scale 30, the restart cost the simulated Slurm
charges), without and with the tail bound (``--tail-bound 10``). Writes ``OUT/FAMILY-CLUSTER[-tail]/`` (the replays)
and ``OUT/baselines.md``: per run each policy's energy, wattplan's change against ``slurm`` and ``maxq``, its
average and p95 JCT against ``slurm``'s, its requeues, and the floor's share of ``slurm``'s saving it captured.
Reuses a run whose ``comparison.json`` exists.

Usage: ``python benchmarks/baselines_slurm.py --out OUT``.
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
MODE = ["--power-save", "--max-jct-increase", "3", "--solver", "highs", "--time-limit", "2", "--time-scale", "30"]


def replay(family: str, cluster: str, tail: bool, out: Path) -> dict[str, dict[str, Any]]:
    """One family on one cluster: the baselines and wattplan (reused when done); each policy's summary."""
    folder = out / f"{family}-{cluster.replace(':', '')}{'-tail' if tail else ''}"
    if not (folder / "comparison.json").exists():
        trace = ROOT / "instances" / "live" / f"{family}.trace"
        policies = [arg for p in (*BASELINES, "wattplan") for arg in ("-p", p)]
        argv = [
            *WATTPLAN, "simulate", str(trace), "--cluster", cluster, *policies, *MODE,
            *(["--tail-bound", "10"] if tail else []), "--out", str(folder), "--no-plots", "-q",
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
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    head = (
        "| run | slurm kWh | slurm-powersave kWh | maxq kWh | wattplan kWh | floor kWh | vs slurm | vs maxq "
        "| avg JCT x | p95 JCT x | maxq avg JCT x | captured | requeues | done |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    rows = []
    for tail in (False, True):
        for family in FAMILIES:
            for cluster in CLUSTERS:
                name = f"{family} {cluster}{' tail 10' if tail else ''}"
                rows.append(row(name, replay(family, cluster, tail, args.out)))
                print(rows[-1][1], flush=True)
    lines += [r for _, r in sorted(rows, key=lambda r: -r[0])]  # worst (least saving against maxq) first
    (args.out / "baselines.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
