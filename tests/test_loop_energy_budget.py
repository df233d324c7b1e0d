"""An energy budget over a period on the live loop: ``--energy-budget-kwh E --budget-period-s P``.

The pacing rule by hand; the windows split between periods; a replay on the simulated Slurm whose every period
draws at most ``E`` and whose jobs all finish as periods renew it; one whose budget is below the cluster's idle draw
stops ``budget-exhausted``; the state keeps what a period spent across a restarted agent; the options refused with
the option named.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from wattplan.planner.agent.energy_budget import BudgetPeriods, energy_by_period
from wattplan.planner.agent.loop import Agent, Observed
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.agent.report import agent_report, report_rows
from wattplan.planner.cli import app
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import STALL_ROUNDS, SimulatedCluster, budget_summary, replay_on_slurm
from wattplan.planner.sim.budget import period_share_j
from wattplan.planner.sim.replay import ReplaySpec, prepare

KWH = 3.6e6
JOBS = [("ResNet-18 (batch size 32)", 2, 6000, 0.0), ("Transformer (batch size 128)", 2, 3000, 10.0)] + [
    ("ResNet-50 (batch size 128)", 2, 3000, 20.0)
]
ROUND_S, PERIOD_S = 120.0, 1200.0
SETUP = SimulatedCluster(load_s=30.0, requeue_delay_s=0.0)
"""No requeue delay: a restart then costs what a first start costs (launch and load), the ``tau`` every start is
priced at, so the round model prices every job's computing time exactly and the bound below holds with no slack."""


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.trace"
    path.write_text("".join(f"{k}\tcmd\t-n\t1\t{s}\t{a}\t{g}\n" for k, g, s, a in JOBS))
    return path


def _spec(tmp_path: Path) -> tuple[ReplaySpec, float]:
    """Three two-GPU jobs on one V100 node (``T`` = 120 s, ``tau`` = the start cost) and its idle draw ``I`` (W)."""
    rules = RoundRules(duration_s=ROUND_S, restart_s=SETUP.restart_cost_s)
    spec = ReplaySpec(trace=_trace(tmp_path), cluster="v100:8", policies=("wattplan",), rules=rules)
    _, ctx = prepare(spec)
    return spec, sum(g.nodes * g.powered_node_w for g in ctx.gpu_types)


def test_the_share_by_hand() -> None:
    """``S = max(E_left T / max(T, t_end - t), min(E_left - I max(0, t_end - t - T), B_min))``, 0 once spent."""
    assert period_share_j(9000.0, 0.0, 900.0, 100.0, 500.0) == pytest.approx(1000.0)  # even: 9000 x 100 / 900
    assert period_share_j(9000.0, 0.0, 900.0, 100.0, 3000.0) == pytest.approx(3000.0)  # one node's round
    # 5 W drawn anyway for the 800 s after this round leave 9000 - 4000 = 5000 J to the floor
    assert period_share_j(9000.0, 0.0, 900.0, 100.0, 8000.0, committed_w=5.0) == pytest.approx(5000.0)
    assert period_share_j(9000.0, 0.0, 900.0, 100.0, 3000.0, committed_w=5.0) == pytest.approx(3000.0)
    assert period_share_j(2000.0, 0.0, 900.0, 100.0, 3000.0, committed_w=5.0) == pytest.approx(2000.0 / 9)  # even
    assert period_share_j(9000.0, 850.0, 900.0, 100.0, 500.0) == pytest.approx(9000.0)  # the last round: all left
    assert period_share_j(0.0, 0.0, 900.0, 100.0, 500.0) == 0.0
    assert period_share_j(-10.0, 850.0, 900.0, 100.0, 500.0) == 0.0


def test_a_window_over_a_period_start_is_split_by_time() -> None:
    periods = BudgetPeriods(energy_j=1.0, period_s=60.0, origin_s=100.0)
    assert periods.index(159.9) == 0 and periods.index(160.0) == 1 and periods.index(99.0) == -1
    # periods [100, 160), [160, 220), [220, 280): 60 s and 40 s of the first window; 30 s and 30 s of the last
    drawn = energy_by_period([(100.0, 200.0, 1000.0), (200.0, 200.0, 7.0), (190.0, 250.0, 60.0)], periods)
    assert drawn == pytest.approx({0: 600.0, 1: 400.0 + 7.0 + 30.0, 2: 30.0})


def _periods(summary: dict[str, object]) -> list[float]:
    block = summary["energy_budget"]
    assert isinstance(block, dict)
    return [p["energy_kwh"] * KWH for p in block["periods"]]


def test_every_period_draws_at_most_the_budget_and_every_job_finishes(tmp_path: Path) -> None:
    """``E`` between the idle draw of a period and what the unbudgeted replay draws in its first one.

    The bound: with every node on, a round spends at most the idle draw over the next ``dt <= T`` seconds plus what
    its share leaves the jobs; a share keeps ``E_left >= I (t_end - t)`` from round to round, so a period whose
    budget is at least its idle draw ``I P`` draws at most ``E`` (:func:`planner.sim.budget.period_share_j`). Each
    period spends its jobs' part early and then waits: rounds that run nothing while jobs wait, more than the
    stall rule's three in a row, do not stop the replay, since the next period renews the budget.
    """
    spec, idle_w = _spec(tmp_path)
    free = replay_on_slurm(spec, "wattplan", SETUP)
    budget_j = idle_w * PERIOD_S + 0.02 * KWH
    periods = BudgetPeriods(budget_j, PERIOD_S, 0.0)
    assert max(_periods({"energy_budget": budget_summary(free.power_steps, periods, applied=False)})) > budget_j
    lines: list[str] = []
    paced = replay_on_slurm(
        replace(spec, energy_budget_kwh=budget_j / KWH),
        "wattplan",
        replace(SETUP, budget_period_s=PERIOD_S),
        log=lines.append,
    )
    s = paced.summary
    assert s["stop_reason"] == "completed" and s["completed"] == len(JOBS)
    drawn = _periods(s)
    assert len(drawn) >= 3 and max(drawn) <= budget_j * (1 + 1e-9)
    assert sum(drawn) == pytest.approx(s["energy_kwh"] * KWH, rel=1e-9)
    assert s["energy_budget"]["applied"] and s["energy_budget"]["budget_period_s"] == PERIOD_S
    assert s["makespan_s"] > free.summary["makespan_s"]
    idle_rounds = longest = 0
    for line in lines:
        if line.startswith("round ") and "plan runs 0 " in line and " 0 queued" not in line:
            idle_rounds += 1
            longest = max(longest, idle_rounds)
        elif line.startswith("round "):
            idle_rounds = 0
    assert longest > STALL_ROUNDS


def test_a_budget_below_the_idle_draw_runs_nothing_and_stops_budget_exhausted(tmp_path: Path) -> None:
    """Every node on draws ``I P`` a period whatever runs: a smaller budget leaves the jobs nothing.

    The replay stops once the rounds that ran nothing span a whole period (the second period's first round), with
    the first period's energy exactly the idle draw ``I P``.
    """
    spec, idle_w = _spec(tmp_path)
    budget_kwh = 0.99 * idle_w * PERIOD_S / KWH
    result = replay_on_slurm(
        replace(spec, energy_budget_kwh=budget_kwh), "wattplan", replace(SETUP, budget_period_s=PERIOD_S)
    )
    s = result.summary
    assert s["stop_reason"] == "budget-exhausted" and s["completed"] == 0
    assert _periods(s) == pytest.approx([idle_w * PERIOD_S], rel=1e-9)


class _Clock:
    """The agent's timer and its Prometheus: the time is set by the test; the cluster draws ``watts`` throughout."""

    def __init__(self, watts: float) -> None:
        self.now = 0.0
        self.watts = watts
        self.down = False
        self.longest_s = math.inf
        """Longer windows are refused (as a Prometheus that no longer holds them, or not within the round's time)."""
        self.windows: list[tuple[float, float]] = []

    def unix(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)

    def wait_for_round(
        self, deadline: float, earliest: float | None, poll_s: float, changed: Callable[[], bool], stopped: object
    ) -> bool:
        raise AssertionError("the test plays rounds one by one")

    def window(self, t0_unix: float, t1_unix: float) -> Observed:
        if self.down:
            raise RuntimeError("Prometheus is down")
        if t1_unix - t0_unix > self.longest_s:
            raise RuntimeError("no data that old")
        self.windows.append((t0_unix, t1_unix))
        return Observed({}, {}, self.watts * (t1_unix - t0_unix))


def _agent(tmp_path: Path, clock: _Clock) -> Agent:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), energy_budget_kwh=1.0, budget_period_s=3600.0)
    agent.observer, agent.timer = clock, clock
    return agent


def test_a_restarted_agent_keeps_the_period_and_what_it_spent(tmp_path: Path) -> None:
    """The windows charged tile the time from the first round: none lost, none counted twice, across a restart.

    The cluster draws 500 W. The first agent plays rounds at 1000 s (the origin) and 1060 s (30 kJ), then dies; the
    second, on the same state, charges 1060-1200 s at its first round (70 kJ), nothing at a round Prometheus does
    not answer (1300 s), and 1200-1400 s at the next (100 kJ). A stretch Prometheus can no longer tell (1500-1600 s,
    missed at 1600 s and refused at 1700 s) is said and left uncharged; the round's own window is charged.
    """
    clock = _Clock(500.0)
    first = _agent(tmp_path, clock)
    for clock.now in (1000.0, 1060.0):
        report = first.round()
    assert report.budget is not None and report.budget.spent_j == pytest.approx(30_000.0)
    first.store.close()  # kill -9: what was committed stays
    second = _agent(tmp_path, clock)
    clock.now = 1200.0
    report = second.round()
    assert report.budget is not None
    assert (report.budget.period, report.budget.period_end_s) == (0, 4600.0)
    assert report.budget.spent_j == pytest.approx(100_000.0)
    assert report.budget.left_j == pytest.approx(KWH - 100_000.0)
    clock.now, clock.down = 1300.0, True
    report = second.round()
    assert report.budget is not None and report.budget.spent_j == pytest.approx(100_000.0)
    clock.now, clock.down = 1400.0, False
    report = second.round()
    assert report.budget is not None and report.budget.spent_j == pytest.approx(200_000.0)
    assert clock.windows == [(1000.0, 1060.0), (1060.0, 1200.0), (1300.0, 1400.0), (1200.0, 1400.0)]
    assert "budget: round share" in report.line()
    clock.now = 1500.0
    second.round()
    clock.now, clock.down = 1600.0, True
    second.round()
    clock.now, clock.down, clock.longest_s = 1700.0, False, 100.0
    report = second.round()
    assert report.budget is not None and report.budget.spent_j == pytest.approx(300_000.0)
    assert any("over 1500-1600 s not read (no data that old): not charged" in n for n in report.notes), report.notes
    assert clock.windows[-2:] == [(1400.0, 1500.0), (1600.0, 1700.0)]
    said = agent_report(tmp_path / "agent.db")
    assert (said.budget_kwh, said.budget_period_s) == (1.0, 3600.0)
    assert said.period_kwh == pytest.approx([300_000.0 / KWH])
    assert ("energy budget 1.000 kWh per 3,600 s", "1 period(s) drawn: most 0.083 kWh, the last 0.083 kWh") in (
        report_rows(said)
    )


def test_the_options_name_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"energy_budget_kwh \(--energy-budget-kwh\): needs .*--budget-period-s"):
        AgentOptions.checked({"energy_budget_kwh": 5.0})
    with pytest.raises(InputError, match=r"budget_period_s \(--budget-period-s\): needs .*--energy-budget-kwh"):
        AgentOptions.checked({"budget_period_s": 3600.0})
    trace = _trace(tmp_path)
    for flags, named in [
        (["--energy-budget-kwh", "5"], "needs budget_period_s (--budget-period-s)"),
        (["--budget-period-s", "600"], "needs energy_budget_kwh (--energy-budget-kwh)"),
    ]:
        out = tmp_path / "out"
        args = ["simulate", str(trace), "--cluster", "v100:8", *flags, "-o", str(out)]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 2 and named in result.output, result.output
        assert not out.exists()
