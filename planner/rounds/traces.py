"""Readers for job traces users already have: Gavel ``.trace`` and Philly-derived CSV.

Both produce :class:`TraceJob` records; a Philly row names no model, so a job type is drawn
for it (seeded, uniformly among the profiled types), as Gavel does when it turns Philly
durations into jobs, and its step count is its duration times the type's reference
throughput at the requested count.

A trace that cannot be used raises :class:`~planner.contracts.problems.InputError` naming the file:
``unreadable``, ``too-large`` or ``not-utf8`` (see :mod:`planner.contracts.jsonio`), ``bad-trace-row``
and ``bad-trace-header`` with the line (``line N``), ``empty-trace``; at most
:data:`~planner.contracts.problems.MAX_REPORTED_PROBLEMS` rows are reported.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.files.csv_frames import (
    CsvChunk,
    CsvFrame,
    blank_cells,
    decimals,
    iso_times,
    read_csv_frame,
    texts_of,
    whole_numbers,
)

if TYPE_CHECKING:
    from wattplan.planner.profile_library.library import ProfileLibrary


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

MAX_TRACE_GPUS = 65_536
"""Most GPUs of one trace job (Philly ``num_gpus``, Gavel ``scale_factor``): the shipped traces ask for at
most 128; a larger count is a typo or a sentinel (a 30-digit count was accepted and then never placed)."""
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
    if gpus > MAX_TRACE_GPUS:
        raise _BadRow(f"scale_factor {gpus} GPUs is above {MAX_TRACE_GPUS:,}: a typo?")
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

_US = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1)
_JOB_BLOCK = 65_536  # rows turned into Python values at a time


@dataclass(frozen=True)
class _PhillyRows:
    """The usable Philly rows in file order, one array per field.

    ``index``: position among the data records; ``micros``: start time in microseconds since
    1970-01-01 (UTC when zoned, as written when naive); ``duration_s`` (s); ``gpus``.
    """

    index: npt.NDArray[np.int64]
    micros: npt.NDArray[np.int64]
    duration_s: npt.NDArray[np.float64]
    gpus: npt.NDArray[np.int64] | npt.NDArray[np.object_]


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


def _philly_row(row: dict[str, str]) -> tuple[int, datetime, float, bool]:
    """GPUs, start time, duration (s) of a data row, and whether its timestamp has a zone; raises :class:`_BadRow`.

    The checks, in order: ``num_gpus`` a whole number >= 1, ``timestamp`` ISO, ``duration`` a number.
    """
    gpus = _whole(row["num_gpus"], "num_gpus")
    if gpus <= 0:
        raise _BadRow(f"num_gpus {gpus} must be >= 1")
    if gpus > MAX_TRACE_GPUS:
        raise _BadRow(f"num_gpus {gpus} is above {MAX_TRACE_GPUS:,}: a typo?")
    stamp, zoned = _timestamp(row["timestamp"])
    return gpus, stamp, _number(row["duration"], "duration", MAX_TRACE_S), zoned


def _structure_problems(frame: CsvFrame) -> list[tuple[int, Problem]]:
    """``(line, problem)`` for each record of ``frame`` that is not a row: spanning lines, wrong width, not CSV."""
    out = []
    for issue in frame.issues:
        if issue.kind == "columns":
            out.append(
                (
                    issue.line,
                    Problem("bad-trace-row", f"line {issue.line}", "the row has a different number of columns"),
                )
            )
        else:
            out.append((issue.line, Problem("bad-trace-row", f"line {issue.line}", issue.message)))
    return out


def _philly_chunk(
    chunk: CsvChunk, virtual_cluster: str | None, problems: list[tuple[int, Problem]]
) -> tuple[_PhillyRows, npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
    """The usable rows of one chunk, whether each timestamp names a zone, and their positions in the chunk.

    Rows with an empty cell (or one of white space only), or of another cluster, are skipped;
    a row that cannot be used adds a problem to ``problems``.
    """
    texts = {name: texts_of(chunk.cells[i]) for i, name in enumerate(PHILLY_COLUMNS)}
    keep = np.ones(len(chunk.cells), dtype=bool)
    for name in PHILLY_COLUMNS:
        keep &= ~blank_cells(texts[name])
    if virtual_cluster is not None:
        keep &= texts["cluster"] == virtual_cluster
    gpus, gpus_ok = whole_numbers(texts["num_gpus"])
    micros, stamp_ok, zoned = iso_times(texts["timestamp"])
    duration, duration_ok = decimals(texts["duration"], MAX_TRACE_S)
    fast = gpus_ok & (gpus > 0) & (gpus <= MAX_TRACE_GPUS) & stamp_ok & duration_ok
    lines = chunk.lines
    for k in np.flatnonzero(keep & ~fast).tolist():  # words the problem, or reads a rarer ISO form
        row = {name: str(texts[name][k]) for name in PHILLY_COLUMNS}
        try:
            count, stamp, duration[k], zoned[k] = _philly_row(row)
        except _BadRow as exc:
            problems.append((int(lines[k]), Problem("bad-trace-row", f"line {lines[k]}", str(exc))))
            keep[k] = False
            continue
        gpus[k] = count
        micros[k] = (stamp - _EPOCH) // _US
    kept = np.flatnonzero(keep)
    return _PhillyRows(chunk.records[kept], micros[kept], duration[kept], gpus[kept]), zoned[kept], kept


def _philly_rows(path: Path, virtual_cluster: str | None) -> _PhillyRows:
    """The complete rows of a Philly CSV (of one cluster when ``virtual_cluster`` is given).

    Read by :func:`planner.files.csv_frames.read_csv_frame` (pandas, strict, a chunk of rows at a
    time): a quote left open (which would swallow every later line into one field), a record
    spanning lines, a row with a different number of columns, and rows whose timestamps mix
    naive and zoned times (a naive one cannot be placed on the zoned ones' clock) are
    ``bad-trace-row`` problems. The cells are checked vectorised; a cell the fast path does not
    take (an error, or a rarer ISO form) is checked again one row at a time, which words the
    problem or reads the rarer form.
    """
    frame = read_csv_frame(path)
    if frame.header != PHILLY_COLUMNS or frame.header_line != 1:
        why = frame.header_issue if frame.header_issue.startswith("not CSV") else ""
        message = why or f"expected columns {','.join(PHILLY_COLUMNS)}"
        raise InputError(str(path), [Problem("bad-trace-header", "line 1", message)])
    problems = _structure_problems(frame)
    parts: list[_PhillyRows] = []
    first: tuple[bool, int] | None = None  # (zoned, line) of the first kept row
    for chunk in frame.chunks():
        rows, zoned, where = _philly_chunk(chunk, virtual_cluster, problems)
        if not where.size:
            continue
        if first is None:
            first = (bool(zoned[0]), int(chunk.lines[where[0]]))
        mixed = zoned != first[0]
        had, other = ("a", "none") if not first[0] else ("no", "one")
        for k in where[mixed].tolist():
            message = (
                f"timestamp {_shown(str(chunk.cells.iat[k, 0]))} has {had} time zone and the one on line "
                f"{first[1]} has {other}: naive and zoned times cannot be compared"
            )
            problems.append((int(chunk.lines[k]), Problem("bad-trace-row", f"line {chunk.lines[k]}", message)))
        same = ~mixed
        parts.append(_PhillyRows(rows.index[same], rows.micros[same], rows.duration_s[same], rows.gpus[same]))
    if problems:
        raise InputError(str(path), capped(p for _, p in sorted(problems, key=lambda lp: lp[0])))
    if not parts:
        none = np.zeros(0, dtype=np.int64)
        return _PhillyRows(none, none, np.zeros(0), none)
    return _PhillyRows(
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("index", "micros", "duration_s", "gpus"))
    )


def _seconds_after(micros: npt.NDArray[np.int64], start: int) -> list[float]:
    """``(micros - start) / 1e6`` (s), rounded once from the integer as :meth:`datetime.timedelta.total_seconds` is."""
    delta = micros - start
    if delta.size and int(delta.max()) >= 2**53:  # beyond 285 years: int -> float would round first
        return [d / 10**6 for d in delta.tolist()]
    return (delta.astype(np.float64) / 1e6).tolist()


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
    if not rows.index.size:
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
    order = np.lexsort((rows.index, rows.micros))
    start = int(rows.micros.min())
    rng = random.Random(seed)
    usable_for: dict[int, list[str]] = {}
    jobs = []
    for block in range(0, order.size, _JOB_BLOCK):  # Python values for one block of rows at a time
        at = order[block : block + _JOB_BLOCK]
        for index, arrival, duration_s, gpus in zip(
            rows.index[at].tolist(),
            _seconds_after(rows.micros[at], start),
            rows.duration_s[at].tolist(),
            rows.gpus[at].tolist(),
            strict=True,
        ):
            usable = usable_for.get(gpus)
            if usable is None:
                usable = usable_for[gpus] = [t for t in job_types if steps_per_s(t, gpus)]
            if not usable or duration_s <= 0:
                continue
            job_type = rng.choice(usable)
            rate = steps_per_s(job_type, gpus) or 0.0
            jobs.append(TraceJob(f"p{index}", job_type, arrival, gpus, duration_s * rate))
    return jobs


REFERENCE_GPU_TYPE = "v100"
"""The GPU type whose top-setting throughput turns a trace job's duration into steps and its progress into time."""
TraceFormat = Literal["auto", "gavel", "philly"]


def normalise_request(requested: int, n_max: int) -> int:
    """Smallest power of two >= ``min(requested, n_max)``, at most ``n_max``."""
    n = min(requested, n_max)
    return min(1 << (n - 1).bit_length(), n_max)


def trace_format(path: Path, fmt: TraceFormat = "auto") -> Literal["gavel", "philly"]:
    """``fmt`` itself, or by extension when ``auto``: ``.csv`` is Philly, anything else Gavel."""
    if fmt != "auto":
        return fmt
    return "philly" if Path(path).suffix.lower() == ".csv" else "gavel"


def read_trace(
    path: Path,
    lib: ProfileLibrary,
    fmt: TraceFormat = "auto",
    seed: int = 0,
    virtual_cluster: str | None = None,
) -> list[TraceJob]:
    """Every job of a Gavel or Philly trace; a Philly row's type is drawn with ``seed``.

    A Philly row names no model: its type is drawn among the library's types that have a
    throughput at the row's (normalised) GPU count on the reference GPU type, and its steps
    are its duration times that throughput (:func:`planner.rounds.traces.read_philly_csv`).
    """
    if trace_format(path, fmt) == "gavel":
        return read_gavel_trace(path)
    types = sorted({p.type for p in lib.profiles})
    return read_philly_csv(
        path,
        types,
        lambda t, n: lib.top_throughput(t, REFERENCE_GPU_TYPE, normalise_request(n, lib.max_count(t))),
        seed=seed,
        virtual_cluster=virtual_cluster,
    )
