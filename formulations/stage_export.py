"""Export both lexicographic stages of a round (docs/design.md, "Model exchange").

The strategy (:mod:`formulations.solve`) solves two models per round; an outside solver needs
both to reproduce a plan:

* ``progress``: stage 1 maximises progress under the budget (``P1``); stage 2 minimises energy
  with ``progress >= (1 - 1e-6) P1``;
* ``energy`` / ``efficiency``: stage 1 maximises progress with the ``energy`` row dropped
  (``P*``); stage 2 minimises energy (excess energy) with ``progress >= (1 - delta) P*``, the
  budget still holding.

``--export-model FILE.mps`` writes stage 1 to ``FILE.mps`` and stage 2 to ``FILE.stage2.mps``
(:func:`stage2_path`). Stage 2's floor is the right-hand side of its row ``progress_floor``: the
planner's own floor when the strategy writes it (:class:`StageExport`, called where the
strategy builds stage 2), or the floor for a stage-1 optimum an outsider found
(:func:`export_stages`, ``--stage2-progress P``). ``.mps`` files come from
:mod:`formulations.mps` (a minimisation, whatever the stage's sense); ``.lp`` files from the
backend's own writer.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wattplan.formulations.backends.base import Backend, FeatureUnsupported, ObjectiveName
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.mps import write_mps
from wattplan.formulations.round_model import ENERGY_ROW, PROGRESS_ROW, RoundModel
from wattplan.planner.contracts.domain import Instance, Objective

STAGE2_SUFFIX = ".stage2"
"""Put before the file's suffix for stage 2: ``x.mps`` -> ``x.stage2.mps``."""
SECOND_STAGE_VECTOR: dict[Objective, ObjectiveName] = {
    "progress": "energy",
    "energy": "energy",
    "efficiency": "excess_energy",
}
"""What stage 2 minimises for each objective."""


LEXICOGRAPHIC_TOLERANCE = 1e-6
"""The second ``progress`` stage keeps ``P >= (1 - 1e-6) P1`` (the strategy and stage 2's export alike)."""


def stage2_path(path: Path) -> Path:
    """Where stage 2 goes when stage 1 goes to ``path``: ``x.mps`` -> ``x.stage2.mps``."""
    path = Path(path)
    return path.with_name(f"{path.stem}{STAGE2_SUFFIX}{path.suffix}")


def floor_factor(instance: Instance) -> tuple[float, str]:
    """Stage 2's floor as a share of stage 1's optimum, and how to say it: ``(1 - 1e-6)`` or ``(1 - delta)``."""
    if instance.round.objective == "progress":
        return 1 - LEXICOGRAPHIC_TOLERANCE, f"(1 - {LEXICOGRAPHIC_TOLERANCE:g}) x P1"
    return 1 - instance.round.delta, f"(1 - delta) x P*, delta = {instance.round.delta:g}"


def first_stage_model(lm: LinearModel, objective: Objective) -> LinearModel:
    """Stage 1's model: ``lm`` for ``progress``, ``lm`` without its ``energy`` row otherwise."""
    return lm if objective == "progress" else lm.without_rows([ENERGY_ROW])


def second_stage_model(lm: LinearModel, floor: float) -> LinearModel:
    """Stage 2's model: ``lm`` (budget kept) with the row ``progress_floor``: ``progress >= floor``."""
    return lm.with_row(lm.objectives["progress"], floor, np.inf, PROGRESS_ROW, "progress")


def _first_comments(objective: Objective) -> list[str]:
    budget = "under the energy budget" if objective == "progress" else "without the energy budget (row dropped)"
    return [
        f"stage 1 of 2 ({objective} objective): most weighted progress {budget}",
        f"stage 2 is in the file *{STAGE2_SUFFIX}.* beside this one",
    ]


def _second_comments(instance: Instance, vector: ObjectiveName, floor: float, stage1: float | None) -> list[str]:
    factor, rule = floor_factor(instance)
    what = "energy (J)" if vector == "energy" else "excess energy (J)"
    found = f", stage 1's optimum {stage1!r}" if stage1 is not None else ""
    return [
        f"stage 2 of 2 ({instance.round.objective} objective): least {what} with progress >= {floor!r}",
        f"that floor is the RHS of row {PROGRESS_ROW}: {rule}{found}",
        f"for your own stage-1 optimum P set that RHS to {factor!r} x P (or: wattplan plan --stage2-progress P)",
    ]


def _write(backend: Backend, lm: LinearModel, vector: ObjectiveName, path: Path, comments: list[str]) -> None:
    """``.mps`` through :func:`formulations.mps.write_mps`, anything else through the backend's writer."""
    maximize = vector == "progress"
    if Path(path).suffix == ".mps":
        write_mps(lm, vector, maximize, path, comments)
    else:
        backend.export(lm, vector, maximize, path)


@dataclass
class StageExport:
    """The strategy's hook: writes stage 1 when asked, and stage 2 the first time a stage-2 model is built.

    ``written`` lists the files in the order written. Stage 2 is written once: if the
    ``energy`` objective falls back to ``progress`` after its target stage, the file keeps the
    target model the planner tried first. No stage 2 is written when stage 1 found no plan
    (there is no floor to put in it); a stage-2 file left by an earlier export is removed when
    stage 1 is written, so the files on disk always belong together.
    """

    backend: Backend
    path: Path
    instance: Instance
    written: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.backend.features.export:
            raise FeatureUnsupported(f"the {self.backend.name} backend cannot export a model")

    def first(self, lm: LinearModel) -> None:
        """Write stage 1 of the round model ``lm`` to :attr:`path`."""
        objective = self.instance.round.objective
        _write(self.backend, first_stage_model(lm, objective), "progress", self.path, _first_comments(objective))
        self.written.append(Path(self.path))
        with suppress(OSError):  # an earlier export's stage 2 does not belong to this stage 1
            stage2_path(self.path).unlink(missing_ok=True)

    def second(self, lm: LinearModel, vector: ObjectiveName, stage1: float | None = None) -> None:
        """Write stage 2, ``lm`` with its ``progress_floor`` row, minimising ``vector`` (once; class docstring).

        ``stage1``: the stage-1 optimum the floor was taken from, for the file's header.
        """
        target = stage2_path(self.path)
        if target in self.written:
            return
        floor = float(lm.row_lo[lm.row_names.index(PROGRESS_ROW)])
        _write(self.backend, lm, vector, target, _second_comments(self.instance, vector, floor, stage1))
        self.written.append(target)


def export_stages(backend: Backend, rm: RoundModel, path: Path, stage1_progress: float) -> list[Path]:
    """Write both stages of ``rm`` without solving; stage 2's floor from an outside ``stage1_progress``.

    The floor is the planner's share of it (:func:`floor_factor`). Returns the files written.
    """
    instance = rm.instance
    export = StageExport(backend, path, instance)
    export.first(rm.lm)
    factor, _ = floor_factor(instance)
    vector = SECOND_STAGE_VECTOR[instance.round.objective]
    export.second(second_stage_model(rm.lm, factor * stage1_progress), vector, stage1_progress)
    return export.written
