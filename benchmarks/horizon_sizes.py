"""Sizes (jobs x H) at which one horizon round still meets its time limit (docs/design.md §5.14).

Rounds of N jobs come from the shipped Gavel traces (:mod:`planner.bench.round_families`, as
``benchmarks/solve_scaling.py`` builds them, budget 0.6 x full power x T, or none with ``--no-budget``). Each is
planned through the front door with the replay's request (:data:`planner.contracts.request.REPLAY_REQUEST`: CBC,
one thread, no LP bound) and ``--objective`` (default ``efficiency``, delta 0.03), for every H. Per (N, H) it
prints one line: the horizon model's columns and rows, the call's wall time (s), the plan's status and solver, and
whether the horizon model gave the plan (``horizon``) or the one-round model planned the round (``one-round
fallback``), each stage's status and the objective note (e.g. the target stage ran out of time and the start plan
was kept).

    PYTHONPATH=. .venv/bin/python benchmarks/horizon_sizes.py --sizes 50,100,200 --horizons 1,2,3,4 --time-limit 3
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

from wattplan.planner.bench.round_families import TracePool, make_round
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.planning import Planner, horizon_model_size, is_one_round_fallback
from wattplan.planner.profile_library.library import load_profile_library


def main() -> None:
    """Measure and print one line per (N, H)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,100,200", help="Jobs per round, comma-separated.")
    ap.add_argument("--horizons", default="1,2,3,4", help="H values, comma-separated.")
    ap.add_argument("--time-limit", type=float, default=3.0, help="Seconds per round (the replay's limit).")
    ap.add_argument("--solver", default=REPLAY_REQUEST.solver, help="Backend (default the replay's).")
    ap.add_argument("--objective", default="efficiency", help="progress, energy or efficiency.")
    ap.add_argument("--no-budget", action="store_true", help="Rounds without an energy budget (as in the replays).")
    args = ap.parse_args()
    pool = TracePool(load_profile_library())
    print(f"load average {os.getloadavg()[0]:.2f}; solver {args.solver}; limit {args.time_limit:g} s")
    print("jobs  H  columns   rows   wall_s  status    solved  solver")
    for n in (int(s) for s in args.sizes.split(",")):
        inst, _, _ = make_round(pool, n, 0.6)
        if args.no_budget:
            inst = dataclasses.replace(inst, round=dataclasses.replace(inst.round, budget_j=None))
        for h in (int(s) for s in args.horizons.split(",")):
            req = dataclasses.replace(
                REPLAY_REQUEST, solver=args.solver, time_limit_s=args.time_limit, objective=args.objective, horizon=h
            )
            columns, rows = horizon_model_size(inst, h)
            begin = time.perf_counter()
            plan = Planner(req).plan(inst, started_at=begin)
            wall = time.perf_counter() - begin
            r = plan.round
            stages = ",".join(f"{st.status}" for st in r.report.stages)
            solved = "one-round fallback" if is_one_round_fallback(plan) else "horizon"
            print(
                f"{len(inst.jobs):4d} {h:2d} {columns:8d} {rows:6d} {wall:8.2f}  {r.status:9s} "
                f"{solved:7s} {r.solver}  stages: {stages}  {r.notes().get('objective_note', '')[:60]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
