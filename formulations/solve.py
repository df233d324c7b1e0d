"""The solve strategy: plan a round with a solver backend (docs/design.md §4 and §5).

``progress`` (PowerFlow): maximise ``P = sum w pi`` under the budget; then, among plans with
``P >= (1 - 1e-6) P1`` (``P1`` the first stage's progress), the least energy. The reported
objective, bound and gap are the first stage's.

``energy`` (EaCO): ``P*`` = the best progress with no budget; then the least energy with
``P >= (1 - delta) P*``, the budget (if any) still holding. ``P*`` is never taken below the
greedy plan's progress without budget, so a weak first-stage incumbent (a time limit hit
early) cannot lower the target to nothing and empty the plan. When the target is
infeasible, or unsolved in time, the plan falls back to ``progress`` under the budget and
says so.

Time: the clock starts when the caller says (the front door starts it when it is called unless
its caller started it earlier; the command line starts it before reading the instance) and
everything counts against ``time_limit_s``: build, the greedy plan, each stage (a share of the
time left), the LP bound (only with the time the stages leave), and a reserve for decoding,
placing and validating. Every stage runs under the watchdog
(:mod:`formulations.watchdog`), whose deadline never passes the planner's own.

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

Large rounds (a model of at least :data:`CORE_MIN_COLUMNS` columns) are solved on a *core*: the LP
relaxation is solved by column generation (:mod:`formulations.column_generation`), whose
Lagrangian bound is valid for the full model at every iteration and is the reported
``lp_bound``; the stages then solve the MIP restricted to the columns column generation kept
plus those of every start and heuristic plan (price and branch). A plan of the core is a
plan of the round; the solver's own bound on the core is not a bound of the round and is
dropped, so such a plan is ``optimal`` only when it is within ``rel_gap`` of the Lagrangian
bound. The ``energy`` and ``efficiency`` objectives take their core from the LP of most
progress without budget.

Entry: :func:`solve_round`, called only by the front door :func:`planner.planning.plan`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from formulations.backends import (
    Backend,
    ObjectiveName,
    SolveParams,
    SolverResult,
    Solvers,
)
from formulations.column_generation import column_generation_result
from formulations.ir import LinearModel
from formulations.lp_rounding import lp_guided_allocations
from formulations.round_model import ENERGY_ROW, PROGRESS_ROW, RoundModel, build_round_model
from formulations.stage_export import StageExport
from formulations.watchdog import run_with_deadline
from planner.contracts.domain import Instance, Objective
from planner.contracts.plan import Plan
from planner.contracts.request import PlanRequest
from planner.contracts.solve_report import (
    HeuristicRecord,
    ModelStats,
    PlanNote,
    ProgressTarget,
    SolveReport,
    StageRecord,
)
from planner.core.assemble import Allocation, SolveInfo, assemble_plan
from planner.core.greedy import greedy_allocations, progress_of
from planner.core.validate import checked

LEXICOGRAPHIC_TOLERANCE = 1e-6
"""The second ``progress`` stage keeps ``P >= (1 - 1e-6) P1``."""
GAP_TOLERANCE = 1e-6
"""Slack on ``gap <= rel_gap`` for an ``optimal`` status: a bound carries numerical noise (CP-SAT's
is an integer of the scaled model, off by up to half a unit of :mod:`formulations.scaling` per
term: a relative gap of 7e-9 was seen on a proven 3-job optimum)."""
MIN_STAGE_S = 0.2
"""A stage with less time than this (s) is skipped, not started."""
FIRST_STAGE_SHARE = 0.75
"""``progress``, stage 1 (most progress under the budget): share of the time left."""
SECOND_STAGE_SHARE = 0.9
"""``progress``, stage 2 (least energy at that progress): share of the time left after stage 1."""
NO_BUDGET_STAGE_SHARE = 0.4
"""``energy``, stage 1 (``P*``, most progress without budget): share of the time left."""
TARGET_STAGE_SHARE = 0.85
"""``energy``, stage 2 (least energy at the progress target): share of the time left after stage 1."""
LP_SHARE = 0.5
"""The LP relaxation (bound and LP-guided start): share of the time left."""
CORE_LP_SHARE = 0.8
"""The same on a large round, by column generation: its LP-rounded plan is most of the plan's quality."""
CORE_MIP_MAX_COLUMNS = 20_000
"""A core with more columns is cut to the LP solution's support (plus the known plans' columns and ``w``, ``u``):
on 2,000-job rounds a 30,000-column core did not improve the LP-rounded plan in 2 s, and at 10,000 jobs HiGHS did
not finish its presolve in 22 s, while the 3,244-column support of a V100-only 2,000-job round solved to
optimality in 1-2 s (0.0015% below the bound, against 0.85% for the LP-rounded plan)."""
SUPPORT_EPS = 1e-9
"""An LP value above this puts its column in the support."""
CORE_MIN_COLUMNS = 40_000
"""A model with at least this many columns is solved on its core (module docstring): about 250 jobs."""
MAX_RESERVE_S = 1.0
RESERVE_SHARE = 0.05
RESERVE_PER_JOB_S = 2e-4
"""Reserve for decoding, placing and validating: ``min(MAX_RESERVE_S, RESERVE_SHARE * limit)`` plus
``min(RESERVE_PER_JOB_S * jobs, 0.1 * limit)`` (s): placing and validating 10,000 jobs takes about 1.5 s."""


class Clock:
    """Seconds left of the planner's own limit, less a reserve for decoding and validating."""

    def __init__(self, limit_s: float, started_at: float, jobs: int = 0) -> None:
        self.start = started_at
        self.limit_s = limit_s
        self.reserve_s = min(MAX_RESERVE_S, RESERVE_SHARE * limit_s) + min(RESERVE_PER_JOB_S * jobs, 0.1 * limit_s)

    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.start

    def left(self) -> float:
        """Seconds left for solving: ``max(0, limit - reserve - elapsed)``."""
        return max(0.0, self.limit_s - self.reserve_s - self.elapsed())


ABS_GAP_SHARE = 1e-9
"""A bound within this share of the objective's largest coefficient (``unit``, the value of the best
single option, in the objective's own units) of the objective closes the gap: a round whose best
plan is empty has objective 0 and a bound that carries rounding of about that size (CP-SAT's,
:mod:`formulations.scaling`), so a purely relative gap could never be closed there."""


def _gap(objective: float | None, bound: float | None, unit: float = 0.0) -> float | None:
    """``|bound - objective| / max(|objective|, 1e-9)``, 0 within ``ABS_GAP_SHARE * unit``; None without both."""
    if objective is None or bound is None:
        return None
    diff = abs(bound - objective)
    return 0.0 if diff <= ABS_GAP_SHARE * unit else diff / max(abs(objective), 1e-9)


def tighter(a: float | None, b: float | None, maximize: bool) -> float | None:
    """The tighter of two proven bounds (the smaller upper bound when maximising, the larger lower bound else)."""
    if a is None or b is None:
        return a if b is None else b
    return min(a, b) if maximize else max(a, b)


def within_gap(objective: float | None, bound: float | None, rel_gap: float, unit: float = 0.0) -> bool:
    """True when a proven ``bound`` puts ``objective`` within ``rel_gap`` (+ :data:`GAP_TOLERANCE`) of the optimum."""
    gap = _gap(objective, bound, unit)
    return gap is not None and gap <= rel_gap + GAP_TOLERANCE


def consistent_bound(r: SolverResult, maximize: bool, unit: float = 0.0) -> float | None:
    """``r.bound`` unless its own solution beats it (beyond :data:`GAP_TOLERANCE`): a contradicted bound is no proof."""
    if r.bound is None or r.objective is None or not r.has_solution:
        return r.bound
    excess = (r.objective - r.bound) if maximize else (r.bound - r.objective)
    if excess > GAP_TOLERANCE * max(abs(r.objective), abs(r.bound)) + ABS_GAP_SHARE * unit:
        return None
    return r.bound


def objective_unit(lm: LinearModel, vector: ObjectiveName) -> float:
    """The largest ``|c|`` of an objective vector: the scale of :data:`ABS_GAP_SHARE` (model units)."""
    coefs = lm.objectives[vector]
    return float(np.abs(coefs).max()) if len(coefs) else 0.0


@dataclass(frozen=True, slots=True)
class LpRelaxation:
    """The LP relaxation's optimum ``value`` and solution ``values`` (None when not solved) and a note.

    By column generation, ``value`` is the Lagrangian bound (valid, possibly above the LP optimum
    when the time ran out) and ``values`` the restricted master's solution.
    """

    value: float | None
    values: np.ndarray | None
    note: str


def lp_relaxation(
    backend: Backend, lm: LinearModel, objective: ObjectiveName, maximize: bool, limit_s: float
) -> LpRelaxation:
    """The LP relaxation of ``lm`` by ``backend`` within ``limit_s``: its proven bound and solution, else no value.

    The value is the backend's *proven* bound (the Lagrangian bound of its duals,
    :mod:`formulations.lagrangian`), never the LP objective it reports: an LP solved without a
    bound to show for it gives no ``lp_bound``.
    """
    if not backend.features.lp_relaxation:
        return LpRelaxation(None, None, f"not computed: {backend.name} solves no LP relaxation")
    args = (lm, objective, maximize, SolveParams(time_limit_s=limit_s), None, True)
    r = run_with_deadline(backend.solve, args, limit_s)
    note = f"{r.status} in {r.solve_s:.2f} s"
    if r.has_solution and r.status == "optimal" and r.bound is not None:
        return LpRelaxation(r.bound, r.values, note)
    if r.has_solution and r.status == "optimal":
        note += ", no proven bound (the solver gave no usable duals)"
    return LpRelaxation(None, None, note)


def _current_allocations(inst: Instance) -> list[Allocation]:
    """Each running job's current configuration (pairs as they are now)."""
    allocations: list[Allocation] = []
    seen: set[str] = set()
    for job in inst.jobs:
        cur = job.current
        if cur is None or job.id in seen:
            continue
        partner = cur.shares_with
        if partner and inst.has_job(partner) and inst.job(partner).current:
            ids = tuple(j.id for j in inst.jobs if j.id in (job.id, partner))
            seen.update(ids)
            allocations.append(Allocation(ids, cur.gpu_type, cur.gpus, cur.setting))
        else:
            seen.add(job.id)
            allocations.append(Allocation((job.id,), cur.gpu_type, cur.gpus, cur.setting))
    return allocations


def _model_stats(rm: RoundModel, build_s: float) -> ModelStats:
    """The model's size and the option counts, for the report."""
    return ModelStats(
        columns=rm.lm.num_cols,
        rows=rm.lm.num_rows,
        nonzeros=rm.lm.num_nonzeros,
        options={"exclusive": len(rm.options.exclusive_table), "pair_sides": len(rm.options.pair_table)},
        enumerated=dict(rm.options.enumerated),
        pruned=dict(rm.options.pruned),
        build_s=round(build_s, 4),
    )


def _stage_record(name: str, r: SolverResult, lm: LinearModel, limit_s: float) -> StageRecord:
    """What one solve reported; ``progress`` and ``energy_j`` are of the solution it returned."""
    has = r.has_solution and r.values is not None
    return StageRecord(
        stage=name,
        status=r.status,
        objective=r.objective,
        bound=r.bound,
        progress=float(lm.objectives["progress"] @ r.values) if has else None,
        energy_j=float(lm.objectives["energy"] @ r.values) if has else None,
        limit_s=round(limit_s, 4),
        solve_s=round(r.solve_s, 4),
        message=r.message.splitlines()[0] if r.message else "",
    )


def _plan_progress(plan: Plan) -> float:
    """The progress ``sum w pi`` of a plan."""
    return plan.round.progress


OBJECTIVE_VECTOR: dict[Objective, ObjectiveName] = {
    "progress": "progress",
    "energy": "energy",
    "efficiency": "excess_energy",
}
"""The model's objective vector that each instance objective optimises (exported with the model)."""


def solve_round(inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers) -> Plan:
    """Plan ``inst`` with the backends of ``req`` (see the module docstring); always a validated plan.

    ``solvers``: ``req.solver`` and ``req.lp_solver`` resolved by the front door, once per call or per replay.
    """
    backend = solvers.mip
    clock = Clock(req.time_limit_s, started_at, len(inst.jobs))
    build_begin = time.perf_counter()
    rm = build_round_model(inst)
    objective: Objective = req.objective or inst.round.objective
    report = SolveReport(model=_model_stats(rm, time.perf_counter() - build_begin))
    export = StageExport(backend, req.export_model, inst) if req.export_model is not None else None
    if export is not None:
        export.first(rm.lm)  # stage 2 is written where its model is built (formulations/stage_export.py)
    session = _Session(inst, rm, backend, req, clock, report, export=export, lp_backend=solvers.lp)
    session.lp_missing = solvers.lp_missing
    session.add_heuristic("greedy", greedy_allocations)
    if objective == "energy":
        return session.energy_objective("energy")
    if objective == "efficiency":
        return session.energy_objective("excess_energy")
    relaxation = session.relax(rm.lm, "progress", True, CORE_LP_SHARE if session.large else LP_SHARE)
    if relaxation is not None and relaxation.values is not None:
        lp_values = relaxation.values
        session.add_heuristic("lp-rounding", lambda _: lp_guided_allocations(rm, lp_values))
    return session.progress_objective()


@dataclass
class _Session:
    """One planning call: the model, the backend, the clock, the heuristic plans and the report."""

    inst: Instance
    rm: RoundModel
    backend: Backend
    req: PlanRequest
    clock: Clock
    report: SolveReport
    heuristics: dict[str, list[Allocation]] = field(default_factory=dict)
    heuristic_progress: dict[str, float] = field(default_factory=dict)
    lp_bound: float | None = None
    core: np.ndarray | None = None
    first_heuristic: str | None = None
    export: StageExport | None = None
    lp_backend: Backend | None = None
    lp_missing: str = ""

    def add_heuristic(self, name: str, make: Callable[[Instance], list[Allocation]]) -> None:
        """Compute a heuristic plan and remember it with its progress."""
        begin = time.perf_counter()
        allocations = make(self.inst)
        progress = progress_of(self.inst, allocations)
        self.heuristics[name] = allocations
        self.heuristic_progress[name] = progress
        self.report.heuristics[name] = HeuristicRecord(progress, round(time.perf_counter() - begin, 4))

    def note(self, kind: PlanNote, text: str) -> None:
        """Record why the plan is not simply the solver's plan for its objective."""
        self.report.notes[kind] = text

    def best_heuristic(self) -> str:
        """The heuristic plan with the most progress (ties: greedy)."""
        return max(self.heuristic_progress, key=lambda k: (self.heuristic_progress[k], k == "greedy"))

    def start(self) -> np.ndarray | None:
        """The start with the most progress among the heuristic plans and the running jobs as they run now.

        None when the backend takes no start (``features.mip_start``) or no candidate is feasible.
        """
        if not self.backend.features.mip_start:
            return None
        plans = dict(self.heuristics)
        if self.req.warm_start:
            plans["current"] = _current_allocations(self.inst)
        best: tuple[float, str, np.ndarray] | None = None
        for name, allocations in plans.items():
            v = self.rm.encode(allocations)
            if allocations and self.rm.lm.is_feasible(v):
                p = float(self.rm.lm.objectives["progress"] @ v)
                if best is None or p > best[0]:
                    best = (p, name, v)
        if best is None:
            return None
        self.report.start = best[1]
        return best[2]

    def relax(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        share: float,
        feasible: np.ndarray | None = None,
    ) -> LpRelaxation | None:
        """The LP relaxation with ``share`` of the time left; its optimum is the plan's ``lp_bound``.

        ``feasible``: a solution of ``lm`` whose columns column generation starts from (a progress
        target may be out of reach of the heuristic plans' columns alone).
        """
        if not self.req.lp_bound:
            return None
        left = self.clock.left()
        if left < MIN_STAGE_S:
            relaxation = LpRelaxation(None, None, f"not computed: {left:.2f} s left")
        elif self.large:
            extra = np.flatnonzero(feasible > 0) if feasible is not None else None
            relaxation = self.column_generation(lm, objective, maximize, max(share * left, MIN_STAGE_S), extra)
        elif self.lp_backend is None:
            relaxation = LpRelaxation(None, None, f"not computed: {self.lp_missing}")
        else:
            relaxation = lp_relaxation(self.lp_backend, lm, objective, maximize, max(share * left, MIN_STAGE_S))
        self.lp_bound = relaxation.value
        self.report.lp_bound = relaxation.value
        self.report.lp_bound_note = relaxation.note
        return relaxation

    @property
    def large(self) -> bool:
        """True when the model is solved on its core (at least :data:`CORE_MIN_COLUMNS` columns)."""
        return self.rm.lm.num_cols >= CORE_MIN_COLUMNS

    def known_columns(self) -> np.ndarray:
        """The columns used by any heuristic plan or by the running jobs' current configurations."""
        plans = [*self.heuristics.values(), _current_allocations(self.inst)]
        used = [np.flatnonzero(self.rm.encode(a) > 0) for a in plans if a]
        return np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)

    def column_generation(
        self, lm: LinearModel, objective: ObjectiveName, maximize: bool, limit_s: float, extra: np.ndarray | None = None
    ) -> LpRelaxation:
        """The LP of ``lm`` by column generation within ``limit_s``; the first call's columns become the core.

        The master starts from the columns of the heuristic plans, the running jobs and ``extra``.
        """
        seed = self.known_columns() if extra is None else np.union1d(self.known_columns(), extra)
        args = (lm, lm.objectives[objective], maximize, self.rm.job_rows, seed, limit_s)
        r = run_with_deadline(column_generation_result, args, limit_s + min(1.0, 0.1 * limit_s))
        if r.columns is not None and self.core is None:
            self.core = np.union1d(r.columns, seed)
            if len(self.core) > CORE_MIP_MAX_COLUMNS and r.values is not None:
                # Too many for the MIP in time: the LP's support, the known plans and every column outside
                # the options (w, u), where the fractional jobs choose among the LP's own columns.
                options = len(self.rm.x_cols) + len(self.rm.z_cols)
                support = np.union1d(np.flatnonzero(r.values > SUPPORT_EPS), seed)
                self.core = np.union1d(support, np.arange(options, lm.num_cols))
        if r.bound is None or r.values is None:
            return LpRelaxation(None, None, r.message or r.status)
        return LpRelaxation(r.bound, r.values, f"{r.message} in {r.solve_s:.2f} s")

    def stage(
        self, name: str, lm: LinearModel, objective: ObjectiveName, share: float, start: np.ndarray | None = None
    ) -> SolverResult:
        """One solve with ``share`` of the time left as the solver's limit and all of it as the deadline."""
        left = self.clock.left()
        if left < MIN_STAGE_S:
            self.report.stages.append(StageRecord(name, "skipped", message=f"{left:.2f} s left"))
            return SolverResult("no_solution", message="skipped: no time left")
        limit = max(share * left, MIN_STAGE_S)
        params = SolveParams(time_limit_s=limit, rel_gap=self.req.rel_gap, threads=self.req.threads, seed=self.req.seed)
        maximize = objective == "progress"
        usable_start = start if self.backend.features.mip_start else None
        if self.core is None:
            result = run_with_deadline(self.backend.solve, (lm, objective, maximize, params, usable_start), left)
            result = self.checked_bound(result, objective)
            self.report.stages.append(_stage_record(name, result, self.rm.lm, limit))
            return result
        cols = self.core if start is None else np.union1d(self.core, np.flatnonzero(start > 0))
        sub_start = usable_start[cols] if usable_start is not None else None
        result = run_with_deadline(
            self.backend.solve, (lm.restricted(cols), objective, maximize, params, sub_start), left
        )
        if result.values is not None:
            values = np.zeros(lm.num_cols)
            values[cols] = result.values
            # The solver's bound holds for the core only, not for the round: dropped.
            result = replace(
                result, values=values, bound=None, message=f"core of {len(cols)} columns: {result.message}"
            )
        self.report.stages.append(_stage_record(name, result, self.rm.lm, limit))
        return result

    def checked_bound(self, result: SolverResult, vector: ObjectiveName) -> SolverResult:
        """``result`` with its bound dropped, and the drop noted, when its own solution beats it."""
        bound = consistent_bound(result, vector == "progress", objective_unit(self.rm.lm, vector))
        if bound is None and result.bound is not None:
            why = f"bound {result.bound:.10g} beaten by its own solution {result.objective:.10g}: dropped"
            self.note("bound_note", f"{self.backend.name}: {why}")
            return replace(result, bound=None, message=f"{result.message}; {why}")
        return result

    def stage_proven(self, result: SolverResult, vector: ObjectiveName) -> bool:
        """True when the stage's own proven bound puts its solution within ``rel_gap`` (wattplan's verdict)."""
        unit = objective_unit(self.rm.lm, vector)
        return result.has_solution and within_gap(result.objective, result.bound, self.req.rel_gap, unit)

    def heuristic_stage(self) -> SolverResult | None:
        """The best heuristic plan as a proven first stage when it is within ``rel_gap`` of the LP bound."""
        lp = self.lp_bound
        name = self.best_heuristic()
        v = self.rm.encode(self.heuristics[name])
        p = float(self.rm.lm.objectives["progress"] @ v)
        if lp is None or not self.rm.lm.is_feasible(v) or abs(p - self.heuristic_progress[name]) > 1e-9 * max(1, p):
            return None
        if lp - p > self.req.rel_gap * max(abs(p), 1e-9):
            return None
        result = SolverResult(
            "optimal", values=v, objective=p, bound=lp, message=f"{name} plan within the gap of the LP bound"
        )
        self.report.stages.append(_stage_record(f"max_progress ({name})", result, self.rm.lm, 0.0))
        return result

    def heuristic_as_stage(self, why: str) -> SolverResult:
        """The best heuristic plan as the first stage's (feasible) result, noted with ``why``."""
        name = self.best_heuristic()
        v = self.rm.encode(self.heuristics[name])
        self.first_heuristic = name
        self.note("floor_note", f"{why}: the {name} plan is the first stage's")
        return SolverResult("feasible", values=v, objective=float(self.rm.lm.objectives["progress"] @ v), message=why)

    def fallback(self, why: str) -> Plan:
        """The best heuristic plan, status ``fallback``."""
        name = self.best_heuristic()
        self.note("fallback_reason", why)
        info = SolveInfo(
            solver=f"{self.backend.name}+{name}",
            status="fallback",
            solve_s=self.report.solve_s,
            report=self.report,
            objective="progress",
        )
        return checked(self.inst, assemble_plan(self.inst, self.heuristics[name], info))

    def finish(
        self,
        objective: Objective,
        values: np.ndarray,
        proven: bool,
        value_of: Callable[[Plan], float],
        bound: float | None,
    ) -> Plan:
        """Decode, place and validate; ``value_of(plan)`` is the reported objective value.

        ``bound`` must be a proven bound of the round (or None). The status is ``optimal`` only
        if ``proven`` (every other stage proved by its own bound) and this stage's gap, computed
        here from ``bound`` and the plan's evaluated objective, is within ``rel_gap``: never the
        solver's status.
        """
        allocations = self.rm.decode(values)
        solver = self.backend.name
        if objective == "progress":
            name = self.best_heuristic()
            solver_progress = float(self.rm.lm.objectives["progress"] @ values)
            if self.heuristic_progress[name] > solver_progress * (1 + 1e-9):
                allocations, solver, proven = self.heuristics[name], f"{solver}+{name}", False
                self.note("floor_note", f"the {name} plan had more progress than the solver's: {name} plan kept")
                value_of = _plan_progress  # the kept plan's own progress, not the solver's
            elif self.first_heuristic is not None:
                solver = f"{solver}+{self.first_heuristic}"
        draft = assemble_plan(self.inst, allocations, SolveInfo(solver=solver, status="feasible"))
        value = value_of(draft)
        unit = objective_unit(self.rm.lm, OBJECTIVE_VECTOR[objective])
        gap = _gap(value, bound, unit)
        info = SolveInfo(
            objective=objective,
            solver=solver,
            status="optimal" if proven and within_gap(value, bound, self.req.rel_gap, unit) else "feasible",
            objective_value=value,
            bound=bound,
            gap=gap,
            solve_s=self.report.solve_s,
            report=self.report,
        )
        return checked(self.inst, assemble_plan(self.inst, allocations, info))

    def progress_objective(self, note: str | None = None) -> Plan:
        """Stage 1: max progress under the budget; stage 2: least energy at that progress."""
        if note:
            self.note("objective_note", note)
        lm = self.rm.lm
        first = self.heuristic_stage() or self.stage("max_progress", lm, "progress", FIRST_STAGE_SHARE, self.start())
        if (not first.has_solution or first.values is None) and self.core is not None and self.lp_bound is not None:
            # A large round: the solver found nothing on the core in time; the best heuristic plan
            # goes on to the energy stage and keeps the Lagrangian bound (no fallback).
            first = self.heuristic_as_stage(f"the solver found no plan on the core ({first.status})")
        if not first.has_solution or first.values is None:
            return self.fallback(f"no solution: {first.status}")
        p1 = float(lm.objectives["progress"] @ first.values)
        floor = (1 - LEXICOGRAPHIC_TOLERANCE) * p1
        second_lm = lm.with_row(lm.objectives["progress"], floor, math.inf, PROGRESS_ROW, "progress")
        if self.export is not None:
            self.export.second(second_lm, "energy", p1)
        second = self.stage("min_energy_at_progress", second_lm, "energy", SECOND_STAGE_SHARE, first.values)
        chosen = first.values
        if second.has_solution and second.values is not None and second_lm.is_feasible(second.values):
            if float(lm.objectives["energy"] @ second.values) <= float(lm.objectives["energy"] @ first.values):
                chosen = second.values
        # Stage 1 is judged in finish, from the tighter of its own bound and the proven LP bound (a
        # core's solver bound was dropped: only the Lagrangian bound holds for the round). Stage 2 is
        # proven only by its own bound; on a core it has none, so a core plan is never optimal.
        proven = self.stage_proven(second, "energy")
        bound = tighter(first.bound, self.lp_bound, maximize=True)
        return self.finish("progress", chosen, proven, _plan_progress, bound)

    def energy_objective(self, vector: ObjectiveName) -> Plan:
        """``P*`` without budget, then the least ``vector`` with ``P >= (1 - delta) P*`` under the budget.

        ``vector`` is ``energy`` (the ``energy`` objective) or ``excess_energy`` (``efficiency``:
        energy above each job's best energy per step, :mod:`formulations.round_model`).

        ``P* = max(P_solver, P_greedy)``: the solver's best progress with the budget row dropped
        and the greedy plan's progress on the same round with no budget, so the target is never
        lower than a plan the planner already knows.
        """
        lm = self.rm.lm
        unbudgeted = replace(self.inst, round=replace(self.inst.round, budget_j=None))
        greedy_free = greedy_allocations(unbudgeted)
        p_greedy = progress_of(self.inst, greedy_free)
        no_budget_lm = lm.without_rows([ENERGY_ROW])
        if self.large and self.core is None and self.clock.left() >= MIN_STAGE_S:
            self.column_generation(
                no_budget_lm, "progress", True, max(LP_SHARE * NO_BUDGET_STAGE_SHARE * self.clock.left(), MIN_STAGE_S)
            )
        best = self.stage("max_progress_no_budget", no_budget_lm, "progress", NO_BUDGET_STAGE_SHARE, self.start())
        best_values = best.values if best.has_solution else None
        p_solver = float(lm.objectives["progress"] @ best_values) if best_values is not None else None
        if p_solver is None and not greedy_free:
            return self.progress_objective("best progress without budget not found in time; planned for progress")
        p_star = max(p_solver or 0.0, p_greedy)
        target = (1 - self.inst.round.delta) * p_star
        self.report.progress_target = ProgressTarget(p_star, p_solver, p_greedy, self.inst.round.delta, target)
        target_lm = lm.with_row(lm.objectives["progress"], target, math.inf, PROGRESS_ROW, "progress")
        if self.export is not None:
            self.export.second(target_lm, vector, p_star)
        energy = lm.objectives[vector]
        objective: Objective = "energy" if vector == "energy" else "efficiency"
        hints = [best_values] if best_values is not None else []
        hints.append(self.rm.encode(greedy_free))
        hint = next((v for v in hints if target_lm.is_feasible(v)), None)
        start_meets_target = hint is not None
        if hint is None:
            hint = self.start()
        result = self.stage(f"min_{vector}_at_target", target_lm, vector, TARGET_STAGE_SHARE, hint)
        solved = result.has_solution and result.values is not None and target_lm.is_feasible(result.values)
        if hint is not None and start_meets_target and (not solved or energy @ hint < energy @ result.values):
            # The start is already a plan for this objective (progress >= target within the budget):
            # keep it rather than plan for progress, and never return more energy than it uses.
            why = f"not found ({result.status})" if not solved else "not better than the start"
            self.note("objective_note", f"least {vector} at progress >= {target:.6g} {why}; kept the start plan")
            return self.finish(objective, hint, False, self._value_of(vector, hint), None)
        if not solved or result.values is None:
            why = "unreachable under the budget" if result.status == "infeasible" else f"not solved ({result.status})"
            return self.progress_objective(
                f"{objective} objective: progress target {target:.6g} {why}; planned for progress"
            )
        # P* is proven by its own bound (no budget row: the progress LP bound does not apply); the
        # target stage is judged in finish from the tighter of its own bound and its proven LP bound.
        proven = self.stage_proven(best, "progress") and (p_solver or 0.0) >= p_greedy
        self.relax(target_lm, vector, False, 1.0, result.values)
        bound = tighter(result.bound, self.lp_bound, maximize=False)
        # The plan powers the fewest nodes that hold the allocations, never more than the solver's u.
        return self.finish(objective, result.values, proven, self._value_of(vector, result.values), bound)

    def _value_of(self, vector: ObjectiveName, values: np.ndarray) -> Callable[[Plan], float]:
        """The reported objective value: the plan's energy, or its excess energy (fewest nodes, as placed)."""
        if vector == "energy":
            return lambda plan: plan.round.energy_j
        coefs = self.rm.lm.objectives[vector]
        return lambda plan: float(coefs @ self.rm.encode(self.rm.decode(values)))
