"""A round that follows the last one: which allocations run on, end, start, or change setting in place (§11.1).

Built on :func:`planner.launch.diff.diff_plans` (one action per job) and grouped into *allocations* (units: a
job alone, or a pair in one allocation), since a launcher acts on allocations:

- **keep**: the same jobs in the same allocation, and no job of it resized, moved or re-paired; it runs on
  (its time limit is extended by one round); if a job of it is *re-set*, only its GPUs' setting changes
  (**re-set**, a subset of keep);
- **end**: an allocation of the old plan that is not kept (a job stops, is resized, moved or re-paired);
- **submit**: an allocation of the new plan that is not kept (a start, or the new form of an ended one).

So a re-pair ends and resubmits: the pair is one allocation (§11.1) and cannot gain or lose a job in place.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance, node_name
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.launch.diff import PlanDiff, diff_plans
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.render import GpuSetting, LaunchModel, Unit

IN_PLACE = ("re-set",)
"""Diff actions a running allocation takes without a restart."""


@dataclass(frozen=True, slots=True)
class OldUnit:
    """An allocation of the previous round: its job ids (sorted) and every GPU's setting then."""

    job_ids: tuple[str, ...]
    gpu_type: str
    settings: tuple[GpuSetting, ...]

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts of the allocation, in first-use order."""
        return tuple(dict.fromkeys(s.host for s in self.settings))


@dataclass(frozen=True)
class Changeover:
    """What a follow-on launch does (see the module docstring), in plan order within each kind."""

    diff: PlanDiff
    keep: tuple[Unit, ...]
    reset: tuple[Unit, ...]
    end: tuple[OldUnit, ...]
    submit: tuple[Unit, ...]
    old_units: tuple[OldUnit, ...]

    def restarted(self, unit: Unit) -> bool:
        """True if a job of submitted ``unit`` ran in the previous round (it restarts, not starts)."""
        before = {j for u in self.old_units for j in u.job_ids}
        return any(j in before for j in unit.job_ids)


def allocations(plan: Plan) -> list[tuple[PlannedJob, ...]]:
    """The plan's running entries grouped into allocations (a pair at its first member's place), in plan order."""
    running = plan.running()
    by_id = {j.job_id: j for j in running}
    done: set[str] = set()
    out: list[tuple[PlannedJob, ...]] = []
    for entry in running:
        if entry.job_id in done:
            continue
        group = (entry,) if entry.shares_with is None else (entry, by_id[entry.shares_with])
        done.update(e.job_id for e in group)
        out.append(group)
    return out


def old_units(plan: Plan, hosts: HostMap) -> tuple[OldUnit, ...]:
    """The allocations of ``plan`` with each GPU's setting; needs no instance (the jobs may have left it)."""
    hosts.check(p.node for j in plan.running() for p in j.placement)
    out = []
    for group in allocations(plan):
        first = group[0]
        settings = tuple(
            GpuSetting(
                hosts.host(p.node),
                i,
                first.setting_unit or "power_limit_w",
                int(first.setting or 0),
                len(group) == 2,
                "",
            )
            for p in first.placement
            for i in sorted(p.gpu_indices)
        )
        out.append(OldUnit(tuple(sorted(e.job_id for e in group)), str(first.gpu_type), settings))
    return tuple(out)


def changeover(old: Plan, new: Plan, model: LaunchModel, hosts: HostMap) -> Changeover:
    """Classify every allocation of ``old`` and of ``model`` (built from ``new``) as keep, re-set, end or submit."""
    diff = diff_plans(old, new)
    action = {a.job_id: a.action for a in diff.actions}
    before = old_units(old, hosts)
    before_ids = {u.job_ids for u in before}
    keep: list[Unit] = []
    submit: list[Unit] = []
    for unit in model.units:
        ids = tuple(sorted(unit.job_ids))
        same = ids in before_ids and all(action.get(j) in (None, *IN_PLACE) for j in ids)
        (keep if same else submit).append(unit)
    kept_ids = {tuple(sorted(u.job_ids)) for u in keep}
    return Changeover(
        diff=diff,
        keep=tuple(keep),
        reset=tuple(u for u in keep if any(action.get(j) in IN_PLACE for j in u.job_ids)),
        end=tuple(u for u in before if u.job_ids not in kept_ids),
        submit=tuple(submit),
        old_units=before,
    )


def from_problems(old: Plan, new: Plan, instance: Instance) -> list[Problem]:
    """Why ``old`` cannot be the round before ``new`` on ``instance``'s cluster; empty when it can.

    Every GPU ``old`` uses must exist in ``instance`` (GPU type, node, GPU index), and ``old`` must be an
    earlier round than ``new``.
    """
    problems: list[Problem] = []
    if old.round.index >= new.round.index:
        problems.append(
            Problem(
                "from-not-earlier",
                "round.index",
                f"--from is round {old.round.index} and the new plan round {new.round.index}: "
                "--from takes the previous round's plan",
            )
        )
    types = {g.name: g for g in instance.gpu_types}
    for k, job in enumerate(old.jobs):
        if job.state != "run":
            continue
        gpu_type = types.get(str(job.gpu_type))
        if gpu_type is None:
            problems.append(
                Problem(
                    "from-other-cluster",
                    f"jobs[{k}].gpu_type",
                    f"GPU type {job.gpu_type!r} is not in the new instance's cluster "
                    f"({', '.join(sorted(types))}): --from names a plan of another cluster",
                )
            )
            continue
        nodes = {node_name(gpu_type.name, i) for i in range(gpu_type.nodes)}
        for n, part in enumerate(job.placement):
            bad_index = [i for i in part.gpu_indices if not 0 <= i < gpu_type.gpus_per_node]
            if part.node not in nodes or bad_index:
                problems.append(
                    Problem(
                        "from-other-cluster",
                        f"jobs[{k}].placement[{n}]",
                        f"node {part.node!r} GPUs {list(part.gpu_indices)} are not in the new instance's cluster "
                        f"({gpu_type.nodes} x {gpu_type.gpus_per_node} {gpu_type.name} GPUs): "
                        "--from names a plan of another cluster",
                    )
                )
    return problems
