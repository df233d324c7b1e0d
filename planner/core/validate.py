"""Check a plan against its instance, independently of how the plan was made.

No solver is imported here: this module is the oracle the tests hold every planner to.
Every violation has a stable code:

=====================  ==========================================================================
code                   violated rule
=====================  ==========================================================================
plan-schema            the plan document breaks ``plan.schema.json`` (raised while loading)
instance-mismatch      the plan records another instance's ``round.instance_sha256`` than the one given
round-mismatch         round index, duration or budget differ from the instance or its override
unknown-job            the plan names a job the instance does not have
duplicate-job          a job appears more than once
missing-job            an instance job does not appear (every job is ``run`` or ``wait``)
unknown-gpu-type       a job or ``nodes_on`` names an unknown GPU type
count-not-allowed      ``gpus`` is not among the job's allowed counts
setting-not-allowed    ``setting`` is not among the GPU type's settings
setting-unit-mismatch  ``setting_unit`` differs from the GPU type's
no-profile             no profile for (job type, GPU type, gpus, setting)
pair-not-mutual        the partner is unknown, waiting, the job itself, or names another job
pair-mismatch          partners differ in GPU type, count, setting or GPU indices
pair-not-profiled      no pair entry for the two job types on that GPU type and count
pair-below-min-rate    a slowdown of the pair is below ``min_pair_rate``
nodes-exceeded         ``nodes_on[g] > nodes_g``
capacity-exceeded      ``gpus_used[g] > gpus_per_node_g * nodes_on[g]`` (a pair counts once)
placement-size         the placement holds a different number of GPUs than ``gpus``
placement-bad-node     a node that does not exist or is of another GPU type
placement-bad-index    a GPU index outside the node, or listed twice
placement-overlap      one GPU used by two allocations that are not one pair
placement-split        a job of at most one node's GPUs spans nodes, or a bigger one uses part of a node
placement-nodes-off    placements use more distinct nodes than ``nodes_on``
job-claim-mismatch     a job's ``steps_per_s``, ``power_w`` or ``energy_j`` differ from the recomputation
round-claim-mismatch   the round's ``energy_j``, ``progress``, ``gpus_used`` or ``nodes_on`` differ
over-budget            the recomputed energy exceeds ``budget_j``
below-tail-bound       a job with ``min_steps > 0`` waits, or makes fewer recomputed steps than that
below-rate-floor       a job with ``min_rate > 0`` runs at a recomputed rate ``rho X`` below it
pair-only-alone        a job with ``pair_only`` runs alone
=====================  ==========================================================================

A plan made under a budget given in place of the instance's (``wattplan plan --power-cap-w`` or
``--budget-j``) declares it in ``round.budget_override``; it is checked against the instance with
that budget in force (:func:`instance_as_planned`), energy included. A budget that differs from
the instance's without such a declaration is a ``round-mismatch``.

A plan records the identity of the instance it was made for in ``round.instance_sha256``
(:func:`planner.contracts.instance_io.instance_sha256` of the instance as given, before any override); a
plan that records one and is checked against another instance is an ``instance-mismatch``. Plans
written before the field existed carry none and are checked as before.

:func:`plan_problems` runs the checks that need no instance (a job listed twice, partners that
do not name each other or hold other GPUs, a GPU index or node listed twice in one allocation, a
placement of another size than ``gpus``, one GPU in two allocations, more nodes used than on, a
claimed energy over the claimed budget); ``wattplan diff`` runs them on both plans when it is
given no instances. :func:`validate_plan` runs them too, with every check that needs the instance.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterator, Mapping

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import instance_sha256
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.core.evaluate import Evaluation, evaluate_plan, rho_of

REL_TOL = 1e-6
ABS_TOL = 1e-6


def close(claimed: float, actual: float) -> bool:
    """``|claimed - actual| <= max(1e-6 * |actual|, 1e-6)``."""
    return math.isclose(claimed, actual, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _same_budget(a: float | None, b: float | None) -> bool:
    """Both None, or both numbers within :func:`close`."""
    return (a is None and b is None) or (a is not None and b is not None and close(a, b))


def _joules(budget_j: float | None) -> str:
    """A budget for messages: ``"4.91991e+06 J"``, or ``"none"``."""
    return "none" if budget_j is None else f"{budget_j:.6g} J"


def _check_identity(inst: Instance, plan: Plan) -> Iterator[Problem]:
    """A plan that records its instance's digest must be checked against that instance (as given)."""
    claimed = plan.round.instance_sha256
    if claimed is None:
        return
    actual = instance_sha256(inst)
    if claimed != actual:
        yield Problem(
            "instance-mismatch",
            "round.instance_sha256",
            f"the plan was made for instance {claimed[:12]}..., the instance given is {actual[:12]}...",
        )


def _check_override(inst: Instance, plan: Plan) -> Iterator[Problem]:
    """The declared override must replace this instance's budget and agree with its own option and value."""
    o = plan.round.budget_override
    if o is None:
        return
    path = "round.budget_override"
    if not _same_budget(o.instance_budget_j, inst.round.budget_j):
        yield Problem(
            "round-mismatch",
            f"{path}.instance_budget_j",
            f"the plan replaced a budget of {_joules(o.instance_budget_j)}, "
            f"the instance's is {_joules(inst.round.budget_j)}",
        )
    stated = o.value * inst.round.duration_s if o.option == "--power-cap-w" else o.value
    if not close(o.budget_j, stated):
        yield Problem(
            "round-mismatch",
            f"{path}.budget_j",
            f"{_joules(o.budget_j)}, but {o.option} {o.value:.12g} gives {_joules(stated)}",
        )


def instance_as_planned(inst: Instance, plan: Plan) -> Instance:
    """``inst`` with the budget ``plan`` declares it was made under in force (``inst`` if it declares none)."""
    o = plan.round.budget_override
    if o is None:
        return inst
    return dataclasses.replace(inst, round=dataclasses.replace(inst.round, budget_j=o.budget_j))


def _check_round(inst: Instance, plan: Plan) -> Iterator[Problem]:
    r, pr = inst.round, plan.round
    if pr.index != r.index:
        yield Problem("round-mismatch", "round.index", f"plan is for round {pr.index}, instance is round {r.index}")
    if not close(pr.duration_s, r.duration_s):
        yield Problem(
            "round-mismatch", "round.duration_s", f"{pr.duration_s} s differs from the instance's {r.duration_s} s"
        )
    if not _same_budget(pr.budget_j, r.budget_j):
        whose = "instance's" if pr.budget_override is None else "declared override's"
        yield Problem("round-mismatch", "round.budget_j", f"{pr.budget_j} differs from the {whose} {r.budget_j}")


def _check_duplicates(plan: Plan) -> Iterator[Problem]:
    """Every job at most once (no instance needed)."""
    counts = Counter(j.job_id for j in plan.jobs)
    reported: set[str] = set()
    for i, entry in enumerate(plan.jobs):
        if counts[entry.job_id] > 1 and entry.job_id not in reported:
            reported.add(entry.job_id)
            yield Problem(
                "duplicate-job", f"jobs[{i}].job_id", f"job {entry.job_id!r} appears {counts[entry.job_id]} times"
            )


def _check_membership(inst: Instance, plan: Plan) -> Iterator[Problem]:
    """Every plan job is an instance job, and every instance job is in the plan."""
    listed = {j.job_id for j in plan.jobs}
    for i, entry in enumerate(plan.jobs):
        if not inst.has_job(entry.job_id):
            yield Problem("unknown-job", f"jobs[{i}].job_id", f"no job {entry.job_id!r} in the instance")
    for job in inst.jobs:
        if job.id not in listed:
            yield Problem("missing-job", "jobs", f"job {job.id!r} of the instance is neither run nor wait")


def _check_allocation(inst: Instance, i: int, e: PlannedJob) -> Iterator[Problem]:
    path = f"jobs[{i}]"
    gpu_name = e.gpu_type or ""
    if not inst.has_gpu_type(gpu_name):
        yield Problem("unknown-gpu-type", f"{path}.gpu_type", f"unknown GPU type {e.gpu_type!r}")
        return
    g = inst.gpu_type(gpu_name)
    job = inst.job(e.job_id)
    if e.gpus not in job.gpus:
        yield Problem("count-not-allowed", f"{path}.gpus", f"{e.gpus} GPUs is not among {list(job.gpus)}")
    if e.setting not in g.settings:
        yield Problem(
            "setting-not-allowed", f"{path}.setting", f"{e.setting} is not a {g.name} setting {list(g.settings)}"
        )
    if e.setting_unit != g.setting_unit:
        yield Problem(
            "setting-unit-mismatch", f"{path}.setting_unit", f"{e.setting_unit!r}, but {g.name} uses {g.setting_unit!r}"
        )
    if inst.profile(job.type, g.name, e.gpus or 0, e.setting or 0) is None:
        yield Problem("no-profile", path, f"no profile for {job.type!r} on {e.gpus} {g.name} GPUs at {e.setting}")


def _mutual_partner(e: PlannedJob, running: Mapping[str, PlannedJob]) -> PlannedJob | None:
    """The running job that ``e`` shares with and that shares with ``e`` (None: no such job)."""
    partner = running.get(e.shares_with or "")
    if partner is None or partner.job_id == e.job_id or partner.shares_with != e.job_id:
        return None
    return partner


def _check_partner(i: int, e: PlannedJob, running: Mapping[str, PlannedJob]) -> Iterator[Problem]:
    """Partners name each other and hold the same GPUs at the same setting (no instance needed)."""
    path = f"jobs[{i}].shares_with"
    partner = _mutual_partner(e, running)
    if partner is None:
        yield Problem("pair-not-mutual", path, f"{e.shares_with!r} is not a running job that shares with {e.job_id!r}")
        return
    if (partner.gpu_type, partner.gpus, partner.setting) != (e.gpu_type, e.gpus, e.setting):
        yield Problem(
            "pair-mismatch", path, f"{e.job_id!r} and {partner.job_id!r} differ in GPU type, count or setting"
        )
    elif _gpu_set(e) != _gpu_set(partner):
        yield Problem(
            "pair-mismatch", f"jobs[{i}].placement", f"{e.job_id!r} and {partner.job_id!r} are not on the same GPUs"
        )


def _check_pair(inst: Instance, i: int, e: PlannedJob, running: Mapping[str, PlannedJob]) -> Iterator[Problem]:
    """A mutual pair of instance jobs has a pair entry whose slowdowns reach ``min_pair_rate``."""
    path = f"jobs[{i}].shares_with"
    partner = _mutual_partner(e, running)
    if partner is None or not inst.has_job(partner.job_id):
        return
    rho = rho_of(inst, e, partner)
    if rho is None:
        yield Problem(
            "pair-not-profiled",
            path,
            f"no pair entry for {e.job_id!r} with {partner.job_id!r} on {e.gpus} {e.gpu_type}",
        )
    elif rho < inst.round.min_pair_rate:
        yield Problem(
            "pair-below-min-rate", path, f"slowdown {rho:.3f} of {e.job_id!r} is below {inst.round.min_pair_rate}"
        )


def _gpu_set(e: PlannedJob) -> frozenset[tuple[str, int]]:
    return frozenset((p.node, idx) for p in e.placement for idx in p.gpu_indices)


def _node_name_sets(inst: Instance) -> dict[str, frozenset[str]]:
    """Every GPU type's node names (:meth:`planner.contracts.domain.GpuType.node_names`), built once per validation."""
    return {g.name: frozenset(g.node_names()) for g in inst.gpu_types}


def _check_placement(
    inst: Instance, i: int, e: PlannedJob, node_names: Mapping[str, frozenset[str]]
) -> Iterator[Problem]:
    path = f"jobs[{i}].placement"
    gpu_name = e.gpu_type or ""
    if not inst.has_gpu_type(gpu_name):
        return
    g = inst.gpu_type(gpu_name)
    nodes = node_names[g.name]
    for k, part in enumerate(e.placement):
        if part.node not in nodes:
            yield Problem("placement-bad-node", f"{path}[{k}].node", f"{part.node!r} is not a {g.name} node")
        if any(x >= g.gpus_per_node for x in part.gpu_indices):
            yield Problem(
                "placement-bad-index",
                f"{path}[{k}].gpu_indices",
                f"{list(part.gpu_indices)} on a {g.gpus_per_node}-GPU node",
            )
        if (e.gpus or 0) > g.gpus_per_node and len(set(part.gpu_indices)) != g.gpus_per_node:
            yield Problem("placement-split", f"{path}[{k}]", f"a {e.gpus}-GPU job must use whole nodes")
    if (e.gpus or 0) <= g.gpus_per_node and len(e.placement) > 1:
        yield Problem("placement-split", path, f"a {e.gpus}-GPU job fits one node but spans {len(e.placement)}")


def _check_placement_shape(i: int, e: PlannedJob) -> Iterator[Problem]:
    """No node or GPU index listed twice, and as many GPUs placed as ``gpus`` (no instance needed)."""
    path = f"jobs[{i}].placement"
    seen_nodes: set[str] = set()
    total = 0
    for k, part in enumerate(e.placement):
        if part.node in seen_nodes:
            yield Problem("placement-bad-node", f"{path}[{k}].node", f"{part.node!r} is listed twice")
        seen_nodes.add(part.node)
        if len(set(part.gpu_indices)) != len(part.gpu_indices):
            yield Problem("placement-bad-index", f"{path}[{k}].gpu_indices", f"{list(part.gpu_indices)} repeats a GPU")
        total += len(part.gpu_indices)
    if total != e.gpus:
        yield Problem("placement-size", path, f"places {total} GPUs for a {e.gpus}-GPU job")


def _check_shared_gpus(plan: Plan) -> Iterator[Problem]:
    """No GPU in two allocations that are not one pair; no more nodes used than on (no instance needed)."""
    owner: dict[tuple[str, int], frozenset[str]] = {}
    nodes_used: dict[str, set[str]] = {}
    for i, e in enumerate(plan.jobs):
        if e.state != "run":
            continue
        alloc = frozenset({e.job_id, e.shares_with}) if e.shares_with else frozenset({e.job_id})
        for part in e.placement:
            nodes_used.setdefault(e.gpu_type or "", set()).add(part.node)
            for idx in part.gpu_indices:
                prev = owner.setdefault((part.node, idx), alloc)
                if prev != alloc:
                    yield Problem(
                        "placement-overlap",
                        f"jobs[{i}].placement",
                        f"GPU {idx} of {part.node} is also used by {sorted(prev)}",
                    )
    for g, used in nodes_used.items():
        on = plan.round.nodes_on.get(g, 0)
        if len(used) > on:
            yield Problem(
                "placement-nodes-off", f"round.nodes_on.{g}", f"placements use {len(used)} {g} nodes, {on} are on"
            )


def _check_capacity(inst: Instance, plan: Plan, ev: Evaluation) -> Iterator[Problem]:
    for g_name, on in plan.round.nodes_on.items():
        if not inst.has_gpu_type(g_name):
            yield Problem("unknown-gpu-type", f"round.nodes_on.{g_name}", f"unknown GPU type {g_name!r}")
            continue
        g = inst.gpu_type(g_name)
        if on > g.nodes:
            yield Problem("nodes-exceeded", f"round.nodes_on.{g_name}", f"{on} nodes on, the cluster has {g.nodes}")
    for g_name, used in ev.gpus_used.items():
        cap = inst.gpu_type(g_name).gpus_per_node * plan.round.nodes_on.get(g_name, 0)
        if used > cap:
            yield Problem("capacity-exceeded", f"round.gpus_used.{g_name}", f"{used} GPUs used, {cap} on powered nodes")


def _check_claims(inst: Instance, plan: Plan, ev: Evaluation) -> Iterator[Problem]:
    for i, e in enumerate(plan.jobs):
        out = ev.outcomes.get(e.job_id)
        if e.state != "run" or out is None:
            continue
        for name, claimed, actual in (
            ("steps_per_s", e.steps_per_s, out.steps_per_s),
            ("power_w", e.power_w, out.power_w),
            ("energy_j", e.energy_j, out.energy_j),
        ):
            if not close(claimed, actual):
                yield Problem(
                    "job-claim-mismatch", f"jobs[{i}].{name}", f"claims {claimed:.6g}, recomputed {actual:.6g}"
                )
    r = plan.round
    if not close(r.energy_j, ev.energy_j):
        yield Problem(
            "round-claim-mismatch", "round.energy_j", f"claims {r.energy_j:.6g} J, recomputed {ev.energy_j:.6g} J"
        )
    if not close(r.progress, ev.progress):
        yield Problem(
            "round-claim-mismatch", "round.progress", f"claims {r.progress:.6g}, recomputed {ev.progress:.6g}"
        )
    used = {g: n for g, n in r.gpus_used.items() if n}
    if used != {g: n for g, n in ev.gpus_used.items() if n}:
        yield Problem("round-claim-mismatch", "round.gpus_used", f"claims {used}, recomputed {ev.gpus_used}")
    budget = inst.round.budget_j
    if budget is not None and ev.energy_j > budget * (1 + REL_TOL) + ABS_TOL:
        yield Problem(
            "over-budget", "round.energy_j", f"recomputed {ev.energy_j:.6g} J exceeds the budget {budget:.6g} J"
        )


def _check_claimed_budget(plan: Plan) -> Iterator[Problem]:
    """The round's claimed energy within its claimed budget (no instance needed)."""
    r = plan.round
    if r.budget_j is not None and r.energy_j > r.budget_j * (1 + REL_TOL) + ABS_TOL:
        yield Problem(
            "over-budget", "round.energy_j", f"claims {r.energy_j:.6g} J, over the plan's budget {r.budget_j:.6g} J"
        )


def _structure_problems(plan: Plan) -> list[Problem]:
    """The instance-free checks that :func:`validate_plan` shares with :func:`plan_problems`."""
    problems = list(_check_duplicates(plan))
    running = {e.job_id: e for e in plan.jobs if e.state == "run"}
    for i, e in enumerate(plan.jobs):
        if e.state != "run":
            continue
        if e.shares_with is not None:
            problems += _check_partner(i, e, running)
        problems += _check_placement_shape(i, e)
    return problems + list(_check_shared_gpus(plan))


def plan_problems(plan: Plan) -> list[Problem]:
    """Every violation ``plan`` shows without its instance (module docstring); empty when none.

    An empty list does not make a plan valid: only :func:`validate_plan` checks it against its instance.
    """
    return _structure_problems(plan) + list(_check_claimed_budget(plan))


def validate_plan(inst: Instance, plan: Plan) -> list[Problem]:
    """Every violation of ``plan`` against ``inst``; empty when the plan is valid.

    A plan that records its instance's digest must be checked against that instance; a declared
    budget override is checked against ``inst`` and then stands in for ``inst``'s budget (module
    docstring). The energy is checked as recomputed, not as claimed.
    """
    problems = [*_check_identity(inst, plan), *_check_override(inst, plan)]
    inst = instance_as_planned(inst, plan)
    problems += [*_check_round(inst, plan), *_check_membership(inst, plan), *_structure_problems(plan)]
    running = {e.job_id: e for e in plan.jobs if e.state == "run"}
    node_names = _node_name_sets(inst)
    for i, e in enumerate(plan.jobs):
        if e.state != "run" or not inst.has_job(e.job_id):
            continue
        problems += _check_allocation(inst, i, e)
        if e.shares_with is not None:
            problems += _check_pair(inst, i, e, running)
        elif inst.job(e.job_id).pair_only:
            msg = f"job {e.job_id!r} runs only in a pair (pair_only) but runs alone"
            problems.append(Problem("pair-only-alone", f"jobs[{i}].shares_with", msg))
        problems += _check_placement(inst, i, e, node_names)
    ev = evaluate_plan(inst, plan)
    problems += _check_capacity(inst, plan, ev)
    problems += _check_claims(inst, plan, ev)
    problems += _check_tail_bound(inst, plan, ev)
    problems += _check_rate_floor(inst, plan, ev)
    return problems


TAIL_BOUND_SLACK = 1e-6
"""Relative slack of the tail-bound check: ``steps >= min_steps (1 - 1e-6)``."""


def _check_tail_bound(inst: Instance, plan: Plan, ev: Evaluation) -> Iterator[Problem]:
    """Every job with ``min_steps > 0`` runs and makes at least that many recomputed steps."""
    index = {e.job_id: i for i, e in enumerate(plan.jobs)}
    for job in inst.jobs:
        if job.min_steps <= 0 or job.id not in index:
            continue
        o = ev.outcomes.get(job.id)
        steps = 0.0 if o is None else o.steps
        if steps < job.min_steps * (1.0 - TAIL_BOUND_SLACK):
            msg = f"job {job.id!r} makes {steps:.6g} steps, below its tail bound min_steps {job.min_steps:.6g}"
            yield Problem("below-tail-bound", f"jobs[{index[job.id]}]", msg)


def _check_rate_floor(inst: Instance, plan: Plan, ev: Evaluation) -> Iterator[Problem]:
    """Every running job with ``min_rate > 0`` runs at a recomputed rate ``rho X`` of at least that (steps/s)."""
    for i, e in enumerate(plan.jobs):
        if e.state != "run" or not inst.has_job(e.job_id):
            continue
        floor = inst.job(e.job_id).min_rate
        o = ev.outcomes.get(e.job_id)
        if floor <= 0 or o is None:
            continue
        if o.steps_per_s < floor * (1.0 - TAIL_BOUND_SLACK):
            msg = f"job {e.job_id!r} runs at {o.steps_per_s:.6g} steps/s, below its slowdown limit min_rate {floor:.6g}"
            yield Problem("below-rate-floor", f"jobs[{i}]", msg)


class InvalidPlanError(RuntimeError):
    """A planner produced a plan the validator rejects (a bug, reported, never written)."""

    def __init__(self, solver: str, problems: list[Problem]):
        self.problems = problems
        super().__init__(f"{solver} produced an invalid plan: " + "; ".join(map(str, problems[:5])))


def checked(instance: Instance, plan: Plan) -> Plan:
    """Return ``plan`` if the validator accepts it, else raise :class:`InvalidPlanError`."""
    problems = validate_plan(instance, plan)
    if problems:
        raise InvalidPlanError(plan.round.solver, problems)
    return plan
