"""The benchmark's wrong-result check: rules (a), (b), (c) by hand, the references without wrong runs, the re-check."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tests.conftest import tiny_instance_doc
from tests.helpers.bench import run_row
from wattplan.planner.bench.check import plan_check
from wattplan.planner.bench.summary import (
    WRONG_TOL,
    performance_ratios,
    references,
    solved,
    solver_summary,
    with_references,
    wrong_reasons,
)
from wattplan.planner.bench.worker import falsify_bound, injected_fault
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.planning import greedy_plan, plan


def _key(row: dict) -> str:
    return f"{row['instance_sha256']}|{row['solver']}|{row['seed']}"


def _by_solver(rows: list[dict]) -> dict[str, dict]:
    return {r["solver"]: r for r in rows}


# --------------------------------------------------------------------------------------------
# Rule (b): a bound beaten by a valid plan


def test_a_bound_beaten_by_another_runs_value_is_wrong_not_solved_and_not_the_reference() -> None:
    """Run x says optimal at 2.3 with bound 2.2; y's valid plan is worth 2.3 and its bound is 2.4."""
    rows = [
        run_row("x", "optimal", 2.3, bound=2.2, lp_bound=2.6),
        run_row("y", "feasible", 2.3, bound=2.4),
        run_row("z", "feasible", 2.0, lp_bound=2.25),  # its LP bound is below y's 2.3
    ]
    wrong = wrong_reasons(rows)
    assert set(wrong) == {_key(rows[0]), _key(rows[2])}
    assert "bound 2.2 is below 2.3" in wrong[_key(rows[0])] and "lp_bound" not in wrong[_key(rows[0])]
    assert wrong[_key(rows[2])].startswith("lp_bound 2.25 is below 2.3")
    assert references(rows)["i1"] == (2.3, 2.4)  # neither 2.2 nor 2.25 (and nothing clipped)
    x, y, z = with_references(rows)
    assert x["wrong"] and not solved(x)  # optimal, yet not solved
    assert y["wrong"] == "" and y["gap_ref"] == pytest.approx(0.1 / 2.4)
    assert z["gap_ref"] == pytest.approx(0.4 / 2.4)


def test_a_bound_below_its_own_plan_is_wrong() -> None:
    rows = [run_row("x", "feasible", 2.0, bound=1.5)]
    assert "bound 1.5 is below 2, the value of a valid plan (x seed 0)" in wrong_reasons(rows)[_key(rows[0])]
    assert references(rows)["i1"] == (2.0, 2.0)


# --------------------------------------------------------------------------------------------
# Rule (c): an optimal claim beaten


def test_an_optimal_claim_beaten_by_more_than_its_gap_is_wrong() -> None:
    """Run x says optimal at 2.0 (no bound); y found 2.001, 0.05% better, beyond x's gap 1e-4 but within w's 1e-3."""
    rows = [
        run_row("x", "optimal", 2.0),
        run_row("y", "feasible", 2.001),
        run_row("w", "optimal", 2.0, seed=1, rel_gap=1e-3),
    ]
    wrong = wrong_reasons(rows)
    assert list(wrong) == [_key(rows[0])]
    assert "says optimal at 2" in wrong[_key(rows[0])] and "(y seed 0) is worth 2.001" in wrong[_key(rows[0])]
    x, y, w = with_references(rows)
    assert not solved(x) and solved(w)


# --------------------------------------------------------------------------------------------
# Minimising, targets, ties


def test_a_min_sense_instance_flags_symmetrically() -> None:
    """Energy (minimised): x says optimal at 10 with lower bound 10; y's valid plan uses 9.9 at the same target."""
    base = {"instance_sha256": "e", "sense": "min", "progress_target": 2.5}
    rows = [
        run_row("x", "optimal", 10.0, bound=10.0, lp_bound=9.0, progress=2.6, **base),
        run_row("y", "feasible", 9.9, bound=9.5, progress=2.55, **base),
    ]
    wrong = wrong_reasons(rows)
    assert list(wrong) == [_key(rows[0])]
    reason = wrong[_key(rows[0])]
    assert "bound 10 is above 9.9" in reason and "says optimal at 10" in reason and "lp_bound" not in reason
    assert references(rows)["e"] == (9.9, 9.5)
    x, y = with_references(rows)
    assert not solved(x) and y["gap_ref"] == pytest.approx(0.4 / 9.9)


def test_a_plan_below_a_runs_progress_target_does_not_contradict_its_bound() -> None:
    """Run y uses less energy than x's bound, but its progress 2.4 misses x's target 2.5: a different problem."""
    base = {"instance_sha256": "e", "sense": "min"}
    rows = [
        run_row("x", "optimal", 10.0, bound=10.0, progress=2.6, progress_target=2.5, **base),
        run_row("y", "optimal", 8.0, bound=8.0, progress=2.4, progress_target=2.3, **base),
    ]
    assert wrong_reasons(rows) == {}
    rows[1]["progress"] = 2.5  # now y's plan meets x's target: x's bound and optimal claim are contradicted
    assert set(wrong_reasons(rows)) == {_key(rows[0])}


def test_a_plan_below_its_own_progress_target_is_wrong_and_no_reference() -> None:
    """Seen on a long round: a solver's 1e-6 absolute row tolerance let a plan miss its target by 1.2e-5 relative."""
    base = {"instance_sha256": "e", "sense": "min", "progress_target": 0.04314566602715005}
    rows = [
        run_row("x", "optimal", 1824103.8, bound=1823961.6, progress=0.04314773173590507, **base),
        run_row("y", "optimal", 1823318.9, bound=1823318.9, progress=0.04314515943701842, **base),
        run_row(
            "z", "optimal", 1824103.8, bound=1824000.0, progress=0.0431456660271500 * (1 - 0.5 * WRONG_TOL), **base
        ),
    ]
    wrong = wrong_reasons(rows)
    assert list(wrong) == [_key(rows[1])]
    assert wrong[_key(rows[1])] == "plan's progress 0.04314515944 misses its own target 0.04314566603"
    assert references(rows)["e"] == (1824103.8, 1824000.0)  # y's value is no reference, nor its bound


def test_ties_within_the_tolerance_are_not_flagged() -> None:
    near = 2.0 * (1 + 0.5 * WRONG_TOL)
    rows = [
        run_row("x", "optimal", 2.0, bound=2.0),
        run_row("y", "feasible", near, bound=near),
        run_row("m", "optimal", 10.0, instance_sha256="e", sense="min", bound=10.0),
        run_row("n", "feasible", 10.0 * (1 - 0.5 * WRONG_TOL), instance_sha256="e", sense="min"),
        run_row("g", "optimal", 2.0 * (1 - 1e-4), seed=1),  # within its gap 1e-4 of y's value
    ]
    assert wrong_reasons(rows) == {}
    assert all(solved(r) for r in with_references(rows) if r["status"] == "optimal")
    rows[1]["objective"] = rows[1]["bound"] = 2.0 * (1 + 3 * WRONG_TOL)  # beyond the tolerance: x's bound is wrong
    assert set(wrong_reasons(rows)) == {_key(rows[0])}


# --------------------------------------------------------------------------------------------
# Rule (a): the plan itself


def test_a_plan_that_fails_the_recheck_or_misreports_is_wrong_and_no_witness() -> None:
    rows = [
        run_row("x", "optimal", 2.0, bound=2.0, valid=True),
        run_row("bad", "feasible", 9.0, valid=False, recheck="round.progress: claims 9, recomputed 1 [x]"),
        run_row("liar", "optimal", 1.9, bound=1.9, claimed_objective=2.0),
    ]
    wrong = wrong_reasons(rows)
    assert set(wrong) == {_key(rows[1]), _key(rows[2])}  # x's bound stands: 9.0 is no valid plan's value
    assert wrong[_key(rows[1])].startswith("plan fails the independent re-check: round.progress")
    assert "reports objective 2, the plan evaluates to 1.9 (less)" in wrong[_key(rows[2])]
    assert references(rows)["i1"] == (2.0, 2.0)
    x, bad, liar = with_references(rows)
    assert bad["gap_ref"] is None and bad["primal_integral"] == 1.0 and not solved(liar)
    # the progress objective reports its first stage's P1 and may keep (1 - 1e-6) P1: not a lie
    rows[2].update(objective=2.0 * (1 - 1e-6), claimed_objective=2.0, bound=2.0)
    assert _key(rows[2]) not in wrong_reasons(rows)


# --------------------------------------------------------------------------------------------
# The summary and the profile


def test_profile_and_summary_exclude_wrong_runs() -> None:
    """Fast A says optimal on p1 with a wrong bound; B is slower and right: B is the only solver of p1."""
    rows = with_references(
        [
            run_row("A", "optimal", 1.0, instance_sha256="p1", bound=0.9, time_s=1.0),
            run_row("B", "optimal", 1.0, instance_sha256="p1", bound=1.0, time_s=4.0),
            run_row("A", "optimal", 3.0, instance_sha256="p2", bound=3.0, time_s=2.0),
            run_row("B", "optimal", 3.0, instance_sha256="p2", bound=3.0, time_s=2.0),
        ]
    )
    ratios = performance_ratios(rows)
    assert ratios["A"] == {("p1", 0): math.inf, ("p2", 0): 1.0}
    assert ratios["B"] == {("p1", 0): 1.0, ("p2", 0): 1.0}
    a, b = solver_summary(rows)
    assert (a["solved"], a["wrong"], b["solved"], b["wrong"]) == (1, 1, 2, 0)
    assert a["sgm_time_s"] == pytest.approx(math.sqrt((10 + 1) * (2 + 1)) - 1)  # the wrong run at the limit


# --------------------------------------------------------------------------------------------
# The worker's re-check and its fault hook


def test_plan_check_of_a_valid_and_a_tampered_plan() -> None:
    instance = parse_instance(tiny_instance_doc(), "tiny")
    good = greedy_plan(instance)
    check = plan_check(instance, good, "progress")
    assert check["valid"] and check["recheck"] == "" and check["objective"] == pytest.approx(2.16)
    assert check["claimed_objective"] is None and check["progress_target"] is None
    assert plan_check(instance, good, "energy")["objective"] is None  # greedy made no energy plan
    bad = replace(good, round=replace(good.round, progress=3.0))
    check = plan_check(instance, bad, "progress")
    assert not check["valid"] and "round-claim-mismatch" in check["recheck"]
    assert check["objective"] == pytest.approx(2.16)  # recomputed, not the claim


@pytest.mark.parametrize("objective", ["energy", "efficiency"])
def test_plan_check_recomputes_the_solvers_value(objective: str) -> None:
    pytest.importorskip("highspy")
    doc = tiny_instance_doc()
    doc["round"]["objective"] = objective
    instance = parse_instance(doc, "tiny")
    result = plan(instance, PlanRequest(solver="highs", time_limit_s=10.0))
    check = plan_check(instance, result, objective)
    assert check["valid"] and check["claimed_objective"] is not None
    assert check["objective"] == pytest.approx(check["claimed_objective"], rel=1e-9)
    assert check["progress_target"] is not None and check["progress"] >= check["progress_target"]


def test_the_wrong_bound_fault() -> None:
    assert injected_fault("wrong_bound:highs", "highs") == "wrong_bound"
    assert injected_fault("wrong_bound:highs", "cbc") is None
    assert falsify_bound({"objective": 2.0, "bound": 2.0}, maximize=True)["bound"] == pytest.approx(1.8)
    assert falsify_bound({"objective": 10.0, "bound": 9.0}, maximize=False)["bound"] == pytest.approx(11.0)
    assert falsify_bound({"objective": 0.0}, maximize=True)["bound"] == -1.0
    assert falsify_bound({"objective": None, "bound": 1.0}, maximize=True)["bound"] == 1.0
