"""How a round is solved around the solver: the LP-guided start, the heuristic floor, the watchdog.

The exhaustive search (tests/brute_force.py) is the oracle for optimality; the validator for
feasibility.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.brute_force import brute_force
from tests.helpers.processes import pid_alive, spawn_and_hang
from tests.random_instances import tiny_rounds
from wattplan.formulations import solve as solve_module
from wattplan.formulations import stages as stages_module
from wattplan.formulations.backends import SolveParams, SolverResult, get_backend
from wattplan.formulations.lp_rounding import lp_guided_allocations
from wattplan.formulations.round_model import build_round_model
from wattplan.formulations.solve import lp_relaxation
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.greedy import allocation_outcome, greedy_allocations
from wattplan.planner.core.validate import validate_plan

DEFAULT_INSTANCE = Path(__file__).resolve().parents[1] / "instances" / "default.json"
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@pytest.fixture(scope="module")
def default_instance() -> Instance:
    return load_instance(DEFAULT_INSTANCE)


def _progress(inst: Instance, allocations) -> float:
    return sum(allocation_outcome(inst, a)[0] for a in allocations)


@SETTINGS
@given(tiny_rounds())
def test_lp_guided_plan_is_valid_and_between_greedy_bound_and_optimum(inst: Instance) -> None:
    """greedy-or-less <= rounded <= P* <= LP optimum, and the rounded plan passes the validator."""
    rm = build_round_model(inst)
    lp = lp_relaxation(get_backend("highs"), rm.lm, "progress", True, 30.0)
    assert lp.value is not None and lp.values is not None, lp.note
    allocations = lp_guided_allocations(rm, lp.values)
    plan = assemble_plan(inst, allocations, SolveInfo("lp-rounding", "feasible"))
    assert validate_plan(inst, plan) == []
    best = brute_force(inst)
    assert plan.round.progress <= best.progress * (1 + 1e-9) + 1e-12
    assert best.progress <= lp.value * (1 + 1e-9) + 1e-9
    # The rounding falls back on the greedy's candidates, so it never ends with an empty plan
    # where the greedy plan has progress.
    if _progress(inst, greedy_allocations(inst)) > 0:
        assert plan.round.progress > 0


@SETTINGS
@given(tiny_rounds())
def test_lp_path_reaches_the_exhaustive_optimum(inst: Instance) -> None:
    """With the LP relaxation on (bound, LP-guided start, proof by bound), the optimum is unchanged."""
    best = brute_force(inst)
    plan = planning.plan(inst, PlanRequest(solver="highs", time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=True))
    assert validate_plan(inst, plan) == []
    assert plan.round.status == "optimal", plan.round.report
    assert plan.round.progress == pytest.approx(best.progress, rel=1e-6, abs=1e-9)
    assert plan.round.energy_j == pytest.approx(best.energy_j, rel=1e-6, abs=1e-3)
    assert plan.round.report.lp_bound >= plan.round.progress * (1 - 1e-9) - 1e-9


@pytest.mark.slow
def test_energy_target_is_never_below_the_greedy_plan_without_budget(
    default_instance: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weak first-stage incumbent (progress 0) must not drop the target to 0 and empty the plan.

    The no-budget stage is forced to return the empty plan; ``P*`` must still be the greedy
    plan's progress without budget, and the plan's progress at least ``(1 - delta) P*``.
    """
    stage = stages_module.mip_stage

    def weak_first_stage(state, name, lm, objective, share, start=None):
        if name == "max_progress_no_budget":
            return SolverResult("feasible", values=state.rm.encode([]), objective=0.0)
        return stage(state, name, lm, objective, share, start)

    monkeypatch.setattr(stages_module, "mip_stage", weak_first_stage)
    free = replace(default_instance, round=replace(default_instance.round, budget_j=None))
    p_greedy = _progress(free, greedy_allocations(free))
    assert p_greedy > 0
    plan = planning.plan(free, PlanRequest(solver="highs", objective="energy", time_limit_s=20, lp_bound=False))
    assert validate_plan(free, plan) == []
    target = asdict(plan.round.report.progress_target)
    assert target["solver_without_budget"] == 0.0
    assert target["best_without_budget"] == pytest.approx(p_greedy)
    assert plan.round.progress >= (1 - free.round.delta) * p_greedy * (1 - 1e-6)


def test_energy_objective_keeps_its_start_when_the_least_energy_stage_finds_nothing(
    default_instance: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objective ``energy``: when the least-energy stage finds nothing, its start is the plan.

    No answer from ``min_energy_at_target``: the start meets ``P >= target`` within the budget
    (twice the default round's, loose enough for the best plan without budget), so it is the plan
    (objective ``energy``, not proven), not a greedy fallback planned for progress.
    """
    stage = stages_module.mip_stage

    def energy_stage_times_out(state, name, lm, objective, share, start=None):
        if name == "min_energy_at_target":
            return SolverResult("no_solution", message="watchdog: no answer")
        return stage(state, name, lm, objective, share, start)

    monkeypatch.setattr(stages_module, "mip_stage", energy_stage_times_out)
    loose = replace(
        default_instance, round=replace(default_instance.round, budget_j=2 * default_instance.round.budget_j)
    )
    plan = planning.plan(loose, PlanRequest(solver="highs", objective="energy", time_limit_s=20, lp_bound=False))
    assert validate_plan(loose, plan) == []
    r = plan.round
    assert (r.objective, r.status) == ("energy", "feasible")
    assert "kept the start plan" in r.notes()["objective_note"]
    assert r.progress >= r.report.progress_target.target * (1 - 1e-9)


def test_plan_is_never_below_the_greedy_plan_when_the_solver_has_no_time(default_instance: Instance) -> None:
    """With almost no time, the solver's answer (if any) never replaces a better heuristic plan."""
    greedy = _progress(default_instance, greedy_allocations(default_instance))
    for solver in ("highs", "cbc", "cpsat"):
        plan = planning.plan(default_instance, PlanRequest(solver=solver, time_limit_s=0.5, lp_bound=False))
        assert validate_plan(default_instance, plan) == []
        assert plan.round.progress >= greedy * (1 - 1e-9), solver


@pytest.mark.slow
def test_cbc_reports_no_bound_of_its_own_and_the_plan_is_judged_by_the_proven_lp_bound(
    default_instance: Instance,
) -> None:
    """PuLP passes no dual bound on: the backend reports none (never ``value * (1 + gap)``), the plan's is the LP's."""
    rm = build_round_model(default_instance)
    # A node limit, not the clock, bounds the search (docs/design.md §5.15): CBC proves the 1% gap at its root
    # (3.9 s on a loaded 2-core machine); 300 s is only a safety net.
    params = SolveParams(time_limit_s=300, rel_gap=0.01, threads=2, node_limit=1_000)
    r = get_backend("cbc").solve(rm.lm, "progress", True, params)
    assert r.on_clock is False, r.message
    assert r.status == "optimal" and r.bound is None
    lp = lp_relaxation(get_backend("highs"), rm.lm, "progress", True, 60.0).value
    assert lp is not None and r.objective <= lp * (1 + 1e-9)
    plan = planning.plan(default_instance, PlanRequest(solver="cbc", rel_gap=0.01, time_limit_s=60))
    r = plan.round
    assert r.bound == pytest.approx(lp, rel=1e-9)
    assert r.gap == pytest.approx((r.bound - r.progress) / r.progress, rel=1e-9)
    # Stage 1 may be within the gap of the LP bound, but the energy stage has no bound: not optimal.
    assert r.status == "feasible"


def test_a_bound_beaten_by_its_own_solution_is_dropped_and_noted(default_instance: Instance) -> None:
    """A solver whose bound lies below its own plan's progress has proved nothing: no bound, never optimal."""
    r = SolverResult("optimal", values=np.zeros(3), objective=1.0, bound=0.99)
    assert solve_module.consistent_bound(r, maximize=True) is None
    assert solve_module.consistent_bound(replace(r, bound=1.0 - 1e-9), maximize=True) == 1.0 - 1e-9
    assert solve_module.consistent_bound(replace(r, bound=1.01), maximize=False) is None
    assert solve_module.consistent_bound(replace(r, bound=0.99), maximize=False) == 0.99


def test_watchdog_kills_the_solver_and_its_subprocesses_and_removes_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scratch folder goes under tmp_path: a solve of another test (pytest-xdist) may own one under /tmp now.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    marker = tmp_path / "pid"
    begin = time.perf_counter()
    result = run_with_deadline(spawn_and_hang, (str(marker),), 1.0)
    assert result.status == "no_solution" and "watchdog" in result.message
    assert time.perf_counter() - begin < 150  # well before the 300 s the 'solver' sleeps: it was killed
    pid = int(marker.read_text())
    deadline = time.monotonic() + 60  # a deadline: the loop ends as soon as the process is gone
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid), "the solver's subprocess outlived the watchdog"
    assert list(tmp_path.glob("wattplan-solve-*")) == []
