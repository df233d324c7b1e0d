"""Plan a round with the receding-horizon model (docs/design.md §5.14).

The objective's stages (:data:`formulations.objectives.OBJECTIVES`) run unchanged on the ``H``-round
model (:mod:`formulations.horizon_model`): ``progress`` is the horizon's ``sum_h sum_j w_j pi_jh``,
``energy`` and ``excess_energy`` the horizon's joules, ``P*_H`` the best horizon progress. The plan is
round 0 of the solution. The horizon model gets :data:`HORIZON_SHARE` of the call's time limit
(no LP bound, no core: it is never solved by column generation); if its stages return no horizon
solution (no stage returned one, or the target was neither solved nor met by a start), the round is planned by the
one-round model in the time left, marked ``<solver>+one-round`` with an ``objective_note``.

A horizon plan's status is at most ``feasible`` and it reports no bound: the stages' bounds bound
the horizon's objective, not the round's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from formulations.backends import Solvers
from formulations.horizon_model import build_horizon_model
from formulations.objectives import OBJECTIVES
from formulations.stages import Clock, SolveState, add_heuristic, model_stats
from planner.contracts.domain import Instance
from planner.contracts.plan import Plan
from planner.contracts.request import PlanRequest
from planner.contracts.solve_report import SolveReport
from planner.core.greedy import greedy_allocations

HORIZON_SHARE = 0.6
"""Share of the call's time limit the horizon model may use; the rest is the one-round fallback's."""
ONE_ROUND = "one-round"
"""Suffix of the solver name of a round the one-round model planned because the horizon model was not solved."""

OneRound = Callable[[Instance, PlanRequest, float, Solvers], Plan]


def solve_horizon(inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers, one_round: OneRound) -> Plan:
    """Plan ``inst`` over ``req.horizon`` rounds and return round 0's plan (module docstring).

    ``one_round``: the one-round solve (:func:`formulations.solve.solve_round`), the fallback.
    """
    sub = replace(req, time_limit_s=HORIZON_SHARE * req.time_limit_s, lp_bound=False, export_model=None)
    clock = Clock(sub.time_limit_s, started_at, len(inst.jobs))
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
    fallback = one_round(inst, replace(req, horizon=1), started_at, solvers)
    r = fallback.round
    text = f"horizon {req.horizon} model {failure}; planned one round"
    old = r.report.notes.get("objective_note")
    r.report.notes["objective_note"] = f"{text}; {old}" if old else text
    return replace(fallback, round=replace(r, solver=f"{r.solver}+{ONE_ROUND}"))


def unsolved(plan: Plan) -> str | None:
    """Why a horizon model's plan is no horizon solution: no stage returned one, or the target was not planned.

    A plan kept from a start that no stage found (the one-round greedy plan) is no horizon solution.
    """
    r = plan.round
    if r.status == "fallback" or not any(st.status in ("optimal", "feasible") for st in r.report.stages):
        return "not solved in time"
    if "planned for progress" in r.report.notes.get("objective_note", ""):
        return "target not solved"
    return None


def as_horizon_plan(plan: Plan) -> Plan:
    """``plan`` at most ``feasible``, without the horizon's bound and gap (they are not the round's)."""
    r = plan.round
    status = "feasible" if r.status == "optimal" else r.status
    return replace(plan, round=replace(r, status=status, bound=None, gap=None))
