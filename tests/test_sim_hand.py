"""Hand-computed replays and round decisions of the baseline policies."""

from __future__ import annotations

import pytest

from tests.sim_helpers import A, B, hand_context, hand_job, workload
from wattplan.planner.sim.budget import EnergyBudget, pacing_estimate
from wattplan.planner.sim.engine import simulate
from wattplan.planner.sim.metrics import summarise
from wattplan.planner.sim.policies import make_policy
from wattplan.planner.sim.policies.zeus import zeus_setting
from wattplan.planner.sim.round_instance import replay_round, round_instance
from wattplan.planner.sim.state import JobState


def test_fifo_max_hand_computed_schedule_energy_and_jct() -> None:
    """fifo-max on one node of 2 GPUs; T = 100 s, restart 10 s; node 100 W, idle 30 W per GPU.

    Profiles at the top limit (250 W), one GPU: A 5 steps/s at 230 W, B 2.5 steps/s at 180 W.
    Dynamic power per GPU: A 230 - 30 = 200 W, B 180 - 30 = 150 W.
    Jobs: j0 (A, 900 steps, arrives 0), j1 (B, 400 steps, arrives 0), j2 (A, 300 steps, arrives 30).

    Round 0, t = 0: queue j0, j1 (j2 arrives mid-round and waits). Both start: restart, 90 s.
      j0: 5 x 90 = 450 steps (450 left), dynamic 200 x 90 = 18 kJ.
      j1: 2.5 x 90 = 225 steps (175 left), dynamic 150 x 90 = 13.5 kJ.
      node 100 x 100 = 10 kJ, idle 2 x 30 x 100 = 6 kJ; total 47.5 kJ; busy 90 + 90 = 180 GPU-s.
    Round 1, t = 100: queue j0, j1, j2. j0 and j1 keep their GPUs (no restart); j2 waits (no GPU).
      j0: 450 / 5 = 90 s -> finishes at 190; dynamic 200 x 90 = 18 kJ.
      j1: 175 / 2.5 = 70 s -> finishes at 170; dynamic 150 x 70 = 10.5 kJ.
      node 10 kJ, idle 6 kJ; total 44.5 kJ; busy 90 + 70 = 160 GPU-s.
    Round 2, t = 200: queue j2. Starts: 10 s restart, 300 / 5 = 60 s -> finishes at 270.
      dynamic 200 x 60 = 12 kJ; node 10 kJ, idle 6 kJ; total 28 kJ; busy 60 GPU-s.
    JCT: j0 190, j1 170, j2 270 - 30 = 240; mean 200 s. Makespan 270 s.
    Energy: node 30 kJ + idle 18 kJ + dynamic 72 kJ = 120 kJ. Utilisation 400 / 600.
    """
    jobs = [hand_job("j0", A, 0, 900), hand_job("j1", B, 0, 400), hand_job("j2", A, 30, 300)]
    result = simulate(workload(jobs), hand_context(), make_policy("fifo-max"))
    assert result.stop_reason == "completed"
    assert [r.start_s for r in result.rounds] == [0, 100, 200]
    assert [r.energy_j for r in result.rounds] == pytest.approx([47_500, 44_500, 28_000])
    assert [r.dynamic_j for r in result.rounds] == pytest.approx([31_500, 28_500, 12_000])
    assert [r.busy_gpu_s for r in result.rounds] == pytest.approx([180, 160, 60])
    assert [(r.queued, r.running, r.restarted, r.finished) for r in result.rounds] == [
        (2, 2, 2, 0),
        (3, 2, 0, 2),
        (1, 1, 1, 1),
    ]
    finish = {s.id: s.finish_s for s in result.jobs}
    assert finish == pytest.approx({"j0": 190, "j1": 170, "j2": 270})
    s = summarise(result)
    assert s["avg_jct_s"] == pytest.approx(200)
    assert s["median_jct_s"] == pytest.approx(190)
    assert s["makespan_s"] == pytest.approx(270)
    assert s["energy_kwh"] * 3.6e6 == pytest.approx(120_000)
    assert (s["energy_node_kwh"] * 3.6e6, s["energy_idle_kwh"] * 3.6e6, s["energy_dynamic_kwh"] * 3.6e6) == (
        pytest.approx(30_000),
        pytest.approx(18_000),
        pytest.approx(72_000),
    )
    assert s["gpu_utilisation"] == pytest.approx(400 / 600)
    # the one node was on in every round: never suspending it changes nothing here
    assert s["energy_all_nodes_on_kwh"] * 3.6e6 == pytest.approx(72_000 + 3 * 100 * (100 + 2 * 30))
    assert s["jobs_completed"] == 3 and s["restarts"] == 3


def test_idle_gap_is_skipped_and_draws_nothing() -> None:
    """A job arriving at 1000 s after the first finished: rounds 1..9 are skipped (no energy).

    j0: A, 450 steps at 0 -> 90 s after the 10 s restart, done at 100 (round 0).
    j1: A, 450 steps at 950 -> waits for round 10 (t = 1000), done at 1100; JCT 150.
    """
    jobs = [hand_job("j0", A, 0, 450), hand_job("j1", A, 950, 450)]
    result = simulate(workload(jobs), hand_context(), make_policy("fifo-max"))
    assert [r.index for r in result.rounds] == [0, 10]
    assert {s.id: s.jct_s for s in result.jobs} == pytest.approx({"j0": 100, "j1": 150})
    assert summarise(result)["energy_kwh"] * 3.6e6 == pytest.approx(2 * (10_000 + 6_000 + 200 * 90))


def _round0(jobs):
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


def test_energy_budget_pacing_by_hand() -> None:
    """Energy budget pacing at t = 0: 4 rounds left, so 100 kJ gives the round 25 kJ (30 kJ with a floor).

    Two GPUs, T = 100 s, at t = 0: j0 (A, 1 GPU, 1000 steps at 5 steps/s: d = 200 s, queued)
    and j1 (B, 1 GPU, 500 steps at 2.5 steps/s: d = 200 s, arrives at 300 s).

    W = 200 + 200 = 400 GPU-s; w = 1 x min(200, 100) = 100 GPU-s (only j0 is queued);
    D = max(400 / 2, 0 + 200, 300 + 200) = 500 s; rounds left = min(400 / 100, 500 / 100) = 4.
    A 100 kJ budget gives this round 25 kJ; with a 30 kJ floor, 30 kJ.
    """
    states = [JobState.new(hand_job("j0", A, 0, 1000)), JobState.new(hand_job("j1", B, 300, 500))]
    est = pacing_estimate(states, 0.0, 100.0, 2)
    assert (est.work_gpu_s, est.round_work_gpu_s, est.time_left_s, est.rounds_left) == pytest.approx((400, 100, 500, 4))
    assert EnergyBudget(100_000).round_budget_j(states, 0.0, 100.0, 2) == pytest.approx(25_000)
    assert EnergyBudget(100_000, floor_j=30_000).round_budget_j(states, 0.0, 100.0, 2) == pytest.approx(30_000)
    spent = EnergyBudget(100_000, floor_j=30_000, spent_j=90_000)
    assert spent.round_budget_j(states, 0.0, 100.0, 2) == pytest.approx(10_000)  # all that is left
