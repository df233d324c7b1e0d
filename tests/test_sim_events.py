"""Replays at the speed of events: a decision reused only for an identical round, the forecast, the ETA line."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import A, B, hand_context, hand_job, workload, write_gavel_trace
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.sim.budget import PowerCap
from wattplan.planner.sim.decision_memo import decision_key, event_key
from wattplan.planner.sim.engine import ReplayState, SimConfig, simulate, start_state
from wattplan.planner.sim.forecast import BASELINE_ROUND_S, WATTPLAN_ROUND_S, forecast, long_replay_warning
from wattplan.planner.sim.journal import CHECKPOINT_FILE
from wattplan.planner.sim.policies.base import Decision
from wattplan.planner.sim.policies.fifo_max import FifoMax
from wattplan.planner.sim.render import progress_log
from wattplan.planner.sim.round_instance import ReplayRound, round_instance
from wattplan.planner.sim.state import JobSpec, JobState

R50 = "ResNet-50 (batch size 64)"


@dataclass
class Counting:
    """``fifo-max`` that counts the rounds it is asked to decide."""

    name: str = "fifo-max"
    calls: int = 0
    inner: FifoMax = field(default_factory=FifoMax)
    pure: bool = True

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        self.calls += 1
        return self.inner.decide(instance, context)


def test_identical_rounds_reuse_the_decision_and_a_change_re_decides() -> None:
    """A cap of 50 W runs nothing (one node draws 160 W idle), so rounds repeat until something arrives.

    Rounds 0-2 hold job a alone, unchanged (one decision); b arrives at 250 s, so round 3 (300 s) is new;
    rounds 3-5 are again the same and stall.
    """
    ctx = hand_context(duration_s=100.0)
    wl = workload([hand_job("a", A, 0.0, 1000.0), hand_job("b", B, 250.0, 1000.0)])
    policy = Counting()
    seen: list[ReplayState] = []
    result = simulate(wl, ctx, policy, PowerCap(50.0), progress=seen.append)
    assert [r.index for r in result.rounds] == [0, 1, 2, 3, 4, 5]
    assert result.stop_reason == "stalled"
    assert policy.calls == 2
    assert seen[-1].memo.hits == 4


def test_a_policy_not_declared_pure_is_asked_every_round() -> None:
    """A plug-in may carry state between rounds: without ``pure`` the stalled rounds are decided again."""
    ctx = hand_context(duration_s=100.0)
    wl = workload([hand_job("a", A, 0.0, 1000.0), hand_job("b", B, 250.0, 1000.0)])
    policy = Counting(pure=False)
    seen: list[ReplayState] = []
    simulate(wl, ctx, policy, PowerCap(50.0), progress=seen.append)
    assert policy.calls == 6 and seen[-1].memo.hits == 0


def test_a_running_job_makes_every_round_new() -> None:
    """Its remaining steps change, and the progress objective weighs ``sigma / R``: no reuse."""
    ctx = hand_context(duration_s=100.0)
    policy = Counting()
    result = simulate(workload([hand_job("a", A, 0.0, 2000.0)]), ctx, policy)
    assert len(result.rounds) == 5 and policy.calls == 5  # 2000 steps at 5 steps/s (restart 10 s): 5 rounds


def test_decision_key_ignores_the_round_index_and_start_only() -> None:
    ctx = hand_context()
    states = [JobState.new(hand_job("a", A, 0.0, 1000.0))]
    first = round_instance(ctx, 0, 0.0, states, None)
    assert decision_key(round_instance(ctx, 7, 700.0, states, None)) == decision_key(first)
    assert decision_key(round_instance(ctx, 0, 0.0, states, 5000.0)) != decision_key(first)  # a budget
    states[0].remaining_steps = 999.0
    assert decision_key(round_instance(ctx, 0, 0.0, states, None)) != decision_key(first)


def _job(job_id: str, arrival_s: float, seconds: float, gpus: int) -> JobSpec:
    return JobSpec(job_id, A, arrival_s, seconds, gpus, (gpus,), 1.0)  # 1 step/s: duration = steps


def test_forecast_by_hand() -> None:
    """W = 2 x 1000 + 4 x 2000 = 10,000 GPU-s on 4 GPUs: 2,500 s > the longest path 100 + 2,000 s.

    Rounds of 360 s: floor(2500 / 360) + 1 = 7; two policies cost 0.1 + 0.005 s a round.
    """
    f = forecast([_job("a", 0.0, 1000.0, 2), _job("b", 100.0, 2000.0, 4)], 4, 360.0, ("wattplan", "fifo-max"))
    assert (f.jobs, f.mean_job_s, f.median_first_jobs_s, f.span_s, f.rounds) == (2, 1500.0, 1500.0, 2500.0, 7)
    assert abs(f.wall_s - 7 * (WATTPLAN_ROUND_S + BASELINE_ROUND_S)) < 1e-12
    assert not f.long and long_replay_warning(f) is None


def test_jobs_of_days_are_warned_about_with_the_numbers() -> None:
    days = [_job(f"j{k}", 60.0 * k, 2 * 86_400.0, 1) for k in range(4)]
    f = forecast(days, 48, 360.0, ("fifo-max",))
    assert f.long
    text = long_replay_warning(f)
    assert text is not None and "4 selected jobs run 2.0 days each" in text and "--max-jobs" in text


def test_quiet_progress_line_has_rounds_jobs_work_and_eta() -> None:
    """The first round seen starts the clock at its work share (a resumed replay starts above 0)."""
    lines: list[str] = []
    log = progress_log(lines.append, "zeus", every_s=0.0)
    wl = workload([hand_job("a", A, 0.0, 1000.0), hand_job("b", A, 0.0, 3000.0)])
    state = start_state(wl, SimConfig())
    state.states[0].remaining_steps = 500.0  # half of a's 200 s; b untouched: 100 / (200 + 600) of the work
    log(state)
    assert lines == []
    state.states[1].remaining_steps = 1500.0  # and half of b's 600 s: 400 / 800
    log(state)
    assert len(lines) == 1
    assert lines[0].startswith("zeus: 0 rounds, 0/2 jobs, 50.0% of the work,") and "ETA" in lines[0]
    assert "ETA unknown" not in lines[0]


def test_simulate_resumes_a_finished_replay_and_fresh_starts_over(tmp_path: Path) -> None:
    trace = write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 1), (R50, 6000, 100, 2)])
    out = tmp_path / "out"
    args = ["simulate", str(trace), "--engine", "rounds", "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots"]
    args += ["-o", str(out)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert (out / "fifo-max" / CHECKPOINT_FILE).is_file()
    rounds = (out / "fifo-max" / "rounds.csv").read_text()
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "resumed from the checkpoint after round" in again.output
    assert (
        out / "fifo-max" / "rounds.csv"
    ).read_text() == rounds  # nothing replayed: even the solver seconds are the same
    fresh = CliRunner().invoke(app, [*args, "--fresh"])
    assert fresh.exit_code == 0 and "resumed" not in fresh.output


def test_out_that_is_a_file_is_named_before_any_round(tmp_path: Path) -> None:
    trace = write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 1)])
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    args = ["simulate", str(trace), "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots", "-o", str(taken)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "unwritable-output" in " ".join(result.output.split()) and "Traceback" not in result.output


def test_replan_on_events_asks_again_only_when_a_job_arrives_finishes_or_restarted() -> None:
    """Job a alone runs 5 rounds (2000 steps at 5 steps/s, restart 10 s).

    Round 0 starts it (asked), round 1 is the first with a running, unrestarted a (asked once more: a restart
    changed the round), rounds 2-4 only change its remaining steps (reused). The result is ``rounds``' own.
    """
    ctx = hand_context(duration_s=100.0)
    wl = workload([hand_job("a", A, 0.0, 2000.0)])
    every = Counting()
    exact = simulate(wl, ctx, every)
    on_events = Counting()
    seen: list[ReplayState] = []
    fast = simulate(wl, ctx, on_events, config=SimConfig(replan="events"), progress=seen.append)
    assert every.calls == 5 and on_events.calls == 2 and seen[-1].memo.hits == 3
    untimed = [[replace(r, decide_s=0.0) for r in res.rounds] for res in (fast, exact)]
    assert untimed[0] == untimed[1] and fast.jobs == exact.jobs  # fifo-max reads no remaining steps


def test_event_key_ignores_remaining_steps_but_not_arrivals_configurations_or_budgets() -> None:
    ctx = hand_context()
    states = [JobState.new(hand_job("a", A, 0.0, 1000.0))]
    first = round_instance(ctx, 0, 0.0, states, None)
    states[0].remaining_steps = 999.0
    assert event_key(round_instance(ctx, 3, 300.0, states, None)) == event_key(first)
    assert event_key(round_instance(ctx, 0, 0.0, states, 5000.0)) != event_key(first)  # a budget
    two = [*states, JobState.new(hand_job("b", B, 0.0, 1000.0))]
    assert event_key(round_instance(ctx, 0, 0.0, two, None)) != event_key(first)  # an arrival


def test_wattplan_on_events_under_a_cap_keeps_every_plan_valid() -> None:
    """The engine validates every plan against its round: a reused plan must still fit the round's budget.

    A restart lowers a round's energy; reusing the restarting round's plan in the next round (no restart) would
    draw more. The configurations in the event key make that round re-decided, so no plan is refused.
    """
    from wattplan.planner.sim.policies import make_policy

    ctx = hand_context(duration_s=100.0, nodes=2)
    wl = workload([hand_job("a", A, 0.0, 3000.0), hand_job("b", B, 150.0, 2000.0), hand_job("c", A, 420.0, 900.0)])
    for cap in (250.0, 400.0, 700.0):
        result = simulate(wl, ctx, make_policy("wattplan"), PowerCap(cap), config=SimConfig(replan="events"))
        assert result.rounds and all(r.energy_j <= cap * 100.0 * (1 + 1e-9) for r in result.rounds), cap
