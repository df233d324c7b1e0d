"""How far an outside solver's answer is from the optimum, by wattplan's own proven bound (``--from-solution``).

The outside solver's word (``Optimal``) is not a proof: its tolerances are absolute, and progress is a small number
(CBC 2.10 said ``Optimal`` 1.2e-3 short of the optimum of a 12-job round, :mod:`formulations.mps`). wattplan
measures the answer instead: it solves the LP relaxation of the round's model (:func:`formulations.relaxation.
lp_relaxation`, the request's ``lp_solver``; the bound is the Lagrangian bound of its duals, valid whatever the
solver's tolerances) and gives the gap in the project's convention (:func:`formulations.verdict.relative_gap`)::

    gap = |bound - v| / max(|v|, 1e-9)

``v`` the plan's objective value; 0 when a plan is as good as the bound, ``(bound - v) / v`` for ``progress``.

* ``progress``: the bound is the LP's most progress under the budget (``v <= bound``).
* ``energy`` and ``efficiency``: the plan's objective is the least energy (excess energy) at progress
  ``>= (1 - delta) P*``, ``P*`` the most progress without the budget, not known here. Every plan of the round is a
  plan without the budget, so ``P* >= p``, the answer's own progress, and the LP minimum under the budget with
  progress ``>= (1 - delta) p (1 - 1e-6)`` (the last factor: the tolerance the answer was checked with) is a valid
  lower bound of the objective (``bound <= v``).

A large round (:data:`formulations.solve.CORE_MIN_COLUMNS` columns or more) is bounded as the strategy bounds it, by
column generation started from the answer's columns, whose Lagrangian bound holds for the whole model at every step.
No LP solver, or none answering within the time limit, gives no bound, and the note says why.
"""

from __future__ import annotations

import numpy as np

from wattplan.formulations import solve
from wattplan.formulations.backends import BackendUnavailable, ObjectiveName, get_backend
from wattplan.formulations.column_generation import column_generation_result
from wattplan.formulations.external_plan import TOLERANCE
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.relaxation import LpRelaxation, lp_relaxation
from wattplan.formulations.round_model import RoundModel
from wattplan.formulations.stage_export import SECOND_STAGE_VECTOR, second_stage_model
from wattplan.formulations.verdict import relative_gap
from wattplan.formulations.watchdog import run_with_deadline


def bound_model(rm: RoundModel, values: np.ndarray) -> tuple[LinearModel, ObjectiveName, bool]:
    """The LP whose optimum bounds the round's objective (module docstring): its model, vector and ``maximize``."""
    objective = rm.instance.round.objective
    if objective == "progress":
        return rm.lm, "progress", True
    progress = float(rm.lm.objectives["progress"] @ values)
    floor = (1 - rm.instance.round.delta) * progress * (1 - TOLERANCE)
    return second_stage_model(rm.lm, floor), SECOND_STAGE_VECTOR[objective], False


def outside_bound(rm: RoundModel, values: np.ndarray, lp_solver: str | None, limit_s: float) -> LpRelaxation:
    """The proven bound of :func:`bound_model` by ``lp_solver`` within ``limit_s`` seconds, or no value and why.

    ``values``: the answer's column values (a plan of the round). ``lp_solver`` None: not computed.
    """
    if lp_solver is None:
        return LpRelaxation(None, None, "not computed: no LP bound asked for")
    try:
        backend = get_backend(lp_solver)
    except BackendUnavailable as exc:
        return LpRelaxation(None, None, f"not computed: {exc}")
    lm, vector, maximize = bound_model(rm, values)
    what = "most progress under the budget" if maximize else f"least {vector} at the answer's progress share"
    if lm.num_cols >= solve.CORE_MIN_COLUMNS:
        args = (lm, lm.objectives[vector], maximize, rm.job_rows, np.flatnonzero(values > 0), limit_s)
        r = run_with_deadline(column_generation_result, args, limit_s + min(1.0, 0.1 * limit_s))
        return LpRelaxation(r.bound, None, f"LP relaxation ({what}) by column generation: {r.message or r.status}")
    relaxation = lp_relaxation(backend, lm, vector, maximize, limit_s)
    return LpRelaxation(relaxation.value, None, f"LP relaxation ({what}) by {backend.name}: {relaxation.note}")


def judged(
    rm: RoundModel, values: np.ndarray, value: float, lp_solver: str | None, limit_s: float
) -> tuple[float | None, float | None, str]:
    """The bound of :func:`outside_bound`, the gap of ``value`` (the answer's objective value) to it, and the note.

    The judge of :func:`formulations.external_plan.external_plan` (with ``lp_solver`` and ``limit_s`` bound).
    """
    relaxation = outside_bound(rm, values, lp_solver, limit_s)
    return relaxation.value, relative_gap(value, relaxation.value), relaxation.note
