"""``wattplan profiles ingest``: measurement files -> points, merged into a library or a measurements file.

Formats (``auto`` decides by the header of each file):

* ``nvidia-smi``: a query log (:mod:`planner.profiling.nvidia_smi`) with the job side
  (:mod:`planner.profiling.job_side`) naming the runs; points by :mod:`planner.profiling.smi_points`.
  Job sides and logs (:func:`pair_job_sides`): one job side describes every log given; several are paired
  by order, the k-th job side with the k-th log (the counts must match, and a run naming its ``log`` must
  name its paired one). A log's GPU type (:func:`log_gpu_type`) is ``gpu_type`` if given, else the one its
  ``name`` column names (:mod:`planner.profiling.gpu_models`; it must agree with the job side's), else the
  job side's. Without a job side the log gives idle and top-limit points only, and the file's notes say so;
* ``zeus-windows``: a Zeus profile-window file (:mod:`planner.profiling.zeus_windows`); ``steps_per_window``
  is required, the GPU and job type default to the file name's (``V100+resnet50+gpu0.csv``: ``v100``,
  ``resnet50``);
* ``zeus-summary``: a Zeus power summary (:mod:`planner.profiling.zeus_summary`); the GPU type defaults to
  the file name's (``summary_power_v100.csv``: ``v100``).

Merging: the base is ``library`` (a ``wattplan.profiles/1`` library, by default (None) the shipped one, or a
``wattplan.measurements/1`` file; ``"none"`` for no base). The new points join the base's measurements unless
one with the same id is there (:func:`planner.profiling.points.merge_points`: the id hashes the file's
bytes, the window and the configuration, so ingesting the same file twice adds nothing). The result is
written to ``out`` atomically: a library (the base with its ``measurements`` replaced, everything else
kept) when the base is one and ``measurements_only`` is false, else a measurements file. The base file is
only overwritten when ``out`` names it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.jsonio import read_json, read_text
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.files.resources import profile_library
from wattplan.planner.profile_library.build import write_profile_library
from wattplan.planner.profile_library.library import library_from_doc
from wattplan.planner.profiling import zeus_summary, zeus_windows
from wattplan.planner.profiling.gpu_models import gpu_type_from_name, known_models
from wattplan.planner.profiling.job_side import JobSide, read_job_side, runs_for_log
from wattplan.planner.profiling.nvidia_smi import SmiLog, read_nvidia_smi_log
from wattplan.planner.profiling.points import (
    MEASUREMENTS_SCHEMA,
    MeasuredPoint,
    merge_points,
    point_to_doc,
    points_from_docs,
    write_points,
)
from wattplan.planner.profiling.smi_points import IngestResult, points_from_smi

__all__ = [
    "FORMATS",
    "FileIngest",
    "IngestReport",
    "IngestResult",
    "NoBase",
    "PairedSide",
    "detect_format",
    "ingest",
    "ingest_files",
    "log_gpu_type",
    "pair_job_sides",
    "refuse_unfittable",
]

FORMATS = ("auto", "nvidia-smi", "zeus-windows", "zeus-summary")
Format = Literal["auto", "nvidia-smi", "zeus-windows", "zeus-summary"]
NO_JOB_SIDE = (
    "no job side: throughput, steps and pair rates not learned; only idle and top-limit points "
    "(give --job-side to learn the runs)"
)
NO_RUNS = "the job side names no run in this log: throughput, steps and pair rates not learned from it"


@dataclass(frozen=True, slots=True)
class FileIngest:
    """What one file gave: its format and SHA-256, the points, the problems reported (rows or runs skipped)."""

    path: Path
    format: str
    sha256: str
    points: list[MeasuredPoint]
    skipped: list[Problem]
    notes: tuple[str, ...] = ()
    """What people should know about the file: where its GPU type and job side came from, what it could not give."""


@dataclass(frozen=True, slots=True)
class PairedSide:
    """The job side of one nvidia-smi log: ``side``, the file it was read from, how it was matched to the log."""

    side: JobSide
    source: str
    how: str


@dataclass(frozen=True, slots=True)
class IngestReport:
    """An ingest: per file what it gave and how many of its points were new; the file written."""

    files: list[FileIngest]
    added: list[int]
    out: Path
    out_kind: Literal["library", "measurements"]
    total_points: int


def detect_format(path: Path) -> str:
    """``nvidia-smi``, ``zeus-windows`` or ``zeus-summary`` by the first line; ``InputError`` for none of them."""
    text = read_text(path)
    first = next((line for line in text.splitlines() if line.strip()), "")
    names = {c.strip().split(" [")[0].lower() for c in first.split(",")}
    if {"index", "timestamp"} <= names and names & {"power.draw", "power.draw.average", "power.draw.instant"}:
        return "nvidia-smi"
    if {"window_name", "elapsed_time"} <= names:
        return "zeus-windows"
    if set(zeus_summary.COLUMNS) <= names:
        return "zeus-summary"
    message = (
        "not a known measurement file: expected an nvidia-smi query log (index, timestamp, power.draw), "
        "Zeus profile windows (window_name, elapsed_time) or a Zeus power summary (power_limit, ...)"
    )
    raise InputError(str(path), [Problem("unknown-format", "line 1", message)])


def _gpu_type(path: Path, given: str | None, from_file: str | None, what: str) -> str:
    gpu_type = given or from_file
    if not gpu_type:
        message = f"no GPU type: give --gpu-type (or a job side; the file name of {what} does not say it)"
        raise InputError(str(path), [Problem("no-gpu-type", "--gpu-type", message)])
    return gpu_type.lower()


def _smi(path: Path, paired: PairedSide | None, gpu_type: str | None) -> tuple[IngestResult, list[str]]:
    """The points of one nvidia-smi log and the notes on it (GPU type, job side, what it could not give)."""
    side = paired.side if paired else None
    if side is not None and gpu_type and side.gpu_type != gpu_type.lower():
        message = f"--gpu-type {gpu_type} contradicts the job side's gpu_type {side.gpu_type}"
        raise InputError(str(path), [Problem("gpu-type-mismatch", "--gpu-type", message)])
    log = read_nvidia_smi_log(path)
    g, whence = log_gpu_type(log, paired, gpu_type)
    runs = runs_for_log(side, path.name)
    notes = [f"GPU type {g} {whence}"]
    if paired is not None:
        notes.append(f"job side {paired.source} ({paired.how})")
    if side is None or not runs:
        notes.append(NO_JOB_SIDE if side is None else NO_RUNS)
    return points_from_smi(log, runs, g), notes


def log_gpu_type(log: SmiLog, paired: PairedSide | None, given: str | None) -> tuple[str, str]:
    """The GPU type of ``log`` and where it came from: ``given``, else the ``name`` column, else the job side."""
    if given:
        return given.lower(), "from --gpu-type"
    side = paired.side if paired else None
    names = sorted(set(log.gpu_names.values()))
    unknown = [n for n in names if gpu_type_from_name(n) is None]
    if not names or unknown:
        if side is not None:
            why = f" (nvidia-smi's name {unknown[0]!r} is no known model)" if unknown else ""
            return side.gpu_type, f"from the job side{why}"
        if unknown:
            message = f"nvidia-smi names the GPUs {unknown[0]!r}, not a known model ({known_models()}): give --gpu-type"
            raise InputError(str(log.path), [Problem("unknown-gpu-model", "--gpu-type", message)])
        message = "no GPU type: give --gpu-type (or a job side; the log has no name column to tell it)"
        raise InputError(str(log.path), [Problem("no-gpu-type", "--gpu-type", message)])
    types = sorted({str(gpu_type_from_name(n)) for n in names})
    if len(types) > 1:
        message = f"the log holds several GPU models ({', '.join(names)}): ingest one log per model or give --gpu-type"
        raise InputError(str(log.path), [Problem("mixed-gpu-models", "column name", message)])
    if side is not None and paired is not None and side.gpu_type != types[0]:
        message = (
            f"the job side {paired.source} ({paired.how}) says {side.gpu_type}, but nvidia-smi names the GPUs "
            f"{names[0]!r} ({types[0]}): is it paired with the right log? (--gpu-type overrides the name)"
        )
        raise InputError(str(log.path), [Problem("gpu-type-mismatch", "column name", message)])
    return types[0], f"from nvidia-smi's name {names[0]!r}"


def pair_job_sides(logs: Sequence[Path], sides: Sequence[tuple[str, JobSide]]) -> list[PairedSide | None]:
    """The job side of each nvidia-smi log in ``logs`` (None: none), from ``(source, side)`` pairs (module docstring).

    Raises :class:`InputError` (source ``--job-side``) when the sides cannot be paired: sides without logs,
    several sides for another number of logs, or a run whose ``log`` names another log than its side's.
    """
    if not sides:
        return [None] * len(logs)
    if not logs or (len(sides) > 1 and len(sides) != len(logs)):
        message = (
            f"{len(sides)} job-side file(s) for {len(logs)} nvidia-smi log(s): one job side describes every log, "
            "several are paired by order (the k-th --job-side with the k-th log), so give one per log"
        )
        raise InputError("--job-side", [Problem("job-side-count", "--job-side", message)])
    if len(sides) == 1:
        (source, side), names = sides[0], {log.name for log in logs}
        paired: list[PairedSide | None] = [PairedSide(side, source, "the only job side: every log's") for _ in logs]
        problems = _runs_naming_other_logs(source, side, names, "not among the nvidia-smi logs given")
    else:
        paired = [
            PairedSide(side, source, f"by order: job side {k + 1} with log {k + 1}")
            for k, (source, side) in enumerate(sides)
        ]
        problems = [
            p
            for log, (source, side) in zip(logs, sides, strict=True)
            for p in _runs_naming_other_logs(source, side, {log.name}, f"but this job side is paired with {log.name}")
        ]
    if problems:
        raise InputError("--job-side", problems)
    return paired


def _runs_naming_other_logs(source: str, side: JobSide, names: set[str], why: str) -> list[Problem]:
    """A problem for each run of ``side`` whose ``log`` is not in ``names`` (``why`` ends the message)."""
    return [
        Problem("job-side-log-mismatch", f"{source}: runs[{k}].log", f"names {run.log!r}, {why}")
        for k, run in enumerate(side.runs)
        if run.log is not None and run.log not in names
    ]


def ingest_file(
    path: Path,
    fmt: str = "auto",
    job_side: PairedSide | None = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
) -> FileIngest:
    """The points of one file in format ``fmt`` (``auto``: :func:`detect_format`); ``job_side``: a log's."""
    path = Path(path)
    kind = detect_format(path) if fmt == "auto" else fmt
    notes: list[str] = []
    if kind == "nvidia-smi":
        result, notes = _smi(path, job_side, gpu_type)
    elif kind == "zeus-windows":
        g_file, t_file = zeus_windows.names_from_file(path)
        if steps_per_window is None:
            message = "Zeus windows do not record their steps: give --steps-per-window"
            raise InputError(str(path), [Problem("no-steps", "--steps-per-window", message)])
        if not (job_type or t_file):
            raise InputError(str(path), [Problem("no-job-type", "--job-type", "give --job-type")])
        g = _gpu_type(path, gpu_type, g_file, "these windows")
        points = zeus_windows.read_zeus_windows(path, job_type or str(t_file), g, steps_per_window)
        result = IngestResult(points)
    elif kind == "zeus-summary":
        g = _gpu_type(path, gpu_type, zeus_summary.gpu_type_from_file(path), "this summary")
        result = IngestResult(zeus_summary.read_zeus_power_summary(path, g))
    else:
        raise InputError(str(path), [Problem("bad-option", "--format", f"unknown format {fmt!r}")])
    refuse_unfittable(path, result.points)
    return FileIngest(path, kind, file_sha256(path), result.points, result.skipped, tuple(notes))


def refuse_unfittable(path: Path, points: Sequence[MeasuredPoint]) -> None:
    """Raise :class:`InputError` (``path``) for points ``profiles fit`` would refuse to read, each named by its window.

    The check is the one fit reads every measurements file with (:func:`planner.profiling.points.points_from_docs`),
    so ingest never writes a point fit then refuses (a reader's own row checks name the column first).
    """
    try:
        points_from_docs([point_to_doc(p) for p in points], str(path))
    except InputError as exc:
        problems = []
        for q in exc.problems:
            index, _, field = q.path.removeprefix("points[").partition("].")
            window = points[int(index)].provenance.window if index.isdigit() else q.path
            problems.append(Problem(q.code, f"{window}: {field or q.path}", q.message))
        raise InputError(str(path), problems) from None


JobSides = Sequence[JobSide | Path] | JobSide | Path | None
"""The job sides of ``ingest_files``: files or parsed ones, one or several, or none."""


def _read_sides(job_sides: JobSides) -> list[tuple[str, JobSide]]:
    """Each job side with the name of its source; bad files' problems are raised together."""
    if job_sides is None:
        return []
    items = [job_sides] if isinstance(job_sides, JobSide | Path) else list(job_sides)
    sides: list[tuple[str, JobSide]] = []
    errors: list[InputError] = []
    for k, item in enumerate(items):
        try:
            sides.append((str(item), read_job_side(item)) if isinstance(item, Path) else (f"job side {k + 1}", item))
        except InputError as exc:
            errors.append(exc)
    _raise_together(errors, f"{len(errors)} of {len(items)} job sides")
    return sides


def _raise_together(errors: Sequence[InputError], source: str) -> None:
    """Raise the one error, or every error's problems as one ``InputError`` (paths prefixed by their source)."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputError(
            source, [Problem(p.code, f"{e.source}: {p.path}", p.message) for e in errors for p in e.problems]
        )


def _formats(paths: Sequence[Path], fmt: str, errors: list[InputError]) -> list[str | None]:
    """Each file's format (``fmt``, or detected when ``auto``); None, with the error kept, when unknown."""
    kinds: list[str | None] = []
    for path in paths:
        try:
            kinds.append(detect_format(Path(path)) if fmt == "auto" else fmt)
        except InputError as exc:
            errors.append(exc)
            kinds.append(None)
    return kinds


def ingest_files(
    paths: Sequence[Path],
    fmt: str = "auto",
    job_side: JobSides = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
) -> list[FileIngest]:
    """Every file's points; the problems of every bad file are raised together (one ``InputError``).

    ``job_side``: one or several job sides (files or parsed), paired with the nvidia-smi logs by
    :func:`pair_job_sides`; none is dropped.
    """
    sides = _read_sides(job_side)
    if steps_per_window is not None and not (math.isfinite(steps_per_window) and steps_per_window > 0):
        message = f"must be a number > 0, got {steps_per_window}"
        raise InputError("options", [Problem("bad-option", "--steps-per-window", message)])
    errors: list[InputError] = []
    kinds = _formats(paths, fmt, errors)
    logs = [k for k, kind in enumerate(kinds) if kind == "nvidia-smi"]
    paired: dict[int, PairedSide | None] | None = None
    side_error = False
    if None not in kinds:  # a file of unknown format may be a log: its job side cannot be counted against it
        try:
            paired = dict(zip(logs, pair_job_sides([Path(paths[k]) for k in logs], sides), strict=True))
        except InputError as exc:
            errors.append(exc)  # the logs are not read: without their job sides they would only add noise
            side_error = True
    done: list[FileIngest] = []
    for k, (path, kind) in enumerate(zip(paths, kinds, strict=True)):
        if kind is None or (kind == "nvidia-smi" and paired is None):
            continue
        try:
            side = paired.get(k) if paired is not None else None
            done.append(ingest_file(Path(path), kind, side, job_type, gpu_type, steps_per_window))
        except InputError as exc:
            errors.append(exc)
    bad_files = len(errors) - side_error
    source = f"{bad_files} of {len(paths)} files" + (" and --job-side" if side_error else "")
    _raise_together(errors, source)
    return done


NoBase = Literal["none"]
"""``library="none"``: merge into no base (``profiles ingest --library none``)."""


def _base(library: Path | NoBase | None) -> tuple[dict[str, Any] | None, list[MeasuredPoint]]:
    """The base document (None for a measurements file or no base) and its points; None is the shipped library."""
    if library == "none":
        return None, []
    if library is None:
        library = profile_library()
    doc = read_json(library)
    source = str(library)
    if isinstance(doc, dict) and doc.get("schema") == MEASUREMENTS_SCHEMA:
        return None, points_from_docs(doc.get("points"), source)
    library_from_doc(doc, source)  # InputError unless a profile library
    return doc, points_from_docs(doc.get("measurements", []), source, "measurements")


def ingest(
    paths: Sequence[Path],
    out: Path,
    fmt: str = "auto",
    job_side: Sequence[Path] | Path | None = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
    library: Path | NoBase | None = None,
    measurements_only: bool = False,
) -> IngestReport:
    """Read ``paths``, merge their points into the base ``library`` and write ``out`` (module docstring)."""
    doc, merged = _base(library)
    files = ingest_files(paths, fmt, job_side, job_type, gpu_type, steps_per_window)
    added = []
    for f in files:
        merged, n = merge_points(merged, f.points)
        added.append(n)
    if doc is not None and not measurements_only:
        write_profile_library(doc | {"measurements": [point_to_doc(p) for p in merged]}, out)
        kind: Literal["library", "measurements"] = "library"
    else:
        write_points(out, merged)
        kind = "measurements"
    return IngestReport(files, added, Path(out), kind, len(merged))


def ingest_tables(report: IngestReport) -> list[Table]:
    """The terminal report: one row per file (format, SHA-256 prefix, points by kind, new), then the skips."""
    files = Table(title=f"ingested {len(report.files)} file(s)", title_justify="left")
    for name in ("file", "format", "sha256", "points"):
        files.add_column(name)
    for name in ("new", "skipped"):
        files.add_column(name, justify="right")
    for f, n in zip(report.files, report.added, strict=True):
        kinds = Counter(p.kind for p in f.points)
        by_kind = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "none"
        files.add_row(shown(f.path.name), f.format, f.sha256[:12], shown(by_kind), str(n), str(len(f.skipped)))
    tables = [files]
    skipped = [(f.path.name, p) for f in report.files for p in f.skipped]
    if skipped:
        table = Table(title=f"reported and skipped ({len(skipped)})", title_justify="left")
        for name in ("file", "where", "reason", "code"):
            table.add_column(name)
        for file, p in skipped:
            table.add_row(shown(file), shown(p.path), shown(p.message), shown(p.code))
        tables.append(table)
    notes = [(f.path.name, note) for f in report.files for note in f.notes]
    if notes:
        table = Table(title="notes", title_justify="left")
        for name in ("file", "note"):
            table.add_column(name)
        for file, note in notes:
            table.add_row(shown(file), shown(note))
        tables.append(table)
    return tables
