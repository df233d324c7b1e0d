"""The per-job tail bound: ``min_steps`` in the round model, the greedy plan, the validator and the replay.

The tiny instance (tests/conftest.py): T = 100 s, tau = 10 s; job ``a`` (type A, 1000 steps, waiting,
1 or 2 GPUs) makes, after its 10 s restart, 4 x 90 = 360 steps on 1 GPU at 150 W, 450 at 250 W,
630 on 2 GPUs at 150 W and 810 at 250 W.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import tiny_instance_doc
from tests.helpers.sim_slurm import x
from tests.sim_helpers import NO_SLURM_WAITS, A, B, hand_context, hand_job, write_gavel_trace
from wattplan.formulations.backends import available_backends
from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import (
    TailBound,
    deadline_cost_j,
    efficient_steps_per_s,
    fastest_steps_per_s,
    p95_limits,
)

EXACT = dict(time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=False)


def _tiny(objective: str, delta: float, min_steps: float) -> Instance:
    doc = tiny_instance_doc()
    doc["round"].update(objective=objective, delta=delta)
    doc["jobs"][0]["min_steps"] = min_steps
    return parse_instance(doc)


def _run(plan, job_id: str):
    return next(j for j in plan.jobs if j.job_id == job_id)


@pytest.mark.parametrize("solver", available_backends())
def test_a_bound_job_runs_though_least_energy_would_make_it_wait(solver: str) -> None:
    free = planning.plan(_tiny("energy", 0.9, 0.0), PlanRequest(solver=solver, **EXACT))
    assert _run(free, "a").state == "wait"  # least energy within delta 0.9: a waits
    inst = _tiny("energy", 0.9, 300.0)
    bound = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
    assert validate_plan(inst, bound) == []
    a = _run(bound, "a")
    assert a.state == "run" and a.steps == pytest.approx(360.0)  # 1 GPU at 150 W: the least energy that meets 300


@pytest.mark.parametrize("solver", available_backends())
def test_a_bound_job_gets_an_option_with_enough_steps(solver: str) -> None:
    """Only 2 GPUs at 250 W gives a 700 steps (810); hand-computed energy 66,700 J (docstring + b and c at 150 W)."""
    inst = _tiny("efficiency", 0.9, 700.0)
    plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
    a = _run(plan, "a")
    assert (a.gpus, a.setting, a.steps) == (2, 250, pytest.approx(810.0))
    assert plan.round.energy_j == pytest.approx(66_700.0)
    assert validate_plan(inst, plan) == []


def test_greedy_runs_bound_jobs_first() -> None:
    doc = tiny_instance_doc()
    doc["gpu_types"][0].update(nodes=1, gpus_per_node=1)
    doc["jobs"] = [j for j in doc["jobs"] if j["id"] in ("a", "c")]
    free = parse_instance(doc)
    assert [a.job_ids for a in greedy_allocations(free)] == [("c",)]  # c finishes: more progress per joule
    doc["jobs"][0]["min_steps"] = 400.0
    bound = parse_instance(doc)
    (only,) = greedy_allocations(bound)
    assert only.job_ids == ("a",) and only.setting == 250  # 450 steps; 150 W gives 360


def test_min_steps_round_trips_and_is_checked() -> None:
    inst = _tiny("progress", 0.03, 250.0)
    doc = instance_to_doc(inst)
    assert doc["jobs"][0]["min_steps"] == 250.0 and "min_steps" not in doc["jobs"][1]
    assert parse_instance(doc).jobs[0].min_steps == 250.0
    from wattplan.planner.contracts.instance_checks import instance_problems

    doc["jobs"][0]["min_steps"] = 5000.0
    assert "min-steps-above-remaining" in {p.code for p in instance_problems(doc)}


def test_min_steps_from_the_deadline() -> None:
    """Hand cluster: A's fastest rate is 9 steps/s (2 GPUs at 250 W); T = 100 s, tau = 10 s.

    a arrived at 0, the reference finished it at 1000 s: D = 0 + 1.1 x 1000 = 1100 s. At t = 500 s with
    R = 5000 steps left: sigma >= 5000 - 9 (1100 - 500 - 100 - 10) = 590 steps; 2 GPUs at 250 W give
    810 (restart), so the bound is 590. b (reference 10,000 s) is far from its deadline: no bound.
    """
    ctx = hand_context(duration_s=100.0, restart_s=10.0)
    a = JobState.new(hand_job("a", A, 0.0, 10_000.0))
    a.remaining_steps = 5000.0
    b = JobState.new(hand_job("b", B, 0.0, 100.0))
    tail = TailBound({"a": 1000.0, "b": 10_000.0}, 0.10, pace="fastest")  # no floor: each job's own reference JCT
    assert fastest_steps_per_s(ctx, a) == 9.0
    # Least n (P + 100 / 2) / X: 1 GPU at 150 W, 180 / 4 = 45 J (250 W: 56, 2 GPUs: 50 and 60).
    assert efficient_steps_per_s(ctx, a) == 4.0
    assert tail.min_steps(ctx, [a, b], 500.0, None) == {"a": pytest.approx(590.0)}
    assert tail.min_steps(ctx, [a, b], 500.0, 1e6) == {}  # no bound under an energy budget
    # Past the point where even full speed is late: the bound is the most the job can make (x 0.999999).
    assert tail.min_steps(ctx, [a], 1000.0, None)["a"] == pytest.approx(810.0 * 0.999999)
    # Steady pace: at 500 s with 5000 steps left, r = 5000 / (1100 - 500 - 10) = 8.47 steps/s > 4 (the
    # least-energy rate): bound to 8.47 x 90 = 763 steps. With 2000 left, r = 3.39 < 4: free.
    steady = TailBound({"a": 1000.0, "b": 10_000.0}, 0.10, pace="steady")
    a.remaining_steps = 5000.0
    assert steady.min_steps(ctx, [a, b], 500.0, None) == {"a": pytest.approx(5000 / 590 * 90)}
    a.remaining_steps = 2000.0
    assert steady.min_steps(ctx, [a], 500.0, None) == {}


def test_bound_jobs_are_admitted_least_slack_first_while_they_fit() -> None:
    """One node of 2 GPUs: two late A jobs each need 2 GPUs (only 2 x 250 W gives 810): the later deadline waits."""
    ctx = hand_context(duration_s=100.0, restart_s=10.0)
    early, late = (JobState.new(hand_job(j, A, 0.0, 10_000.0)) for j in ("early", "late"))
    tail = TailBound({"early": 900.0, "late": 950.0}, 0.0, pace="fastest")
    assert set(tail.min_steps(ctx, [late, early], 800.0, None)) == {"early"}


def test_a_replay_with_a_tail_bound_keeps_the_long_job_near_its_deadline(tmp_path: Path) -> None:
    """Least energy with delta 0.9 makes the long job wait behind short ones; the bound keeps it near its deadline.

    The scheduler loop on the simulated Slurm, one V100 node of 8 GPUs, ``T`` = 360 s, ``tau`` = what a requeue
    costs there. Five 1-GPU jobs at 0: four ResNet-18 of 3,000 steps, one ResNet-50 of 8,000. Slurm alone, the
    reference, starts all five at once: ``J = 31 + S / X`` (launch and load, then the steps at the top setting).
    With ``N = 5``, ``k = floor(0.95 x 4) = 3``: all ``k + 2 = 5`` jobs are bound, the long one (the longest
    reference JCT) to ``D = 1.1 J_long``, the short ones to ``1.1 J_short`` (rank ``k`` of the JCTs).

    The bound is set round by round: in a round from which a job would miss ``D`` at full speed it must make the
    steps that keep it on time, capped at what it can make in the round, so it may end up to one round after ``D``;
    the free replay leaves the long job waiting and slow, more than a round late.
    """
    short, long_ = "ResNet-18 (batch size 32)", "ResNet-50 (batch size 128)"
    trace = write_gavel_trace(tmp_path / "jobs.trace", [(long_, 8000, 0, 1)] + [(short, 3000, 0, 1)] * 4)
    setup = SimulatedCluster(load_s=30.0, **NO_SLURM_WAITS)
    rules = RoundRules(duration_s=360.0, restart_s=setup.restart_cost_s, objective="energy", delta=0.9)
    options = PolicyOptions(request=PlanRequest(solver="highs", **EXACT))
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("wattplan",), rules=rules, policy_options=options)
    j_long, j_short = 31.0 + 8000 / x(long_), 31.0 + 3000 / x(short)
    deadline = {"j0": 1.1 * j_long, **{f"j{i}": 1.1 * j_short for i in range(1, 5)}}
    alone = {j["job_id"]: j["jct_s"] for j in replay_on_slurm(spec, "slurm", setup).jobs}
    assert alone == pytest.approx({j: y / 1.1 for j, y in deadline.items()})
    free = {j["job_id"]: j["finish_s"] for j in replay_on_slurm(spec, "wattplan", setup).jobs}
    assert free["j0"] > deadline["j0"] + rules.duration_s, "the test needs a free replay that leaves j0 late"
    bounded = replay_on_slurm(replace(spec, tail_bound=0.10), "wattplan", setup)
    assert bounded.summary["completed"] == 5
    for job in bounded.jobs:
        assert job["finish_s"] <= deadline[job["job_id"]] + rules.duration_s, job


def test_only_the_jobs_the_p95_reads_get_deadlines() -> None:
    """21 jobs: k = floor(0.95 x 20) = 19, so 20 jobs get (1 + x) J_(19) = 220 s, one gets (1 + x) J_(20), none free."""
    finish = {f"j{i}": float(10 * (i + 1)) for i in range(21)}  # JCTs 10 .. 210 s, all arrived at 0
    tail = TailBound.from_reference(finish, dict.fromkeys(finish, 0.0), 0.1)
    assert tail.floor_jct_s == 200.0 and tail.free_jobs == frozenset()
    short, longest = JobState.new(hand_job("j0", A, 0.0, 10.0)), JobState.new(hand_job("j20", A, 0.0, 10.0))
    assert tail.deadline_s(short) == pytest.approx(220.0) and tail.deadline_s(longest) == pytest.approx(231.0)


def test_the_jobs_whose_deadline_costs_most_are_free() -> None:
    """51 jobs: k = 47, so m = 51 - 49 = 2 free; the two dearest deadlines go, whatever their reference rank."""
    finish = {f"j{i:02d}": float(100 + i) for i in range(51)}
    cost = {"j03": 5.0, "j40": 9.0, "j50": 1.0}
    tail = TailBound.from_reference(
        finish, dict.fromkeys(finish, 0.0), 0.1, deadline_cost=lambda j, _: cost.get(j, 0.0)
    )
    assert tail.free_jobs == {"j03", "j40"}
    assert tail.deadline_s(JobState.new(hand_job("j03", A, 0.0, 10.0))) is None
    # the bound job with the longest reference JCT (j50) gets J_(48) = 148 s, the others J_(47) = 147 s
    assert tail.deadline_s(JobState.new(hand_job("j50", A, 0.0, 10.0))) == pytest.approx(1.1 * 148.0)
    assert tail.deadline_s(JobState.new(hand_job("j49", A, 0.0, 10.0))) == pytest.approx(1.1 * 147.0)
    plain = TailBound.from_reference(finish, dict.fromkeys(finish, 0.0), 0.1)
    assert plain.free_jobs == {"j49", "j50"}  # without costs: the reference's slowest


def test_deadline_cost_is_zero_when_the_least_energy_option_is_in_time() -> None:
    """Job a (1000 steps): 1 GPU at 150 W is its least energy and makes 4 steps/s, so 250 s costs nothing."""
    ctx = hand_context(duration_s=100.0, restart_s=10.0)
    a = JobState.new(hand_job("a", A, 0.0, 1000.0))
    assert deadline_cost_j(ctx, a, 250.0) == 0.0
    assert deadline_cost_j(ctx, a, 100.0) > 0.0  # 10 steps/s needed: only a dearer option is that fast


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(1.0, 1e5), min_size=1, max_size=60),
    st.lists(st.floats(0.0, 1.0), min_size=60, max_size=60),
    st.lists(st.floats(0.0, 10.0), min_size=60, max_size=60),
    st.sampled_from([0.0, 0.1, 0.5]),
)
def test_meeting_every_deadline_bounds_the_p95(
    jcts: list[float], shares: list[float], costs: list[float], x: float
) -> None:
    """Bound jobs on time and free jobs as late as they like: p95 <= (1 + x) x the reference's (module's proof)."""
    finish = {f"j{i}": j for i, j in enumerate(jcts)}
    cost = {f"j{i}": c for i, c in enumerate(costs)}
    tail = TailBound.from_reference(finish, dict.fromkeys(finish, 0.0), x, deadline_cost=lambda j, _: cost[j])
    ours = []
    for i, share in enumerate(shares[: len(jcts)]):
        d = tail.deadline_s(JobState.new(hand_job(f"j{i}", A, 0.0, 10.0)))
        ours.append(1e12 * (1 + share) if d is None else share * d)
    assert np.percentile(ours, 95) <= (1 + x) * np.percentile(jcts, 95) * (1 + 1e-12)


def test_admitted_bound_jobs_fit_whatever_types_they_choose() -> None:
    """Two GPU types of 2 GPUs; A fits on either. The first bound job reserves room on both, so the second waits."""
    import dataclasses

    ctx = hand_context(duration_s=100.0, restart_s=10.0)
    other = dataclasses.replace(ctx.gpu_types[0], name="v100b")
    profiles = {
        A: ctx.profiles_by_type[A] + tuple(dataclasses.replace(p, gpu_type="v100b") for p in ctx.profiles_by_type[A])
    }
    two = dataclasses.replace(ctx, gpu_types=(ctx.gpu_types[0], other), profiles_by_type=profiles)
    early, late = (JobState.new(hand_job(j, A, 0.0, 10_000.0)) for j in ("early", "late"))
    tail = TailBound({"early": 900.0, "late": 950.0}, 0.0)
    assert set(tail.min_steps(two, [late, early], 800.0, None)) == {"early"}


@given(
    least=st.lists(st.floats(1.0, 100.0), min_size=1, max_size=60),
    extra=st.lists(st.floats(0.0, 200.0), min_size=60, max_size=60),
    scale=st.one_of(st.just(1.0), st.floats(0.5, 2.0)),
)
@settings(max_examples=200, deadline=None)
def test_a_p95_within_the_limit_meets_both_necessary_counts(
    least: list[float], extra: list[float], scale: float
) -> None:
    """JCTs ``J_j >= m_j`` with numpy's p95 at most ``P``: at most ``late_p`` above ``P``, ``late_b`` above ``B``."""
    jct = [m + e for m, e in zip(least, extra, strict=False)]
    limit = scale * float(np.percentile(jct, 95))
    lim = p95_limits(len(jct), limit, least)
    if float(np.percentile(jct, 95)) <= limit:
        assert sum(j > lim.within_p_s * (1 + 1e-12) for j in jct) <= lim.late_p
        assert sum(j > lim.within_b_s * (1 + 1e-12) for j in jct) <= lim.late_b


def test_p95_limits_by_hand() -> None:
    """51 jobs: k = 47, f = 0.5; P = 100, m_(47) = 40 gives B = (100 - 20) / 0.5 = 160; 20 jobs: f = 0.05."""
    lim = p95_limits(51, 100.0, [40.0] * 51)
    assert (lim.late_p, lim.late_b) == (3, 2) and lim.within_b_s == pytest.approx(160.0)
    assert p95_limits(21, 100.0, [10.0] * 21).within_b_s == float("inf")  # 0.95 x 20 = 19: one rank, f = 0
    tight = [40.0] * 48 + [160.0] * 3  # J_(47) = m_(47) = 40 and J_(48) = B: the p95 is exactly P = 100
    assert float(np.percentile(tight, 95)) == pytest.approx(100.0)
    assert sum(j > lim.within_b_s * (1 + 1e-12) for j in tight) <= lim.late_b  # 0.9 B would count 3
