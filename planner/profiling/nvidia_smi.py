"""Read nvidia-smi query logs into samples per GPU, every bad row reported with its line and column.

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
* no GPU left with two samples: :class:`InputError` (``no-samples``) with every problem found.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from planner.jsonio import read_text
from planner.problems import InputError, Problem, capped
from planner.profile_checks import MAX_GPU_POWER_W
from planner.profiling.points import file_sha256
from planner.profiling.units import (
    CLOCK_UNITS,
    MEMORY_UNITS,
    PERCENT_UNITS,
    POWER_UNITS,
    describe,
    split_unit,
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
"""Fields in W per GPU, each in (0, :data:`~planner.profile_checks.MAX_GPU_POWER_W`] after conversion."""
TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")
_EPOCH = datetime(1970, 1, 1)


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


@dataclass(frozen=True, slots=True)
class SmiLog:
    """A parsed log: ``samples[gpu]`` in time order, the ``fields`` its columns gave, the rows' problems."""

    path: Path
    file: str
    sha256: str
    fields: frozenset[str]
    samples: dict[int, list[SmiSample]]
    median_step_s: dict[int, float]
    problems: list[Problem]
    gpu_names: dict[int, str]
    """Each GPU's model name from the ``name`` column (its first kept sample's), where the log has one."""

    @property
    def gpus(self) -> list[int]:
        """The GPU indices with samples, ascending."""
        return sorted(self.samples)


def parse_timestamp(text: str) -> datetime | None:
    """nvidia-smi's ``2026/11/24 13:05:01.123`` (or ISO ``2026-11-24T13:05:01``) as a naive datetime; else None."""
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


def seconds(time: datetime) -> float:
    """A naive datetime as seconds since 1970-01-01 on the same clock (no time zone is applied)."""
    return (time - _EPOCH).total_seconds()


def from_seconds(t_s: float) -> datetime:
    """Inverse of :func:`seconds`."""
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
            problems.append(Problem("duplicate-column", "line 1", f"column {name!r} appears twice"))
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


def _is_marker(value: str) -> bool:
    """nvidia-smi's markers for a value it cannot give: ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``..."""
    v = value.strip()
    return (v.startswith("[") and v.endswith("]")) or v.upper() == "N/A"


def _number(value: str, field: str, header_unit: str | None) -> float:
    """``value`` in the field's unit (W, MHz, MiB, %): its own unit suffix if written, else the header's.

    ``"212350 mW"`` under ``power.draw [W]`` is 212.35 W, ``"1.53 GHz"`` is 1530 MHz. ValueError (with the
    reason) for an unknown unit, a value that is not a finite number, or out of the field's range: power
    (W per GPU) in (0, 5000], utilisation in [0, 100] %, the others >= 0.
    """
    number, own_unit = split_unit(value)
    unit = own_unit or header_unit
    factor = unit_factor(unit, UNITS[field])
    if factor is None:
        raise ValueError(f"unit {unit!r} is not {describe(UNITS[field])}")
    try:
        x = float(number) * factor
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(x):
        raise ValueError("not a finite number")
    if field in POWER_FIELDS and not 0.0 < x <= MAX_GPU_POWER_W:
        shown = f" (read as {unit})" if unit else ""
        raise ValueError(f"{x:.6g} W per GPU{shown} is outside (0, {MAX_GPU_POWER_W:g}] W: wrong unit?")
    if field == "utilisation" and not 0.0 <= x <= 100.0:
        raise ValueError("not a number in [0, 100] %")
    if x < 0:
        raise ValueError("negative")
    return x


@dataclass(frozen=True, slots=True)
class _Row:
    line: int
    gpu: int
    time: datetime
    power_w: float
    values: dict[str, float | None]
    gpu_name: str | None = None


def _gpu_name(fields: list[str], positions: dict[str, int]) -> str | None:
    """The row's ``name`` value, None without the column or for a marker such as ``[N/A]``."""
    if "gpu_name" not in positions:
        return None
    raw = fields[positions["gpu_name"]]
    return None if not raw or _is_marker(raw) else raw


def _parse_row(
    line_no: int, fields: list[str], positions: dict[str, int], units: dict[str, str | None]
) -> tuple[_Row | Problem, list[str]]:
    """The row or the Problem that skips it, and the optional fields whose value was a marker."""
    where = f"line {line_no}"
    for field in REQUIRED:
        if _is_marker(fields[positions[field]]):
            column = COLUMNS[field][0]
            return Problem("not-available", f"{where}, {column}", f"{fields[positions[field]]}: row skipped"), []
    raw_index = fields[positions["index"]]
    if not (raw_index.isascii() and raw_index.isdigit()):  # isdigit alone takes '²', which int() refuses
        return Problem("bad-value", f"{where}, index", f"GPU index {raw_index!r} is not an integer >= 0"), []
    time = parse_timestamp(fields[positions["timestamp"]])
    if time is None:
        message = f"timestamp {fields[positions['timestamp']]!r} is not YYYY/MM/DD HH:MM:SS[.fff]: row skipped"
        return Problem("bad-value", f"{where}, timestamp", message), []
    values: dict[str, float | None] = {}
    markers: list[str] = []
    for field in NUMERIC_FIELDS:
        if field not in positions:
            continue
        raw = fields[positions[field]]
        if _is_marker(raw):
            values[field] = None
            markers.append(field)
            continue
        try:
            x = _number(raw, field, units[field])
        except ValueError as exc:
            message = f"{raw!r}: {exc}; row skipped"
            return Problem("bad-value", f"{where}, {COLUMNS[field][0]}", message), []
        values[field] = x / 100.0 if field == "utilisation" else x
    power_w = values.pop("power_w")
    if power_w is None:  # a marker in a required column was caught above
        raise AssertionError(where)
    return _Row(line_no, int(raw_index), time, power_w, values, _gpu_name(fields, positions)), markers


def _segmented(rows: Sequence[_Row]) -> tuple[list[SmiSample], float, list[Problem]]:
    """One GPU's rows (file order, strictly increasing times) as samples with segments; the median step (s).

    A step ``dt_i = t_i - t_(i-1)`` longer than ``JUMP_FACTOR * median(dt)`` starts a new segment.
    """
    times = [seconds(r.time) for r in rows]
    steps = [b - a for a, b in zip(times, times[1:], strict=False)]
    median = statistics.median(steps) if steps else 0.0
    problems = []
    segment = 0
    out = []
    for k, (row, t) in enumerate(zip(rows, times, strict=True)):
        if k and steps[k - 1] > JUMP_FACTOR * median:
            segment += 1
            message = (
                f"{steps[k - 1]:.6g} s since the previous sample of GPU {row.gpu} (median step {median:.6g} s): "
                "the sampler stopped or the clock jumped; a new segment starts here"
            )
            problems.append(Problem("clock-jump", f"line {row.line}, timestamp", message))
        v = row.values
        out.append(
            SmiSample(
                line=row.line,
                time=row.time,
                t_s=t,
                power_w=row.power_w,
                utilisation=v.get("utilisation"),
                sm_clock_mhz=v.get("sm_clock_mhz"),
                power_limit_w=v.get("power_limit_w"),
                max_limit_w=v.get("max_limit_w"),
                memory_used_mib=v.get("memory_used_mib"),
                segment=segment,
            )
        )
    return out, median, problems


def read_nvidia_smi_log(path: Path) -> SmiLog:
    """Parse an nvidia-smi query log (see the module docstring for the columns and the rules for bad rows)."""
    path = Path(path)
    source = str(path)
    lines = read_text(path).splitlines()
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(source, [Problem("not-nvidia-smi", "(file)", "the file is empty")])
    positions, units = _header(lines[first], source)
    header_key = [c.strip().lower() for c in lines[first].split(",")]
    width = len(header_key)
    problems: list[Problem] = []
    markers: dict[str, list[int]] = defaultdict(list)
    by_gpu: dict[int, list[_Row]] = defaultdict(list)
    for k in range(first + 1, len(lines)):
        line_no, text = k + 1, lines[k]
        if not text.strip():
            continue
        fields = [f.strip() for f in text.split(",")]
        if [f.lower() for f in fields] == header_key:
            continue
        if len(fields) != width:
            message = f"{len(fields)} fields, the header has {width} (a cut-off line?): row skipped"
            problems.append(Problem("truncated-row", f"line {line_no}", message))
            continue
        parsed, row_markers = _parse_row(line_no, fields, positions, units)
        if isinstance(parsed, Problem):
            problems.append(parsed)
            continue
        for field in row_markers:
            markers[field].append(line_no)
        kept = by_gpu[parsed.gpu]
        if kept and parsed.time <= kept[-1].time:
            message = (
                f"{fields[positions['timestamp']]} is not after GPU {parsed.gpu}'s previous sample "
                f"{format_time(kept[-1].time)} (line {kept[-1].line}): unsorted or the clock went back; row skipped"
            )
            problems.append(Problem("unsorted-timestamp", f"line {line_no}, timestamp", message))
            continue
        kept.append(parsed)
    for field, at in markers.items():
        message = f"no value on {len(at)} row(s), first line {at[0]}; treated as unknown there"
        problems.append(Problem("not-available", f"column {COLUMNS[field][0]}", message))
    samples: dict[int, list[SmiSample]] = {}
    medians: dict[int, float] = {}
    for gpu in sorted(by_gpu):
        samples[gpu], medians[gpu], jumps = _segmented(by_gpu[gpu])
        problems += jumps
    problems.sort(key=_line_order)
    if not any(len(s) >= 2 for s in samples.values()):
        problems.append(Problem("no-samples", "(file)", "no GPU has two usable samples"))
        raise InputError(source, capped(problems))
    return SmiLog(
        path=path,
        file=path.name,
        sha256=file_sha256(path),
        fields=frozenset(positions),
        samples=samples,
        median_step_s=medians,
        problems=capped(problems),
        gpu_names={g: name for g, rows in by_gpu.items() if (name := _first_name(rows)) is not None},
    )


def _first_name(rows: Sequence[_Row]) -> str | None:
    """The first model name among one GPU's kept rows."""
    return next((r.gpu_name for r in rows if r.gpu_name is not None), None)


def _line_order(p: Problem) -> tuple[int, str]:
    """Problems in line order (column-wide ones last)."""
    head = p.path.split(",")[0]
    return (int(head[5:]), p.path) if head.startswith("line ") and head[5:].isdigit() else (1 << 62, p.path)
