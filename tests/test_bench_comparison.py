"""Solvers side by side, by hand: virtual best, wins, the seeds' interval, tau's range, greedy on its own, effort."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.helpers.bench import run_row
from wattplan.formulations.backends.pulp_backend import cbc_log_stats
from wattplan.planner.bench.comparison import (
    bench_summary,
    effort_summary,
    heuristic_summary,
    mean_interval,
    outcome,
    per_instance_frame,
    profile_tau_max,
    seed_interval,
    t_quantile_975,
    virtual_best,
    wins,
)
from wattplan.planner.bench.report import per_instance_csv, per_instance_markdown, profile_markdown, profile_plot
from wattplan.planner.bench.summary import performance_ratios, solver_summary, with_references
from wattplan.planner.bench.worker import search_effort


def _row(solver: str, instance: str, status: str, objective: float | None, **kw: Any) -> dict[str, Any]:
    """A run row of :func:`tests.helpers.bench.run_row` on instance ``instance``."""
    return run_row(solver, status, objective, instance=f"{instance}.json", instance_sha256=instance, **kw)


def _three_solvers() -> list[dict[str, Any]]:
    """p1: A 2 s, B 1 s (B wins), greedy 0.1 s at 0.8 of 1; p2: A 4 s, B times out; p3: nobody solves it.

    On p3, B's bound 2.0 is beaten by A's valid plan worth 3.0: B is wrong there.
    """
    return with_references(
        [
            _row("A", "p1", "optimal", 1.0, bound=1.0, time_s=2.0),
            _row("B", "p1", "optimal", 1.0, bound=1.0, time_s=1.0),
            _row("greedy", "p1", "feasible", 0.8, time_s=0.1),
            _row("A", "p2", "optimal", 5.0, bound=5.0, time_s=4.0),
            _row("B", "p2", "timeout", 5.0, time_s=13.0, plan_status="optimal"),
            _row("greedy", "p2", "feasible", 4.0, time_s=0.2),
            _row("A", "p3", "feasible", 3.0, bound=6.0, time_s=10.0),
            _row("B", "p3", "feasible", 1.0, bound=2.0, time_s=10.0),
            _row("greedy", "p3", "feasible", 2.0, time_s=0.4),
        ]
    )


def test_outcomes_mark_solved_timeouts_wrong_and_unsolved() -> None:
    rows = _three_solvers()
    assert [outcome(r) for r in rows] == [
        "solved",
        "solved",
        "unsolved",
        "solved",
        "timeout",
        "unsolved",
        "unsolved",
        "wrong",  # its bound 2.0 is below A's valid 3.0
        "unsolved",
    ]


def test_virtual_best_takes_the_fastest_correct_solver_and_leaves_greedy_out() -> None:
    vb = virtual_best(_three_solvers())
    assert vb == {("p1", 0): (1.0, "B"), ("p2", 0): (4.0, "A"), ("p3", 0): (10.0, "")}  # greedy's 0.1 s: no
    assert wins(_three_solvers()) == {"A": 1, "B": 1}


def test_ties_are_a_win_for_each() -> None:
    rows = with_references([_row("A", "p1", "optimal", 1.0, time_s=2.0), _row("B", "p1", "optimal", 1.0, time_s=2.0)])
    assert wins(rows) == {"A": 1, "B": 1}


def test_the_summary_has_wins_a_virtual_best_row_and_greedy_as_a_heuristic() -> None:
    summary = {s["solver"]: s for s in bench_summary(_three_solvers())}
    a, b, greedy, vb = summary["A"], summary["B"], summary["greedy"], summary["virtual best"]
    assert (a["kind"], a["wins"], a["solved"]) == ("solver", 1, 2)
    assert (b["wins"], b["solved"], b["wrong"], b["timeout"]) == (1, 1, 1, 1)
    assert a["sgm_time_s"] == pytest.approx(((2 + 1) * (4 + 1) * (10 + 1)) ** (1 / 3) - 1)
    assert greedy["kind"] == "heuristic" and greedy["sgm_time_s"] is None and greedy["wins"] is None
    assert greedy["sgm_ci_low"] is None
    assert vb["kind"] == "virtual" and vb["runs"] == 3 and vb["solved"] == 2
    assert vb["sgm_time_s"] == pytest.approx(((1 + 1) * (4 + 1) * (10 + 1)) ** (1 / 3) - 1)
    assert list(summary) == ["A", "B", "greedy", "virtual best"]
    assert solver_summary(_three_solvers())[2]["sgm_time_s"] is None  # not charged the limit as a solver


def test_heuristics_get_quality_to_the_best_known_and_their_own_time() -> None:
    (greedy,) = heuristic_summary(_three_solvers())
    # v* per instance: 1.0 (p1), 5.0 (p2), 3.0 (p3, A's valid plan); greedy 0.8, 4.0, 2.0
    gaps = [0.2 / 1.0, 1.0 / 5.0, 1.0 / 3.0]
    assert greedy["heuristic"] == "greedy" and greedy["runs"] == 3 and greedy["valid_plans"] == 3
    assert greedy["mean_gap_best"] == pytest.approx(sum(gaps) / 3)
    assert greedy["max_gap_best"] == pytest.approx(1 / 3)
    assert greedy["sgm_time_s"] == pytest.approx((1.1 * 1.2 * 1.4) ** (1 / 3) - 1)
    assert greedy["max_time_s"] == 0.4 and greedy["within_gap"] == 0


def test_the_profile_spans_every_ratio_and_counts_unsolved_problems() -> None:
    """A solves p1..p3 in 1, 1, 1 s; B in 1 s, 7 s, and fails p3. tau must reach 7, not stop at 2."""
    rows = with_references(
        [
            _row("A", "p1", "optimal", 1.0, time_s=1.0),
            _row("A", "p2", "optimal", 1.0, time_s=1.0),
            _row("A", "p3", "optimal", 1.0, time_s=1.0),
            _row("B", "p1", "optimal", 1.0, time_s=1.0),
            _row("B", "p2", "optimal", 1.0, time_s=7.0),
            _row("B", "p3", "crash", None),
            _row("greedy", "p3", "feasible", 1.0, time_s=0.001),  # within the gap, yet not in the profile
        ]
    )
    ratios = performance_ratios(rows)
    assert set(ratios) == {"A", "B"}
    assert profile_tau_max(ratios) == pytest.approx(7.0)
    assert profile_tau_max({"A": {("p", 0): math.inf}}) == 1.0
    table = profile_markdown(rows)
    assert "tau=7" in table and "tau=8" in table
    b_line = next(line for line in table.splitlines() if line.startswith("| B |"))
    assert b_line == "| B | 0.33 | 0.33 | 0.33 | 0.67 | 0.67 |"  # taus 1, 2, 4, 7, 8; p3 unsolved: never 1


def test_the_profile_plot_is_written(tmp_path: Path) -> None:
    profile_plot(_three_solvers(), tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_t_quantile_and_the_interval_on_a_known_sample() -> None:
    assert t_quantile_975(1) == 12.706 and t_quantile_975(2) == 4.303
    assert t_quantile_975(60) == pytest.approx(2.000298, abs=2e-4)  # tables: 2.000
    assert t_quantile_975(1000) == pytest.approx(1.962339, abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile_975(0)
    mean, low, high = mean_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(2) = 4.303
    assert mean == 2.0 and high - mean == pytest.approx(4.303 / math.sqrt(3)) and mean - low == high - mean
    assert mean_interval([5.0]) is None


def test_the_seeds_interval_is_over_each_seeds_sgm() -> None:
    """Seed 0: A solves p1 in 1 s, p2 in 3 s; seed 1: 3 s and 3 s; seed 2: p1 in 1 s, crash on p2 (10 s)."""
    times = {0: (1.0, 3.0), 1: (3.0, 3.0), 2: (1.0, None)}
    rows = []
    for seed, (t1, t2) in times.items():
        rows.append(_row("A", "p1", "optimal", 1.0, seed=seed, time_s=t1))
        rows.append(
            _row("A", "p2", "crash", None, seed=seed)
            if t2 is None
            else _row("A", "p2", "optimal", 1.0, seed=seed, time_s=t2)
        )
    per_seed = [math.sqrt(2 * 4) - 1, 3.0, math.sqrt(2 * 11) - 1]
    expected = mean_interval(per_seed)
    got = seed_interval(with_references(rows))["A"]
    assert got is not None and expected is not None
    assert got == pytest.approx(expected)
    summary = bench_summary(with_references(rows))[0]
    assert (summary["sgm_ci_low"], summary["sgm_ci_high"]) == pytest.approx(expected[1:])


def test_per_instance_table_marks_best_timeouts_and_wrong() -> None:
    rows = _three_solvers()
    for r, nodes in zip(rows, [10, 3, None, 5, None, None, 100, 0, None], strict=True):
        r["nodes"] = nodes
    table = per_instance_frame(rows)
    assert list(table["instance"]) == ["p1.json", "p2.json", "p3.json"]
    assert list(table["A:best"]) == [False, True, False] and list(table["B:best"]) == [True, False, False]
    assert list(table["B:status"]) == ["solved", "timeout", "wrong"]
    assert list(table["greedy:time_s"]) == [0.1, 0.2, 0.4]  # its own time, not the limit
    assert not table["greedy:best"].any()
    assert list(table["virtual best:solver"]) == ["B", "A", ""]
    assert list(table["virtual best:time_s"]) == [1.0, 4.0, 10.0]
    assert table.loc[2, "A:objective"] == 3.0 and table.loc[0, "A:nodes"] == 10.0
    assert math.isnan(table.loc[1, "B:nodes"])
    md = per_instance_markdown(table)
    assert "| p1.json | 2 | **1** | 0.1 (gap 20%) | 1 B |" in md
    assert "| p2.json | **4** | 10 timeout |" in md
    assert "10 WRONG" in md and "10 none solved" in md
    csv_lines = per_instance_csv(table).splitlines()
    assert csv_lines[0].startswith("instance,A:time_s,A:status,A:objective,A:gap,A:nodes,A:best,B:time_s")
    p2 = csv_lines[2].split(",")
    assert p2[5] == "5.0" and p2[11] == ""  # p2's nodes: A's 5, B's unknown (blank)
    assert len(csv_lines) == 4


def test_per_instance_status_over_seeds() -> None:
    rows = with_references(
        [
            _row("A", "p1", "optimal", 1.0, seed=0, time_s=1.0),
            _row("A", "p1", "crash", None, seed=1),
            _row("A", "p1", "hang", None, seed=2),
        ]
    )
    table = per_instance_frame(rows)
    assert table.loc[0, "A:status"] == "solved 1/3"
    assert table.loc[0, "A:time_s"] == pytest.approx((2 * 11 * 11) ** (1 / 3) - 1)
    assert not table.loc[0, "A:best"]  # not every seed solved


def test_search_effort_sums_stages_and_leaves_unknown_blank() -> None:
    stages = [SimpleNamespace(stats={}), SimpleNamespace(stats={"nodes": 3.0, "lp_iterations": 40.0})]
    stages.append(SimpleNamespace(stats={"nodes": 2.0, "lp_iterations": 2.5}))
    assert search_effort(stages) == {"nodes": 5, "lp_iterations": 42.5, "branches": None, "conflicts": None}
    assert search_effort([]) == dict.fromkeys(("nodes", "lp_iterations", "branches", "conflicts"))
    rows = [
        {"solver": "A", "nodes": 0, "lp_iterations": 100},
        {"solver": "A", "nodes": 300, "lp_iterations": None},
        {"solver": "greedy"},
    ]
    (a,) = effort_summary(rows)  # greedy reports no effort: no row
    assert a["runs"] == 2 and a["sgm_nodes"] == pytest.approx(math.sqrt(100 * 400) - 100)
    assert a["sgm_lp_iterations"] == 100 and a["sgm_branches"] is None


def test_cbc_log_stats_reads_its_closing_lines() -> None:
    log = "Cbc0010I After 0 nodes\n\nResult - Optimal solution found\n\nObjective value:   13.5\n"
    log += "Enumerated nodes:               48\nTotal iterations:               146\nTime (CPU seconds): 0.00\n"
    assert cbc_log_stats(log) == {"nodes": 48.0, "lp_iterations": 146.0}
    assert cbc_log_stats("Result - Stopped on time\n") == {}
