"""The benchmark's maths, MIPLIB style: pure functions on run rows, no solver and no file.

A *row* is one run (a dict, :data:`planner.bench.report.RUN_COLUMNS`): at least ``instance_sha256``,
``solver``, ``seed``, ``status``, ``sense`` (``max`` or ``min``), ``objective``, ``bound``,
``lp_bound``, ``time_s``, ``time_limit_s``, ``rel_gap`` and ``incumbents`` (``[[t, v], ...]``);
the worker's re-check adds ``valid``, ``recheck``, ``claimed_objective``, ``progress`` and
``progress_target`` (:mod:`planner.bench.check`; a row without ``valid`` counts as valid: the
front door validated its plan).

Definitions (``v`` a run's objective, ``b`` a bound, ``s`` a solver, ``p`` a problem, i.e. an
instance and a seed):

* relative gap: ``gamma(v, b) = 0`` if ``v = b``; ``1`` if ``v * b < 0``; else
  ``|b - v| / max(|v|, |b|)``; always in ``[0, 1]``.
* wrong results (:func:`wrong_reasons`, MIPLIB's solution checker): a run whose plan fails the
  independent re-check, misses its own progress target or misreports its value, whose bound a
  valid plan beats, or whose
  ``optimal`` a valid plan beats by more than its gap. A wrong run is never solved and its
  bounds do not count.
* the instance's references: ``v*`` the best objective of a valid plan (largest when
  maximising) and ``b*`` the tightest bound (its ``bound`` or LP bound: smallest when
  maximising) of a run that is not wrong; with no bound, ``b* = v*``. ``b*`` is never clipped
  to ``v*``: a bound past ``v*`` (beyond :data:`WRONG_TOL`) is a wrong run's, and is not counted.
  ``gap_ref = gamma(v, b*)`` (None for a plan that failed the re-check). Caveat: ``energy`` and
  ``efficiency`` runs minimise at progress targets of their own (``(1 - delta) P*``, ``P*`` from
  each run's solve), so ``v*`` may come from a run with a lower target than the run that proved
  ``b*``, and lie past it.
* solved: not wrong, and status ``optimal`` or a plan with ``gap_ref <= rel_gap`` (+ 1e-6 of noise).
* time: ``time_s`` (the planning call, timed by the worker) when solved, else the limit.
* shifted geometric mean: ``sgm(t) = (prod_i (t_i + s))^(1/n) - s``, shift ``s = 1`` s.
* primal integral (Berthold): ``P = (1/T) int_0^T p(t) dt`` with ``T`` the limit and
  ``p(t) = 1`` before the first incumbent, else ``gamma(v(t), v*)``, ``v(t)`` the best
  incumbent by ``t``; in ``[0, 1]``. Berthold's reference is the optimum; ``v*`` is the best
  known value (the optimum when any run proved it).
* performance profile (Dolan and More): ``r_{p,s} = t_{p,s} / min_s t_{p,s}`` with
  ``t = inf`` when unsolved (``r = inf`` when no solver solved ``p``); the profile of ``s``
  is ``rho_s(tau) = |{p : r_{p,s} <= tau}| / |P|``, ``P`` every problem (an unsolved one counts in
  ``|P|``, never in the numerator), ``tau`` from 1 to the largest finite ratio. Times are floored at
  :data:`MIN_TIME_S`. The heuristics (:data:`HEURISTICS`) are left out of the ratios.
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
WRONG_TOL = 1e-6
"""Relative tolerance of the wrong-result check, of ``max(|v|, |b|)``: the validator's own
(:data:`planner.core.validate.REL_TOL`). A valid plan's claims and its budget are checked to 1e-6
relative, so its value is known to no better, and a plan up to 1e-6 over the budget passes: a
bound it beats by less is within the noise of the value, not contradicted by it."""
PLANNER_SLACK = 2e-6
"""Relative slack the planner's own claims carry: an ``optimal`` status allows a gap of
``rel_gap + 1e-6`` (``formulations.solve.GAP_TOLERANCE``), and the progress objective's second
stage keeps ``P >= (1 - 1e-6) P1`` while the plan reports ``P1`` (``LEXICOGRAPHIC_TOLERANCE``)."""

HEURISTICS = ("greedy",)
"""Planners that prove nothing and return at once: reported on their own (quality and time), never timed
against the solvers, in the virtual best, the wins or the performance profile (``planner.planning.GREEDY``)."""

Row = dict[str, Any]
SUMMARY_COLUMNS = (
    "solver",
    "kind",
    "runs",
    "solved",
    "wrong",
    "wins",
    "sgm_time_s",
    "sgm_ci_low",
    "sgm_ci_high",
    "mean_gap_ref",
    "mean_primal_integral",
    "max_peak_mb",
    "fallback",
    *FAILURES,
)
"""Columns of ``summary.csv``, one row per solver then the virtual best (``wrong`` and the failure columns count
runs; ``kind``: ``solver``, ``heuristic`` or ``virtual``; a heuristic has no ``sgm_time_s``, see
:mod:`planner.bench.comparison`)."""


def is_heuristic(solver: str) -> bool:
    """``solver`` is one of :data:`HEURISTICS`."""
    return solver in HEURISTICS


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
    if min(values) == max(values):
        return float(values[0])  # exact, without the logarithms' rounding
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


def row_key(row: Row) -> str:
    """The run's key (:func:`planner.bench.runner.run_key`), or ``instance|solver|seed`` for a row without one."""
    key = row.get("key")
    return str(key) if key else f"{row['instance_sha256']}|{row['solver']}|{row['seed']}"


def misses_target(row: Row) -> bool:
    """The plan's evaluated progress is below its own ``progress_target`` by more than :data:`WRONG_TOL` of it.

    ``energy``/``efficiency`` minimise subject to ``P >= target``: a plan below it is infeasible for
    the problem its value is claimed for (a solver's absolute row tolerance, 1e-6, is a large
    relative one on a badly scaled progress row).
    """
    target, progress = row.get("progress_target"), row.get("progress")
    if target is None or progress is None:
        return False
    return float(target) - float(progress) > WRONG_TOL * abs(float(target))


def trusted(row: Row) -> bool:
    """The run has a plan whose value counts: an evaluated objective, the re-check passed, its own target met."""
    return row.get("objective") is not None and row.get("valid") is not False and not misses_target(row)


def _plan_status(row: Row) -> str:
    """The plan's own status (a late answer's is kept as ``plan_status``)."""
    return str(row.get("plan_status") or row["status"]) if row["status"] == "timeout" else str(row["status"])


def _past(value: float, bound: float, maximize: bool, tolerance: float) -> bool:
    """``value`` is better than ``bound`` by more than ``tolerance * max(|value|, |bound|)``."""
    excess = value - bound if maximize else bound - value
    return excess > tolerance * max(abs(value), abs(bound))


def _meets_target(witness: Row, row: Row) -> bool:
    """The witness's plan is feasible for ``row``'s problem: its progress reaches ``row``'s ``progress_target``.

    ``energy`` and ``efficiency`` minimise subject to ``P >= target``, a target each planning call
    sets itself; a plan below another run's target says nothing about that run's bound.
    Without a target (``progress``) every valid plan is feasible.
    """
    target = row.get("progress_target")
    if target is None:
        return True
    progress = witness.get("progress")
    return progress is not None and float(progress) >= float(target)


def _best_witness(row: Row, witnesses: Sequence[Row]) -> Row | None:
    """The valid plan with the best value among those feasible for ``row``'s problem."""
    maximize = row.get("sense") == "max"
    best: Row | None = None
    for w in witnesses:
        if _meets_target(w, row) and (best is None or _better(w["objective"], best["objective"], maximize)):
            best = w
    return best


def _who(row: Row) -> str:
    return f"{row['solver']} seed {row['seed']}"


def plan_reasons(row: Row) -> list[str]:
    """Rule (a): the plan failed the re-check, misses its own progress target, or misreports its value.

    Misses: :func:`misses_target`. Misreports: ``|claimed - v| > (PLANNER_SLACK + WRONG_TOL) max(|claimed|, |v|)``.
    """
    reasons = []
    if row.get("valid") is False:
        reasons.append(f"plan fails the independent re-check: {row.get('recheck') or '(no detail)'}")
    if misses_target(row):
        progress, target = float(row["progress"]), float(row["progress_target"])
        reasons.append(f"plan's progress {progress:.10g} misses its own target {target:.10g}")
    claimed, value = row.get("claimed_objective"), row.get("objective")
    if claimed is not None and value is not None:
        if abs(claimed - value) > (PLANNER_SLACK + WRONG_TOL) * max(abs(claimed), abs(value)):
            side = "more" if value > claimed else "less"
            reasons.append(f"reports objective {claimed:.10g}, the plan evaluates to {value:.10g} ({side})")
    return reasons


def bound_reasons(row: Row, witnesses: Sequence[Row]) -> list[str]:
    """Rule (b): a valid plan, feasible for the run's problem, beats its ``bound`` or ``lp_bound`` beyond the tolerance.

    Beats: ``v' - b > WRONG_TOL max(|v'|, |b|)`` when maximising, ``b - v'`` when minimising.
    """
    maximize = row.get("sense") == "max"
    best = _best_witness(row, witnesses)
    if best is None:
        return []
    v = float(best["objective"])
    reasons = []
    for name in ("bound", "lp_bound"):
        b = row.get(name)
        if b is not None and _past(v, float(b), maximize, WRONG_TOL):
            side = "below" if maximize else "above"
            reasons.append(f"{name} {b:.10g} is {side} {v:.10g}, the value of a valid plan ({_who(best)})")
    return reasons


def optimal_reasons(row: Row, witnesses: Sequence[Row]) -> list[str]:
    """Rule (c): ``optimal``, yet a valid plan feasible for its problem is better by more than its gap.

    Better by more than ``(rel_gap + PLANNER_SLACK + WRONG_TOL) max(|v|, |v'|)``.
    """
    value = row.get("objective")
    if _plan_status(row) != "optimal" or value is None:
        return []
    best = _best_witness(row, witnesses)
    if best is None:
        return []
    v = float(best["objective"])
    slack = float(row["rel_gap"]) + PLANNER_SLACK + WRONG_TOL
    if not _past(v, float(value), row.get("sense") == "max", slack):
        return []
    return [f"says optimal at {value:.10g}, but a valid plan ({_who(best)}) is worth {v:.10g}, beyond the gap"]


def wrong_reasons(rows: Iterable[Row]) -> dict[str, str]:
    """Why each wrong run is wrong, by :func:`row_key`; runs that are not wrong are left out.

    MIPLIB's solution checker: once a plan is verified (the independent re-check), its value is a
    fact, and a claim that contradicts it is the wrong one. Per instance, with ``v`` a run's
    evaluated objective and the *witnesses* the runs with a valid plan that meets its own target
    (:func:`trusted`), a run is wrong when

    (a) its plan failed the re-check, or misses its own progress target (``energy``/``efficiency``,
        beyond ``WRONG_TOL`` of it), or its reported value differs from ``v`` by more than
        ``(PLANNER_SLACK + WRONG_TOL) max(|claimed|, |v|)`` (:func:`plan_reasons`);
    (b) its ``bound`` or ``lp_bound`` ``b`` is beaten by a witness's value ``v'``: ``v' - b`` (when
        maximising; ``b - v'`` when minimising) ``> WRONG_TOL max(|v'|, |b|)`` (:func:`bound_reasons`);
    (c) its plan says ``optimal`` and a witness's ``v'`` is better than its ``v`` by more than
        ``(rel_gap + PLANNER_SLACK + WRONG_TOL) max(|v|, |v'|)`` (:func:`optimal_reasons`).

    For (b) and (c) the witness must be feasible for the run's problem (:func:`_meets_target`):
    ``energy``/``efficiency`` runs minimise at a progress target of their own. The run itself is
    a witness too: a bound past its own plan's value is wrong. Several reasons are joined by
    ``; ``.
    """
    by_instance: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("sense") in ("max", "min"):
            by_instance[r["instance_sha256"]].append(r)
    out: dict[str, str] = {}
    for runs in by_instance.values():
        witnesses = [r for r in runs if trusted(r)]
        for r in runs:
            reasons = plan_reasons(r) + bound_reasons(r, witnesses) + optimal_reasons(r, witnesses)
            if reasons:
                out[row_key(r)] = "; ".join(reasons)
    return out


def references(
    rows: Iterable[Row], wrong: Mapping[str, str] | None = None
) -> dict[str, tuple[float | None, float | None]]:
    """Per instance (``instance_sha256``): ``(v*, b*)``, the best valid value and best bound of a run not ``wrong``.

    ``wrong`` is :func:`wrong_reasons` of the rows (computed when not given); see the module docstring.
    """
    rows = list(rows)
    wrong = wrong_reasons(rows) if wrong is None else wrong
    best_value: dict[str, float] = {}
    best_bound: dict[str, float] = {}
    sense: dict[str, bool] = {}
    for r in rows:
        key, maximize = r["instance_sha256"], r.get("sense") == "max"
        sense[key] = maximize
        if trusted(r):
            v = float(r["objective"])
            if key not in best_value or _better(v, best_value[key], maximize):
                best_value[key] = v
        if row_key(r) in wrong:
            continue
        for b in (r.get("bound"), r.get("lp_bound")):
            if b is not None and (key not in best_bound or _better(best_bound[key], b, maximize)):
                best_bound[key] = b  # the tightest: smallest upper bound, largest lower bound
    out: dict[str, tuple[float | None, float | None]] = {}
    for key in sense:
        v_star = best_value.get(key)
        out[key] = (v_star, best_bound.get(key, v_star))
    return out


def with_references(rows: Sequence[Row]) -> list[Row]:
    """Each row with ``wrong`` (the reason, empty if none), ``gap_ref`` (to ``b*``) and ``primal_integral`` (to ``v*``).

    A failed run (:data:`FAILURES`, a late answer included) gave no incumbent within the limit:
    its primal integral is 1; so did a plan that failed the re-check (its ``gap_ref`` is None).
    A late answer's objective and bounds still count towards ``v*`` and ``b*``.
    """
    wrong = wrong_reasons(rows)
    refs = references(rows, wrong)
    out = []
    for r in rows:
        v_star, b_star = refs[r["instance_sha256"]]
        points = [(float(t), float(v)) for t, v in r.get("incumbents") or []]
        answered = r["status"] in PLAN_STATUSES and r.get("valid") is not False
        out.append(
            {
                **r,
                "wrong": wrong.get(row_key(r), ""),
                "gap_ref": relative_gap(r.get("objective"), b_star) if r.get("valid") is not False else None,
                "primal_integral": primal_integral(points, v_star, float(r["time_limit_s"])) if answered else 1.0,
            }
        )
    return out


def solved(row: Row) -> bool:
    """Not wrong, and the run proved optimality or returned a plan within its ``rel_gap`` of the best bound known."""
    if row.get("wrong"):
        return False
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
    """``r_{p,s}`` per exact solver and problem ``p = (instance_sha256, seed)``; ``inf`` unsolved (module docstring).

    Heuristics (:data:`HEURISTICS`) are left out: a heuristic is not a solver that hit the time limit.
    """
    times: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for r in rows:
        if is_heuristic(r["solver"]):
            continue
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

    ``solved`` never counts a wrong run, ``wrong`` counts them; ``mean_gap_ref`` counts a failure,
    a run without objective or a plan that failed the re-check as 1, ``mean_primal_integral``
    averages every run (a failure has no incumbent: 1), ``sgm_time_s`` is
    :func:`shifted_geometric_mean` of :func:`charged_time` (a wrong run is charged the limit), None for
    a heuristic (:data:`HEURISTICS`: it is not timed against the solvers). ``kind``: ``solver`` or
    ``heuristic``.
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
                "kind": "heuristic" if is_heuristic(solver) else "solver",
                "runs": len(runs),
                "solved": sum(solved(r) for r in runs),
                "wrong": sum(bool(r.get("wrong")) for r in runs),
                "sgm_time_s": None if is_heuristic(solver) else shifted_geometric_mean([charged_time(r) for r in runs]),
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
    "HEURISTICS",
    "SHIFT_S",
    "is_heuristic",
    "PLAN_STATUSES",
    "PLANNER_SLACK",
    "SUMMARY_COLUMNS",
    "WRONG_TOL",
    "bound_reasons",
    "misses_target",
    "charged_time",
    "gap_curve",
    "optimal_reasons",
    "performance_ratios",
    "plan_reasons",
    "primal_integral",
    "profile_fraction",
    "profile_steps",
    "references",
    "relative_gap",
    "row_key",
    "shifted_geometric_mean",
    "solved",
    "solver_summary",
    "trusted",
    "with_references",
    "wrong_reasons",
]
