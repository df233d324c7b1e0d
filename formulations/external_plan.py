"""A plan from an outside solver's solution of an exported model (``wattplan plan --from-solution``).

The solution file (:mod:`formulations.solution_io`) names columns by the export names
(:meth:`~formulations.ir.LinearModel.export_names`); they are mapped back onto the round's model,
built from the instance exactly as for an export. Both stages of an export have the same
columns, so a solution of either stage reads the same way. The values are checked against the
round's model (bounds, integrality, every row, the energy budget included; a stage's progress
floor is not known here and not checked), decoded into allocations
(:meth:`~formulations.round_model.RoundModel.decode`), assembled and validated.

The plan's status is ``feasible``, never ``optimal``: the outside solver's claim is not a proof
here. Its solver is ``external:<format>`` (``external:cbc``, ``external:highs``,
``external:scip``), and its report has one stage, ``external``, with the solver's status and the
objective its file reports (that of the file's minimisation). Every problem is a
:class:`~planner.contracts.problems.SolutionRejected` naming the file, the line and the column or row.

**The gap to wattplan's own bound.** The outside solver's word is not a proof, but wattplan can measure the answer:
the caller's ``judge`` (:func:`formulations.solution_bound.judged`, given by the front door) returns a proven bound
of the round's objective, the answer's gap to it and a note; they become the plan's ``bound``, ``gap``,
``lp_bound`` and ``lp_bound_note``. (The bound is reached through the caller so that this module, which the
command-line backend reads its solutions with, imports no backend.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from wattplan.formulations.ir import LinearModel
from wattplan.formulations.round_model import ENERGY_ROW, RoundModel, build_round_model
from wattplan.formulations.solution_io import ExternalSolution, read_solution
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, Problem, SolutionRejected, capped
from wattplan.planner.contracts.solve_report import SolveReport, StageRecord
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.validate import InvalidPlanError, checked

TOLERANCE = 1e-6
"""Bounds, integrality and rows must hold within this (relative on rows, as ``LinearModel.is_feasible``)."""
ROW_MEANING = {ENERGY_ROW: " (the round's energy budget, J; stage 1 of the energy objectives drops it)"}
"""Said after a violated row's name where the name does not say it."""
LISTED = 5
"""Columns named in a violated row's message (the nonzero ones, first in file order)."""


Judge = Callable[[RoundModel, np.ndarray, float], tuple[float | None, float | None, str]]
"""``judge(rm, values, v)``: a proven bound of the round's objective, the gap of ``v`` (the answer's objective
value) to it, and a note saying how the bound was found or why there is none."""


def external_plan(instance: Instance, source: Path, judge: Judge | None = None) -> Plan:
    """The validated plan of the solution in ``source`` for ``instance`` (module docstring).

    ``judge``: the bound and gap of the answer (module docstring); None: the plan has neither.
    """
    solution = read_solution(source)
    rm = build_round_model(instance)
    names = rm.lm.export_names()
    values, lines = solution_values(rm.lm, solution, source, names)
    problems = violations(rm.lm, values, lines, source, names)
    if problems:
        raise SolutionRejected(str(source), capped(problems))
    values[rm.lm.is_int] = np.round(values[rm.lm.is_int])
    allocations = rm.decode(values)
    objective = instance.round.objective
    solver = f"external:{solution.format}"
    report = SolveReport()
    report.stages.append(
        StageRecord(
            stage="external",
            status="feasible",
            objective=solution.objective,
            progress=float(rm.lm.objectives["progress"] @ values),
            energy_j=float(rm.lm.objectives["energy"] @ values),
            message=f"{solution.format} solution {Path(source).name}: {solution.status}",
        )
    )
    draft = assemble_plan(instance, allocations, SolveInfo(solver=solver, status="feasible"))
    value = _objective_value(rm, objective, draft, values)
    bound, gap, report.lp_bound_note = (None, None, "not computed") if judge is None else judge(rm, values, value)
    report.lp_bound = bound
    info = SolveInfo(
        solver=solver,
        status="feasible",
        objective=objective,
        objective_value=value,
        bound=bound,
        gap=gap,
        report=report,
    )
    try:
        return checked(instance, assemble_plan(instance, allocations, info))
    except InvalidPlanError as exc:
        raise SolutionRejected(str(source), exc.problems) from None


def _objective_value(rm: RoundModel, objective: str, draft: Plan, values: np.ndarray) -> float:
    """The plan's value for its objective: progress, energy (J) or excess energy (J) of the decoded plan."""
    if objective == "progress":
        return draft.round.progress
    if objective == "energy":
        return draft.round.energy_j
    return float(rm.lm.objectives["excess_energy"] @ rm.encode(rm.decode(values)))


def solution_values(
    lm: LinearModel, solution: ExternalSolution, source: Path, names: tuple[list[str], list[str]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The column vector of ``solution`` and, per column, the file line that set it (0: not listed, so 0).

    ``names``: ``lm.export_names()`` if already made. An unknown name, a column given twice, or
    (for a format that lists every column) a column not given is a :class:`SolutionRejected`.
    Row names are skipped where the format mixes rows in (CBC's ``printingOptions all``).
    """
    col_names, row_names = names or lm.export_names()
    index = {name: i for i, name in enumerate(col_names)}
    rows = set(row_names) - index.keys() if solution.may_list_rows else set()
    values = np.zeros(lm.num_cols)
    lines = np.zeros(lm.num_cols, dtype=np.int64)
    problems: list[Problem] = []
    for entry in solution.values:
        i = index.get(entry.name)
        if i is None:
            if entry.name not in rows:
                problems.append(
                    Problem("unknown-column", f"{source}:{entry.line}", f"column {entry.name!r} is not in the model")
                )
            continue
        if lines[i]:
            problems.append(
                Problem(
                    "repeated-column",
                    f"{source}:{entry.line}",
                    f"column {entry.name!r} is given again (first on line {lines[i]})",
                )
            )
            continue
        values[i], lines[i] = entry.value, entry.line
    if solution.lists_every_column:
        for i in np.flatnonzero(lines == 0).tolist():
            problems.append(
                Problem(
                    "missing-column",
                    str(source),
                    f"column {col_names[i]!r} has no value ({solution.format} lists every column of the model)",
                )
            )
    if problems:
        raise SolutionRejected(str(source), capped(problems))
    return values, lines


def violations(
    lm: LinearModel,
    values: np.ndarray,
    lines: np.ndarray,
    source: Path,
    names: tuple[list[str], list[str]] | None = None,
) -> list[Problem]:
    """Bounds, integrality and rows that ``values`` breaks (beyond :data:`TOLERANCE`), each naming its place.

    Rows are checked with integer columns rounded (what the plan will use); ``names`` as in
    :func:`solution_values`.
    """
    col_names, row_names = names or lm.export_names()

    def where(i: int) -> str:
        return f"{source}:{lines[i]}" if lines[i] else f"{source} (column not listed: 0)"

    problems: list[Problem] = []
    low = np.flatnonzero(values < lm.lb - TOLERANCE)
    high = np.flatnonzero(values > lm.ub + TOLERANCE)
    for i in np.union1d(low, high).tolist():
        problems.append(
            Problem(
                "out-of-bounds",
                where(i),
                f"column {col_names[i]!r} = {values[i]:.10g} is outside its bounds [{lm.lb[i]:g}, {lm.ub[i]:g}]",
            )
        )
    frac = np.abs(values - np.round(values))
    for i in np.flatnonzero(lm.is_int & (frac > TOLERANCE)).tolist():
        problems.append(
            Problem("not-integer", where(i), f"column {col_names[i]!r} = {values[i]:.10g} must be an integer")
        )
    rounded = np.where(lm.is_int, np.round(values), values)
    act = lm.row_activity(rounded)
    slack = TOLERANCE * np.maximum(1.0, np.abs(act))
    broken = np.flatnonzero((act < lm.row_lo - slack) | (act > lm.row_hi + slack))
    order = np.argsort(lm.a_rows, kind="stable")
    starts = np.searchsorted(lm.a_rows[order], np.arange(lm.num_rows + 1))
    for r in broken[:MAX_REPORTED_PROBLEMS].tolist():
        in_row = lm.a_cols[order[starts[r] : starts[r + 1]]]
        in_row = in_row[rounded[in_row] != 0]
        in_row = in_row[np.argsort(lines[in_row], kind="stable")]
        named = ", ".join(f"{col_names[c]} = {rounded[c]:g} (line {lines[c]})" for c in in_row[:LISTED].tolist())
        more = f" and {len(in_row) - LISTED} more" if len(in_row) > LISTED else ""
        problems.append(
            Problem(
                "violated-row",
                f"{source} (row {row_names[r]})",
                f"row {row_names[r]!r}{ROW_MEANING.get(lm.row_names[r], '')}: {act[r]:.10g} is outside "
                f"[{lm.row_lo[r]:g}, {lm.row_hi[r]:g}]; its columns set: {named or 'none'}{more}",
            )
        )
    return problems
