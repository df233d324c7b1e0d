"""``simulate``: the agent's own loop replayed on a simulated Slurm, end to end.

Hand-computed times for one job and for a requeue, the agent's loop and Slurm alone agreeing where they must,
the option rules of the command, and the command line's files.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wattplan.planner.cli import app
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import PASS_DELAY_REAL_S, SimulatedCluster, replay_on_slurm
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.replay import ReplaySpec

TRACE_LINE = "{kind}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}\n"


def _trace(tmp_path: Path, jobs: list[tuple[str, int, int, float]]) -> Path:
    path = tmp_path / "jobs.trace"
    path.write_text("".join(TRACE_LINE.format(kind=k, gpus=g, steps=s, arrival=a) for k, g, s, a in jobs))
    return path


def _rate(job_type: str, gpus: int) -> float:
    """Steps per second of ``job_type`` on ``gpus`` V100s at the top setting, in the shipped library."""
    lib = load_profile_library(None)
    profiles = [p for p in lib.profiles if p.type == job_type and p.gpu_type == "v100" and p.gpus == gpus]
    return max(profiles, key=lambda p: p.setting).steps_per_s


def test_one_job_runs_from_its_arrival_plus_its_load_at_full_speed(tmp_path: Path) -> None:
    """Slurm alone and fifo-max through the agent both start it at Slurm's next pass.

    JCT = pass + launch + load + steps / X (time scale 1: the pass ``PASS_DELAY_REAL_S`` and the launch a real
    second, in emulated s).
    """
    kind = "ResNet-18 (batch size 32)"
    trace = _trace(tmp_path, [(kind, 1, 3000, 0.0)])
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",))
    expected = PASS_DELAY_REAL_S + 1.0 + 30.0 + 3000 / _rate(kind, 1)  # a real second's launch at time scale 1
    for policy in ("slurm", "fifo-max"):
        result = replay_on_slurm(spec, policy, SimulatedCluster(load_s=30.0))
        (job,) = result.jobs
        assert job["requeues"] == 0 and job["start_s"] == pytest.approx(PASS_DELAY_REAL_S)
        assert math.isclose(job["jct_s"], expected, rel_tol=1e-9), (policy, job["jct_s"], expected)
        assert result.summary["stop_reason"] == "completed"


def test_slurm_alone_and_fifo_max_through_the_agent_agree_when_nothing_waits(tmp_path: Path) -> None:
    """On a cluster that always has room, the agent's fifo-max starts each job at its arrival round, as Slurm does.

    The agent rounds on every arrival (at least a tenth of a round after the last, polling every second), so a
    job waits at most a tenth of a round more than under Slurm alone.
    """
    kinds = ["ResNet-18 (batch size 32)", "Transformer (batch size 128)", "ResNet-50 (batch size 128)"]
    trace = _trace(tmp_path, [(k, 1, 2000, 100.0 * i) for i, k in enumerate(kinds)])
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",), rules=RoundRules(duration_s=360.0))
    alone = {j["job_id"]: j for j in replay_on_slurm(spec, "slurm").jobs}
    agent = {j["job_id"]: j for j in replay_on_slurm(spec, "fifo-max").jobs}
    for jid, j in alone.items():
        lag = agent[jid]["jct_s"] - j["jct_s"]
        assert 0.0 <= lag <= 36.0 + 1.0, (jid, lag)
        assert agent[jid]["requeues"] == 0


@pytest.mark.parametrize("slurm_starts", [False, True])
def test_an_arrival_after_a_round_is_planned_at_the_next_poll_where_no_round_restarts_a_job(
    tmp_path: Path, slurm_starts: bool
) -> None:
    """A job arriving 10 s after a round waits for the agent only where rounds may restart jobs.

    With the Slurm start rule (no round restarts a running job) the agent plans it at the first poll that sees it,
    as Slurm starts it; otherwise a tenth of a round after the last round.
    """
    kinds = ["ResNet-18 (batch size 32)", "Transformer (batch size 128)"]
    trace = _trace(tmp_path, [(kinds[0], 1, 2000, 0.0), (kinds[1], 1, 2000, 10.0)])
    rules = RoundRules(duration_s=360.0, slurm_starts=slurm_starts)
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",), rules=rules)
    alone = {j["job_id"]: j["start_s"] for j in replay_on_slurm(spec, "slurm").jobs}
    agent = {j["job_id"]: j["start_s"] for j in replay_on_slurm(spec, "fifo-max").jobs}
    assert alone == pytest.approx({"j0": PASS_DELAY_REAL_S, "j1": 10.0 + PASS_DELAY_REAL_S})
    assert agent == pytest.approx({"j0": PASS_DELAY_REAL_S, "j1": (10.0 if slurm_starts else 36.0) + PASS_DELAY_REAL_S})


def test_a_replay_is_deterministic(tmp_path: Path) -> None:
    trace = _trace(tmp_path, [("ResNet-18 (batch size 32)", 1, 4000, 0.0), ("ResNet-50 (batch size 128)", 2, 900, 50)])
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("zeus",))
    a, b = (replay_on_slurm(spec, "zeus") for _ in range(2))
    assert a.jobs == b.jobs
    assert {k: v for k, v in a.summary.items() if k not in ("wall_s", "cpu_s")} == {
        k: v for k, v in b.summary.items() if k not in ("wall_s", "cpu_s")
    }


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--energy-budget-kwh", "8"], "--energy-budget-kwh"),
        (["--no-event-rounds", "--no-periodic-rounds"], "--periodic-rounds"),
    ],
)
def test_simulate_refuses_what_it_does_not_take(tmp_path: Path, flags: list[str], named: str) -> None:
    trace = _trace(tmp_path, [("ResNet-18 (batch size 32)", 1, 1000, 0.0)])
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["simulate", str(trace), "--cluster", "v100:8", *flags, "-o", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2, result.output
    assert named in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_the_command_writes_each_policy_and_the_comparison(tmp_path: Path) -> None:
    trace = _trace(
        tmp_path,
        [("ResNet-18 (batch size 32)", 1, 3000, 0.0), ("Transformer (batch size 128)", 4, 1500, 10.0)]
        + [("ResNet-50 (batch size 128)", 2, 800, 20.0 + k) for k in range(4)],
    )
    out = tmp_path / "out"
    args = ["simulate", str(trace), "--cluster", "v100:8", "-p", "slurm", "-p", "wattplan"]
    result = CliRunner().invoke(app, [*args, "--solver", "greedy", "-o", str(out)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "Replay on a simulated Slurm" in result.output
    rows = json.loads((out / "comparison.json").read_text())
    assert [r["policy"] for r in rows] == ["slurm", "wattplan"]
    assert all(r["completed"] == 6 for r in rows)
    for policy in ("slurm", "wattplan"):
        summary = json.loads((out / policy / "summary.json").read_text())
        parts = summary["energy_node_kwh"] + summary["energy_idle_kwh"] + summary["energy_dynamic_kwh"]
        assert math.isclose(summary["energy_kwh"], parts)
        assert (out / policy / "jobs.csv").read_text().count("\n") == 7
        # The powered floor bounds each replay's energy over the common window; Slurm alone, the reference,
        # captures nothing. Every node on: over the common window two runs differ by their dynamic energy alone.
        assert 0 < summary["energy_floor_kwh"] <= summary["energy_common_kwh"] * (1 + 1e-12)  # equal sums, rounded
        assert summary["energy_common_kwh"] >= summary["energy_kwh"] * (1 - 1e-12)  # the same sum, in another order
        assert summary["common_window_s"] == max(r["makespan_s"] for r in rows)
        fixed = summary["energy_common_kwh"] - summary["energy_dynamic_kwh"]
        first = json.loads((out / "slurm" / "summary.json").read_text())
        assert fixed == pytest.approx(first["energy_common_kwh"] - first["energy_dynamic_kwh"], rel=1e-9)
        assert summary["reference_policy"] == "slurm" and summary["captured_share"] <= 1 + 1e-9
    assert json.loads((out / "slurm" / "summary.json").read_text())["captured_share"] == 0
    assert "round 0" in (out / "wattplan" / "agent.log").read_text()
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_python_runs_the_same_engine(tmp_path: Path) -> None:
    """``wattplan.simulate`` is the command's replay: one summary row and job rows per policy."""
    import wattplan

    trace = _trace(tmp_path, [("ResNet-18 (batch size 32)", 1, 3000, 0.0), ("ResNet-50 (batch size 128)", 2, 900, 5)])
    res = wattplan.simulate(trace, cluster="v100:8", policies=["slurm", "fifo-max"], out=tmp_path / "o")
    assert list(res.summary["policy"]) == ["slurm", "fifo-max"]
    assert set(res.summary["engine"]) == {"slurm"} and list(res.summary["completed"]) == [2, 2]
    assert len(res.jobs) == 4


def test_a_power_cap_holds_on_average_and_one_below_the_idle_draw_stalls(tmp_path: Path) -> None:
    """A cap holds on average; one under the powered nodes' idle draw runs nothing and the replay stalls.

    The agent's cap leaves the jobs what the powered nodes do not draw idle; a replay that ran nothing for three
    rounds stops ``stalled``, as the round-based one does.
    """
    from wattplan.planner.sim.replay import prepare

    kinds = ["ResNet-18 (batch size 32)", "Transformer (batch size 128)", "ResNet-50 (batch size 128)"]
    trace = _trace(tmp_path, [(k, 2, 3000, 10.0 * i) for i, k in enumerate(kinds)])
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("wattplan",))
    _, ctx = prepare(spec)
    idle_w = sum(g.nodes * g.powered_node_w for g in ctx.gpu_types)
    free = replay_on_slurm(spec, "wattplan")
    cap = idle_w + 250.0  # about one job's dynamic power at a low setting: the jobs take turns
    capped = replay_on_slurm(replace(spec, power_cap_w=cap), "wattplan")
    assert capped.summary["completed"] == 3 and capped.summary["stop_reason"] == "completed"
    s = capped.summary
    assert s["energy_kwh"] * 3.6e6 / s["makespan_s"] <= cap * (1 + 1e-9)
    assert s["makespan_s"] > free.summary["makespan_s"]
    stalled = replay_on_slurm(replace(spec, power_cap_w=idle_w - 1.0), "wattplan")
    assert stalled.summary["completed"] == 0 and stalled.summary["stop_reason"] == "stalled"


def _carbon(tmp_path: Path, values: list[float]) -> Path:
    """An hourly carbon file from 2022-01-01 00:00 UTC (gCO2/kWh)."""
    path = tmp_path / "carbon.csv"
    start = datetime(2022, 1, 1, tzinfo=UTC)
    rows = "".join(f"{(start + timedelta(hours=h)).isoformat()},{v}\n" for h, v in enumerate(values))
    path.write_text("timestamp,avg_CI\n" + rows)
    return path


def test_carbon_is_the_energy_priced_hour_by_hour(tmp_path: Path) -> None:
    """A flat signal prices every kWh alike; a signal doubled from the second hour prices the same draw higher.

    Two jobs of about an hour each, one after the other on a full cluster, so the window spans hours 0-2.
    """
    kind = "ResNet-18 (batch size 32)"
    steps = round(3000 * _rate(kind, 8))
    trace = _trace(tmp_path, [(kind, 8, steps, 0.0), (kind, 8, steps, 10.0)])
    flat = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",), carbon=_carbon(tmp_path, [200.0] * 24))
    for policy in ("slurm", "fifo-max"):
        s = replay_on_slurm(flat, policy).summary
        assert s["completed"] == 2 and s["makespan_s"] > 3600
        assert math.isclose(s["carbon_kg"], s["energy_kwh"] * 200.0 / 1e3, rel_tol=1e-9), policy
    stepped = replace(flat, carbon=_carbon(tmp_path, [200.0] + [400.0] * 23))
    s = replay_on_slurm(stepped, "slurm").summary
    low, high = s["energy_kwh"] * 0.2, s["energy_kwh"] * 0.4
    assert low < s["carbon_kg"] < high
    assert s["signals"]["carbon"]["offset_h"] == 0


def test_the_agent_follows_the_signal_as_the_round_based_replay_steers(tmp_path: Path) -> None:
    """The agent's rounds on the simulated Slurm get the ``delta`` and credit weight the one steering record gives.

    No JCT bound: a fixed ``delta`` under the signal (:class:`SignalSteer`); a dirty hour against the day before
    raises ``delta`` and lowers the credit weight. Each round's ``delta`` in the log equals the record's own.
    """
    from wattplan.planner.sim.governor import FixedDelta, SignalSteer, Steering
    from wattplan.planner.sim.replay import prepare, signal_clocks
    from wattplan.planner.sim.replay import steering as replay_steering

    kind = "ResNet-18 (batch size 32)"
    trace = _trace(tmp_path, [(kind, 1, round(7200 * _rate(kind, 1)), 3600.0 * 24 + 5.0)])
    values = [100.0] * 24 + [300.0] * 24
    spec = ReplaySpec(
        trace=trace,
        cluster="v100:8",
        policies=("wattplan",),
        carbon=_carbon(tmp_path, values),
        start_s=0.0,
        rules=RoundRules(duration_s=360.0, objective="efficiency", delta=0.05),
    )
    record = replay_steering(spec)
    assert record == Steering(None, "accrued", spec.delta_max, True)
    clock = signal_clocks(spec, prepare(spec)[0])["carbon"]
    out = tmp_path / "out"
    replay_on_slurm(spec, "wattplan", SimulatedCluster(), out)
    log = (out / "wattplan" / "agent.log").read_text()
    rounds = [line for line in log.splitlines() if line.startswith("round ") and " delta " in line]
    assert rounds
    for line in rounds:
        now = float(line.split("t=")[1].split("s:")[0])
        expect = SignalSteer(clock, FixedDelta(0.05), 360.0).delta_for_round([], now)
        got = float(line.split("delta ")[1].split(";")[0])
        assert got == pytest.approx(expect, abs=5e-4), line
        assert expect > 0.05  # hour 24 is three times the day before


def test_the_agent_keeps_the_tail_bound_of_the_steering_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--tail-bound`` the agent's rounds bind the urgent jobs' steps.

    Once it has seen every job, its deadlines are those the one steering record sets over fifo-max in continuous
    time (Slurm alone's finish times), and its governor steers against the same reference.
    """
    from wattplan.planner.agent.reference import slurm_reference
    from wattplan.planner.agent.steering import LiveSteering, RoundSteer
    from wattplan.planner.sim.replay import prepare
    from wattplan.planner.sim.replay import steering as replay_steering
    from wattplan.planner.sim.state import JobState
    from wattplan.planner.sim.tail_bound import TailBound

    kinds = ["ResNet-18 (batch size 32)", "Transformer (batch size 128)", "ResNet-50 (batch size 128)"]
    jobs = [(kinds[i % 3], 4, round(900 * _rate(kinds[i % 3], 4)), 60.0 * i) for i in range(8)]
    spec = ReplaySpec(
        trace=_trace(tmp_path, jobs),
        cluster="v100:8",
        policies=("wattplan",),
        tail_bound=0.0,
        max_jct_increase=0.5,
        rules=RoundRules(duration_s=360.0, objective="efficiency", delta=0.5),
    )
    bounds: list[dict[str, float]] = []
    tails: list[object] = []
    governed: list[frozenset[str]] = []
    real = LiveSteering.round

    def spy(self: LiveSteering, *args: Any) -> RoundSteer:
        out = real(self, *args)
        bounds.append(dict(out.min_steps or {}))
        tails.append(self.tail)
        governed.append(frozenset(self.governor.reference_finish_s) if self.governor is not None else frozenset())
        return out

    monkeypatch.setattr(LiveSteering, "round", spy)
    setup = SimulatedCluster(load_s=30.0)
    result = replay_on_slurm(spec, "wattplan", setup)
    assert result.summary["completed"] == 8
    assert any(b for b in bounds), "no round bound a job"
    workload, ctx = prepare(spec)
    states = [JobState.new(s) for s in workload.jobs]
    finish = slurm_reference(workload.jobs, ctx, setup.load_s)
    expected = replay_steering(spec).tail(ctx, finish, states)
    slurm_id = {s.id: str(k) for k, s in enumerate(sorted(workload.jobs, key=lambda s: s.arrival_s), start=1)}
    assert expected is not None and expected.allowed_jct_s is not None and len(slurm_id) == 8
    last = tails[-1]
    assert isinstance(last, TailBound) and last.allowed_jct_s is not None
    assert last.reference_finish_s == {slurm_id[j]: f for j, f in expected.reference_finish_s.items()}
    assert last.allowed_jct_s == {slurm_id[j]: y for j, y in expected.allowed_jct_s.items()}
    assert (last.tolerance, last.floor_jct_s, last.pace) == (expected.tolerance, expected.floor_jct_s, "steady")
    assert governed[-1] == frozenset(slurm_id.values())  # the governor's reference grew with the jobs too
    monkeypatch.undo()
    unbound = replace(spec, tail_bound=None)
    bounds.clear()
    monkeypatch.setattr(LiveSteering, "round", spy)
    replay_on_slurm(unbound, "wattplan", setup)
    assert bounds and not any(bounds)
