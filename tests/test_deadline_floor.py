"""The deadline floor by hand (formulations/deadline_floor.py).

The hand cluster (tests/sim_helpers.py): one node of 2 GPUs, node base 100 W, so each GPU carries 50 W of it.
Job type A's exclusive options, power ``n (P + 50)`` (W) and rate (steps/s): (1 GPU, 150 W) 180 W at 4,
(1, 250) 280 W at 5, (2, 150) 350 W at 7, (2, 250) 540 W at 9. The least energy per step is 45 J on (1, 150).
A deadline of 200 s for 1,000 steps needs 5 steps/s on average: the cheapest mix lies on the lower convex hull of
(rate, power), 2/3 of the time on (1, 150) and 1/3 on (2, 150): 200 s x (180 x 2/3 + 350 / 3) W = 47,333.3 J.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim_helpers import A, B, hand_context, hand_job, write_gavel_trace
from wattplan.planner import planning
from wattplan.planner.contracts.domain import PairSlowdown
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import workload_instance
from wattplan.planner.sim.state import JobState

MIXED_J = 200.0 * (180.0 * 2.0 / 3.0 + 350.0 / 3.0)


def _instance(*steps: float):
    ctx = hand_context()
    return workload_instance(ctx, [JobState.new(hand_job(f"a{i}", A, 0, s)) for i, s in enumerate(steps)])


def test_no_window_is_the_least_energy_per_step() -> None:
    f = planning.deadline_floor(_instance(1000), {})
    assert f.certified and f.energy_j == pytest.approx(45_000.0, rel=1e-6)


def test_a_window_forces_the_cheapest_mix_that_is_fast_enough() -> None:
    f = planning.deadline_floor(_instance(1000), {"a0": 200.0})
    assert f.certified and f.energy_j == pytest.approx(MIXED_J, rel=1e-6)


def test_a_window_no_option_can_meet_is_infeasible() -> None:
    f = planning.deadline_floor(_instance(1000), {"a0": 100.0})  # 10 steps/s: the fastest option makes 9
    assert f.energy_j is None and "no method found a schedule" in f.note
    free = planning.deadline_floor(_instance(1000, 1000), {"a0": 100.0, "a1": 100.0}, free_jobs=1)
    assert free.energy_j is None and "infeasible" in free.note


def test_the_sum_of_jcts_bounds_the_time_too() -> None:
    f = planning.deadline_floor(_instance(1000), {}, processing_sum_s=200.0)
    assert f.energy_j == pytest.approx(MIXED_J, rel=1e-6)


def test_a_free_job_drops_the_dearest_window() -> None:
    """Two A jobs (A does not pair with A here): windows 200 s and 1,000 s; one free frees the 200 s one."""
    inst = _instance(1000, 1000)
    both = planning.deadline_floor(inst, {"a0": 200.0, "a1": 1000.0})
    one_free = planning.deadline_floor(inst, {"a0": 200.0, "a1": 1000.0}, free_jobs=1)
    assert both.energy_j == pytest.approx(MIXED_J + 45_000.0, rel=1e-6)
    assert not one_free.certified and one_free.energy_j == pytest.approx(90_000.0, rel=1e-6)


def test_the_bound_is_never_above_a_schedule_built_by_hand() -> None:
    """Job a0 on (2, 150) for 1000/7 s meets a 150 s window for 50,000 J: the bound may not exceed that."""
    f = planning.deadline_floor(_instance(1000), {"a0": 150.0})
    assert f.energy_j is not None and f.energy_j <= 350.0 * 1000.0 / 7.0 * (1 + 1e-9)


def test_capacity_in_a_slot_by_hand() -> None:
    """Two A jobs, 1,000 steps each, both within [0, 200 s] on the node's 2 GPUs: 400 GPU-seconds for 2,000 steps.

    Only (1 GPU, 250 W) needs as little as 0.2 GPU-s per step, so both jobs run it for 200 s: 2 x 200 x 280 J.
    Without the capacity rows each job takes the cheaper mix (47,333.3 J) and the two need 533 GPU-seconds.
    """
    inst = _instance(1000, 1000)
    windows = {"a0": 200.0, "a1": 200.0}
    arrivals = {"a0": 0.0, "a1": 0.0}
    free = planning.deadline_floor(inst, windows)
    slotted = planning.deadline_floor(inst, windows, arrivals_s=arrivals, slot_s=200.0)
    assert free.energy_j == pytest.approx(2 * MIXED_J, rel=1e-6)
    assert free.paired_step_share == 0.0  # A does not pair with A on the hand node
    assert slotted.certified and slotted.energy_j == pytest.approx(2 * 200.0 * 280.0, rel=1e-6)
    wide = planning.deadline_floor(inst, windows, arrivals_s=arrivals, slot_s=1000.0)  # one slot of 2,000 GPU-s
    assert wide.energy_j == pytest.approx(2 * MIXED_J, rel=1e-6)  # coarser slots relax more
    one_free = planning.deadline_floor(inst, windows, free_jobs=1, arrivals_s=arrivals, slot_s=1000.0)
    assert one_free.energy_j == pytest.approx(MIXED_J + 45_000.0, rel=1e-6)  # 2,000 GPU-s: capacity is slack


def test_the_paired_share_of_an_optimum_with_a_pair_by_hand() -> None:
    """A and B share one GPU at 250 W with rates 0.95 and 0.9 (not the hand pair's 0.8 and 0.6).

    The pair draws 30 + 0.95 (230 - 30) + 0.9 (180 - 30) + 50 = 405 W for 4.75 A and 2.25 B steps/s; alone those
    steps cost 4.75 x 45 + 2.25 x 92 = 420.75 W, so the pair serves all 450 B steps in 200 s (and 950 A steps), and
    the other 1,000 A steps run alone at 45 J: 81,000 + 45,000 = 126,000 J (duals 45 and 85 J/step prove it).
    1,400 of the 2,400 steps are paired.
    """
    ctx = dataclasses.replace(hand_context(), pairs=(PairSlowdown(A, B, "v100", 1, 0.95, 0.9),))
    jobs = [JobState.new(hand_job("a0", A, 0, 1950)), JobState.new(hand_job("b0", B, 0, 450))]
    f = planning.deadline_floor(workload_instance(ctx, jobs), {})
    assert f.certified and f.energy_j == pytest.approx(126_000.0, rel=1e-6)
    assert f.paired_step_share == pytest.approx(1400.0 / 2400.0, rel=1e-6)


def test_whole_nodes_charge_a_lone_job_its_node_by_hand() -> None:
    """One A job, 1,000 steps, 1,000 s window, alone on the 2-GPU node (static 100 + 2 x 30 = 160 W).

    Per GPU's share of the node its best is 45,000 J on (1, 150). With the node on while it runs, each option
    costs ``(160 + dynamic) 1000 / X``: (1, 150) 260 W for 250 s = 65,000 J, (1, 250) 72,000, (2, 150) 350 W for
    1000/7 s = 50,000, (2, 250) 60,000: the bound is 50,000 J. Two such jobs fill the node (1 GPU each at the
    same time): 2 x 45,000 J, by the node too.
    """
    one = _instance(1000)
    arrivals = {"a0": 0.0, "a1": 0.0}
    share = planning.deadline_floor(one, {"a0": 1000.0}, arrivals_s=arrivals, slot_s=1000.0)
    nodes = planning.deadline_floor(one, {"a0": 1000.0}, arrivals_s=arrivals, slot_s=1000.0, whole_nodes=True)
    assert share.energy_j == pytest.approx(45_000.0, rel=1e-6)
    assert nodes.certified and nodes.energy_j == pytest.approx(50_000.0, rel=1e-6)
    assert nodes.slot_kwh == pytest.approx((50_000.0 / 3.6e6, 0.0), rel=1e-6)  # one slot and the unused overflow
    no_deadline = planning.deadline_floor(one, {}, arrivals_s=arrivals, slot_s=100.0, whole_nodes=True)
    assert no_deadline.energy_j == pytest.approx(50_000.0, rel=1e-6)  # the overflow slot charges the node too
    two = _instance(1000, 1000)
    both = planning.deadline_floor(
        two, {"a0": 1000.0, "a1": 1000.0}, arrivals_s=arrivals, slot_s=500.0, whole_nodes=True
    )
    assert both.energy_j == pytest.approx(90_000.0, rel=1e-6)


LOOP_TYPES = ("ResNet-18 (batch size 32)", "ResNet-50 (batch size 128)", "Transformer (batch size 128)")
loop_rows = st.lists(
    st.tuples(st.sampled_from(LOOP_TYPES), st.integers(200, 3000), st.integers(0, 600), st.sampled_from([1, 2, 4])),
    min_size=1,
    max_size=5,
)
"""Rows ``(job type, steps, arrival s, requested GPUs)`` of a Gavel trace of shipped job types."""


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=loop_rows, nodes=st.integers(1, 2), slot_s=st.sampled_from([100.0, 450.0]))
def test_whole_nodes_never_above_a_replay_that_keeps_the_windows(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int, int, int]], nodes: int, slot_s: float
) -> None:
    """Each baseline's replay on the simulated Slurm keeps windows set to its own JCTs: its energy bounds the floor's.

    The scheduler loop (and Slurm alone) finish every job within its JCT, drawing every node's and GPU's power over
    the whole window; the floor charges a node only while it holds work, so it may not exceed the replay's energy.
    """
    trace = write_gavel_trace(tmp_path_factory.mktemp("floor") / "jobs.trace", rows)
    spec = ReplaySpec(trace=trace, cluster=f"v100:{8 * nodes}")
    workload, ctx = prepare(spec)
    inst = workload_instance(ctx, [JobState.new(s) for s in workload.jobs])
    arrivals = {s.id: s.arrival_s for s in workload.jobs}
    for name in ("slurm", "fifo-max", "zeus", "eaco", "powerflow"):
        result = replay_on_slurm(spec, name, SimulatedCluster(load_s=30.0), prepared=(workload, ctx))
        windows = {j["job_id"]: j["jct_s"] for j in result.jobs}
        assert result.summary["completed"] == len(rows) and None not in windows.values(), name
        energy = result.summary["energy_kwh"] * 3.6e6
        f = planning.deadline_floor(inst, windows, arrivals_s=arrivals, slot_s=slot_s, whole_nodes=True)
        assert f.certified and f.energy_j is not None and f.energy_j <= energy * (1 + 1e-9), name
        # every job misses half its JCT, none its JCT: the replay keeps these outer windows
        half = {j: w / 2.0 for j, w in windows.items()}
        tiers = planning.deadline_floor(
            inst, half, len(half), None, None, arrivals, slot_s, True, outer_windows_s=windows, outer_late=0
        )
        assert tiers.energy_j is not None and tiers.energy_j <= energy * (1 + 1e-6), name


def test_outer_windows_by_hand() -> None:
    """Three A jobs of 1,000 steps, windows 200 s of which two may be missed, outer windows 220 s (or hard windows).

    Within ``V`` seconds the cheapest mix runs ``x`` of the time on (2, 150) at 7 steps/s and the rest on (1, 150) at
    4 (the lower hull), ``4 + 3x = 1000 / V``: 200 s costs 47,333.3 J, 220 s (``x = 2/11``) 220 (180 + 170 x) =
    46,400 J, no window 45,000 J. One outer window missed: 47,333.3 + 46,400 + 45,000; none: 47,333.3 + 2 x 46,400;
    no outer windows: 47,333.3 + 2 x 45,000. Capacity is slack with one slot of 1,000 s, so the timeline agrees.
    """
    inst = _instance(1000, 1000, 1000)
    inner = dict.fromkeys(("a0", "a1", "a2"), 200.0)
    outer = dict.fromkeys(("a0", "a1", "a2"), 220.0)
    one_late = planning.deadline_floor(inst, inner, 2, outer_windows_s=outer, outer_late=1)
    none_late = planning.deadline_floor(inst, inner, 2, outer_windows_s=outer, outer_late=0)
    without = planning.deadline_floor(inst, inner, 2)
    assert not one_late.certified and one_late.energy_j == pytest.approx(MIXED_J + 46_400.0 + 45_000.0, rel=1e-6)
    assert none_late.energy_j == pytest.approx(MIXED_J + 2 * 46_400.0, rel=1e-6)
    assert without.energy_j == pytest.approx(MIXED_J + 90_000.0, rel=1e-6)
    arrivals = dict.fromkeys(("a0", "a1", "a2"), 0.0)
    slotted = planning.deadline_floor(
        inst, inner, 2, arrivals_s=arrivals, slot_s=1000.0, outer_windows_s=outer, outer_late=1
    )
    assert slotted.energy_j == pytest.approx(MIXED_J + 46_400.0 + 45_000.0, rel=1e-6)
    hard = planning.deadline_floor(inst, inner, 2, hard=("a0", "a1"))  # only a2 may go free
    assert not hard.certified and hard.energy_j == pytest.approx(2 * MIXED_J + 45_000.0, rel=1e-6)
    all_hard = planning.deadline_floor(inst, inner, 2, arrivals_s=arrivals, slot_s=1000.0, hard=tuple(inner))
    assert all_hard.certified and all_hard.energy_j == pytest.approx(3 * MIXED_J, rel=1e-6)  # an LP: no binaries
    with pytest.raises(ValueError, match="free_jobs > 0"):
        planning.deadline_floor(inst, inner, 0, outer_windows_s=outer, outer_late=1)
    with pytest.raises(ValueError, match="job a0"):
        planning.deadline_floor(inst, inner, 2, outer_windows_s={"a0": 100.0}, outer_late=1)


def test_fastest_rates_over_the_floor_columns() -> None:
    """A's fastest option is 2 GPUs at 250 W, 9 steps/s (pairs of A with A are not columns)."""
    assert planning.deadline_floor_rates(_instance(1000, 500)) == {"a0": 9.0, "a1": 9.0}


def _by_job(max_slowdown: float, steps: float, gpus: int):
    """One A job of ``steps`` requesting ``gpus``, as the by-job mode may run it at ``max_slowdown``."""
    ctx = hand_context(slurm_starts=True, max_slowdown=max_slowdown)
    return workload_instance(ctx, [JobState.new(hand_job("a0", A, 0, steps, gpus))], by_job=True)


@pytest.mark.parametrize(
    ("max_slowdown", "gpus", "energy_j"),
    [
        # request 1 GPU: counts (1,); full speed 5 steps/s, so 10% leaves only (1, 250): 1000/5 s x 280 W
        (0.1, 1, 56_000.0),
        # 30%: rate floor 5/1.3 = 3.85, (1, 150) at 4 steps/s is allowed again: 45 J a step
        (0.3, 1, 45_000.0),
        # request 2 GPUs: counts (1, 2), full speed 9; 10% leaves only (2, 250): 1000/9 s x 540 W
        (0.1, 2, 60_000.0),
        # 100%: rate floor 4.5; (2, 150) at 7 for 350 W is the cheapest (50 J a step), (1, 150) at 4 is out
        (1.0, 2, 50_000.0),
    ],
)
def test_the_by_job_options_by_hand(max_slowdown: float, gpus: int, energy_j: float) -> None:
    """The floor over what the by-job mode may run: counts up to the request, rates within the slowdown limit."""
    inst = _by_job(max_slowdown, 1000, gpus)
    assert inst.jobs[0].gpus == ((1,) if gpus == 1 else (1, 2))
    f = planning.deadline_floor(inst, {})
    assert f.certified and f.energy_j == pytest.approx(energy_j, rel=1e-6)
    unlimited = planning.deadline_floor(
        workload_instance(hand_context(), [JobState.new(hand_job("a0", A, 0, 1000, gpus))]), {}
    )
    assert unlimited.energy_j == pytest.approx(45_000.0, rel=1e-6)  # without the limits (1, 150) is the cheapest


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=loop_rows, slowdown=st.sampled_from([0.05, 0.1]))
def test_the_by_job_floor_is_never_above_a_by_job_replay(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int, int, int]], slowdown: float
) -> None:
    """The by-job mode (the agent's default, replayed on the simulated Slurm) never spends less than its floor."""
    trace = write_gavel_trace(tmp_path_factory.mktemp("byjob") / "jobs.trace", rows)
    rules = dataclasses.replace(RoundRules(), slurm_starts=True, max_slowdown=slowdown, objective="energy", delta=0.9)
    spec = ReplaySpec(trace=trace, cluster="v100:8", rules=rules)
    workload, ctx = prepare(spec)
    result = replay_on_slurm(spec, "wattplan", SimulatedCluster(load_s=30.0), prepared=(workload, ctx))
    assert result.summary["completed"] == len(rows)
    inst = workload_instance(ctx.real, [JobState.new(s) for s in workload.jobs], by_job=True)
    assert all(
        j.min_rate > 0 and max(j.gpus) <= s.requested_gpus for j, s in zip(inst.jobs, workload.jobs, strict=True)
    )
    f = planning.deadline_floor(inst, {})
    assert f.certified and f.energy_j is not None
    assert f.energy_j <= result.summary["energy_kwh"] * 3.6e6 * (1 + 1e-9)
