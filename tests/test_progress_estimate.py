"""Progress without instrumentation (issue 45, item 5): steps estimated from what a job ran at and the profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from wattplan.planner.agent.loop import Observed, RoundReport
from wattplan.planner.agent.progress_estimate import RateIndex, credited_steps
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


class StepsFrom:
    """A Prometheus that shows energy for every job and steps only for ``measured``."""

    def __init__(self, measured: dict[str, float]):
        self.measured = measured

    def window(self, t0_unix: float, t1_unix: float) -> Observed:
        return Observed(dict(self.measured), {"1": 1e5, "2": 1e5})


def test_the_agent_estimates_the_jobs_prometheus_never_showed_and_keeps_the_measured(tmp_path: Path) -> None:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), start_s=30.0)
    agent.observer = StepsFrom({"2": 500.0})
    for jid in ("1", "2"):
        agent.store.add_job(jid, P.type, 1e9, 1, 0.0, 0)
    config = (P.gpu_type, P.gpus, P.setting, None)
    agent._last_running = {"1": config, "2": config}
    agent._run_start = {"1": 100.0, "2": 100.0}
    unix = agent.cfg.clock.unix_at(200.0)
    agent._last_round_unix = agent.cfg.clock.unix_at(130.0)
    report = RoundReport(1, 200.0)
    agent._observe(unix, 200.0, report)
    known = agent.store.known_jobs()
    assert known["1"].steps_done == pytest.approx(P.steps_per_s * 70.0)  # from its first step at 130 s
    assert known["2"].steps_done == 500.0  # measured
    assert any("job 1: no wattplan_job_steps_done" in n for n in report.notes)
    # the next round credits only the new window, and says nothing again
    agent._last_round_unix, report = unix, RoundReport(2, 260.0)
    agent._observe(agent.cfg.clock.unix_at(260.0), 260.0, report)
    assert agent.store.known_jobs()["1"].steps_done == pytest.approx(P.steps_per_s * 130.0)
    assert not any("no wattplan_job_steps_done" in n for n in report.notes)


def test_without_prometheus_every_running_job_is_estimated_up_to_its_total(tmp_path: Path) -> None:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), start_s=0.0)
    agent.store.add_job("1", P.type, 50.0, 1, 0.0, 0)
    agent._last_running = {"1": (P.gpu_type, P.gpus, P.setting, None)}
    agent._run_start = {"1": 0.0}
    agent._last_round_unix = agent.cfg.clock.unix_at(0.0)
    agent._observe(agent.cfg.clock.unix_at(1e6), 1e6, RoundReport(1, 1e6))
    assert agent.store.known_jobs()["1"].steps_done == 50.0
