"""The steering levers on the one scheduler: the tail bound and the carbon signal through the agent's loop.

Per family (the three 40-job live families of ``instances/live``, built three different ways), one
``wattplan simulate`` per variant on 16 V100 at the live runs' settings (round 360 s, restart
240 s, HiGHS 2 s per round, the JCT bound 3%, time scale 30, checkpoint load 30 s), the carbon signal of CISO 2022
from its first hour (``--carbon CISO_2022.csv``, so every variant reports kgCO2):

* ``slurm``: Slurm alone;
* ``projected`` and ``accrued``: wattplan in the runtime-bounded energy mode with each rule of the JCT governor
  (``--governor``), signal not followed (``--no-signal-aware``);
* ``tail``: the accrued rule with the tail bound (``--tail-bound 10``);
* ``carbon``: the accrued rule with the signal followed (the default ``--signal-aware``).

Writes ``OUT/FAMILY/VARIANT/`` (the replay) and ``OUT/steering.md``: per family and variant the energy, kgCO2,
average and p95 JCT against Slurm alone's, requeues. Reuses a variant whose ``comparison.json`` exists.

Usage: ``python benchmarks/steering_slurm.py --out OUT [--families a,b]``.
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
COMMON = [
    *("--cluster", "v100:16", "--round-s", "360", "--restart-s", "240"),
    *("--solver", "highs", "--time-limit", "2", "--time-scale", "30", "--load-s", "30", "--carbon", "CISO_2022.csv"),
]
"""The live runs' settings (benchmarks/RESULTS.md, issue 43's fidelity table) and the signal every variant reports."""
MODE = ["--max-jct-increase", "3"]
VARIANTS: dict[str, list[str]] = {
    "slurm": ["-p", "slurm"],
    "projected": ["-p", "wattplan", *MODE, "--no-signal-aware", "--governor", "projected"],
    "accrued": ["-p", "wattplan", *MODE, "--no-signal-aware", "--governor", "accrued"],
    "tail": ["-p", "wattplan", *MODE, "--no-signal-aware", "--governor", "accrued", "--tail-bound", "10"],
    "carbon": ["-p", "wattplan", *MODE, "--governor", "accrued"],
}
"""Each variant's policy and steering options."""


def replay(family: str, variant: str, out: Path) -> dict[str, Any]:
    """One variant's replay of one family (reused when done); its summary."""
    folder = out / family / variant
    if not (folder / "comparison.json").exists():
        trace = ROOT / "instances" / "live" / f"{family}.trace"
        argv = [*WATTPLAN, "simulate", str(trace), *COMMON, *VARIANTS[variant], "--out", str(folder)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    policy = "slurm" if variant == "slurm" else "wattplan"
    summary: dict[str, Any] = json.loads((folder / policy / "summary.json").read_text())
    return summary


def row(family: str, variant: str, s: dict[str, Any], alone: dict[str, Any]) -> str:
    """One table row against Slurm alone."""
    return (
        f"| {family} | {variant} | {s['energy_kwh']:.2f} | {s['energy_kwh'] / alone['energy_kwh'] - 1:+.1%} | "
        f"{s['carbon_kg']:.2f} | {s['carbon_kg'] / alone['carbon_kg'] - 1:+.1%} | "
        f"{s['avg_jct_s'] / alone['avg_jct_s']:.2f} | {s['p95_jct_s'] / alone['p95_jct_s']:.2f} | {s['requeues']} |"
    )


def main() -> None:
    """Replay every family and variant; write and print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--families", help="Comma-separated families (default: all three).")
    p.add_argument("--variants", help=f"Comma-separated variants (default: all of {', '.join(VARIANTS)}).")
    args = p.parse_args()
    chosen = [f for f in FAMILIES if args.families is None or f in args.families.split(",")]
    lines = [
        "| family | variant | kWh | vs Slurm alone | kgCO2 | vs Slurm alone | avg JCT x | p95 JCT x | requeues |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for family in chosen:
        alone = replay(family, "slurm", args.out)
        for variant in [v for v in VARIANTS if args.variants is None or v in args.variants.split(",")]:
            lines.append(row(family, variant, replay(family, variant, args.out), alone))
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "steering.md").write_text("\n".join(lines) + "\n")
            print(lines[-1], flush=True)


if __name__ == "__main__":
    main()
