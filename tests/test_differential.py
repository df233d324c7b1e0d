"""All backends and an exhaustive search agree; the optimum behaves as it must.

Random tiny rounds are drawn from the shipped real profiles (tests/random_instances.py).
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.brute_force import brute_force
from tests.random_instances import tiny_rounds
from wattplan.formulations.backends import available_backends, backend_features
from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.validate import validate_plan

pytestmark = pytest.mark.slow
SOLVERS = available_backends()
EXACT = dict(time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=False)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def solve(inst: Instance, solver: str):
    plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
    assert validate_plan(inst, plan) == []
    features = backend_features(solver)
    if features is not None and features.bound:
        assert plan.round.status == "optimal", plan.round.report
    else:  # no bound of its own and no LP bound asked for: nothing proves the plan
        assert plan.round.status == "feasible" and plan.round.bound is None, plan.round.report
    return plan


@SETTINGS
@given(tiny_rounds())
def test_backends_agree_with_exhaustive_search(inst: Instance) -> None:
    best = brute_force(inst)
    for solver in SOLVERS:
        plan = solve(inst, solver)
        assert plan.round.progress == pytest.approx(best.progress, rel=1e-6, abs=1e-9), solver
        if plan.round.bound is not None:  # no reported bound lies below the true optimum
            assert plan.round.bound >= best.progress * (1 - 1e-6) - 1e-12, solver
        # The second stage: least energy among plans within 1e-6 of the best progress.
        assert plan.round.energy_j == pytest.approx(best.energy_j, rel=1e-6, abs=1e-3), solver


@SETTINGS
@given(tiny_rounds(), st.sampled_from([1.5, 2.0, 10.0]))
def test_more_budget_never_lowers_progress(inst: Instance, factor: float) -> None:
    if inst.round.budget_j is None:
        inst = dataclasses.replace(inst, round=dataclasses.replace(inst.round, budget_j=1e5))
    richer = dataclasses.replace(inst, round=dataclasses.replace(inst.round, budget_j=inst.round.budget_j * factor + 1))
    poor, rich = solve(inst, "highs"), solve(richer, "highs")
    assert rich.round.progress >= poor.round.progress * (1 - 1e-6) - 1e-9


@SETTINGS
@given(tiny_rounds(), st.randoms(use_true_random=False))
def test_job_order_does_not_change_the_optimum(inst: Instance, rng: random.Random) -> None:
    jobs = list(inst.jobs)
    rng.shuffle(jobs)
    shuffled = dataclasses.replace(inst, jobs=tuple(jobs))
    a, b = solve(inst, "cpsat"), solve(shuffled, "cpsat")
    assert b.round.progress == pytest.approx(a.round.progress, rel=1e-6, abs=1e-9)
    assert b.round.energy_j == pytest.approx(a.round.energy_j, rel=1e-6, abs=1e-3)
