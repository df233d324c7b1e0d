"""The slowdown limit (``--max-slowdown``, each job's ``min_rate``) and the Slurm start rule (``--slurm-starts``).

Hand cluster (:mod:`tests.sim_helpers`): nodes of 2 V100-like GPUs; job type A runs 4 / 5 steps/s on 1 GPU at
150 / 250 W and 7 / 9 on 2; B runs 2.5 on 1 GPU at 250 W; an A-B pair on 1 GPU slows A to 0.8 and B to 0.6.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import tiny_instance_doc
from tests.helpers.sim_slurm import x
from tests.sim_helpers import A, B, hand_context, hand_job, write_gavel_trace
from wattplan.formulations.backends import available_backends
from wattplan.formulations.options import enumerate_options
from wattplan.planner import planning
from wattplan.planner.contracts.domain import CurrentConfig, NodeGpus
from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.round_instance import round_instance, workload_instance
from wattplan.planner.sim.state import JobState

EXACT = dict(time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=False)


def _running(job_id: str, job_type: str, arrival: float, gpus: int, setting: int, node: int, first: int, req: int):
    """A job of the hand cluster running on ``gpus`` GPUs of node ``node`` from index ``first``."""
    state = JobState.new(hand_job(job_id, job_type, arrival, 10_000.0, req))
    place = (NodeGpus(f"v100-{node}", tuple(range(first, first + gpus))),)
    state.current = CurrentConfig("v100", gpus, setting, None, place)
    return state


def test_rate_floor_by_hand() -> None:
    """A slowdown limit of 25%: A asking 2 GPUs keeps 9 / 1.25 = 7.2 steps/s (only 2 GPUs at 250 W), asking 1 4."""
    ctx = hand_context(nodes=2, max_slowdown=0.25)
    two, one = JobState.new(hand_job("two", A, 0.0, 1000.0, 2)), JobState.new(hand_job("one", A, 0.0, 1000.0, 1))
    b = JobState.new(hand_job("b", B, 0.0, 1000.0, 1))
    inst = round_instance(ctx, 0, 0.0, [two, one, b], None)
    assert [j.min_rate for j in inst.jobs] == pytest.approx([7.2, 4.0, 2.0])
    options = enumerate_options(inst)
    kept = {(inst.jobs[o.job].id, o.gpus, o.setting) for o in options.exclusive}
    assert {(n, s) for j, n, s in kept if j == "two"} == {(2, 250)}
    assert {(n, s) for j, n, s in kept if j == "one"} == {(1, 150), (1, 250), (2, 150), (2, 250)}
    # In a pair B runs 0.6 x 2.5 = 1.5 < 2 steps/s: no pair side of B is left, so no pair at all.
    assert not options.pair_sides
    # The floor is the instance's, not the energy floor's, and it round-trips through the file.
    assert all(j.min_rate == 0.0 for j in workload_instance(ctx, [two, one, b]).jobs)
    assert parse_instance(instance_to_doc(inst)).jobs[0].min_rate == pytest.approx(7.2)
    assert all(j.min_rate == 0.0 for j in round_instance(hand_context(nodes=2), 0, 0.0, [two], None).jobs)


@pytest.mark.parametrize("solver", available_backends())
def test_every_backend_keeps_the_rate_floor(solver: str) -> None:
    """Least energy runs job a on 1 GPU at 150 W (360 steps); a floor of 8 steps/s leaves only 2 GPUs at 250 W."""
    doc = tiny_instance_doc()
    doc["round"].update(objective="energy", delta=0.9)
    doc["jobs"][0].update(min_steps=1.0)
    free = planning.plan(parse_instance(doc), PlanRequest(solver=solver, **EXACT))
    a = next(e for e in free.jobs if e.job_id == "a")
    assert (a.gpus, a.setting) == (1, 150)
    doc["jobs"][0].update(min_rate=8.0)
    inst = parse_instance(doc)
    plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
    a = next(e for e in plan.jobs if e.job_id == "a")
    assert (a.state, a.gpus, a.setting) == ("run", 2, 250) and a.steps_per_s >= 8.0
    assert validate_plan(inst, plan) == []


def test_the_start_rule_is_slurms_first_fit() -> None:
    """Two nodes of 2 GPUs, r holding 1 GPU of node 0: the jobs Slurm's first fit starts, in arrival order.

    q1 (2 GPUs) takes node 1, q2 (2) finds no node and blocks every later 2-GPU job (q3), q4 (1) backfills node
    0's free GPU, q5 (1) finds none.
    """
    ctx = hand_context(nodes=2, slurm_starts=True)
    r = _running("r", A, 0.0, 1, 250, 0, 0, 1)
    queued = [JobState.new(hand_job(f"q{i}", A, float(i), 1000.0, n)) for i, n in ((1, 2), (2, 2), (4, 1), (5, 1))]
    q3 = JobState.new(hand_job("q3", A, 3.0, 1000.0, 2))
    inst = round_instance(ctx, 0, 10.0, [r, *queued[:2], q3, *queued[2:]], None)
    must = {j.id: j.min_steps for j in inst.jobs if j.min_steps > 0}
    assert set(must) == {"r", "q1", "q4"}
    # No floor: min_steps is 1e-9 of the steps left, so any option of the job meets it.
    assert must["q1"] == pytest.approx(1e-6)
    # Under the rule a job never gets more GPUs than it asked for.
    assert {j.id: j.gpus for j in inst.jobs}["q4"] == (1,)
    plan = planning.plan(inst, PlanRequest(solver="highs", **EXACT))
    assert validate_plan(inst, plan) == [] and {"r", "q1", "q4"} <= {e.job_id for e in plan.running()}
    # An energy budget turns the rule off, as it turns off the tail bound.
    assert all(j.min_steps == 0 for j in round_instance(ctx, 0, 10.0, [r, *queued], 1e9).jobs)


def test_a_running_job_below_its_floor_is_not_kept() -> None:
    """A job running below its floor queues again in arrival order.

    r runs 1 GPU at 150 W (4 steps/s) but asked for 2 (floor 9 / 1.25 = 7.2); first fit finds its own node free.
    With the floor, min_steps = 0.999999 x 7.2 x (T - tau) = 647.99 steps.
    """
    ctx = hand_context(duration_s=100.0, restart_s=10.0, nodes=1, slurm_starts=True, max_slowdown=0.25)
    r = _running("r", A, 0.0, 1, 150, 0, 0, 2)
    late = JobState.new(hand_job("late", A, 5.0, 1000.0, 2))
    inst = round_instance(ctx, 0, 10.0, [r, late], None)
    assert {j.id: j.min_steps for j in inst.jobs} == {"r": pytest.approx(0.999999 * 7.2 * 90), "late": 0.0}


def test_greedy_runs_the_jobs_that_must_run_on_their_current_or_fewest_gpus() -> None:
    """The greedy takes a must-run job's own option, then its fewest GPUs, first.

    One node of 2 GPUs; b (weight 0.1) runs on one and must keep running, a must start. a on 2 GPUs at 150 W
    (10 steps/s here) has the most progress per joule: 0.9 / (17,100 + 16,000 J) against 0.36 / 17,000 J on one;
    taken first it would leave b no GPU.
    """
    doc = tiny_instance_doc()
    doc["gpu_types"][0].update(nodes=1, gpus_per_node=2)
    doc["jobs"] = [j for j in doc["jobs"] if j["id"] in ("a", "b")]
    doc["jobs"][0].update(min_steps=1.0)
    doc["jobs"][1].update(min_steps=1.0, weight=0.1)
    doc["jobs"][1]["current"]["placement"] = [{"node": "v100-0", "gpu_indices": [0]}]
    next(p for p in doc["profiles"] if (p["type"], p["gpus"], p["setting"]) == ("A", 2, 150)).update(steps_per_s=10.0)
    inst = parse_instance(doc)
    plan = assemble_plan(inst, greedy_allocations(inst), SolveInfo(solver="greedy", status="feasible"))
    assert validate_plan(inst, plan) == [] and {e.job_id: e.gpus for e in plan.running()} == {"a": 1, "b": 1}
    for solver in ("highs", "greedy"):
        assert validate_plan(inst, planning.plan(inst, PlanRequest(solver=solver, **EXACT))) == []


TYPES = ("ResNet-18 (batch size 32)", "ResNet-50 (batch size 128)", "Transformer (batch size 128)")
jobs = st.lists(
    st.tuples(st.sampled_from(TYPES), st.integers(200, 3000), st.integers(0, 400), st.sampled_from([1, 2, 4])),
    min_size=1,
    max_size=6,
)
"""Rows ``(job type, steps, arrival s, requested GPUs)`` of a Gavel trace."""


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs, nodes=st.integers(1, 2), slowdown=st.sampled_from([0.05, 0.25]))
def test_replays_under_the_rule_never_stop_a_job_and_keep_its_floor(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int, int, int]], nodes: int, slowdown: float
) -> None:
    """Least energy under the rule on the simulated Slurm: every job runs once, at its floor or faster.

    Every job completes and none is requeued (stopped or resized) once started; every plan the agent made passed
    the validator (below-tail-bound, below-rate-floor). A job's rate floor is ``X / (1 + s)``, ``X`` its requested
    count's rate at the top setting, and a setting changes without a restart, so a job started at ``t0`` ends by
    ``t0 + 31 + S / (X / (1 + s))``: Slurm's launch (1 s) and the load (30 s), then its steps at the floor at worst.
    """
    trace = write_gavel_trace(tmp_path_factory.mktemp("starts") / "jobs.trace", rows)
    setup = SimulatedCluster(load_s=30.0)
    rules = RoundRules(
        duration_s=360.0,
        restart_s=setup.restart_cost_s,
        objective="energy",
        delta=0.9,
        slurm_starts=True,
        max_slowdown=slowdown,
    )
    options = PolicyOptions(request=PlanRequest(solver="highs", **EXACT))
    spec = ReplaySpec(
        trace=trace, cluster=f"v100:{8 * nodes}", policies=("wattplan",), rules=rules, policy_options=options
    )
    log: list[str] = []
    result = replay_on_slurm(spec, "wattplan", setup, log=log.append)
    assert result.summary["stop_reason"] == "completed" and result.summary["completed"] == len(rows)
    assert [line for line in log if " by " in line] and not [line for line in log if "could not be planned" in line]
    for job in result.jobs:
        job_type, steps, _, gpus = rows[int(job["job_id"].removeprefix("j"))]  # the trace's row k is job jk
        floor = x(job_type, gpus) / (1.0 + slowdown)
        assert job["requeues"] == 0, job  # started once, never stopped or resized
        assert job["finish_s"] - job["start_s"] <= (31.0 + steps / floor) * (1 + 1e-9), job


def test_simulate_frontier_and_the_agent_play_by_both_rules() -> None:
    """The options reach the rules on every face (``frontier`` once dropped ``--slurm-starts``)."""
    from wattplan.planner.agent.options import AgentOptions
    from wattplan.planner.sim.options import FrontierOptions, SimulateOptions
    from wattplan.planner.sim.session import frontier_sweep, replay_spec

    given = {"max_slowdown": 10.0, "slurm_starts": True}
    simulate_rules = replay_spec("6c71a0.trace", "v100:8", SimulateOptions.checked(given)).rules
    frontier_rules = frontier_sweep("6c71a0.trace", "v100:8", FrontierOptions.checked(given)).base.rules
    agent_rules = AgentOptions.checked(given).rules()
    for rules in (simulate_rules, frontier_rules, agent_rules):
        assert (rules.max_slowdown, rules.slurm_starts) == (pytest.approx(0.1), True)


def test_the_agents_default_is_the_by_job_mode_that_simulate_replays_with_five_flags() -> None:
    """``wattplan agent`` with no mode plans by job and pairs; ``--mode steered`` is the governor's mode, unpaired."""
    from wattplan.planner.agent.options import AgentOptions
    from wattplan.planner.contracts.problems import InputError
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.session import replay_spec

    default = AgentOptions.checked({})
    rules = default.rules()
    assert (rules.objective, rules.delta, rules.max_slowdown, rules.slurm_starts) == ("energy", 0.9, 0.1, True)
    assert default.jct_increase() is None and default.steering().max_increase is None
    # no pairs by default: Slurm keeps a guest's own GPUs (benchmarks/guest_gres.sh)
    assert not default.co_locates() and AgentOptions.checked({"pairs": True}).co_locates()
    assert SimulateOptions.checked({"pairs": True}).pairs
    flags = {"slurm_starts": True, "max_slowdown": 10.0, "objective": "energy", "delta": 0.9}
    replayed = replay_spec("6c71a0.trace", "v100:8", SimulateOptions.checked(flags)).rules
    assert (replayed.objective, replayed.delta, replayed.slurm_starts) == ("energy", 0.9, True)
    assert replayed.max_slowdown == pytest.approx(rules.max_slowdown)
    # the mode ignores the steering's knobs and keeps a slowdown given
    tighter = AgentOptions.checked({"max_slowdown": 5.0, "max_jct_increase": 20.0, "delta": 0.1}).rules()
    assert (tighter.max_slowdown, tighter.delta) == (pytest.approx(0.05), 0.9)
    steered = AgentOptions.checked({"mode": "steered"})
    rules = steered.rules()
    assert (rules.objective, rules.max_slowdown, rules.slurm_starts) == ("efficiency", None, False)
    assert steered.jct_increase() == pytest.approx(0.03) and not steered.co_locates()
    assert AgentOptions.checked({"mode": "steered", "pairs": True}).co_locates()
    assert not AgentOptions.checked({"pairs": False}).co_locates()
    assert not AgentOptions.checked({"policy": "maxq"}).co_locates()  # a baseline pairs nothing by default
    assert AgentOptions.checked({"policy": "eaco", "pairs": False}).co_locates()  # eaco's lever
    with pytest.raises(InputError, match="tail-bound"):
        AgentOptions.checked({"tail_bound": 10.0})
    assert AgentOptions.checked({"mode": "steered", "tail_bound": 10.0}).steering().tail_bound == pytest.approx(0.1)
