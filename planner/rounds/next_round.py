"""The next round's instance from this round's instance and plan (``wattplan instance next``).

Round ``r + 1`` follows round ``r`` (docs/design.md §9.9):

* every job the plan runs gets ``current`` = its allocation (GPU type, count, setting, partner, placement), so the
  model knows which options continue without a restart (§2.1) and placement keeps it where it is (§6.2);
* its remaining steps drop by the plan's predicted steps ``sigma_j`` (§2.2); a job whose prediction finishes it
  (``R_j - sigma_j <= 1e-9 R_j``) leaves the queue, and a partner of a job that left runs alone from then on;
* waiting jobs stay as they are; every job's tail bound ``min_steps`` is reset to 0; the round index goes up by one.

With an updated job list (``--jobs``, e.g. the operator's counters after the round) the list is the truth: the next
instance is the list's (:func:`~planner.rounds.from_jobs.instance_from_jobs`), and the jobs of it that the plan ran
get their ``current`` from the plan, with the plan's nodes translated through the hosts of both instances (a job
whose host is no longer usable restarts: no ``current``). Jobs missing from the list have left; new ones wait.

The plan carried forward is trusted no more than any input (issue 41): :func:`check_plan_matches` refuses a plan
made for another instance and runs the validator (:func:`planner.core.validate.validate_plan`) on it, so a plan
edited by hand (a placement on a node that does not exist, a count the job may not run on, steps the profiles
do not give) never becomes the next round's ``current``; and :func:`checked_next_instance` runs every check of
``instance check`` on the instance made before it is written, naming the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from wattplan.planner.contracts.domain import CurrentConfig, Instance, Job, NodeGpus
from wattplan.planner.contracts.instance_io import instance_sha256, instance_to_doc, parse_instance
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.core.validate import validate_plan

FINISHED_SHARE = 1e-9
"""A job whose predicted remaining steps are at most this share of its steps has finished."""


def check_plan_matches(instance: Instance, plan: Plan, source: str, instance_source: str = "the instance") -> None:
    """``InputError`` naming ``source`` (the plan) unless ``plan`` was made for ``instance`` and is valid for it.

    Made for it: its recorded SHA-256 and its job ids (``wrong-instance``, naming ``instance_source`` too); valid:
    every check of ``wattplan validate`` (:func:`~planner.core.validate.validate_plan`, each problem with its code
    and path in the plan).
    """
    digest = plan.round.instance_sha256
    actual = instance_sha256(instance)
    if digest is not None and digest != actual:
        message = (
            f"the plan was made for another instance than {instance_source} "
            f"(plan's {digest[:12]}, instance's {actual[:12]})"
        )
        raise InputError(source, [Problem("wrong-instance", "round.instance_sha256", message)])
    ids = {j.id for j in instance.jobs}
    extra = sorted({j.job_id for j in plan.jobs} - ids)
    if extra:
        message = f"jobs not in {instance_source}: {', '.join(extra[:5])}"
        raise InputError(source, [Problem("wrong-instance", "jobs", message)])
    problems = validate_plan(instance, plan)
    if problems:
        raise InputError(source, capped(problems))


def checked_next_instance(inst: Instance, source: str) -> Instance:
    """``inst`` if every check of ``instance check`` passes on it, else :class:`InputError` naming ``source``.

    A valid plan on a valid instance makes a valid next instance; this is the last guard before it is written.
    """
    try:
        parse_instance(instance_to_doc(inst), source)
    except InputError as exc:
        raise InputError(
            source, [Problem(p.code, f"next instance: {p.path}", p.message) for p in exc.problems]
        ) from None
    return inst


def _current(planned: PlannedJob, node_map: Mapping[str, str | None]) -> CurrentConfig | None:
    """The allocation of a running plan line as ``current``, nodes renamed by ``node_map`` (None: host gone)."""
    assert planned.gpu_type is not None and planned.gpus is not None and planned.setting is not None
    placement = []
    for p in planned.placement:
        node = node_map.get(p.node, p.node)
        if node is None:
            return None
        placement.append(NodeGpus(node, p.gpu_indices))
    return CurrentConfig(planned.gpu_type, planned.gpus, planned.setting, planned.shares_with, tuple(placement) or None)


def _without_gone_partners(jobs: list[Job]) -> tuple[Job, ...]:
    """Drop ``shares_with`` where the partner is not in ``jobs`` or does not name this job back."""
    partner = {j.id: (j.current.shares_with if j.current else None) for j in jobs}
    out = []
    for j in jobs:
        cur = j.current
        if cur is not None and cur.shares_with is not None and partner.get(cur.shares_with) != j.id:
            cur = replace(cur, shares_with=None)
        out.append(replace(j, current=cur))
    return tuple(out)


def next_instance(instance: Instance, plan: Plan) -> Instance:
    """Round ``r + 1`` from round ``r``'s instance and plan, by the plan's predictions (module docstring)."""
    lines = {j.job_id: j for j in plan.jobs}
    jobs: list[Job] = []
    for job in instance.jobs:
        line = lines.get(job.id)
        if line is None or line.state != "run":
            jobs.append(replace(job, current=None, min_steps=0.0))
            continue
        left = job.remaining_steps - (line.steps or 0.0)
        if left <= FINISHED_SHARE * job.remaining_steps:
            continue
        jobs.append(replace(job, remaining_steps=left, current=_current(line, {}), min_steps=0.0))
    spec = replace(instance.round, index=instance.round.index + 1)
    return replace(instance, round=spec, jobs=_without_gone_partners(jobs))


def follow_plan(previous: Instance, plan: Plan, fresh: Instance) -> Instance:
    """``fresh`` (the next round's instance from an updated job list) with ``current`` from ``plan`` (module docstring).

    The round index is the previous round's plus one; plan nodes are renamed from ``previous``'s hosts
    (``extra["hosts"]``) to ``fresh``'s.
    """
    old_hosts: Mapping[str, str] = previous.extra.get("hosts") or {}
    new_nodes = {host: node for node, host in (fresh.extra.get("hosts") or {}).items()}
    node_map: dict[str, str | None] = (
        {node: new_nodes.get(host) for node, host in old_hosts.items()} if old_hosts and new_nodes else {}
    )
    lines = {j.job_id: j for j in plan.jobs if j.state == "run"}
    type_names = {g.name for g in fresh.gpu_types}
    jobs = []
    for job in fresh.jobs:
        line = lines.get(job.id)
        keep = line is not None and line.gpu_type in type_names and line.gpus in job.gpus
        jobs.append(replace(job, current=_current(line, node_map) if keep and line else None))
    spec = replace(fresh.round, index=previous.round.index + 1)
    return replace(fresh, round=spec, jobs=_without_gone_partners(jobs))
