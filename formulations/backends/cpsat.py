"""OR-Tools CP-SAT: integer coefficients through :mod:`formulations.scaling`, hints as starts."""

from __future__ import annotations

import math
import time
from importlib.util import find_spec
from pathlib import Path
from typing import ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    Features,
    FeatureUnsupported,
    ObjectiveName,
    SolveParams,
    SolverResult,
    WithoutLpDuals,
)
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.scaling import scale_objective, scale_row

INSTALL_HINT = "pip install ortools==9.15.6755"


class CpSatBackend(WithoutLpDuals):
    """CP-SAT with its portfolio search; a hint is the warm start; bounds come from the search."""

    name = "cpsat"
    features: ClassVar[Features] = Features(
        mip_start=True, lp_relaxation=False, bound=True, export=False, lp_duals=False
    )

    def is_available(self) -> bool:
        """True when ortools is installed."""
        return find_spec("ortools") is not None

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Solve an integer relaxation of ``lm`` (:mod:`formulations.scaling`); the bound is corrected for rounding."""
        if relax:
            raise FeatureUnsupported("CP-SAT solves no LP relaxation")
        if not self.is_available():
            raise BackendUnavailable(f"ortools is not installed ({INSTALL_HINT})")
        from ortools.sat.python import cp_model

        if np.any(lm.lb < 0):
            raise ValueError("CP-SAT's integer rows are relaxations only for columns with lb >= 0")
        reach = np.maximum(np.abs(lm.lb), np.abs(lm.ub))
        model = cp_model.CpModel()
        xs = [
            model.new_int_var(int(math.ceil(lo)), int(math.floor(hi)), f"c{i}")
            for i, (lo, hi) in enumerate(zip(lm.lb, lm.ub, strict=True))
        ]
        for row in lm.rows():
            coefs, lo, hi = scale_row(row.kind, row.vals, row.lo, row.hi, reach[row.cols])
            expr = cp_model.LinearExpr.weighted_sum([xs[k] for k in row.cols], [int(c) for c in coefs])
            lo_i = int(lo) if math.isfinite(lo) else None
            hi_i = int(hi) if math.isfinite(hi) else None
            if lo_i is not None and hi_i is not None:
                model.add_linear_constraint(expr, lo_i, hi_i)
            elif hi_i is not None:
                model.add(expr <= hi_i)
            elif lo_i is not None:
                model.add(expr >= lo_i)
        coefs = lm.objectives[objective]
        obj = scale_objective(coefs, reach)
        nz = np.flatnonzero(obj.coefs)
        obj_expr = cp_model.LinearExpr.weighted_sum([xs[k] for k in nz], [int(obj.coefs[k]) for k in nz])
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
        return SolverResult(
            "optimal" if code == cp_model.OPTIMAL else "feasible",
            values=values,
            objective=float(coefs @ values),
            bound=obj.model_bound(float(solver.best_objective_bound), maximize),
            solve_s=elapsed,
            message=solver.status_name(code),
            stats={"branches": float(solver.num_branches), "conflicts": float(solver.num_conflicts)},
        )

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """CP-SAT writes no MPS or LP file (``features.export`` is False)."""
        raise FeatureUnsupported("the cpsat backend cannot export a model; use highs or cbc")
