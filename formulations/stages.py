"""The stages of one solve (docs/design.md §5.1-5.6 and §5.8), as small functions over a :class:`SolveState`.

A solve is: build the model (:func:`build_state`), compute heuristic plans (:func:`add_heuristic`),
possibly solve the LP relaxation or the core (:mod:`formulations.relaxation`), run MIP stages under
the clock and the watchdog (:func:`mip_stage`, each checked by :func:`checked_bound` and judged by
:func:`stage_proven`), and end in :func:`finish` (decode, place, validate, the verdict) or
:func:`fallback` (the best heuristic plan). Which stages run, and in what order, is the objective's
business (:mod:`formulations.objectives`).

Time: the clock starts when the caller says (the front door starts it when it is called unless
its caller started it earlier; the command line starts it before reading the instance) and
everything counts against ``time_limit_s``: build, the greedy plan, each stage (a share of the
time left), the LP bound (only with the time the stages leave), and a reserve for decoding,
placing and validating. Every stage runs under the watchdog
(:mod:`formulations.watchdog`), whose deadline never passes the planner's own.

Each stage gets ``share * left`` (s) as the solver's own limit (never below :data:`MIN_STAGE_S`) and
all of ``left`` as the watchdog's deadline, so a stage cannot eat the next one's share; with less
than :data:`MIN_STAGE_S` left it is skipped and recorded ``skipped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from wattplan.formulations.backends import Backend, ObjectiveName, SolveParams, SolverResult, Solvers
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.round_model import RoundModel, build_round_model
from wattplan.formulations.stage_export import StageExport
from wattplan.formulations.verdict import consistent_bound, objective_unit, relative_gap, within_gap
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.domain import Instance, Objective
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.solve_report import HeuristicRecord, ModelStats, PlanNote, SolveReport, StageRecord
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.core.greedy import progress_of
from wattplan.planner.core.validate import checked

MIN_STAGE_S = 0.2
"""A stage with less time than this (s) is skipped, not started."""
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


@dataclass
class SolveState:
    """What the stages of one planning call share (data only; the objectives hold the control flow).

    The model, the backends, the clock, the report, and what the stages found so far: heuristic
    plans and their progress, the proven LP bound, the core's columns.
    """

    inst: Instance
    rm: RoundModel
    backend: Backend
    req: PlanRequest
    clock: Clock
    report: SolveReport
    large: bool
    """True when the model is solved on its core (``formulations.solve.CORE_MIN_COLUMNS`` columns or more)."""
    lp_backend: Backend | None = None
    lp_missing: str = ""
    export: StageExport | None = None
    heuristics: dict[str, list[Allocation]] = field(default_factory=dict)
    heuristic_progress: dict[str, float] = field(default_factory=dict)
    lp_bound: float | None = None
    core: np.ndarray | None = None
    first_heuristic: str | None = None


def build_state(
    inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers, core_min_columns: int
) -> SolveState:
    """Start the clock at ``started_at`` (s) and build the round model; the state of the solve.

    The build time (s) goes to the report; stage 1 is written when the request exports the model;
    a model of at least ``core_min_columns`` columns is large (solved on its core).
    """
    clock = Clock(req.time_limit_s, started_at, len(inst.jobs))
    build_begin = time.perf_counter()
    rm = build_round_model(inst)
    report = SolveReport(model=model_stats(rm, time.perf_counter() - build_begin))
    export = StageExport(solvers.mip, req.export_model, inst) if req.export_model is not None else None
    if export is not None:
        export.first(rm.lm)  # stage 2 is written where its model is built (formulations/stage_export.py)
    large = rm.lm.num_cols >= core_min_columns
    return SolveState(inst, rm, solvers.mip, req, clock, report, large, solvers.lp, solvers.lp_missing, export)


def model_stats(rm: RoundModel, build_s: float) -> ModelStats:
    """The model's size and the option counts, for the report (``build_s`` in s)."""
    return ModelStats(
        columns=rm.lm.num_cols,
        rows=rm.lm.num_rows,
        nonzeros=rm.lm.num_nonzeros,
        options={"exclusive": len(rm.options.exclusive_table), "pair_sides": len(rm.options.pair_table)},
        enumerated=dict(rm.options.enumerated),
        pruned=dict(rm.options.pruned),
        build_s=round(build_s, 4),
    )


def add_heuristic(state: SolveState, name: str, make: Callable[[Instance], list[Allocation]]) -> None:
    """Compute a heuristic plan and remember it with its progress (``sum w pi``) and its time (s)."""
    begin = time.perf_counter()
    allocations = make(state.inst)
    progress = progress_of(state.inst, allocations)
    state.heuristics[name] = allocations
    state.heuristic_progress[name] = progress
    state.report.heuristics[name] = HeuristicRecord(progress, round(time.perf_counter() - begin, 4))


def note(state: SolveState, kind: PlanNote, text: str) -> None:
    """Record why the plan is not simply the solver's plan for its objective."""
    state.report.notes[kind] = text


def best_heuristic(state: SolveState) -> str:
    """The heuristic plan with the most progress (ties: greedy) among those that run every tail-bound job."""
    progress = state.heuristic_progress
    bound = {j.id for j in state.inst.jobs if j.min_steps > 0}

    def runs_bound(name: str) -> bool:
        return bound <= {job for a in state.heuristics[name] for job in a.job_ids}

    return max(progress, key=lambda k: (runs_bound(k), progress[k], k == "greedy"))


def current_allocations(inst: Instance) -> list[Allocation]:
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


def known_columns(state: SolveState) -> np.ndarray:
    """The columns used by any heuristic plan or by the running jobs' current configurations."""
    plans = [*state.heuristics.values(), current_allocations(state.inst)]
    used = [np.flatnonzero(state.rm.encode(a) > 0) for a in plans if a]
    return np.unique(np.concatenate(used)) if used else np.zeros(0, dtype=np.int64)


def mip_start(state: SolveState) -> np.ndarray | None:
    """The start with the most progress among the heuristic plans and the running jobs as they run now (§5.4).

    None when the backend takes no start (``features.mip_start``) or no candidate is feasible.
    """
    if not state.backend.features.mip_start:
        return None
    plans = dict(state.heuristics)
    if state.req.warm_start:
        plans["current"] = current_allocations(state.inst)
    best: tuple[float, str, np.ndarray] | None = None
    for name, allocations in plans.items():
        v = state.rm.encode(allocations)
        if allocations and state.rm.lm.is_feasible(v):
            p = float(state.rm.lm.objectives["progress"] @ v)
            if best is None or p > best[0]:
                best = (p, name, v)
    if best is None:
        return None
    state.report.start = best[1]
    return best[2]


def mip_stage(
    state: SolveState,
    name: str,
    lm: LinearModel,
    objective: ObjectiveName,
    share: float,
    start: np.ndarray | None = None,
) -> SolverResult:
    """One MIP stage: ``share`` of the time left (s) as the solver's limit, all of it as the watchdog's deadline.

    Maximises ``objective`` when it is ``progress``, else minimises it (J). Recorded in the report;
    skipped (no solve) with less than :data:`MIN_STAGE_S` left. A bound its own solution beats is
    dropped (:func:`checked_bound`). On a core (``state.core``) the MIP is restricted to the core's
    columns plus the start's, and the solver's bound, which holds for the core only, is dropped.
    """
    left = state.clock.left()
    if left < MIN_STAGE_S:
        state.report.stages.append(StageRecord(name, "skipped", message=f"{left:.2f} s left", on_clock=True))
        return SolverResult("no_solution", message="skipped: no time left")
    limit = max(share * left, MIN_STAGE_S)
    req = state.req
    params = SolveParams(limit, req.rel_gap, req.threads, req.seed, req.node_limit)
    usable_start = start if state.backend.features.mip_start else None
    maximize = objective == "progress"
    if state.core is None:
        args = (lm, objective, maximize, params, usable_start)
        result = checked_bound(state, run_with_deadline(state.backend.solve, args, left), objective)
    else:
        cols = state.core if start is None else np.union1d(state.core, np.flatnonzero(start > 0))
        sub_start = usable_start[cols] if usable_start is not None else None
        args = (lm.restricted(cols), objective, maximize, params, sub_start)
        result = _lifted(run_with_deadline(state.backend.solve, args, left), lm, cols)
    state.report.stages.append(stage_record(name, result, state.rm.lm, limit))
    return result


def _lifted(result: SolverResult, lm: LinearModel, cols: np.ndarray) -> SolverResult:
    """A solve of ``lm`` restricted to ``cols`` (a core) put back in ``lm``'s columns.

    The solver's bound holds for the core only, not for the round: dropped.
    """
    if result.values is None:
        return result
    values = np.zeros(lm.num_cols)
    values[cols] = result.values
    return replace(result, values=values, bound=None, message=f"core of {len(cols)} columns: {result.message}")


def stage_record(name: str, r: SolverResult, lm: LinearModel, limit_s: float) -> StageRecord:
    """What one solve reported; ``progress`` and ``energy_j`` (J) are of the solution it returned."""
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
        stats=dict(r.stats),
        on_clock=r.on_clock,
    )


def checked_bound(state: SolveState, result: SolverResult, vector: ObjectiveName) -> SolverResult:
    """``result`` with its bound dropped, and the drop noted, when its own solution beats it (§5.13)."""
    bound = consistent_bound(result, vector == "progress", objective_unit(state.rm.lm, vector))
    if bound is None and result.bound is not None:
        why = f"bound {result.bound:.10g} beaten by its own solution {result.objective:.10g}: dropped"
        note(state, "bound_note", f"{state.backend.name}: {why}")
        return replace(result, bound=None, message=f"{result.message}; {why}")
    return result


def stage_proven(state: SolveState, result: SolverResult, vector: ObjectiveName) -> bool:
    """True when the stage's own proven bound puts its solution within ``rel_gap`` (wattplan's verdict)."""
    unit = objective_unit(state.rm.lm, vector)
    return result.has_solution and within_gap(result.objective, result.bound, state.req.rel_gap, unit)


def fallback(state: SolveState, why: str) -> Plan:
    """The best heuristic plan, status ``fallback``, objective ``progress``, ``fallback_reason`` ``why`` (§5.5)."""
    name = best_heuristic(state)
    note(state, "fallback_reason", why)
    info = SolveInfo(
        solver=f"{state.backend.name}+{name}",
        status="fallback",
        solve_s=state.report.solve_s,
        report=state.report,
        objective="progress",
    )
    return checked(state.inst, assemble_plan(state.inst, state.heuristics[name], info))


@dataclass(frozen=True, slots=True)
class Outcome:
    """A solve's chosen plan before assembly.

    Its allocations, the solver to name, whether every other stage was proven, how to read the
    objective value off the assembled plan, and a proven bound of the round (or None).
    """

    allocations: list[Allocation]
    solver: str
    proven: bool
    value_of: Callable[[Plan], float]
    bound: float | None


def finish(state: SolveState, objective: Objective, vector: ObjectiveName, outcome: Outcome) -> Plan:
    """Place and validate ``outcome``; the verdict from its bound and the plan's evaluated value (``vector``'s units).

    The status is ``optimal`` only if ``outcome.proven`` and the gap, computed here from the bound
    and ``outcome.value_of(plan)``, is within ``rel_gap``: never the solver's status.
    """
    inst, allocations = state.inst, outcome.allocations
    draft = assemble_plan(inst, allocations, SolveInfo(solver=outcome.solver, status="feasible"))
    value = outcome.value_of(draft)
    unit = objective_unit(state.rm.lm, vector)
    optimal = outcome.proven and within_gap(value, outcome.bound, state.req.rel_gap, unit)
    info = SolveInfo(
        objective=objective,
        solver=outcome.solver,
        status="optimal" if optimal else "feasible",
        objective_value=value,
        bound=outcome.bound,
        gap=relative_gap(value, outcome.bound, unit),
        solve_s=state.report.solve_s,
        report=state.report,
    )
    return checked(inst, assemble_plan(inst, allocations, info))
