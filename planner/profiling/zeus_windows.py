"""Read Zeus profile windows (``GlobalPowerLimitOptimizer`` measurements) into exclusive points.

A file such as ``instances/sources/zeus/profile_data/V100+resnet50+gpu0,1.csv`` holds one row per window::

    start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy
    530144.32,__GlobalPowerLimitOptimizer_250,15.2787,3314.065,3350.7

``window_name`` is ``__GlobalPowerLimitOptimizer_<limit W>``; ``elapsed_time`` the window's length (s);
``gpuN_energy`` each GPU's energy over the window in **joules** (a 24 s A40 window holds 6,225 J: 259 W;
read as millijoules it would be 0.26 W). Zeus profiles a fixed number of training steps per window, which
the file does not say: the caller gives it (``steps_per_window``).

Each window of ``n`` GPU columns gives one ``exclusive`` point at ``setting = <limit>`` with
``energy_j = sum_i E_i`` (J), ``power_w = energy_j / elapsed / n`` (W per GPU),
``steps_per_s = steps_per_window / elapsed`` (whole job), ``duration_s = elapsed``, ``gpus = n``.

Any bad row (missing cells, a value that is not a finite number, ``elapsed_time <= 0``, a negative energy,
a window name not of that form, a mean power per GPU outside [:data:`MIN_PLAUSIBLE_W`,
:data:`MAX_PLAUSIBLE_W`] W, i.e. not joules, or a point ``profiles fit`` would refuse, such as the power limit
0 W of ``__GlobalPowerLimitOptimizer_0``: :func:`fit_refusals`) is an :class:`InputError` naming the line and
the column, all rows checked first. A header naming a column twice (``gpu0_energy`` twice would count that GPU
twice) is a ``duplicate-column`` error at line 1 (:mod:`planner.profiling.csv_header`).
The file name ``GPU+MODEL+gpuI,J.csv`` gives defaults for the GPU type and job type
(:func:`names_from_file`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.profiling.csv_header import refuse_duplicate_columns
from wattplan.planner.profiling.points import MeasuredPoint, Provenance, point_to_doc, points_from_docs

WINDOW_NAME = re.compile(r"^__GlobalPowerLimitOptimizer_(\d+)$")
ENERGY_COLUMN = re.compile(r"^gpu(\d+)_energy$")
REQUIRED = ("start_time", "window_name", "elapsed_time")
MIN_PLAUSIBLE_W = 5.0
"""Lowest mean power (W per GPU) a training window can have: below it the energies are not joules."""
MAX_PLAUSIBLE_W = 2000.0
"""Highest mean power (W per GPU) a GPU can draw: above it the energies are not joules."""
FIELD_COLUMNS = {"setting": "window_name", "steps_per_s": "elapsed_time", "duration_s": "elapsed_time"}
"""The column a point's field comes from (the others, power and energy, come from the ``gpuN_energy`` columns)."""


def names_from_file(path: Path) -> tuple[str | None, str | None]:
    """``(gpu type, job type)`` from a Zeus file name ``V100+resnet50+gpu0,1.csv``: ``("v100", "resnet50")``."""
    parts = Path(path).stem.split("+")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        return None, None
    return parts[0].lower(), parts[1]


def fit_refusals(point: MeasuredPoint, where: str, energy_column: str) -> list[Problem]:
    """What ``profiles fit`` would refuse in ``point`` (the row at ``where``), each named by its column.

    The check is fit's own: :func:`planner.profiling.points.points_from_docs`, which reads every
    measurements file and library ``fit`` is given, run on the point as it would be written.
    """
    try:
        points_from_docs([point_to_doc(point)], where, "point")
    except InputError as exc:
        problems = []
        for p in exc.problems:
            field = p.path.rsplit(".", 1)[-1]
            column = FIELD_COLUMNS.get(field, energy_column)
            message = f"{field} {p.message}: profiles fit would refuse this window"
            problems.append(Problem(p.code, f"{where}, {column}", message))
        return problems
    return []


def _finite(text: str | None) -> float | None:
    try:
        x = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def read_zeus_windows(
    path: Path, job_type: str, gpu_type: str, steps_per_window: float, setting_unit: str = "power_limit_w"
) -> list[MeasuredPoint]:
    """One ``exclusive`` point per window of a Zeus profile-window file (see the module docstring)."""
    path = Path(path)
    source = str(path)
    if not (math.isfinite(steps_per_window) and steps_per_window > 0):
        raise InputError(source, [Problem("bad-option", "steps_per_window", f"must be > 0, got {steps_per_window}")])
    reader = csv.reader(io.StringIO(read_text(path)))
    header = [c.strip() for c in next(reader, [])]
    refuse_duplicate_columns(header, source)
    energy_cols = [(k, c) for k, c in enumerate(header) if ENERGY_COLUMN.match(c)]
    missing = [c for c in REQUIRED if c not in header]
    if missing or not energy_cols:
        lacks = ", ".join(missing + ([] if energy_cols else ["gpuN_energy"]))
        raise InputError(source, [Problem("not-zeus-windows", "line 1", f"not a Zeus profile-window file: no {lacks}")])
    col = {c: header.index(c) for c in REQUIRED}
    sha = file_sha256(path)
    problems: list[Problem] = []
    points: list[MeasuredPoint] = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        where = f"line {line}"
        if len(row) != len(header):
            problems.append(Problem("truncated-row", where, f"{len(row)} cells, the header has {len(header)}"))
            continue
        name = row[col["window_name"]].strip()
        match = WINDOW_NAME.match(name)
        if match is None:
            message = f"window name {name!r} is not __GlobalPowerLimitOptimizer_<limit W>"
            problems.append(Problem("unknown-window", f"{where}, window_name", message))
        elapsed = _finite(row[col["elapsed_time"]])
        if elapsed is None or elapsed <= 0:
            message = f"must be a number > 0 (s), got {row[col['elapsed_time']]!r}"
            problems.append(Problem("bad-value", f"{where}, elapsed_time", message))
        start = row[col["start_time"]].strip()
        if _finite(start) is None:
            problems.append(Problem("bad-value", f"{where}, start_time", f"must be a number (s), got {start!r}"))
        energies = []
        for k, c in energy_cols:
            e = _finite(row[k])
            if e is None or e < 0:
                problems.append(Problem("bad-value", f"{where}, {c}", f"must be a number >= 0 (J), got {row[k]!r}"))
            energies.append(e)
        if match is None or elapsed is None or elapsed <= 0 or _finite(start) is None or None in energies:
            continue
        energy = math.fsum(e for e in energies if e is not None)
        power = energy / elapsed / len(energies)
        if not MIN_PLAUSIBLE_W <= power <= MAX_PLAUSIBLE_W:
            message = (
                f"{power:.4g} W per GPU is no GPU's power: the gpuN_energy values must be joules "
                f"(plausible {MIN_PLAUSIBLE_W:g}-{MAX_PLAUSIBLE_W:g} W)"
            )
            problems.append(Problem("implausible-power", f"{where}, {energy_cols[0][1]}", message))
            continue
        point = MeasuredPoint(
            kind="exclusive",
            gpu_type=gpu_type,
            provenance=Provenance(path.name, sha, f"{name} (line {line}, start_time {start})"),
            job_type=job_type,
            gpus=len(energies),
            setting=int(match.group(1)),
            setting_unit=setting_unit,
            steps_per_s=steps_per_window / elapsed,
            power_w=power,
            duration_s=elapsed,
            steps=float(steps_per_window),
            energy_j=energy,
        )
        if refused := fit_refusals(point, where, energy_cols[0][1]):
            problems += refused
            continue
        points.append(point)
    if problems:
        raise InputError(source, capped(problems))
    if not points:
        raise InputError(source, [Problem("no-windows", "(file)", "the file has no window rows")])
    return points
