r"""Read nvidia-smi query logs into samples per GPU, every bad row reported with its line and column.

The logs are what ``nvidia-smi --query-gpu=index,timestamp,power.draw,... --format=csv[,nounits] -l N``
writes: a header of comma-separated field names, each with its unit in brackets
(``index, timestamp, power.draw [W], utilization.gpu [%]``), then one line per GPU and sample, the GPUs of
one sample interleaved. With ``--format=csv`` the values carry the unit (``212.35 W``, ``87 %``); with
``,nounits`` they are bare (``212.35``); the header keeps the brackets either way. Columns may come in any
order; names are matched case-insensitively without their unit.

Units are applied (:mod:`planner.profiling.units`): a value's own suffix if written, else the header's, else
the field's unit. Power columns may be in W, mW or kW (``power.draw [mW]``, ``212350 mW``: 212.35 W), clocks
in MHz, GHz or kHz, memory in MiB, GiB or KiB; the samples hold W, MHz and MiB.

Columns read (others, such as ``uuid``, ``pstate``, are read past):

==========================  =====================================================  ===========
column                      sample field                                           required
==========================  =====================================================  ===========
``index``                   the GPU (integer >= 0)                                 yes
``timestamp``               ``time`` (``2026/11/24 13:05:01.123``, local clock)     yes
``power.draw``              ``power_w`` (W); else ``power.draw.average``, else     yes
                            ``power.draw.instant``
``utilization.gpu``         ``utilisation`` = value / 100 (fraction, 0-1)          no
``clocks.sm``               ``sm_clock_mhz`` (MHz); else ``clocks.current.sm``     no
``enforced.power.limit``    ``power_limit_w`` (W); else ``power.limit``            no
``power.max_limit``         ``max_limit_w`` (W)                                    no
``memory.used``             ``memory_used_mib`` (MiB)                              no
``name``                    the GPU's model name (``SmiLog.gpu_names``, text)      no
==========================  =====================================================  ===========

Bad input, and what happens (each problem names ``line L`` and the column):

* not an nvidia-smi CSV (the first non-blank line lacks ``index``, ``timestamp`` or ``power.draw``, e.g.
  a log written with ``noheader``), or a column named twice: :class:`InputError` (``not-nvidia-smi``,
  ``duplicate-column``);
* a row with fewer or more fields than the header (a log cut off mid-line): the row is skipped
  (``truncated-row``);
* ``[N/A]``, ``[Not Supported]`` or another bracketed nvidia-smi marker in a required column: the row is
  skipped (``not-available``); in an optional column the value is unknown (``None``) and one
  ``not-available`` problem per column gives the count and the first line;
* a header unit the field cannot have (``power.draw [dBm]``): :class:`InputError` (``unknown-unit``);
* a value that is not a finite number, carries a unit the field cannot have, or is out of range after
  conversion (power per GPU outside (0, 5000] W, utilisation above 100 %, a negative clock or memory): the
  row is skipped (``bad-value``, naming the line and column);
* a timestamp not after the previous kept sample of the same GPU (unsorted rows, a clock set back): the
  row is skipped (``unsorted-timestamp``); a clock set back thus skips every sample until the time passes
  the last kept one;
* a step between consecutive samples of one GPU more than :data:`JUMP_FACTOR` times that GPU's median step
  (the sampler stopped or the clock jumped forward): the row is kept and starts a new *segment*
  (``clock-jump``); integrals never bridge two segments and a run window spanning one is skipped
  (:mod:`planner.profiling.smi_points`);
* a line repeating the header (logs appended to each other) and blank lines: read past;
* a NUL byte in a line: the row is skipped (``bad-value``);
* no GPU left with two samples: :class:`InputError` (``no-samples``) with every problem found.

Lines end at ``\n`` (a ``\r`` before it is white space). The log is read block by block and parsed by
pandas (:mod:`planner.profiling.smi_frame`): a 2-million-row log reads in seconds, and memory grows with
the samples kept (about 70 bytes each), not with the file's text. Each GPU's samples are columns
(:class:`GpuSamples`, NumPy arrays); indexing one gives an :class:`SmiSample`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import overload

import numpy as np

from wattplan.planner.contracts.jsonio import line_blocks
from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, InputError, Problem, capped
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.profiling.smi_frame import (
    BoolArray,
    Columns,
    FloatArray,
    IntArray,
    RowParser,
    datetime_ns,
    ns_to_datetime,
    ns_to_seconds,
)
from wattplan.planner.profiling.units import (
    CLOCK_UNITS,
    MEMORY_UNITS,
    PERCENT_UNITS,
    POWER_UNITS,
    describe,
    unit_factor,
)

JUMP_FACTOR = 10.0
"""A step longer than this many median steps of the GPU is a clock jump (a new segment)."""

REQUIRED = ("index", "timestamp", "power_w")
# field -> accepted column names, preferred first
COLUMNS: dict[str, tuple[str, ...]] = {
    "index": ("index",),
    "timestamp": ("timestamp",),
    "power_w": ("power.draw", "power.draw.average", "power.draw.instant"),
    "utilisation": ("utilization.gpu",),
    "sm_clock_mhz": ("clocks.sm", "clocks.current.sm"),
    "power_limit_w": ("enforced.power.limit", "power.limit"),
    "max_limit_w": ("power.max_limit",),
    "memory_used_mib": ("memory.used",),
    "gpu_name": ("name",),
}
NUMERIC_FIELDS = ("power_w", "utilisation", "sm_clock_mhz", "power_limit_w", "max_limit_w", "memory_used_mib")
UNITS: dict[str, Mapping[str, float]] = {
    "power_w": POWER_UNITS,
    "utilisation": PERCENT_UNITS,
    "sm_clock_mhz": CLOCK_UNITS,
    "power_limit_w": POWER_UNITS,
    "max_limit_w": POWER_UNITS,
    "memory_used_mib": MEMORY_UNITS,
}
"""The units each numeric field may be written in, with their factors to the field's unit."""
POWER_FIELDS = ("power_w", "power_limit_w", "max_limit_w")
"""Fields in W per GPU, each in (0, :data:`~planner.contracts.profile_checks.MAX_GPU_POWER_W`] after conversion."""
_EPOCH = datetime(1970, 1, 1)
_LIMIT = MAX_REPORTED_PROBLEMS + 1
BLOCK_BYTES = 16 * 2**20
"""Bytes of the log read and parsed at once (whole lines; a longer line is read whole)."""


@dataclass(frozen=True, slots=True)
class SmiSample:
    """One sample of one GPU: ``t_s`` is ``time`` in seconds since 1970-01-01 of the log's own clock."""

    line: int
    time: datetime
    t_s: float
    power_w: float
    utilisation: float | None
    sm_clock_mhz: float | None
    power_limit_w: float | None
    max_limit_w: float | None
    memory_used_mib: float | None
    segment: int


def _known(x: float) -> float | None:
    """NaN (a marker, or no such column) as None."""
    return None if np.isnan(x) else float(x)


@dataclass(frozen=True, slots=True, eq=False)
class GpuSamples:
    """One GPU's kept samples as columns of equal length, in time order.

    ``t_ns``: integer ns since 1970-01-01 of the log's clock, ``t_s`` the same in float seconds; ``power_w``,
    ``power_limit_w``, ``max_limit_w`` in W, ``utilisation`` a fraction (0-1), ``sm_clock_mhz`` in MHz,
    ``memory_used_mib`` in MiB, NaN where the cell was a marker or the log has no such column;
    ``segment`` counts the clock jumps before the sample.
    """

    line: IntArray
    t_ns: IntArray
    t_s: FloatArray
    power_w: FloatArray
    utilisation: FloatArray
    sm_clock_mhz: FloatArray
    power_limit_w: FloatArray
    max_limit_w: FloatArray
    memory_used_mib: FloatArray
    segment: IntArray

    def __len__(self) -> int:
        return len(self.line)

    @overload
    def __getitem__(self, k: int) -> SmiSample: ...

    @overload
    def __getitem__(self, k: slice) -> GpuSamples: ...

    def __getitem__(self, k: int | slice) -> SmiSample | GpuSamples:
        if isinstance(k, slice):
            return GpuSamples(*(getattr(self, f)[k] for f in self.__slots__))
        return SmiSample(
            line=int(self.line[k]),
            time=ns_to_datetime(int(self.t_ns[k])),
            t_s=float(self.t_s[k]),
            power_w=float(self.power_w[k]),
            utilisation=_known(self.utilisation[k]),
            sm_clock_mhz=_known(self.sm_clock_mhz[k]),
            power_limit_w=_known(self.power_limit_w[k]),
            max_limit_w=_known(self.max_limit_w[k]),
            memory_used_mib=_known(self.memory_used_mib[k]),
            segment=int(self.segment[k]),
        )

    def __iter__(self) -> Iterator[SmiSample]:
        return (self[k] for k in range(len(self)))

    def between(self, a: float, b: float) -> GpuSamples:
        """The samples with ``a <= t_s <= b`` (s), by binary search."""
        lo = int(np.searchsorted(self.t_s, a, side="left"))
        hi = int(np.searchsorted(self.t_s, b, side="right"))
        return self[lo:hi]


@dataclass(frozen=True, slots=True)
class SmiLog:
    """A parsed log: ``samples[gpu]`` in time order, the ``fields`` its columns gave, the rows' problems."""

    path: Path
    file: str
    sha256: str
    fields: frozenset[str]
    samples: dict[int, GpuSamples]
    median_step_s: dict[int, float]
    problems: list[Problem]
    gpu_names: dict[int, str]
    """Each GPU's model name from the ``name`` column (its first kept sample's), where the log has one."""

    @property
    def gpus(self) -> list[int]:
        """The GPU indices with samples, ascending."""
        return sorted(self.samples)


def seconds(time: datetime) -> float:
    """A naive datetime as seconds since 1970-01-01 on the same clock (no time zone is applied).

    Computed as the samples' ``t_s`` are (:func:`~planner.profiling.smi_frame.ns_to_seconds`), so a run's
    window that starts at a sample's time compares equal to it.
    """
    return float(ns_to_seconds(np.array([datetime_ns(time)], dtype=np.int64))[0])


def from_seconds(t_s: float) -> datetime:
    """Inverse of :func:`seconds` (to the microsecond)."""
    return _EPOCH + timedelta(seconds=t_s)


def format_time(time: datetime) -> str:
    """A time as nvidia-smi writes it: ``2026/11/24 13:05:01.123`` (milliseconds)."""
    return time.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def _split_column(raw: str) -> tuple[str, str | None]:
    """``"power.draw [W]"`` -> ``("power.draw", "W")``; no brackets -> no unit."""
    text = raw.strip()
    if text.endswith("]") and " [" in text:
        name, unit = text[:-1].split(" [", 1)
        return name.strip().lower(), unit.strip()
    return text.lower(), None


def _header(line: str, source: str) -> tuple[dict[str, int], dict[str, str | None]]:
    """Column positions and units of the fields read; ``InputError`` when the line is no nvidia-smi header."""
    names = [_split_column(c) for c in line.split(",")]
    seen: dict[str, int] = {}
    problems = []
    for pos, (name, _) in enumerate(names):
        if name in seen:
            problems.append(Problem("duplicate-column", f"line 1, {name}", f"column {name!r} appears twice"))
        seen.setdefault(name, pos)
    positions: dict[str, int] = {}
    units: dict[str, str | None] = {}
    for field, accepted in COLUMNS.items():
        for name in accepted:
            if name in seen:
                positions[field] = seen[name]
                units[field] = names[seen[name]][1]
                break
    for field, unit in units.items():
        if field in UNITS and unit_factor(unit, UNITS[field]) is None:
            column = names[positions[field]][0]
            message = f"unit [{unit}] of {column} is not {describe(UNITS[field])}"
            problems.append(Problem("unknown-unit", f"line 1, {column}", message))
    missing = [COLUMNS[f][0] for f in REQUIRED if f not in positions]
    if missing:
        message = (
            f"not an nvidia-smi query log: the header lacks {', '.join(missing)} (write it with "
            "nvidia-smi --query-gpu=index,timestamp,power.draw,... --format=csv, with its header)"
        )
        problems.append(Problem("not-nvidia-smi", "line 1", message))
    if problems:
        raise InputError(source, problems)
    return positions, units


def _find_header(first_line: int, block: bytes) -> tuple[str, int, bytes] | None:
    """The first non-blank line of ``block`` (decoded), the number of the line after it and the bytes after it."""
    at = 0
    line = first_line
    while at < len(block):
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end
        text = block[at:end].decode("utf-8")
        if text.strip():
            return text, line + 1, block[end + 1 :]
        at, line = end + 1, line + 1
    return None


def _columns(header: str, source: str) -> Columns:
    """The :class:`~planner.profiling.smi_frame.Columns` of a header line (``InputError`` if it is no header)."""
    positions, units = _header(header, source)
    cells = tuple(c.strip().lower() for c in header.split(","))
    return Columns(
        width=len(cells),
        positions=positions,
        units=units,
        header_cells=cells,
        column_names={f: COLUMNS[f][0] for f in positions},
        field_units=UNITS,
        power_fields=frozenset(POWER_FIELDS),
    )


def _parse(path: Path, block_bytes: int) -> RowParser:
    """Every block of the log through a :class:`~planner.profiling.smi_frame.RowParser`."""
    source = str(path)
    parser: RowParser | None = None
    for first_line, block in line_blocks(path, block_bytes):
        if parser is None:
            found = _find_header(first_line, block)
            if found is None:
                continue
            header, next_line, rest = found
            columns = _columns(header, source)
            numeric = tuple(f for f in NUMERIC_FIELDS if f in columns.positions)
            parser = RowParser(columns, numeric=numeric, required=REQUIRED)
            parser.feed(next_line, rest)
        else:
            parser.feed(first_line, block)
    if parser is None:
        raise InputError(source, [Problem("not-nvidia-smi", "(file)", "the file is empty")])
    return parser


def _in_order(gpu: int, lines: IntArray, t_ns: IntArray) -> tuple[BoolArray, list[Problem]]:
    """Which of one GPU's rows (file order) are kept: each strictly after every earlier one.

    A row is kept iff ``t_i > max_(j < i) t_j``: the kept times increase, and a skipped row is never later
    than the last kept one, so the running maximum is the previous kept sample. Returns the mask and the
    ``unsorted-timestamp`` problems of the first skipped rows.
    """
    before = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(t_ns)[:-1]))
    kept = t_ns > before
    kept_at = np.flatnonzero(kept)
    problems = []
    bad = np.flatnonzero(~kept)
    for k in bad[:_LIMIT]:
        prev = kept_at[np.searchsorted(kept_at, k) - 1]
        message = (
            f"{format_time(ns_to_datetime(int(t_ns[k])))} is not after GPU {gpu}'s previous sample "
            f"{format_time(ns_to_datetime(int(t_ns[prev])))} (line {lines[prev]}): "
            "unsorted or the clock went back; row skipped"
        )
        problems.append(Problem("unsorted-timestamp", f"line {lines[k]}, timestamp", message))
    return kept, problems


def _segments(gpu: int, lines: IntArray, t_s: FloatArray) -> tuple[IntArray, float, list[Problem]]:
    """Segment numbers of one GPU's kept samples, its median step (s) and the ``clock-jump`` problems.

    A step ``dt_i = t_i - t_(i-1)`` longer than ``JUMP_FACTOR * median(dt)`` starts a new segment.
    """
    steps = np.diff(t_s)
    median = float(np.median(steps)) if len(steps) else 0.0
    jumps = np.flatnonzero(steps > JUMP_FACTOR * median) + 1
    segment = np.zeros(len(t_s), dtype=np.int64)
    segment[jumps] = 1
    problems = []
    for k in jumps[:_LIMIT]:
        message = (
            f"{steps[k - 1]:.6g} s since the previous sample of GPU {gpu} (median step {median:.6g} s): "
            "the sampler stopped or the clock jumped; a new segment starts here"
        )
        problems.append(Problem("clock-jump", f"line {lines[k]}, timestamp", message))
    return np.cumsum(segment), median, problems


def read_nvidia_smi_log(path: Path, block_bytes: int = BLOCK_BYTES) -> SmiLog:
    """Parse an nvidia-smi query log (see the module docstring for the columns and the rules for bad rows).

    The file is read ``block_bytes`` at a time (whole lines); the result does not depend on it.
    """
    path = Path(path)
    parser = _parse(path, block_bytes)
    lines, gpu, t_ns, values, names = parser.take_rows()
    problems = list(parser.problems)
    for field, (count, first) in parser.markers.items():
        message = f"no value on {count} row(s), first line {first}; treated as unknown there"
        problems.append(Problem("not-available", f"column {COLUMNS[field][0]}", message))
    samples: dict[int, GpuSamples] = {}
    medians: dict[int, float] = {}
    gpu_names: dict[int, str] = {}
    name_of = {code: name for name, code in parser.names.items()}
    order = np.argsort(gpu, kind="stable")
    ids, starts = np.unique(gpu[order], return_index=True)
    nan = np.full(len(gpu), np.nan)
    for g, lo, hi in zip(ids, starts, [*starts[1:], len(order)][: len(ids)], strict=True):
        rows = order[lo:hi]
        kept, unsorted = _in_order(int(g), lines[rows], t_ns[rows])
        rows = rows[kept]
        t_s = ns_to_seconds(t_ns[rows])
        segment, medians[int(g)], jumps = _segments(int(g), lines[rows], t_s)
        problems += unsorted + jumps
        samples[int(g)] = GpuSamples(
            line=lines[rows],
            t_ns=t_ns[rows],
            t_s=t_s,
            power_w=values["power_w"][rows],
            utilisation=values.get("utilisation", nan)[rows],
            sm_clock_mhz=values.get("sm_clock_mhz", nan)[rows],
            power_limit_w=values.get("power_limit_w", nan)[rows],
            max_limit_w=values.get("max_limit_w", nan)[rows],
            memory_used_mib=values.get("memory_used_mib", nan)[rows],
            segment=segment,
        )
        named = names[rows]
        if (named >= 0).any():
            gpu_names[int(g)] = name_of[int(named[named >= 0][0])]
    problems.sort(key=_line_order)
    if not any(len(s) >= 2 for s in samples.values()):
        problems.append(Problem("no-samples", "(file)", "no GPU has two usable samples"))
        raise InputError(str(path), capped(problems))
    return SmiLog(
        path=path,
        file=path.name,
        sha256=file_sha256(path),
        fields=frozenset(parser.columns.positions),
        samples=samples,
        median_step_s=medians,
        problems=capped(problems),
        gpu_names=gpu_names,
    )


def _line_order(p: Problem) -> tuple[int, str]:
    """Problems in line order (column-wide ones last)."""
    head = p.path.split(",")[0]
    return (int(head[5:]), p.path) if head.startswith("line ") and head[5:].isdigit() else (1 << 62, p.path)
