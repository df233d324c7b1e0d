"""``wattplan profiles ingest``: measurement files -> points, merged into a library or a measurements file.

Formats (``auto`` decides by the header of each file):

* ``nvidia-smi``: a query log (:mod:`planner.profiling.nvidia_smi`) with the job side
  (:mod:`planner.profiling.job_side`) naming the runs; points by :mod:`planner.profiling.smi_points`. The
  GPU type is the job side's, else ``gpu_type``; without a job side the log gives idle and top-limit points;
* ``zeus-windows``: a Zeus profile-window file (:mod:`planner.profiling.zeus_windows`); ``steps_per_window``
  is required, the GPU and job type default to the file name's (``V100+resnet50+gpu0.csv``: ``v100``,
  ``resnet50``);
* ``zeus-summary``: a Zeus power summary (:mod:`planner.profiling.zeus_summary`); the GPU type defaults to
  the file name's (``summary_power_v100.csv``: ``v100``).

Merging: the base is ``library`` (a ``wattplan.profiles/1`` library, by default the shipped one, or a
``wattplan.measurements/1`` file; ``None`` for no base). The new points join the base's measurements unless
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

from planner.jsonio import read_json, read_text
from planner.problems import InputError, Problem
from planner.profile_build import write_profile_library
from planner.profiling import zeus_summary, zeus_windows
from planner.profiling.job_side import JobSide, read_job_side, runs_for_log
from planner.profiling.nvidia_smi import read_nvidia_smi_log
from planner.profiling.points import (
    MEASUREMENTS_SCHEMA,
    MeasuredPoint,
    file_sha256,
    merge_points,
    point_to_doc,
    points_from_docs,
    write_points,
)
from planner.profiling.smi_points import IngestResult, points_from_smi
from planner.resources import profile_library
from planner.round_builder import library_from_doc

__all__ = ["FORMATS", "FileIngest", "IngestReport", "IngestResult", "detect_format", "ingest", "ingest_files"]

SHIPPED_LIBRARY = profile_library()
FORMATS = ("auto", "nvidia-smi", "zeus-windows", "zeus-summary")
Format = Literal["auto", "nvidia-smi", "zeus-windows", "zeus-summary"]


@dataclass(frozen=True, slots=True)
class FileIngest:
    """What one file gave: its format and SHA-256, the points, the problems reported (rows or runs skipped)."""

    path: Path
    format: str
    sha256: str
    points: list[MeasuredPoint]
    skipped: list[Problem]


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


def _smi(path: Path, side: JobSide | None, gpu_type: str | None) -> IngestResult:
    if side is not None and gpu_type and side.gpu_type != gpu_type.lower():
        message = f"--gpu-type {gpu_type} contradicts the job side's gpu_type {side.gpu_type}"
        raise InputError(str(path), [Problem("gpu-type-mismatch", "--gpu-type", message)])
    g = _gpu_type(path, side.gpu_type if side else gpu_type, None, "an nvidia-smi log")
    log = read_nvidia_smi_log(path)
    return points_from_smi(log, runs_for_log(side, path.name), g)


def ingest_file(
    path: Path,
    fmt: str = "auto",
    job_side: JobSide | None = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
) -> FileIngest:
    """The points of one file in format ``fmt`` (``auto``: :func:`detect_format`)."""
    path = Path(path)
    kind = detect_format(path) if fmt == "auto" else fmt
    if kind == "nvidia-smi":
        result = _smi(path, job_side, gpu_type)
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
    return FileIngest(path, kind, file_sha256(path), result.points, result.skipped)


def ingest_files(
    paths: Sequence[Path],
    fmt: str = "auto",
    job_side: JobSide | Path | None = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
) -> list[FileIngest]:
    """Every file's points; the problems of every bad file are raised together (one ``InputError``)."""
    side = read_job_side(job_side) if isinstance(job_side, Path) else job_side
    if steps_per_window is not None and not (math.isfinite(steps_per_window) and steps_per_window > 0):
        message = f"must be a number > 0, got {steps_per_window}"
        raise InputError("options", [Problem("bad-option", "--steps-per-window", message)])
    done: list[FileIngest] = []
    errors: list[InputError] = []
    for path in paths:
        try:
            done.append(ingest_file(Path(path), fmt, side, job_type, gpu_type, steps_per_window))
        except InputError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        problems = [Problem(p.code, f"{e.source}: {p.path}", p.message) for e in errors for p in e.problems]
        raise InputError(f"{len(errors)} of {len(paths)} files", problems)
    return done


def _base(library: Path | None) -> tuple[dict[str, Any] | None, list[MeasuredPoint]]:
    """The base document (None for a measurements file or no base) and its points."""
    if library is None:
        return None, []
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
    job_side: Path | None = None,
    job_type: str | None = None,
    gpu_type: str | None = None,
    steps_per_window: float | None = None,
    library: Path | None = SHIPPED_LIBRARY,
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
        files.add_row(f.path.name, f.format, f.sha256[:12], by_kind, str(n), str(len(f.skipped)))
    tables = [files]
    skipped = [(f.path.name, p) for f in report.files for p in f.skipped]
    if skipped:
        table = Table(title=f"reported and skipped ({len(skipped)})", title_justify="left")
        for name in ("file", "where", "reason", "code"):
            table.add_column(name)
        for file, p in skipped:
            table.add_row(file, p.path, p.message, p.code)
        tables.append(table)
    return tables
