"""The ``wattplan.plan/1`` contract: types, reading and atomic writing (docs/design.md §7.2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from wattplan.planner.contracts.domain import NodeGpus, SettingUnit
from wattplan.planner.contracts.jsonio import non_finite_numbers, read_json, write_json_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.schema_check import PLAN_SCHEMA, schema_problems
from wattplan.planner.contracts.solve_report import REPORT_KEYS, PlanNote, SolveReport, report_from_doc, report_to_doc

SCHEMA_ID = "wattplan.plan/1"
PlanStatus = Literal["optimal", "feasible", "fallback"]
BudgetOption = Literal["--power-cap-w", "--budget-j"]
BUDGET_OPTION_UNITS: dict[str, str] = {"--power-cap-w": "W", "--budget-j": "J"}
"""The options that override an instance's budget, and the unit of each one's value."""


@dataclass(frozen=True, slots=True)
class BudgetOverride:
    """A round budget given in place of the instance's when the plan was made (docs/design.md §7.2).

    ``budget_j`` is the budget the plan was made under (J); ``option`` and ``value`` say where it came
    from (``--power-cap-w`` in W, so ``budget_j = value x T``, or ``--budget-j`` in J);
    ``instance_budget_j`` is the instance's own budget (J, None: the instance has none).
    """

    budget_j: float
    option: BudgetOption
    value: float
    instance_budget_j: float | None

    def describe(self) -> str:
        """One line for people: the override in force and the instance budget it replaces."""
        own = "(no budget)" if self.instance_budget_j is None else f"{self.instance_budget_j / 1e6:.3f} MJ"
        return (
            f"budget: the plan's override {self.budget_j / 1e6:.3f} MJ "
            f"({self.option} {self.value:.12g} {BUDGET_OPTION_UNITS[self.option]}) in place of the instance's {own}"
        )

    def to_doc(self) -> dict[str, Any]:
        """The ``round.budget_override`` object of a plan document."""
        return {
            "budget_j": self.budget_j,
            "option": self.option,
            "value": self.value,
            "instance_budget_j": self.instance_budget_j,
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> BudgetOverride:
        """Inverse of :meth:`to_doc` (``doc`` has passed the plan schema)."""
        own = doc["instance_budget_j"]
        return cls(float(doc["budget_j"]), doc["option"], float(doc["value"]), None if own is None else float(own))


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """One job's line of a plan. A waiting job carries only ``job_id`` and ``state``."""

    job_id: str
    state: Literal["run", "wait"]
    gpu_type: str | None = None
    gpus: int | None = None
    setting: int | None = None
    setting_unit: SettingUnit | None = None
    shares_with: str | None = None
    placement: tuple[NodeGpus, ...] = ()
    steps_per_s: float = 0.0  # effective (shared) throughput (steps/s)
    power_w: float = 0.0  # per GPU while running (W)
    energy_j: float = 0.0  # this job's dynamic energy (J)
    steps: float | None = None
    progress: float | None = None
    restarts: bool | None = None
    basis: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    """The basis of the profile the prediction used (measured points, fitted, prior), when the instance has one."""


@dataclass(frozen=True, slots=True)
class PlanRound:
    """Round summary: predicted energy and progress, and how the plan was found."""

    index: int
    duration_s: float
    budget_j: float | None
    energy_j: float
    progress: float
    objective: str
    objective_value: float | None
    bound: float | None
    gap: float | None
    gpus_used: dict[str, int]
    nodes_on: dict[str, int]
    solver: str
    status: PlanStatus
    solve_s: float
    report: SolveReport = field(default_factory=SolveReport)
    extra: dict[str, Any] = field(default_factory=dict)
    budget_override: BudgetOverride | None = None
    """Set when ``budget_j`` was given in place of the instance's budget (None: ``budget_j`` is the instance's)."""
    instance_sha256: str | None = None
    """The identity of the instance the plan was made for (:func:`planner.contracts.instance_io.instance_sha256` of the
    instance as given, before any budget override); None in plans written before it was recorded."""

    def notes(self) -> dict[PlanNote, str]:
        """Why the plan is not simply the solver's plan for its objective (see :data:`PlanNote`)."""
        return dict(self.report.notes)


@dataclass(frozen=True, slots=True)
class Plan:
    """A round's plan: the summary and one line per job of the instance, in instance order."""

    round: PlanRound
    jobs: tuple[PlannedJob, ...]

    def running(self) -> list[PlannedJob]:
        """The jobs that run this round."""
        return [j for j in self.jobs if j.state == "run"]


def _job_doc(j: PlannedJob) -> dict[str, Any]:
    if j.state == "wait":
        return {"job_id": j.job_id, "state": "wait"}
    doc: dict[str, Any] = {
        "job_id": j.job_id,
        "state": "run",
        "gpu_type": j.gpu_type,
        "gpus": j.gpus,
        "setting": j.setting,
        "setting_unit": j.setting_unit,
        "shares_with": j.shares_with,
        "placement": [{"node": p.node, "gpu_indices": list(p.gpu_indices)} for p in j.placement],
        "steps_per_s": j.steps_per_s,
        "power_w": j.power_w,
        "energy_j": j.energy_j,
    }
    for name in ("steps", "progress", "restarts"):
        value = getattr(j, name)
        if value is not None:
            doc[name] = value
    if j.basis:
        doc["basis"] = dict(j.basis)
    return doc


def plan_to_doc(plan: Plan) -> dict[str, Any]:
    """The ``wattplan.plan/1`` document of a plan (inverse of :func:`parse_plan`)."""
    r = plan.round
    round_doc = {
        "index": r.index,
        "duration_s": r.duration_s,
        "budget_j": r.budget_j,
        "energy_j": r.energy_j,
        "progress": r.progress,
        "objective": r.objective,
        "objective_value": r.objective_value,
        "bound": r.bound,
        "gap": r.gap,
        "gpus_used": dict(r.gpus_used),
        "nodes_on": dict(r.nodes_on),
        "solver": r.solver,
        "status": r.status,
        "solve_s": r.solve_s,
        **report_to_doc(r.report),
        **r.extra,
    }
    if r.budget_override is not None:
        round_doc["budget_override"] = r.budget_override.to_doc()
    if r.instance_sha256 is not None:
        round_doc["instance_sha256"] = r.instance_sha256
    return {"schema": SCHEMA_ID, "round": round_doc, "jobs": [_job_doc(j) for j in plan.jobs]}


_OPTIONAL_ROUND_FIELDS = {"budget_override", "instance_sha256"}
_ROUND_FIELDS = {f.name for f in fields(PlanRound)} - {"report", "extra"} - _OPTIONAL_ROUND_FIELDS


def _parse_job(raw: dict[str, Any]) -> PlannedJob:
    if raw["state"] == "wait":
        return PlannedJob(job_id=raw["job_id"], state="wait")
    return PlannedJob(
        job_id=raw["job_id"],
        state="run",
        gpu_type=raw["gpu_type"],
        gpus=raw["gpus"],
        setting=raw["setting"],
        setting_unit=raw["setting_unit"],
        shares_with=raw["shares_with"],
        placement=tuple(NodeGpus(p["node"], tuple(p["gpu_indices"])) for p in raw["placement"]),
        steps_per_s=float(raw["steps_per_s"]),
        power_w=float(raw["power_w"]),
        energy_j=float(raw["energy_j"]),
        steps=raw.get("steps"),
        progress=raw.get("progress"),
        restarts=raw.get("restarts"),
        basis=raw["basis"] if isinstance(raw.get("basis"), dict) else None,
    )


def parse_plan(doc: Any, source: str = "plan") -> Plan:
    """Check a parsed plan document against the shipped schema and build a :class:`Plan`."""
    problems = schema_problems(doc, PLAN_SCHEMA, "plan-schema") + non_finite_numbers(doc)
    if problems:
        raise InputError(source, problems)
    r = doc["round"]
    try:
        report = report_from_doc(r)
    except (TypeError, ValueError, AttributeError) as exc:  # a record's unknown field or wrong type
        raise InputError(source, [Problem("bad-solve-report", "round", f"unreadable solve report: {exc}")]) from None
    known = _ROUND_FIELDS | _OPTIONAL_ROUND_FIELDS
    summary = PlanRound(
        **{k: r[k] for k in _ROUND_FIELDS},
        report=report,
        extra={k: v for k, v in r.items() if k not in known and k not in REPORT_KEYS},
        budget_override=BudgetOverride.from_doc(r["budget_override"]) if "budget_override" in r else None,
        instance_sha256=r.get("instance_sha256"),
    )
    return Plan(round=summary, jobs=tuple(_parse_job(j) for j in doc["jobs"]))


def with_budget_override(plan: Plan, override: BudgetOverride) -> Plan:
    """``plan`` declaring that it was made under ``override`` (its ``budget_j`` must be the override's)."""
    if plan.round.budget_j != override.budget_j:
        raise ValueError(f"the plan's budget {plan.round.budget_j} J is not the override's {override.budget_j} J")
    return replace(plan, round=replace(plan.round, budget_override=override))


def with_instance_sha256(plan: Plan, digest: str) -> Plan:
    """``plan`` recording ``digest`` as the identity of its instance (``round.instance_sha256``)."""
    return replace(plan, round=replace(plan.round, instance_sha256=digest))


def load_plan(path: Path) -> Plan:
    """Read and check a plan file; raises :class:`InputError` listing every problem."""
    return parse_plan(read_json(Path(path)), str(path))


def write_plan(plan: Plan, path: Path, written_by: Mapping[str, Any] | None = None) -> None:
    """Write a plan atomically (temp file + rename), with a top-level ``written_by`` record when given.

    ``written_by`` (``{"command": [...], "version": "..."}``, planner.contracts.provenance) says which command and
    version wrote the file; readers ignore it (:func:`parse_plan` does not keep it).
    """
    doc = plan_to_doc(plan)
    if written_by is not None:
        doc["written_by"] = dict(written_by)
    write_json_atomic(path, doc)
