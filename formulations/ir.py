"""A backend-neutral mixed-integer linear model: the one form every solver backend compiles.

``row_lo <= A x <= row_hi``, ``lb <= x <= ub``, ``x_i`` integer where ``is_int[i]``, and
named objective vectors (``progress``, ``energy``). ``A`` is kept in coordinate form
(``a_rows``, ``a_cols``, ``a_vals``). Each row records ``row_scale``: the factor that makes
its coefficients integral enough for CP-SAT (1 for counting rows; see
:mod:`formulations.scaling`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple, overload

import numpy as np

INF = float("inf")


class ModelRow(NamedTuple):
    """One row ``lo <= vals . x[cols] <= hi`` of a :class:`LinearModel`; ``kind`` as ``row_kind``."""

    row: int
    cols: np.ndarray
    vals: np.ndarray
    lo: float
    hi: float
    kind: str


EXPORT_NAME_MAX = 96
"""Longest name :meth:`LinearModel.export_names` makes (characters). CBC 2.10's MPS reader is built for
fields of up to 100 characters (it read 120 and crashed on 200), SCIP's up to 255; a longer name
keeps its first characters and ends in ``_`` and a hash of the whole name."""


def _unique(names: list[str]) -> list[str]:
    """``names`` with a repeated name suffixed ``_2``, ``_3``, ... (skipping suffixed names already taken)."""
    taken = set(names)
    if len(taken) == len(names):
        return names
    seen: set[str] = set()
    out = []
    for name in names:
        if name in seen:
            k = 2
            while f"{name}_{k}" in taken:
                k += 1
            name = f"{name}_{k}"
            taken.add(name)
        seen.add(name)
        out.append(name)
    return out


_UNSAFE_TO_NUL = {c: 0 for c in range(128) if not (chr(c).isalnum() or chr(c) in "_.\n")}
"""ASCII characters an exported name may not hold (all but letters, digits, ``_``, ``.``), mapped to NUL."""


def _safe_names(names: Sequence[str], fallback: str) -> list[str]:
    """Every name as an MPS/LP name: runs of characters other than letters, digits, ``_``, ``.`` made one ``_``.

    Never empty (``<fallback><index>``), never longer than :data:`EXPORT_NAME_MAX` (cut, ``_``
    and the CRC-32 of the whole name in hex, so distinct long names stay distinct). The work
    is done once on all names joined by newlines (string methods, no regular expression): a
    million names take a fraction of a second.
    """
    names = [n.replace("\n", " ") for n in names[:]]
    if not names:
        return []
    text = "\n".join(names).encode("ascii", "replace").decode("ascii").translate(_UNSAFE_TO_NUL)
    while "\0\0" in text:
        text = text.replace("\0\0", "\0")
    out = []
    for i, name in enumerate(text.replace("\0", "_").split("\n")):
        safe = name.strip("_") or f"{fallback}{i}"
        if len(safe) > EXPORT_NAME_MAX:
            safe = f"{safe[: EXPORT_NAME_MAX - 9]}_{zlib.crc32(safe.encode()):08x}"
        out.append(safe)
    return out


class LazyNames(Sequence[str]):
    """``count`` names made one at a time by ``name_of(i)``, only when read (exports, PuLP).

    A 10,000-job round has over a million columns: formatting every name up front would cost
    seconds that most solves never use.
    """

    def __init__(self, count: int, name_of: Callable[[int], str]) -> None:
        self._count = count
        self._name_of = name_of

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self._name_of(k) for k in range(*i.indices(self._count))]
        if not -self._count <= i < self._count:
            raise IndexError(i)
        return self._name_of(i % self._count)


@dataclass(frozen=True)
class SubsetNames:
    """The names of a restriction's columns: ``names[cols[i]]`` (a class, so a model pickles to a solver worker)."""

    names: Sequence[str]
    cols: np.ndarray

    def __call__(self, i: int) -> str:
        """The name of the restriction's column ``i``."""
        return self.names[int(self.cols[i])]


@dataclass(frozen=True)
class LinearModel:
    """``row_lo <= A x <= row_hi``, ``lb <= x <= ub``, integrality and named objectives (module docstring)."""

    lb: np.ndarray
    ub: np.ndarray
    is_int: np.ndarray
    col_names: Sequence[str]
    a_rows: np.ndarray
    a_cols: np.ndarray
    a_vals: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    row_names: tuple[str, ...]
    row_kind: tuple[str, ...]  # "count", "energy" or "progress": how CP-SAT scales the row
    objectives: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def num_cols(self) -> int:
        """Number of columns (variables) ``x``."""
        return len(self.lb)

    @property
    def num_rows(self) -> int:
        """Number of rows (constraints) ``row_lo <= A x <= row_hi``."""
        return len(self.row_lo)

    @property
    def num_nonzeros(self) -> int:
        """Number of stored nonzero coefficients of ``A``."""
        return len(self.a_vals)

    def with_row(self, coefs: np.ndarray, lo: float, hi: float, name: str, kind: str) -> LinearModel:
        """A copy with one more row ``lo <= coefs . x <= hi``."""
        nz = np.flatnonzero(coefs)
        return replace(
            self,
            a_rows=np.concatenate([self.a_rows, np.full(len(nz), self.num_rows, dtype=np.int64)]),
            a_cols=np.concatenate([self.a_cols, nz.astype(np.int64)]),
            a_vals=np.concatenate([self.a_vals, coefs[nz].astype(float)]),
            row_lo=np.append(self.row_lo, lo),
            row_hi=np.append(self.row_hi, hi),
            row_names=(*self.row_names, name),
            row_kind=(*self.row_kind, kind),
        )

    def without_rows(self, names: Sequence[str]) -> LinearModel:
        """A copy without the named rows (e.g. the budget, for the unbudgeted best progress)."""
        drop = {i for i, n in enumerate(self.row_names) if n in set(names)}
        if not drop:
            return self
        keep_rows = np.array([i not in drop for i in range(self.num_rows)])
        new_index = np.cumsum(keep_rows) - 1
        mask = keep_rows[self.a_rows]
        return replace(
            self,
            a_rows=new_index[self.a_rows[mask]],
            a_cols=self.a_cols[mask],
            a_vals=self.a_vals[mask],
            row_lo=self.row_lo[keep_rows],
            row_hi=self.row_hi[keep_rows],
            row_names=tuple(n for i, n in enumerate(self.row_names) if i not in drop),
            row_kind=tuple(k for i, k in enumerate(self.row_kind) if i not in drop),
        )

    def restricted(self, cols: np.ndarray) -> LinearModel:
        """The model on the columns ``cols`` only (ascending positions), every row kept.

        The others are fixed at 0, which each column's bounds allow (``lb <= 0 <= ub`` in the
        round model), so a solution of the restricted model, spread back by
        ``full[cols] = values``, is a solution of this one with the same objective values.
        """
        cols = np.asarray(cols, dtype=np.int64)
        new_index = np.full(self.num_cols, -1, dtype=np.int64)
        new_index[cols] = np.arange(len(cols))
        mapped = new_index[self.a_cols]
        keep = mapped >= 0
        names = self.col_names
        return replace(
            self,
            lb=self.lb[cols],
            ub=self.ub[cols],
            is_int=self.is_int[cols],
            col_names=LazyNames(len(cols), SubsetNames(names, cols)),
            a_rows=self.a_rows[keep],
            a_cols=mapped[keep],
            a_vals=self.a_vals[keep],
            objectives={k: v[cols] for k, v in self.objectives.items()},
        )

    def rows(self) -> Iterator[ModelRow]:
        """Every row with its columns and coefficients, in row order (for backends that add rows one by one)."""
        order = np.argsort(self.a_rows, kind="stable")
        rows, cols, vals = self.a_rows[order], self.a_cols[order], self.a_vals[order]
        bounds = np.searchsorted(rows, np.arange(self.num_rows + 1))
        for r in range(self.num_rows):
            sl = slice(bounds[r], bounds[r + 1])
            yield ModelRow(r, cols[sl], vals[sl], float(self.row_lo[r]), float(self.row_hi[r]), self.row_kind[r])

    def export_names(self) -> tuple[list[str], list[str]]:
        """Column and row names MPS and LP readers accept: ``x[j1,ResNet-50 (bs 64)]`` -> ``x_j1_ResNet_50_bs_64``.

        Only letters, digits, ``_`` and ``.`` (no blanks), 1 to :data:`EXPORT_NAME_MAX` characters
        (a repeat's suffix aside), distinct within columns and within rows (a repeat gets ``_2``,
        ``_3``, ...); a name made only of other characters becomes ``c<index>`` or ``r<index>``.
        Every writer and the solution reader (:mod:`formulations.external_plan`) use these names.
        """
        return _unique(_safe_names(self.col_names, "c")), _unique(_safe_names(self.row_names, "r"))

    def row_activity(self, x: np.ndarray) -> np.ndarray:
        """``A x`` for a column vector ``x``."""
        return np.bincount(self.a_rows, weights=self.a_vals * x[self.a_cols], minlength=self.num_rows)

    @cached_property
    def row_norms(self) -> np.ndarray:
        """Per row, its largest ``|a_rk|`` (0 for an empty row): the row's own unit."""
        norms = np.zeros(self.num_rows)
        np.maximum.at(norms, self.a_rows, np.abs(self.a_vals))
        return norms

    def is_feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Bounds, integrality and rows hold for ``x`` within ``tol``.

        On rows the tolerance is relative to the row's own size, ``tol * max(|a_r x|, max_k |a_rk|)``:
        a progress floor of 0.04 may be missed by 4e-8, not by an absolute 1e-6 (2.5e-5 of it).
        """
        if np.any(x < self.lb - tol) or np.any(x > self.ub + tol):
            return False
        if np.any(np.abs(x[self.is_int] - np.round(x[self.is_int])) > tol):
            return False
        act = self.row_activity(x)
        slack = tol * np.maximum(self.row_norms, np.abs(act))
        return bool(np.all(act >= self.row_lo - slack) and np.all(act <= self.row_hi + slack))


class ModelBuilder:
    """Collects columns and rows, then freezes them into a :class:`LinearModel`."""

    def __init__(self) -> None:
        self._lb: list[float] = []
        self._ub: list[float] = []
        self._int: list[bool] = []
        self._names: list[str] = []
        self._rows: list[int] = []
        self._cols: list[int] = []
        self._vals: list[float] = []
        self._lo: list[float] = []
        self._hi: list[float] = []
        self._row_names: list[str] = []
        self._row_kind: list[str] = []

    @property
    def num_cols(self) -> int:
        """Columns added so far."""
        return len(self._lb)

    def add_col(self, name: str, lb: float, ub: float, integer: bool) -> int:
        """Add a column ``lb <= x <= ub`` (integer if ``integer``); return its index."""
        self._lb.append(lb)
        self._ub.append(ub)
        self._int.append(integer)
        self._names.append(name)
        return len(self._lb) - 1

    def add_row(
        self, cols: Sequence[int], vals: Sequence[float], lo: float, hi: float, name: str, kind: str = "count"
    ) -> int:
        """Add the row ``lo <= sum vals[i] x[cols[i]] <= hi``; return its index."""
        row = len(self._lo)
        self._rows.extend([row] * len(cols))
        self._cols.extend(cols)
        self._vals.extend(vals)
        self._lo.append(lo)
        self._hi.append(hi)
        self._row_names.append(name)
        self._row_kind.append(kind)
        return row

    def build(self, objectives: dict[str, np.ndarray]) -> LinearModel:
        """Freeze the columns and rows into a :class:`LinearModel` with these objective vectors."""
        return LinearModel(
            lb=np.array(self._lb, dtype=float),
            ub=np.array(self._ub, dtype=float),
            is_int=np.array(self._int, dtype=bool),
            col_names=tuple(self._names),
            a_rows=np.array(self._rows, dtype=np.int64),
            a_cols=np.array(self._cols, dtype=np.int64),
            a_vals=np.array(self._vals, dtype=float),
            row_lo=np.array(self._lo, dtype=float),
            row_hi=np.array(self._hi, dtype=float),
            row_names=tuple(self._row_names),
            row_kind=tuple(self._row_kind),
            objectives=objectives,
        )
