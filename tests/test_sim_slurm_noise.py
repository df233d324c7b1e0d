"""Throughput noise on the simulated Slurm (``simulate --noise x``): hand-computed finishes and energy.

A computing job runs at ``f * X`` at the truth's power ``P``, with ``f`` drawn per start and per ``period_s`` after
it (:class:`~planner.control.truth_model.ThroughputNoise`); expectations are written from the drawn factors, read
back with :meth:`ThroughputNoise.factor`, and the shipped V100 profiles (``X``, ``P``, ``Pidle`` = 34 W).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.sim_slurm import CLOCK, DELAY, IDLE, LOAD, NODE_W, R18, p, simulated, x
from wattplan.planner.cli import app
from wattplan.planner.control.sim_slurm import JobRecord, SimJob, SimulatedSlurm
from wattplan.planner.control.slurm_replay import replay_on_slurm
from wattplan.planner.control.truth_model import ThroughputNoise
from wattplan.planner.sim.replay import ReplaySpec

NOISE = ThroughputNoise(0.3, seed=7, period_s=100.0)


def _unix(t_s: float) -> float:
    return CLOCK.unix_at(t_s)


def _events(sim: SimulatedSlurm, until_s: float) -> list[float]:
    """Every event time up to ``until_s``, each played."""
    seen = []
    while (t := sim.next_event_s()) <= until_s:
        seen.append(t)
        sim.advance_to(t)
    return seen


def test_the_factor_is_a_function_of_seed_job_start_and_interval_alone() -> None:
    draws = [NOISE.factor(1, s, k) for s in range(3) for k in range(20)]
    assert all(0.7 <= f < 1.3 for f in draws) and len(set(draws)) == len(draws)
    assert NOISE.factor(1, 0, 2) == ThroughputNoise(0.3, 7, 100.0).factor("1", 0, 2)  # no state, no salted hash
    assert NOISE.factor(1, 0, 2) != ThroughputNoise(0.3, 8, 100.0).factor(1, 0, 2)
    assert ThroughputNoise(0.0, 7, 100.0).factor(1, 0, 2) == 1.0
    with pytest.raises(ValueError, match="noise must be in"):
        ThroughputNoise(1.0, 7, 100.0)
    with pytest.raises(ValueError, match="period_s"):
        ThroughputNoise(0.1, 7, 0.0)


def test_one_job_alone_finishes_when_its_drawn_factors_say() -> None:
    """Start at 100 s, load to 130 s, then ``f0 X`` to 200 s, ``f1 X`` to 300 s, ``f2 X`` for the last 50 s.

    Its steps are ``X (70 f0 + 100 f1 + 50 f2)``, so it completes at 350 s; each new interval is an event. Its power
    is the truth's whatever ``f``: dynamic ``(P - Pidle) 220 s``, GPU ``Pidle 30 s + P 220 s``.
    """
    f0, f1, f2 = (NOISE.factor(1, 0, k) for k in range(3))
    X, P = x(R18), p(R18)
    steps = X * (70 * f0 + 100 * f1 + 50 * f2)
    sim = simulated([SimJob(1, R18, 100.0, 1, steps, managed=False)], noise=NOISE)
    sim.advance_to(100.0)
    assert _events(sim, 250.0) == pytest.approx([130.0, 200.0])
    sim.advance_to(250.0)
    assert sim.window(_unix(100.0), _unix(250.0)).steps_done["1"] == pytest.approx(X * (70 * f0 + 50 * f1))
    assert _events(sim, 400.0) == pytest.approx([300.0, 350.0])  # then it leaves the list at 650 s
    (rec,) = sim.job_records()
    assert rec.state == "COMPLETED" and rec.steps_done == steps
    assert rec.finish_s == pytest.approx(350.0, rel=1e-12)
    assert rec.dynamic_energy_j == pytest.approx((P - IDLE) * 220.0)
    assert rec.gpu_energy_j == pytest.approx(IDLE * 30.0 + P * 220.0)
    split = sim.energy(350.0)
    assert (split.node_j, split.idle_j, split.dynamic_j) == pytest.approx(
        (NODE_W * 250.0, 8 * IDLE * 250.0, (P - IDLE) * 220.0)
    )


def test_a_restart_draws_a_fresh_factor_from_its_own_start() -> None:
    """Requeued at 150 s, it starts again at 157 s (start 1), loads to 187 s, then runs at ``f(1, 1, 0) X``."""
    X = x(R18)
    sim = simulated([SimJob(1, R18, 0.0, 1, 1e6, managed=False)], noise=NOISE)
    sim.advance_to(150.0)
    assert sim(("scontrol", "requeuehold", "1")).ok
    assert sim(("scontrol", "release", "1")).ok
    restart = 150.0 + DELAY
    assert _events(sim, 250.0) == pytest.approx([restart, restart + LOAD])
    sim.advance_to(250.0)
    before = X * NOISE.factor(1, 0, 1) * (150.0 - 100.0) + X * NOISE.factor(1, 0, 0) * (100.0 - LOAD)
    after = X * NOISE.factor(1, 1, 0) * (250.0 - restart - LOAD)
    assert sim.window(_unix(0.0), _unix(250.0)).steps_done["1"] == pytest.approx(before + after)
    assert sim.next_event_s() == pytest.approx(restart + 100.0)  # its next interval counts from the restart


def _three_jobs(noise: ThroughputNoise | None) -> SimulatedSlurm:
    jobs = [SimJob(1, R18, 0.0, 1, 40_000.0), SimJob(2, R18, 20.0, 2, 60_000.0), SimJob(3, R18, 45.0, 8, 30_000.0)]
    sim = simulated(jobs, (8, 4), noise=noise)
    for jid in (1, 2, 3):  # released at their arrivals, as Slurm alone: job 3 waits for the 8-GPU node
        sim.advance_to(jobs[jid - 1].arrival_s)
        assert sim(("scontrol", "release", str(jid))).ok
    sim.advance_to(400.0)
    assert sim(("scontrol", "requeuehold", "1")).ok  # a second start for job 1
    assert sim(("scontrol", "release", "1")).ok
    return sim


def _finished(sim: SimulatedSlurm, step_s: float | None = None) -> list[JobRecord]:
    """Play to the end in one jump, or in steps of ``step_s`` with a queue read between them."""
    if step_s is None:
        sim.advance_to(1e6)
    else:
        t = sim.now_s
        while not sim.done():
            t += step_s
            sim.advance_to(t)
            assert sim(("squeue", "--json")).ok
    return sim.job_records()


def test_the_same_seed_gives_the_same_replay_and_another_seed_another() -> None:
    a, b = _finished(_three_jobs(NOISE)), _finished(_three_jobs(NOISE))
    assert a == b and all(r.state == "COMPLETED" for r in a)
    other = _finished(_three_jobs(ThroughputNoise(0.3, seed=8, period_s=100.0)))
    assert [r.finish_s for r in other] != [r.finish_s for r in a]
    # the draws do not depend on the order the events are played in: small steps, queue reads between them
    stepped = _finished(_three_jobs(NOISE), step_s=13.0)
    assert [r.finish_s for r in stepped] == pytest.approx([r.finish_s for r in a], rel=1e-9)


def test_noise_zero_changes_nothing_to_the_digit() -> None:
    plain, zero = _three_jobs(None), _three_jobs(ThroughputNoise(0.0, seed=7, period_s=100.0))
    assert zero.noise is None
    assert _finished(plain) == _finished(zero)
    assert plain.energy() == zero.energy() and plain.power_steps() == zero.power_steps()
    noisy = _finished(_three_jobs(NOISE))
    assert [r.finish_s for r in noisy] != [r.finish_s for r in plain.job_records()]


def _trace(tmp_path: Path) -> Path:
    rows = [("ResNet-18 (batch size 32)", 1, 3000, 0.0), ("ResNet-50 (batch size 128)", 2, 900, 50.0)]
    path = tmp_path / "jobs.trace"
    path.write_text("".join(f"{k}\tcmd\t-n\t1\t{s}\t{a}\t{g}\n" for k, g, s, a in rows))
    return path


def test_a_replay_runs_on_the_noise_and_reports_it(tmp_path: Path) -> None:
    """Both policies replay on the same draws; the summary names the noise and its seed; noise 0 reports 0."""
    spec = ReplaySpec(trace=_trace(tmp_path), cluster="v100:8", policies=("fifo-max",), noise=0.2, seed=3)
    noisy = {name: replay_on_slurm(spec, name) for name in ("slurm", "fifo-max")}
    plain = replay_on_slurm(ReplaySpec(trace=spec.trace, cluster="v100:8"), "slurm")
    for result in noisy.values():
        assert (result.summary["noise"], result.summary["noise_seed"]) == (0.2, 3)
        assert result.summary["completed"] == 2 and result.summary["stop_reason"] == "completed"
    assert (plain.summary["noise"], plain.summary["noise_seed"]) == (0.0, None)
    assert [j["jct_s"] for j in noisy["slurm"].jobs] != [j["jct_s"] for j in plain.jobs]
    assert all(math.isfinite(j["jct_s"]) for j in noisy["fifo-max"].jobs)


def test_simulate_takes_noise_on_the_slurm_engine(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["simulate", str(_trace(tmp_path)), "--cluster", "v100:8", "-p", "fifo-max", "--noise", "0.1"]
    result = CliRunner().invoke(app, [*args, "--no-plots", "-o", str(out)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    assert (summary["engine"], summary["noise"], summary["completed"]) == ("slurm", 0.1, 2)
