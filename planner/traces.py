"""Readers for job traces users already have: Gavel ``.trace`` and Philly-derived CSV.

Both produce :class:`TraceJob` records; a Philly row names no model, so a job type is drawn
for it (seeded, uniformly among the profiled types), as Gavel does when it turns Philly
durations into jobs, and its step count is its duration times the type's reference
throughput at the requested count.

A trace that cannot be used raises :class:`~planner.problems.InputError` naming the file:
``unreadable``, ``too-large`` or ``not-utf8`` (see :mod:`planner.jsonio`), ``bad-trace-row``
and ``bad-trace-header`` with the line (``line N``), ``empty-trace``; at most
:data:`~planner.problems.MAX_REPORTED_PROBLEMS` rows are reported.
"""

from __future__ import annotations

import csv
import io
import math
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from planner.jsonio import read_text
from planner.problems import InputError, Problem, capped


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: arrival time (s from the trace's start), requested GPUs, total steps."""

    id: str
    type: str
    arrival_s: float
    requested_gpus: int
    total_steps: float


GAVEL_COLUMNS_7 = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
)
"""The layout of the traces shipped in ``instances/sources/gavel/traces`` (Gavel's first trace files)."""

GAVEL_COLUMNS_10 = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)
"""The layout read and written by current Gavel (``scheduler/utils.py::parse_trace``)."""

GAVEL_COLUMNS_9 = tuple(c for c in GAVEL_COLUMNS_10 if c != "working_directory")
"""The layout read by earlier versions of Gavel's ``scheduler/utils.py::parse_trace``."""

GAVEL_LAYOUTS: dict[int, tuple[str, ...]] = {len(c): c for c in (GAVEL_COLUMNS_7, GAVEL_COLUMNS_9, GAVEL_COLUMNS_10)}
"""Gavel trace layouts by their number of tab-separated columns."""

_SHOWN_CHARS = 40  # of a bad field, in a message

MAX_TRACE_S = 1e9
"""Largest arrival time or duration (s) of a trace row, about 31.7 years: the shipped traces reach
125 days; a larger value is a typo or a sentinel whose products overflow (a 1e308 s duration made
infinite total steps, and an instance that cannot be written as JSON)."""

MAX_TOTAL_STEPS = 1e15
"""Largest ``total_steps`` of a Gavel row: the shipped traces reach 8.7e8."""

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A plain decimal number in ASCII digits: no unit suffix, no ``_`` separators, no other scripts' digits."""

_WHOLE = re.compile(r"[+-]?[0-9]+")
"""A whole number in ASCII digits (``str.isdigit`` and ``int`` also take superscripts or other scripts)."""


class _BadRow(ValueError):
    """One row of a trace cannot be used; the message says why."""


def _shown(text: str) -> str:
    """``text`` quoted for a message, shortened when long."""
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")


def _number(text: str, column: str, most: float = math.inf) -> float:
    """The finite number at most ``most`` in field ``column``: ASCII decimal notation (``10s``, ``1_000`` refused)."""
    stripped = text.strip()
    if stripped.lower() in ("nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"):
        raise _BadRow(f"{column} {_shown(text)} is not a finite number")
    if not _DECIMAL.fullmatch(stripped):
        raise _BadRow(f"{column} {_shown(text)} is not a number")
    value = float(stripped)
    if not math.isfinite(value):
        raise _BadRow(f"{column} {_shown(text)} is not a finite number")
    if value > most:
        raise _BadRow(f"{column} {_shown(text)} is above {most:g}")
    return value


def _whole(text: str, column: str) -> int:
    """The whole number in field ``column``, in ASCII digits (``²`` or ``4 GPUs`` are refused)."""
    stripped = text.strip()
    try:
        if not _WHOLE.fullmatch(stripped):
            raise ValueError(stripped)
        return int(stripped)
    except ValueError:  # also more digits than int() converts
        raise _BadRow(f"{column} {_shown(text)} is not a whole number") from None


def _gavel_job(index: int, cols: list[str]) -> TraceJob:
    """The job of one Gavel line (``index`` counts lines from 0) split into ``cols``."""
    layout = GAVEL_LAYOUTS.get(len(cols))
    if layout is None:
        *others, last = sorted(GAVEL_LAYOUTS)
        expected = f"{', '.join(map(str, others))} or {last}"
        raise _BadRow(f"{len(cols)} tab-separated columns, expected {expected}")
    row = dict(zip(layout, cols, strict=True))
    job_type = row["job_type"].strip()
    if not job_type:
        raise _BadRow("job_type is empty")
    steps = _number(row["total_steps"], "total_steps", MAX_TOTAL_STEPS)
    arrival = _number(row["arrival_time"], "arrival_time", MAX_TRACE_S)
    gpus = _whole(row["scale_factor"], "scale_factor")
    if steps <= 0 or arrival < 0 or gpus <= 0:
        raise _BadRow("total_steps and scale_factor (GPUs) must be > 0, arrival_time >= 0")
    return TraceJob(f"j{index}", job_type, arrival, gpus, steps)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    r"""``(index from 0, line)`` of every non-blank line.

    Lines end as in Python's text files (``\n``, ``\r\n`` or ``\r``), not at the other breaks
    :meth:`str.splitlines` knows (form feed, ``\x1c``, ...), which a command field may hold.
    """
    for index, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if line.strip():
            yield index, line


def read_gavel_trace(path: Path) -> list[TraceJob]:
    """Parse a Gavel trace: one job a line, tab-separated, in one of three layouts told by the column count.

    * 7 columns (the shipped traces): ``job_type, command, num_steps_arg, needs_data_dir,
      total_steps, arrival_time, scale_factor``;
    * 9 columns (earlier Gavel): ``job_type, command, num_steps_arg, needs_data_dir,
      total_steps, scale_factor, priority_weight, SLO, arrival_time``;
    * 10 columns (current Gavel): ``job_type, command, working_directory, num_steps_arg,
      needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time``.

    Used: ``job_type``, ``total_steps``, ``arrival_time`` (s after the trace's start) and
    ``scale_factor`` (the requested GPU count). Ignored: ``command``, ``working_directory``,
    ``num_steps_arg`` and ``needs_data_dir`` (how Gavel runs a job), ``priority_weight`` (a
    trace job has no weight; the round builder gives each job weight 1) and ``SLO`` (no
    deadlines are planned). ``total_steps`` is at most :data:`MAX_TOTAL_STEPS`, ``arrival_time``
    at most :data:`MAX_TRACE_S`. Blank lines are skipped; the job on line N (from 1) gets id
    ``j{N-1}``. Each bad line is a ``bad-trace-row`` problem at ``line N``.
    """
    jobs, problems = [], []
    for index, line in _lines(read_text(path)):
        try:
            jobs.append(_gavel_job(index, line.split("\t")))
        except _BadRow as exc:
            problems.append(Problem("bad-trace-row", f"line {index + 1}", str(exc)))
    if problems:
        raise InputError(str(path), capped(problems))
    return jobs


PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


@dataclass(frozen=True, slots=True)
class _PhillyRow:
    """A usable Philly row: its position among the data rows, start time, duration (s), GPUs."""

    index: int
    stamp: datetime
    duration_s: float
    gpus: int


def _timestamp(text: str) -> tuple[datetime, bool]:
    """An ISO timestamp, taken to UTC and made naive when it has a time zone, and whether it had one."""
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        raise _BadRow(f"timestamp {_shown(text)} is not an ISO date and time") from None
    if stamp.tzinfo is None:
        return stamp, False
    try:
        return stamp.astimezone(UTC).replace(tzinfo=None), True
    except OverflowError:
        raise _BadRow(f"timestamp {_shown(text)} is out of range once taken to UTC") from None


def _philly_row(index: int, row: dict[str, str]) -> tuple[_PhillyRow, bool]:
    """The usable fields of a data row (``index`` counts data rows from 0), and whether its timestamp has a zone."""
    gpus = _whole(row["num_gpus"], "num_gpus")
    if gpus <= 0:
        raise _BadRow(f"num_gpus {gpus} must be >= 1")
    stamp, zoned = _timestamp(row["timestamp"])
    return _PhillyRow(index, stamp, _number(row["duration"], "duration", MAX_TRACE_S), gpus), zoned


def _header(reader: csv.DictReader, path: Path) -> tuple[str, ...]:
    """The column names of a CSV file (none for an empty file)."""
    try:
        return tuple(reader.fieldnames or ())
    except csv.Error as exc:
        raise InputError(str(path), [Problem("bad-trace-header", "line 1", f"not CSV: {exc}")]) from None


def _philly_rows(path: Path, virtual_cluster: str | None) -> list[_PhillyRow]:
    """The complete rows of a Philly CSV (of one cluster when ``virtual_cluster`` is given).

    Parsed strictly: a quote left open (which would swallow every later line into one field),
    a record spanning lines, and rows whose timestamps mix naive and zoned times (a naive one
    cannot be placed on the zoned ones' clock) are ``bad-trace-row`` problems.
    """
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""), strict=True)
    if _header(reader, path) != PHILLY_COLUMNS:
        raise InputError(
            str(path), [Problem("bad-trace-header", "line 1", f"expected columns {','.join(PHILLY_COLUMNS)}")]
        )
    rows, problems = [], []
    zones: tuple[bool, int] | None = None  # (zoned, line) of the first kept row
    first_line = reader.line_num + 1
    try:
        for i, row in enumerate(reader):
            line, first_line = first_line, reader.line_num + 1
            if line != reader.line_num:
                message = f"a quoted field runs from line {line} to line {reader.line_num}: a quote left open?"
                problems.append(Problem("bad-trace-row", f"line {line}", message))
                continue
            if None in row or any(v is None for v in row.values()):
                problems.append(Problem("bad-trace-row", f"line {line}", "the row has a different number of columns"))
                continue
            if any(not (row.get(c) or "").strip() for c in PHILLY_COLUMNS):
                continue
            if virtual_cluster is not None and row["cluster"] != virtual_cluster:
                continue
            try:
                kept, zoned = _philly_row(i, row)
            except _BadRow as exc:
                problems.append(Problem("bad-trace-row", f"line {line}", str(exc)))
                continue
            if zones is None:
                zones = (zoned, line)
            elif zones[0] != zoned:
                had, other = ("a", "none") if zoned else ("no", "one")
                message = (
                    f"timestamp {_shown(row['timestamp'])} has {had} time zone and the one on line {zones[1]} "
                    f"has {other}: naive and zoned times cannot be compared"
                )
                problems.append(Problem("bad-trace-row", f"line {line}", message))
                continue
            rows.append(kept)
    except csv.Error as exc:
        where = f"line {first_line}" if "end of data" in str(exc) else f"line {reader.line_num}"
        problems.append(Problem("bad-trace-row", where, f"not CSV: {exc} (a quote left open?)"))
    if problems:
        raise InputError(str(path), capped(problems))
    return rows


def read_philly_csv(
    path: Path,
    job_types: Sequence[str],
    steps_per_s: Callable[[str, int], float | None],
    seed: int = 0,
    virtual_cluster: str | None = None,
) -> list[TraceJob]:
    """Parse a Philly-derived CSV (``timestamp,duration,num_gpus,gpu_time,cluster``).

    Rows with an empty field are skipped; ``virtual_cluster`` keeps one cluster's rows.
    A kept row needs an ISO timestamp, a finite duration (s, at most :data:`MAX_TRACE_S`, ASCII
    decimal: ``10s`` or ``1_000`` are refused) and ``num_gpus >= 1`` (ASCII digits), or it is a ``bad-trace-row``
    problem at ``line N``; rows with a duration <= 0 are dropped. So are a row with a
    different number of columns, a quote left open or closed on a later line (a Philly field
    never spans lines), and timestamps mixing naive and zoned times (all naive, taken as
    written, or all zoned, taken to UTC).
    Arrivals are seconds after the earliest kept timestamp. Each row gets a type drawn
    with ``random.Random(seed)`` among ``job_types`` whose ``steps_per_s(type, gpus)``
    is known, and ``total_steps = duration_s * steps_per_s(type, gpus)``.
    """
    rows = _philly_rows(Path(path), virtual_cluster)
    if not rows:
        raise InputError(
            str(path),
            [
                Problem(
                    "empty-trace",
                    "(file)",
                    "no usable rows" + (f" for cluster {virtual_cluster}" if virtual_cluster else ""),
                )
            ],
        )
    start = min(r.stamp for r in rows)
    rng = random.Random(seed)
    jobs = []
    for r in sorted(rows, key=lambda r: (r.stamp, r.index)):
        usable = [t for t in job_types if steps_per_s(t, r.gpus)]
        if not usable or r.duration_s <= 0:
            continue
        job_type = rng.choice(usable)
        rate = steps_per_s(job_type, r.gpus) or 0.0
        jobs.append(TraceJob(f"p{r.index}", job_type, (r.stamp - start).total_seconds(), r.gpus, r.duration_s * rate))
    return jobs
