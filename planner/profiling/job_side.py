"""The job side of a measurement: which job ran on which GPUs, when, and how many steps it made.

A power log says what the GPUs drew, never how far the job got; the user says that in a small JSON file::

    {"gpu_type": "v100",
     "runs": [{"job_type": "VGG-16 (batch size 128)", "gpus": [0, 1, 2, 3],
               "start": "2026/11/24 13:05:00", "end": "2026/11/24 14:31:20",
               "steps": 10009, "setting": 250, "partner_type": null,
               "held_idle": [4], "log": "node3.csv"}]}

Per run:

* ``job_type`` (text) and ``gpus`` (distinct GPU indices as the log numbers them, at least one);
* ``start``/``end``: the window, in the log's own clock and format (``2026/11/24 13:05:00[.123]`` or ISO
  ``2026-11-24T13:05:00``, no time zone); ``null`` (or left out) for the log's first/last sample;
  ``end`` after ``start``;
* ``steps`` (training steps the job made in the window, > 0), or ``epochs`` and ``steps_per_epoch``
  (``steps = epochs * steps_per_epoch``), never both;
* ``setting``: the power limit in W (positive integer); ``null`` takes the log's ``power.limit``;
* ``partner_type``: the job type sharing these GPUs (then the run gives a ``pair`` point), else ``null``;
* ``held_idle``: GPUs the job holds but does not compute on (disjoint from ``gpus``), default none;
* ``log``: the file name of the log the run is in; without it the run is looked for in every log the job side
  describes (one job side describes every log given; several are paired with the logs by order, and a run's
  ``log`` must then name its side's log: :func:`planner.profiling.ingest.pair_job_sides`).

Every field is checked; each problem names its path (``runs[2].steps``). Unknown keys are problems too
(a misspelt ``step`` must not pass silently).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.profiling.smi_frame import parse_timestamp

RUN_KEYS = frozenset(
    {"job_type", "gpus", "start", "end", "steps", "epochs", "steps_per_epoch", "setting", "partner_type"}
    | {"held_idle", "log"}
)
SIDE_KEYS = frozenset({"gpu_type", "runs", "schema", "notes"})


@dataclass(frozen=True, slots=True)
class JobRun:
    """One run of one job in a log: see the module docstring for each field's meaning and unit."""

    job_type: str
    gpus: tuple[int, ...]
    steps: float
    start: datetime | None = None
    end: datetime | None = None
    setting: int | None = None
    partner_type: str | None = None
    held_idle: tuple[int, ...] = ()
    log: str | None = None


@dataclass(frozen=True, slots=True)
class JobSide:
    """The GPU type the logs were taken on and the runs in them."""

    gpu_type: str
    runs: tuple[JobRun, ...]


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _indices(value: Any, path: str, problems: list[Problem], allow_empty: bool) -> tuple[int, ...]:
    """A list of distinct GPU indices (integers >= 0)."""
    ok = isinstance(value, list) and all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in value)
    if not ok or len(set(value)) != len(value) or (not value and not allow_empty):
        what = "a list of distinct GPU indices (integers >= 0)" + ("" if allow_empty else ", at least one")
        problems.append(Problem("bad-job-side", path, f"must be {what}, got {value!r}"))
        return ()
    return tuple(value)


def _time(value: Any, path: str, problems: list[Problem]) -> datetime | None:
    if value is None:
        return None
    parsed = parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        message = f"must be a time like 2026/11/24 13:05:00 (the log's clock, no time zone) or null, got {value!r}"
        problems.append(Problem("bad-job-side", path, message))
    return parsed


def _text(value: Any, path: str, problems: list[Problem], optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(Problem("bad-job-side", path, f"must be a non-empty string, got {value!r}"))
        return None
    return value


def _steps(raw: dict[str, Any], path: str, problems: list[Problem]) -> float:
    """``steps``, or ``epochs * steps_per_epoch`` (a key set to null counts as left out)."""
    if raw.get("steps") is not None:
        if raw.get("epochs") is not None or raw.get("steps_per_epoch") is not None:
            message = "give steps or epochs and steps_per_epoch, not both"
            problems.append(Problem("bad-job-side", f"{path}.steps", message))
        elif not _positive(raw["steps"]):
            problems.append(Problem("bad-job-side", f"{path}.steps", f"must be a number > 0, got {raw['steps']!r}"))
        else:
            return float(raw["steps"])
        return 0.0
    bad = [k for k in ("epochs", "steps_per_epoch") if not _positive(raw.get(k))]
    for k in bad:
        message = f"must be a number > 0, got {raw.get(k)!r} (or give steps instead)"
        problems.append(Problem("bad-job-side", f"{path}.{k}", message))
    return 0.0 if bad else float(raw["epochs"]) * float(raw["steps_per_epoch"])


def _run(raw: Any, path: str, problems: list[Problem]) -> JobRun | None:
    """One run, or None with its problems added."""
    if not isinstance(raw, dict):
        problems.append(Problem("bad-job-side", path, "a run must be an object"))
        return None
    before = len(problems)
    for key in sorted(set(raw) - RUN_KEYS):
        problems.append(Problem("bad-job-side", f"{path}.{key}", f"unknown key (known: {', '.join(sorted(RUN_KEYS))})"))
    job_type = _text(raw.get("job_type"), f"{path}.job_type", problems)
    gpus = _indices(raw.get("gpus"), f"{path}.gpus", problems, allow_empty=False)
    held = _indices(raw.get("held_idle", []), f"{path}.held_idle", problems, allow_empty=True)
    if set(gpus) & set(held):
        problems.append(Problem("bad-job-side", f"{path}.held_idle", "a GPU cannot be both computing and held idle"))
    start = _time(raw.get("start"), f"{path}.start", problems)
    end = _time(raw.get("end"), f"{path}.end", problems)
    if start is not None and end is not None and end <= start:
        problems.append(Problem("bad-job-side", f"{path}.end", f"must be after start ({raw.get('start')})"))
    steps = _steps(raw, path, problems)
    setting = raw.get("setting")
    if setting is not None and (not isinstance(setting, int) or isinstance(setting, bool) or setting <= 0):
        message = f"must be a power limit in W (a positive integer) or null, got {setting!r}"
        problems.append(Problem("bad-job-side", f"{path}.setting", message))
    partner = _text(raw.get("partner_type"), f"{path}.partner_type", problems, optional=True)
    log = _text(raw.get("log"), f"{path}.log", problems, optional=True)
    if len(problems) > before or job_type is None:
        return None
    return JobRun(job_type, gpus, steps, start, end, setting, partner, held, log)


def job_side_from_doc(doc: Any, source: str) -> JobSide:
    """Parse a job-side document; ``InputError`` with every bad field by its path."""
    if not isinstance(doc, dict):
        raise InputError(source, [Problem("bad-job-side", "(root)", "must be an object with gpu_type and runs")])
    problems: list[Problem] = []
    for key in sorted(set(doc) - SIDE_KEYS):
        problems.append(Problem("bad-job-side", key, "unknown key (known: gpu_type, runs, notes)"))
    gpu_type = _text(doc.get("gpu_type"), "gpu_type", problems)
    raw_runs = doc.get("runs")
    runs: list[JobRun] = []
    if not isinstance(raw_runs, list):
        problems.append(Problem("bad-job-side", "runs", "must be a list of runs"))
    else:
        for k, raw in enumerate(raw_runs):
            if (run := _run(raw, f"runs[{k}]", problems)) is not None:
                runs.append(run)
    if problems or gpu_type is None:
        raise InputError(source, problems)
    return JobSide(gpu_type.lower(), tuple(runs))


def read_job_side(path: Path) -> JobSide:
    """Read and check a job-side JSON file (see the module docstring)."""
    return job_side_from_doc(read_json(Path(path)), str(path))


def runs_for_log(side: JobSide | None, log_name: str) -> Sequence[JobRun]:
    """The runs of ``side`` that may be in the log named ``log_name``: those naming it and those naming none."""
    if side is None:
        return ()
    return [r for r in side.runs if r.log is None or r.log == log_name]
