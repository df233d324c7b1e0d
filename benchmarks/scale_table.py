"""The scaling table of `benchmarks/scale_families.sh` from the `wattplan bench` folders it wrote.

    .venv/bin/python benchmarks/scale_table.py OUT_DIR

One row per family, size and solver: the plan's status, the planning call's time (reading the instance
included) and the worker's wall time, the gap to the plan's own bound and to the best bound any solver proved
on that instance (``gap_ref``), and the worker's peak memory. Then the worst ``gap_ref`` and time per size over
all families and solvers, the figure the aims are judged by. Last, per solver over the runs below the core's
size limit given by ``--solver-sizes`` (default 100-1,000 jobs, where the backends differ): runs within 1e-4
of the LP bound, mean and worst gap to it (a run without a plan counts 1), and the shifted geometric mean of
time (shift 1 s, runs not solved to 1e-4 at the limit).

    .venv/bin/python benchmarks/scale_table.py OUT_DIR [OTHER_OUT_DIR ...]
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path


def _f(x: str, digits: int = 2, pct: bool = False) -> str:
    if x in ("", None):
        return "-"
    v = float(x)
    return f"{100 * v:.{digits}f}%" if pct else f"{v:.{digits}f}"


SOLVER_SIZES = (100, 500, 1000)


def _lp_gap(r: dict[str, str]) -> float:
    """``(LP bound - objective) / LP bound`` of a maximised run (1 without a plan)."""
    ref, obj = r["lp_bound"] or r["bound"], r["objective"]
    if r["status"] not in ("optimal", "feasible", "fallback") or not ref or not obj:
        return 1.0
    return max(0.0, (float(ref) - float(obj)) / float(ref))


def solver_table(rows: list[dict[str, str]]) -> None:
    """Per solver over the runs of :data:`SOLVER_SIZES` jobs (module docstring)."""
    by_solver: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if int(r["jobs"]) in SOLVER_SIZES:
            gap = _lp_gap(r)
            by_solver[r["solver"]].append((gap, float(r["time_s"]) if gap <= 1e-4 else float(r["time_limit_s"])))
    print()
    print("| solver | runs | within 1e-4 of the LP bound | mean gap | worst gap | sgm time (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for solver, v in sorted(by_solver.items()):
        sgm = math.exp(sum(math.log(t + 1) for _, t in v) / len(v)) - 1
        solved = sum(1 for g, _ in v if g <= 1e-4)
        mean = 100 * sum(g for g, _ in v) / len(v)
        print(f"| {solver} | {len(v)} | {solved} | {mean:.3f}% | {100 * max(g for g, _ in v):.3f}% | {sgm:.2f} |")


def main() -> None:
    rows = []
    for runs in sorted(p for root in sys.argv[1:] for p in Path(root).glob("*/runs.csv")):
        family = runs.parent.name.rsplit("-", 1)[0]
        with open(runs, newline="") as fh:
            for row in csv.DictReader(fh):
                row["family"] = family
                rows.append(row)
    rows.sort(key=lambda r: (r["family"], int(r["jobs"] or r.get("size") or 0), r["solver"]))
    print("| family | jobs | solver | limit (s) | status | time (s) | wall (s) | gap | gap to best bound | peak MB |")
    print("|---|---:|---|---:|---|---:|---:|---:|---:|---:|")
    worst: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    for r in rows:
        print(
            f"| {r['family']} | {r['jobs']} | {r['solver']} | {_f(r['time_limit_s'], 0)} | {r['status']} "
            f"| {_f(r['time_s'])} | {_f(r['wall_s'])} | {_f(r['gap'], 3, True)} | {_f(r['gap_ref'], 3, True)} "
            f"| {_f(r['peak_mb'], 0)} |"
        )
        gap = float(r["gap_ref"]) if r["gap_ref"] else 1.0
        worst[int(r["jobs"])].append((gap, float(r["time_s"] or "nan"), float(r["time_limit_s"])))
    print()
    print("| jobs | worst gap to best bound | slowest call (s) | limit (s) |")
    print("|---:|---:|---:|---:|")
    for jobs in sorted(worst):
        print(
            f"| {jobs} | {100 * max(g for g, _, _ in worst[jobs]):.3f}% | {max(t for _, t, _ in worst[jobs]):.2f} "
            f"| {max(lim for _, _, lim in worst[jobs]):.0f} |"
        )
    solver_table(rows)


if __name__ == "__main__":
    main()
