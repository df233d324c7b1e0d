"""The objectives (docs/design.md §4) as strategies: each one runs its stages over a :class:`SolveState`.

``progress`` (PowerFlow, :class:`ProgressObjective`): maximise ``P = sum w pi`` under the budget;
then, among plans with ``P >= (1 - 1e-6) P1`` (``P1`` the first stage's progress), the least energy
(J). The reported objective, bound and gap are the first stage's.

``energy`` (EaCO) and ``efficiency`` (:class:`TargetObjective`, one class, two vectors): ``P*`` =
the best progress with no budget; then the least ``energy`` (J), or ``excess_energy`` (J above each
job's best energy per step), with ``P >= (1 - delta) P*``, the budget (if any) still holding. ``P*``
is never taken below the greedy plan's progress without budget, so a weak first-stage incumbent (a
time limit hit early) cannot lower the target to nothing and empty the plan. When the target is
infeasible, or unsolved in time, the plan falls back to ``progress`` under the budget and says so.

Heuristics: the greedy plan (:mod:`planner.core.greedy`) is computed first; for the ``progress``
objective the LP relaxation is solved next by the request's ``lp_solver`` (a backend that
declares ``lp_relaxation``; HiGHS's primal simplex by default) and rounded into a plan
(:mod:`formulations.lp_rounding`). The LP optimum is the reported ``lp_bound``; when the
better heuristic plan is within ``rel_gap`` of it the plan is proven and the first stage is
not needed. Otherwise the better of the heuristic plans (or each running job's current
configuration, if better still) is the solver's start when the backend takes one, and the
planner never returns a solver plan with less progress than a heuristic plan (it returns that
plan, marked ``<solver>+<heuristic>``). If the solver returns no plan at all, the best
heuristic plan is used with status ``fallback``. A plan is ``optimal`` only when every stage
proved optimality and its gap is within ``rel_gap``. Whatever the path, the plan passes the
validator.

Each objective is chosen by name from :data:`OBJECTIVES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from wattplan.formulations import stages  # stages.mip_stage is looked up at call time: tests stand in for it
from wattplan.formulations.backends import ObjectiveName, SolverResult
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lp_rounding import lp_guided_allocations
from wattplan.formulations.relaxation import CORE_LP_SHARE, LP_SHARE, generate_core, relax
from wattplan.formulations.round_model import PROGRESS_ROW, budget_rows
from wattplan.formulations.stage_export import LEXICOGRAPHIC_TOLERANCE
from wattplan.formulations.stages import (
    MIN_STAGE_S,
    Outcome,
    SolveState,
    add_heuristic,
    best_heuristic,
    fallback,
    finish,
    mip_start,
    note,
    stage_proven,
    stage_record,
)
from wattplan.formulations.verdict import tighter
from wattplan.planner.contracts.domain import Objective
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.solve_report import ProgressTarget
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.core.greedy import greedy_allocations, progress_of

FIRST_STAGE_SHARE = 0.75
"""``progress``, stage 1 (most progress under the budget): share of the time left."""
SECOND_STAGE_SHARE = 0.9
"""``progress``, stage 2 (least energy at that progress): share of the time left after stage 1."""
NO_BUDGET_STAGE_SHARE = 0.4
"""``energy``, stage 1 (``P*``, most progress without budget): share of the time left."""
TARGET_STAGE_SHARE = 0.85
"""``energy``, stage 2 (least energy at the progress target): share of the time left after stage 1."""


class ObjectiveStrategy(Protocol):
    """An objective: its name, the model's vector it optimises (exported with the model), and its solve."""

    @property
    def name(self) -> Objective:
        """The instance objective."""
        ...

    @property
    def vector(self) -> ObjectiveName:
        """The model's objective vector whose value the plan reports."""
        ...

    def solve(self, state: SolveState) -> Plan:
        """Run the objective's stages on ``state``; always a validated plan."""
        ...


def _plan_progress(plan: Plan) -> float:
    """The progress ``sum w pi`` of a plan."""
    return plan.round.progress


@dataclass(frozen=True, slots=True)
class ProgressObjective:
    """``progress``: most progress under the budget, then the least energy (J) at ``(1 - 1e-6) P1``."""

    name: Objective = "progress"
    vector: ObjectiveName = "progress"

    def solve(self, state: SolveState) -> Plan:
        """The LP relaxation and its rounded plan, then the two lexicographic stages."""
        lp_rounded_plan(state)
        return most_progress(state)


def lp_rounded_plan(state: SolveState) -> None:
    """Solve the progress LP relaxation (its proven value is ``lp_bound``) and keep its rounded plan (§5.2-5.3)."""
    rm = state.rm
    relaxation = relax(state, rm.lm, "progress", True, CORE_LP_SHARE if state.large else LP_SHARE)
    if relaxation is not None and relaxation.values is not None:
        lp_values = relaxation.values
        add_heuristic(state, "lp-rounding", lambda _: lp_guided_allocations(rm, lp_values))


def most_progress(state: SolveState, why: str | None = None) -> Plan:
    """Stage 1: max progress under the budget; stage 2: least energy (J) at that progress (§4.1).

    ``why``: the ``objective_note`` when another objective falls back to this one.
    """
    if why:
        note(state, "objective_note", why)
    first = _max_progress_stage(state)
    if not first.has_solution or first.values is None:
        return fallback(state, f"no solution: {first.status}")
    chosen, second = _least_energy_at_progress(state, first.values)
    # Stage 1 is judged in finish, from the tighter of its own bound and the proven LP bound (a
    # core's solver bound was dropped: only the Lagrangian bound holds for the round). Stage 2 is
    # proven only by its own bound; on a core it has none, so a core plan is never optimal.
    proven = stage_proven(state, second, "energy")
    bound = tighter(first.bound, state.lp_bound, maximize=True)
    return finish(state, "progress", "progress", _progress_floor(state, chosen, proven, bound))


def _max_progress_stage(state: SolveState) -> SolverResult:
    """Stage 1 (progress): a proven heuristic plan, else the MIP; on a core the best heuristic plan if it found none."""
    first = heuristic_stage(state)
    if first is None:
        first = stages.mip_stage(state, "max_progress", state.rm.lm, "progress", FIRST_STAGE_SHARE, mip_start(state))
    if (not first.has_solution or first.values is None) and state.core is not None and state.lp_bound is not None:
        # A large round: the solver found nothing on the core in time; the best heuristic plan
        # goes on to the energy stage and keeps the Lagrangian bound (no fallback).
        first = heuristic_as_stage(state, f"the solver found no plan on the core ({first.status})")
    return first


def _least_energy_at_progress(state: SolveState, first: np.ndarray) -> tuple[np.ndarray, SolverResult]:
    """Stage 2 (J): least energy with ``P >= (1 - 1e-6) P1``, started from ``first``.

    Returns the chosen values and the stage's result: its answer replaces ``first`` only if it is
    feasible and uses no more energy.
    """
    lm = state.rm.lm
    p1 = float(lm.objectives["progress"] @ first)
    floor = (1 - LEXICOGRAPHIC_TOLERANCE) * p1
    second_lm = lm.with_row(lm.objectives["progress"], floor, math.inf, PROGRESS_ROW, "progress")
    if state.export is not None:
        state.export.second(second_lm, "energy", p1)
    second = stages.mip_stage(state, "min_energy_at_progress", second_lm, "energy", SECOND_STAGE_SHARE, first)
    energy = lm.objectives["energy"]
    if second.has_solution and second.values is not None and second_lm.is_feasible(second.values):
        if float(energy @ second.values) <= float(energy @ first):
            return second.values, second
    return first, second


def _progress_floor(state: SolveState, values: np.ndarray, proven: bool, bound: float | None) -> Outcome:
    """The solver's plan, or the best heuristic plan when that has more progress (§5.5), not proven then.

    A heuristic plan the model does not admit (one that leaves a job the round must run waiting) is never kept.
    """
    solver = state.backend.name
    name = best_heuristic(state)
    more = state.heuristic_progress[name] > float(state.rm.lm.objectives["progress"] @ values) * (1 + 1e-9)
    if more and state.rm.lm.is_feasible(state.rm.encode(state.heuristics[name])):
        note(state, "floor_note", f"the {name} plan had more progress than the solver's: {name} plan kept")
        # The kept plan's own progress is the reported value, not the solver's.
        return Outcome(state.heuristics[name], f"{solver}+{name}", False, _plan_progress, bound)
    if state.first_heuristic is not None:
        solver = f"{solver}+{state.first_heuristic}"
    return Outcome(state.rm.decode(values), solver, proven, _plan_progress, bound)


def heuristic_stage(state: SolveState) -> SolverResult | None:
    """The best heuristic plan as a proven first stage when it is within ``rel_gap`` of the LP bound (§5.3)."""
    lp = state.lp_bound
    name = best_heuristic(state)
    v = state.rm.encode(state.heuristics[name])
    p = float(state.rm.lm.objectives["progress"] @ v)
    if lp is None or not state.rm.lm.is_feasible(v) or abs(p - state.heuristic_progress[name]) > 1e-9 * max(1, p):
        return None
    if lp - p > state.req.rel_gap * max(abs(p), 1e-9):
        return None
    result = SolverResult(
        "optimal", values=v, objective=p, bound=lp, message=f"{name} plan within the gap of the LP bound"
    )
    state.report.stages.append(stage_record(f"max_progress ({name})", result, state.rm.lm, 0.0))
    return result


def heuristic_as_stage(state: SolveState, why: str) -> SolverResult:
    """The best heuristic plan as the first stage's (feasible) result, noted with ``why``."""
    name = best_heuristic(state)
    v = state.rm.encode(state.heuristics[name])
    state.first_heuristic = name
    note(state, "floor_note", f"{why}: the {name} plan is the first stage's")
    return SolverResult("feasible", values=v, objective=float(state.rm.lm.objectives["progress"] @ v), message=why)


@dataclass(frozen=True, slots=True)
class _Unbudgeted:
    """Stage 1 of a progress target: the solver's and the greedy plan's answers without budget.

    ``p_solver`` is None when the solver returned no plan; progress is ``sum w pi``.
    """

    result: SolverResult
    values: np.ndarray | None
    p_solver: float | None
    greedy: list[Allocation]
    p_greedy: float


@dataclass(frozen=True, slots=True)
class TargetObjective:
    """``energy`` / ``efficiency``: ``P*`` without budget, then the least ``vector`` (J) at ``(1 - delta) P*``."""

    name: Objective
    vector: ObjectiveName

    def solve(self, state: SolveState) -> Plan:
        """``P*`` without budget, then the least ``vector`` (J) with ``P >= (1 - delta) P*`` under the budget (§4.2).

        The start is the plan when the target stage finds nothing better; the round is planned for
        ``progress`` when no start met the target and the stage found nothing.
        """
        free = most_progress_without_budget(state)
        if free.p_solver is None and not free.greedy:
            return most_progress(state, "best progress without budget not found in time; planned for progress")
        target, target_lm = progress_target(state, free, self.vector)
        hint, start_meets_target = _target_start(state, target_lm, free)
        stage = f"min_{self.vector}_at_target"
        result = stages.mip_stage(state, stage, target_lm, self.vector, TARGET_STAGE_SHARE, hint)
        solved = result.has_solution and result.values is not None and target_lm.is_feasible(result.values)
        coefs = state.rm.lm.objectives[self.vector]
        if hint is not None and start_meets_target and (not solved or coefs @ hint < coefs @ result.values):
            # The start is already a plan for this objective (progress >= target within the budget):
            # keep it rather than plan for progress, and never return more energy than it uses.
            why = f"not found ({result.status})" if not solved else "not better than the start"
            note(state, "objective_note", f"least {self.vector} at progress >= {target:.6g} {why}; kept the start plan")
            return self._finish(state, hint, False, None)
        if not solved or result.values is None:
            why = "unreachable under the budget" if result.status == "infeasible" else f"not solved ({result.status})"
            return most_progress(
                state, f"{self.name} objective: progress target {target:.6g} {why}; planned for progress"
            )
        # P* is proven by its own bound (no budget row: the progress LP bound does not apply); the
        # target stage is judged in finish from the tighter of its own bound and its proven LP bound.
        proven = stage_proven(state, free.result, "progress") and (free.p_solver or 0.0) >= free.p_greedy
        relax(state, target_lm, self.vector, False, 1.0, result.values)
        bound = tighter(result.bound, state.lp_bound, maximize=False)
        # The plan powers the fewest nodes that hold the allocations, never more than the solver's u.
        return self._finish(state, result.values, proven, bound)

    def _finish(self, state: SolveState, values: np.ndarray, proven: bool, bound: float | None) -> Plan:
        """The plan of ``values``; its value is its energy (J), or its excess energy (fewest nodes, as placed)."""
        value_of = _plan_energy if self.vector == "energy" else _excess_energy(state, self.vector, values)
        outcome = Outcome(state.rm.decode(values), state.backend.name, proven, value_of, bound)
        return finish(state, self.name, self.vector, outcome)


def _plan_energy(plan: Plan) -> float:
    """The energy (J) of a plan, as placed (the fewest nodes that hold its allocations)."""
    return plan.round.energy_j


def _excess_energy(state: SolveState, vector: ObjectiveName, values: np.ndarray) -> Callable[[Plan], float]:
    """The value (J) of ``vector`` for the plan of ``values``, re-encoded from its allocations."""
    coefs, rm = state.rm.lm.objectives[vector], state.rm
    return lambda _plan: float(coefs @ rm.encode(rm.decode(values)))


def most_progress_without_budget(state: SolveState) -> _Unbudgeted:
    """Stage 1 of a progress target: max progress with the ``energy`` row dropped, and the greedy plan without budget.

    The greedy plan counts only where the model holds it (it counts the aligned blocks around pinned jobs as the
    model does, :mod:`planner.core.kept_blocks`, but a plan the model cannot hold would set a target no plan
    reaches).

    On a large round the stage is solved on the core of that LP (column generation first).
    """
    inst, lm = state.inst, state.rm.lm
    no_budget_lm = lm.without_rows(budget_rows(lm))
    greedy_free = greedy_allocations(replace(inst, round=replace(inst.round, budget_j=None)))
    if not no_budget_lm.is_feasible(state.rm.encode(greedy_free)):
        greedy_free = []  # a plan the model cannot hold proves no P*
    p_greedy = progress_of(inst, greedy_free)
    if state.large and state.core is None and state.clock.left() >= MIN_STAGE_S:
        limit = max(LP_SHARE * NO_BUDGET_STAGE_SHARE * state.clock.left(), MIN_STAGE_S)
        generate_core(state, no_budget_lm, "progress", True, limit)
    start = mip_start(state)
    best = stages.mip_stage(state, "max_progress_no_budget", no_budget_lm, "progress", NO_BUDGET_STAGE_SHARE, start)
    values = best.values if best.has_solution else None
    p_solver = float(lm.objectives["progress"] @ values) if values is not None else None
    return _Unbudgeted(best, values, p_solver, greedy_free, p_greedy)


def progress_target(state: SolveState, free: _Unbudgeted, vector: ObjectiveName) -> tuple[float, LinearModel]:
    """``target = (1 - delta) P*`` with ``P* = max(P_solver, P_greedy)``, and the model with ``P >= target``.

    The target is recorded in the report; the model is exported as stage 2 when the request asks.
    """
    p_star = max(free.p_solver or 0.0, free.p_greedy)
    delta = state.inst.round.delta
    target = (1 - delta) * p_star
    state.report.progress_target = ProgressTarget(p_star, free.p_solver, free.p_greedy, delta, target)
    lm = state.rm.lm
    target_lm = lm.with_row(lm.objectives["progress"], target, math.inf, PROGRESS_ROW, "progress")
    if state.export is not None:
        state.export.second(target_lm, vector, p_star)
    return target, target_lm


def _target_start(state: SolveState, target_lm: LinearModel, free: _Unbudgeted) -> tuple[np.ndarray | None, bool]:
    """The target stage's start and whether it meets the target.

    Stage 1's solution or the unbudgeted greedy plan, whichever first meets the target within the
    budget; failing both, the start of §5.4.
    """
    hints = [free.values] if free.values is not None else []
    hints.append(state.rm.encode(free.greedy))
    hint = next((v for v in hints if target_lm.is_feasible(v)), None)
    if hint is not None:
        return hint, True
    return mip_start(state), False


OBJECTIVES: dict[Objective, ObjectiveStrategy] = {
    "progress": ProgressObjective(),
    "energy": TargetObjective("energy", "energy"),
    "efficiency": TargetObjective("efficiency", "excess_energy"),
}
"""The strategy of each instance objective."""

OBJECTIVE_VECTOR: dict[Objective, ObjectiveName] = {name: s.vector for name, s in OBJECTIVES.items()}
"""The model's objective vector that each instance objective optimises (exported with the model)."""
