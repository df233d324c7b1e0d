"""``wattplan cluster report`` for a reader: the run's summary and each job as rows with their units.

:func:`summary_rows` gives ``(what, this run, unit)`` rows, and with another run's report (``--against``, the JSON
of ``cluster report --json`` of an unmanaged run, say) the other run's value and this run's as a ratio of it;
:func:`job_rows` one row per job. Both read only the report document (:func:`planner.cluster.report.cluster_report`),
so a saved JSON renders the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUMMARY = (
    ("energy_kwh", "energy, GPUs and nodes", "kWh"),
    ("gpu_energy_kwh", "GPU energy", "kWh"),
    ("node_energy_kwh", "node energy besides the GPUs", "kWh"),
    ("gpu_idle_energy_kwh", "GPU energy while idle", "kWh"),
    ("avg_jct_s", "average JCT", "s"),
    ("p95_jct_s", "p95 JCT", "s"),
    ("jobs_completed", "jobs completed", ""),
    ("jobs_total", "jobs submitted", ""),
)
"""The summary's rows: the report's key, its words and its unit."""
JOB_COLUMNS = (
    ("id", "job", ""),
    ("job_type", "type", ""),
    ("gpus", "GPUs", ""),
    ("arrival_s", "arrival", "s"),
    ("start_s", "start", "s"),
    ("end_s", "end", "s"),
    ("jct_s", "JCT", "s"),
    ("energy_kwh", "GPU energy", "kWh"),
    ("state", "state", ""),
)
"""The per-job table's columns: the job's key, its heading and its unit."""


def _number(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if unit == "kWh":
        return f"{value:,.3f}"
    if unit == "s":
        return f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"


def summary_rows(report: Mapping[str, Any], other: Mapping[str, Any] | None = None) -> list[tuple[str, ...]]:
    """``(what [unit], this run[, other run, this / other])`` for each summary figure; ``-`` where unknown."""
    rows = []
    for key, words, unit in SUMMARY:
        label = f"{words} [{unit}]" if unit else words
        mine = report.get(key)
        row = [label, _number(mine, unit)]
        if other is not None:
            theirs = other.get(key)
            ratio = (
                mine / theirs if isinstance(mine, int | float) and isinstance(theirs, int | float) and theirs else None
            )
            row += [_number(theirs, unit), "-" if ratio is None else f"{ratio:.3f}"]
        rows.append(tuple(row))
    return rows


def job_headings() -> list[str]:
    """The per-job table's headings with their units."""
    return [f"{heading} [{unit}]" if unit else heading for _, heading, unit in JOB_COLUMNS]


def job_rows(report: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per job of the report, in its order, each value with the column's unit."""
    return [tuple(_number(job.get(key), unit) for key, _, unit in JOB_COLUMNS) for job in report.get("jobs", [])]
