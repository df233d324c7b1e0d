"""Integer scaling for CP-SAT, in one place (docs/design.md §3.8: CP-SAT needs integer coefficients).

``ENERGY_SCALE`` units per joule and ``PROGRESS_SCALE`` units per unit of weighted progress.
Rows are scaled so that a CP-SAT solution is feasible for the true (float) model:

* ``energy`` rows (``a x <= B``): coefficients rounded up, the bound rounded down;
* ``progress`` rows (``a x >= L``): coefficients rounded to nearest, the bound lowered by
  half a unit per term of the row, so a solution meeting the true floor always meets the
  scaled one; a solution meeting the scaled floor has true progress at least
  ``L - terms / PROGRESS_SCALE`` (1e-4 at 100,000 terms);
* ``count`` rows already have integer coefficients and bounds.

Objectives are rounded to nearest; the planner recomputes every reported figure from the
instance in floating point, so rounding never reaches a plan.
"""

from __future__ import annotations

import math

import numpy as np

ENERGY_SCALE = 1000.0  # units per J (millijoules): rounding up loses at most 1 mJ per option
PROGRESS_SCALE = 1e9  # units per unit of weighted progress
SCALES = {"energy": ENERGY_SCALE, "excess_energy": ENERGY_SCALE, "progress": PROGRESS_SCALE, "count": 1.0}


def scale_objective(kind: str, coefs: np.ndarray) -> np.ndarray:
    """Integer objective coefficients ``rint(coefs * SCALES[kind])`` (rounded to nearest)."""
    return np.rint(coefs * SCALES[kind]).astype(np.int64)


def scale_row(kind: str, vals: np.ndarray, lo: float, hi: float, max_terms: int) -> tuple[np.ndarray, float, float]:
    """Integer coefficients and bounds for one row (see the module docstring)."""
    if kind == "count":
        ints = np.rint(vals)
        if not np.allclose(ints, vals):
            raise ValueError("count rows must have integer coefficients")
        return ints.astype(np.int64), lo, hi
    s = SCALES[kind]
    if kind == "energy":
        if math.isfinite(lo):
            raise ValueError("energy rows are upper bounds only")
        return np.ceil(vals * s - 1e-9).astype(np.int64), lo, math.floor(hi * s + 1e-9)
    if math.isfinite(hi):
        raise ValueError("progress rows are lower bounds only")
    return np.rint(vals * s).astype(np.int64), math.floor(lo * s - 0.5 * max_terms), hi
