"""Where a replay's energy above the floor goes, from its ``rounds.csv`` (one policy's folder).

Per replay, summed over rounds:

* shared share: ``sum shared / sum running`` (job-rounds that ran in a pair);
* powered idle GPUs: ``sum (powered_gpu_s - busy_gpu_s)`` (GPU-h), priced at ``Pidle + Pnode / K``
  (W; defaults 34 W + 200 W / 8, the shipped V100 idle power and node share) as an estimate of
  their energy (kWh);
* restarts: ``sum restarted`` and ``restarted x restart_s x W_gpu`` (kWh), with ``W_gpu`` the
  replay's mean drawn power per busy GPU, ``sum energy_j / sum busy_gpu_s``: a restarting job holds
  its GPU for ``restart_s`` seconds without doing steps;
* rounds whose plan kept the start of the energy stage (``note`` says "kept the start plan").

    PYTHONPATH=. .venv/bin/python benchmarks/energy_gap.py RUN_DIR [RUN_DIR ...] [--restart-s 30]
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from pathlib import Path

from planner.contracts.defaults import GPUS_PER_NODE, NODE_POWER_W, RESTART_S

IDLE_W = 34.0
"""The shipped library's V100 idle power (W)."""


def gap_lines(run: Path, restart_s: float, idle_w: float) -> list[str]:
    """The figures of the module docstring for the replay in ``run`` (a folder with ``rounds.csv``)."""
    rows = list(csv.DictReader((run / "rounds.csv").open()))

    def total(column: str) -> float:
        return sum(float(r[column]) for r in rows)

    idle_gpu_h = (total("powered_gpu_s") - total("busy_gpu_s")) / 3600.0
    per_gpu_w = total("energy_j") / total("busy_gpu_s")
    kept = sum("kept the start plan" in r["note"] for r in rows)
    return [
        f"{run}: {len(rows)} rounds, {total('energy_j') / 3.6e6:.2f} kWh",
        f"  shared job-rounds {total('shared'):.0f} of {total('running'):.0f} "
        f"({total('shared') / total('running'):.0%})",
        f"  powered idle GPUs {idle_gpu_h:.1f} GPU-h, about "
        f"{idle_gpu_h * (idle_w + NODE_POWER_W / GPUS_PER_NODE) / 1000:.2f} kWh",
        f"  restarts {total('restarted'):.0f}, about {total('restarted') * restart_s * per_gpu_w / 3.6e6:.2f} kWh "
        f"at {per_gpu_w:.0f} W per busy GPU",
        f"  rounds that kept the start plan: {kept}",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="replay folders holding rounds.csv")
    ap.add_argument("--restart-s", type=float, default=RESTART_S)
    ap.add_argument("--idle-w", type=float, default=IDLE_W)
    args = ap.parse_args(argv)
    for run in args.runs:
        print("\n".join(gap_lines(run, args.restart_s, args.idle_w)))


if __name__ == "__main__":
    main()
