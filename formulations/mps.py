"""The one MPS writer: a :class:`~formulations.ir.LinearModel` and one named objective as free MPS.

Every ``.mps`` file wattplan writes comes from here (``plan --export-model``, every backend's
``export``, ``instance sweep --mps``), laid out the way CPLEX and HiGHS write it so that CBC,
HiGHS, SCIP, CPLEX and Gurobi read it alike:

* ``*`` comment lines, then ``NAME``, ``ROWS`` (the objective row first, type ``N``),
  ``COLUMNS`` (integer columns between ``MARKER 'MARKER' 'INTORG'`` / ``'INTEND'`` lines),
  ``RHS``, ``RANGES``, ``BOUNDS`` and ``ENDATA``;
* free MPS: fields separated by blanks, names from :meth:`LinearModel.export_names`
  (letters, digits, ``_`` and ``.``, at most :data:`~formulations.ir.EXPORT_NAME_MAX` characters);
* **sense-neutral**: the file is always a minimisation and has no ``OBJSENSE`` section (readers
  disagree on it: CBC 2.10 and SCIP refuse one before ``NAME``, others ignore a comment). A
  maximisation is written as the minimisation of the negated objective, and a comment line says
  so (``* wattplan: maximise progress = - (this objective)``), so the optimum a reader reports is
  ``-P`` for a maximised ``P``;
* every column has explicit bounds (an integer column without bounds is binary to some readers
  and unbounded to others); numbers are Python's shortest round-trip form (17 digits at most).

Rows ``lo <= a x <= hi`` become ``L`` (``hi``), ``G`` (``lo``), ``E`` (``lo = hi``) or, with both
ends finite and apart, ``L`` with a range ``hi - lo``; a row free at both ends is an ``N`` row.
Zero right-hand sides are left out (MPS's default).

**Tolerances.** The file is the model in its own units: progress is a small number (0.0066 on an 8-job round), and
outside solvers stop and accept rows at *absolute* tolerances made for objectives near 1. CBC 2.10 with its defaults
(a cutoff increment of 1e-5) stopped 1.2e-3 (relative) short of the optimum on a 12-job round and said ``Optimal``;
HiGHS 1.14 with its defaults (``mip_feasibility_tolerance`` 1e-6, ``mip_rel_gap`` 1e-4) 1.6e-6 short on the shipped
default round, and with zero gaps alone still 8.6e-6 short. Every file's header therefore names the options that
made both find the true optimum on those rounds (:data:`EXACT_OPTIONS`; ``docs/design.md`` §5.12 has the figures).

The work is done with NumPy over the coordinate arrays, and each distinct number is formatted
once: a 2,000-job round (387,530 columns, 1.3 M nonzeros) is written in a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from wattplan.formulations.ir import LinearModel

MODEL_NAME = "wattplan_round"
"""The ``NAME`` of every file (the model, not the instance: names must not hold blanks)."""
OBJECTIVE_ROW = "obj"
"""The objective row's name (``obj_2``, ... if a row of the model already has it)."""
SENSE_PREFIX = "* wattplan: "
"""Every comment line wattplan writes starts with this."""
CBC_EXACT = "-ratioGap 0 -allowableGap 0 -increment 1e-10"
"""CBC's options for the true optimum (module docstring): no gap, and a cutoff increment far below a progress step
(its default, 1e-5, is about 1e-3 of a small round's progress). Tighter row and integrality tolerances
(``-primalTolerance 1e-9 -integerTolerance 1e-9``) found the same optimum 14 times slower on the default round."""
HIGHS_EXACT = (
    "mip_rel_gap=0 mip_abs_gap=0 mip_feasibility_tolerance=1e-9 primal_feasibility_tolerance=1e-9 "
    "dual_feasibility_tolerance=1e-10"
)
"""HiGHS's options for the true optimum (module docstring), ``name=value`` (an options file or ``setOptionValue``)."""
EXACT_OPTIONS = (
    "progress is a small number: a solver's default absolute tolerances stop short of the optimum and say optimal;",
    f"for the true optimum, CBC: cbc FILE {CBC_EXACT} -solve -solution SOL",
    f"HiGHS options: {HIGHS_EXACT}",
    "then wattplan plan INSTANCE --from-solution SOL checks the answer and reports its gap to wattplan's LP bound",
)
"""The header lines (after the sense line and the caller's) of every file: how to solve it to the true optimum."""
_CHUNK = 200_000
"""Lines formatted and written at a time (bounds the memory of a large file)."""


def write_mps(
    lm: LinearModel,
    objective: str,
    maximize: bool,
    path: Path,
    comments: Sequence[str] = (),
) -> None:
    """Write ``lm`` with the objective vector ``lm.objectives[objective]`` to ``path`` as MPS, atomically.

    ``maximize``: the model maximises that vector; the file minimises its negation and says so.
    ``comments``: extra lines for the header (each written after ``* wattplan: ``), before :data:`EXACT_OPTIONS`.
    An unwritable ``path`` is an :class:`~planner.contracts.problems.InputError` naming it.
    """
    from wattplan.formulations.backends.base import atomic_target  # not at the top: the backends import this module

    with atomic_target(Path(path)) as tmp, tmp.open("w", encoding="ascii", newline="\n") as f:
        write_mps_to(f, lm, objective, maximize, comments)


def sense_comment(objective: str, maximize: bool) -> str:
    """The header line that says how the file's objective relates to the model's (without the prefix)."""
    if maximize:
        return f"maximise {objective} = - (this objective); the file is a minimisation"
    return f"minimise {objective} = this objective; the file is a minimisation"


def write_mps_to(
    f: TextIO,
    lm: LinearModel,
    objective: str,
    maximize: bool,
    comments: Sequence[str] = (),
    names: tuple[list[str], list[str]] | None = None,
) -> None:
    """Write the MPS text of :func:`write_mps` to the open text file ``f``.

    ``names``: the column and row names to write (blank-free, distinct), else :meth:`LinearModel.export_names`.
    """
    if objective not in lm.objectives:
        raise KeyError(f"the model has no objective {objective!r} (it has {', '.join(lm.objectives)})")
    col_names, row_names = names if names is not None else lm.export_names()
    obj_row = _free_name(OBJECTIVE_ROW, set(row_names))
    header = [sense_comment(objective, maximize), *comments, *EXACT_OPTIONS]
    for line in header:
        if "\n" in line or "\r" in line:
            raise ValueError(f"an MPS comment must be one line: {line!r}")
        f.write(f"{SENSE_PREFIX}{line}\n")
    f.write(f"NAME          {MODEL_NAME}\n")
    kind, rhs, ranges = _row_types(lm)
    f.write("ROWS\n")
    f.write(f" N  {obj_row}\n")
    _write_lines(f, (f" {k}  {n}\n" for k, n in zip(kind, row_names, strict=True)))
    f.write("COLUMNS\n")
    _write_columns(f, lm, objective, maximize, col_names, [obj_row, *row_names])
    f.write("RHS\n")
    _write_pairs(f, "RHS", row_names, rhs)
    if np.any(ranges != 0):
        f.write("RANGES\n")
        _write_pairs(f, "RNG", row_names, ranges)
    f.write("BOUNDS\n")
    _write_bounds(f, lm, col_names)
    f.write("ENDATA\n")


def _free_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``, ... whichever is not in ``taken``."""
    k, out = 1, name
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


def number_strings(values: np.ndarray) -> np.ndarray:
    """Each value as its shortest round-trip text (``1``, ``-0.5``, ``1e-07``); each distinct value formatted once.

    Raises ``ValueError`` for a NaN or infinite value (MPS has no way to write one as a coefficient).
    """
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError("the model has a NaN or infinite coefficient or bound; MPS cannot hold it")
    distinct, inverse = np.unique(values, return_inverse=True)
    texts = np.array([_number(v) for v in distinct.tolist()], dtype=object)
    return texts[inverse.reshape(-1)]


def _number(v: float) -> str:
    """``repr`` without a trailing ``.0`` (``1`` not ``1.0``) and without a negative zero."""
    if v == 0:
        return "0"
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text


def _row_types(lm: LinearModel) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per row its MPS type (``L``, ``G``, ``E``, ``N``), right-hand side and range (0: none)."""
    lo, hi = lm.row_lo, lm.row_hi
    lo_fin, hi_fin = np.isfinite(lo), np.isfinite(hi)
    equal = lo_fin & hi_fin & (lo == hi)
    ranged = lo_fin & hi_fin & ~equal
    kinds = np.full(lm.num_rows, "N", dtype="<U1")
    kinds[hi_fin & ~lo_fin] = "L"
    kinds[lo_fin & ~hi_fin] = "G"
    kinds[equal] = "E"
    kinds[ranged] = "L"
    rhs = np.zeros(lm.num_rows)
    rhs[hi_fin] = hi[hi_fin]
    rhs[lo_fin & ~hi_fin] = lo[lo_fin & ~hi_fin]
    rhs[equal] = lo[equal]
    ranges = np.zeros(lm.num_rows)
    ranges[ranged] = hi[ranged] - lo[ranged]
    return kinds.tolist(), rhs, ranges


def _entries(lm: LinearModel, objective: str, maximize: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The file's nonzeros by column then row, as ``(col, row + 1, value)``; row 0 is the objective.

    Repeated ``(row, col)`` entries are summed, zero ones dropped, and a column left with no
    entry gets an objective entry of 0 so that the reader knows it.
    """
    c = np.asarray(lm.objectives[objective], dtype=float)
    c = -c if maximize else c
    obj_cols = np.flatnonzero(c)
    cols = np.concatenate([obj_cols, lm.a_cols.astype(np.int64)])
    rows = np.concatenate([np.zeros(len(obj_cols), dtype=np.int64), lm.a_rows.astype(np.int64) + 1])
    vals = np.concatenate([c[obj_cols], lm.a_vals.astype(float)])
    key = cols * (lm.num_rows + 1) + rows
    order = np.argsort(key, kind="stable")
    key, vals = key[order], vals[order]
    if len(key):
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        key, vals = key[starts], np.add.reduceat(vals, starts)
    keep = vals != 0
    key, vals = key[keep], vals[keep]
    cols, rows = key // (lm.num_rows + 1), key % (lm.num_rows + 1)
    empty = np.setdiff1d(np.arange(lm.num_cols), cols)
    if len(empty):
        cols = np.concatenate([cols, empty])
        rows = np.concatenate([rows, np.zeros(len(empty), dtype=np.int64)])
        vals = np.concatenate([vals, np.zeros(len(empty))])
        order = np.lexsort((rows, cols))
        cols, rows, vals = cols[order], rows[order], vals[order]
    return cols, rows, vals


def _write_columns(
    f: TextIO, lm: LinearModel, objective: str, maximize: bool, col_names: list[str], row_names: list[str]
) -> None:
    """The ``COLUMNS`` section; runs of integer columns between ``INTORG`` and ``INTEND`` markers."""
    cols, rows, vals = _entries(lm, objective, maximize)
    names = np.array(col_names, dtype=object)[cols]
    targets = np.array(row_names, dtype=object)[rows]
    texts = number_strings(vals)
    is_int = lm.is_int.astype(bool)
    # Runs of columns with the same integrality, and where each run's entries start.
    run_starts = np.flatnonzero(np.r_[True, is_int[1:] != is_int[:-1]]) if lm.num_cols else np.zeros(0, np.int64)
    edges = np.append(run_starts, lm.num_cols).astype(np.int64)
    bounds: list[int] = np.asarray(np.searchsorted(cols, edges), dtype=np.int64).tolist()
    for k, first in enumerate(run_starts.tolist()):
        lo, hi = bounds[k], bounds[k + 1]
        if is_int[first]:
            f.write("    MARKER                 'MARKER'                 'INTORG'\n")
        for start in range(lo, hi, _CHUNK):
            end = min(start + _CHUNK, hi)
            chunk = zip(names[start:end].tolist(), targets[start:end].tolist(), texts[start:end].tolist(), strict=True)
            f.write("".join([f"    {n:<8}  {r:<8}  {t}\n" for n, r, t in chunk]))
        if is_int[first]:
            f.write("    MARKER                 'MARKER'                 'INTEND'\n")


def _write_pairs(f: TextIO, set_name: str, names: list[str], values: np.ndarray) -> None:
    """``RHS`` or ``RANGES`` lines for the nonzero ``values`` (named by ``names``)."""
    nz = np.flatnonzero(values)
    texts = number_strings(values[nz])
    _write_lines(
        f, (f"    {set_name:<8}  {names[i]:<8}  {t}\n" for i, t in zip(nz.tolist(), texts.tolist(), strict=True))
    )


def _write_bounds(f: TextIO, lm: LinearModel, col_names: list[str]) -> None:
    """Explicit bounds for every column: ``FX``, ``FR``, ``MI``/``LO`` then ``UP``/``PL``.

    Lower bound 0 is MPS's default and is not written; an upper bound is always written
    (``PL`` for none), so no reader applies its own default to an integer column.
    """
    lb, ub = lm.lb.astype(float), lm.ub.astype(float)
    fixed = lb == ub
    free = np.isneginf(lb) & np.isposinf(ub)
    rest = ~fixed & ~free
    lines: list[tuple[int, str, str | None]] = []  # (column, type, value)
    for c, t in zip(np.flatnonzero(fixed).tolist(), number_strings(lb[fixed]).tolist(), strict=True):
        lines.append((c, "FX", t))
    lines.extend((c, "FR", None) for c in np.flatnonzero(free).tolist())
    lines.extend((c, "MI", None) for c in np.flatnonzero(rest & np.isneginf(lb)).tolist())
    low = rest & np.isfinite(lb) & (lb != 0)
    for c, t in zip(np.flatnonzero(low).tolist(), number_strings(lb[low]).tolist(), strict=True):
        lines.append((c, "LO", t))
    up = rest & np.isfinite(ub)
    for c, t in zip(np.flatnonzero(up).tolist(), number_strings(ub[up]).tolist(), strict=True):
        lines.append((c, "UP", t))
    lines.extend((c, "PL", None) for c in np.flatnonzero(rest & np.isposinf(ub)).tolist())
    lines.sort(key=lambda line: line[0])  # stable: a column's lower bound stays before its upper bound
    _write_lines(
        f,
        (
            f" {t} BND       {col_names[c]:<8}  {v}\n" if v is not None else f" {t} BND       {col_names[c]}\n"
            for c, t, v in lines
        ),
    )


def _write_lines(f: TextIO, lines: Iterable[str]) -> None:
    """Write ``lines`` in chunks of :data:`_CHUNK`."""
    for chunk in _chunks(lines):
        f.write("".join(chunk))


def _chunks(lines: Iterable[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
