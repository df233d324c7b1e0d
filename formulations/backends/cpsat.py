"""OR-Tools CP-SAT: integer coefficients through :mod:`formulations.scaling`, hints as starts."""

from __future__ import annotations

import math
import time
from importlib.util import find_spec

import numpy as np

from formulations.backends.base import BackendUnavailable, Features, SolveParams, SolverResult
from formulations.ir import LinearModel
from formulations.scaling import SCALES, scale_objective, scale_row


def _objective_kind(lm: LinearModel, objective: np.ndarray) -> str:
    for kind, vec in lm.objectives.items():
        if vec is objective or (vec.shape == objective.shape and np.array_equal(vec, objective)):
            return kind
    raise ValueError("CP-SAT objectives must be one of the model's named objective vectors")


class CpSatBackend:
    """CP-SAT with its portfolio search; a hint is the warm start; bounds come from the search."""

    name = "cpsat"
    features = Features(mip_start=True, lp_relaxation=False, bound=True, export=False)

    def is_available(self) -> bool:
        return find_spec("ortools") is not None

    def solve(
        self,
        lm: LinearModel,
        objective: np.ndarray,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        if relax:
            raise ValueError("CP-SAT solves no LP relaxation")
        if not self.is_available():
            raise BackendUnavailable("ortools is not installed (pip install ortools==9.15.6755)")
        from ortools.sat.python import cp_model

        kind = _objective_kind(lm, objective)
        model = cp_model.CpModel()
        xs = [
            model.new_int_var(int(math.ceil(lo)), int(math.floor(hi)), f"c{i}")
            for i, (lo, hi) in enumerate(zip(lm.lb, lm.ub, strict=True))
        ]
        order = np.argsort(lm.a_rows, kind="stable")
        rows, cols, vals = lm.a_rows[order], lm.a_cols[order], lm.a_vals[order]
        bounds = np.searchsorted(rows, np.arange(lm.num_rows + 1))
        for r in range(lm.num_rows):
            sl = slice(bounds[r], bounds[r + 1])
            coefs, lo, hi = scale_row(lm.row_kind[r], vals[sl], lm.row_lo[r], lm.row_hi[r], bounds[r + 1] - bounds[r])
            expr = cp_model.LinearExpr.weighted_sum([xs[k] for k in cols[sl]], [int(c) for c in coefs])
            lo_i = int(lo) if math.isfinite(lo) else None
            hi_i = int(hi) if math.isfinite(hi) else None
            if lo_i is not None and hi_i is not None:
                model.add_linear_constraint(expr, lo_i, hi_i)
            elif hi_i is not None:
                model.add(expr <= hi_i)
            elif lo_i is not None:
                model.add(expr >= lo_i)
        obj = scale_objective(kind, objective)
        nz = np.flatnonzero(obj)
        obj_expr = cp_model.LinearExpr.weighted_sum([xs[k] for k in nz], [int(obj[k]) for k in nz])
        if maximize:
            model.maximize(obj_expr)
        else:
            model.minimize(obj_expr)
        if start is not None:
            for k, v in enumerate(start):
                model.add_hint(xs[k], int(round(v)))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = max(1, params.threads)
        solver.parameters.random_seed = params.seed
        if params.time_limit_s is not None:
            solver.parameters.max_time_in_seconds = float(params.time_limit_s)
        if params.rel_gap is not None:
            solver.parameters.relative_gap_limit = float(params.rel_gap)
        begin = time.perf_counter()
        code = solver.solve(model)
        elapsed = time.perf_counter() - begin
        if code == cp_model.INFEASIBLE:
            return SolverResult("infeasible", solve_s=elapsed, message="infeasible")
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return SolverResult("no_solution", solve_s=elapsed, message=solver.status_name(code))
        values = np.array([solver.value(x) for x in xs], dtype=float)
        scale = SCALES[kind]
        return SolverResult(
            "optimal" if code == cp_model.OPTIMAL else "feasible",
            values=values,
            objective=float(objective @ values),
            bound=float(solver.best_objective_bound) / scale,
            solve_s=elapsed,
            message=solver.status_name(code),
            stats={"branches": float(solver.num_branches), "conflicts": float(solver.num_conflicts)},
        )
