"""Read an outside solver's solution file of an exported model: CBC, HiGHS or SCIP, told apart by content.

* CBC (``cbc model.mps -solve -solution FILE``, the ``solu`` command): a first line
  ``<status> - objective value <v>`` (``Optimal``, ``Stopped on time``, ``Infeasible``, ...), then
  ``<index> <name> <value> <reduced cost>`` per column, a line marked ``**`` where the value breaks
  a bound. CBC lists only nonzero columns unless told ``-printingOptions all``, which lists the
  rows first (their names are skipped).
* HiGHS (``Highs.writeSolution(FILE)``, the raw style, its default): ``Model status``, the status,
  ``# Primal solution values``, ``Feasible``, ``Objective <v>``, ``# Columns <n>`` and ``n`` lines
  ``<name> <value>``, then rows and duals (not read). HiGHS lists every column.
* SCIP (``Model.writeSol``, ``writeBestSol``, the shell's ``write solution``): an optional
  ``solution status: ...`` line, ``objective value: <v>``, then ``<name> <value> (obj:<c>)`` per
  nonzero column (zeros are left out).

The objective a file reports is that of the file's model: a wattplan MPS file is always a
minimisation (:mod:`formulations.mps`). A file that is none of these, or whose solver says it
has no solution, is a :class:`~planner.contracts.problems.SolutionRejected` naming the file and line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from wattplan.planner.contracts.problems import InputError, Problem, SolutionRejected

SolutionFormat = Literal["cbc", "highs", "scip"]
FORMATS = "CBC (-solution), HiGHS (writeSolution, raw style) or SCIP (writeSol)"
"""The formats :func:`read_solution` knows, for messages."""

_CBC_HEADER = re.compile(r"^(?P<status>\S.*?) - objective value (?P<objective>\S+)\s*$")


@dataclass(frozen=True, slots=True)
class SolutionValue:
    """One ``name value`` entry of a solution file and its line number (1-based)."""

    name: str
    value: float
    line: int


@dataclass(frozen=True, slots=True)
class ExternalSolution:
    """What a solution file says.

    ``status``: the solver's own words; ``objective``: the objective it reports (of the file's
    minimisation), None if it gives none; ``values``: its entries; ``lists_every_column``: the
    format lists zeros too (HiGHS), so a column it misses is an error; ``may_list_rows``: row
    activities may be mixed in (CBC's ``printingOptions all``) and row names are skipped.
    """

    format: SolutionFormat
    status: str
    objective: float | None
    values: tuple[SolutionValue, ...]
    lists_every_column: bool
    may_list_rows: bool


def read_solution(path: Path) -> ExternalSolution:
    """Read ``path`` in the format its content shows (module docstring).

    Raises ``FileNotFoundError`` for a missing file, ``InputError`` for a folder, and
    :class:`SolutionRejected` for a file that is not a solution in a known format or whose
    solver found no solution.
    """
    if Path(path).is_dir():
        raise InputError(str(path), [Problem("bad-option", "--from-solution", f"{path} is a folder, not a file")])
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise _rejected(path, 0, "not-a-solution", f"is empty; expected a {FORMATS} solution file")
    head = lines[first].strip()
    if head == "Model status" or any(line.strip() == "# Primal solution values" for line in lines[:20]):
        return _read_highs(path, lines)
    if head.startswith(("solution status:", "objective value:", "no solution available")):
        return _read_scip(path, lines, first)
    if _CBC_HEADER.match(head) or head.split()[0] in ("Optimal", "Infeasible", "Integer", "Unbounded", "Stopped"):
        return _read_cbc(path, lines, first)
    raise _rejected(path, first + 1, "not-a-solution", f"unknown format (starts {head[:60]!r}); expected {FORMATS}")


def _rejected(path: Path, line: int, code: str, message: str) -> SolutionRejected:
    """A :class:`SolutionRejected` with one problem at ``path:line`` (line 0: the whole file)."""
    where = f"{path}:{line}" if line else str(path)
    return SolutionRejected(str(path), [Problem(code, where, message)])


def _number(path: Path, line: int, text: str, what: str) -> float:
    """``text`` as a float, else a rejection naming the line and ``what`` it should be."""
    try:
        value = float(text)
    except ValueError:
        raise _rejected(path, line, "bad-number", f"{what} {text!r} is not a number") from None
    if math.isnan(value):
        raise _rejected(path, line, "bad-number", f"{what} is NaN")
    return value


def _read_cbc(path: Path, lines: list[str], first: int) -> ExternalSolution:
    """CBC's solution file (module docstring)."""
    head = lines[first].strip()
    match = _CBC_HEADER.match(head)
    status = match.group("status") if match else head
    usable = status.startswith("Optimal") or (status.startswith("Stopped") and "no integer solution" not in status)
    if not usable:
        raise _rejected(path, first + 1, "no-solution", f"CBC reports {status!r}: no integer solution to read")
    objective = _number(path, first + 1, match.group("objective"), "the objective value") if match else None
    values = []
    for k in range(first + 1, len(lines)):
        fields = lines[k].split()
        if not fields:
            continue
        if fields[0] == "**":
            fields = fields[1:]
        if len(fields) < 3 or not (fields[0].isascii() and fields[0].isdigit()):
            raise _rejected(path, k + 1, "bad-line", "expected '<index> <name> <value> <reduced cost>' (CBC)")
        values.append(SolutionValue(fields[1], _number(path, k + 1, fields[2], f"the value of {fields[1]!r}"), k + 1))
    return ExternalSolution("cbc", status, objective, tuple(values), lists_every_column=False, may_list_rows=True)


def _read_highs(path: Path, lines: list[str]) -> ExternalSolution:
    """HiGHS's raw solution file (module docstring)."""
    stripped = [line.strip() for line in lines]
    status = stripped[1] if len(stripped) > 1 and stripped[0] == "Model status" else "unknown"
    try:
        at = stripped.index("# Primal solution values")
    except ValueError:
        raise _rejected(path, 0, "not-a-solution", "HiGHS file without '# Primal solution values'") from None
    primal = stripped[at + 1] if at + 1 < len(stripped) else ""
    if primal != "Feasible":
        raise _rejected(
            path, at + 2, "no-solution", f"HiGHS reports primal solution {primal!r} (model status {status!r})"
        )
    objective = None
    k = at + 2
    if k < len(stripped) and stripped[k].startswith("Objective"):
        objective = _number(path, k + 1, stripped[k].split()[-1], "the objective value")
        k += 1
    header = stripped[k].split() if k < len(stripped) else []
    if header[:2] != ["#", "Columns"] or len(header) != 3 or not (header[2].isascii() and header[2].isdigit()):
        raise _rejected(path, k + 1, "bad-line", "expected '# Columns <count>' (HiGHS)")
    count = int(header[2])
    values = []
    for j in range(k + 1, k + 1 + count):
        fields = stripped[j].split() if j < len(stripped) else []
        if len(fields) != 2:
            raise _rejected(path, j + 1, "bad-line", f"expected '<name> <value>', column {j - k} of {count} (HiGHS)")
        values.append(SolutionValue(fields[0], _number(path, j + 1, fields[1], f"the value of {fields[0]!r}"), j + 1))
    return ExternalSolution("highs", status, objective, tuple(values), lists_every_column=True, may_list_rows=False)


def _read_scip(path: Path, lines: list[str], first: int) -> ExternalSolution:
    """SCIP's solution file (module docstring)."""
    status = "unknown"
    objective = None
    values = []
    for k in range(first, len(lines)):
        line = lines[k].strip()
        if not line:
            continue
        if line.startswith("solution status:"):
            status = line.split(":", 1)[1].strip()
            if "infeasible" in status or "unbounded" in status:
                raise _rejected(path, k + 1, "no-solution", f"SCIP reports {status!r}")
            continue
        if line.startswith("no solution available"):
            raise _rejected(path, k + 1, "no-solution", "SCIP reports no solution available")
        if line.startswith("objective value:"):
            objective = _number(path, k + 1, line.split(":", 1)[1].strip(), "the objective value")
            continue
        fields = line.split()
        if len(fields) < 2:
            raise _rejected(path, k + 1, "bad-line", "expected '<name> <value> (obj:<c>)' (SCIP)")
        values.append(SolutionValue(fields[0], _number(path, k + 1, fields[1], f"the value of {fields[0]!r}"), k + 1))
    if objective is None:
        raise _rejected(path, 0, "not-a-solution", "SCIP file without 'objective value:'")
    return ExternalSolution("scip", status, objective, tuple(values), lists_every_column=False, may_list_rows=False)
