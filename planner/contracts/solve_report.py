"""How a plan was found: the typed solve report and its one serialisation (docs/design.md §5.8).

The solve strategy fills a :class:`SolveReport` as it goes (the model's size, the heuristic
plans, the LP bound, one :class:`StageRecord` per solver call, the progress target of the
``energy`` objective, and notes); the plan carries it, and :func:`report_to_doc` writes it into
the plan's ``round`` object under the keys listed in :data:`REPORT_KEYS` (read back by
:func:`report_from_doc`). Nothing here reads a report to make a decision: the strategy keeps
its own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

PlanNote = Literal["objective_note", "fallback_reason", "floor_note", "bound_note"]
"""Why a plan is not simply the solver's plan for its objective:

* ``objective_note``: the objective switched (the ``energy`` target was unreachable or
  unsolved, so the plan is for ``progress``), or the start plan was kept;
* ``fallback_reason``: no solver plan arrived, the best heuristic plan is used;
* ``floor_note``: a heuristic plan had more progress than the solver's and was kept;
* ``bound_note``: a solver's bound was contradicted by its own solution and dropped.
"""
PLAN_NOTES: tuple[PlanNote, ...] = get_args(PlanNote)

StageStatus = Literal["optimal", "feasible", "infeasible", "no_solution", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class StageRecord:
    """One solver call and what it returned.

    Its status, objective and bound (model units), the progress and energy (J) of the solution
    it returned, and ``limit_s``, the limit it was given (s).
    """

    stage: str
    status: StageStatus
    objective: float | None = None
    bound: float | None = None
    progress: float | None = None
    energy_j: float | None = None
    limit_s: float | None = None
    solve_s: float = 0.0
    message: str = ""
    stats: dict[str, float] = field(default_factory=dict)
    """The solver's search effort where it tells it (``nodes``, ``lp_iterations``, ``branches``, ``conflicts``)."""
    on_clock: bool | None = None
    """True when the stage stopped on the clock: at its time limit, killed by the watchdog, or skipped for want of
    time (its answer then depends on the machine's speed and load); False when it stopped on its own (a proof, the
    gap, a node limit); None when the solver does not say (docs/design.md §5.15)."""


@dataclass(frozen=True, slots=True)
class HeuristicRecord:
    """A heuristic plan's weighted progress and the seconds it took to compute."""

    progress: float
    seconds: float


@dataclass(frozen=True, slots=True)
class ModelStats:
    """Size of the round model and what option enumeration kept and pruned."""

    columns: int
    rows: int
    nonzeros: int
    options: dict[str, int]
    enumerated: dict[str, int]
    pruned: dict[str, int]
    build_s: float


@dataclass(frozen=True, slots=True)
class ProgressTarget:
    """The ``energy`` objective's target ``(1 - delta) * P*`` and where ``P*`` came from."""

    best_without_budget: float
    solver_without_budget: float | None
    greedy_without_budget: float
    delta: float
    target: float


@dataclass(slots=True)
class SolveReport:
    """Everything a planning call reports about how it found its plan."""

    model: ModelStats | None = None
    heuristics: dict[str, HeuristicRecord] = field(default_factory=dict)
    start: str | None = None
    lp_bound: float | None = None
    lp_bound_note: str | None = None
    stages: list[StageRecord] = field(default_factory=list)
    progress_target: ProgressTarget | None = None
    notes: dict[PlanNote, str] = field(default_factory=dict)

    @property
    def solve_s(self) -> float:
        """Seconds the solver calls took, summed over the stages."""
        return sum(s.solve_s for s in self.stages)

    @property
    def clock_stops(self) -> int:
        """Stages that stopped on the clock (:attr:`StageRecord.on_clock`): 0 means no stage's answer hung on time."""
        return sum(s.on_clock is True for s in self.stages)


REPORT_KEYS = ("model", "heuristics", "start", "lp_bound", "lp_bound_note", "stages", "progress_target", *PLAN_NOTES)
"""Keys of a plan's ``round`` object that belong to the solve report."""


def _stage_doc(stage: StageRecord) -> dict[str, Any]:
    """One stage as plan JSON; ``stats`` and ``on_clock`` only when the solver told them."""
    doc = asdict(stage)
    if not stage.stats:
        del doc["stats"]
    if stage.on_clock is None:
        del doc["on_clock"]
    return doc


def report_to_doc(report: SolveReport) -> dict[str, Any]:
    """The report as plan JSON: only what was recorded (a greedy plan has no model or stages)."""
    doc: dict[str, Any] = {}
    if report.model is not None:
        doc["model"] = asdict(report.model)
    if report.heuristics:
        doc["heuristics"] = {name: asdict(h) for name, h in report.heuristics.items()}
    if report.start is not None:
        doc["start"] = report.start
    if report.lp_bound_note is not None:
        doc["lp_bound"] = report.lp_bound
        doc["lp_bound_note"] = report.lp_bound_note
    if report.stages:
        doc["stages"] = [_stage_doc(s) for s in report.stages]
    if report.progress_target is not None:
        doc["progress_target"] = asdict(report.progress_target)
    for note, text in report.notes.items():
        doc[note] = text
    return doc


def report_from_doc(doc: Mapping[str, Any]) -> SolveReport:
    """The report written by :func:`report_to_doc` into a plan's ``round`` object (other keys ignored)."""
    model = doc.get("model")
    target = doc.get("progress_target")
    return SolveReport(
        model=ModelStats(**model) if isinstance(model, Mapping) else None,
        heuristics={k: HeuristicRecord(**v) for k, v in (doc.get("heuristics") or {}).items()},
        start=doc.get("start"),
        lp_bound=doc.get("lp_bound"),
        lp_bound_note=doc.get("lp_bound_note"),
        stages=[StageRecord(**s) for s in doc.get("stages") or []],
        progress_target=ProgressTarget(**target) if isinstance(target, Mapping) else None,
        notes={k: str(doc[k]) for k in PLAN_NOTES if doc.get(k)},
    )
