"""Proven bounds and the verdict (docs/design.md §5.13): when a plan's bound proves it ``optimal``.

A plan's ``bound`` is a proof, never a solver's word: a solver's own dual bound of the MIP, or an
LP relaxation's Lagrangian bound (:mod:`formulations.lagrangian`). A bound that its own solution
beats by more than :data:`GAP_TOLERANCE` (relative) has proved nothing and is dropped
(:func:`consistent_bound`); of two proven bounds the tighter holds (:func:`tighter`).

The verdict: ``gap = |bound - v| / max(|v|, 1e-9)``, ``v`` the plan's objective, taken as 0 when
``|bound - v| <= ABS_GAP_SHARE * max_k |c_k|`` (the noise of a bound on an empty plan); a plan is
``optimal`` only when ``gap <= rel_gap + GAP_TOLERANCE`` (:func:`within_gap`) and every other
stage is proven the same way. Values and bounds are in the objective's own units (progress, or J).
"""

from __future__ import annotations

import numpy as np

from wattplan.formulations.backends import ObjectiveName, SolverResult
from wattplan.formulations.ir import LinearModel

GAP_TOLERANCE = 1e-6
"""Slack on ``gap <= rel_gap`` for an ``optimal`` status: a bound carries numerical noise (CP-SAT's
is an integer of the scaled model, off by up to half a unit of :mod:`formulations.scaling` per
term: a relative gap of 7e-9 was seen on a proven 3-job optimum)."""
ABS_GAP_SHARE = 1e-9
"""A bound within this share of the objective's largest coefficient (``unit``, the value of the best
single option, in the objective's own units) of the objective closes the gap: a round whose best
plan is empty has objective 0 and a bound that carries rounding of about that size (CP-SAT's,
:mod:`formulations.scaling`), so a purely relative gap could never be closed there."""


def relative_gap(objective: float | None, bound: float | None, unit: float = 0.0) -> float | None:
    """``|bound - objective| / max(|objective|, 1e-9)``, 0 within ``ABS_GAP_SHARE * unit``; None without both."""
    if objective is None or bound is None:
        return None
    diff = abs(bound - objective)
    return 0.0 if diff <= ABS_GAP_SHARE * unit else diff / max(abs(objective), 1e-9)


def tighter(a: float | None, b: float | None, maximize: bool) -> float | None:
    """The tighter of two proven bounds (the smaller upper bound when maximising, the larger lower bound else)."""
    if a is None or b is None:
        return a if b is None else b
    return min(a, b) if maximize else max(a, b)


def within_gap(objective: float | None, bound: float | None, rel_gap: float, unit: float = 0.0) -> bool:
    """True when a proven ``bound`` puts ``objective`` within ``rel_gap`` (+ :data:`GAP_TOLERANCE`) of the optimum."""
    gap = relative_gap(objective, bound, unit)
    return gap is not None and gap <= rel_gap + GAP_TOLERANCE


def consistent_bound(r: SolverResult, maximize: bool, unit: float = 0.0) -> float | None:
    """``r.bound`` unless its own solution beats it (beyond :data:`GAP_TOLERANCE`): a contradicted bound is no proof."""
    if r.bound is None or r.objective is None or not r.has_solution:
        return r.bound
    excess = (r.objective - r.bound) if maximize else (r.bound - r.objective)
    if excess > GAP_TOLERANCE * max(abs(r.objective), abs(r.bound)) + ABS_GAP_SHARE * unit:
        return None
    return r.bound


def objective_unit(lm: LinearModel, vector: ObjectiveName) -> float:
    """The largest ``|c|`` of an objective vector: the scale of :data:`ABS_GAP_SHARE` (model units)."""
    coefs = lm.objectives[vector]
    return float(np.abs(coefs).max()) if len(coefs) else 0.0
