"""Read a Zeus power-limit summary (``summary_power_<gpu>.csv``) into exclusive points and the top limit.

Rows ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``: per workload, batch
size ``b``, optimizer and power limit ``s`` (W), the time of one epoch ``t`` (s) and the mean GPU power
``P`` (W), on one GPU. Rows that differ only by optimizer are averaged exactly as the shipped library does
(:func:`planner.profile_library.build.zeus_curves`). Each (dataset, network, ``b``, ``s``) gives one ``exclusive``
point of job type ``"<network> (<dataset>, batch size <b>)"`` on 1 GPU at setting ``s`` with
``power_w = P``, ``duration_s = t``, ``steps = S``, ``steps_per_s = S / t`` and ``energy_j = P * t``, where
the steps per epoch are ``S = ceil(N / b)`` for a training set of ``N`` samples (:data:`DATASET_SIZES`;
``steps_per_epoch`` overrides ``S`` per (dataset, network, ``b``), ``dataset_sizes`` overrides ``N``).
The file's highest ``power_limit`` is also a ``top_limit`` point (W).

Units: Zeus writes W and s with no unit. A header ``average_power [mW]`` (or ``(mW)``) or a value suffix
(``88934 mW``) is applied (power in W, mW or kW; time in s, ms, min or h; :mod:`planner.profiling.units`);
power per GPU above 5,000 W after conversion is refused as a unit error (a mW summary read as W).

Training-set sizes ``N`` (samples per epoch), with their sources:

* ``imagenet``: 1,281,167 images (ILSVRC-2012 training set; Russakovsky et al., IJCV 2015);
* ``cifar100``: 50,000 images (Krizhevsky 2009, the CIFAR-100 training split);
* ``squad``: 87,599 question-answer pairs (SQuAD v1.1 ``train-v1.1.json``; Rajpurkar et al., EMNLP 2016).
  BERT's windowing (384 tokens, stride 128) makes a few more features; the questions are counted;
* ``movielens-1m``: NCF (He et al., WWW 2017) trains on the 1,000,209 ratings less each of the 6,040 users'
  latest one (held out for testing), 994,169 positives, each drawn with 4 sampled negatives per epoch:
  ``994,169 * 5 = 4,970,845`` instances;
* ``librispeech``: 281,241 utterances (the 960 h training set: train-clean-100 28,539, train-clean-360
  104,014, train-other-500 148,688; Panayotov et al., ICASSP 2015);
* ``sentiment140``: 1,600,000 tweets (the Sentiment140 training set; Go et al., 2009).

Zeus does not publish its loaders, so these are the datasets' standard training sets: the absolute
steps/s carries that assumption, ratios across limits (``X(s)/X(s_max)``) do not. A bad row (missing
cells, a value that is not a positive finite number, an unknown dataset without an override) is an
:class:`InputError` naming the line and column; a header naming a column twice (``average_power`` and
``average_power [mW]``: which one is meant?) is a ``duplicate-column`` error at line 1.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.contracts.profile_checks import MAX_GPU_POWER_W
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.profile_library.build import ZeusRow, zeus_curves
from wattplan.planner.profiling.csv_header import refuse_duplicate_columns
from wattplan.planner.profiling.points import MeasuredPoint, Provenance
from wattplan.planner.profiling.units import POWER_UNITS, TIME_UNITS, describe, split_header, split_unit, unit_factor

COLUMNS = ("dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power")
DATASET_SIZES: Mapping[str, int] = {
    "imagenet": 1_281_167,
    "cifar100": 50_000,
    "squad": 87_599,
    "movielens-1m": 994_169 * 5,
    "librispeech": 281_241,
    "sentiment140": 1_600_000,
}
Workload = tuple[str, str, int]  # (dataset, network, batch size)
NUMBER_UNITS: Mapping[str, Mapping[str, float]] = {
    "batch_size": {},
    "power_limit": POWER_UNITS,
    "time_per_epoch": TIME_UNITS,
    "average_power": POWER_UNITS,
}
"""The units each numeric column may carry (in its header, ``average_power [mW]``, or its values)."""
MIN_EPOCH_S, MAX_EPOCH_S = 1e-3, 1e8
"""Range of ``time_per_epoch`` (s, after conversion): a millisecond to three years; outside it the rate
(steps / s) or the energy (W x s) of a point is not a finite number worth writing."""
POWER_COLUMNS = ("power_limit", "average_power")
"""Columns in W per GPU, each in (0, :data:`~planner.contracts.profile_checks.MAX_GPU_POWER_W`] after conversion."""


def job_type_name(dataset: str, network: str, batch_size: int) -> str:
    """The job type of a Zeus workload: ``"resnet50 (imagenet, batch size 256)"``."""
    return f"{network} ({dataset}, batch size {batch_size})"


def gpu_type_from_file(path: Path) -> str | None:
    """``summary_power_v100.csv`` -> ``"v100"``; None for another name."""
    stem = Path(path).stem
    return stem.removeprefix("summary_power_").lower() if stem.startswith("summary_power_") else None


def _cell_number(text: str, column: str, header_unit: str | None) -> tuple[float, str | None]:
    """A numeric cell in the column's unit (W, s) and None; or NaN and why it is refused.

    The cell's own unit suffix wins over the header's. ``batch_size`` and ``power_limit`` must be positive
    integers (``power_limit`` after conversion to W), the others positive finite numbers; power (W per GPU)
    at most :data:`~planner.contracts.profile_checks.MAX_GPU_POWER_W`, ``time_per_epoch`` (s) in
    [:data:`MIN_EPOCH_S`, :data:`MAX_EPOCH_S`].
    """
    number, own = split_unit(text)
    unit = own or header_unit
    factor = unit_factor(unit, NUMBER_UNITS[column])
    if factor is None:
        return math.nan, f"unit {unit!r} is not {describe(NUMBER_UNITS[column]) or 'allowed'}"
    try:
        x = float(number) * factor
    except ValueError:
        x = math.nan
    integral = column in ("batch_size", "power_limit")
    if not math.isfinite(x) or x <= 0 or (integral and not x.is_integer()):
        return math.nan, f"must be {'a positive integer' if integral else 'a positive number'}"
    if column == "time_per_epoch" and not MIN_EPOCH_S <= x <= MAX_EPOCH_S:  # 1e308 s made an energy of inf J
        return math.nan, f"{x:.6g} s per epoch is outside [{MIN_EPOCH_S:g}, {MAX_EPOCH_S:g}] s: wrong unit?"
    if column in POWER_COLUMNS and x > MAX_GPU_POWER_W:
        shown = f" (read as {unit})" if unit else " (read as W)"
        return math.nan, f"{x:.6g} W per GPU{shown} is above {MAX_GPU_POWER_W:g} W: wrong unit?"
    return x, None


def _rows(path: Path) -> tuple[list[ZeusRow], list[int]]:
    """The parsed rows and their line numbers; ``InputError`` with every bad cell."""
    source = str(path)
    reader = csv.reader(io.StringIO(read_text(path)))
    cells = [split_header(c) for c in next(reader, [])]
    header = [name for name, _ in cells]
    refuse_duplicate_columns(header, source)
    if any(c not in header for c in COLUMNS):
        missing = ", ".join(c for c in COLUMNS if c not in header)
        raise InputError(source, [Problem("not-zeus-summary", "line 1", f"not a Zeus power summary: no {missing}")])
    col = {c: header.index(c) for c in COLUMNS}
    units = {c: cells[col[c]][1] for c in NUMBER_UNITS}
    bad_units = [
        Problem("unknown-unit", f"line 1, {c}", f"unit [{u}] is not {describe(NUMBER_UNITS[c]) or 'allowed'}")
        for c, u in units.items()
        if u is not None and unit_factor(u, NUMBER_UNITS[c]) is None
    ]
    if bad_units:
        raise InputError(source, bad_units)
    rows: list[ZeusRow] = []
    lines: list[int] = []
    problems: list[Problem] = []
    for raw in reader:
        where = f"line {reader.line_num}"
        if not any(cell.strip() for cell in raw):
            continue
        if len(raw) != len(header):
            problems.append(Problem("truncated-row", where, f"{len(raw)} cells, the header has {len(header)}"))
            continue
        cell = {c: raw[col[c]].strip() for c in COLUMNS}
        bad = [c for c in ("dataset", "network") if not cell[c]]
        problems += [Problem("bad-value", f"{where}, {c}", "must be non-empty, got ''") for c in bad]
        numbers: dict[str, float] = {}
        for c in NUMBER_UNITS:
            numbers[c], why = _cell_number(cell[c], c, units[c])
            if why:
                problems.append(Problem("bad-value", f"{where}, {c}", f"{why}, got {cell[c]!r}"))
                bad.append(c)
        if bad:
            continue
        rows.append(
            (
                cell["dataset"],
                cell["network"],
                int(numbers["batch_size"]),
                int(numbers["power_limit"]),
                numbers["time_per_epoch"],
                numbers["average_power"],
            )
        )
        lines.append(reader.line_num)
    if problems:
        raise InputError(source, capped(problems))
    if not rows:
        raise InputError(source, [Problem("no-rows", "(file)", "the summary has no rows")])
    return rows, lines


def read_zeus_power_summary(
    path: Path,
    gpu_type: str,
    steps_per_epoch: Mapping[Workload, float] | None = None,
    dataset_sizes: Mapping[str, int] = DATASET_SIZES,
) -> list[MeasuredPoint]:
    """One ``exclusive`` point per (workload, batch size, limit) and a ``top_limit`` point (module docstring)."""
    path = Path(path)
    rows, line_numbers = _rows(path)
    overrides = steps_per_epoch or {}
    unknown = sorted({r[0] for r in rows if r[0] not in dataset_sizes and r[:3] not in overrides})
    if unknown:
        first = {d: line_numbers[next(k for k, r in enumerate(rows) if r[0] == d)] for d in unknown}
        message = "no training-set size for {d}: give its steps per epoch (steps_per_epoch) or its size"
        problems = [Problem("unknown-dataset", f"line {first[d]}, dataset", message.format(d=d)) for d in unknown]
        raise InputError(str(path), problems)
    lines: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
    for r, line in zip(rows, line_numbers, strict=True):
        lines[r[:4]].append(line)
    curves, _ = zeus_curves(rows)
    sha = file_sha256(path)
    points = []
    for (dataset, network, batch), curve in curves.items():
        steps = overrides.get((dataset, network, batch)) or math.ceil(dataset_sizes[dataset] / batch)
        for limit, (t, p) in curve.items():
            at = lines[(dataset, network, batch, limit)]
            window = (
                f"{dataset},{network},batch_size={batch},power_limit={limit} "
                f"(lines {','.join(map(str, at))}; {len(at)} optimizer row(s) averaged)"
            )
            points.append(
                MeasuredPoint(
                    kind="exclusive",
                    gpu_type=gpu_type,
                    provenance=Provenance(path.name, sha, window),
                    job_type=job_type_name(dataset, network, batch),
                    gpus=1,
                    setting=limit,
                    setting_unit="power_limit_w",
                    steps_per_s=steps / t,
                    power_w=p,
                    duration_s=t,
                    steps=float(steps),
                    energy_j=p * t,
                )
            )
    top = max(r[3] for r in rows)
    top_lines = [line for r, line in zip(rows, line_numbers, strict=True) if r[3] == top]
    window = f"highest power_limit of {len(rows)} rows (first at line {top_lines[0]})"
    points.append(
        MeasuredPoint(
            kind="top_limit", gpu_type=gpu_type, provenance=Provenance(path.name, sha, window), power_w=float(top)
        )
    )
    return points
