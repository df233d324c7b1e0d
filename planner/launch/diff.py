"""What changes between two rounds' plans, job by job, so a launcher touches only what changed.

Each job gets at most one action, the most disruptive that applies, in this order:

=========  =============================================================  ===========
action     when                                                           restart
=========  =============================================================  ===========
stop       running in the old plan, waiting (or absent) in the new one     (stops)
resize     running in both, with another GPU type or GPU count             yes
move       same type and count, other nodes or GPU indices                 yes
re-set     same GPUs, another setting (power limit or clock)               no
re-pair    same GPUs and setting, another partner (or none)                no
start      waiting (or absent) in the old plan, running in the new one     (starts)
=========  =============================================================  ===========

``changes`` lists every field that differs (a resize may also change the setting). Actions are
listed stops first and starts last, so GPUs are freed before they are taken again.

Only plans that pass are diffed (:func:`diff_problems`): given its instance, a plan must pass the
validator against it (its recorded ``round.instance_sha256`` included); without one, the checks
that need no instance (:func:`planner.core.validate.plan_problems`). Two rounds have two instances, so
the two plans' digests are never compared with each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.core.validate import plan_problems, validate_plan

SCHEMA_ID = "wattplan.diff/1"
ACTIONS = ("stop", "resize", "move", "re-set", "re-pair", "start")
FIELDS = ("gpu_type", "gpus", "setting", "setting_unit", "shares_with", "placement")


@dataclass(frozen=True, slots=True)
class JobConfig:
    """What a running job holds: the fields a launcher acts on."""

    gpu_type: str
    gpus: int
    setting: int
    setting_unit: str
    shares_with: str | None
    placement: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def of(cls, j: PlannedJob) -> JobConfig:
        """The configuration of running plan entry ``j``, its placement sorted by node and GPU index."""
        return cls(
            gpu_type=str(j.gpu_type),
            gpus=int(j.gpus or 0),
            setting=int(j.setting or 0),
            setting_unit=str(j.setting_unit),
            shares_with=j.shares_with,
            placement=tuple(sorted((p.node, tuple(sorted(p.gpu_indices))) for p in j.placement)),
        )

    def to_doc(self) -> dict[str, Any]:
        """The ``from``/``to`` object of a ``wattplan.diff/1`` action."""
        return {
            "gpu_type": self.gpu_type,
            "gpus": self.gpus,
            "setting": self.setting,
            "setting_unit": self.setting_unit,
            "shares_with": self.shares_with,
            "placement": [{"node": n, "gpu_indices": list(ix)} for n, ix in self.placement],
        }

    def summary(self) -> str:
        """``v100 x2 @ 250 W on v100-0[0,1] with 'b'`` (one line)."""
        unit = "W" if self.setting_unit == "power_limit_w" else "MHz"
        where = " ".join(f"{n}[{','.join(map(str, ix))}]" for n, ix in self.placement)
        partner = f" with {self.shares_with!r}" if self.shares_with is not None else ""
        return f"{self.gpu_type} x{self.gpus} @ {self.setting} {unit} on {where}{partner}"


@dataclass(frozen=True, slots=True)
class Action:
    """One job's action (see the module docstring), with its changed fields and both configurations.

    ``old`` is None for a start and ``new`` is None for a stop; ``restart`` is true for a
    resize or a move.
    """

    action: str
    job_id: str
    restart: bool
    changes: tuple[str, ...]
    old: JobConfig | None
    new: JobConfig | None

    def to_doc(self) -> dict[str, Any]:
        """The action as an entry of the ``actions`` list of a ``wattplan.diff/1`` document."""
        return {
            "action": self.action,
            "job_id": self.job_id,
            "restart": self.restart,
            "changes": list(self.changes),
            "from": None if self.old is None else self.old.to_doc(),
            "to": None if self.new is None else self.new.to_doc(),
        }


@dataclass(frozen=True, slots=True)
class PlanDiff:
    """The actions from round ``from_round``'s plan to round ``to_round``'s, stops first, starts last."""

    from_round: int
    to_round: int
    actions: tuple[Action, ...]
    unchanged: tuple[str, ...]  # running in both plans, nothing changed

    def summary(self) -> dict[str, int]:
        """Number of actions of each kind (every kind of ``ACTIONS`` listed), plus ``unchanged``."""
        counts = {a: 0 for a in ACTIONS}
        for a in self.actions:
            counts[a.action] += 1
        return {**counts, "unchanged": len(self.unchanged)}


def _classify(old: JobConfig, new: JobConfig) -> tuple[str | None, tuple[str, ...]]:
    changes = tuple(f for f in FIELDS if getattr(old, f) != getattr(new, f))
    if old.gpu_type != new.gpu_type or old.gpus != new.gpus:
        return "resize", changes
    if old.placement != new.placement:
        return "move", changes
    if old.setting != new.setting or old.setting_unit != new.setting_unit:
        return "re-set", changes
    if old.shares_with != new.shares_with:
        return "re-pair", changes
    return None, changes


def diff_problems(plan: Plan, instance: Instance | None) -> list[Problem]:
    """Why ``plan`` cannot be diffed: every violation against ``instance``, or without one the instance-free ones."""
    return plan_problems(plan) if instance is None else validate_plan(instance, plan)


def diff_plans(old: Plan, new: Plan) -> PlanDiff:
    """The actions that turn ``old`` into ``new`` (see the module docstring); deterministic order."""
    before = {j.job_id: JobConfig.of(j) for j in old.jobs if j.state == "run"}
    after = {j.job_id: JobConfig.of(j) for j in new.jobs if j.state == "run"}
    actions: list[Action] = []
    unchanged: list[str] = []
    for job_id in sorted(before.keys() | after.keys()):
        o, n = before.get(job_id), after.get(job_id)
        if n is None:
            actions.append(Action("stop", job_id, False, (), o, None))
        elif o is None:
            actions.append(Action("start", job_id, False, (), None, n))
        else:
            kind, changes = _classify(o, n)
            if kind is None:
                unchanged.append(job_id)
            else:
                actions.append(Action(kind, job_id, kind in ("resize", "move"), changes, o, n))
    actions.sort(key=lambda a: (ACTIONS.index(a.action), a.job_id))
    return PlanDiff(old.round.index, new.round.index, tuple(actions), tuple(unchanged))


def diff_to_doc(d: PlanDiff) -> dict[str, Any]:
    """The ``wattplan.diff/1`` JSON document of a diff."""
    return {
        "schema": SCHEMA_ID,
        "from_round": d.from_round,
        "to_round": d.to_round,
        "summary": d.summary(),
        "actions": [a.to_doc() for a in d.actions],
        "unchanged": list(d.unchanged),
    }


def diff_table(d: PlanDiff) -> Table:
    """A rich table, one row per action; job ids are shown as plain text (never as markup)."""
    table = Table(title=f"round {d.from_round} -> {d.to_round}: {len(d.actions)} action(s)", title_justify="left")
    for col in ("action", "job", "from", "to", "changes"):
        table.add_column(col)
    for a in d.actions:
        table.add_row(
            Text(a.action + (" (restart)" if a.restart else "")),
            Text(repr(a.job_id)),
            Text("-" if a.old is None else a.old.summary()),
            Text("-" if a.new is None else a.new.summary()),
            Text(", ".join(a.changes)),
        )
    if d.unchanged:
        table.caption = f"unchanged: {len(d.unchanged)} job(s)"
    return table
