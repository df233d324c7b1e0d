"""Demand response on the simulated Slurm: a 30% cut of the cluster's power held for a third of the run (issue 44).

Per live workload family (``instances/live/*.trace``) on ``v100:16``: wattplan through the agent without a cap
(the runtime-bounded energy mode, ``--max-jct-increase 3``, HiGHS 2 s, time scale 30), then the same with a cap that
moves (``--power-cap-schedule``): from a third to two thirds of the uncapped run's window the cap is 70% of the
uncapped run's mean draw over that third, then none. The agent reads the cap from its cap file as it would live
(``--power-cap-file``). Writes ``OUT/FAMILY/{free,cut}/`` and ``OUT/demand_response.md``: how soon the cut was
followed, the mean and highest draw while it held, the seconds above it, and the JCTs and energy against the run
without a cap.

Usage: ``python benchmarks/demand_response.py --out OUT``.
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
MODE = ["--max-jct-increase", "3", "--solver", "highs", "--time-limit", "2", "--time-scale", "30"]
CUT = 0.30


def simulate(trace: Path, out: Path, extra: list[str]) -> dict[str, Any]:
    """One replay of wattplan (reused when done); its summary."""
    if not (out / "comparison.json").exists():
        argv = [*WATTPLAN, "simulate", str(trace), "--cluster", "v100:16", "-p", "wattplan", *MODE, *extra]
        argv += ["--out", str(out), "-q", "--no-plots"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads((out / "wattplan" / "summary.json").read_text())


def middle_third_w(trace: Path) -> tuple[float, float, float]:
    """The uncapped run's window thirds ``(t1, t2)`` (s from the first arrival) and its mean draw between them (W)."""
    from wattplan.planner.control.session import setup_of, with_restart_cost
    from wattplan.planner.control.slurm_replay import replay_on_slurm
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.session import replay_spec

    opts = SimulateOptions.checked({"max_jct_increase": 3.0, "solver": "highs", "time_limit": 2.0, "time_scale": 30.0})
    setup = setup_of(opts)
    spec = with_restart_cost(replay_spec(trace, "v100:16", opts, ["wattplan"]), opts, setup)
    steps = replay_on_slurm(spec, "wattplan", setup).power_steps
    t0, t3 = steps[0][0], steps[-1][1]
    a, b = t0 + (t3 - t0) / 3, t0 + 2 * (t3 - t0) / 3
    energy = sum(w * (min(t1, b) - max(s, a)) for s, t1, w in steps if t1 > a and s < b)
    return a - t0, b - t0, energy / (b - a)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    head = (
        "| family | cap W (from mean W) | followed after s | mean W while cut | max W | s above cap | "
        "energy kWh free / cut | avg JCT s free / cut | p95 JCT s free / cut | done |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for family in FAMILIES:
        trace = ROOT / "instances" / "live" / f"{family}.trace"
        folder = args.out / family
        free = simulate(trace, folder / "free", [])
        t1, t2, mean_w = middle_third_w(trace)
        cap = round((1 - CUT) * mean_w)
        schedule = folder / "cut.csv"
        folder.mkdir(parents=True, exist_ok=True)
        schedule.write_text(f"t_s,power_cap_w\n{t1:.0f},{cap}\n{t2:.0f},none\n")
        cut = simulate(trace, folder / "cut", ["--power-cap-schedule", str(schedule)])
        step = cut["power_cap_steps"][0]
        after = step["followed_after_s"]
        cells = [
            family,
            f"{cap:,} ({mean_w:,.0f})",
            "never" if after is None else f"{after:,.0f}",
            f"{step['mean_w']:,.0f}" if step["mean_w"] is not None else "-",
            f"{step['max_w']:,.0f}" if step["max_w"] is not None else "-",
            f"{step['over_cap_s']:,.0f}",
            f"{free['energy_kwh']:.3f} / {cut['energy_kwh']:.3f}",
            f"{free['avg_jct_s']:,.0f} / {cut['avg_jct_s']:,.0f}",
            f"{free['p95_jct_s']:,.0f} / {cut['p95_jct_s']:,.0f}",
            f"{cut['completed']}/{cut['jobs']}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    (args.out / "demand_response.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
