"""Bounds from multipliers: a proof of how good any solution can be, computed in NumPy.

For ``max c x`` s.t. ``lo <= A x <= hi``, ``lb <= x <= ub`` and *any* multipliers ``y`` (one per
row, either sign),

    c x = y A x + (c - A^T y) x
        <= sum_r (y_r hi_r if y_r > 0 else y_r lo_r) + sum_c max(d_c ub_c, d_c lb_c),   d = c - A^T y,

a valid upper bound of the LP relaxation, hence of the MIP (a multiplier that would need an
infinite side is taken as 0; an unbounded column with a reduced cost of the wrong sign makes the
bound infinite, i.e. no bound). Multiple-choice rows ``sum_{c in r} x_c <= 1`` (columns
``0 <= x <= 1``, each in one such row) may take their best multiplier given the others,
``y_r = max(0, max_{c in r} (d_c + y_r))``: their columns then add nothing and the row adds
``y_r``. Minimisation is the same with ``c`` and ``y`` negated.

Because the inequality holds for every ``y``, the bound does not depend on the LP solver having
been right: a solver's duals only decide how tight it is. This is how wattplan turns an LP
relaxation into a proven bound (``lp_bound``) rather than trusting the solver's reported optimum.
"""

from __future__ import annotations

import math

import numpy as np

from wattplan.formulations.ir import LinearModel


def reduced_costs(lm: LinearModel, c: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``d = c - A^T y`` for every column of ``lm``."""
    return c - np.bincount(lm.a_cols, weights=lm.a_vals * y[lm.a_rows], minlength=lm.num_cols)


def gub_membership(lm: LinearModel, gub_rows: np.ndarray) -> np.ndarray:
    """Per column, the multiple-choice row among ``gub_rows`` it belongs to, or -1."""
    member = np.full(lm.num_cols, -1, dtype=np.int64)
    is_gub = np.zeros(lm.num_rows, dtype=bool)
    is_gub[gub_rows] = True
    mask = is_gub[lm.a_rows]
    member[lm.a_cols[mask]] = lm.a_rows[mask]
    return member


def lagrangian_bound(
    lm: LinearModel, c: np.ndarray, maximize: bool, y: np.ndarray, gub_rows: np.ndarray, member: np.ndarray
) -> float:
    """The bound of the module docstring for multipliers ``y`` (an upper bound when maximising, else a lower one).

    ``inf`` (``-inf`` when minimising) when a column with an infinite bound prices the wrong way.
    """
    sign = 1.0 if maximize else -1.0
    c, y = sign * c, sign * y
    y = np.where((y > 0) & ~np.isfinite(lm.row_hi), 0.0, y)
    y = np.where((y < 0) & ~np.isfinite(lm.row_lo), 0.0, y)
    y = y.copy()
    y[gub_rows] = 0.0
    d = reduced_costs(lm, c, y)
    in_gub = member >= 0
    best = np.full(lm.num_rows, -np.inf)
    np.maximum.at(best, member[in_gub], d[in_gub])
    gub_term = float(np.maximum(best[gub_rows], 0.0).sum())
    rows = np.where(y > 0, y * np.where(np.isfinite(lm.row_hi), lm.row_hi, 0.0), 0.0)
    rows += np.where(y < 0, y * np.where(np.isfinite(lm.row_lo), lm.row_lo, 0.0), 0.0)
    free = ~in_gub
    df, ub, lb = d[free], lm.ub[free], lm.lb[free]
    with np.errstate(invalid="ignore"):  # 0 * inf: a zero reduced cost adds nothing
        cols = np.maximum(np.where(df != 0, df * ub, 0.0), np.where(df != 0, df * lb, 0.0))
    return sign * (float(rows.sum()) + gub_term + float(cols.sum()))


def dual_bound(lm: LinearModel, c: np.ndarray, maximize: bool, y: np.ndarray) -> float | None:
    """The tighter of the bounds for ``y`` and ``-y`` (either sign convention of a solver's duals), or None.

    Both are valid (module docstring), so the tighter is too; None when neither is finite.
    """
    none = np.zeros(0, dtype=np.int64)
    member = np.full(lm.num_cols, -1, dtype=np.int64)
    both = [lagrangian_bound(lm, c, maximize, s * y, none, member) for s in (1.0, -1.0)]
    best = min(both) if maximize else max(both)
    return best if math.isfinite(best) else None
