"""The benchmark's maths by hand: gaps, references, shifted geometric mean, primal integral, profiles, traces."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

from tests.helpers.bench import run_row
from wattplan.planner.bench.incumbents import (
    approximate_trace,
    best_so_far,
    incumbent_trace,
    lp_seconds,
    plan_objective,
)
from wattplan.planner.bench.summary import (
    performance_ratios,
    primal_integral,
    profile_fraction,
    profile_steps,
    references,
    relative_gap,
    shifted_geometric_mean,
    solved,
    solver_summary,
    with_references,
)
from wattplan.planner.contracts.plan import Plan, PlanRound
from wattplan.planner.contracts.solve_report import HeuristicRecord, ModelStats, SolveReport, StageRecord


def test_relative_gap_cases() -> None:
    assert relative_gap(2.0, 2.5) == pytest.approx(0.5 / 2.5)
    assert relative_gap(2.5, 2.0) == pytest.approx(0.5 / 2.5)  # symmetric: max(|v|, |b|) below
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(-1.0, 1.0) == 1.0  # opposite signs
    assert relative_gap(0.0, 3.0) == 1.0
    assert relative_gap(None, 1.0) is None and relative_gap(1.0, None) is None


def test_shifted_geometric_mean_by_hand() -> None:
    assert shifted_geometric_mean([1.0, 3.0]) == pytest.approx(math.sqrt(2 * 4) - 1)
    assert shifted_geometric_mean([1.0, 3.0], shift=0.0) == pytest.approx(math.sqrt(3))
    assert shifted_geometric_mean([5.0]) == pytest.approx(5.0)
    assert shifted_geometric_mean([0.0, 0.0, 0.0]) == pytest.approx(0.0)
    assert shifted_geometric_mean([]) is None
    assert shifted_geometric_mean([1e6] * 10_000) == pytest.approx(1e6)  # in logs: no overflow


def test_primal_integral_of_a_step_trace_by_hand() -> None:
    """The trace has p = 1 on [0, 0.6), gamma(1.0, 2) = 0.5 on [0.6, 1.1), 0.25 on [1.1, 3.1), 0.1 on [3.1, 10]."""
    trace = [(0.6, 1.0), (1.1, 1.5), (3.1, 1.8)]
    expected = (0.6 * 1 + 0.5 * 0.5 + 2.0 * 0.25 + 6.9 * 0.1) / 10
    assert primal_integral(trace, 2.0, 10.0) == pytest.approx(expected)
    assert primal_integral([], 2.0, 10.0) == 1.0  # no incumbent: p = 1 throughout
    assert primal_integral([(0.0, 2.0)], 2.0, 10.0) == 0.0  # the optimum at once
    assert primal_integral([(12.0, 2.0)], 2.0, 10.0) == 1.0  # found after the limit: does not count
    assert primal_integral([(5.0, 9.0)], 10.0, 10.0) == pytest.approx((5 + 5 * 0.1) / 10)  # minimising too
    assert primal_integral([(5.0, 9.0)], None, 10.0) == 1.0
    with pytest.raises(ValueError):
        primal_integral(trace, 2.0, 0.0)


def test_references_take_the_tightest_bound_of_runs_that_are_not_wrong() -> None:
    rows = [
        run_row("a", "feasible", 2.0, bound=2.5),
        run_row("b", "feasible", 1.8, bound=2.2, lp_bound=2.4),
        run_row("c", "crash", None),
        run_row("a", "feasible", 10.0, instance_sha256="i2", sense="min", bound=9.0, lp_bound=8.0),
        run_row("b", "feasible", 12.0, instance_sha256="i2", sense="min"),
        run_row("a", "optimal", 2.0, instance_sha256="i3", bound=1.9),  # a bound below its own plan's value: wrong
        run_row("a", "feasible", 3.0, instance_sha256="i4"),  # no bound at all
    ]
    refs = references(rows)
    assert refs["i1"] == (2.0, 2.2)
    assert refs["i2"] == (10.0, 9.0)
    assert refs["i3"] == (2.0, 2.0)  # the wrong bound does not count: no bound left, b* = v*
    assert refs["i4"] == (3.0, 3.0)
    full = with_references(rows)
    assert full[0]["gap_ref"] == pytest.approx(0.2 / 2.2)
    assert full[1]["gap_ref"] == pytest.approx(0.4 / 2.2)
    assert full[2]["gap_ref"] is None and full[2]["primal_integral"] == 1.0
    assert full[4]["gap_ref"] == pytest.approx(3 / 12)
    assert full[5]["gap_ref"] == 0.0


def test_solved_and_the_summary_by_hand() -> None:
    rows = with_references(
        [
            run_row("a", "optimal", 2.0, bound=2.0, time_s=2.0, incumbents=[[0.0, 2.0]]),
            run_row("a", "crash", None, seed=1),
            run_row("b", "feasible", 2.0, time_s=12.0, incumbents=[[5.0, 1.0], [5.0, 2.0]]),  # within the gap, late
            run_row("b", "timeout", 2.0, seed=1, time_s=14.0),
        ]
    )
    assert [solved(r) for r in rows] == [True, False, True, False]
    a, b = solver_summary(rows)
    assert a["solver"] == "a" and a["runs"] == 2 and a["solved"] == 1 and a["crash"] == 1
    assert a["sgm_time_s"] == pytest.approx(math.sqrt((2 + 1) * (10 + 1)) - 1)  # the crash at the limit
    assert a["mean_gap_ref"] == pytest.approx(0.5)  # 0 and 1 (a failure)
    assert a["mean_primal_integral"] == pytest.approx(0.5)  # 0 and 1
    assert b["solved"] == 1 and b["timeout"] == 1 and b["crash"] == 0
    assert b["sgm_time_s"] == pytest.approx(10.0)  # a solved run's time is capped at the limit
    assert b["mean_gap_ref"] == pytest.approx(0.5)  # the late answer counts as a failure
    assert b["mean_primal_integral"] == pytest.approx((0.5 + 1.0) / 2)


def test_performance_ratios_and_profile_by_hand() -> None:
    """A solves p1 in 2 s and p2 in 4 s; B solves p1 in 1 s and fails p2; nobody solves p3."""
    rows = with_references(
        [
            run_row("A", "optimal", 1.0, instance_sha256="p1", time_s=2.0),
            run_row("A", "optimal", 1.0, instance_sha256="p2", time_s=4.0),
            run_row("A", "crash", None, instance_sha256="p3"),
            run_row("B", "optimal", 1.0, instance_sha256="p1", time_s=1.0),
            run_row("B", "hang", None, instance_sha256="p2"),
            run_row("B", "feasible", 0.5, instance_sha256="p3", bound=1.0),
        ]
    )
    ratios = performance_ratios(rows)
    assert ratios["A"] == {("p1", 0): 2.0, ("p2", 0): 1.0, ("p3", 0): math.inf}
    assert ratios["B"] == {("p1", 0): 1.0, ("p2", 0): math.inf, ("p3", 0): math.inf}
    assert profile_fraction(ratios["A"], 1.0) == pytest.approx(1 / 3)
    assert profile_fraction(ratios["A"], 2.0) == pytest.approx(2 / 3)
    assert profile_fraction(ratios["B"], 100.0) == pytest.approx(1 / 3)
    assert profile_steps(ratios["A"]) == [(1.0, pytest.approx(1 / 3)), (2.0, pytest.approx(2 / 3))]


def test_a_profile_with_no_exact_solver_says_so_instead_of_an_empty_legend(tmp_path: Path) -> None:
    """Only a heuristic ran: the time profile (exact solvers only) is empty, and matplotlib warned of its legend."""
    from wattplan.planner.bench.report import profile_plot

    rows = with_references([run_row("greedy", "feasible", 1.0, time_s=0.1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profile_plot(rows, tmp_path / "profile.svg")
    assert (tmp_path / "profile.svg").read_text().lstrip().startswith("<?xml")


def _plan(objective: str, value: float | None, report: SolveReport, progress: float = 1.8) -> Plan:
    summary = PlanRound(
        index=0,
        duration_s=360.0,
        budget_j=None,
        energy_j=5000.0,
        progress=progress,
        objective=objective,
        objective_value=value,
        bound=None,
        gap=None,
        gpus_used={},
        nodes_on={},
        solver="cbc",
        status="feasible",
        solve_s=3.0,
        report=report,
    )
    return Plan(round=summary, jobs=())


def _report() -> SolveReport:
    stats = ModelStats(columns=10, rows=5, nonzeros=20, options={}, enumerated={}, pruned={}, build_s=0.5)
    return SolveReport(
        model=stats,
        heuristics={"greedy": HeuristicRecord(1.0, 0.1), "lp-rounding": HeuristicRecord(1.5, 0.2)},
        lp_bound=2.0,
        lp_bound_note="optimal in 0.3 s",
        stages=[
            StageRecord("max_progress", "feasible", objective=1.8, progress=1.8, solve_s=2.0),
            StageRecord("min_energy_at_progress", "feasible", objective=5000.0, progress=1.8, solve_s=1.0),
        ],
    )


def test_incumbent_trace_adds_up_the_report_in_the_strategy_order() -> None:
    """Build 0.5; greedy +0.1 -> 0.6; LP +0.3 and lp-rounding +0.2 -> 1.1; stage 1 +2.0 -> 3.1; stage 2 -> 4.1."""
    report = _report()
    points, end = approximate_trace(report, "progress")
    assert points == [(0.6, 1.0), (pytest.approx(1.1), 1.5), (pytest.approx(3.1), 1.8)]
    assert end == pytest.approx(4.1)
    trace = incumbent_trace(_plan("progress", 1.8, report))
    assert [v for _, v in trace] == [1.0, 1.5, 1.8]  # the plan's own 1.8 at 4.1 improves nothing
    shifted = incumbent_trace(_plan("progress", 1.8, report), start_s=0.25, end_s=5.0)
    assert [t for t, _ in shifted] == [pytest.approx(0.85), pytest.approx(1.35), pytest.approx(3.35)]
    assert primal_integral(trace, 2.0, 10.0) == pytest.approx((0.6 + 0.5 * 0.5 + 2.0 * 0.25 + 6.9 * 0.1) / 10)


def test_incumbent_trace_for_energy_fallbacks_and_an_explicit_timeline() -> None:
    energy = SolveReport(
        stages=[
            StageRecord("max_progress_no_budget", "optimal", objective=3.0, solve_s=1.0),
            StageRecord("min_energy_at_target", "feasible", objective=7000.0, solve_s=2.0),
        ]
    )
    assert incumbent_trace(_plan("energy", 6900.0, energy)) == [(3.0, 7000.0), (3.0, 6900.0)]
    # a plan that switched to progress certifies no energy value; a progress fallback is worth its progress
    assert incumbent_trace(_plan("progress", None, SolveReport()), "energy") == []
    assert plan_objective(_plan("progress", None, SolveReport(), progress=1.2), "progress") == 1.2
    assert plan_objective(_plan("energy", None, SolveReport()), "energy") is None
    # a kept heuristic plan (floor_note) has more progress than the solver's reported value
    assert plan_objective(_plan("progress", 1.7, SolveReport(), progress=1.8), "progress") == 1.8
    assert plan_objective(_plan("progress", 1.8, SolveReport(), progress=1.8 - 1e-7), "progress") == 1.8

    class WithTimeline:
        """A later report with its own timeline of (seconds, value)."""

        def __init__(self, base: SolveReport) -> None:
            self.__dict__.update({k: getattr(base, k) for k in base.__slots__})
            self.incumbents = [(0.2, 1.0), (0.9, 1.7)]

    plan = _plan("progress", 1.8, WithTimeline(_report()))  # type: ignore[arg-type]
    assert incumbent_trace(plan) == [(0.2, 1.0), (0.9, 1.7), (0.9, 1.8)]


def test_small_helpers() -> None:
    assert lp_seconds("optimal in 0.42 s") == 0.42 and lp_seconds("not computed: 0.10 s left") == 0.0
    assert lp_seconds(None) == 0.0
    assert best_so_far([(2.0, 5.0), (1.0, 3.0), (3.0, 4.0)], maximize=True) == [(1.0, 3.0), (2.0, 5.0)]
    assert best_so_far([(1.0, 5.0), (2.0, 6.0), (3.0, 4.0)], maximize=False) == [(1.0, 5.0), (3.0, 4.0)]
