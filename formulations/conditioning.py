"""Conditioning for floating-point solvers: rows and objective scaled so tolerances mean what they say.

A round's numbers span many orders of magnitude: energy rows carry joules (coefficients up to
1e5-1e6, budgets up to 1e8), the progress objective is a sum of per-round fractions (coefficients
from 1e-7 for a long job to 1e-2, values from 1e-3 to 1e2). Floating-point solvers stop and
prune on *absolute* tolerances (HiGHS's ``mip_abs_gap`` 1e-6 and feasibility 1e-6, CBC's cutoff
increment 1e-5, ...): on the raw model these are 1e-4 of the objective or more, so a solver's
"optimal" meant "within its absolute tolerance", and a progress floor written in raw fractions
could be missed by 1e-6 absolute, 1e-4 relative.

The rule (docs/design.md §5.13), applied by every floating-point backend (HiGHS, SCIP, OR-Tools'
CBC, PuLP's CBC) to the model it hands over, never to the model the planner evaluates:

* every ``energy`` or ``progress`` row is multiplied by ``2^-k``, ``k = ceil(log2 max |a_r|)``,
  so its largest coefficient lies in ``(1/2, 1]``; counting rows keep their small integers;
* the objective is multiplied by ``s = 2^-k`` with ``k = ceil(log2 max |c|)``, so its largest
  coefficient lies in ``(1/2, 1]`` and a plan that runs any job at its best option is worth
  about 1 or more;
* absolute gap tolerances are set to ``ABS_GAP_SHARE * rel_gap`` in those units, three orders
  of magnitude below the relative gap asked for.

Powers of two change no mantissa, so the scaled model has exactly the feasible set and the
optimal solutions of the original; a solution's objective is always recomputed on the original
model and a solver's bound is divided by ``s``. Scaling only makes the solver's own stopping
rules honest; the plan's ``optimal`` and gap are still wattplan's verdict from a proven bound
(:mod:`formulations.solve`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from wattplan.formulations.ir import LinearModel

SCALED_KINDS = frozenset({"energy", "progress"})
"""Row kinds that carry physical magnitudes (J, weighted progress) and are scaled; ``count`` rows are not."""
ABS_GAP_SHARE = 1e-3
"""A solver's absolute gap tolerance, as a share of the relative gap asked for, in conditioned units."""
MIN_ABS_GAP = 1e-10
"""The absolute gap tolerance when no relative gap is asked for (``rel_gap`` 0 or None)."""


def power_of_two_scale(largest: float) -> float:
    """``2^-ceil(log2 largest)``: the power of two that brings ``largest`` into ``(1/2, 1]``; 1 for 0 or non-finite."""
    if not math.isfinite(largest) or largest <= 0:
        return 1.0
    return math.ldexp(1.0, -math.ceil(math.log2(largest)))


@dataclass(frozen=True, slots=True)
class Conditioned:
    """A scaled copy of a model for one objective.

    ``lm``: rows scaled (module docstring) and ``lm.objectives[objective]`` scaled by
    ``objective_scale`` (solver units per model unit); ``row_scale[r]``: the factor row ``r``
    was multiplied by.
    """

    lm: LinearModel
    objective_scale: float
    row_scale: np.ndarray

    def model_bound(self, solver_bound: float | None) -> float | None:
        """A bound in solver units back in the model's units (``solver_bound / objective_scale``)."""
        if solver_bound is None or not math.isfinite(solver_bound):
            return None
        return solver_bound / self.objective_scale


def row_scales(lm: LinearModel) -> np.ndarray:
    """Per row, ``2^-ceil(log2 max |a_r|)`` for energy and progress rows, 1 for counting rows."""
    largest = np.zeros(lm.num_rows)
    np.maximum.at(largest, lm.a_rows, np.abs(lm.a_vals))
    physical = np.fromiter((k in SCALED_KINDS for k in lm.row_kind), dtype=bool, count=lm.num_rows)
    scaled = physical & (largest > 0) & np.isfinite(largest)
    scales = np.ones(lm.num_rows)
    scales[scaled] = np.ldexp(1.0, -np.ceil(np.log2(largest[scaled])).astype(np.int64))
    return scales


def condition(lm: LinearModel, objective: str) -> Conditioned:
    """``lm`` scaled for a floating-point solver that optimises ``lm.objectives[objective]`` (module docstring)."""
    scales = row_scales(lm)
    coefs = lm.objectives[objective]
    s = power_of_two_scale(float(np.abs(coefs).max())) if len(coefs) else 1.0
    scaled = replace(
        lm,
        a_vals=lm.a_vals * scales[lm.a_rows],
        row_lo=lm.row_lo * scales,
        row_hi=lm.row_hi * scales,
        objectives={**lm.objectives, objective: coefs * s},
    )
    return Conditioned(scaled, s, scales)


def absolute_gap(rel_gap: float | None) -> float:
    """The absolute gap tolerance to give a solver of a conditioned model: ``ABS_GAP_SHARE * rel_gap``."""
    if not rel_gap:
        return MIN_ABS_GAP
    return max(MIN_ABS_GAP, ABS_GAP_SHARE * rel_gap)
