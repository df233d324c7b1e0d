"""The LP relaxation and the core (docs/design.md §5.3 and §5.10): the round's proven ``lp_bound``.

A small round's LP relaxation is solved by the request's ``lp_solver`` (:func:`lp_relaxation`); its
value is the *proven* Lagrangian bound of its row duals (:mod:`formulations.lagrangian`), never the
LP objective the solver reports.

Large rounds (a model of at least :data:`formulations.solve.CORE_MIN_COLUMNS` columns) are solved
on a *core*: the LP relaxation is solved by column generation (:mod:`formulations.column_generation`), whose
Lagrangian bound is valid for the full model at every iteration and is the reported
``lp_bound``; the stages then solve the MIP restricted to the columns column generation kept
plus those of every start and heuristic plan (price and branch). A plan of the core is a
plan of the round; the solver's own bound on the core is not a bound of the round and is
dropped, so such a plan is ``optimal`` only when it is within ``rel_gap`` of the Lagrangian
bound. The ``energy`` and ``efficiency`` objectives take their core from the LP of most
progress without budget. A core above :data:`CORE_MIP_MAX_COLUMNS` columns is cut to the LP
solution's support plus the known plans' columns and every column outside the options
(:func:`generate_core`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wattplan.formulations.backends import Backend, ObjectiveName, SolveParams
from wattplan.formulations.column_generation import column_generation_result
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.stages import MIN_STAGE_S, SolveState, known_columns
from wattplan.formulations.watchdog import run_with_deadline

LP_SHARE = 0.5
"""The LP relaxation (bound and LP-guided start): share of the time left."""
CORE_LP_SHARE = 0.8
"""The same on a large round, by column generation: its LP-rounded plan is most of the plan's quality."""
CORE_MIP_MAX_COLUMNS = 20_000
"""A core with more columns is cut to the LP solution's support (plus the known plans' columns and ``w``, ``u``):
on 2,000-job rounds a 30,000-column core did not improve the LP-rounded plan in 2 s, and at 10,000 jobs HiGHS did
not finish its presolve in 22 s, while the 3,244-column support of a V100-only 2,000-job round solved to
optimality in 1-2 s (0.0015% below the bound, against 0.85% for the LP-rounded plan)."""
SUPPORT_EPS = 1e-9
"""An LP value above this puts its column in the support."""


@dataclass(frozen=True, slots=True)
class LpRelaxation:
    """The LP relaxation's optimum ``value`` and solution ``values`` (None when not solved) and a note.

    By column generation, ``value`` is the Lagrangian bound (valid, possibly above the LP optimum
    when the time ran out) and ``values`` the restricted master's solution.
    """

    value: float | None
    values: np.ndarray | None
    note: str


def lp_relaxation(
    backend: Backend, lm: LinearModel, objective: ObjectiveName, maximize: bool, limit_s: float
) -> LpRelaxation:
    """The LP relaxation of ``lm`` by ``backend`` within ``limit_s``: its proven bound and solution, else no value.

    The value is the backend's *proven* bound (the Lagrangian bound of its duals,
    :mod:`formulations.lagrangian`), never the LP objective it reports: an LP solved without a
    bound to show for it gives no ``lp_bound``.
    """
    if not backend.features.lp_relaxation:
        return LpRelaxation(None, None, f"not computed: {backend.name} solves no LP relaxation")
    args = (lm, objective, maximize, SolveParams(time_limit_s=limit_s), None, True)
    r = run_with_deadline(backend.solve, args, limit_s)
    note = f"{r.status} in {r.solve_s:.2f} s"
    if r.has_solution and r.status == "optimal" and r.bound is not None:
        return LpRelaxation(r.bound, r.values, note)
    if r.has_solution and r.status == "optimal":
        note += ", no proven bound (the solver gave no usable duals)"
    return LpRelaxation(None, None, note)


def relax(
    state: SolveState,
    lm: LinearModel,
    objective: ObjectiveName,
    maximize: bool,
    share: float,
    feasible: np.ndarray | None = None,
) -> LpRelaxation | None:
    """The LP relaxation stage, with ``share`` of the time left (s); its proven value is the plan's ``lp_bound``.

    None when the request asks for no LP bound. By column generation on a large round, started
    from the columns of ``feasible`` too (a solution of ``lm``: a progress target may be out of
    reach of the heuristic plans' columns alone).
    """
    if not state.req.lp_bound:
        return None
    left = state.clock.left()
    limit = max(share * left, MIN_STAGE_S)
    if left < MIN_STAGE_S:
        relaxation = LpRelaxation(None, None, f"not computed: {left:.2f} s left")
    elif state.large:
        extra = np.flatnonzero(feasible > 0) if feasible is not None else None
        relaxation = generate_core(state, lm, objective, maximize, limit, extra)
    elif state.lp_backend is None:
        relaxation = LpRelaxation(None, None, f"not computed: {state.lp_missing}")
    else:
        relaxation = lp_relaxation(state.lp_backend, lm, objective, maximize, limit)
    state.lp_bound = relaxation.value
    state.report.lp_bound = relaxation.value
    state.report.lp_bound_note = relaxation.note
    return relaxation


def generate_core(
    state: SolveState,
    lm: LinearModel,
    objective: ObjectiveName,
    maximize: bool,
    limit_s: float,
    extra: np.ndarray | None = None,
) -> LpRelaxation:
    """The LP of ``lm`` by column generation within ``limit_s`` (s); the first call's columns become the core.

    The master starts from the columns of the heuristic plans, the running jobs and ``extra``.
    """
    seed = known_columns(state) if extra is None else np.union1d(known_columns(state), extra)
    args = (lm, lm.objectives[objective], maximize, state.rm.job_rows, seed, limit_s)
    r = run_with_deadline(column_generation_result, args, limit_s + min(1.0, 0.1 * limit_s))
    if r.columns is not None and state.core is None:
        state.core = _core_columns(state, lm, np.union1d(r.columns, seed), seed, r.values)
    if r.bound is None or r.values is None:
        return LpRelaxation(None, None, r.message or r.status)
    return LpRelaxation(r.bound, r.values, f"{r.message} in {r.solve_s:.2f} s")


def _core_columns(
    state: SolveState, lm: LinearModel, core: np.ndarray, seed: np.ndarray, values: np.ndarray | None
) -> np.ndarray:
    """The core's columns: ``core``, cut when it has too many for the MIP in time.

    Above :data:`CORE_MIP_MAX_COLUMNS` columns, and with an LP solution, the core is the LP's
    support, the known plans (``seed``) and every column outside the options (``w``, ``u``), where
    the fractional jobs choose among the LP's own columns.
    """
    if len(core) <= CORE_MIP_MAX_COLUMNS or values is None:
        return core
    options = len(state.rm.x_cols) + len(state.rm.z_cols)
    support = np.union1d(np.flatnonzero(values > SUPPORT_EPS), seed)
    return np.union1d(support, np.arange(options, lm.num_cols))
