"""SCIP through PySCIPOpt: the model compiled in memory, MIP starts, LP relaxations, proven bounds, export.

PySCIPOpt 6's matrix API (``addMatrixVar``, ``addMatrixCons``) loops over ``addVar`` and
``addCons`` itself and is no faster, so columns are added one by one and each row is created
empty and filled with ``addConsCoeff`` (faster than building an expression per row: 1.7 s
against 3.5 s for the 1.32 million nonzeros of a 2,000-job round). Python's cyclic garbage
collector is paused during the build: it otherwise scans the hundreds of thousands of new
variable objects again and again (a 2,000-job round, 387,530 columns: 4.4 s instead of 7.1 s).

SCIP solves on one thread (its concurrent mode is not used), so ``SolveParams.threads`` has
no effect; ``seed`` shifts SCIP's random seeds (``randomization/randomseedshift``). SCIP's clock
is wall time, but it checks it between steps: a long LP runs past the limit (a 2,000-job LP
relaxation stopped after 65 s at a 60 s limit), which the watchdog bounds (docs/design.md §5.6).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    Features,
    ObjectiveName,
    SolveParams,
    SolverResult,
    SolveStatus,
    WithoutLpDuals,
    atomic_target,
)
from wattplan.formulations.conditioning import absolute_gap, condition
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.mps import write_mps

INSTALL_HINT = "pip install 'pyscipopt>=6.3,<7'"
MIN_SOLVER_S = 0.1
"""SCIP's own time limit is never set below this (s), even when the hand-over used up the call's limit."""
READBACK_S_PER_COL = 8e-6
"""Seconds per column to read the solution back and free SCIP's model after it stops, kept out of
SCIP's own limit. Measured on the 387,530 columns of a 2,000-job round: 0.2-0.3 s to read the
values, 1.5-3 s to free the transformed problem (``freeTransform``, on a loaded 2-core machine)."""
LP_PRESOLVE_ROUNDS = 0
"""``presolving/maxrounds`` for LP relaxations: none. On a 2,000-job round SCIP's presolve took 12.6 s to
remove 117 of 4,419 rows; on a 500-job round the LP took 8-9 s without it, 13 s with it."""
OPTIMAL_STATUSES = frozenset({"optimal", "gaplimit"})
"""SCIP statuses that prove the incumbent within ``limits/gap`` (HiGHS and CBC call that optimal too)."""


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector within the block (restored as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _rows_csr(lm: LinearModel) -> tuple[list[int], list[int], list[float]]:
    """Row starts, column indices and values of ``A`` sorted by row, as Python lists."""
    order = np.argsort(lm.a_rows, kind="stable")
    starts = np.searchsorted(lm.a_rows[order], np.arange(lm.num_rows + 1))
    return starts.tolist(), lm.a_cols[order].tolist(), lm.a_vals[order].tolist()


def scip_model(
    lm: LinearModel,
    objective: np.ndarray,
    maximize: bool,
    relax: bool,
    names: tuple[list[str], list[str]] | None = None,
) -> tuple[Any, list[Any]]:
    """A PySCIPOpt ``Model`` of ``lm`` with this objective, and its variables in column order.

    ``relax`` makes every column continuous; ``names`` (columns, rows) are written into the
    model for export, else columns are ``c<k>`` and rows ``r<i>``.
    """
    from pyscipopt import Model
    from pyscipopt.scip import Expr, ExprCons

    model = Model("wattplan_round")
    model.hideOutput()
    inf = model.infinity()
    col_names = names[0] if names else [f"c{k}" for k in range(lm.num_cols)]
    row_names = names[1] if names else [f"r{i}" for i in range(lm.num_rows)]
    vtypes = ["C" if relax or not i else "I" for i in lm.is_int.tolist()]
    lbs = np.where(np.isfinite(lm.lb), lm.lb, -inf).tolist()
    ubs = np.where(np.isfinite(lm.ub), lm.ub, inf).tolist()
    objs = objective.astype(float).tolist()
    los = np.where(np.isfinite(lm.row_lo), lm.row_lo, -inf).tolist()
    his = np.where(np.isfinite(lm.row_hi), lm.row_hi, inf).tolist()
    starts, cols, vals = _rows_csr(lm)
    with _no_gc():
        add_var = model.addVar
        xs = [add_var(col_names[k], vtypes[k], lbs[k], ubs[k], objs[k]) for k in range(lm.num_cols)]
        add_cons, add_coef = model.addCons, model.addConsCoeff
        for r in range(lm.num_rows):
            cons = add_cons(ExprCons(Expr(), los[r], his[r]), name=row_names[r])
            for k in range(starts[r], starts[r + 1]):
                add_coef(cons, xs[cols[k]], vals[k])
    if maximize:
        model.setMaximize()
    else:
        model.setMinimize()
    return model, xs


class ScipBackend(WithoutLpDuals):
    """SCIP's branch-cut-and-price on one thread; partial-solution starts, dual bounds, MPS/LP export."""

    name = "scip"
    features: ClassVar[Features] = Features(
        mip_start=True, lp_relaxation=True, bound=True, export=True, lp_duals=False, continuous=True, node_limit=True
    )

    def is_available(self) -> bool:
        """True when PySCIPOpt is installed."""
        return find_spec("pyscipopt") is not None

    def _require(self) -> None:
        if not self.is_available():
            raise BackendUnavailable(f"pyscipopt is not installed ({INSTALL_HINT})")

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Solve ``lm.objectives[objective]`` (``relax``: every column continuous, an LP) on the conditioned model.

        The bound is SCIP's dual bound (:mod:`formulations.conditioning` brings it back to model units).

        ``params.time_limit_s`` covers the whole call: SCIP's own limit is what the build leaves,
        less an estimate of the read-back (:data:`READBACK_S_PER_COL`), at least :data:`MIN_SOLVER_S`.
        """
        entered = time.perf_counter()
        self._require()
        coefs = lm.objectives[objective]
        cond = condition(lm, objective)
        model, xs = scip_model(cond.lm, cond.lm.objectives[objective], maximize, relax)
        model.setParam("randomization/randomseedshift", int(params.seed))
        if relax:
            model.setParam("presolving/maxrounds", LP_PRESOLVE_ROUNDS)
        if params.rel_gap is not None:
            model.setParam("limits/gap", float(params.rel_gap))
        model.setParam("limits/absgap", absolute_gap(params.rel_gap))
        if params.node_limit is not None and not relax:
            model.setParam("limits/nodes", int(params.node_limit))
        if params.time_limit_s is not None:
            spent = time.perf_counter() - entered
            left = float(params.time_limit_s) - spent - READBACK_S_PER_COL * lm.num_cols
            model.setParam("limits/time", max(MIN_SOLVER_S, left))
        if start is not None and not relax:
            sol = model.createPartialSol()
            for x, v in zip(xs, start.tolist(), strict=True):
                model.setSolVal(sol, x, v)
            model.addSol(sol)
        begin = time.perf_counter()
        model.optimize()
        elapsed = time.perf_counter() - begin
        status = str(model.getStatus())
        if status == "infeasible":
            return SolverResult("infeasible", solve_s=elapsed, message=status)
        if model.getNSols() == 0:
            return SolverResult("no_solution", solve_s=elapsed, message=status, on_clock=status == "timelimit")
        best = model.getBestSol()
        get = model.getSolVal
        values = np.array([get(best, x) for x in xs], dtype=float)
        if not relax:
            values = np.where(lm.is_int, np.round(values), values)
        raw_bound = float(model.getDualbound())
        bound = cond.model_bound(raw_bound) if abs(raw_bound) < model.infinity() else None
        result_status: SolveStatus = "optimal" if status in OPTIMAL_STATUSES else "feasible"
        return SolverResult(
            result_status,
            values=values,
            objective=float(coefs @ values),
            bound=bound,
            solve_s=elapsed,
            message=status,
            stats={"nodes": float(model.getNTotalNodes()), "lp_iterations": float(model.getNLPIterations())},
            on_clock=status == "timelimit",
        )

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model as MPS (:mod:`formulations.mps`) or LP (SCIP's writer) by the suffix, atomically."""
        if Path(path).suffix == ".mps":
            write_mps(lm, objective, maximize, Path(path))  # the one MPS format of every backend
            return
        self._require()
        model, _ = scip_model(lm, lm.objectives[objective], maximize, relax=False, names=lm.export_names())
        with atomic_target(Path(path)) as tmp:
            tmp.touch()  # an unwritable place fails here, as Python's OSError naming ``path``, not in SCIP
            model.writeProblem(str(tmp), verbose=False)
