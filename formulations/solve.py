"""The solve strategy: plan a round with a solver backend (docs/design.md §4 and §5).

:func:`solve_round` is a short sequence of stages over one :class:`~formulations.stages.SolveState`:
build the model and start the clock (:func:`~formulations.stages.build_state`), the greedy plan
(:func:`~formulations.stages.add_heuristic`), then the objective's own stages, chosen by name from
:data:`~formulations.objectives.OBJECTIVES`:

* ``progress`` (:class:`~formulations.objectives.ProgressObjective`): the LP relaxation and its
  rounded plan, the most progress ``P1`` under the budget, then the least energy (J) at
  ``P >= (1 - 1e-6) P1``;
* ``energy`` and ``efficiency`` (:class:`~formulations.objectives.TargetObjective`, on the ``energy``
  and ``excess_energy`` vectors): ``P*`` without budget, then the least energy (J) at
  ``P >= (1 - delta) P*`` under the budget.

Where each part lives: the clock, the model build, heuristic plans, starts, MIP stages under the
watchdog, the fallback and the finish in :mod:`formulations.stages`; the LP relaxation, column
generation and the core in :mod:`formulations.relaxation`; proven bounds and the verdict in
:mod:`formulations.verdict`; the objectives' stage sequences in :mod:`formulations.objectives`.
Their names are re-exported here. Whatever the path, the plan passes the validator.

With ``req.horizon > 1`` the round is planned over that many rounds (:mod:`formulations.horizon_solve`).

Entry: :func:`solve_round`, called only by the front door :func:`planner.planning.plan`.
"""

from __future__ import annotations

from wattplan.formulations.backends import Solvers
from wattplan.formulations.horizon_solve import solve_horizon
from wattplan.formulations.objectives import (
    FIRST_STAGE_SHARE,
    NO_BUDGET_STAGE_SHARE,
    OBJECTIVE_VECTOR,
    OBJECTIVES,
    SECOND_STAGE_SHARE,
    TARGET_STAGE_SHARE,
    ObjectiveStrategy,
    ProgressObjective,
    TargetObjective,
)
from wattplan.formulations.relaxation import (
    CORE_LP_SHARE,
    CORE_MIP_MAX_COLUMNS,
    LP_SHARE,
    SUPPORT_EPS,
    LpRelaxation,
    lp_relaxation,
)
from wattplan.formulations.stage_export import LEXICOGRAPHIC_TOLERANCE
from wattplan.formulations.stages import (
    MAX_RESERVE_S,
    MIN_STAGE_S,
    RESERVE_PER_JOB_S,
    RESERVE_SHARE,
    Clock,
    SolveState,
    add_heuristic,
    build_state,
)
from wattplan.formulations.verdict import (
    ABS_GAP_SHARE,
    GAP_TOLERANCE,
    consistent_bound,
    objective_unit,
    tighter,
    within_gap,
)
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations

__all__ = [
    "ABS_GAP_SHARE",
    "CORE_LP_SHARE",
    "CORE_MIN_COLUMNS",
    "CORE_MIP_MAX_COLUMNS",
    "FIRST_STAGE_SHARE",
    "GAP_TOLERANCE",
    "LEXICOGRAPHIC_TOLERANCE",
    "LP_SHARE",
    "MAX_RESERVE_S",
    "MIN_STAGE_S",
    "NO_BUDGET_STAGE_SHARE",
    "OBJECTIVES",
    "OBJECTIVE_VECTOR",
    "RESERVE_PER_JOB_S",
    "RESERVE_SHARE",
    "SECOND_STAGE_SHARE",
    "SUPPORT_EPS",
    "TARGET_STAGE_SHARE",
    "Clock",
    "LpRelaxation",
    "ObjectiveStrategy",
    "ProgressObjective",
    "SolveState",
    "TargetObjective",
    "consistent_bound",
    "lp_relaxation",
    "objective_unit",
    "solve_round",
    "tighter",
    "within_gap",
]

CORE_MIN_COLUMNS = 40_000
"""A model with at least this many columns is solved on its core (:mod:`formulations.relaxation`): about 250 jobs.
Read when :func:`solve_round` is called (tests lower it to solve small rounds on their core)."""


def solve_round(inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers) -> Plan:
    """Plan ``inst`` with the backends of ``req`` (see the module docstring); always a validated plan.

    ``started_at``: when the caller's clock started (``time.perf_counter()``, s). ``solvers``:
    ``req.solver`` and ``req.lp_solver`` resolved by the front door, once per call or per replay.
    """
    if req.horizon > 1:
        return solve_horizon(inst, req, started_at, solvers, solve_round)
    state = build_state(inst, req, started_at, solvers, CORE_MIN_COLUMNS)
    add_heuristic(state, "greedy", greedy_allocations)
    return OBJECTIVES[req.objective or inst.round.objective].solve(state)
