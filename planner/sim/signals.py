r"""Hourly grid signals (carbon intensity, electricity price) for the replay simulator.

A signal is one value per UTC hour, read from a CSV file: grid carbon intensity in gCO2/kWh
(``--carbon``) or electricity price in $/MWh (``--price``).

Reading (:func:`read_signal`)
    * A header row, then one row per hour. The timestamp column is ``timestamp``, ``time`` or
      ``datetime``; the value column is, for carbon, the first present of ``avg_CI``,
      ``gco2_per_kwh``, ``carbon_intensity``, for price of ``usd_per_mwh``,
      ``price_usd_per_mwh``, ``price``; a file of exactly two columns may name its value column
      anything (unless it is a column name of the other kind). Names match case-insensitively.
    * Timestamps are ISO 8601 (``2022-01-01 00:00:00+00:00``, ``2022-01-01T00:00:00Z``), taken
      to UTC. A file's timestamps either all name a zone or none does (then they are read as
      UTC); a file mixing both is refused (a naive time beside zoned ones is probably local and
      would shift its hour). Each must be on the hour and later than the one before.
    * A value must be a finite number in ASCII decimal notation (no unit suffix, no ``_``) within
      :data:`VALUE_RANGE`: carbon 0..5000 gCO2/kWh (the dirtiest grids, all coal, are about
      1000-1200; 5000 leaves room for any real series and refuses a misplaced unit or a
      sentinel), price -10,000..100,000 $/MWh (the bounds of real markets: ERCOT's offer cap
      is 5,000, Europe's day-ahead harmonised limits are -500..4,000 EUR/MWh and its intraday
      -9,999..9,999; Australia's cap is about 17,500 AUD). A negative price is real (markets
      clear below zero) and is kept, counted as ``negative_hours`` in :meth:`HourlySignal.info`.
    * An empty value cell, and every hour missing between two consecutive timestamps, is filled
      by linear interpolation in time between the nearest known hours before and after it: the
      hour ``k`` between known hours ``a`` and ``b`` gets ``v_a + (v_b - v_a) (k - a) / (b - a)``.
      Filled hours are listed in :attr:`HourlySignal.filled_hours`. At most
      :data:`MAX_FILLED_RUN_H` hours in a row are filled; the first and last hours must be known.

    Row N is line N of the file: the header is row 1, the first data row row 2; blank lines are
    skipped (they still count). The file is read strictly through pandas
    (:mod:`planner.files.csv_frames`): every cell as text, one record per line. Every violation becomes a
    :class:`~planner.contracts.problems.InputError` naming the file, listing all problems found (at most
    :data:`~planner.contracts.problems.MAX_REPORTED_PROBLEMS`), each with the path ``{name}:row N (column)``
    (``{name}:row N`` for a whole row), ``name`` being the file's name:

    =====================  ============================================================================
    code                   meaning
    =====================  ============================================================================
    unreadable             the file cannot be read (also too-large, not-utf8: :mod:`planner.contracts.jsonio`)
    bad-signal-header      empty file, or no usable timestamp or value column
    bad-row                a row with the wrong number of cells, not CSV (text after a closing quote),
                           or a quote left open or closed on a later line (a signal cell never spans
                           lines); reading stops at a record that is not CSV or spans lines
    bad-timestamp          a timestamp that is empty or not ISO 8601
    mixed-time-zones       a timestamp naming a zone when the first one names none, or the reverse
    off-hour-timestamp     a timestamp with non-zero minutes, seconds or microseconds
    duplicate-timestamp    the same hour as the row before
    unsorted-timestamp     an hour earlier than the row before
    bad-value              a value that is not a number
    not-finite             a value that is NaN or infinite
    negative-value         a carbon intensity below zero
    out-of-range           a value outside :data:`VALUE_RANGE` for its kind
    gap-too-long           more than :data:`MAX_FILLED_RUN_H` hours in a row without a value
    missing-edge-value     the first or last hour has no value (nothing to interpolate from)
    too-few-values         fewer than 2 hours with a value (when no row is broken)
    =====================  ============================================================================

Replay clock (:class:`SignalClock`)
    Replay time ``t`` (s, the trace's clock) falls in signal hour
    ``h(t) = floor((t - t0_s) / 3600) + offset_h``: ``t0_s`` is the replay time of the start of
    hour ``offset_h`` of the file. Hours are cyclic: hour ``h`` has the value of hour
    ``h mod n`` of an ``n``-hour file, so a replay longer than the file wraps around to its
    start (a year of hourly data repeats; the jump at the wrap is not smoothed). The value is
    constant within an hour; over a round ``[s, s + d)`` the signal's value is its time-weighted
    mean ``mean_over(s, d) = (1/d) * integral of value(h(t)) dt``, so a round straddling an hour
    boundary weighs both hours by the seconds it spends in each.

Accounting (:func:`signal_cost`)
    Energy ``E`` (J) drawn uniformly over a round costs ``E / 3.6e6 * mean_over`` grams of CO2
    (kWh x gCO2/kWh) on a carbon signal and ``E / 3.6e9 * mean_over`` dollars (MWh x $/MWh) on a
    price signal. ``relative = mean_over / trailing mean`` (dimensionless) compares a round's
    hours with the 24 hours before the round (what a signal-aware replay steers by).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from itertools import accumulate
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.files.csv_frames import DECIMAL, CsvChunk, CsvFrame, decimals, iso_times, read_csv_frame, texts_of
from wattplan.planner.files.resources import resolve_signal
from wattplan.planner.profiling.csv_header import duplicate_column_problems

SignalKind = Literal["carbon", "price"]
"""What a signal measures: grid carbon intensity (gCO2/kWh) or electricity price ($/MWh)."""

UNITS: Final[dict[str, str]] = {"carbon": "gCO2/kWh", "price": "$/MWh"}
"""The unit of each kind of signal."""

J_PER_KWH: Final = 3.6e6
"""Joules in a kilowatt-hour (carbon intensity is per kWh)."""

J_PER_MWH: Final = 3.6e9
"""Joules in a megawatt-hour (prices are per MWh)."""

COST_UNITS: Final[dict[str, str]] = {"carbon": "gCO2", "price": "$"}
"""The unit of :func:`signal_cost` for each kind of signal."""

S_PER_HOUR: Final = 3600.0
"""Seconds in one signal hour."""

MAX_FILLED_RUN_H: Final = 24
"""Most hours in a row that are filled by interpolation; a longer run is a ``gap-too-long`` error."""

TIMESTAMP_COLUMNS: Final = ("timestamp", "time", "datetime")
"""Names of the timestamp column, first present wins (matched case-insensitively)."""

VALUE_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "carbon": ("avg_CI", "gco2_per_kwh", "carbon_intensity"),
    "price": ("usd_per_mwh", "price_usd_per_mwh", "price"),
}
"""Names of the value column of each kind, first present wins (matched case-insensitively)."""

VALUE_RANGE: Final[dict[str, tuple[float, float]]] = {"carbon": (0.0, 5000.0), "price": (-10000.0, 100000.0)}
"""Smallest and largest value of each kind (gCO2/kWh, $/MWh), both included; see the module's rules."""


INFO_FILLED_SHOWN: Final = 5
"""Filled hours listed by :meth:`HourlySignal.info` (all are counted)."""

_SHOWN_CHARS = 40  # of a bad cell, in a message
_HOUR = timedelta(hours=1)
_US = timedelta(microseconds=1)
_US_PER_HOUR = 3_600_000_000
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class HourlySignal:
    """One value per UTC hour from ``start_utc`` on, gaps filled; hours past the end wrap around.

    ``kind`` is ``carbon`` (gCO2/kWh) or ``price`` ($/MWh); ``source`` the file name;
    ``column`` the value column read; ``filled_hours`` the ISO timestamps of the hours whose
    value was interpolated rather than read.
    """

    kind: SignalKind
    source: str
    start_utc: datetime
    values: tuple[float, ...]
    filled_hours: tuple[str, ...] = ()
    column: str = ""
    _prefix: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in UNITS:
            raise ValueError(f"kind must be one of {sorted(UNITS)}, not {self.kind!r}")
        if not self.values:
            raise ValueError("a signal needs at least one hourly value")
        if not all(math.isfinite(v) for v in self.values):
            raise ValueError("signal values must be finite")
        if self.start_utc.tzinfo is None or self.start_utc.utcoffset() != timedelta(0):
            raise ValueError("start_utc must be a time-zone-aware UTC datetime")
        # prefix[i] = sum of the first i values: whole-hour sums of SignalClock.mean_over in O(1)
        object.__setattr__(self, "_prefix", (0.0, *accumulate(self.values)))

    @property
    def hours(self) -> int:
        """The number of hours in the file (its period)."""
        return len(self.values)

    @property
    def unit(self) -> str:
        """The unit of the values: ``gCO2/kWh`` or ``$/MWh``."""
        return UNITS[self.kind]

    def value_at_hour(self, i: int) -> float:
        """The value of hour ``i`` after ``start_utc``, cyclic: hour ``i`` is hour ``i mod hours``."""
        return self.values[i % len(self.values)]

    @cached_property
    def mean(self) -> float:
        """The mean of the hourly values (filled hours included)."""
        return math.fsum(self.values) / len(self.values)

    def sum_hours(self, first: int, count: int) -> float:
        """The sum of the values of ``count`` >= 0 consecutive hours from hour ``first`` (cyclic)."""
        n = len(self.values)
        cycles, rest = divmod(count, n)
        start = first % n
        end = start + rest
        total = cycles * self._prefix[n]
        if end <= n:
            return total + self._prefix[end] - self._prefix[start]
        return total + self._prefix[n] - self._prefix[start] + self._prefix[end - n]

    def info(self) -> dict[str, Any]:
        """A JSON-able summary: kind, source, column, start, hours, filled hours, min/mean/max, unit."""
        return {
            "kind": self.kind,
            "source": self.source,
            "column": self.column,
            "start": self.start_utc.isoformat(),
            "hours": len(self.values),
            "filled_count": len(self.filled_hours),
            "filled_first": list(self.filled_hours[:INFO_FILLED_SHOWN]),
            "min": min(self.values),
            "mean": self.mean,
            "max": max(self.values),
            "negative_hours": sum(1 for v in self.values if v < 0),
            "unit": self.unit,
        }


class _Bad(ValueError):
    """One cell cannot be used: ``code`` and a message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _shown(text: str) -> str:
    """``text`` quoted for a message, shortened when long."""
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")


def _timestamp(text: str) -> tuple[datetime, bool]:
    """The UTC hour of an ISO 8601 timestamp (naive = UTC), and whether it names a zone; raises :class:`_Bad`."""
    text = text.strip()
    if not text:
        raise _Bad("bad-timestamp", "the timestamp is empty")
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise _Bad("bad-timestamp", f"{_shown(text)} is not an ISO 8601 date and time") from None
    zoned = stamp.tzinfo is not None
    try:
        stamp = stamp.astimezone(UTC) if zoned else stamp.replace(tzinfo=UTC)
    except OverflowError:
        raise _Bad("bad-timestamp", f"{_shown(text)} is out of range once taken to UTC") from None
    if (stamp.minute, stamp.second, stamp.microsecond) != (0, 0, 0):
        raise _Bad("off-hour-timestamp", f"{_shown(text)} is not on the hour (minutes and seconds must be 0)")
    return stamp, zoned


SIGNAL_YEARS: Final = (1970, 2200)
"""First and last UTC year a ``--signal-start`` may name: grid data exists from about 1970 on;
2200 leaves room for synthetic future series. Outside this window a date is a typo (``0001``,
``20222``) that would overflow date arithmetic rather than find an hour."""


def parse_signal_start(text: str, option: str = "--signal-start") -> datetime:
    """The UTC time of an ISO 8601 ``--signal-start`` (naive = UTC) within :data:`SIGNAL_YEARS`.

    Raises :class:`~planner.contracts.problems.InputError` naming ``option`` for text that is not ISO 8601
    or a time outside the window (checked before the offset is applied, so no date overflows).
    """
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(option, [Problem("bad-option", option, f"{text!r} is not an ISO 8601 time")]) from None
    first, last = SIGNAL_YEARS
    try:
        if not first <= when.year <= last:
            raise OverflowError(when.year)
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        if not first <= when.year <= last:
            raise OverflowError(when.year)
    except OverflowError:
        message = f"{text!r} is outside the years {first}-{last} (UTC)"
        raise InputError(option, [Problem("bad-option", option, message)]) from None
    return when


def _value(text: str, kind: SignalKind) -> float | None:
    """The number in a value cell, ``None`` when empty; raises :class:`_Bad`."""
    text = text.strip()
    if not text:
        return None
    if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise _Bad("not-finite", f"{_shown(text)} is not a finite number")
    if not DECIMAL.fullmatch(text):
        raise _Bad("bad-value", f"{_shown(text)} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise _Bad("not-finite", f"{_shown(text)} is not a finite number")
    if kind == "carbon" and value < 0:
        raise _Bad("negative-value", f"carbon intensity {value:g} {UNITS['carbon']} is below zero")
    low, high = VALUE_RANGE[kind]
    if not low <= value <= high:
        raise _Bad("out-of-range", f"{kind} {_shown(text)} {UNITS[kind]} is outside [{low:g}, {high:g}]")
    return value


def _find(header: Sequence[str], names: Sequence[str]) -> int | None:
    """The index of the first of ``names`` present in ``header`` (case-insensitive)."""
    lowered = [h.strip().lower() for h in header]
    for name in names:
        if name.lower() in lowered:
            return lowered.index(name.lower())
    return None


def _columns(header: Sequence[str], kind: SignalKind) -> tuple[int | None, int | None]:
    """The indices of the timestamp and value columns of ``header`` (``None`` when not found)."""
    ts = _find(header, TIMESTAMP_COLUMNS)
    value = _find(header, VALUE_COLUMNS[kind])
    if value is None and len(header) == 2 and ts is not None:
        other = 1 - ts
        other_kind = "price" if kind == "carbon" else "carbon"
        if _find([header[other]], VALUE_COLUMNS[other_kind]) is None:
            value = other
    return ts, value


def _stamp_of(micros: int) -> datetime:
    """The UTC time ``micros`` microseconds after 1970-01-01 00:00 UTC."""
    return _EPOCH_UTC + timedelta(microseconds=micros)


@dataclass
class _Problems:
    """Problems of a signal file with the row they are on, reported in row order (``slot`` orders a row's own)."""

    name: str
    found: list[tuple[int, int, Problem]] = field(default_factory=list)

    def add(self, row: int, slot: int, column: str | None, code: str, message: str) -> None:
        """Record ``code`` at ``row`` (and ``column``).

        ``slot`` orders the problems of one row: 0 its CSV, 1 its timestamp, 2 its value, 3 its
        place in the sequence, 4 the filling of gaps.
        """
        where = f"{self.name}:row {row}" + (f" ({column})" if column else "")
        self.found.append((row, slot, Problem(code, where, message)))

    def in_order(self) -> list[Problem]:
        """The problems by row, then slot, then as found; capped."""
        return capped(p for _, _, p in sorted(self.found, key=lambda rsp: (rsp[0], rsp[1])))


def _header_columns(path: Path, frame: CsvFrame, kind: SignalKind) -> tuple[int, int, tuple[str, ...]]:
    """The timestamp and value column indices of ``frame``'s header; raises ``bad-signal-header``."""
    name = path.name
    if frame.header is None:
        why = "the header is not CSV" if frame.header_line else "the file is empty"
        raise InputError(str(path), [Problem("bad-signal-header", f"{name}:row 1 (header)", why)])
    header = frame.header
    repeated = duplicate_column_problems([h.strip().lower() for h in header])
    if repeated:  # a lookup would read whichever copy it meets first
        where = [Problem(p.code, f"{name}:row 1 ({p.path.removeprefix('line 1, ')})", p.message) for p in repeated]
        raise InputError(str(path), where)
    ts_col, value_col = _columns(header, kind)
    if ts_col is None or value_col is None:
        missing = []
        if ts_col is None:
            missing.append(f"a timestamp column ({', '.join(TIMESTAMP_COLUMNS)})")
        if value_col is None:
            missing.append(f"a {kind} column ({', '.join(VALUE_COLUMNS[kind])}, or the second of two columns)")
        found = ", ".join(repr(h) for h in header)
        message = f"no {' and no '.join(missing)}; the columns are {found}"
        raise InputError(str(path), [Problem("bad-signal-header", f"{name}:row 1 (header)", message)])
    return ts_col, value_col, header


@dataclass
class _Rows:
    """The rows of one chunk of a signal file read so far: row numbers, UTC times (us since 1970) and values.

    ``stamp_ok``: the time is usable; ``zoned``: it names a zone; ``value_ok``: the value cell is
    usable (empty or a number); ``has_value``: it holds a number; ``stamp_texts``: the time cells.
    """

    rows: npt.NDArray[np.int64]
    micros: npt.NDArray[np.int64]
    stamp_ok: npt.NDArray[np.bool_]
    zoned: npt.NDArray[np.bool_]
    values: npt.NDArray[np.float64]
    value_ok: npt.NDArray[np.bool_]
    has_value: npt.NDArray[np.bool_]
    stamp_texts: npt.NDArray[np.object_]


def _signal_chunk(
    chunk: CsvChunk,
    columns: tuple[int, int],
    kind: SignalKind,
    stop: int | None,
    names: tuple[str, str],
    problems: _Problems,
) -> _Rows:
    """The times and values of one chunk's rows (those before line ``stop``), vectorised.

    A cell the fast path does not take is read again on its own (:func:`_timestamp`,
    :func:`_value`), which words its problem (added to ``problems``) or reads a rarer form.
    """
    keep = slice(None) if stop is None else slice(0, int(np.searchsorted(chunk.lines, stop)))
    rows = chunk.lines[keep]
    ts_texts = texts_of(chunk.cells[columns[0]])[keep]
    value_texts = texts_of(chunk.cells[columns[1]])[keep]
    ts_name, value_name = names

    micros, stamp_ok, zoned = iso_times(ts_texts)
    stamp_ok &= micros % _US_PER_HOUR == 0
    for k in np.flatnonzero(~stamp_ok).tolist():  # words the problem, or reads a rarer ISO form
        try:
            stamp, zoned[k] = _timestamp(str(ts_texts[k]))
        except _Bad as exc:
            problems.add(int(rows[k]), 1, ts_name, exc.code, str(exc))
            continue
        micros[k] = (stamp - _EPOCH_UTC) // _US
        stamp_ok[k] = True

    low, high = VALUE_RANGE[kind]
    values, value_ok = decimals(value_texts, high)
    value_ok &= values >= low
    has_value = value_ok.copy()
    for k in np.flatnonzero(~value_ok).tolist():
        try:
            value = _value(str(value_texts[k]), kind)
        except _Bad as exc:
            problems.add(int(rows[k]), 2, value_name, exc.code, str(exc))
            continue
        value_ok[k] = True
        if value is not None:
            values[k], has_value[k] = value, True
    return _Rows(rows, micros, stamp_ok, zoned, values, value_ok, has_value, ts_texts)


def read_signal(path: Path, kind: SignalKind) -> HourlySignal:
    """Read an hourly ``kind`` signal from the CSV file ``path``, filling short gaps (see the module's rules).

    The file is read by :func:`planner.files.csv_frames.read_csv_frame` (pandas, strict) and its cells
    checked vectorised; a cell the fast path does not take (an error, or a rarer ISO form) is
    checked again on its own, which words the problem or reads the rarer form.
    Raises :class:`~planner.contracts.problems.InputError` naming ``path`` with every problem found.
    """
    path = Path(path)
    if kind not in VALUE_COLUMNS:
        raise ValueError(f"kind must be one of {sorted(VALUE_COLUMNS)}, not {kind!r}")
    name = path.name
    frame = read_csv_frame(path)
    ts_col, value_col, header = _header_columns(path, frame, kind)
    ts_name, value_name = header[ts_col].strip(), header[value_col].strip()
    problems = _Problems(name)

    stop = None  # the line of a record reading stopped at
    for issue in frame.issues:
        if issue.kind == "columns":
            problems.add(issue.line, 0, None, "bad-row", issue.message)
            continue
        problems.add(issue.line, 0, None, "bad-row", f"{issue.message}; reading stopped here")
        stop = issue.line
        break
    parts: list[_Rows] = []
    first: tuple[bool, int] | None = None  # (zoned, row) of the first row with a usable timestamp
    for chunk in frame.chunks():
        part = _signal_chunk(chunk, (ts_col, value_col), kind, stop, (ts_name, value_name), problems)
        timed = np.flatnonzero(part.stamp_ok)
        if timed.size:  # naive times are UTC only in a file where no time names a zone
            if first is None:
                first = (bool(part.zoned[timed[0]]), int(part.rows[timed[0]]))
            had, other = ("a", "none") if not first[0] else ("no", "one")
            for k in timed[part.zoned[timed] != first[0]].tolist():
                message = (
                    f"{_shown(str(part.stamp_texts[k]).strip())} has {had} time zone and the one on row {first[1]} "
                    f"has {other}: a naive time is read as UTC only when no time of the file names a zone"
                )
                problems.add(int(part.rows[k]), 3, ts_name, "mixed-time-zones", message)
                part.stamp_ok[k] = False
        part.stamp_texts = np.zeros(0, dtype=object)  # the text of this chunk is no longer needed
        parts.append(part)
    del frame  # the file's bytes: only the parsed arrays are needed from here on
    rows = np.concatenate([np.zeros(0, dtype=np.int64), *(p.rows for p in parts)])
    micros = np.concatenate([np.zeros(0, dtype=np.int64), *(p.micros for p in parts)])
    values = np.concatenate([np.zeros(0), *(p.values for p in parts)])
    stamp_ok, value_ok, has_value = (
        np.concatenate([np.zeros(0, dtype=bool), *(getattr(p, f) for p in parts)])
        for f in ("stamp_ok", "value_ok", "has_value")
    )
    timed = np.flatnonzero(stamp_ok)
    stamps = micros[timed]
    before = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min], stamps[:-1]]))
    late = stamps <= before
    for k, stamp, last in zip(timed[late].tolist(), stamps[late].tolist(), before[late].tolist(), strict=True):
        code, how = ("duplicate-timestamp", "the same hour as") if stamp == last else ("unsorted-timestamp", "before")
        message = f"{_stamp_of(stamp).isoformat()} is {how} the row before ({_stamp_of(last).isoformat()})"
        problems.add(int(rows[k]), 3, ts_name, code, message)
    accepted = timed[~late]
    start = int(stamps[~late][0]) if accepted.size else 0
    entries = accepted[value_ok[accepted]]
    hours = (micros[entries] - start) // _US_PER_HOUR
    filled_values, filled = _fill(
        hours, values[entries], has_value[entries], rows[entries], value_name, problems, not problems.found
    )
    if problems.found:
        raise InputError(str(path), problems.in_order())
    start_utc = _stamp_of(start)
    filled_iso = tuple((start_utc + h * _HOUR).isoformat() for h in filled.tolist())
    return HourlySignal(kind, name, start_utc, tuple(filled_values.tolist()), filled_iso, value_name)


def _fill(
    hours: npt.NDArray[np.int64],
    values: npt.NDArray[np.float64],
    has_value: npt.NDArray[np.bool_],
    rows: npt.NDArray[np.int64],
    column: str,
    problems: _Problems,
    count_values: bool = True,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """The hourly values of the entries (hour, value, whether it has one, row) with missing hours interpolated.

    The hour ``k`` between known hours ``a`` and ``b`` gets ``v_a + (v_b - v_a) (k - a) / (b - a)``.
    Returns the values from the first known hour to the last, and the filled hours. Reports
    ``too-few-values`` (at row 1, only when ``count_values``: rows already reported as broken would
    explain it), ``missing-edge-value`` and ``gap-too-long`` to ``problems``.
    """
    known = np.flatnonzero(has_value)
    none = (np.zeros(0), np.zeros(0, dtype=np.int64))
    if known.size < 2:
        if count_values:
            problems.add(1, 4, column, "too-few-values", f"{known.size} hour(s) with a value, at least 2 are needed")
        return none
    for edge, which in ((0, "first"), (len(hours) - 1, "last")):
        if not has_value[edge]:
            message = f"the {which} hour has no value: nothing to interpolate from"
            problems.add(int(rows[edge]), 4, column, "missing-edge-value", message)
    known_hours, known_values, known_rows = hours[known], values[known], rows[known]
    missing = np.diff(known_hours) - 1
    for j in np.flatnonzero(missing > MAX_FILLED_RUN_H).tolist():
        message = (
            f"{missing[j]} hours in a row without a value between row {known_rows[j]} and row {known_rows[j + 1]}; "
            f"at most {MAX_FILLED_RUN_H} are filled by interpolation"
        )
        problems.add(int(known_rows[j + 1]), 4, column, "gap-too-long", message)
    first = int(known_hours[0])
    out = np.empty(int(known_hours[-1]) - first + 1)
    is_known = np.zeros(out.size, dtype=bool)
    out[known_hours - first] = known_values
    is_known[known_hours - first] = True
    filled = np.flatnonzero(~is_known) + first
    if filled.size:
        prev = np.searchsorted(known_hours, filled) - 1  # the known hour before each filled one
        a, b = known_hours[prev], known_hours[prev + 1]
        v0, v1 = known_values[prev], known_values[prev + 1]
        out[filled - first] = v0 + (v1 - v0) * (filled - a).astype(np.float64) / (b - a).astype(np.float64)
    return out, filled


TRAILING_H: Final = 24
"""Hours of the trailing window a signal-aware round compares its own hours with."""


@dataclass(frozen=True)
class SignalClock:
    """Maps the replay clock (s) onto the hours of ``signal``.

    Replay time ``t0_s`` is the start of hour ``offset_h`` of the signal (hours counted from its
    ``start_utc``); replay time ``t`` falls in hour ``floor((t - t0_s) / 3600) + offset_h``,
    taken cyclically (a replay longer than the file wraps around to its start).
    """

    signal: HourlySignal
    t0_s: float
    offset_h: int = 0

    def __post_init__(self) -> None:
        if not math.isfinite(self.t0_s):
            raise ValueError(f"t0_s must be finite, not {self.t0_s}")

    def hour_at(self, t_s: float) -> int:
        """The signal hour (not yet wrapped) that contains replay time ``t_s``."""
        return math.floor((t_s - self.t0_s) / S_PER_HOUR) + self.offset_h

    def value_at(self, t_s: float) -> float:
        """The value of the hour containing replay time ``t_s``."""
        return self.signal.value_at_hour(self.hour_at(t_s))

    def mean_over(self, start_s: float, duration_s: float) -> float:
        """The time-weighted mean value over ``[start_s, start_s + duration_s)`` (``value_at`` for a duration of 0).

        Each hour weighs by the seconds of the interval inside it; raises :class:`ValueError` for a
        non-finite start or a negative or non-finite duration.
        """
        if not (math.isfinite(start_s) and math.isfinite(duration_s)) or duration_s < 0:
            raise ValueError(f"need a finite start and a finite duration >= 0, got {start_s}, {duration_s}")
        if duration_s == 0:
            return self.value_at(start_s)
        rel0 = start_s - self.t0_s
        rel1 = rel0 + duration_s
        h0 = math.floor(rel0 / S_PER_HOUR)
        if h0 * S_PER_HOUR > rel0:  # the division rounded up onto the next boundary
            h0 -= 1
        h1 = math.floor(rel1 / S_PER_HOUR)
        if h1 * S_PER_HOUR >= rel1:  # the end is excluded: an interval ending on a boundary stops in the hour before
            h1 -= 1
        sig, off = self.signal, self.offset_h
        if h0 >= h1:
            return sig.value_at_hour(h0 + off)
        head = ((h0 + 1) * S_PER_HOUR - rel0) * sig.value_at_hour(h0 + off)
        tail = (rel1 - h1 * S_PER_HOUR) * sig.value_at_hour(h1 + off)
        middle = S_PER_HOUR * sig.sum_hours(h0 + 1 + off, h1 - h0 - 1)
        return (head + middle + tail) / duration_s

    def relative(self, start_s: float, duration_s: float, window_h: int = TRAILING_H) -> float:
        """``mean_over(start, d) / mean_over(start - window, window)``: the round against the day before it.

        Above 1 means dirtier (dearer) than the ``window_h`` hours before. Against the day before
        rather than the whole file: it needs no forecast and follows the season (a summer week of
        a carbon series is compared with its own days, not with the year). Raises
        :class:`ValueError` when the trailing mean is not positive (a free or negative price).
        """
        window_s = window_h * S_PER_HOUR
        trailing = self.mean_over(start_s - window_s, window_s)
        if trailing <= 0:
            raise ValueError(
                f"the trailing {window_h} h mean of {self.signal.source} is {trailing:g}: no relative value"
            )
        return self.mean_over(start_s, duration_s) / trailing


def signal_cost(clock: SignalClock, start_s: float, duration_s: float, energy_j: float) -> float:
    """The cost of ``energy_j`` joules drawn uniformly over ``[start_s, start_s + duration_s)``.

    Carbon: grams of CO2 ``= energy_j / 3.6e6 * mean_over`` (kWh x gCO2/kWh).
    Price: dollars ``= energy_j / 3.6e9 * mean_over`` (MWh x $/MWh).
    """
    per_unit = J_PER_KWH if clock.signal.kind == "carbon" else J_PER_MWH
    return energy_j / per_unit * clock.mean_over(start_s, duration_s)


def _offset_hours(signal: HourlySignal, start: str | None, option: str) -> int:
    """Hours from the signal's first hour to ``start`` (ISO 8601, UTC); 0 when not given."""
    if start is None:
        return 0
    when = parse_signal_start(start, option)
    hours = (when - signal.start_utc).total_seconds() / 3600
    if not 0 <= hours < signal.hours or hours != int(hours):
        msg = (
            f"{start} is not a whole hour within {signal.source} ({signal.start_utc:%Y-%m-%d %H:%M} + {signal.hours} h)"
        )
        raise InputError(option, [Problem("bad-option", option, msg)])
    return int(hours)


@functools.lru_cache(maxsize=8)
def _read_signal_once(path: Path, kind: SignalKind, mtime_ns: int, size: int) -> HourlySignal:
    """:func:`read_signal`, once per file version (the file's time and size are part of the key)."""
    return read_signal(path, kind)


def _read_signal(path: Path, kind: SignalKind) -> HourlySignal:
    """The signal of ``path``: read once for ``prepare`` and every policy of the replay."""
    try:
        st = path.stat()
    except OSError:
        return read_signal(path, kind)  # the reader reports the missing or unreadable file
    return _read_signal_once(path, kind, st.st_mtime_ns, st.st_size)


def signal_clock(kind: SignalKind, path: Path, t0_s: float, signal_start: str | None) -> SignalClock:
    """The signal of ``path`` on a run's clock: hour ``signal_start`` of the file at ``t0_s``, the run's start (s).

    ``signal_start`` is ISO 8601, UTC (default: the file's first hour). A bad file or hour raises
    :class:`InputError` naming it.
    """
    sig = _read_signal(resolve_signal(path), kind)
    return SignalClock(sig, t0_s, _offset_hours(sig, signal_start, "--signal-start"))
