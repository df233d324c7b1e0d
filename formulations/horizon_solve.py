"""Plan a round with the receding-horizon model (docs/design.md §5.14).

The one-round model plans the round first, with :data:`ONE_ROUND_SHARE` of the call's time limit
(:func:`formulations.solve.solve_round`, ``horizon = 1``). The objective's stages
(:data:`formulations.objectives.OBJECTIVES`) then run unchanged on the ``H``-round model
(:mod:`formulations.horizon_model`) in the time left (no LP bound, no core: it is never solved by column
generation): ``progress`` is the horizon's ``sum_h sum_j w_j pi_jh``, ``energy`` and ``excess_energy`` the
horizon's joules, ``P*_H`` the best horizon progress. The plan is round 0 of the horizon solution when
the horizon model was answered for its objective (:func:`unsolved`); otherwise the one-round plan runs,
marked ``<solver>+one-round`` with an ``objective_note`` (a *fallback round*).

A horizon plan's status is at most ``feasible`` and it reports no bound: the stages' bounds bound
the horizon's objective, not the round's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from wattplan.formulations.backends import Solvers
from wattplan.formulations.horizon_model import build_horizon_model
from wattplan.formulations.objectives import OBJECTIVES
from wattplan.formulations.stages import MIN_STAGE_S, Clock, SolveState, add_heuristic, model_stats
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.solve_report import SolveReport
from wattplan.planner.core.greedy import greedy_allocations

ONE_ROUND_SHARE = 0.5
"""Share of the call's time limit the one-round model plans in first; the horizon model gets the rest."""
ONE_ROUND = "one-round"
"""Suffix of the solver name of a round the one-round model planned because the horizon model was not solved."""

OneRound = Callable[[Instance, PlanRequest, float, Solvers], Plan]


def solve_horizon(inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers, one_round: OneRound) -> Plan:
    """Plan ``inst`` over ``req.horizon`` rounds and return round 0's plan (module docstring).

    ``one_round``: the one-round solve (:func:`formulations.solve.solve_round`): planned first, the fallback.
    """
    first_req = replace(req, horizon=1, time_limit_s=ONE_ROUND_SHARE * req.time_limit_s)
    fallback = one_round(inst, first_req, started_at, solvers)
    sub = replace(req, lp_bound=False, export_model=None)
    clock = Clock(sub.time_limit_s, started_at, len(inst.jobs))
    if clock.left() < MIN_STAGE_S:
        return one_round_plan(fallback, req.horizon, "not built: no time left")
    begin = time.perf_counter()
    hm = build_horizon_model(inst, req.horizon)
    report = SolveReport(model=model_stats(hm, time.perf_counter() - begin))
    why = "the LP bound is not computed for a horizon model"
    state = SolveState(inst, hm, solvers.mip, sub, clock, report, False, None, why, None)
    add_heuristic(state, "greedy", greedy_allocations)
    plan = OBJECTIVES[req.objective or inst.round.objective].solve(state)
    failure = unsolved(plan)
    if failure is None:
        return as_horizon_plan(plan)
    return one_round_plan(fallback, req.horizon, failure)


def one_round_plan(plan: Plan, horizon: int, failure: str) -> Plan:
    """The one-round ``plan``, marked ``<solver>+one-round`` with an ``objective_note`` saying why."""
    r = plan.round
    text = f"horizon {horizon} model {failure}; planned one round"
    old = r.report.notes.get("objective_note")
    r.report.notes["objective_note"] = f"{text}; {old}" if old else text
    return replace(plan, round=replace(r, solver=f"{r.solver}+{ONE_ROUND}"))


def unsolved(plan: Plan) -> str | None:
    """Why a horizon model's plan is not the horizon's answer for its objective, or None.

    No stage returned a horizon solution; or the target was not planned (the objective fell back to
    progress); or the least-energy stage found nothing and a start was kept (the horizon's most-progress
    plan, blind to energy).
    """
    r = plan.round
    if r.status == "fallback" or not any(st.status in ("optimal", "feasible") for st in r.report.stages):
        return "not solved in time"
    note = r.report.notes.get("objective_note", "")
    if "planned for progress" in note:
        return "target not solved"
    if "not found" in note:
        return "least-energy stage not solved in time"
    return None


def as_horizon_plan(plan: Plan) -> Plan:
    """``plan`` at most ``feasible``, without the horizon's bound and gap (they are not the round's)."""
    r = plan.round
    status = "feasible" if r.status == "optimal" else r.status
    return replace(plan, round=replace(r, status=status, bound=None, gap=None))
