"""The LP relaxation of a large round by column generation, with a bound that is valid at every step.

A round of ``J`` jobs has about ``120 J`` columns (1.2 M at 10,000 jobs), most of them pair
sides, but its LP optimum uses a handful per job. Column generation solves the LP on a small
*restricted master* (every column outside the multiple-choice rows ``job[j]``, plus a few
columns per job), prices all the others in NumPy from the master's duals, adds the best few per
job, and repeats.

**The bound.** The Lagrangian bound of :mod:`formulations.lagrangian` for the master's duals,
over *all* columns, the multiple-choice rows ``job[j]`` taking their best multiplier given the
others. It equals the LP optimum once no column prices out, and is reported even when the time
runs out first. Any multipliers give a valid bound, so a wrong sign convention of the solver's
duals could only weaken it; the sign is taken as the one for which ``c - A^T y`` reproduces the
master's own column duals.

**Pricing.** A column outside the master improves it when ``d_c > eps`` (maximising); per
job the ``per_job`` best such columns join the master, which the LP backend (the first with
``features.lp_duals``: HiGHS) re-solves from its last basis by the primal simplex.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from wattplan.formulations.backends.base import NewColumns, SolverResult
from wattplan.formulations.backends.registry import backend_with
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import gub_membership, lagrangian_bound, reduced_costs

PRICE_EPS = 1e-9
"""A column prices out when its reduced cost exceeds this (objective units per unit of the column)."""
PER_JOB = 4
"""Columns added per job and iteration, at most."""


@dataclass(frozen=True, slots=True)
class ColumnGenerationResult:
    """What column generation found.

    ``bound``: the best Lagrangian bound over the iterations (valid for the full model);
    ``value``/``values``: the last restricted master's LP optimum and its solution, spread to
    the full model (a feasible LP point); ``active``: the master's columns (ascending).
    """

    bound: float | None
    value: float | None
    values: np.ndarray | None
    active: np.ndarray
    iterations: int
    converged: bool
    seconds: float
    note: str


def _best_bound(values: list[float], maximize: bool) -> float:
    return min(values) if maximize else max(values)


def _priced_columns(d: np.ndarray, active: np.ndarray, member: np.ndarray, per_job: int, eps: float) -> np.ndarray:
    """Up to ``per_job`` columns per multiple-choice row with the largest ``d > eps`` outside the master."""
    cand = np.flatnonzero(~active & (member >= 0) & (d > eps))
    if not len(cand):
        return cand
    order = np.lexsort((-d[cand], member[cand]))
    cand = cand[order]
    groups = member[cand]
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    rank = np.arange(len(cand)) - np.repeat(starts, np.diff(np.r_[starts, len(cand)]))
    return np.sort(cand[rank < per_job])


def column_generation_lp(
    lm: LinearModel,
    objective: np.ndarray,
    maximize: bool,
    gub_rows: np.ndarray,
    seed: np.ndarray,
    limit_s: float,
    rel_tol: float = 1e-5,
    per_job: int = PER_JOB,
) -> ColumnGenerationResult:
    """The LP of ``lm`` by column generation (module docstring) within ``limit_s`` seconds.

    The master starts from every column outside the ``gub_rows`` plus ``seed`` (columns of
    known plans, say); it stops when the bound is within ``rel_tol`` of the master's value, no
    column prices out, or the time is up.
    """
    backend = backend_with("lp_duals")
    begin = time.perf_counter()
    member = gub_membership(lm, gub_rows)
    active = member < 0
    active[np.asarray(seed, dtype=np.int64)] = True
    cols = np.flatnonzero(active)
    master = backend.dual_lp(lm.restricted(cols), objective[cols], maximize, "primal-simplex", threads=1)
    bounds: list[float] = []
    value: float | None = None
    solution: np.ndarray | None = None
    iterations = 0
    converged = False
    note = ""
    csc = _ColumnSlicer(lm)
    dual_sign: float | None = None
    while True:
        left = limit_s - (time.perf_counter() - begin)
        if left <= 0:
            note = "time limit"
            break
        lp = master.solve(left)
        iterations += 1
        if not lp.optimal:
            note = f"master: {lp.status}"
            break
        value = lp.objective
        solution = np.zeros(lm.num_cols)
        solution[cols] = lp.values
        y = lp.row_duals
        if dual_sign is None:
            dual_sign = _dual_sign(lm, objective, cols, y, lp.col_duals)
        y = dual_sign * y
        bounds.append(lagrangian_bound(lm, objective, maximize, y, gub_rows, member))
        best = _best_bound(bounds, maximize)
        if abs(best - value) <= rel_tol * max(1.0, abs(best)):
            converged = True
            break
        sense = 1.0 if maximize else -1.0
        d = sense * reduced_costs(lm, objective, y)
        new = _priced_columns(d, active, member, per_job, PRICE_EPS * max(1.0, float(np.abs(objective).max())))
        if not len(new):
            converged = True
            note = "no column prices out"
            break
        starts, index, vals = csc.columns(new)
        master.add_columns(NewColumns(objective[new], lm.lb[new], lm.ub[new], starts, index, vals))
        active[new] = True
        cols = np.concatenate([cols, new])
    bound = _best_bound(bounds, maximize) if bounds else None
    if bound is not None and not math.isfinite(bound):
        bound = None
    return ColumnGenerationResult(
        bound=bound,
        value=value,
        values=solution,
        active=np.sort(cols),
        iterations=iterations,
        converged=converged,
        seconds=time.perf_counter() - begin,
        note=note or ("converged" if converged else ""),
    )


def _dual_sign(lm: LinearModel, c: np.ndarray, cols: np.ndarray, y: np.ndarray, col_dual: np.ndarray) -> float:
    """+1 or -1: the sign of the row duals for which ``c - A^T y`` on the master's columns matches its column duals.

    Either sign gives a valid bound (module docstring); the right one gives the tight bound and
    the right pricing.
    """
    plus = reduced_costs(lm, c, y)[cols]
    minus = reduced_costs(lm, c, -y)[cols]
    return 1.0 if np.abs(plus - col_dual).sum() <= np.abs(minus - col_dual).sum() else -1.0


class _ColumnSlicer:
    """Columns of ``A`` in compressed sparse column form, to hand chosen columns to the master."""

    def __init__(self, lm: LinearModel) -> None:
        order = np.lexsort((lm.a_rows, lm.a_cols))
        self.rows = lm.a_rows[order].astype(np.int32)
        self.vals = lm.a_vals[order]
        self.starts = np.searchsorted(lm.a_cols[order], np.arange(lm.num_cols + 1))

    def columns(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, row indices, values)`` of the columns ``cols``, in that order."""
        lo, hi = self.starts[cols], self.starts[cols + 1]
        lengths = hi - lo
        take = np.repeat(lo - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(int(lengths.sum()))
        starts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int32)
        return starts, self.rows[take], self.vals[take]


def column_generation_result(
    lm: LinearModel, objective: np.ndarray, maximize: bool, gub_rows: np.ndarray, seed: np.ndarray, limit_s: float
) -> SolverResult:
    """:func:`column_generation_lp` as a solver result, for the watchdog.

    ``bound``: the Lagrangian bound; ``objective``/``values``: the master's LP optimum;
    ``columns``: the master's columns; status ``optimal`` when converged, else ``feasible``.
    """
    r = column_generation_lp(lm, objective, maximize, gub_rows, seed, limit_s)
    if r.values is None or r.bound is None:
        return SolverResult("no_solution", solve_s=r.seconds, message=f"column generation: {r.note}")
    return SolverResult(
        "optimal" if r.converged else "feasible",
        values=r.values,
        objective=r.value,
        bound=r.bound,
        solve_s=r.seconds,
        message=f"column generation: {r.note}, {r.iterations} master solves, {len(r.active)} columns",
        stats={"iterations": float(r.iterations), "columns": float(len(r.active))},
        columns=r.active,
    )
