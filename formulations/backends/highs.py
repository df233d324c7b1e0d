"""HiGHS through highspy (pinned < 1.15: see docs/design.md §12)."""

from __future__ import annotations

import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    Features,
    LpMethod,
    LpSolution,
    NewColumns,
    ObjectiveName,
    SolveParams,
    SolverResult,
    SolveStatus,
    atomic_target,
)
from wattplan.formulations.conditioning import absolute_gap, condition
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import dual_bound
from wattplan.formulations.mps import write_mps

INSTALL_HINT = "pip install 'highspy>=1.10,<1.15'"
PRIMAL_SIMPLEX = 4
"""HiGHS's ``simplex_strategy`` value for the primal simplex, used for LP relaxations: 1.5 s
instead of 3.3 s (dual) on a 500-job round, 5 s instead of 13 s at 1000 jobs."""
SOLUTION_FEASIBLE = 2
"""HiGHS's ``kSolutionStatusFeasible``: the primal solution it holds is feasible."""
PRESOLVE_MAX_ROW_NONZEROS = 2_000
"""HiGHS's presolve is switched off (``presolve=off``) for a model with a longer row than this (nonzeros).

A round model has rows over every column: the energy budget, and in a second stage the progress floor (``progress``)
or target (``energy``, ``efficiency``). HiGHS's presolve (1.14, and 1.15.1 alike) spends time growing with the square
of such a row's length on every pass, and does not look at its time limit while it runs: on the 8,622-column default
round it took 2.2 s of CPU in stage 1 and 88 s in stage 2, which overran its limit and was killed by the watchdog,
leaving the plan unproven (``min_energy_at_progress: no_solution``). Without presolve both stages are proven in 2-5 s
of CPU each and the LP relaxation takes 0.15 s instead of 0.6 s; rounds of other families (Philly, other Gavel
traces, 64-275 jobs) were as fast or faster, and their energy stages proven instead of killed. Below this length the
quadratic cost is negligible and HiGHS keeps its own choice."""
LP_METHOD_OPTIONS: dict[LpMethod, tuple[tuple[str, Any], ...]] = {
    "primal-simplex": (("simplex_strategy", PRIMAL_SIMPLEX),),
    "simplex-no-presolve": (("presolve", "off"),),
    "pdlp": (("solver", "pdlp"),),
}
"""HiGHS's options for each :data:`~formulations.backends.base.LpMethod`, set in this order."""


def _csc(lm: LinearModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column starts, row indices and values of ``A`` in compressed sparse column form."""
    order = np.lexsort((lm.a_rows, lm.a_cols))
    cols = lm.a_cols[order]
    starts = np.searchsorted(cols, np.arange(lm.num_cols + 1)).astype(np.int32)
    return starts, lm.a_rows[order].astype(np.int32), lm.a_vals[order]


def longest_row(lm: LinearModel) -> int:
    """The most nonzeros of any row of ``lm`` (0 for a model without any)."""
    return int(np.bincount(lm.a_rows).max()) if lm.num_nonzeros else 0


def highs_lp(lm: LinearModel, objective: np.ndarray, maximize: bool, relax: bool) -> Any:
    """A ``highspy.HighsLp`` of ``lm`` with this objective (integrality dropped when ``relax``)."""
    import highspy

    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_ = lm.num_cols
    lp.num_row_ = lm.num_rows
    lp.col_cost_ = objective.astype(float)
    lp.col_lower_ = lm.lb
    lp.col_upper_ = lm.ub
    lp.row_lower_ = np.where(np.isfinite(lm.row_lo), lm.row_lo, -inf)
    lp.row_upper_ = np.where(np.isfinite(lm.row_hi), lm.row_hi, inf)
    starts, index, values = _csc(lm)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = values
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in lm.is_int]
    return lp


_scheduler_threads: int | None = None
"""Threads of the HiGHS task scheduler in this process, once a solve set them (None before)."""


def set_threads(h: Any, threads: int) -> None:
    """Give ``h`` ``threads`` threads, first resetting HiGHS's scheduler if it was started with another count.

    HiGHS keeps one task scheduler per process, sized by the first run; a later run asking for another count fails
    at once (status "Not Set"). A process that solves many rounds (the watchdog's solver worker) meets both counts.
    """
    global _scheduler_threads
    import highspy

    if _scheduler_threads is not None and _scheduler_threads != threads:
        highspy.Highs.resetGlobalScheduler(True)
    h.setOptionValue("threads", threads)
    _scheduler_threads = threads


class HighsBackend:
    """Branch-and-cut MIP and simplex LP of HiGHS; MIP starts, proven bounds, MPS/LP export."""

    name = "highs"
    features: ClassVar[Features] = Features(
        mip_start=True, lp_relaxation=True, bound=True, export=True, lp_duals=True, continuous=True, node_limit=True
    )

    def is_available(self) -> bool:
        """True when highspy is installed."""
        return find_spec("highspy") is not None

    def _solver(self, params: SolveParams) -> Any:
        if not self.is_available():
            raise BackendUnavailable(f"highspy is not installed ({INSTALL_HINT})")
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        set_threads(h, max(1, params.threads))
        h.setOptionValue("random_seed", params.seed)
        if params.time_limit_s is not None:
            h.setOptionValue("time_limit", float(params.time_limit_s))
        if params.rel_gap is not None:
            h.setOptionValue("mip_rel_gap", float(params.rel_gap))
        h.setOptionValue("mip_abs_gap", absolute_gap(params.rel_gap))
        if params.node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(params.node_limit))
        return h

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Branch-and-cut (or, with ``relax``, the primal simplex) on ``lm.objectives[objective]``.

        HiGHS gets the conditioned model (:mod:`formulations.conditioning`), without presolve when a row is longer
        than :data:`PRESOLVE_MAX_ROW_NONZEROS`. The bound is HiGHS's
        MIP dual bound, or for an LP relaxation the Lagrangian bound of its row duals
        (:func:`formulations.lagrangian.dual_bound`), a proof that does not rest on its tolerances.
        """
        import highspy

        h = self._solver(params)
        if relax:
            h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        if longest_row(lm) > PRESOLVE_MAX_ROW_NONZEROS:
            h.setOptionValue("presolve", "off")
        coefs = lm.objectives[objective]
        cond = condition(lm, objective)
        begin = time.perf_counter()
        h.passModel(highs_lp(cond.lm, cond.lm.objectives[objective], maximize, relax))
        if start is not None and not relax:
            sol = highspy.HighsSolution()
            sol.col_value = list(map(float, start))
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        elapsed = time.perf_counter() - begin
        status = h.getModelStatus()
        info = h.getInfo()
        ms = highspy.HighsModelStatus
        if status == ms.kInfeasible:
            return SolverResult("infeasible", solve_s=elapsed, message="infeasible")
        result_status: SolveStatus
        if status == ms.kOptimal:
            result_status = "optimal"
        elif info.primal_solution_status == SOLUTION_FEASIBLE:
            result_status = "feasible"
        else:
            message = h.modelStatusToString(status)
            return SolverResult("no_solution", solve_s=elapsed, message=message, on_clock=status == ms.kTimeLimit)
        solution = h.getSolution()
        values = np.array(solution.col_value)
        if relax:
            bound = None
            if status == ms.kOptimal and solution.dual_valid:
                duals = np.asarray(solution.row_dual, dtype=float) * cond.row_scale / cond.objective_scale
                bound = dual_bound(lm, coefs, maximize, duals)
        else:
            bound = cond.model_bound(float(info.mip_dual_bound))
        return SolverResult(
            result_status,
            values=values,
            objective=float(coefs @ values),
            bound=bound,
            solve_s=elapsed,
            message=h.modelStatusToString(status),
            stats=highs_stats(info, relax),
            on_clock=status == ms.kTimeLimit,
        )

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model as MPS (:mod:`formulations.mps`) or LP (HiGHS's writer) by the suffix, atomically."""
        if Path(path).suffix == ".mps":
            write_mps(lm, objective, maximize, Path(path))  # the one MPS format of every backend
            return
        h = self._solver(SolveParams())
        model = highs_lp(lm, lm.objectives[objective], maximize, relax=False)
        model.col_names_, model.row_names_ = lm.export_names()
        h.passModel(model)
        with atomic_target(Path(path)) as tmp:
            h.writeModel(str(tmp))

    def solve_lp(
        self, lm: LinearModel, objective: np.ndarray, maximize: bool, method: LpMethod, time_limit_s: float
    ) -> LpSolution:
        """``lm`` relaxed with the costs ``objective``, solved once by ``method`` (:data:`LP_METHOD_OPTIONS`).

        The model as given (not conditioned); HiGHS's default thread count.
        """
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", float(time_limit_s))
        for key, value in LP_METHOD_OPTIONS[method]:
            h.setOptionValue(key, value)
        h.passModel(highs_lp(lm, objective, maximize, True))
        h.run()
        return _lp_solution(h)

    def dual_lp(
        self,
        lm: LinearModel,
        objective: np.ndarray,
        maximize: bool,
        method: LpMethod = "primal-simplex",
        threads: int | None = None,
    ) -> HighsDualLp:
        """``lm`` relaxed with the costs ``objective``, loaded into one HiGHS instance for warm re-solves."""
        return HighsDualLp(lm, objective, maximize, method, threads)


def highs_stats(info: Any, relax: bool) -> dict[str, float]:
    """HiGHS's search effort (:data:`~formulations.backends.base.SEARCH_STATS`): simplex iterations; MIP nodes."""
    stats = {"lp_iterations": float(max(0, int(info.simplex_iteration_count)))}
    if not relax:
        stats["nodes"] = float(max(0, int(info.mip_node_count)))
    return stats


def _lp_solution(h: Any) -> LpSolution:
    """What ``h`` holds after a run, as an :class:`LpSolution`."""
    import highspy

    status = h.getModelStatus()
    sol = h.getSolution()
    return LpSolution(
        optimal=status == highspy.HighsModelStatus.kOptimal,
        status=h.modelStatusToString(status),
        values=np.asarray(sol.col_value, dtype=float),
        row_duals=np.asarray(sol.row_dual, dtype=float),
        col_duals=np.asarray(sol.col_dual, dtype=float),
        objective=float(h.getInfo().objective_function_value),
        primal_valid=bool(sol.value_valid),
        dual_valid=bool(sol.dual_valid),
    )


class HighsDualLp:
    """One HiGHS instance holding an LP between solves (:meth:`HighsBackend.dual_lp`); HiGHS restarts from its basis."""

    def __init__(
        self, lm: LinearModel, objective: np.ndarray, maximize: bool, method: LpMethod, threads: int | None
    ) -> None:
        import highspy

        self._h = h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        if threads is not None:
            set_threads(h, threads)
        for key, value in LP_METHOD_OPTIONS[method]:
            h.setOptionValue(key, value)
        h.passModel(highs_lp(lm, objective, maximize, relax=True))

    def solve(self, time_limit_s: float) -> LpSolution:
        """Solve within ``time_limit_s`` seconds of this call (HiGHS's run clock spans all runs)."""
        h = self._h
        h.setOptionValue("time_limit", float(h.getRunTime() + time_limit_s))
        h.run()
        return _lp_solution(h)

    def add_columns(self, columns: NewColumns) -> None:
        """Append ``columns``; infinite upper bounds become HiGHS's infinity."""
        import highspy

        c = columns
        upper = np.minimum(c.upper, highspy.kHighsInf)
        self._h.addCols(len(c.cost), c.cost, c.lower, upper, len(c.values), c.starts, c.index, c.values)
