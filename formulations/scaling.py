"""Integer scaling for CP-SAT, in one place (docs/design.md §3.8: CP-SAT needs integer coefficients).

CP-SAT solves an integer model. Each physical row and the objective are multiplied by a power
of two ``s`` (exact in floating point, so ``v * s`` is computed without error) as large as the
row allows: ``s * sum_k |v_k| * max(|lb_k|, |ub_k|) <= INTEGER_HEADROOM``, far from int64
overflow. The integer model is a **relaxation** of the true one, so CP-SAT's bound is a bound of
the round, and its solutions are within a few millionths of a joule per option of the true rows
(the columns of these rows are non-negative, ``lb >= 0``):

* ``energy`` rows ``a x <= B``: coefficients rounded *down*, the bound ``floor(B s)``. Every true
  solution meets it (``floor(a s) x <= a s x <= B s``, integral); a CP-SAT solution exceeds ``B``
  by less than ``sum x / s``;
* ``progress`` rows ``a x >= L``: coefficients rounded *up*, the bound ``ceil(L s)``; a CP-SAT
  solution falls short of ``L`` by less than ``sum x / s``;
* ``count`` rows already have integer coefficients and bounds.

The objective is rounded to nearest, and the bound CP-SAT proves for the integer objective
``b_int`` becomes a bound of the true objective by adding the rounding's worst case
``E = sum_k |rint(c_k s) - c_k s| max(|lb_k|, |ub_k|)``: ``(b_int + E) / s`` when maximising,
``(b_int - E) / s`` when minimising (:func:`model_bound`). The planner recomputes every reported
figure from the instance in floating point, so rounding never reaches a plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INTEGER_HEADROOM = float(2**56)
"""The largest ``sum |v s| max(|lb|, |ub|)`` of a scaled row or objective (int64 holds 2^63)."""


def integer_scale(vals: np.ndarray, reach: np.ndarray) -> float:
    """The largest power of two ``s`` with ``s * sum |vals| * reach <= INTEGER_HEADROOM`` (1 for an empty row).

    ``reach[k] = max(|lb_k|, |ub_k|)``: how far column ``k`` can go.
    """
    total = float(np.sum(np.abs(vals) * reach))
    if total <= 0 or not math.isfinite(total):
        return 1.0
    return math.ldexp(1.0, math.floor(math.log2(INTEGER_HEADROOM / total)))


@dataclass(frozen=True, slots=True)
class IntegerObjective:
    """An objective rounded to integers: ``coefs = rint(c s)``, and ``slack = E`` of the module docstring."""

    coefs: np.ndarray
    scale: float
    slack: float

    def model_bound(self, bound_int: float, maximize: bool) -> float:
        """A bound of the true objective from CP-SAT's bound ``bound_int`` of the integer one."""
        return (bound_int + self.slack) / self.scale if maximize else (bound_int - self.slack) / self.scale


def scale_objective(coefs: np.ndarray, reach: np.ndarray) -> IntegerObjective:
    """Integer objective coefficients ``rint(coefs * s)`` with their scale and rounding slack."""
    s = integer_scale(coefs, reach)
    exact = coefs * s
    ints = np.rint(exact)
    slack = float(np.sum(np.abs(ints - exact) * reach))
    return IntegerObjective(ints.astype(np.int64), s, slack)


def scale_row(kind: str, vals: np.ndarray, lo: float, hi: float, reach: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Integer coefficients and bounds for one row (see the module docstring); ``reach`` as in :func:`integer_scale`."""
    if kind == "count":
        ints = np.rint(vals)
        if not np.allclose(ints, vals):
            raise ValueError("count rows must have integer coefficients")
        return ints.astype(np.int64), lo, hi
    if math.isfinite(lo) and math.isfinite(hi):
        raise ValueError(f"{kind} rows are one-sided: an upper bound (energy) or a lower bound (progress)")
    s = integer_scale(vals, reach)
    if math.isfinite(hi):
        return np.floor(vals * s).astype(np.int64), lo, math.floor(hi * s)
    return np.ceil(vals * s).astype(np.int64), math.ceil(lo * s), hi
