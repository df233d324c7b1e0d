"""``wattplan launch``: load a plan and its instance, refuse an invalid plan, render one target, write it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.plan import BudgetOverride, Plan, load_plan
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.launch.diff import diff_problems
from wattplan.planner.launch.followon import Changeover, changeover, from_problems
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.kubernetes import KubernetesOptions, render_kubernetes
from wattplan.planner.launch.limits import LimitOptions, round_limits
from wattplan.planner.launch.output import launch_manifest, write_folder
from wattplan.planner.launch.render import TARGETS, LaunchFile, LaunchModel, Target, build_model
from wattplan.planner.launch.shell import render_shell
from wattplan.planner.launch.slurm import SlurmOptions, render_slurm
from wattplan.planner.launch.slurm_followon import render_slurm_followon


class PlanRejected(Exception):
    """The plan fails the validator against its instance; nothing was rendered."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: the plan fails validation ({len(problems)} problem(s)); nothing rendered")


@dataclass(frozen=True)
class LaunchOptions:
    """Target-specific options; the defaults render plan node names as host names."""

    hosts: HostMap = field(default_factory=HostMap)
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    kubernetes: KubernetesOptions = field(default_factory=KubernetesOptions)
    limits: LimitOptions = field(default_factory=LimitOptions)
    """Time limit and checkpoint signal from the round's length (``LimitOptions(enabled=False)``: none)."""
    from_dir: Path | None = None
    """A follow-on round: the previous round's launch folder, whose ``jobs.tsv`` names the jobs ``apply.sh`` may
    act on, by Slurm job id (``apply.sh PREVIOUS_FOLDER`` gives it at run time instead)."""


def with_round_limits(options: LaunchOptions, duration_s: float) -> LaunchOptions:
    """``options`` with the Slurm ``--time``/``--signal`` and Kubernetes deadline of a round of ``duration_s``."""
    limits = round_limits(duration_s, options.limits)
    return replace(
        options,
        slurm=replace(options.slurm, limits=limits),
        kubernetes=replace(options.kubernetes, active_deadline_s=limits.time_limit_s),
    )


@dataclass(frozen=True)
class LaunchResult:
    """What was written: the folder, the target, the relative paths of the files, the model they came from."""

    out_dir: Path
    target: Target
    files: list[str]
    model: LaunchModel
    budget_override: BudgetOverride | None = None
    """The budget the plan declares it was made under in place of the instance's (validated with it in force)."""
    changeover: Changeover | None = None
    """For a follow-on round (``--from``): what is kept, ended, submitted."""


def render(model: LaunchModel, target: Target, options: LaunchOptions) -> list[LaunchFile]:
    """The files of ``target`` for ``model``."""
    if target == "slurm":
        return render_slurm(model, options.slurm)
    if target == "kubernetes":
        return render_kubernetes(model, options.kubernetes)
    if target == "shell":
        return render_shell(model)
    raise ValueError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")


def manifest(model: LaunchModel, target: Target, plan_path: Path | None, plan_sha256: str | None) -> dict[str, Any]:
    """What the folder holds, for people and for tools (units, their jobs, hosts and GPU indices)."""
    return {
        "target": target,
        "round": model.round_index,
        "plan": None if plan_path is None else str(plan_path),
        "plan_sha256": plan_sha256,
        "placeholder_jobs": model.placeholders(),
        "units": [
            {
                "name": u.name,
                "jobs": [{"job_id": m.job_id, "name": m.name, "placeholder": m.placeholder} for m in u.members],
                "gpu_type": u.gpu_type,
                "gpus": u.gpus,
                "setting": u.setting,
                "setting_unit": u.setting_unit,
                "placement": [{"node": p.node, "host": p.host, "gpu_indices": list(p.gpu_indices)} for p in u.parts],
            }
            for u in model.units
        ],
    }


def launch_plan(
    plan: Plan,
    instance: Instance,
    target: Target,
    out_dir: Path,
    options: LaunchOptions | None = None,
    *,
    plan_path: Path | None = None,
    plan_sha256: str | None = None,
    source: str = "plan",
) -> LaunchResult:
    """Validate ``plan`` against ``instance`` (:class:`PlanRejected` if it fails), render, write atomically.

    A plan's declared budget override stands in for the instance's budget (:func:`planner.core.validate.validate_plan`).
    """
    options = with_round_limits(options or LaunchOptions(), instance.round.duration_s)
    problems = validate_plan(instance, plan)
    if problems:
        raise PlanRejected(source, problems)
    model = build_model(plan, instance, options.hosts)
    files = render(model, target, options)
    written = write_folder(out_dir, files, manifest(model, target, plan_path, plan_sha256))
    return LaunchResult(Path(out_dir), target, written, model, plan.round.budget_override)


def launch_files(
    plan_path: Path, instance_path: Path, target: Target, out_dir: Path, options: LaunchOptions | None = None
) -> LaunchResult:
    """:func:`launch_plan` on files: bad files raise :class:`~planner.contracts.problems.InputError` (path-named)."""
    instance = load_instance(instance_path)
    plan = load_plan(plan_path)
    digest = file_sha256(Path(plan_path))
    return launch_plan(
        plan, instance, target, out_dir, options, plan_path=plan_path, plan_sha256=digest, source=str(plan_path)
    )


def check_from_dir(from_dir: Path, from_round: int) -> str:
    """``from_dir`` as an absolute path if it is the Slurm launch folder of round ``from_round``, else InputError."""
    folder = Path(from_dir)
    doc = launch_manifest(folder) if folder.is_dir() else None
    if doc is None:
        why = "is not a wattplan launch folder (no MANIFEST.json of ours)"
    elif doc.get("target") != "slurm" or doc.get("round") != from_round:
        why = (
            f"is the {doc.get('target')} launch of round {doc.get('round')}, not the Slurm launch of round {from_round}"
        )
    else:
        return str(folder.resolve())
    raise InputError(
        "--from-dir", [Problem("bad-from-dir", str(folder), f"{why}; give the folder --from's round ran from")]
    )


def launch_followon(
    plan: Plan,
    instance: Instance,
    old_plan: Plan,
    out_dir: Path,
    options: LaunchOptions | None = None,
    *,
    plan_path: Path | None = None,
    plan_sha256: str | None = None,
    source: str = "plan",
    old_source: str = "--from",
) -> LaunchResult:
    """Render for Slurm only what changes from ``old_plan`` (the previous round) to ``plan``, write atomically.

    ``plan`` must pass the validator against ``instance`` and ``old_plan`` the instance-free checks
    (:class:`PlanRejected` naming the file otherwise); ``old_plan`` must be an earlier round of the same
    cluster (:class:`InputError` with code ``from-other-cluster`` or ``from-not-earlier``).
    """
    options = with_round_limits(options or LaunchOptions(), instance.round.duration_s)
    problems = validate_plan(instance, plan)
    if problems:
        raise PlanRejected(source, problems)
    old_problems = diff_problems(old_plan, None)
    if old_problems:
        raise PlanRejected(old_source, old_problems)
    cluster = from_problems(old_plan, plan, instance)
    if cluster:
        raise InputError(old_source, cluster)
    from_dir = None if options.from_dir is None else check_from_dir(options.from_dir, old_plan.round.index)
    model = build_model(plan, instance, options.hosts)
    change = changeover(old_plan, plan, model, options.hosts)
    files = render_slurm_followon(change, model, options.slurm, from_dir)
    doc = manifest(model, "slurm", plan_path, plan_sha256)
    doc["from_round"] = old_plan.round.index
    doc["from_plan"] = old_source
    doc["from_dir"] = from_dir
    doc["changes"] = change.diff.summary()
    written = write_folder(out_dir, files, doc)
    return LaunchResult(Path(out_dir), "slurm", written, model, plan.round.budget_override, change)


def launch_followon_files(
    plan_path: Path, instance_path: Path, old_plan_path: Path, out_dir: Path, options: LaunchOptions | None = None
) -> LaunchResult:
    """:func:`launch_followon` on files: bad files raise :class:`InputError` naming the path."""
    instance = load_instance(instance_path)
    plan = load_plan(plan_path)
    old_plan = load_plan(old_plan_path)
    digest = file_sha256(Path(plan_path))
    return launch_followon(
        plan,
        instance,
        old_plan,
        out_dir,
        options,
        plan_path=plan_path,
        plan_sha256=digest,
        source=str(plan_path),
        old_source=str(old_plan_path),
    )
