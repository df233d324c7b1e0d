"""Column generation and the core path of large rounds (formulations/column_generation.py, formulations/solve.py).

* The Lagrangian bound is valid for *any* multipliers: never below the exhaustive optimum of a
  tiny round (property test), and equal to the LP optimum once column generation converges.
* The core path (forced on tiny rounds by lowering the size threshold) returns plans that pass the
  validator, never above the bound, and reports ``optimal`` only within the gap of that bound.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.brute_force import brute_force
from tests.random_instances import tiny_rounds
from wattplan.formulations import solve as solve_module
from wattplan.formulations.backends import SolveParams, SolverResult, get_backend
from wattplan.formulations.column_generation import (
    ColumnGenerationResult,
    column_generation_lp,
    gub_membership,
    lagrangian_bound,
)
from wattplan.formulations.round_model import build_round_model
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.files.resources import DEFAULT_INSTANCE_NAME, shipped

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@SETTINGS
@given(tiny_rounds(max_jobs=4), st.integers(0, 2**32 - 1))
def test_lagrangian_bound_is_never_below_the_optimum_for_any_multipliers(inst: Instance, seed: int) -> None:
    rm = build_round_model(inst)
    lm = rm.lm
    rng = np.random.default_rng(seed)
    y = rng.normal(scale=rng.choice([1e-9, 1e-6, 1e-3, 1.0]), size=lm.num_rows)
    member = gub_membership(lm, rm.job_rows)
    optimum = brute_force(inst).progress
    bound = lagrangian_bound(lm, lm.objectives["progress"], True, y, rm.job_rows, member)
    assert bound >= optimum - 1e-9 * max(1.0, optimum)
    zero = lagrangian_bound(lm, lm.objectives["progress"], True, np.zeros(lm.num_rows), rm.job_rows, member)
    assert zero >= optimum - 1e-9  # with no prices: every job at its most progress


def _full_lp(lm, objective: str, maximize: bool) -> float:
    """The full LP by HiGHS, in a child process: a process that ran a solver must not fork the planner's solves."""
    args = (lm, objective, maximize, SolveParams(time_limit_s=60), None, True)
    r = run_with_deadline(get_backend("highs").solve, args, 120)
    assert r.status == "optimal" and r.objective is not None
    return r.objective


def _column_generation(lm, objective: np.ndarray, maximize: bool, gub_rows, seed) -> ColumnGenerationResult:
    """:func:`column_generation_lp` to convergence, in a child process (see :func:`_full_lp`)."""

    def run() -> SolverResult:
        r = column_generation_lp(lm, objective, maximize, gub_rows, seed, 60.0, rel_tol=1e-9)
        return SolverResult("optimal", stats={"result": r})  # type: ignore[dict-item]

    return run_with_deadline(run, (), 120).stats["result"]  # type: ignore[return-value]


@pytest.mark.parametrize("budget_share", [0.3, 1.0])
def test_converged_bound_equals_the_full_lp_on_the_default_round(budget_share: float) -> None:
    inst = load_instance(shipped(DEFAULT_INSTANCE_NAME))
    assert inst.round.budget_j is not None
    inst = replace(inst, round=replace(inst.round, budget_j=budget_share * inst.round.budget_j))
    rm = build_round_model(inst)
    lm = rm.lm
    seed = np.flatnonzero(rm.encode(greedy_allocations(inst)) > 0)
    r = _column_generation(lm, lm.objectives["progress"], True, rm.job_rows, seed)
    full = _full_lp(lm, "progress", True)
    assert r.converged and r.bound is not None and r.value is not None
    # equal up to the LP solver's dual feasibility tolerance (1e-7 per column), never below
    assert full * (1 - 1e-9) <= r.bound <= full * (1 + 1e-5)
    assert r.value == pytest.approx(full, rel=1e-6)
    assert len(r.active) < lm.num_cols / 2  # the master keeps a fraction of the columns
    assert r.values is not None
    act = lm.row_activity(r.values)
    assert np.all(act <= lm.row_hi + 1e-6) and np.all(act >= lm.row_lo - 1e-6)


def test_minimising_bound_is_below_the_full_lp() -> None:
    """The energy LP at a progress target (the energy objective's second stage): a lower bound."""
    inst = load_instance(shipped(DEFAULT_INSTANCE_NAME))
    rm = build_round_model(inst)
    lm = rm.lm
    v = rm.encode(greedy_allocations(inst))
    target = 0.9 * float(lm.objectives["progress"] @ v)
    target_lm = lm.with_row(lm.objectives["progress"], target, np.inf, "progress_floor", "progress")
    seed = np.flatnonzero(v > 0)
    r = _column_generation(target_lm, target_lm.objectives["energy"], False, rm.job_rows, seed)
    full = _full_lp(target_lm, "energy", False)
    assert r.converged and r.bound is not None
    assert r.bound <= full * (1 + 1e-6)
    assert r.bound == pytest.approx(full, rel=1e-5)


@pytest.fixture
def core_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round takes the core path (column generation, then the MIP on the core)."""
    monkeypatch.setattr(solve_module, "CORE_MIN_COLUMNS", 0)


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(tiny_rounds(max_jobs=4), st.sampled_from(["highs", "cbc", "cpsat"]))
def test_core_path_plans_are_valid_and_within_the_bound(core_everywhere: None, inst: Instance, solver: str) -> None:
    plan = planning.plan(inst, PlanRequest(solver=solver, time_limit_s=20, rel_gap=1e-6, threads=1))
    assert validate_plan(inst, plan) == []
    optimum = brute_force(inst).progress
    r = plan.round
    assert r.progress <= optimum + 1e-9 * max(1.0, optimum)
    if r.report.lp_bound is not None:
        assert r.report.lp_bound >= optimum - 1e-7 * max(1.0, optimum)
    if r.status == "optimal":
        assert r.progress >= optimum * (1 - 1e-6) - 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["progress", "energy", "efficiency"])
def test_core_path_on_the_default_round(core_everywhere: None, objective: str) -> None:
    """Progress under the budget; energy and efficiency without one (their target is then always reachable)."""
    inst = load_instance(shipped(DEFAULT_INSTANCE_NAME))
    if objective != "progress":
        inst = replace(inst, round=replace(inst.round, budget_j=None))
    plan = planning.plan(inst, PlanRequest(solver="highs", time_limit_s=20, objective=objective))  # type: ignore[arg-type]
    assert validate_plan(inst, plan) == []
    r = plan.round
    assert "column generation" in (r.report.lp_bound_note or "")
    assert r.report.lp_bound is not None and r.objective_value is not None
    if objective == "progress":
        full = planning.plan(inst, PlanRequest(solver="highs", time_limit_s=20, objective="progress"))
        assert r.report.lp_bound >= full.round.progress * (1 - 1e-6)
        assert r.progress >= full.round.progress * (1 - 1e-3)
    else:  # a lower bound of the energy (or excess energy) at the progress target
        assert r.report.lp_bound <= r.objective_value + 1e-6 * abs(r.objective_value)
