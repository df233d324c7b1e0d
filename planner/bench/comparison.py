"""Solvers side by side, as Mittelmann's and MIPLIB's tables show them: pure functions on run rows, no solver.

Rows are :func:`planner.bench.summary.with_references`'s (one per run). A *problem* is an instance and a
seed; the *exact solvers* are every solver but the heuristics (:data:`planner.bench.summary.HEURISTICS`:
``greedy`` proves nothing and returns at once, so it is not timed against solvers that stop at a proof).

* outcome of a run (:func:`outcome`): ``wrong`` (the wrong-result check flags it), ``solved``
  (:func:`planner.bench.summary.solved`), a failure status (``timeout``, ``hang``, ``crash``, ``oom``,
  ``error``), else ``unsolved`` (a plan, but not within the gap of ``b*`` and no proof).
* virtual best (:func:`virtual_best`): per problem, the smallest charged time (s) among the exact solvers
  that solved it, and which solver; the time limit when none did.
* wins (:func:`wins`): per exact solver, the problems it solved in the virtual best's time (ties: each).
* confidence interval over seeds (:func:`seed_interval`): ``m_k`` the shifted geometric mean of the charged
  times of seed ``k`` over the instances; the interval is Student's ``mean(m) +- t_{0.975, K-1} sd(m) /
  sqrt(K)``, ``sd`` the sample standard deviation over the ``K`` seeds (none for ``K < 2``).
* heuristics (:func:`heuristic_summary`): their quality, ``gamma(v, v*)`` to the best valid value known
  ``v*``, and their own planning time (s), not charged the limit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from wattplan.planner.bench.summary import (
    FAILURES,
    SHIFT_S,
    charged_time,
    is_heuristic,
    references,
    relative_gap,
    shifted_geometric_mean,
    solved,
    solver_summary,
)

Row = dict[str, Any]
VIRTUAL_BEST = "virtual best"
"""The name of the virtual best solver's column and summary row."""
NODE_SHIFT = 100.0
"""Shift of the shifted geometric mean of node and iteration counts (Achterberg's, for nodes)."""
EFFORT_KEYS = ("nodes", "lp_iterations", "branches", "conflicts")
"""The search effort a run records (``runs.csv``), blank where the solver does not tell it."""
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
"""Student's t quantile ``t_{0.975, df}`` for ``df = 1 .. 30`` (two-sided 95%)."""
Z_975 = 1.959964
"""The standard normal's 0.975 quantile."""


def t_quantile_975(df: int) -> float:
    """``t_{0.975, df}``: the table for ``df <= 30``, else the Cornish-Fisher expansion in ``1/df`` (error < 1e-4)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def outcome(row: Row) -> str:
    """``wrong``, ``solved``, the failure status, or ``unsolved`` (module docstring)."""
    if row.get("wrong"):
        return "wrong"
    if solved(row):
        return "solved"
    if row["status"] in FAILURES:
        return str(row["status"])
    return "unsolved"


def _problem(row: Row) -> tuple[str, int]:
    return str(row["instance_sha256"]), int(row["seed"])


def virtual_best(rows: Sequence[Row]) -> dict[tuple[str, int], tuple[float, str]]:
    """Per problem ``(instance_sha256, seed)``: ``(time s, solver)`` of the fastest exact solver that solved it.

    Unsolved by every exact solver: ``(the limit, "")``. Ties go to the solver first seen.
    """
    best: dict[tuple[str, int], tuple[float, str]] = {}
    for r in rows:
        if is_heuristic(r["solver"]):
            continue
        p = _problem(r)
        if p not in best:
            best[p] = (float(r["time_limit_s"]), "")
        if solved(r):
            t = charged_time(r)
            if not best[p][1] or t < best[p][0]:
                best[p] = (t, str(r["solver"]))
    return best


def wins(rows: Sequence[Row]) -> dict[str, int]:
    """Per exact solver (first-seen order): the problems it solved in the virtual best's time (ties count for each)."""
    vb = virtual_best(rows)
    out: dict[str, int] = {}
    for r in rows:
        if is_heuristic(r["solver"]):
            continue
        out.setdefault(str(r["solver"]), 0)
        t, who = vb[_problem(r)]
        if who and solved(r) and charged_time(r) <= t:
            out[str(r["solver"])] += 1
    return out


def virtual_best_summary(rows: Sequence[Row]) -> Row | None:
    """The virtual best's summary row: problems, how many any exact solver solved, the sgm of its times (s)."""
    vb = virtual_best(rows)
    if not vb:
        return None
    times = [t for t, _ in vb.values()]
    return {
        "solver": VIRTUAL_BEST,
        "kind": "virtual",
        "runs": len(vb),
        "solved": sum(bool(who) for _, who in vb.values()),
        "sgm_time_s": shifted_geometric_mean(times),
    }


def mean_interval(values: Sequence[float]) -> tuple[float, float, float] | None:
    """``(mean, low, high)``: Student's two-sided 95% interval of the mean of ``values``; None for fewer than 2."""
    k = len(values)
    if k < 2:
        return None
    mean = sum(values) / k
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    half = t_quantile_975(k - 1) * sd / math.sqrt(k)
    return mean, mean - half, mean + half


def seed_interval(rows: Sequence[Row]) -> dict[str, tuple[float, float, float] | None]:
    """Per solver: :func:`mean_interval` of its per-seed sgm of charged times over the instances (s).

    Seeds whose runs do not cover the same instances are still each one sample (a missing run is not
    charged); None for a solver with one seed.
    """
    by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[str(r["solver"])][int(r["seed"])].append(charged_time(r))
    out: dict[str, tuple[float, float, float] | None] = {}
    for solver, seeds in by.items():
        per_seed = [shifted_geometric_mean(times, SHIFT_S) for _, times in sorted(seeds.items())]
        out[solver] = mean_interval([m for m in per_seed if m is not None])
    return out


def bench_summary(rows: Sequence[Row]) -> list[Row]:
    """``summary.csv``'s rows: every solver's, then the virtual best's (:func:`virtual_best_summary`).

    A solver's row is :func:`planner.bench.summary.solver_summary`'s with ``wins`` and the seeds' interval
    ``sgm_ci_low``, ``sgm_ci_high`` (:func:`seed_interval`; exact solvers only).
    """
    won = wins(rows)
    interval = seed_interval(rows)
    out = []
    for s in solver_summary(rows):
        ci = None if s["kind"] == "heuristic" else interval.get(s["solver"])
        out.append(
            {
                **s,
                "wins": won.get(s["solver"]),
                "sgm_ci_low": None if ci is None else ci[1],
                "sgm_ci_high": None if ci is None else ci[2],
            }
        )
    vb = virtual_best_summary(rows)
    return out if vb is None else [*out, vb]


def heuristic_summary(rows: Sequence[Row]) -> list[Row]:
    """One row per heuristic: runs, plans valid, quality ``gamma(v, v*)`` (mean and worst), own time (s).

    ``mean_gap_best`` and ``max_gap_best``: over runs with a valid plan; a run without one counts in
    ``runs`` only. ``sgm_time_s``: sgm (shift 1 s) of its own planning time, ``max_time_s`` the largest.
    ``within_gap``: runs solved in MIPLIB's sense (within ``rel_gap`` of ``b*``).
    """
    refs = references(rows)
    by: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if is_heuristic(r["solver"]):
            by[str(r["solver"])].append(r)
    out = []
    for name, runs in by.items():
        gaps = [
            g
            for r in runs
            if r.get("objective") is not None and r.get("valid") is not False and not r.get("wrong")
            for g in [relative_gap(float(r["objective"]), refs[r["instance_sha256"]][0])]
            if g is not None
        ]
        times = [float(r["time_s"]) for r in runs if r.get("time_s") is not None]
        out.append(
            {
                "heuristic": name,
                "runs": len(runs),
                "valid_plans": len(gaps),
                "within_gap": sum(solved(r) for r in runs),
                "mean_gap_best": sum(gaps) / len(gaps) if gaps else None,
                "max_gap_best": max(gaps) if gaps else None,
                "sgm_time_s": shifted_geometric_mean(times),
                "max_time_s": max(times) if times else None,
            }
        )
    return out


HEURISTIC_COLUMNS = (
    "heuristic",
    "runs",
    "valid_plans",
    "within_gap",
    "mean_gap_best",
    "max_gap_best",
    "sgm_time_s",
    "max_time_s",
)
"""Columns of :func:`heuristic_summary`'s rows."""
EFFORT_COLUMNS = ("solver", "runs", *(f"sgm_{k}" for k in EFFORT_KEYS))
"""Columns of :func:`effort_summary`'s rows."""


def effort_summary(rows: Sequence[Row]) -> list[Row]:
    """Per solver that reports any: the sgm (shift :data:`NODE_SHIFT`) of each count over the runs that give it."""
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    runs: dict[str, int] = defaultdict(int)
    for r in rows:
        runs[str(r["solver"])] += 1
        for key in EFFORT_KEYS:
            if r.get(key) is not None:
                by[str(r["solver"])][key].append(float(r[key]))
    return [
        {
            "solver": solver,
            "runs": runs[solver],
            **{f"sgm_{k}": shifted_geometric_mean(counts.get(k, []), NODE_SHIFT) for k in EFFORT_KEYS},
        }
        for solver, counts in by.items()
    ]


def per_instance_frame(rows: Sequence[Row]) -> pd.DataFrame:
    """Mittelmann's view: one row per instance, solvers side by side, then the virtual best.

    For each solver ``time_s``, ``status``, ``objective``, ``gap``, ``nodes`` and ``best``; then the virtual
    best's ``time_s`` and ``solver``.

    Over the seeds of an instance: ``time_s`` is the sgm of the charged times (s; the run's own with one
    seed; a heuristic's own planning time, not the limit), ``status`` the outcome (:func:`outcome`) when
    every seed agrees, else ``solved i/K`` or the outcomes joined by ``/``; ``objective`` the best valid
    value, ``gap`` the largest ``gap_ref`` (1 for a run without a plan), ``nodes`` the sgm of the node
    counts (shift 100; blank when unknown).
    ``best`` marks the exact solvers whose ``time_s`` is the smallest among those that solved every seed.
    Columns are ``SOLVER:FIELD``; instances in first-seen order.
    """
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(
        {
            "instance": [str(r.get("instance") or r["instance_sha256"]) for r in rows],
            "solver": [str(r["solver"]) for r in rows],
            "charged": [_shown_time(r) for r in rows],
            "outcome": [outcome(r) for r in rows],
            "solved": [solved(r) for r in rows],
            "value": [r.get("objective") if r.get("valid") is not False else None for r in rows],
            "gap": [1.0 if r.get("gap_ref") is None else float(r["gap_ref"]) for r in rows],
            "nodes": [r.get("nodes") for r in rows],
            "sense": [r.get("sense") for r in rows],
        }
    )
    instances = list(dict.fromkeys(frame["instance"]))
    solvers = list(dict.fromkeys(frame["solver"]))
    table = pd.DataFrame(index=pd.Index(instances, name="instance"))
    for solver in solvers:
        runs = frame[frame["solver"] == solver].groupby("instance", sort=False)
        table[f"{solver}:time_s"] = runs["charged"].apply(lambda t: shifted_geometric_mean(list(t)))
        table[f"{solver}:status"] = runs["outcome"].apply(_status_cell)
        table[f"{solver}:objective"] = pd.Series({name: _best_value(group) for name, group in runs}, dtype=object)
        table[f"{solver}:gap"] = runs["gap"].max()
        table[f"{solver}:nodes"] = runs["nodes"].apply(
            lambda n: shifted_geometric_mean([float(x) for x in n if x is not None and not pd.isna(x)], NODE_SHIFT)
        )
        table[f"{solver}:all_solved"] = runs["solved"].all()
    exact = [s for s in solvers if not is_heuristic(s)]
    fastest = pd.Series(math.inf, index=table.index)
    for s in exact:
        t = table[f"{s}:time_s"].where(table[f"{s}:all_solved"].fillna(False).astype(bool), math.inf)
        fastest = fastest.combine(t.fillna(math.inf), min)
    for s in solvers:
        done = table[f"{s}:all_solved"].fillna(False).astype(bool)
        table[f"{s}:best"] = done & (table[f"{s}:time_s"] <= fastest) & (not is_heuristic(s))
    vb = virtual_best(rows)
    names = {str(r["instance_sha256"]): str(r.get("instance") or r["instance_sha256"]) for r in rows}
    vb_time: dict[str, list[float]] = defaultdict(list)
    vb_who: dict[str, list[str]] = defaultdict(list)
    for (sha, _seed), (t, who) in vb.items():
        vb_time[names[sha]].append(t)
        vb_who[names[sha]].append(who)
    table[f"{VIRTUAL_BEST}:time_s"] = [shifted_geometric_mean(vb_time[i]) if vb_time[i] else None for i in instances]
    table[f"{VIRTUAL_BEST}:solver"] = ["/".join(dict.fromkeys(w for w in vb_who[i] if w)) for i in instances]
    fields = ("time_s", "status", "objective", "gap", "nodes", "best")
    order = [f"{s}:{f}" for s in solvers for f in fields] + [f"{VIRTUAL_BEST}:time_s", f"{VIRTUAL_BEST}:solver"]
    return table[order].reset_index()


def _shown_time(row: Row) -> float:
    """A solver's charged time (s); a heuristic's own planning time (it is not charged the limit)."""
    if is_heuristic(row["solver"]) and row.get("time_s") is not None:
        return float(row["time_s"])
    return charged_time(row)


def _status_cell(outcomes: pd.Series) -> str:
    """One instance's outcomes over its seeds: the outcome when all agree, ``solved i/K`` or ``a/b`` otherwise."""
    values = list(outcomes)
    if len(set(values)) == 1:
        return str(values[0])
    if "wrong" not in values and "solved" in values:
        return f"solved {values.count('solved')}/{len(values)}"
    return "/".join(dict.fromkeys(values))


def _best_value(group: pd.DataFrame) -> float | None:
    """The best valid objective of an instance's runs (largest when maximising), None without one."""
    values = [float(v) for v in group["value"] if v is not None and not pd.isna(v)]
    if not values:
        return None
    return max(values) if (group["sense"] == "max").any() else min(values)


def profile_tau_max(ratios: dict[str, dict[Any, float]]) -> float:
    """The largest finite performance ratio observed (at least 1): the profile's right edge, never clipped."""
    finite = [r for by in ratios.values() for r in by.values() if math.isfinite(r)]
    return max([1.0, *finite])


__all__ = [
    "EFFORT_COLUMNS",
    "bench_summary",
    "HEURISTIC_COLUMNS",
    "VIRTUAL_BEST",
    "effort_summary",
    "heuristic_summary",
    "mean_interval",
    "outcome",
    "per_instance_frame",
    "profile_tau_max",
    "seed_interval",
    "t_quantile_975",
    "virtual_best",
    "virtual_best_summary",
    "wins",
]
