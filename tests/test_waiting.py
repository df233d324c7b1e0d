"""Why a plan leaves a job waiting (planner.core.waiting, docs/design.md §6.5): one tiny round per reason.

The round: GPU type v100 with nodes of 2 GPUs (idle 50 W, node base 100 W, one setting 250 W), T = 100 s, no
restart cost. Type ``a`` runs at 10 steps/s on 1 GPU and 18 steps/s on 2 GPUs, 200 W per GPU either way; type
``c`` has no profile. A powered node costs T * (100 + 2 * 50) = 20 kJ; ``a`` alone for the whole round costs
1 * (200 - 50) * 100 = 15 kJ of dynamic energy on 1 GPU, 2 * 150 * 100 = 30 kJ on 2 GPUs.
"""

from __future__ import annotations

from wattplan.planner.contracts.domain import GpuType, Instance, Job, PairSlowdown, Profile, RoundSpec
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.core.waiting import WaitingReason, waiting_reasons

V100 = "v100"


def _round(
    jobs: list[Job],
    *,
    nodes: int = 1,
    budget_j: float | None = None,
    pairs: tuple[PairSlowdown, ...] = (),
    objective: str = "progress",
) -> Instance:
    gpu = GpuType(V100, nodes, 2, 50.0, 100.0, "power_limit_w", (250,))
    profiles = (Profile("a", V100, 1, 250, 10.0, 200.0), Profile("a", V100, 2, 250, 18.0, 200.0))
    spec = RoundSpec(0, 100.0, budget_j, objective, delta=0.1, restart_s=0.0, min_pair_rate=0.5)  # type: ignore[arg-type]
    return Instance(spec, (gpu,), tuple(jobs), profiles, pairs)


def _job(job_id: str, job_type: str = "a", gpus: tuple[int, ...] = (1, 2), requested: int | None = None) -> Job:
    return Job(job_id, job_type, 1e9, gpus, requested_gpus=requested)


def _plan(inst: Instance, *runs: Allocation) -> Plan:
    return assemble_plan(inst, list(runs), SolveInfo("hand", "feasible"))


def _only(reasons: list[WaitingReason], job_id: str) -> WaitingReason:
    found = [r for r in reasons if r.job_id == job_id]
    assert len(found) == 1, reasons
    return found[0]


A1_ON_ONE_GPU = Allocation(("a1",), V100, 1, 250)
A1_ON_TWO_GPUS = Allocation(("a1",), V100, 2, 250)


def test_running_jobs_get_no_reason() -> None:
    inst = _round([_job("a1")])
    assert waiting_reasons(inst, _plan(inst, A1_ON_ONE_GPU)) == []


def test_no_profile_of_its_type_is_no_gpu_type() -> None:
    inst = _round([_job("c1", "c", requested=2)])
    reason = _only(waiting_reasons(inst, _plan(inst)), "c1")
    assert (reason.code, reason.job_type, reason.requested_gpus, reason.allowed_gpus) == ("no-gpu-type", "c", 2, (1, 2))
    assert "type c" in reason.message and "v100" in reason.message


def test_allowed_counts_that_fit_no_type_are_no_gpu_type() -> None:
    """8 GPUs exceed the 2 of the cluster; 3 GPUs cannot be placed on nodes of 2 (and type a has no such profile)."""
    inst = _round([_job("big", gpus=(8,)), _job("odd", gpus=(3,))])
    reasons = waiting_reasons(inst, _plan(inst))
    assert [r.code for r in reasons] == ["no-gpu-type", "no-gpu-type"]


def test_no_gpu_type_comes_before_budget() -> None:
    """A zero budget would stop every job, but the missing profile is what the operator must fix first."""
    inst = _round([_job("c1", "c")], budget_j=0.0)
    assert _only(waiting_reasons(inst, _plan(inst)), "c1").code == "no-gpu-type"


def test_every_gpu_taken_is_no_free_gpus() -> None:
    inst = _round([_job("a1", gpus=(2,)), _job("a2")])
    reason = _only(waiting_reasons(inst, _plan(inst, A1_ON_TWO_GPUS)), "a2")
    assert reason.code == "no-free-gpus"
    assert "v100: needs 1, 0 free" in reason.message


def test_only_slow_pairs_is_partner_slowdown() -> None:
    """a2 could share a1's 2 GPUs, but the pair runs them at 0.3 and 0.4 < min_pair_rate 0.5."""
    slow = (PairSlowdown("a", "a", V100, 2, 0.3, 0.4),)
    inst = _round([_job("a1", gpus=(2,)), _job("a2", gpus=(2,))], pairs=slow)
    reason = _only(waiting_reasons(inst, _plan(inst, A1_ON_TWO_GPUS)), "a2")
    assert reason.code == "partner-slowdown"
    assert "min_pair_rate 0.5" in reason.message and "a1, 0.30" in reason.message


def test_a_fast_pair_left_unused_is_not_partner_slowdown() -> None:
    """With a pair above min_pair_rate the slowdown is not what keeps the job out: its GPUs are."""
    fast = (PairSlowdown("a", "a", V100, 2, 0.8, 0.9),)
    inst = _round([_job("a1", gpus=(2,)), _job("a2", gpus=(2,))], pairs=fast)
    assert _only(waiting_reasons(inst, _plan(inst, A1_ON_TWO_GPUS)), "a2").code == "no-free-gpus"


def test_cheapest_option_over_what_is_left_is_budget() -> None:
    """Plan: a1 on 1 GPU, 15 kJ + one node 20 kJ = 35 kJ. a2 (2 GPUs only) needs a second node: 30 + 20 = 50 kJ.

    Budget 60 kJ leaves 25 kJ < 50 kJ.
    """
    inst = _round([_job("a1", gpus=(1,)), _job("a2", gpus=(2,))], nodes=2, budget_j=60e3)
    the_plan = _plan(inst, A1_ON_ONE_GPU)
    assert the_plan.round.energy_j == 35e3
    reason = _only(waiting_reasons(inst, the_plan), "a2")
    assert reason.code == "budget"
    assert "costs 50.0 kJ" in reason.message and "25.0 kJ left" in reason.message


def test_the_cheapest_fitting_option_decides_budget() -> None:
    """a2 may take 1 GPU: the free GPU on a1's node costs 15 kJ and no node, within the 25 kJ left."""
    inst = _round([_job("a1", gpus=(1,)), _job("a2", gpus=(1, 2))], nodes=2, budget_j=60e3)
    reason = _only(waiting_reasons(inst, _plan(inst, A1_ON_ONE_GPU)), "a2")
    assert reason.code == "lower-value"
    assert "cheapest option 15.0 kJ" in reason.message and "progress objective" in reason.message


def test_energy_objective_names_itself_and_delta() -> None:
    inst = _round([_job("a1", gpus=(1,)), _job("a2", gpus=(2,))], nodes=2, budget_j=100e3, objective="energy")
    reason = _only(waiting_reasons(inst, _plan(inst, A1_ON_ONE_GPU)), "a2")
    assert reason.code == "lower-value"
    assert "energy objective" in reason.message and "delta = 0.1" in reason.message
    assert "50.0 kJ" in reason.message


def test_a_gpu_type_without_the_jobs_profile_is_named_not_hidden() -> None:
    """v100 is full and a100 is free, but type a has no a100 profile: the reason names a100 and what it lacks."""
    a100 = GpuType("a100", 1, 4, 40.0, 100.0, "power_limit_w", (400,))
    inst = _round([_job("a1", gpus=(2,)), _job("a2")])
    inst = Instance(inst.round, (*inst.gpu_types, a100), inst.jobs, inst.profiles, inst.pairs)
    reason = _only(waiting_reasons(inst, _plan(inst, A1_ON_TWO_GPUS)), "a2")
    assert reason.code == "no-free-gpus"
    assert "v100: needs 1, 0 free" in reason.message
    assert "a100 has 4 free but no profile of type a at 1,2 GPUs" in reason.message


def test_no_gpu_type_says_what_each_type_lacks() -> None:
    """Type c: no profile anywhere; type a at 4 GPUs: profiled, but the cluster's 2 GPUs cannot hold it."""
    inst = _round([_job("c1", "c")])
    (reason,) = waiting_reasons(inst, _plan(inst))
    assert "v100: no profile of type c at 1,2 GPUs" in reason.message
    inst = _round([_job("big", gpus=(4,))])
    inst = Instance(
        inst.round, inst.gpu_types, inst.jobs, (*inst.profiles, Profile("a", V100, 4, 250, 30.0, 200.0)), ()
    )
    (reason,) = waiting_reasons(inst, _plan(inst))
    assert reason.code == "no-gpu-type"
    assert "v100: profiled at 4 GPUs, which 2 GPUs on nodes of 2 cannot hold" in reason.message
