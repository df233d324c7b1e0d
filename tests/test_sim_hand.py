"""Hand-computed replays on the simulated Slurm, and round decisions of the baseline policies by hand.

Replays: the scheduler loop (:func:`planner.control.slurm_replay.replay_on_slurm`) on one V100 node of 8 GPUs, the
shipped profiles at the top setting (``X`` steps/s, ``P`` W per GPU, ``Pidle`` = 34 W). Every start costs Slurm's
launch (1 s at time scale 1) and the checkpoint load (30 s), with no progress and no dynamic power; every node and
GPU draws its idle power throughout. Decisions: the hand cluster of :mod:`tests.sim_helpers`.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from tests.helpers.sim_slurm import IDLE, p, x
from tests.sim_helpers import NO_SLURM_WAITS, A, B, hand_context, hand_job, write_gavel_trace
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.policies import make_policy
from wattplan.planner.sim.policies.zeus import zeus_setting
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import ReplayRound, replay_round, round_instance
from wattplan.planner.sim.state import JobSpec, JobState

R18 = "ResNet-18 (batch size 32)"
R50 = "ResNet-50 (batch size 128)"
J_PER_KWH = 3.6e6
START_S = 1.0 + 30.0
"""What every start costs before the first step (s): Slurm's launch and the checkpoint load."""
SETUP = SimulatedCluster(load_s=30.0, **NO_SLURM_WAITS)
RULES = RoundRules(duration_s=360.0)
"""``T`` = 360 s: a round starts at an arrival or a completion at least ``T / 10`` = 36 s after the last one."""


def _spec(tmp_path: Path, rows: list[tuple[str, float, float, int]]) -> tuple[ReplaySpec, float]:
    """A replay of ``rows`` (job type, steps, arrival s, GPUs) on ``v100:8``; its node's power besides its GPUs (W)."""
    trace = write_gavel_trace(tmp_path / "jobs.trace", rows)
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",), rules=RULES)
    (gpu,) = prepare(spec)[1].real.gpu_types
    return spec, gpu.node_power_w


def test_fifo_max_hand_computed_schedule_energy_and_jct(tmp_path: Path) -> None:
    """j0 (ResNet-18, 8 GPUs, ``S0`` steps, at 0) holds the node; j1 (ResNet-50, 1 GPU, ``S1`` steps, at 10) waits.

    j0 starts at 0 and completes at ``c0 = 31 + S0 / X8``. Slurm alone starts j1 the moment the GPUs free, at ``c0``.
    Through the agent, fifo-max plans rounds at 0, at 36 (j1's arrival, a tenth of a round after the last: nothing
    fits) and at the first poll that sees j0 leave (the loop polls every second from its round at 36, so at
    ``ceil(c0)``), where j1 is released and starts. j1 ends at ``f1 = s1 + 31 + S1 / X1``.

    JCTs ``c0`` and ``f1 - 10``; makespan ``f1``; the node draws ``Pnode f1``, its GPUs ``8 Pidle f1`` idle, and the
    jobs ``8 (P8 - Pidle) S0 / X8 + (P1 - Pidle) S1 / X1`` dynamic energy (none during a launch or a load).
    """
    s0, s1 = 20_000.0, 4_000.0
    spec, node_w = _spec(tmp_path, [(R18, s0, 0.0, 8), (R50, s1, 10.0, 1)])
    c0 = START_S + s0 / x(R18, 8)
    assert c0 > 72.0 and c0 != math.ceil(c0)  # after the round at 36 and its tenth of a round; between two polls
    dynamic_j = 8 * (p(R18, 8) - IDLE) * s0 / x(R18, 8) + (p(R50, 1) - IDLE) * s1 / x(R50, 1)
    for policy, s1_start in (("slurm", c0), ("fifo-max", math.ceil(c0))):
        result = replay_on_slurm(spec, policy, SETUP)
        f1 = s1_start + START_S + s1 / x(R50, 1)
        jobs = {j["job_id"]: j for j in result.jobs}
        assert (jobs["j0"]["start_s"], jobs["j1"]["start_s"]) == (0.0, pytest.approx(s1_start)), policy
        assert jobs["j0"]["finish_s"] == pytest.approx(c0) and jobs["j1"]["finish_s"] == pytest.approx(f1), policy
        assert [j["requeues"] for j in result.jobs] == [0, 0] and [j["steps"] for j in result.jobs] == [s0, s1]
        s = result.summary
        assert (s["stop_reason"], s["completed"]) == ("completed", 2)
        jcts = [c0, f1 - 10.0]
        assert s["avg_jct_s"] == pytest.approx(statistics.fmean(jcts)) and s["makespan_s"] == pytest.approx(f1)
        assert s["median_jct_s"] == pytest.approx(statistics.fmean(jcts))
        assert s["p95_jct_s"] == pytest.approx(min(jcts) + 0.95 * abs(jcts[1] - jcts[0]))
        assert s["energy_node_kwh"] * J_PER_KWH == pytest.approx(node_w * f1)
        assert s["energy_idle_kwh"] * J_PER_KWH == pytest.approx(8 * IDLE * f1)
        assert s["energy_dynamic_kwh"] * J_PER_KWH == pytest.approx(dynamic_j)
        assert s["energy_kwh"] * J_PER_KWH == pytest.approx(node_w * f1 + 8 * IDLE * f1 + dynamic_j)


@pytest.mark.parametrize("poll_s", [1.0, 0.1])
def test_a_departure_is_planned_at_the_first_read_of_the_queue_after_it(tmp_path: Path, poll_s: float) -> None:
    """The jobs of the test above through the agent's fifo-max, the queue read every ``poll_s`` (``--poll-s``).

    The loop reads the queue every ``poll_s`` from its round at 36, so j1 starts at ``36 + poll_s ceil((c0 - 36) /
    poll_s)``: the first read at or after j0 leaves (``ceil(c0)`` at the default second).
    """
    s0, s1 = 20_000.0, 4_000.0
    spec, _ = _spec(tmp_path, [(R18, s0, 0.0, 8), (R50, s1, 10.0, 1)])
    c0 = START_S + s0 / x(R18, 8)
    first_read = 36.0 + poll_s * math.ceil((c0 - 36.0) / poll_s)
    assert first_read - c0 < poll_s and (poll_s < 1.0) == (first_read < math.ceil(c0))
    result = replay_on_slurm(spec, "fifo-max", SimulatedCluster(load_s=30.0, poll_s=poll_s, **NO_SLURM_WAITS))
    jobs = {j["job_id"]: j for j in result.jobs}
    assert jobs["j1"]["start_s"] == pytest.approx(first_read)
    assert jobs["j1"]["finish_s"] == pytest.approx(first_read + START_S + s1 / x(R50, 1))


def test_an_idle_gap_draws_the_powered_nodes_idle_power(tmp_path: Path) -> None:
    """j0 (1 GPU, at 0) ends long before j1 (1 GPU) arrives at 1,000 s: the node stays on and draws idle meanwhile.

    j0 ends at ``31 + S / X``; the agent's round at j1's arrival (a whole second, a poll's instant) starts it at
    once, so j1 ends at ``1000 + 31 + S / X`` and its JCT is ``31 + S / X``, as j0's. Every second of the window
    draws the node's ``Pnode + 8 Pidle``, the gap included; the jobs add ``2 (P - Pidle) S / X``.
    """
    steps = 3_000.0
    spec, node_w = _spec(tmp_path, [(R18, steps, 0.0, 1), (R18, steps, 1000.0, 1)])
    run_s = START_S + steps / x(R18, 1)
    assert run_s < 1000.0 - 36.0  # j0 is gone, and its round played, well before j1 arrives
    for policy in ("slurm", "fifo-max"):
        s = replay_on_slurm(spec, policy, SETUP).summary
        assert s["avg_jct_s"] == pytest.approx(run_s) and s["makespan_s"] == pytest.approx(1000.0 + run_s), policy
        idle_j = (node_w + 8 * IDLE) * (1000.0 + run_s)
        assert s["energy_kwh"] * J_PER_KWH == pytest.approx(idle_j + 2 * (p(R18, 1) - IDLE) * steps / x(R18, 1))


def _round0(jobs: list[JobSpec]) -> tuple[Instance, ReplayRound]:
    """Round 0 at 0 s of the hand cluster with ``jobs`` waiting, and the replay's view of it."""
    ctx = hand_context()
    states = [JobState.new(j) for j in jobs]
    return round_instance(ctx, 0, 0.0, states, None), replay_round(0.0, states)


def test_zeus_setting_by_energy_time_cost() -> None:
    """Zeus picks the setting with the lowest cost per step ``(eta * P + (1 - eta) * 250) / X``.

    Zeus cost per step (eta * P + (1 - eta) * 250) / X for A on one GPU:
    eta 0.5: 250 W -> (115 + 125) / 5 = 48; 150 W -> (65 + 125) / 4 = 47.5 -> 150 W.
    eta 0 (time only): 250 / 5 = 50 vs 250 / 4 = 62.5 -> 250 W.
    eta 1 (energy only): 230 / 5 = 46 vs 130 / 4 = 32.5 -> 150 W.
    """
    inst, context = _round0([hand_job("a", A, 0, 1000)])
    g, job = inst.gpu_types[0], inst.jobs[0]
    assert zeus_setting(inst, job, g, 1, 0.5) == 150
    assert zeus_setting(inst, job, g, 1, 0.0) == 250
    assert zeus_setting(inst, job, g, 1, 1.0) == 150
    (alloc,) = make_policy("zeus").decide(inst, context).allocations
    assert (alloc.gpus, alloc.setting) == (1, 150)


def test_eaco_pairs_a_waiting_job_onto_a_running_one() -> None:
    """Two GPUs, three 1-GPU jobs: a (A) and b (A) take the GPUs, c (B) pairs with one of them.

    Pair A-B on one GPU: rates 0.8 (A) and 0.6 (B), both >= 0.5, so c joins the first A job;
    fifo-max leaves c waiting.
    """
    inst, context = _round0([hand_job("a", A, 0, 1e6), hand_job("b", A, 0, 1e6), hand_job("c", B, 0, 1e6)])
    eaco = make_policy("eaco").decide(inst, context).allocations
    assert sorted(a.job_ids for a in eaco) == [("a", "c"), ("b",)]
    assert all(a.setting == 250 for a in eaco)
    fifo = make_policy("fifo-max").decide(inst, context).allocations
    assert sorted(a.job_ids for a in fifo) == [("a",), ("b",)]


def test_powerflow_upgrades_within_the_budget() -> None:
    """PowerFlow upgrades a job only as far as the budget pays for.

    One A job alone on two GPUs, no budget: PowerFlow grows it to 2 GPUs at 250 W (most progress);
    with a budget that only pays for one GPU at 150 W it stays there.
    """
    free = make_policy("powerflow").decide(*_round0([hand_job("a", A, 0, 1e6)]))
    assert [(a.gpus, a.setting) for a in free.allocations] == [(2, 250)]
    ctx = hand_context()
    state = JobState.new(hand_job("a", A, 0, 1e6))
    # one GPU at 150 W for 90 s: dynamic 100 x 90 = 9 kJ, node and idle 16 kJ -> 25 kJ
    inst = round_instance(ctx, 0, 0.0, [state], 25_000.0)
    tight = make_policy("powerflow").decide(inst, replay_round(0.0, [state]))
    assert [(a.gpus, a.setting) for a in tight.allocations] == [(1, 150)]
