"""What every launch target needs from a plan and its instance, computed once.

A *unit* is one allocation: a job alone, or the two jobs of a pair, which hold the same GPUs
(same nodes, same indices, same setting). Each GPU the plan uses gets exactly one setting (a
pair's GPUs get the pair's). A job whose instance entry has no ``command`` runs
:data:`PLACEHOLDER_ARGV`, which says so loudly and exits with :data:`PLACEHOLDER_EXIT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from wattplan.planner.contracts.domain import Instance, Job, SettingUnit
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.quoting import K8S_NAME_MAX, comment_text, safe_name, sh_quote

Target = Literal["slurm", "kubernetes", "shell"]
TARGETS: tuple[Target, ...] = ("slurm", "kubernetes", "shell")

PLACEHOLDER_EXIT = 64
PLACEHOLDER_ARGV: tuple[str, ...] = (
    "sh",
    "-c",
    'echo "wattplan: PLACEHOLDER command for job $WATTPLAN_JOB_ID: the instance gives no command '
    f'(add jobs[].command)" >&2; exit {PLACEHOLDER_EXIT}',
)
NAME_LEN = K8S_NAME_MAX - 7  # leaves room for suffixes such as "-p1" within Kubernetes' 63 characters

LAUNCHER_ENV_NAMES = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES"})
LAUNCHER_ENV_PREFIXES = ("WATTPLAN_", "CUDA_MPS_")
"""Variables the launcher owns: the GPUs a job may use, its id, rank and MPS pipes. A job's ``env`` never sets
them: :func:`build_model` leaves such names out of every member (and says so in the rendered files), so every
target gives the job the launcher's values, and no name appears twice in a job's environment."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_launcher_env(name: str) -> bool:
    """Whether ``name`` is one of the launcher's own variables (:data:`LAUNCHER_ENV_NAMES`, the prefixes)."""
    return name in LAUNCHER_ENV_NAMES or name.startswith(LAUNCHER_ENV_PREFIXES)


@dataclass(frozen=True, slots=True)
class Member:
    """One job of a unit, with what its process needs (from the instance's launch fields)."""

    job_id: str
    name: str  # safe name: files, Slurm job names, Kubernetes objects
    command: tuple[str, ...]
    placeholder: bool
    workdir: str | None
    env: tuple[tuple[str, str], ...]  # the job's variables, none of them the launcher's
    user: str | None
    partner: str | None
    dropped_env: tuple[str, ...] = ()
    """Names of the job's ``env`` left out because the launcher sets them (:func:`is_launcher_env`)."""


@dataclass(frozen=True, slots=True)
class Part:
    """The GPUs a unit holds on one node: plan node name, its host, GPU indices (sorted)."""

    node: str
    host: str
    gpu_indices: tuple[int, ...]

    @property
    def indices_text(self) -> str:
        """``"0,1,2"``: the form of ``CUDA_VISIBLE_DEVICES`` and Slurm's ``SLURM_JOB_GPUS``."""
        return ",".join(str(i) for i in self.gpu_indices)


@dataclass(frozen=True, slots=True)
class Unit:
    """One allocation of the plan: one job, or a pair sharing the same GPUs at one setting."""

    name: str
    members: tuple[Member, ...]
    gpu_type: str
    gpus: int
    setting: int
    setting_unit: SettingUnit
    parts: tuple[Part, ...]

    @property
    def shared(self) -> bool:
        """True for a pair (two jobs on the same GPUs)."""
        return len(self.members) == 2

    @property
    def job_ids(self) -> tuple[str, ...]:
        """The members' job ids, in member order."""
        return tuple(m.job_id for m in self.members)

    @property
    def hosts(self) -> tuple[str, ...]:
        """The host of each part, in part order."""
        return tuple(p.host for p in self.parts)

    @property
    def gpus_per_part(self) -> int:
        """GPUs on each node (a valid plan uses the same number on every node of a job)."""
        counts = {len(p.gpu_indices) for p in self.parts}
        if len(counts) != 1:
            raise ValueError(f"unit {self.name} uses different GPU counts on its nodes: {sorted(counts)}")
        return counts.pop()


@dataclass(frozen=True, slots=True)
class GpuSetting:
    """The setting one GPU gets this round, and whether two jobs share the GPU."""

    host: str
    index: int
    unit: SettingUnit
    value: int
    shared: bool
    unit_name: str


@dataclass(frozen=True)
class LaunchModel:
    """A validated plan, grouped into units, with hosts resolved; the input of every target."""

    round_index: int
    units: tuple[Unit, ...]
    gpus_per_node: dict[str, int]  # GPU type -> GPUs per node

    def hosts(self) -> list[str]:
        """Every host the plan uses, in first-use order."""
        seen: dict[str, None] = {}
        for u in self.units:
            for p in u.parts:
                seen.setdefault(p.host, None)
        return list(seen)

    def host_gpu_type(self, host: str) -> str:
        """GPU type of ``host``: that of the first unit placed on it (``StopIteration`` if none)."""
        return next(u.gpu_type for u in self.units if host in u.hosts)

    def units_on(self, host: str) -> list[Unit]:
        """The units with a part on ``host``, in plan order."""
        return [u for u in self.units if host in u.hosts]

    def settings(self, host: str) -> list[GpuSetting]:
        """Each GPU of ``host`` the plan uses, with its setting, by index."""
        out = [
            GpuSetting(host, i, u.setting_unit, u.setting, u.shared, u.name)
            for u in self.units
            for p in u.parts
            if p.host == host
            for i in p.gpu_indices
        ]
        return sorted(out, key=lambda s: s.index)

    def placeholders(self) -> list[str]:
        """Job ids that run the placeholder command (no ``command`` in the instance)."""
        return [m.job_id for u in self.units for m in u.members if m.placeholder]

    def dropped_env(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(job id, names)`` of every job whose ``env`` names launcher variables (left out, the launcher's win)."""
        return [(m.job_id, m.dropped_env) for u in self.units for m in u.members if m.dropped_env]


def member_comment(m: Member) -> list[str]:
    """Comment lines naming a job (as comment-safe text), its partner, its placeholder, its env names not used.

    The names are those of the job's ``env`` that the launcher's own variables replace.
    """
    partner = f", shares its GPUs with {comment_text(m.partner)}" if m.partner is not None else ""
    lines = [f"# Job {comment_text(m.job_id)}{partner}"]
    if m.placeholder:
        lines.append(f"# PLACEHOLDER: the instance gives no command; this job says so and exits {PLACEHOLDER_EXIT}.")
    if m.dropped_env:
        names = ", ".join(m.dropped_env)
        lines.append(f"# Not from the job's env (the launcher sets them): {names}.")
    return lines


def _job_env(job: Job) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``(kept, dropped)``: the job's variables without the launcher's, and the names left out.

    A name that is not a shell variable name is refused (``bad-env-name``), since an :class:`Instance` built
    in Python has not passed the instance checks (§7.3) and a name is written into shell code unquoted by
    nobody, but as ``NAME=VALUE`` it must still mean one variable.
    """
    kept: list[tuple[str, str]] = []
    dropped: list[str] = []
    for name, value in job.env or ():
        if not _ENV_NAME.fullmatch(name):
            problem = Problem(
                "bad-env-name",
                f"job {comment_text(job.id)}: env.{comment_text(name)}",
                "is not a shell variable name ([A-Za-z_][A-Za-z0-9_]*)",
            )
            raise InputError("instance", [problem])
        if is_launcher_env(name):
            dropped.append(name)
        else:
            kept.append((name, value))
    return tuple(kept), tuple(dropped)


def member_name(round_index: int, *job_ids: str) -> str:
    """The safe name of a job (or, with two ids, of a pair) in round ``round_index``."""
    prefix = f"wattplan-r{round_index}-" if len(job_ids) == 1 else f"wattplan-r{round_index}-pair-"
    return safe_name(prefix, *job_ids, max_len=NAME_LEN)


def _member(round_index: int, job: Job, partner: str | None) -> Member:
    env, dropped = _job_env(job)
    return Member(
        job_id=job.id,
        name=member_name(round_index, job.id),
        command=job.command or PLACEHOLDER_ARGV,
        placeholder=not job.command,
        workdir=job.workdir,
        env=env,
        user=job.user,
        partner=partner,
        dropped_env=dropped,
    )


def _unit(instance: Instance, round_index: int, entries: list[PlannedJob], hosts: HostMap) -> Unit:
    first = entries[0]
    for other in entries[1:]:
        same = (other.gpu_type, other.gpus, other.setting, other.placement) == (
            first.gpu_type,
            first.gpus,
            first.setting,
            first.placement,
        )
        if not same:
            raise ValueError(f"pair {first.job_id!r}/{other.job_id!r} differs in GPUs or setting; validate the plan")
    if first.gpu_type is None or first.gpus is None or first.setting is None or first.setting_unit is None:
        raise ValueError(f"running job {first.job_id!r} lacks its GPU type, count or setting")
    ids = [e.job_id for e in entries]
    members = tuple(_member(round_index, instance.job(e.job_id), e.shares_with) for e in entries)
    return Unit(
        name=members[0].name if len(members) == 1 else member_name(round_index, *ids),
        members=members,
        gpu_type=first.gpu_type,
        gpus=first.gpus,
        setting=first.setting,
        setting_unit=first.setting_unit,
        parts=tuple(Part(p.node, hosts.host(p.node), tuple(sorted(p.gpu_indices))) for p in first.placement),
    )


def build_model(plan: Plan, instance: Instance, hosts: HostMap) -> LaunchModel:
    """Group the plan's running jobs into units (pairs at their first member's place) and resolve hosts.

    The plan must have passed :func:`planner.core.validate.validate_plan` against ``instance``; a pair
    whose two entries disagree raises ``ValueError``.
    """
    running = plan.running()
    hosts.check(p.node for j in running for p in j.placement)
    by_id = {j.job_id: j for j in running}
    done: set[str] = set()
    units: list[Unit] = []
    for entry in running:
        if entry.job_id in done:
            continue
        group = [entry]
        if entry.shares_with is not None:
            group.append(by_id[entry.shares_with])
        done.update(e.job_id for e in group)
        units.append(_unit(instance, plan.round.index, group, hosts))
    names = [n for u in units for n in {u.name, *(m.name for m in u.members)}]
    if len(names) != len(set(names)):
        raise ValueError("two jobs got the same launch name (hash collision); rename one of them")
    return LaunchModel(
        round_index=plan.round.index,
        units=tuple(units),
        gpus_per_node={g.name: g.gpus_per_node for g in instance.gpu_types},
    )


@dataclass(frozen=True, slots=True)
class LaunchFile:
    """One rendered file: a relative ``/``-separated path inside the output folder, its text, its mode."""

    path: str
    text: str
    executable: bool = False


ROOT_JOBS_VAR = "WATTPLAN_ROOT_JOBS"
"""``WATTPLAN_ROOT_JOBS=allow``: a script run as root may run (or submit) jobs that name no user, as root."""


def root_guard(units: list[Unit], consequence: str, indent: str = "") -> list[str]:
    """Shell lines that stop a script run as root when a job of ``units`` names no user, before it does anything.

    A job's command is its author's: as root it runs only with the operator's ``WATTPLAN_ROOT_JOBS=allow``.
    ``consequence`` says what running the script would do with such a job (node scripts, ``submit.sh``,
    ``apply.sh``); ``indent`` is the lines' indentation.
    """
    userless = [m.job_id for u in units for m in u.members if not m.user]
    if not userless:
        return []
    ids = ", ".join(comment_text(j) for j in userless[:5]) + (", ..." if len(userless) > 5 else "")
    message = (
        f"wattplan: job(s) {ids} name no user, and this script runs as root: {consequence} "
        f"Add jobs[].user, or run with {ROOT_JOBS_VAR}=allow to run them as root."
    )
    lines = [
        f'if [ "$(id -u)" = 0 ] && [ "${{{ROOT_JOBS_VAR}:-}}" != allow ]; then',
        f"  printf '%s\\n' {sh_quote(message)} >&2",
        "  exit 2",
        "fi",
    ]
    return [indent + line for line in lines]
