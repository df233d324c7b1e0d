r"""The data rows of an nvidia-smi query log as column arrays: pandas parses, masks judge, block by block.

:class:`RowParser` is fed the log's data lines in blocks of whole lines (:func:`planner.contracts.jsonio.line_blocks`)
and keeps, for every *valid* row, its line number, GPU index, time (integer ns since 1970-01-01 of the
log's own clock), the numeric fields in the planner's units (NaN where the cell is an nvidia-smi marker
such as ``[N/A]``) and a code of the GPU's model name. Memory grows with the valid rows (about 70 bytes
each), not with the file: the text of one block at a time is held.

Per block:

1. NumPy finds the lines (``\\n``), counts each line's commas and finds blank lines and NUL bytes, so that
   a line with another number of fields than the header is reported with its line number
   (``truncated-row``) and never reaches the CSV parser;
2. the lines left are parsed by :func:`pandas.read_csv` (C engine, every cell as text, no quoting: nvidia-smi
   never quotes, so a ``"`` is a character of the cell, which no number or time contains);
3. each column is judged at once (pyarrow-backed string kernels, a regular expression for ``number unit``,
   :func:`pandas.to_datetime` with nvidia-smi's formats), and each row gets the first problem of the
   order of :mod:`planner.profiling.nvidia_smi`'s docstring.

The problems of skipped rows are kept in line order, at most :attr:`RowParser.limit` of them (more would be
cut by :func:`planner.contracts.problems.capped` anyway); :attr:`RowParser.skipped` counts them all.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, Problem
from wattplan.planner.contracts.profile_checks import MAX_GPU_POWER_W
from wattplan.planner.profiling.units import describe, unit_factor

TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")
"""nvidia-smi's timestamp formats, tried in this order (then ISO 8601 without a time zone)."""
NUMBER = r"^\s*(?P<n>[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(?P<u>[A-Za-z%]*)\s*$"
"""A decimal number in ASCII digits, optionally followed by a unit: ``212.35 W``, ``87 %``, ``1.2e3``."""
INDEX = r"^\s*[0-9]{1,6}\s*$"
"""A GPU index: ASCII digits, below a million."""
_EPOCH = datetime(1970, 1, 1)
_NS = np.int64(1_000_000_000)

# reasons a numeric cell is refused (row skipped), 0: fine
_OK, _NOT_NUMBER, _BAD_UNIT, _NOT_FINITE, _POWER_RANGE, _PERCENT_RANGE, _NEGATIVE = range(7)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def ns_to_seconds(t_ns: IntArray) -> FloatArray:
    """Integer ns since 1970 as float seconds: whole seconds plus the fraction, one rounding in the sum."""
    whole, frac = np.divmod(t_ns, _NS)
    result: FloatArray = whole.astype(np.float64) + frac.astype(np.float64) / 1e9
    return result


def ns_to_datetime(t_ns: int) -> datetime:
    """Integer ns since 1970-01-01 as a naive datetime (to the microsecond)."""
    return _EPOCH + timedelta(microseconds=int(t_ns) // 1000)


def datetime_ns(time: datetime) -> int:
    """A naive datetime as integer ns since 1970-01-01 of the same clock (microsecond resolution)."""
    return (time - _EPOCH) // timedelta(microseconds=1) * 1000


@dataclass(frozen=True, slots=True)
class Columns:
    """Where the read fields are: ``positions[field]`` is the column, ``units[field]`` the header's unit."""

    width: int
    positions: Mapping[str, int]
    units: Mapping[str, str | None]
    header_cells: tuple[str, ...]
    """The header's cells, lowercased and stripped (a data line equal to it is a repeated header)."""
    column_names: Mapping[str, str]
    """Each field's column name for messages (``power.draw``)."""
    field_units: Mapping[str, Mapping[str, float]]
    """The units each numeric field accepts, with factors to the field's unit."""
    power_fields: frozenset[str]


@dataclass(slots=True)
class _Block:
    """One block's valid rows."""

    line: IntArray
    gpu: IntArray
    t_ns: IntArray
    values: dict[str, FloatArray]
    name: npt.NDArray[np.int32]


@dataclass(slots=True)
class RowParser:
    """Accumulates the valid rows of a log's blocks and the problems of the others (see the module docstring)."""

    columns: Columns
    numeric: tuple[str, ...]
    """The numeric fields the log has, in the order their cells are judged."""
    required: tuple[str, ...]
    limit: int = MAX_REPORTED_PROBLEMS + 1
    problems: list[Problem] = field(default_factory=list)
    skipped: int = 0
    markers: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Optional field -> (cells that were markers, first such line)."""
    names: dict[str, int] = field(default_factory=dict)
    """GPU model name -> its code in :attr:`_Block.name` (-1: no name)."""
    blocks: list[_Block] = field(default_factory=list)

    def feed(self, first_line: int, block: bytes) -> None:
        """Parse ``block`` (whole lines of text, the first being line ``first_line`` of the file)."""
        if not block:
            return
        data = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(data == 10)
        if data[-1] != 10:
            ends = np.append(ends, len(data))
        n = len(ends)
        starts = np.concatenate(([0], ends[:-1] + 1))
        lines = first_line + np.arange(n, dtype=np.int64)
        fields = _per_line_count(np.flatnonzero(data == 44), ends, n) + 1
        nul = _per_line_count(np.flatnonzero(data == 0), ends, n) > 0
        # a blank line has no comma: only those are looked at byte by byte
        blank = np.zeros(n, dtype=bool)
        for k in np.flatnonzero(fields == 1):
            blank[k] = not block[starts[k] : ends[k]].strip()
        good = ~blank & ~nul & (fields == self.columns.width)
        bad_rows: list[tuple[int, Problem]] = []
        for k in np.flatnonzero(nul & ~blank)[: self.limit]:
            bad_rows.append((int(lines[k]), Problem("bad-value", f"line {lines[k]}", "a NUL byte: row skipped")))
        wrong = ~blank & ~nul & ~good
        for k in np.flatnonzero(wrong)[: self.limit]:
            message = f"{fields[k]} fields, the header has {self.columns.width} (a cut-off line?): row skipped"
            bad_rows.append((int(lines[k]), Problem("truncated-row", f"line {lines[k]}", message)))
        self.skipped += int(np.count_nonzero(nul & ~blank) + np.count_nonzero(wrong))
        if good.any():
            if good.all():
                kept = block
            else:
                lengths = np.minimum(ends + 1, len(data)) - starts
                kept = data[np.repeat(good, lengths)].tobytes()
            bad_rows += self._parse(kept, lines[good])
        bad_rows.sort(key=lambda x: x[0])
        room = self.limit - len(self.problems)
        self.problems += [p for _, p in bad_rows[: max(room, 0)]]

    def _parse(self, text: bytes, lines: IntArray) -> list[tuple[int, Problem]]:
        """Judge the rows of ``text`` (each with the header's number of fields); keep the valid ones."""
        cols = self.columns
        used = sorted(set(cols.positions.values()))
        frame = pd.read_csv(
            io.BytesIO(text),
            header=None,
            names=list(range(cols.width)),
            usecols=used,
            dtype="string[pyarrow]",
            quoting=csv.QUOTE_NONE,
            lineterminator="\n",
            skipinitialspace=True,
            na_filter=False,
            keep_default_na=False,
            skip_blank_lines=False,
            engine="c",
        )
        if len(frame) != len(lines):  # the byte scan and the parser must see the same lines
            raise AssertionError(f"{len(frame)} rows parsed from {len(lines)} lines")
        raw = {f: pa.array(frame[pos]) for f, pos in cols.positions.items()}
        problems: list[tuple[int, Problem]] = []
        index_ok = _matches(raw["index"], INDEX)
        # a repeated header (logs appended to each other) is read past; its index cell is no index
        alive = np.ones(len(frame), dtype=bool)
        for k in np.flatnonzero(~index_ok):
            alive[k] = [str(raw[f][k]).strip().lower() for f in cols.positions] != [
                cols.header_cells[pos] for pos in cols.positions.values()
            ]
        t_ns = _timestamps(frame[cols.positions["timestamp"]], alive & index_ok)
        numbers = {f: _numbers(raw[f], f, cols) for f in self.numeric}
        failed = {"index": ~index_ok, "timestamp": t_ns == _NAT}
        failed |= {f: reason != _OK for f, (_, reason) in numbers.items()}
        marker = {f: _markers(raw[f], failed[f]) for f in failed}
        # 1. a marker in a required column
        for f in self.required:
            hit = alive & marker[f]
            problems += [_marker_problem(int(lines[k]), cols, f, str(raw[f][k])) for k in self._skip(hit)]
            alive &= ~hit
        # 2. the GPU index, 3. the timestamp
        hit = alive & failed["index"]
        problems += [_index_problem(int(lines[k]), str(raw["index"][k])) for k in self._skip(hit)]
        alive &= ~hit
        hit = alive & failed["timestamp"]
        problems += [_time_problem(int(lines[k]), str(raw["timestamp"][k])) for k in self._skip(hit)]
        alive &= ~hit
        # 4. the numeric fields, in order; a marker in an optional one is an unknown value (NaN)
        values: dict[str, FloatArray] = {}
        for f, (x, reason) in numbers.items():
            reason[marker[f]] = _OK
            x[marker[f]] = np.nan
            hit = alive & (reason != _OK)
            problems += [
                _value_problem(int(lines[k]), cols, f, str(raw[f][k]), float(x[k]), int(reason[k]))
                for k in self._skip(hit)
            ]
            alive &= reason == _OK
            values[f] = x
        gpu = np.where(index_ok, _integers(raw["index"], index_ok), -1)
        markers = {f: marker[f] for f in self.numeric if f not in self.required}
        for f, cells_marked in markers.items():
            self._count_markers(f, cells_marked & alive, lines)
        name = self._name_codes(frame[cols.positions["gpu_name"]] if "gpu_name" in raw else None, len(frame))
        keep = np.flatnonzero(alive)
        self.blocks.append(
            _Block(
                line=lines[keep],
                gpu=gpu[keep],
                t_ns=t_ns[keep],
                values={f: v[keep] for f, v in values.items()},
                name=name[keep],
            )
        )
        return problems

    def _skip(self, hit: BoolArray) -> list[int]:
        """Count the rows ``hit`` skips; the positions of the first :attr:`limit` of them (to report)."""
        at = np.flatnonzero(hit)
        self.skipped += len(at)
        return [int(k) for k in at[: self.limit]]

    def _count_markers(self, f: str, hit: BoolArray, lines: IntArray) -> None:
        """Add ``hit``'s marker cells of optional field ``f`` to its count (and first line)."""
        at = np.flatnonzero(hit)
        if not len(at):
            return
        count, first = self.markers.get(f, (0, int(lines[at[0]])))
        self.markers[f] = (count + len(at), first)

    def _name_codes(self, cells: pd.Series | None, n: int) -> npt.NDArray[np.int32]:
        """Each row's model-name code (-1: no ``name`` column, empty, or a marker)."""
        if cells is None:
            return np.full(n, -1, dtype=np.int32)
        codes, uniques = pd.factorize(cells)
        lookup = np.array(
            [-1 if (not u or _is_marker_text(u)) else self.names.setdefault(str(u), len(self.names)) for u in uniques]
            + [-1],
            dtype=np.int32,
        )
        result: npt.NDArray[np.int32] = lookup[codes]  # code -1 (missing) picks the appended -1
        return result

    def take_rows(self) -> tuple[IntArray, IntArray, IntArray, dict[str, FloatArray], npt.NDArray[np.int32]]:
        """Every valid row, in file order: lines, GPUs, times (ns), numeric fields, name codes.

        The blocks are handed over one column at a time and then dropped, so that the rows are held once.
        """
        blocks, self.blocks = self.blocks, []

        def column(name: str, dtype: type) -> npt.NDArray[Any]:
            parts = [getattr(x, name) for x in blocks]
            for x in blocks:
                setattr(x, name, np.zeros(0, dtype=dtype))
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        values: dict[str, FloatArray] = {}
        for f in self.numeric:
            parts = [x.values.pop(f) for x in blocks]
            values[f] = np.concatenate(parts) if parts else np.zeros(0)
        return (
            column("line", np.int64),
            column("gpu", np.int64),
            column("t_ns", np.int64),
            values,
            column("name", np.int32),
        )


_NAT = np.iinfo(np.int64).min


def _per_line_count(at: IntArray, ends: IntArray, n: int) -> IntArray:
    """How many of the byte positions ``at`` fall in each of the ``n`` lines ending at ``ends``."""
    counts: IntArray = np.bincount(np.searchsorted(ends, at), minlength=n)[:n].astype(np.int64)
    return counts


def _matches(cells: pa.ChunkedArray, pattern: str) -> BoolArray:
    """Which cells match ``pattern`` (RE2 syntax; anchor it to match whole cells)."""
    found = pc.match_substring_regex(cells, pattern)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def _markers(cells: pa.ChunkedArray, candidates: BoolArray) -> BoolArray:
    """Which of the ``candidates`` cells are nvidia-smi markers (only cells that failed to parse can be)."""
    out = np.zeros(len(candidates), dtype=bool)
    for k in np.flatnonzero(candidates):
        out[k] = _is_marker_text(str(cells[k]))
    return out


def _integers(cells: pa.ChunkedArray, ok: BoolArray) -> IntArray:
    """The cells as integers where ``ok`` (they match :data:`INDEX`), 0 elsewhere."""
    text = pc.if_else(pa.array(ok), pc.utf8_trim_whitespace(cells), "0")
    result: IntArray = np.asarray(pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    return result


def _is_marker_text(text: str) -> bool:
    """nvidia-smi's markers for a value it cannot give: ``[N/A]``, ``[Not Supported]``, ``N/A``."""
    v = text.strip()
    return (v.startswith("[") and v.endswith("]")) or v.upper() == "N/A"


def _timestamps(cells: pd.Series, alive: BoolArray) -> IntArray:
    """Each cell's time as ns since 1970 (:data:`_NAT` where it is no time of :data:`TIME_FORMATS` or ISO)."""
    out = np.full(len(cells), _NAT, dtype=np.int64)
    todo = alive.copy()
    for fmt in TIME_FORMATS:
        if not todo.any():
            break
        parsed = pd.to_datetime(cells[todo], format=fmt, errors="coerce")
        us = parsed.to_numpy(dtype="datetime64[us]").view(np.int64)  # pandas may pick us: year 1 fits
        inside = (us >= _MIN_NS // 1000) & (us < _MAX_NS // 1000)
        ns = np.where(inside, us * 1000, _NAT)
        at = np.flatnonzero(todo)
        out[at] = ns
        todo[at[ns != _NAT]] = False
    for k in np.flatnonzero(todo):  # white space around the time, or ISO 8601: the rare case, one by one
        one = parse_timestamp(str(cells.iloc[k]))
        one_ns = _NAT if one is None else datetime_ns(one)
        out[k] = one_ns if _MIN_NS <= one_ns < _MAX_NS else _NAT
    return out


_MIN_NS = datetime_ns(datetime(1678, 1, 1))
_MAX_NS = datetime_ns(datetime(2262, 1, 1))


def parse_timestamp(text: str) -> datetime | None:
    """nvidia-smi's ``2026/11/24 13:05:01.123`` (or ISO ``2026-11-24T13:05:01``) as a naive datetime; else None.

    A time with a zone is None: the log's clock has none, and a zoned time cannot be placed on it.
    """
    text = text.strip()
    for fmt in TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is None else None


def _numbers(cells: pa.ChunkedArray, f: str, cols: Columns) -> tuple[FloatArray, npt.NDArray[np.int8]]:
    """Each cell in field ``f``'s unit and the reason it is refused (0: fine).

    A cell's own unit suffix wins over the header's; ``x = number * factor(unit)``. Refused: no number
    (:data:`NUMBER`), a unit the field cannot have, not finite, power outside (0, MAX_GPU_POWER_W] W,
    utilisation outside [0, 100] %, a negative value.
    """
    found = pc.extract_regex(cells, NUMBER)
    numbers = pc.struct_field(found, "n")
    is_number = np.asarray(pc.is_valid(numbers).to_numpy(zero_copy_only=False), dtype=bool)
    x = np.asarray(pc.cast(pc.fill_null(numbers, "0"), pa.float64()).to_numpy(zero_copy_only=False), dtype=float)
    own = pc.dictionary_encode(pc.fill_null(pc.struct_field(found, "u"), ""))
    chunks = own.chunks if isinstance(own, pa.ChunkedArray) else [own]
    header = cols.units.get(f)
    accepted = cols.field_units[f]
    factor = np.empty(len(cells))
    start = 0
    for chunk in chunks:
        units = [u.as_py() or header for u in chunk.dictionary]
        factors = np.array([unit_factor(u, accepted) or math.nan for u in units] + [math.nan])
        idx = np.asarray(chunk.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        factor[start : start + len(idx)] = factors[idx]
        start += len(idx)
    reason = np.zeros(len(cells), dtype=np.int8)
    reason[np.isnan(factor)] = _BAD_UNIT
    reason[~is_number] = _NOT_NUMBER
    with np.errstate(invalid="ignore", over="ignore"):
        x = x * np.where(np.isnan(factor), 1.0, factor)
        ok = reason == _OK
        reason[ok & ~np.isfinite(x)] = _NOT_FINITE
        ok = reason == _OK
        if f in cols.power_fields:
            reason[ok & ~((x > 0) & (x <= MAX_GPU_POWER_W))] = _POWER_RANGE
        elif f == "utilisation":
            reason[ok & ~((x >= 0) & (x <= 100))] = _PERCENT_RANGE
        else:
            reason[ok & (x < 0)] = _NEGATIVE
    if f == "utilisation":
        x = x / 100.0
    return x, reason


def _marker_problem(line: int, cols: Columns, f: str, raw: str) -> tuple[int, Problem]:
    return line, Problem("not-available", f"line {line}, {cols.column_names[f]}", f"{raw}: row skipped")


def _index_problem(line: int, raw: str) -> tuple[int, Problem]:
    message = f"GPU index {raw!r} is not an integer in [0, 999999]"
    return line, Problem("bad-value", f"line {line}, index", message)


def _time_problem(line: int, raw: str) -> tuple[int, Problem]:
    message = f"timestamp {raw!r} is not YYYY/MM/DD HH:MM:SS[.fff] (1678-2261, no time zone): row skipped"
    return line, Problem("bad-value", f"line {line}, timestamp", message)


def _value_problem(line: int, cols: Columns, f: str, raw: str, x: float, reason: int) -> tuple[int, Problem]:
    """The ``bad-value`` problem of the cell ``raw`` of field ``f`` (``x``: its value), refused for ``reason``."""
    unit = _unit_written(raw) or cols.units.get(f)
    if reason == _NOT_NUMBER:
        why = "not a number"
    elif reason == _BAD_UNIT:
        why = f"unit {unit!r} is not {describe(cols.field_units[f])}"
    elif reason == _NOT_FINITE:
        why = "not a finite number"
    elif reason == _POWER_RANGE:
        shown = f" (read as {unit})" if unit else ""
        why = f"{x:.6g} W per GPU{shown} is outside (0, {MAX_GPU_POWER_W:g}] W: wrong unit?"
    elif reason == _PERCENT_RANGE:
        why = "not a number in [0, 100] %"
    else:
        why = "negative"
    return line, Problem("bad-value", f"line {line}, {cols.column_names[f]}", f"{raw!r}: {why}; row skipped")


def _unit_written(raw: str) -> str | None:
    """The unit suffix written in a cell, if any."""
    found = pc.extract_regex(pa.array([raw]), NUMBER)[0].as_py()
    return (found or {}).get("u") or None
