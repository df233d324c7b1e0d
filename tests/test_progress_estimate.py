"""Progress without instrumentation (issue 45, item 5): steps estimated from what a job ran at and the profiles."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from tests.sim_helpers import NO_SLURM_WAITS
from wattplan.planner.agent.progress_estimate import RateIndex, credited_steps, energy_steps
from wattplan.planner.agent.store import KnownJob
from wattplan.planner.contracts.domain import CurrentConfig
from wattplan.planner.profile_library.library import load_profile_library

LIB = load_profile_library(None)
P = next(p for p in LIB.profiles if p.gpus == 1)
PAIR = next(q for q in LIB.pairs if q.a != q.b)


def test_the_rate_is_the_profiles_and_a_pair_slows_each_side_by_its_own_rho() -> None:
    index = RateIndex.of(LIB)
    assert index.rate(P.type, (P.gpu_type, P.gpus, P.setting, None)) == P.steps_per_s
    assert index.rate(P.type, (P.gpu_type, P.gpus, -1, None)) is None  # no such setting
    alone = {(p.type, p.gpu_type, p.gpus, p.setting): p.steps_per_s for p in LIB.profiles}
    setting = next(s for (t, g, n, s) in alone if (t, g, n) == (PAIR.a, PAIR.gpu_type, PAIR.gpus))
    a = index.rate(PAIR.a, (PAIR.gpu_type, PAIR.gpus, setting, PAIR.b))
    assert a == pytest.approx(alone[(PAIR.a, PAIR.gpu_type, PAIR.gpus, setting)] * PAIR.rho_a)
    b_setting = next(s for (t, g, n, s) in alone if (t, g, n) == (PAIR.b, PAIR.gpu_type, PAIR.gpus))
    b = index.rate(PAIR.b, (PAIR.gpu_type, PAIR.gpus, b_setting, PAIR.a))
    assert b == pytest.approx(alone[(PAIR.b, PAIR.gpu_type, PAIR.gpus, b_setting)] * PAIR.rho_b)


def test_steps_are_credited_from_the_first_step_and_never_twice() -> None:
    # a run started at 100 s with a 30 s start-up, 2 steps/s: at 200 s it made 2 * 70 steps
    assert credited_steps(2.0, 100.0, 30.0, None, 200.0) == pytest.approx(140.0)
    # credited up to 200 s already: from 200 to 260 only
    assert credited_steps(2.0, 100.0, 30.0, 200.0, 260.0) == pytest.approx(120.0)
    # still starting up, or credited after now: nothing
    assert credited_steps(2.0, 100.0, 30.0, None, 120.0) == 0.0
    assert credited_steps(2.0, 100.0, 30.0, 300.0, 260.0) == 0.0
    # a new run (requeued) after the last credit: from its own first step
    assert credited_steps(2.0, 500.0, 30.0, 260.0, 600.0) == pytest.approx(140.0)


def _known(total: float, done: float = 0.0, seen_s: float | None = None) -> KnownJob:
    return KnownJob("1", P.type, total, 1, 0.0, done, 100.0, 0, None, None, seen_s)


def test_the_agent_credits_a_job_that_exports_no_steps_at_what_it_runs_at(tmp_path: Path) -> None:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), start_s=30.0)
    agent._run_start = {"1": 100.0}
    running = CurrentConfig(P.gpu_type, P.gpus, P.setting)
    # its first step at 130 s; now 200 s: 70 s at the profile's rate
    assert agent._estimated_steps(_known(1e9), running, {}, 200.0) == pytest.approx(P.steps_per_s * 70.0)
    # credited up to 200 s already (kept in the state): from there, on top of what it had
    assert agent._estimated_steps(_known(1e9, 1000.0, 200.0), running, {}, 260.0) == pytest.approx(
        1000.0 + P.steps_per_s * 60.0
    )
    assert agent._estimated_steps(_known(50.0), running, {}, 1e6) == 50.0  # never past its total
    agent._measured.add("1")  # Prometheus showed its steps once: measured from then on
    assert agent._estimated_steps(_known(1e9), running, {}, 200.0) is None
    agent._measured.clear()
    assert agent._estimated_steps(_known(1e9), CurrentConfig(P.gpu_type, P.gpus, -1), {}, 200.0) is None


@pytest.mark.slow
def test_a_replay_where_no_job_exports_steps_estimates_them_and_finishes(tmp_path: Path) -> None:
    from wattplan.planner.contracts.request import REPLAY_REQUEST
    from wattplan.planner.control.session import setup_of
    from wattplan.planner.control.slurm_replay import replay_on_slurm
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.policies.registry import PolicyOptions
    from wattplan.planner.sim.replay import ReplaySpec

    trace = tmp_path / "jobs.trace"
    rows = [("ResNet-50 (batch size 64)", 1, 150_000, 0.0), ("A3C", 1, 200_000, 50.0), ("A3C", 2, 90_000, 900.0)]
    trace.write_text("".join(f"{k}\tcmd\t-n\t1\t{s}\t{a}\t{g}\n" for k, g, s, a in rows))
    request = replace(REPLAY_REQUEST, solver="greedy")
    spec = ReplaySpec(
        trace=trace, cluster="v100:16", policies=("wattplan",), policy_options=PolicyOptions(request=request)
    )
    blind = replay_on_slurm(spec, "wattplan", setup_of(SimulateOptions(progress_metric=False)), tmp_path / "blind")
    assert len(blind.jobs) == 3 and all(j["steps"] > 0 for j in blind.jobs)
    log = (tmp_path / "blind" / "wattplan" / "agent.log").read_text()
    assert "steps estimated from the profiles" in log
    seen = replay_on_slurm(spec, "wattplan", setup_of(SimulateOptions()), tmp_path / "seen")
    assert "steps estimated" not in (tmp_path / "seen" / "wattplan" / "agent.log").read_text()
    assert blind.summary["energy_kwh"] == pytest.approx(seen.summary["energy_kwh"], rel=0.1)


@pytest.mark.slow
def test_with_exact_profiles_the_estimate_is_the_simulated_slurms_steps_at_every_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Truth = profiles and ``start_s`` the whole start-up (launch and load): the estimate is exact, boots included.

    Power saving makes jobs wait for booting nodes (``CONFIGURING``, whose start time Slurm resets when the node is
    up): a job credited from its allocation ran ahead of its steps by the boot (up to 16% of a job's steps).
    """
    from wattplan.planner.agent import loop
    from wattplan.planner.control import sim_slurm, slurm_replay
    from wattplan.planner.control.session import setup_of
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.replay import ReplaySpec

    sims: list[sim_slurm.SimulatedSlurm] = []
    errors: list[float] = []
    made = sim_slurm.SimulatedSlurm.__init__
    estimated = loop.Agent._estimated_steps
    configured = slurm_replay.agent_config

    def keep(self: sim_slurm.SimulatedSlurm, *args: object, **kw: object) -> None:
        made(self, *args, **kw)  # type: ignore[arg-type]
        sims.append(self)

    def compare(self: loop.Agent, k: KnownJob, *args: object) -> float | None:
        steps = estimated(self, k, *args)  # type: ignore[arg-type]
        if steps is not None:
            job = sims[-1]._jobs[int(k.job_id)]
            real = min(job.at(job.ss, job.rates[1], sims[-1].now_s), job.spec.total_steps)
            errors.append(abs(steps - real) / k.total_steps)
        return steps

    def whole_start_up(*args: object, **kw: object) -> loop.AgentConfig:
        config = configured(*args, **kw)  # type: ignore[arg-type]
        return replace(config, start_s=args[4].start_cost_s)  # type: ignore[attr-defined]

    monkeypatch.setattr(sim_slurm.SimulatedSlurm, "__init__", keep)
    monkeypatch.setattr(loop.Agent, "_estimated_steps", compare)
    monkeypatch.setattr(slurm_replay, "agent_config", whole_start_up)
    live = Path(__file__).resolve().parent.parent / "instances" / "live" / "gavel_mix.trace"
    spec = ReplaySpec(trace=live, cluster="v100:32", policies=("wattplan",))
    setup = dataclasses.replace(
        setup_of(SimulateOptions(progress_metric=False, power_save=True, time_scale=30)), **NO_SLURM_WAITS
    )  # Slurm's waits put starts between whole seconds, which Slurm's start times, and the estimate, round down
    result = slurm_replay.replay_on_slurm(spec, "wattplan", setup, tmp_path / "out")
    assert len(errors) > 100 and all(job["steps"] > 0 for job in result.jobs)
    assert max(errors) < 1e-9


def test_a_restarted_agent_estimates_nothing_before_it_has_read_prometheus_once(tmp_path: Path) -> None:
    # its steps may be measured: an estimate over the restart's gap would stick (steps are never lowered)
    agent, _ = fake_agent(tmp_path, FakeSlurm(), start_s=0.0)
    agent.observer = object()  # type: ignore[assignment]  # any Prometheus; none read yet
    agent._run_start = {"1": 100.0}
    running = CurrentConfig(P.gpu_type, P.gpus, P.setting)
    assert agent._estimated_steps(_known(1e9, 500.0, 150.0), running, {}, 200.0) is None
    agent._windows_read = 1
    assert agent._estimated_steps(_known(1e9, 500.0, 150.0), running, {}, 200.0) == pytest.approx(
        500.0 + P.steps_per_s * 50.0
    )


def test_the_energy_a_job_drew_pays_for_its_steps() -> None:
    """``e = n (P - Pidle) / X``; ``steps = (E - n Pidle h) / e``, never below zero; a pair has no such rate."""
    index = RateIndex.of(LIB)
    idle = float(LIB.gpu_types[P.gpu_type]["idle_power_w"])
    e = index.energy_per_step_j(P.type, (P.gpu_type, P.gpus, P.setting, None))
    assert e == pytest.approx(P.gpus * (P.power_w - idle) / P.steps_per_s)
    assert index.energy_per_step_j(PAIR.a, (PAIR.gpu_type, PAIR.gpus, 250, PAIR.b)) is None
    # 60 s held, 40 s of it computing at the profile's power: the energy pays for the 40 s of steps
    energy = P.gpus * (idle * 60.0 + (P.power_w - idle) * 40.0)
    assert energy_steps(energy, P.gpus, idle, 60.0, e) == pytest.approx(P.steps_per_s * 40.0)
    assert energy_steps(0.5 * P.gpus * idle * 60.0, P.gpus, idle, 60.0, e) == 0.0  # less than idle: nothing


def test_the_agent_credits_a_window_it_read_by_the_energy_and_anything_else_by_time(tmp_path: Path) -> None:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), start_s=30.0)
    agent._run_start = {"1": 100.0}
    agent._rates = (agent.cfg.library, RateIndex.of(agent.cfg.library))
    idle = float(LIB.gpu_types[P.gpu_type]["idle_power_w"])
    running = CurrentConfig(P.gpu_type, P.gpus, P.setting)
    # the window [140, 200] s: the job loaded, its GPUs at their real idle power, 7 W above the profiles' (as
    # measured): no step, and that idle power is learnt
    real_idle = idle + 7.0
    agent._window_start_s, agent._window_end_s = 140.0, 200.0
    agent._window_energy = {"1": P.gpus * real_idle * 60.0}
    assert agent._estimated_steps(_known(1e9, 1000.0, 140.0), running, {}, 200.0) == pytest.approx(1000.0)
    assert agent._idle_seen == {P.gpu_type: pytest.approx(real_idle)}
    # the window [200, 260] s: it computed at half its profile's dynamic power (input-bound)
    agent._window_start_s, agent._window_end_s = 200.0, 260.0
    agent._window_energy = {"1": P.gpus * (real_idle + 0.5 * (P.power_w - idle)) * 60.0}
    half = 1000.0 + 0.5 * P.steps_per_s * 60.0
    assert agent._estimated_steps(_known(1e9, 1000.0, 200.0), running, {}, 260.0) == pytest.approx(half)
    # credited before the window (a window missed): by time up to the window, by the energy in it
    split = 1000.0 + P.steps_per_s * 50.0 + 0.5 * P.steps_per_s * 60.0
    assert agent._estimated_steps(_known(1e9, 1000.0, 150.0), running, {}, 260.0) == pytest.approx(split)
    # a job that ran faster than its profile: its energy pays for more steps than time does; time bounds it
    agent._window_energy = {"1": P.gpus * (real_idle + 2.0 * (P.power_w - idle)) * 60.0}
    assert agent._estimated_steps(_known(1e9, 1000.0, 200.0), running, {}, 260.0) == pytest.approx(
        1000.0 + P.steps_per_s * 60.0
    )
    # a round whose window was not read (Prometheus down): by time
    assert agent._estimated_steps(_known(1e9, 1000.0, 260.0), running, {}, 320.0) == pytest.approx(
        1000.0 + P.steps_per_s * 60.0
    )
