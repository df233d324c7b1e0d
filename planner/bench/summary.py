"""The benchmark's maths, MIPLIB style: pure functions on run rows, no solver and no file.

A *row* is one run (a dict, :data:`planner.bench.runner.RUN_COLUMNS`): at least ``instance_sha256``,
``solver``, ``seed``, ``status``, ``sense`` (``max`` or ``min``), ``objective``, ``bound``,
``lp_bound``, ``time_s``, ``time_limit_s``, ``rel_gap`` and ``incumbents`` (``[[t, v], ...]``).

Definitions (``v`` a run's objective, ``b`` a bound, ``s`` a solver, ``p`` a problem, i.e. an
instance and a seed):

* relative gap: ``gamma(v, b) = 0`` if ``v = b``; ``1`` if ``v * b < 0``; else
  ``|b - v| / max(|v|, |b|)``; always in ``[0, 1]``.
* the instance's references over all runs: ``v*`` the best objective any run found (largest
  when maximising) and ``b*`` the tightest bound any run proved (its ``bound`` or LP bound:
  smallest when maximising), never past ``v*`` (bounds carry numerical noise); with no bound,
  ``b* = v*``. ``gap_ref = gamma(v, b*)``.
* solved: status ``optimal``, or a plan with ``gap_ref <= rel_gap`` (+ 1e-6 of noise).
* time: ``time_s`` (the planning call, timed by the worker) when solved, else the limit.
* shifted geometric mean: ``sgm(t) = (prod_i (t_i + s))^(1/n) - s``, shift ``s = 1`` s.
* primal integral (Berthold): ``P = (1/T) int_0^T p(t) dt`` with ``T`` the limit and
  ``p(t) = 1`` before the first incumbent, else ``gamma(v(t), v*)``, ``v(t)`` the best
  incumbent by ``t``; in ``[0, 1]``. Berthold's reference is the optimum; ``v*`` is the best
  known value (the optimum when any run proved it).
* performance profile (Dolan and More): ``r_{p,s} = t_{p,s} / min_s t_{p,s}`` with
  ``t = inf`` when unsolved (``r = inf`` when no solver solved ``p``); the profile of ``s``
  is ``rho_s(tau) = |{p : r_{p,s} <= tau}| / |P|``. Times are floored at :data:`MIN_TIME_S`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

PLAN_STATUSES = ("optimal", "feasible", "fallback")
"""Statuses of a run that returned a plan in time (the plan's own status)."""
FAILURES = ("timeout", "hang", "crash", "oom", "error")
"""Statuses of a run without a usable plan: answered past the limit, killed at the deadline,
crashed, out of memory, or an error the worker reported."""
SHIFT_S = 1.0
"""Shift of the shifted geometric mean of times (s)."""
MIN_TIME_S = 1e-3
"""Times are floored here in performance ratios, so a near-zero time cannot divide by zero."""
GAP_NOISE = 1e-6
"""Slack on ``gap_ref <= rel_gap`` (a bound carries numerical noise)."""

Row = dict[str, Any]
SUMMARY_COLUMNS = (
    "solver",
    "runs",
    "solved",
    "sgm_time_s",
    "mean_gap_ref",
    "mean_primal_integral",
    "max_peak_mb",
    "fallback",
    *FAILURES,
)
"""Columns of ``summary.csv``, one row per solver (the failure columns count runs of that status)."""


def relative_gap(value: float | None, bound: float | None) -> float | None:
    """``gamma(v, b)``: 0 if equal, 1 if of opposite signs, else ``|b - v| / max(|v|, |b|)``; None without both."""
    if value is None or bound is None:
        return None
    if value == bound:
        return 0.0
    if value * bound < 0:
        return 1.0
    return min(1.0, abs(bound - value) / max(abs(value), abs(bound)))


def shifted_geometric_mean(values: Sequence[float], shift: float = SHIFT_S) -> float | None:
    """``(prod (t_i + s))^(1/n) - s`` (in logs, so long lists do not overflow); None for no values."""
    if not values:
        return None
    return math.exp(sum(math.log(t + shift) for t in values) / len(values)) - shift


def primal_integral(points: Iterable[tuple[float, float]], reference: float | None, limit_s: float) -> float:
    """Berthold's primal integral ``(1/T) int_0^T p(t) dt`` over ``[0, T]``, ``T = limit_s`` (see the module docstring).

    ``points``: ``(seconds, incumbent value)`` in any order; ``p`` is 1 until the first point,
    then ``gamma(v, reference)`` of the latest point (pass best-so-far values). Points past
    ``T`` do not count; without a reference every point counts as ``p = 1``.
    """
    if not limit_s > 0:
        raise ValueError(f"the limit must be > 0, got {limit_s}")
    area, t_prev, p = 0.0, 0.0, 1.0
    for t, v in sorted(points):
        t = min(max(t, 0.0), limit_s)
        area += p * (t - t_prev)
        t_prev = t
        gap = relative_gap(v, reference)
        p = 1.0 if gap is None else gap
    area += p * (limit_s - t_prev)
    return area / limit_s


def _better(a: float, b: float, maximize: bool) -> bool:
    return a > b if maximize else a < b


def references(rows: Iterable[Row]) -> dict[str, tuple[float | None, float | None]]:
    """Per instance (``instance_sha256``): ``(v*, b*)``, the best objective and best bound known (module docstring)."""
    best_value: dict[str, float] = {}
    best_bound: dict[str, float] = {}
    sense: dict[str, bool] = {}
    for r in rows:
        key, maximize = r["instance_sha256"], r.get("sense") == "max"
        sense[key] = maximize
        v = r.get("objective")
        if v is not None and (key not in best_value or _better(v, best_value[key], maximize)):
            best_value[key] = v
        for b in (r.get("bound"), r.get("lp_bound")):
            if b is not None and (key not in best_bound or _better(best_bound[key], b, maximize)):
                best_bound[key] = b  # the tightest: smallest upper bound, largest lower bound
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, maximize in sense.items():
        v_star, b_star = best_value.get(key), best_bound.get(key)
        if v_star is not None and (b_star is None or _better(v_star, b_star, maximize)):
            b_star = v_star  # a bound past the best known value is noise (or none was proved)
        out[key] = (v_star, b_star)
    return out


def with_references(rows: Sequence[Row]) -> list[Row]:
    """Each row with ``gap_ref`` (to ``b*``) and ``primal_integral`` (to ``v*``).

    A failed run (:data:`FAILURES`, a late answer included) gave no incumbent within the limit:
    its primal integral is 1. Its objective and bounds still count towards ``v*`` and ``b*``.
    """
    refs = references(rows)
    out = []
    for r in rows:
        v_star, b_star = refs[r["instance_sha256"]]
        points = [(float(t), float(v)) for t, v in r.get("incumbents") or []]
        answered = r["status"] in PLAN_STATUSES
        out.append(
            {
                **r,
                "gap_ref": relative_gap(r.get("objective"), b_star),
                "primal_integral": primal_integral(points, v_star, float(r["time_limit_s"])) if answered else 1.0,
            }
        )
    return out


def solved(row: Row) -> bool:
    """The run proved optimality, or returned a plan within its ``rel_gap`` of the best bound known."""
    if row["status"] == "optimal":
        return True
    gap = row.get("gap_ref")
    return row["status"] in PLAN_STATUSES and gap is not None and gap <= float(row["rel_gap"]) + GAP_NOISE


def charged_time(row: Row) -> float:
    """The time a run is charged: its planning time (at most the limit) when solved, else the limit."""
    limit = float(row["time_limit_s"])
    if solved(row) and row.get("time_s") is not None:
        return min(float(row["time_s"]), limit)
    return limit


def performance_ratios(rows: Iterable[Row]) -> dict[str, dict[tuple[str, int], float]]:
    """``r_{p,s}`` per solver and problem ``p = (instance_sha256, seed)``; ``inf`` when unsolved (module docstring)."""
    times: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for r in rows:
        t = max(charged_time(r), MIN_TIME_S) if solved(r) else math.inf
        times[r["solver"]][(r["instance_sha256"], int(r["seed"]))] = t
    problems = {p for by_problem in times.values() for p in by_problem}
    best = {p: min(by_problem.get(p, math.inf) for by_problem in times.values()) for p in problems}
    return {
        s: {p: (by[p] / best[p] if p in by and math.isfinite(by[p]) else math.inf) for p in problems}
        for s, by in times.items()
    }


def profile_fraction(ratios: Mapping[Any, float], tau: float) -> float:
    """``rho(tau)``: the share of problems whose ratio is at most ``tau``."""
    if not ratios:
        return 0.0
    return sum(r <= tau for r in ratios.values()) / len(ratios)


def profile_steps(ratios: Mapping[Any, float]) -> list[tuple[float, float]]:
    """The corners of ``rho``: ``(tau, rho(tau))`` at every distinct finite ratio, ascending."""
    taus = sorted({r for r in ratios.values() if math.isfinite(r)})
    return [(tau, profile_fraction(ratios, tau)) for tau in taus]


def _charged_gap(row: Row) -> float:
    """``gap_ref`` of a run that returned a plan in time; 1 for a failure or a run without objective."""
    gap = row.get("gap_ref")
    return 1.0 if gap is None or row["status"] not in PLAN_STATUSES else float(gap)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def solver_summary(rows: Sequence[Row]) -> list[Row]:
    """One :data:`SUMMARY_COLUMNS` row per solver (first-seen order) of rows that carry ``gap_ref``.

    ``mean_gap_ref`` counts a failure or a run without objective as 1, ``mean_primal_integral`` averages
    every run (a failure has no incumbent: 1), ``sgm_time_s`` is :func:`shifted_geometric_mean`
    of :func:`charged_time`.
    """
    by_solver: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_solver[r["solver"]].append(r)
    out = []
    for solver, runs in by_solver.items():
        statuses = Counter(r["status"] for r in runs)
        peaks = [float(r["peak_mb"]) for r in runs if r.get("peak_mb") is not None]
        out.append(
            {
                "solver": solver,
                "runs": len(runs),
                "solved": sum(solved(r) for r in runs),
                "sgm_time_s": shifted_geometric_mean([charged_time(r) for r in runs]),
                "mean_gap_ref": _mean([_charged_gap(r) for r in runs]),
                "mean_primal_integral": _mean(
                    [1.0 if r.get("primal_integral") is None else float(r["primal_integral"]) for r in runs]
                ),
                "max_peak_mb": max(peaks) if peaks else None,
                "fallback": statuses["fallback"],
                **{kind: statuses[kind] for kind in FAILURES},
            }
        )
    return out


def gap_curve(rows: Iterable[Row]) -> dict[str, list[float]]:
    """Per solver, every run's ``gap_ref`` sorted ascending (a failure or no objective: 1), for the gap profile."""
    gaps: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        gaps[r["solver"]].append(_charged_gap(r))
    return {s: sorted(v) for s, v in gaps.items()}


__all__ = [
    "FAILURES",
    "PLAN_STATUSES",
    "SUMMARY_COLUMNS",
    "charged_time",
    "gap_curve",
    "performance_ratios",
    "primal_integral",
    "profile_fraction",
    "profile_steps",
    "references",
    "relative_gap",
    "shifted_geometric_mean",
    "solved",
    "solver_summary",
    "with_references",
]
