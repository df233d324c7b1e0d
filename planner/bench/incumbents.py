"""The incumbent timeline of a plan: when each better plan was known, read from its solve report.

:func:`incumbent_trace` gives ``[(t, v), ...]``: ``t`` seconds after planning started, ``v`` the
best objective value known by then, each point better than the one before (larger when
maximising ``progress``, smaller for ``energy`` and ``efficiency``). When the report carries
an explicit timeline (an ``incumbents`` attribute of ``(seconds, value)`` pairs) it is used as
it is. Otherwise the timeline is *approximated* from the records the report has today:

* clock: the records' durations added up in the order the solve strategy runs them: the
  model build (``model.build_s``), the heuristics in the order recorded (the LP relaxation's
  seconds, read from ``lp_bound_note``, ``"optimal in 0.42 s"``, come before every heuristic
  after the first: the LP-rounded plan needs the LP), then each stage (``solve_s``).
  Reading the instance and the gaps between records are not counted, so times are early by
  those fractions of a second;
* points: a heuristic plan's progress when it is done (``progress`` objective only: its
  value is in the objective's units); a stage's objective when the stage ends, for stages
  whose objective is the plan's (``max_progress*`` without ``no_budget`` for ``progress``,
  ``min_*_at_target`` for ``energy``/``efficiency``). A solver's incumbents inside a stage
  are not reported, so each stage's value is placed at the stage's end: a later time than
  it was found, which makes the primal integral an upper bound;
* the plan's own value (the benchmark's evaluated value, else :func:`plan_objective`) closes the
  timeline at its end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.solve_report import SolveReport, StageRecord

_LP_SECONDS = re.compile(r"\bin ([0-9]+(?:\.[0-9]*)?) s\b")


def maximizes(objective: str) -> bool:
    """True for ``progress`` (maximised); ``energy`` and ``efficiency`` are minimised."""
    return objective == "progress"


def plan_objective(plan: Plan, objective: str) -> float | None:
    """The plan's value for ``objective`` (the instance's), or None when the plan certifies none.

    The solver's reported ``round.objective_value`` when the plan is for ``objective``. For
    ``progress`` any valid plan is feasible and worth at least its ``round.progress``: the
    larger of the two (a plan without a reported value: greedy, fallback; or one where a
    heuristic plan with more progress was kept, ``floor_note``, whose reported value is still
    the solver's). For ``energy``/``efficiency`` a plan without a reported value, or one that
    switched to ``progress`` (``objective_note``), may miss the progress target: None.
    """
    r = plan.round
    reported = float(r.objective_value) if r.objective == objective and r.objective_value is not None else None
    if objective == "progress":
        return float(r.progress) if reported is None else max(reported, float(r.progress))
    return reported


def lp_seconds(note: str | None) -> float:
    """Seconds of the LP relaxation read from its ``lp_bound_note`` (``"optimal in 0.42 s"``); 0 without."""
    match = _LP_SECONDS.search(note or "")
    return float(match.group(1)) if match else 0.0


def _stage_counts(stage: StageRecord, objective: str) -> bool:
    """The stage's objective is in the units of ``objective`` and its solution is feasible for it."""
    if stage.status not in ("optimal", "feasible") or stage.objective is None:
        return False
    if objective == "progress":
        return stage.stage.startswith("max_progress") and "no_budget" not in stage.stage
    return stage.stage.startswith("min_") and stage.stage.endswith("_at_target")


def approximate_trace(report: SolveReport, objective: str) -> tuple[list[tuple[float, float]], float]:
    """``(points, end)``: the approximated timeline of ``report`` (module docstring) and the seconds it covers."""
    t = report.model.build_s if report.model is not None else 0.0
    points: list[tuple[float, float]] = []
    heuristics = list(report.heuristics.values())
    for k, h in enumerate(heuristics):
        if k == 1 and objective == "progress":
            t += lp_seconds(report.lp_bound_note)
        t += h.seconds
        if objective == "progress":
            points.append((t, h.progress))
    for stage in report.stages:
        t += stage.solve_s
        if _stage_counts(stage, objective) and stage.objective is not None:
            points.append((t, stage.objective))
    return points, t


def best_so_far(points: Iterable[tuple[float, float]], maximize: bool) -> list[tuple[float, float]]:
    """The points in time order that improve on every earlier one (a value repeated later is dropped)."""
    out: list[tuple[float, float]] = []
    for t, v in sorted(points, key=lambda p: p[0]):
        if not out or (v > out[-1][1] if maximize else v < out[-1][1]):
            out.append((t, v))
    return out


def incumbent_trace(
    plan: Plan,
    objective: str | None = None,
    start_s: float = 0.0,
    end_s: float | None = None,
    value: float | None = None,
) -> list[tuple[float, float]]:
    """``[(t, v), ...]``: the best ``objective`` value known ``t`` s into planning (module docstring).

    ``objective`` is the instance's (default: the plan's). The approximated timeline counts from
    the model build; ``start_s`` is added to its times (the seconds the caller's clock ran
    before planning: reading the instance). An explicit timeline is taken as it is. The last
    point is the plan's own value, when it has one, at ``end_s`` (when the caller had the plan;
    default: the timeline's end): ``value`` (the benchmark passes the value recomputed from the
    instance, :mod:`planner.bench.check`), or else :func:`plan_objective`.
    """
    objective = objective or plan.round.objective
    report = plan.round.report
    explicit = getattr(report, "incumbents", None)
    if explicit is not None:
        points = [(float(t), float(v)) for t, v in explicit]
        end = max((t for t, _ in points), default=0.0)
    elif plan.round.objective == objective:
        points, end = approximate_trace(report, objective)
        points, end = [(start_s + t, v) for t, v in points], start_s + end
    else:  # the plan switched objective: its records are in another objective's units
        points, end = [], start_s
    final = plan_objective(plan, objective) if value is None else value
    if final is not None:
        points.append((end if end_s is None else max(end_s, end), final))
    return best_so_far(points, maximizes(objective))


__all__ = ["approximate_trace", "best_so_far", "incumbent_trace", "lp_seconds", "maximizes", "plan_objective"]
