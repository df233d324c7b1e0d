"""Plan a round with a solver: the objectives, the lexicographic stage, the deadline, the fallback.

``progress`` (PowerFlow): maximise ``P = sum w pi`` under the budget; then, among plans with
``P >= (1 - 1e-6) P1`` (``P1`` the first stage's progress), the least energy. The reported
objective, bound and gap are the first stage's.

``energy`` (EaCO): ``P*`` = the best progress with no budget; then the least energy with
``P >= (1 - delta) P*``, the budget (if any) still holding. When that is infeasible, or
unsolved in time, the plan falls back to ``progress`` under the budget and says so.

Every stage runs under the watchdog (:mod:`formulations.watchdog`) and a share of the time
limit; if the solver returns no plan the greedy plan (:mod:`planner.greedy`) is used with
status ``fallback``. Whatever the path, the plan passes the validator before it is returned.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from formulations.backends import Backend, SolveParams, SolverResult, get_backend
from formulations.ir import LinearModel
from formulations.round_model import ENERGY_ROW, PROGRESS_ROW, RoundModel, build_round_model
from formulations.watchdog import run_with_deadline
from planner.assemble import Allocation, SolveInfo, assemble_plan
from planner.domain import Instance
from planner.greedy import greedy_allocations
from planner.plan import Plan
from planner.planning import checked

LEXICOGRAPHIC_TOLERANCE = 1e-6
WATCHDOG_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What the user asked for; ``None`` keeps the instance's own choice."""

    solver: str = "highs"
    objective: str | None = None
    time_limit_s: float = 30.0
    rel_gap: float = 1e-4
    threads: int = 2
    seed: int = 0
    lp_bound: bool = True
    warm_start: bool = True
    export_model: Path | None = None


@dataclass
class StageLog:
    stages: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, r: SolverResult) -> None:
        self.stages.append(
            {
                "stage": name,
                "status": r.status,
                "objective": r.objective,
                "bound": r.bound,
                "solve_s": round(r.solve_s, 4),
                "message": r.message.splitlines()[0] if r.message else "",
            }
        )


def _call(backend: Backend, lm, objective, maximize, params, start=None, relax=False) -> SolverResult:
    return backend.solve(lm, objective, maximize, params, start, relax)


class _Clock:
    def __init__(self, limit_s: float) -> None:
        self.start = time.perf_counter()
        self.limit_s = limit_s

    def left(self) -> float:
        return max(0.0, self.limit_s - (time.perf_counter() - self.start))


def _solve(
    backend: Backend, lm, objective, maximize, req: PlanRequest, clock: _Clock, share: float, start=None
) -> SolverResult:
    """One stage: the solver gets ``share`` of the time left; the watchdog stops waiting when
    the planner's own time is up (plus a small grace), whatever the solver does."""
    limit = max(share * clock.left(), 0.05)
    params = SolveParams(time_limit_s=limit, rel_gap=req.rel_gap, threads=req.threads, seed=req.seed)
    deadline = min(clock.left() + WATCHDOG_GRACE_S, limit + max(WATCHDOG_GRACE_S, 0.25 * limit))
    return run_with_deadline(_call, (backend, lm, objective, maximize, params, start), deadline)


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return abs(bound - objective) / max(abs(objective), 1e-9)


def lp_relaxation_bound(lm: LinearModel, objective: str, maximize: bool, limit_s: float) -> float | None:
    """The LP relaxation optimum of the same model (HiGHS simplex), or None if unavailable."""
    try:
        highs = get_backend("highs")
    except Exception:
        return None
    params = SolveParams(time_limit_s=max(limit_s, 0.05))
    args = (highs, lm, lm.objectives[objective], maximize, params, None, True)
    r = run_with_deadline(_call, args, limit_s + WATCHDOG_GRACE_S)
    return r.objective if r.has_solution else None


def _warm_start(rm: RoundModel) -> np.ndarray | None:
    """Each running job's current configuration as a start (pairs as they are now)."""
    inst = rm.instance
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
    if not allocations:
        return None
    start = rm.encode(allocations)
    return start if rm.lm.is_feasible(start) else None


def _model_stats(rm: RoundModel, build_s: float) -> dict[str, Any]:
    return {
        "columns": rm.lm.num_cols,
        "rows": rm.lm.num_rows,
        "nonzeros": rm.lm.num_nonzeros,
        "options": {"exclusive": len(rm.options.exclusive), "pair_sides": len(rm.options.pair_sides)},
        "enumerated": rm.options.enumerated,
        "pruned": rm.options.pruned,
        "build_s": round(build_s, 4),
    }


def _fallback_plan(inst: Instance, name: str, extra: dict[str, Any], why: str) -> Plan:
    extra = {**extra, "fallback_reason": why}
    info = SolveInfo(solver=f"{name}+greedy", status="fallback", extra=extra, objective="progress")
    return checked(inst, assemble_plan(inst, greedy_allocations(inst), info))


def plan_round(inst: Instance, req: PlanRequest) -> Plan:
    """Plan ``inst`` as ``req`` asks; always returns a validated plan (see the module docstring)."""
    backend = get_backend(req.solver)
    clock = _Clock(req.time_limit_s)
    begin = time.perf_counter()
    rm = build_round_model(inst)
    build_s = time.perf_counter() - begin
    objective = req.objective or inst.round.objective
    log = StageLog()
    extra: dict[str, Any] = {"model": _model_stats(rm, build_s), "stages": log.stages}
    if req.export_model is not None:
        _export(backend, rm, objective, req.export_model)
    if req.lp_bound and objective == "progress":
        extra["lp_bound"] = lp_relaxation_bound(rm.lm, "progress", True, 0.15 * req.time_limit_s)
    start = _warm_start(rm) if req.warm_start and backend.features.mip_start else None
    session = _Session(inst, rm, backend, req, clock, log, extra, start)
    return session.energy_objective() if objective == "energy" else session.progress_objective()


@dataclass
class _Session:
    """One planning call: the model, the backend, the clock and what the stages reported."""

    inst: Instance
    rm: RoundModel
    backend: Backend
    req: PlanRequest
    clock: _Clock
    log: StageLog
    extra: dict[str, Any]
    start: np.ndarray | None

    def stage(self, name: str, lm: LinearModel, objective: str, share: float, start=None) -> SolverResult:
        maximize = objective == "progress"
        result = _solve(
            self.backend, lm, self.rm.lm.objectives[objective], maximize, self.req, self.clock, share, start
        )
        self.log.add(name, result)
        return result

    def finish(self, objective: str, values: np.ndarray, proven: bool, value_of, bound: float | None) -> Plan:
        """Decode, place and validate; ``value_of(plan)`` is the reported objective value."""
        allocations = self.rm.decode(values)
        draft = assemble_plan(self.inst, allocations, SolveInfo(solver=self.backend.name, status="feasible"))
        value = value_of(draft)
        info = SolveInfo(
            objective=objective,
            solver=self.backend.name,
            status="optimal" if proven else "feasible",
            objective_value=value,
            bound=bound,
            gap=_gap(value, bound),
            solve_s=sum(s["solve_s"] for s in self.log.stages),
            extra=self.extra,
        )
        return checked(self.inst, assemble_plan(self.inst, allocations, info))

    def progress_objective(self, note: str | None = None) -> Plan:
        """Stage 1: max progress under the budget; stage 2: least energy at that progress."""
        if note:
            self.extra["objective_note"] = note
        lm = self.rm.lm
        first = self.stage("max_progress", lm, "progress", 0.6, self.start)
        if not first.has_solution:
            return _fallback_plan(self.inst, self.backend.name, self.extra, f"no solution: {first.status}")
        p1 = float(lm.objectives["progress"] @ first.values)
        floor = (1 - LEXICOGRAPHIC_TOLERANCE) * p1
        second_lm = lm.with_row(lm.objectives["progress"], floor, math.inf, PROGRESS_ROW, "progress")
        second = self.stage("min_energy_at_progress", second_lm, "energy", 0.8, first.values)
        chosen = first
        if second.has_solution and second_lm.is_feasible(second.values):
            if float(lm.objectives["energy"] @ second.values) <= float(lm.objectives["energy"] @ first.values):
                chosen = second
        proven = first.status == "optimal" and second.status == "optimal"
        return self.finish("progress", chosen.values, proven, lambda plan: p1, first.bound)

    def energy_objective(self) -> Plan:
        """``P*`` without budget, then the least energy with ``P >= (1 - delta) P*`` under the budget."""
        lm = self.rm.lm
        best = self.stage("max_progress_no_budget", lm.without_rows([ENERGY_ROW]), "progress", 0.4, self.start)
        if not best.has_solution:
            return self.progress_objective("best progress without budget not found in time; planned for progress")
        p_star = float(lm.objectives["progress"] @ best.values)
        target = (1 - self.inst.round.delta) * p_star
        self.extra["progress_target"] = {
            "best_without_budget": p_star,
            "delta": self.inst.round.delta,
            "target": target,
        }
        target_lm = lm.with_row(lm.objectives["progress"], target, math.inf, PROGRESS_ROW, "progress")
        if self.req.lp_bound:
            self.extra["lp_bound"] = lp_relaxation_bound(target_lm, "energy", False, 0.15 * self.req.time_limit_s)
        hint = best.values if target_lm.is_feasible(best.values) else self.start
        result = self.stage("min_energy_at_target", target_lm, "energy", 0.8, hint)
        if not result.has_solution or not target_lm.is_feasible(result.values):
            why = "unreachable under the budget" if result.status == "infeasible" else f"not solved ({result.status})"
            return self.progress_objective(
                f"energy objective: progress target {target:.6g} {why}; planned for progress"
            )
        proven = result.status == "optimal" and best.status == "optimal"
        # The plan powers the fewest nodes that hold the allocations, never more than the solver's u.
        return self.finish("energy", result.values, proven, lambda plan: plan.round.energy_j, result.bound)


def _export(backend: Backend, rm: RoundModel, objective: str, path: Path) -> None:
    """Write the first-stage model; HiGHS writes it with readable names when it is installed."""
    try:
        exporter = get_backend("highs")
    except Exception:
        exporter = backend
    exporter.export(rm.lm, rm.lm.objectives[objective], objective == "progress", path)  # type: ignore[attr-defined]
