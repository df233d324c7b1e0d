"""The scaling table of `benchmarks/scale_families.sh` from the `wattplan bench` folders it wrote.

    .venv/bin/python benchmarks/scale_table.py OUT_DIR

One row per family, size and solver: the plan's status, the planning call's time (reading the instance
included) and the worker's wall time, the gap to the plan's own bound and to the best bound any solver proved
on that instance (``gap_ref``), and the worker's peak memory. Then the worst ``gap_ref`` and time per size over
all families and solvers, the figure the aims are judged by.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path


def _f(x: str, digits: int = 2, pct: bool = False) -> str:
    if x in ("", None):
        return "-"
    v = float(x)
    return f"{100 * v:.{digits}f}%" if pct else f"{v:.{digits}f}"


def main() -> None:
    root = Path(sys.argv[1])
    rows = []
    for runs in sorted(root.glob("*/runs.csv")):
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


if __name__ == "__main__":
    main()
