"""The round model's aligned-block rows: a round fits new jobs around running jobs kept in place (issue 44, item 7).

Hand cluster (:mod:`tests.sim_helpers`): nodes of 2 GPUs; job type A runs 5 steps/s on 1 GPU and 9 on 2 at 250 W.
Two running 1-GPU jobs and a waiting A asking for 2 GPUs (so 1 or 2 allowed): with the progress objective the
waiting job wants 2 GPUs. With the running jobs on one node the other node is free and it gets them; with one
running job on each node the 2 free GPUs are on two nodes, and 2 GPUs would move a running job (a restart): under
the no-restart rule (``pin_running``) the round gives it 1 GPU. Without the rule (running jobs may restart) the
rows are not there and it gets 2.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.sim_helpers import A, hand_context, hand_job
from wattplan.formulations.backends import available_backends
from wattplan.formulations.options import enumerate_options
from wattplan.formulations.round_model import build_round_model
from wattplan.planner import planning
from wattplan.planner.contracts.domain import CurrentConfig, NodeGpus
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.core.kept_blocks import FreeBlocks, free_blocks, pinned_gpus, pinned_nodes
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.round_instance import round_instance
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import TailBound

EXACT = dict(time_limit_s=30, rel_gap=1e-9, threads=1, lp_bound=False)


def _running(job_id: str, node: int, gpu: int) -> JobState:
    state = JobState.new(hand_job(job_id, A, 0.0, 50_000.0))
    state.current = CurrentConfig("v100", 1, 250, None, (NodeGpus(f"v100-{node}", (gpu,)),))
    return state


def _instance(spread: bool, pin: bool):
    queued = [
        _running("r1", 0, 0),
        _running("r2", 1, 1) if spread else _running("r2", 0, 1),
        JobState.new(hand_job("w", A, 0.0, 50_000.0, 2)),
    ]
    return round_instance(hand_context(nodes=2, objective="progress", pin_running=pin), 0, 0.0, queued, None)


@pytest.mark.parametrize(("spread", "pin", "gpus"), [(True, True, 1), (False, True, 2), (True, False, 2)])
def test_a_new_job_gets_only_gpus_that_move_nobody(spread: bool, pin: bool, gpus: int) -> None:
    inst = _instance(spread, pin)
    for solver in available_backends():
        plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
        by_id = {j.job_id: j for j in plan.jobs}
        assert (by_id["w"].state, by_id["w"].gpus) == ("run", gpus), solver
        assert validate_plan(inst, plan) == [], solver
        if pin:  # the running jobs run where they ran
            for job in inst.jobs:
                if job.current is not None:
                    assert by_id[job.id].placement == job.current.placement, (solver, job.id)


def test_the_rows_by_hand() -> None:
    """Spread: no free 2-block on either pinned node, so ``y_2 - u <= 0 - 2``: the 2-GPU option needs a third node."""
    inst = _instance(spread=True, pin=True)
    opts = enumerate_options(inst)
    assert pinned_gpus(inst) == {"v100": {"v100-0": {0}, "v100-1": {1}}} and pinned_nodes(inst) == {"v100": 2}
    lm = build_round_model(inst, opts).lm
    (row,) = [i for i, n in enumerate(lm.row_names) if n.startswith("blocks[")]
    assert lm.row_names[row] == "blocks[v100,2]" and lm.row_hi[row] == -2.0
    entries = {lm.col_names[c]: v for r, c, v in zip(lm.a_rows, lm.a_cols, lm.a_vals, strict=True) if r == row}
    assert sorted(entries.values()) == [-1.0] + [1.0] * (len(entries) - 1)  # -u, and each 2-GPU option of w once
    assert len(entries) - 1 == sum(1 for o in opts.exclusive if o.gpus == 2)
    unpinned = _instance(spread=True, pin=False)
    assert pinned_gpus(unpinned) == {}  # may move: no rows


def test_free_blocks_by_hand() -> None:
    assert free_blocks(8, set(), 8) == 1
    assert free_blocks(8, {0}, 2) == 3 and free_blocks(8, {0}, 4) == 1 and free_blocks(8, {0}, 8) == 0
    assert free_blocks(8, {1, 4}, 2) == 2 and free_blocks(8, {1, 4}, 4) == 0
    assert free_blocks(6, set(), 4) == 1 and free_blocks(6, {5}, 4) == 1 and free_blocks(6, {5}, 2) == 2  # whole only


@pytest.mark.slow
@pytest.mark.parametrize("tail_bound", [None, 10.0])
def test_the_steered_replay_without_restarts_restarts_nothing(tmp_path, tail_bound: float | None) -> None:
    """two_waves on two nodes, steered with ``--pin-running``: no job restarts, every job ends.

    Without the rows the same replay moved 3 running jobs to make room for 8-GPU starts (benchmarks/RESULTS.md);
    with ``--tail-bound`` too, before its admission counted blocks, the rounds were infeasible and it stalled.
    """
    from pathlib import Path

    from wattplan import simulate

    root = Path(__file__).resolve().parent.parent
    res = simulate(
        root / "instances" / "live" / "two_waves.trace",
        cluster="v100:16",
        policies=["wattplan"],
        power_save=True,
        power_down=True,
        solver="highs",
        time_limit=60,
        time_scale=30,
        max_jct_increase=3,
        pin_running=True,
        max_slowdown=25,
        tail_bound=tail_bound,
        out=tmp_path / "out",
    )
    row = res.summary.set_index("policy").loc["wattplan"]
    assert row["requeues"] == 0 and row["completed"] == 40


def test_pinned_jobs_on_two_nodes_keep_both_nodes_on() -> None:
    """Two pinned 1-GPU jobs on two nodes fit one node by count; the plan keeps both where they run, both nodes on."""
    queued = [_running("r1", 0, 0), _running("r2", 1, 1)]
    inst = round_instance(hand_context(nodes=2, objective="energy", pin_running=True), 0, 0.0, queued, None)
    for solver in available_backends():
        plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
        assert plan.round.nodes_on == {"v100": 2}, solver
        assert [j.placement for j in plan.jobs] == [q.current.placement for q in queued], solver
        assert validate_plan(inst, plan) == [], solver


@pytest.mark.parametrize("objective", ["energy", "efficiency"])
def test_the_greedy_plan_starts_nothing_that_would_move_a_pinned_job(objective: str) -> None:
    """``w`` may run on 2 GPUs only; the 2 free GPUs are on two nodes, so a start would move a pinned job.

    The greedy plan counts aligned blocks around the pinned jobs and leaves ``w`` waiting (by GPU count it started
    it: a move, and its progress set a target ``(1 - delta) P*`` out of the model's reach); the solvers agree.
    """
    queued = [_running("r1", 0, 0), _running("r2", 1, 1), JobState.new(hand_job("w", A, 0.0, 50_000.0, 2))]
    ctx = hand_context(nodes=2, objective=objective, delta=0.0, pin_running=True)
    inst = round_instance(ctx, 0, 0.0, queued, None)
    inst = dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(j, gpus=(2,)) if j.id == "w" else j for j in inst.jobs)
    )
    assert sorted(j for a in greedy_allocations(inst) for j in a.job_ids) == ["r1", "r2"]
    for solver in ("highs", "cpsat"):
        plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
        target = plan.round.report.progress_target
        assert target is not None and 0.0 < target.greedy_without_budget <= target.solver_without_budget + 1e-9
        assert target.best_without_budget == pytest.approx(target.solver_without_budget)
        assert plan.round.status == "optimal", solver
        assert {j.job_id: j.state for j in plan.jobs}["w"] == "wait", solver
    spread_free = round_instance(hand_context(nodes=2, objective=objective, delta=0.0), 0, 0.0, queued, None)
    assert "w" in {j for a in greedy_allocations(spread_free) for j in a.job_ids}  # may move: GPUs are counted


def test_a_running_job_of_another_gpu_type_that_may_move_here_counts_as_new() -> None:
    """A running A on a second GPU type, with no placement (so not pinned), may move to the v100s: a new allocation.

    Its v100 options are in the v100 block rows beside the waiting job's; the pinned jobs' own options are not.
    """
    inst = _instance(spread=True, pin=True)
    v100 = inst.gpu_types[0]
    p100 = dataclasses.replace(v100, name="p100")
    moved = [dataclasses.replace(p, gpu_type="p100") for p in inst.profiles if p.type == A]
    runner = dataclasses.replace(
        next(j for j in inst.jobs if j.id == "w"), id="m", current=CurrentConfig("p100", 1, 250, None, None)
    )
    two = dataclasses.replace(
        inst, gpu_types=(v100, p100), profiles=(*inst.profiles, *moved), jobs=(*inst.jobs, runner)
    )
    assert pinned_gpus(two) == {"v100": {"v100-0": {0}, "v100-1": {1}}}  # p100's running job is not pinned
    opts = enumerate_options(two)
    lm = build_round_model(two, opts).lm
    (row,) = [i for i, n in enumerate(lm.row_names) if n == "blocks[v100,2]"]
    in_row = {int(c) for r, c in zip(lm.a_rows, lm.a_cols, strict=True) if r == row}
    by_job = {
        two.jobs[o.job].id for i, o in enumerate(opts.exclusive) if o.gpu_type == "v100" and o.gpus == 2 and i in in_row
    }
    assert by_job == {"w", "m"}


def _late(spread: bool, pin: bool) -> tuple[dict[str, float], list[JobState]]:
    """The tail bound at 800 s of a waiting A whose deadline (900 s) has passed by the next round, beside ``_running``.

    Too late for any option: its bound is the most it can make this round, 0.999999 x 9 x 90 = 810 steps (2 GPUs at
    250 W after a restart), which only 2 GPUs give.
    """
    queued = [_running("r1", 0, 0), _running("r2", 1, 1) if spread else _running("r2", 0, 1)]
    queued.append(JobState.new(hand_job("w", A, 0.0, 10_000.0, 2)))
    ctx = hand_context(nodes=2, objective="energy", pin_running=pin)
    return TailBound({"w": 900.0}, 0.0, pace="fastest").min_steps(ctx, queued, 800.0, None), queued


@pytest.mark.parametrize(("spread", "pin", "admitted"), [(True, True, False), (False, True, True), (True, False, True)])
def test_the_tail_bound_admits_a_start_only_where_an_aligned_block_is_free(spread: bool, pin: bool, admitted: bool):
    """Two free GPUs on two nodes hold no 2-GPU block: with the running jobs pinned the late job is not admitted.

    Without the no-restart rule the running jobs may move, GPUs are counted, and it is.
    """
    bounds, _ = _late(spread, pin)
    assert bounds == ({"w": pytest.approx(0.999999 * 810.0)} if admitted else {})


def test_an_admitted_bound_is_met_around_the_pinned_jobs_on_every_backend() -> None:
    """The admitted late job runs on the free node's two GPUs; the pinned jobs stay where they are."""
    bounds, queued = _late(False, True)
    inst = round_instance(
        hand_context(nodes=2, objective="energy", pin_running=True), 0, 800.0, queued, None, None, None, bounds
    )
    for solver in available_backends():
        plan = planning.plan(inst, PlanRequest(solver=solver, **EXACT))
        runs = {j.job_id: j for j in plan.jobs}
        assert runs["w"].gpus == 2 and runs["w"].steps >= bounds["w"], solver
        assert [runs[q.id].placement for q in queued[:2]] == [q.current.placement for q in queued[:2]], solver
        assert validate_plan(inst, plan) == [], solver


def test_a_pinned_running_job_is_bound_where_it_runs_and_takes_no_room() -> None:
    """A late running A on 1 GPU is bound to what it makes where it runs, and holds its GPU (takes no room).

    1 GPU at 250 W for the whole round (no restart): 0.999999 x 5 x 100 = 500 steps, not the 810 of 2 GPUs; the
    late start beside it is admitted on the free node.
    """
    queued = [_running("r1", 0, 0), _running("r2", 0, 1), JobState.new(hand_job("w", A, 0.0, 10_000.0, 2))]
    tail = TailBound({"r1": 900.0, "w": 900.0}, 0.0, pace="fastest")
    pinned = tail.min_steps(hand_context(nodes=2, pin_running=True), queued, 800.0, None)
    assert pinned == {"r1": pytest.approx(0.999999 * 500.0), "w": pytest.approx(0.999999 * 810.0)}
    free = tail.min_steps(hand_context(nodes=2), queued, 800.0, None)
    assert free["r1"] == pytest.approx(0.999999 * 810.0)


def test_free_blocks_count_a_start_in_every_block_size_it_spans() -> None:
    """Nodes of 8 GPUs, GPU 0 of node 0 held: node 0 has 3 free 2-blocks, 1 free 4-block, no 8-block; node 1 all.

    A 4-GPU start takes 2 blocks of 2 and 1 of 4 (and 4 GPUs); after two of them no 4-block is left, but 2-blocks are.
    """
    g = dataclasses.replace(hand_context(nodes=2).gpu_types[0], gpus_per_node=8)
    blocks = FreeBlocks.around([g], {"v100": {"v100-0": {0}}})
    assert blocks.free == {("v100", 1): 15, ("v100", 2): 7, ("v100", 4): 3, ("v100", 8): 1}
    assert blocks.take({"v100": 8}) and not blocks.fits({"v100": 8})
    assert blocks.take({"v100": 4}) and not blocks.take({"v100": 4})
    assert blocks.free == {("v100", 1): 3, ("v100", 2): 1, ("v100", 4): 0, ("v100", 8): 0}
    assert blocks.take({"v100": 2}) and blocks.fits({"v100": 1}) and not blocks.fits({"v100": 2})
    assert not blocks.fits({"p100": 1})  # a type it does not count
    assert FreeBlocks.around([g], None).free == {("v100", 1): 16}
