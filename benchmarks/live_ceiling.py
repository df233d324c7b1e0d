"""The most energy any scheduler could save against Slurm alone on the emulated cluster, whatever its JCT.

For each live workload: the dynamic-energy floor ``D`` (the energy floor LP of :mod:`formulations.energy_floor`
through :func:`planner.planning.energy_floor`, on the workload seen with nodes staying on:
:func:`planner.sim.round_instance.nodes_stay_on`, so node and idle power are 0 and each profile's power is its
draw above idle), plus the idle cluster's power ``P0`` (every GPU's idle power and every node's own, W) over a
window ``W``:

    E >= D + P0 W      (kWh; nodes stay powered from the first submission to the last job's end)

for two windows: Slurm alone's measured one (a schedule that ends no sooner than Slurm alone) and the earliest
any schedule can end, ``max_j (a_j + start_s + S_j / X_j^max)`` with ``X_j^max`` the job's fastest profiled
configuration. Prints ``1 - E / E_slurm`` for each, ``E_slurm`` from the family's ``unmanaged.json``.

    python benchmarks/live_ceiling.py benchmarks/results/live/stay-on [--gpus v100:16] [--start-s 30]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wattplan.planner import planning
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import nodes_stay_on, workload_instance
from wattplan.planner.sim.state import JobState

J_PER_KWH = 3.6e6


def main() -> None:
    """Print the ceiling of every family folder under the results folder given."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path, help="Folder with FAMILY/unmanaged.json (live_compare.py --out).")
    p.add_argument("--gpus", default="v100:16")
    p.add_argument("--start-s", type=float, default=30.0, help="A job's first start-up time (s).")
    args = p.parse_args()
    for family in ("gavel_mix", "philly_shape"):
        report = args.results / family / "unmanaged.json"
        if not report.exists():
            continue
        slurm = json.loads(report.read_text())
        spec = ReplaySpec(trace=shipped(f"live/{family}.trace"), cluster=args.gpus, max_jobs=40, rules=RoundRules())
        workload, ctx = prepare(spec)
        seen = nodes_stay_on(ctx.real)
        floor = planning.energy_floor(workload_instance(seen, [JobState.new(s) for s in workload.jobs]))
        if floor.energy_j is None:
            raise SystemExit(f"{family}: the energy floor could not be computed ({floor.note})")
        dynamic_kwh = floor.energy_j / J_PER_KWH
        idle_w = sum(g.nodes * g.powered_node_w for g in ctx.real.gpu_types)
        earliest = max(
            s.arrival_s
            + args.start_s
            + s.total_steps / max(q.steps_per_s for q in ctx.real.profiles_by_type[s.type] if q.gpus in s.allowed_gpus)
            for s in workload.jobs
        )
        print(f"{family}: dynamic floor {dynamic_kwh:.3f} kWh, idle cluster {idle_w:.0f} W")
        for label, window in (("Slurm alone's window", slurm["window"]["end_s"]), ("earliest end", earliest)):
            bound = dynamic_kwh + idle_w * window / J_PER_KWH
            print(
                f"  {label} {window:,.0f} s: at least {bound:.3f} kWh against Slurm alone's "
                f"{slurm['energy_kwh']:.3f}: at most {1 - bound / slurm['energy_kwh']:.1%} less"
            )


if __name__ == "__main__":
    main()
