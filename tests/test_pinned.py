"""The by-job mode's round never restarts a running job (:mod:`planner.sim.pinned`).

Hand cluster (:mod:`tests.sim_helpers`): nodes of 2 V100-like GPUs; job type A runs 4 / 5 steps/s on 1 GPU at
150 / 250 W and 7 / 9 on 2; B runs 2.5 on 1 GPU at 250 W; an A-B pair on 1 GPU slows A to 0.8 and B to 0.6.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.sim_helpers import A, B, hand_context, hand_job
from wattplan.formulations.backends import available_backends
from wattplan.formulations.options import enumerate_options
from wattplan.planner import planning
from wattplan.planner.contracts.domain import CurrentConfig, NodeGpus
from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
from wattplan.planner.contracts.plan import PlannedJob
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.pinned import pin_running
from wattplan.planner.sim.round_instance import round_instance
from wattplan.planner.sim.state import JobState

EXACT = dict(time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=False)


def _job(job_id: str, job_type: str, steps: float, req: int = 1) -> JobState:
    return JobState.new(hand_job(job_id, job_type, 0.0, steps, req))


def _runs(state: JobState, gpus: int, node: int, first: int, partner: str | None = None) -> JobState:
    """``state`` running on ``gpus`` GPUs of node ``node`` from index ``first`` at 250 W (with ``partner``)."""
    place = (NodeGpus(f"v100-{node}", tuple(range(first, first + gpus))),)
    state.current = CurrentConfig("v100", gpus, 250, partner, place)
    return state


def test_a_running_job_keeps_its_gpu_count() -> None:
    """Least energy shrinks a 2-GPU A to 1 GPU at 150 W (a restart on Slurm); the start rule pins it to 2 GPUs."""
    queued = [_runs(_job("r", A, 50_000.0, req=2), 2, 0, 0)]
    free = round_instance(hand_context(nodes=2, objective="energy", delta=0.9), 0, 0.0, queued, None)
    plan = planning.plan(free, PlanRequest(solver="highs", **EXACT))
    assert (plan.jobs[0].gpus, plan.jobs[0].setting) == (1, 150)  # what the rule forbids
    ctx = hand_context(nodes=2, objective="energy", delta=0.9, slurm_starts=True)
    pinned = round_instance(ctx, 0, 0.0, queued, None)
    (job,) = pinned.jobs
    assert (job.type, job.gpus, job.pair_only) == ("A (running r)", (2,), False)
    assert {(p.gpus, p.setting) for p in pinned.profiles if p.type == job.type} == {(2, 150), (2, 250)}
    for solver in available_backends():
        plan = planning.plan(pinned, PlanRequest(solver=solver, **EXACT))
        assert (plan.jobs[0].state, plan.jobs[0].gpus, plan.jobs[0].setting) == ("run", 2, 150), solver
        assert validate_plan(pinned, plan) == []


def test_a_running_job_hosts_a_newcomer_that_ends_first_and_never_becomes_a_guest() -> None:
    """A running A may take a waiting B as its guest only if B would end first; two running jobs never pair."""
    ctx = hand_context(nodes=2, slurm_starts=True)
    # In the pair A runs 0.8 x 5 = 4 steps/s and B 0.6 x 2.5 = 1.5: A's 4,000 steps take 1,000 s.
    host = _runs(_job("r", A, 4_000.0), 1, 0, 0)
    short, long = _job("s", B, 1_400.0), _job("l", B, 1_600.0)  # 933 s and 1,067 s in the pair
    inst = round_instance(ctx, 0, 0.0, [host, short], None)
    assert [(p.a, p.b, p.rho_a, p.rho_b) for p in inst.pairs if "running" in p.a] == [("A (running r)", B, 0.8, 0.6)]
    inst = round_instance(ctx, 0, 0.0, [host, long], None)
    assert not [p for p in inst.pairs if "running" in p.a]
    inst = round_instance(ctx, 0, 0.0, [host, short, long], None)  # one B that outlives the host: none of them
    assert not [p for p in inst.pairs if "running" in p.a]
    running_b = _runs(_job("b", B, 100.0), 1, 0, 1)
    inst = round_instance(ctx, 0, 0.0, [host, running_b], None)
    assert not [p for p in inst.pairs if "running" in p.a or "running" in p.b]
    assert not enumerate_options(inst).pair_sides


def test_a_running_pair_stays_paired() -> None:
    """A running A-B pair: each job only in that pair (``pair_only``), however cheap running apart would be."""
    ctx = hand_context(nodes=2, slurm_starts=True, objective="energy", delta=0.9)
    a, b = _runs(_job("a", A, 50_000.0), 1, 0, 0, "b"), _runs(_job("b", B, 50_000.0), 1, 0, 0, "a")
    inst = round_instance(ctx, 0, 0.0, [a, b], None)
    assert [j.pair_only for j in inst.jobs] == [True, True]
    assert [(p.a, p.b, p.rho_a, p.rho_b) for p in inst.pairs if "running" in p.a] == [
        ("A (running a)", "B (running b)", 0.8, 0.6)
    ]
    options = enumerate_options(inst)
    assert not options.exclusive and len(options.pair_sides) == 2  # one side each, at 250 W (B has no 150 W)
    assert parse_instance(instance_to_doc(inst)).jobs[0].pair_only
    for solver in available_backends():
        plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
        assert {e.job_id: e.shares_with for e in plan.jobs} == {"a": "b", "b": "a"}, solver
        assert validate_plan(inst, plan) == []
    # The greedy fallback keeps the pair as it runs.
    assert [(a.job_ids, a.gpus, a.setting) for a in greedy_allocations(inst)] == [(("a", "b"), 1, 250)]
    # The validator rejects a plan that runs a pair-only job alone.
    plan = planning.plan(inst, PlanRequest(solver="highs", **EXACT))
    alone = dataclasses.replace(inst, jobs=(dataclasses.replace(inst.jobs[0], pair_only=False), inst.jobs[1]))
    solo = planning.plan(dataclasses.replace(alone, jobs=alone.jobs[:1]), PlanRequest(solver="highs", **EXACT))
    entry = next(e for e in solo.jobs if e.job_id == "a")
    wrong = dataclasses.replace(plan, jobs=(entry, PlannedJob("b", "wait")))
    assert "pair-only-alone" in {p.code for p in validate_plan(inst, wrong)}


def test_without_a_running_job_the_instance_is_unchanged() -> None:
    """Nothing runs: pinning gives back the same instance."""
    inst = round_instance(hand_context(nodes=2, slurm_starts=True), 0, 0.0, [_job("w", A, 100.0)], None)
    assert pin_running(inst) is inst


@pytest.mark.parametrize("pairs", [False, True])
def test_the_by_job_replay_restarts_nothing(pairs: bool, tmp_path: Path) -> None:
    """gavel_mix at a 25% slowdown limit: no job restarts, with pairs on or off.

    Before the pinning the least-energy rounds resized 18 jobs there (2 -> 4 GPUs and back).
    """
    from wattplan import simulate

    root = Path(__file__).resolve().parent.parent
    res = simulate(
        root / "instances" / "live" / "gavel_mix.trace",
        cluster="v100:32",
        policies=["wattplan"],
        power_save=True,
        solver="highs",
        time_limit=60,
        time_scale=30,
        slurm_starts=True,
        max_slowdown=25,
        objective="energy",
        delta=0.9,
        pairs=pairs,
        out=tmp_path / "out",
    )
    row = res.summary.set_index("policy").loc["wattplan"]
    assert row["requeues"] == 0 and row["completed"] == 40
