"""The energy floor, by hand and under every policy on the loop; the reference comparison; the steering's rules."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.sim_helpers import A, B, hand_context, hand_job, workload, write_gavel_trace
from wattplan.formulations.energy_floor import certified_bound, energy_floor
from wattplan.formulations.ir import INF, ModelBuilder
from wattplan.planner.contracts.domain import PairSlowdown
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.control.session import with_floor
from wattplan.planner.control.slurm_replay import replay_on_slurm
from wattplan.planner.core.economics import static_multiplier, step_credit_j, step_credits_j
from wattplan.planner.planning import powered_floor
from wattplan.planner.sim.governor import (
    DELTA_MAX,
    WEIGHT_MIN,
    FixedDelta,
    JctGovernor,
    SignalSteer,
    accrued_s,
    projected_s,
)
from wattplan.planner.sim.metrics import captured_share, with_reference
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec, workload_floor
from wattplan.planner.sim.round_instance import workload_instance
from wattplan.planner.sim.signals import SignalClock, read_signal
from wattplan.planner.sim.state import JobState

BASELINES = ("fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow")


def _paired_context():
    """The hand cluster with an A-B pair at rates 0.9 / 0.9 on one GPU (worth pairing)."""
    ctx = hand_context()
    return dataclasses.replace(ctx, pairs=(PairSlowdown(A, B, "v100", 1, 0.9, 0.9),))


def test_floor_of_two_jobs_by_hand() -> None:
    """1000 steps of A and 300 of B on the hand cluster (Pnode/K = 50 W, Pidle 30 W).

    Energy per step alone: A at (1 GPU, 150 W) (130 + 50) / 4 = 45 J (the best of its four
    options: 56, 50 and 60 J); B at (1, 250) (180 + 50) / 2.5 = 92 J. The pair at 250 W draws
    30 + 0.9 (230 - 30) + 0.9 (180 - 30) + 50 = 395 W for 4.5 A-steps and 2.25 B-steps per
    second, worth 4.5 x 45 + 2.25 x 92 = 409.5 J alone: pair until B is done,
    t = 300 / 2.25 = 133.3 s (52,666.7 J, 600 A-steps), then A alone for 400 steps (18,000 J):
    70,666.7 J. Dual check: y_A = 45, y_B = (395 - 4.5 x 45) / 2.25 = 85.56 J/step gives
    1000 x 45 + 300 x 85.56 = 70,666.7 J.
    """
    ctx = _paired_context()
    wl = workload([hand_job("a", A, 0, 1000), hand_job("b", B, 0, 300)])
    floor = workload_floor(wl, ctx)
    assert floor.energy_j == pytest.approx(70_666.6667, rel=1e-6)
    assert floor.paired_step_share == pytest.approx((600 + 300) / 1300, rel=1e-6)
    alone = workload_floor(wl, hand_context())  # no pair entry: each job at its best alone
    assert alone.energy_j == pytest.approx(1000 * 45 + 300 * 92, rel=1e-6)


def test_powered_floor_by_hand() -> None:
    """Every node powered: 1000 steps of A from 0 s and 300 of B on the hand cluster (2 GPUs), no pair entry.

    Above idle per step: A at (1, 150) (130 - 30) / 4 = 25 J, B (180 - 30) / 2.5 = 60 J: 43,000 J. The node's idle
    draw is 100 + 2 x 30 = 160 W for the window W.

    * B from 50 s: the shortest window is 170 s (B alone at its fastest ends at 50 + 120 s; A at its fastest, 2
      GPUs at 9 steps/s, at 111 s), but the work needs more: (1000 / 4 + 300 / 2.5) / 2 = 185 GPU-s per GPU. Each
      GPU-second then costs 160 / 2 = 80 J of idle draw, and A's cheapest step with it is still (1, 150): 25 + 0.25
      x 80 = 45 J (its others 40 + 16 = 56, 27.1 + 22.9 = 50, 42.2 + 17.8 = 60 J). Floor 160 x 185 + 43,000 =
      72,600 J.
    * B from 150 s: the window is at least 150 + 120 = 270 s, more than the work needs: 160 x 270 + 43,000 =
      86,200 J.
    """
    ctx = dataclasses.replace(hand_context(), pairs=())
    for b_arrival, expected in ((50.0, 72_600.0), (150.0, 86_200.0)):
        jobs = [hand_job("a", A, 0, 1000), hand_job("b", B, b_arrival, 300)]
        instance = workload_instance(ctx, [JobState.new(j) for j in jobs])
        floor = powered_floor(instance, {j.id: j.arrival_s for j in jobs})
        assert floor.energy_j == pytest.approx(expected, rel=1e-6), floor.note
        assert "certified gap" in floor.note


def test_floor_of_a_round_counts_remaining_steps_only() -> None:
    ctx = hand_context()
    half = JobState.new(hand_job("a", A, 0, 1000))
    half.remaining_steps = 500
    assert energy_floor(workload_instance(ctx, [half])).energy_j == pytest.approx(500 * 45, rel=1e-6)


def test_certified_bound_scales_duals_into_feasibility() -> None:
    """Min 2 x0 + 3 x1 s.t. x0 + x1 >= 1: any y gives y' = min(1, 2 / y) y <= optimum 2."""
    mb = ModelBuilder()
    cols = [mb.add_col("x0", 0, INF, False), mb.add_col("x1", 0, INF, False)]
    mb.add_row(cols, [1.0, 1.0], 1.0, INF, "r")
    lm = mb.build({"energy": np.array([2.0, 3.0])})
    assert certified_bound(lm, np.array([2.0])) == pytest.approx(2.0)
    assert certified_bound(lm, np.array([5.0])) == pytest.approx(2.0)  # scaled down to dual feasibility
    assert certified_bound(lm, np.array([1.0])) == pytest.approx(1.0)  # feasible, weaker
    assert certified_bound(lm, np.array([-1.0])) == 0.0


R18 = "ResNet-18 (batch size 32)"
R50 = "ResNet-50 (batch size 128)"
TRANSFORMER = "Transformer (batch size 128)"


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_the_powered_floor_is_never_above_any_policy_on_the_loop(tmp_path: Path) -> None:
    """The powered floor bounds every loop replay's energy from below: Slurm alone, the baselines and wattplan.

    Five jobs of 1 to 4 GPUs on one V100 node, every node on. Each run is charged over the common window (to the
    longest makespan, its idle tail after its own last job), the floor is over at least that window
    (docs/design.md §10.8), so no schedule draws less; Slurm alone, the reference, captures nothing.
    """
    rows = [(R18, 20_000, 0, 1), ("A3C", 4_000, 0, 1), (R50, 3_000, 60, 4), (TRANSFORMER, 3_000, 200, 2)]
    trace = write_gavel_trace(tmp_path / "five.trace", [*rows, (R50, 2_000, 300, 2)])
    request = replace(REPLAY_REQUEST, solver="highs", time_limit_s=30.0, node_limit=100)
    spec = ReplaySpec(trace=trace, cluster="v100:8", policy_options=PolicyOptions(request=request))
    runs = with_floor(spec, [replay_on_slurm(spec, p) for p in ("slurm", *BASELINES, "wattplan")])
    for run in runs:
        s = run.summary
        assert s["completed"] == 5, run.policy
        assert 0 < s["energy_floor_kwh"] <= s["energy_common_kwh"], run.policy
        assert s["captured_share"] <= 1, run.policy
    assert runs[0].summary["captured_share"] == 0.0


def test_captured_share_and_reference_fields() -> None:
    assert captured_share(25.0, 30.0, 20.0) == pytest.approx(0.5)
    assert captured_share(30.0, 30.0, 30.0) is None
    s = with_reference(
        {"energy_kwh": 22.0, "avg_jct_s": 3300.0}, {"policy": "fifo-max", "energy_kwh": 30.0, "avg_jct_s": 3000.0}, 20.0
    )
    assert s["captured_share"] == pytest.approx(0.8)
    assert s["jct_increase"] == pytest.approx(0.1)
    assert s["energy_floor_kwh"] == 20.0


def test_accrued_time_in_system() -> None:
    arrivals = {"a": 0.0, "b": 100.0, "c": 500.0}
    finishes = {"a": 50.0, "b": None, "c": None}
    # a: 50 s (finished), b: 300 - 100 = 200 s, c not arrived yet
    assert accrued_s(arrivals, finishes, 300.0) == pytest.approx(250.0)


def test_projected_time_in_system() -> None:
    """Finished jobs count whole, unfinished ones up to ``now + r / X``.

    Jobs not arrived, or never finished by the reference, are left out of both sums.
    """
    from wattplan.planner.sim.state import JobSpec, JobState

    def state(jid: str, a: float, steps: float, left: float, finish: float | None = None) -> JobState:
        spec = JobSpec(jid, "t", a, steps, 1, (1,), 2.0)
        return JobState(spec, left, finish_s=finish)

    states = [state("a", 0, 100, 0, 70), state("b", 100, 400, 300), state("c", 500, 10, 10), state("d", 0, 10, 10)]
    ref = {"a": 50.0, "b": 400.0, "c": 600.0, "d": None}
    ours, r = projected_s(states, ref, 300.0)
    assert ours == pytest.approx(70 + (300 - 100 + 300 / 2.0))  # a: 70 s; b: 200 s so far + 150 s to go
    assert r == pytest.approx(50 + 300)
    governor = JctGovernor(ref, 0.0, projected=True)
    assert governor.delta_for_round(states, 300.0) == 0.0  # 420 s projected against 350 s: no headroom
    ahead = JctGovernor({**ref, "b": 1000.0}, 0.0, projected=True)
    assert ahead.delta_for_round(states, 300.0) > 0.0  # the reference keeps b 900 s in the system


@pytest.mark.parametrize("solver", ["cbc", "highs", "cpsat"])
def test_efficiency_objective_by_hand(solver: str) -> None:
    """One A job (1000 steps) on the hand node, T = 100 s, restart 10 s (t = 90 s), delta 0.6.

    Alone, the job keeps a 2-GPU node on for one GPU: rho = 2, so its steps are credited at
    e_A = (130 - 30 + 2 (100 / 2 + 30)) / 4 = 65 J/step (45 on full nodes). Steps, dynamic energy and excess,
    with the node's 16 kJ (100 x (100 + 2 x 30)):
    (1, 150): 360 steps, 9,000 J -> 25,000 J, excess 25,000 - 23,400 = 1,600 J;
    (1, 250): 450, 18,000 J -> 34,000 J, excess 4,750 J;
    (2, 150): 630, 17,100 J -> 33,100 J, excess 33,100 - 40,950 = -7,850 J;
    (2, 250): 810, 34,200 J -> 50,200 J, excess -2,450 J.
    P* = 0.81, target 0.324: every option qualifies. ``energy`` takes (1, 150), the least energy this round;
    ``efficiency`` takes (2, 150), which also finishes the job for the least energy: 1000 steps take
    250 s x (160 + 100) W = 65,000 J on (1, 150) and 142.9 s x (160 + 190) W = 50,000 J on (2, 150).
    """
    from wattplan.planner import planning

    ctx = hand_context()
    inst = workload_instance(ctx, [JobState.new(hand_job("a", A, 0, 1000))])
    inst = replace(inst, round=replace(inst.round, delta=0.6))
    for objective, expected, value in (("energy", (1, 150), 25_000.0), ("efficiency", (2, 150), -7_850.0)):
        req = replace(REPLAY_REQUEST, solver=solver, objective=objective, time_limit_s=30.0)
        plan = planning.plan(inst, req)
        (entry,) = plan.running()
        why = (objective, plan.round.status, plan.round.notes(), plan.round.report)
        assert (entry.gpus, entry.setting) == expected, why
        assert plan.round.objective == objective
        assert plan.round.objective_value == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("solver", ["cbc", "highs", "cpsat"])
def test_credit_weight_defers_or_buys_steps_by_hand(solver: str) -> None:
    """The hand round above with ``E - w 65 sigma``: per option (steps, energy J) and its value at w.

    (1, 150): (360, 25,000); (1, 250): (450, 34,000); (2, 150): (630, 33,100); (2, 250): (810, 50,200).
    w = 0.3 (a dirty hour): 17,980 / 25,225 / 20,815 / 34,405, the fewest steps above the target win;
    w = 2.5 (a clean hour): -33,500 / -39,125 / -69,275 / -81,425, the most steps win.
    """
    from wattplan.planner import planning

    ctx = hand_context()
    inst = workload_instance(ctx, [JobState.new(hand_job("a", A, 0, 1000))])
    for w, expected, value in ((0.3, (1, 150), 17_980.0), (2.5, (2, 250), -81_425.0)):
        weighted = replace(inst, round=replace(inst.round, delta=0.6, credit_weight=w))
        req = replace(REPLAY_REQUEST, solver=solver, objective="efficiency", time_limit_s=30.0)
        plan = planning.plan(weighted, req)
        (entry,) = plan.running()
        assert (entry.gpus, entry.setting) == expected, (w, plan.round.status, plan.round.notes())
        assert plan.round.objective_value == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize(
    ("jobs", "rho"),
    [
        (1, 2.0),  # one GPU used of the 2-GPU node it keeps on
        (2, 1.0),  # two jobs fill the node
        (3, 4.0 / 3.0),  # three GPUs used, two nodes on
        (5, 1.0),  # more than the cluster's 4 GPUs: saturated
    ],
)
def test_static_multiplier_by_hand(jobs: int, rho: float) -> None:
    """The hand cluster (2 nodes x 2 GPUs); each A job's least energy is 1 GPU at 150 W (45 J/step)."""
    ctx = hand_context(nodes=2)
    inst = workload_instance(ctx, [JobState.new(hand_job(f"a{i}", A, 0, 1000)) for i in range(jobs)])
    assert static_multiplier(inst) == pytest.approx(rho)
    full = (130 + 100 / 2) / 4  # rho = 1: the full-node best, best_step_energy_j's
    assert step_credit_j(inst, A, (1, 2), 1.0) == pytest.approx(full)
    assert step_credit_j(inst, A, (1, 2), rho) == pytest.approx((130 - 30 + rho * 80) / 4)
    assert step_credits_j(inst) == pytest.approx({f"a{i}": (130 - 30 + rho * 80) / 4 for i in range(jobs)})


def test_relative_to_trailing_day_by_hand(tmp_path: Path) -> None:
    """48 hours: the first day at 100, the second at 300 except hour 30 at 150 (gCO2/kWh)."""
    f = tmp_path / "ci.csv"
    values = [100.0] * 24 + [300.0] * 24
    values[30] = 150.0
    rows = [f"2022-06-{1 + h // 24:02d}T{h % 24:02d}:00:00Z,{v:g}" for h, v in enumerate(values)]
    f.write_text("timestamp,gco2_per_kwh\n" + "\n".join(rows) + "\n")
    clock = SignalClock(read_signal(f, "carbon"), 0.0)
    # Hour 24 against hours 0-23: 300 / 100. Hour 30 against hours 6-29: (18 x 100 + 6 x 300) / 24 = 150.
    assert clock.relative(24 * 3600.0, 3600.0) == pytest.approx(3.0)
    assert clock.relative(30 * 3600.0, 3600.0) == pytest.approx(1.0)
    steer = SignalSteer(clock, FixedDelta(0.1), 3600.0)
    assert steer.credit_weight_for_round(24 * 3600.0) == WEIGHT_MIN  # 1/3 clipped
    assert steer.delta_for_round([], 24 * 3600.0) == DELTA_MAX  # 0.1 + 0.5 x 2, clipped
    assert steer.credit_weight_for_round(30 * 3600.0) == pytest.approx(1.0)
    assert steer.delta_for_round([], 30 * 3600.0) == pytest.approx(0.1)
    # Hour 31 (300) against hours 7-30: (17 x 100 + 6 x 300 + 150) / 24 = 152.08...
    assert steer.credit_weight_for_round(31 * 3600.0) == pytest.approx((17 * 100 + 6 * 300 + 150) / 24 / 300)
