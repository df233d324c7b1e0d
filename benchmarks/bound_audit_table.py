"""The honest-bounds audit table from `wattplan bench` runs.csv files (benchmarks/bound_audit.sh).

Per family and solver: runs, `optimal` claims, runs the bench counts solved, runs it flags wrong, and
two checks recomputed here from the evaluated objectives (not from the `wrong` column):

* bound excess: the largest `(v_best - bound) / |v_best|` over instances (maximising; the mirror when
  minimising), `v_best` the best evaluated objective of any valid run; positive = a bound below a valid plan;
* optimal shortfall: the largest `(v_best - v) / |v_best|` over the run's `optimal` plans; above the
  requested gap (+1e-6) = an `optimal` that is not;
* own bound: runs whose *own* reported bound puts their plan within the requested gap (`gap <= rel_gap + 1e-6`),
  and the worst own gap: what a user of that solver sees in the plan;
* mean time: the planning call (s).

Runs.csv files of an older wattplan (no `wrong`, `valid` columns) are read too: no run of theirs is wrong or invalid.

Usage: python benchmarks/bound_audit_table.py RUNS.csv [RUNS.csv ...]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import pandas as pd

TOL = 1e-6


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def audit(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per solver with the counts and the two recomputed checks (module docstring)."""
    rows: dict[str, dict[str, float]] = defaultdict(
        lambda: {
            "runs": 0,
            "optimal": 0,
            "solved": 0,
            "wrong": 0,
            "bound_excess": -math.inf,
            "optimal_shortfall": -math.inf,
            "gap_ref_max": 0.0,
            "own_within": 0,
            "own_gap_max": 0.0,
            "time_sum": 0.0,
        }
    )
    frame = frame.copy()
    for column in ("wrong", "valid"):
        if column not in frame:
            frame[column] = ""
    for _, inst in frame.groupby("instance_sha256"):
        maximize = inst["sense"].iloc[0] == "max"
        valid = inst[(inst["valid"].astype(str) != "False") & inst["objective"].notna()]
        values = [v for v in (_num(x) for x in valid["objective"]) if v is not None]
        best = (max(values) if maximize else min(values)) if values else None
        for _, r in inst.iterrows():
            row = rows[str(r["solver"])]
            row["runs"] += 1
            row["optimal"] += r["status"] == "optimal"
            row["wrong"] += isinstance(r["wrong"], str) and bool(r["wrong"].strip())
            gap_ref, gap = _num(r["gap_ref"]), _num(r["rel_gap"]) or 0.0
            wrong = isinstance(r["wrong"], str) and bool(r["wrong"].strip())
            row["solved"] += (not wrong) and (
                r["status"] == "optimal" or (gap_ref is not None and gap_ref <= gap + TOL)
            )
            if gap_ref is not None:
                row["gap_ref_max"] = max(row["gap_ref_max"], gap_ref)
            own = _num(r["gap"])
            row["own_within"] += own is not None and own <= gap + TOL
            row["own_gap_max"] = max(row["own_gap_max"], 1.0 if own is None else own)
            row["time_sum"] += _num(r["time_s"]) or 0.0
            if best is None:
                continue
            scale = max(abs(best), 1e-12)
            for name in ("bound", "lp_bound"):
                b = _num(r[name])
                if b is not None:
                    excess = (best - b) if maximize else (b - best)
                    row["bound_excess"] = max(row["bound_excess"], excess / scale)
            v = _num(r["objective"])
            if r["status"] == "optimal" and v is not None:
                short = (best - v) if maximize else (v - best)
                row["optimal_shortfall"] = max(row["optimal_shortfall"], short / scale)
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "solver"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    frames = []
    for path in args.runs:
        frame = pd.read_csv(path)
        frame["family"] = path.parent.name
        frames.append(frame)
    everything = pd.concat(frames, ignore_index=True)
    for family, frame in [*everything.groupby("family"), ("all", everything)]:
        table = audit(frame)
        print(f"\n### {family}: {frame['instance_sha256'].nunique()} rounds\n")
        print("| solver | runs | optimal | solved | wrong | worst bound excess | worst optimal shortfall |", end="")
        print(" max gap_ref | own bound within gap | worst own gap | mean time (s) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for solver, r in table.iterrows():
            be = "none" if r["bound_excess"] == -math.inf else f"{r['bound_excess']:.2e}"
            os_ = "none" if r["optimal_shortfall"] == -math.inf else f"{r['optimal_shortfall']:.2e}"
            print(
                f"| {solver} | {int(r['runs'])} | {int(r['optimal'])} | {int(r['solved'])} | {int(r['wrong'])} "
                f"| {be} | {os_} | {r['gap_ref_max']:.2e} | {int(r['own_within'])} | {r['own_gap_max']:.2e} "
                f"| {r['time_sum'] / r['runs']:.1f} |"
            )


if __name__ == "__main__":
    main()
