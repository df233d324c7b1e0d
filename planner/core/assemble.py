"""Turn chosen allocations into a complete, placed ``wattplan.plan/1`` plan.

Every planner (the solver backends, the greedy fallback, the simulator's baselines) ends
here, so all plans are computed, placed and totalled the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wattplan.planner.contracts.domain import Instance, NodeGpus
from wattplan.planner.contracts.instance_io import instance_sha256
from wattplan.planner.contracts.plan import Plan, PlannedJob, PlanRound, PlanStatus
from wattplan.planner.contracts.solve_report import SolveReport
from wattplan.planner.core.economics import job_outcome, node_energy_j, nodes_for, ordered_pair_rates, restarts
from wattplan.planner.core.kept_blocks import pinned_nodes
from wattplan.planner.core.placement import PlacementRequest, place


@dataclass(frozen=True, slots=True)
class Allocation:
    """One chosen option: one job alone, or two jobs sharing the same ``gpus`` GPUs."""

    job_ids: tuple[str, ...]  # one job, or two for a pair (instance order)
    gpu_type: str
    gpus: int
    setting: int

    @property
    def is_pair(self) -> bool:
        """True when two jobs share the allocation's GPUs."""
        return len(self.job_ids) == 2


@dataclass(frozen=True, slots=True)
class SolveInfo:
    """How a plan was found, for the plan's round summary."""

    solver: str
    status: PlanStatus
    objective_value: float | None = None
    bound: float | None = None
    gap: float | None = None
    solve_s: float = 0.0
    report: SolveReport = field(default_factory=SolveReport)
    objective: str | None = None  # None: the instance's objective


def gpus_used(allocations: Sequence[Allocation]) -> dict[str, int]:
    """``sum n`` per GPU type; a pair's GPUs count once."""
    used: dict[str, int] = {}
    for a in allocations:
        used[a.gpu_type] = used.get(a.gpu_type, 0) + a.gpus
    return used


def min_nodes_on(instance: Instance, allocations: Sequence[Allocation]) -> dict[str, int]:
    """The fewest nodes that hold the allocations: ``u_g = ceil(gpus_used_g / K_g)``.

    On a GPU type whose running jobs are pinned (:mod:`planner.core.kept_blocks`) at least the nodes that hold them:
    they stay where they are, and the round model's ``blocks`` rows already keep its ``u_g`` that high.
    """
    nodes = nodes_for(instance, gpus_used(allocations))
    for g, held in pinned_nodes(instance).items():
        nodes[g] = max(nodes.get(g, 0), held)
    return nodes


def _keep(instance: Instance, a: Allocation) -> tuple[NodeGpus, ...] | None:
    """Current placement worth keeping: a job that neither restarts nor changes size."""
    for job_id in a.job_ids:
        job = instance.job(job_id)
        if job.current and job.current.placement and not restarts(job, a.gpu_type, a.gpus):
            return job.current.placement
    return None


def _basis(instance: Instance, job_type: str, gpu_type: str, gpus: int, setting: int) -> Mapping[str, Any] | None:
    """The basis of the profile behind a planned job's prediction, if the instance carries one."""
    prof = instance.profile(job_type, gpu_type, gpus, setting)
    return None if prof is None else prof.basis


def _planned_jobs(instance: Instance, a: Allocation, placement: tuple[NodeGpus, ...]) -> list[PlannedJob]:
    g = instance.gpu_type(a.gpu_type)
    jobs = [instance.job(j) for j in a.job_ids]
    rates: tuple[float, ...] = (1.0,)
    if a.is_pair:
        pair_rates = ordered_pair_rates(instance, jobs[0], jobs[1], g.name, a.gpus)
        if pair_rates is None:
            raise ValueError(f"no pair entry for {a.job_ids} on {a.gpus} {g.name}")
        rates = pair_rates
    out = []
    for k, job in enumerate(jobs):
        o = job_outcome(instance, job, g, a.gpus, a.setting, rates[k])
        if o is None:
            raise ValueError(f"no profile for job {job.id!r} on {a.gpus} {g.name} at {a.setting}")
        partner = jobs[1 - k].id if a.is_pair else None
        out.append(
            PlannedJob(
                job_id=job.id,
                state="run",
                gpu_type=g.name,
                gpus=a.gpus,
                setting=a.setting,
                setting_unit=g.setting_unit,
                shares_with=partner,
                placement=placement,
                steps_per_s=o.steps_per_s,
                power_w=o.power_w,
                energy_j=o.energy_j,
                steps=o.steps,
                progress=o.progress,
                restarts=o.restarts,
                basis=_basis(instance, job.type, g.name, a.gpus, a.setting),
            )
        )
    return out


def assemble_plan(
    instance: Instance,
    allocations: Sequence[Allocation],
    info: SolveInfo,
    nodes_on: Mapping[str, int] | None = None,
) -> Plan:
    """Place ``allocations`` and compute every figure of the plan from the instance.

    ``nodes_on`` defaults to :func:`min_nodes_on`; the buddy placement then never fails
    because every count fits its node size and ``sum n <= K_g * u_g``.
    """
    nodes = dict(nodes_on) if nodes_on is not None else min_nodes_on(instance, allocations)
    result = place(
        instance.gpu_types,
        [PlacementRequest(a.job_ids[0], a.gpu_type, a.gpus, _keep(instance, a)) for a in allocations],
        nodes,
    )
    by_id: dict[str, PlannedJob] = {}
    for a in allocations:
        for pj in _planned_jobs(instance, a, result.placements[a.job_ids[0]]):
            by_id[pj.job_id] = pj
    jobs = tuple(by_id.get(j.id, PlannedJob(job_id=j.id, state="wait")) for j in instance.jobs)
    dynamic = sum(pj.energy_j for pj in by_id.values())
    progress = sum(instance.job(j).weight * (pj.progress or 0.0) for j, pj in by_id.items())
    extra = {"energy_breakdown_j": {"dynamic": dynamic, "node_and_idle": node_energy_j(instance, nodes)}}
    summary = PlanRound(
        index=instance.round.index,
        duration_s=instance.round.duration_s,
        budget_j=instance.round.budget_j,
        energy_j=dynamic + node_energy_j(instance, nodes),
        progress=progress,
        objective=info.objective or instance.round.objective,
        objective_value=info.objective_value,
        bound=info.bound,
        gap=info.gap,
        gpus_used=gpus_used(allocations),
        nodes_on=nodes,
        solver=info.solver,
        status=info.status,
        solve_s=info.solve_s,
        report=info.report,
        extra=extra,
        instance_sha256=instance_sha256(instance),
    )
    return Plan(round=summary, jobs=jobs)


def allocations_of(instance: Instance, plan: Plan) -> list[Allocation]:
    """The allocations behind ``plan``'s running jobs: one per job alone, one per pair (instance order)."""
    order = {j.id: k for k, j in enumerate(instance.jobs)}
    seen: set[str] = set()
    out: list[Allocation] = []
    for pj in sorted(plan.running(), key=lambda pj: order[pj.job_id]):
        if pj.job_id in seen or pj.gpu_type is None or pj.gpus is None or pj.setting is None:
            continue
        ids = (pj.job_id,) if pj.shares_with is None else (pj.job_id, pj.shares_with)
        seen.update(ids)
        out.append(Allocation(ids, pj.gpu_type, pj.gpus, pj.setting))
    return out


def with_every_node_on(instance: Instance, plan: Plan) -> Plan:
    """``plan`` placed again with every node of every type allowed (``u_g = N_g``).

    For a cluster whose nodes stay powered whatever the plan says: the placement then keeps every current
    placement it can (a running job that neither restarts nor resizes stays on its GPUs) instead of packing the
    jobs onto the fewest nodes, which on a real cluster moves jobs (a restart each) to save no energy. The
    allocations, settings and solve figures are the plan's; ``nodes_on`` and the node energy become all nodes'.
    """
    info = SolveInfo(
        solver=plan.round.solver,
        status=plan.round.status,
        objective_value=plan.round.objective_value,
        bound=plan.round.bound,
        gap=plan.round.gap,
        solve_s=plan.round.solve_s,
        report=plan.round.report,
        objective=plan.round.objective,
    )
    every = {g.name: g.nodes for g in instance.gpu_types}
    return assemble_plan(instance, allocations_of(instance, plan), info, nodes_on=every)
