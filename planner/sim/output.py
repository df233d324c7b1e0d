"""A comparison of replays and the jobs no replay ran: CSV files, written atomically.

A comparison of several replays (a frontier's ``frontier.csv``) has one row per replay with the columns it names.
``dropped.csv`` (next to it, or to a frontier's files) lists the selected trace jobs not replayed because their job
type has no profile on the cluster's GPU types: ``job_id, type``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_text_atomic


def _csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _num(x: float | None, digits: int = 6) -> str:
    return "" if x is None else f"{x:.{digits}g}"


DROPPED_FILE = "dropped.csv"
DROPPED_COLUMNS = ("job_id", "type")


def dropped_csv(by_type: Mapping[str, Sequence[str]]) -> str:
    """The ``dropped.csv`` text: one row per dropped job, grouped by job type."""
    return _csv_text(DROPPED_COLUMNS, [(job_id, t) for t, ids in by_type.items() for job_id in ids])


def write_dropped(folder: Path, by_type: Mapping[str, Sequence[str]]) -> Path | None:
    """Write ``folder/dropped.csv`` when a job was dropped and return it; else remove an older one, return None."""
    path = Path(folder) / DROPPED_FILE
    if not any(by_type.values()):
        path.unlink(missing_ok=True)
        return None
    write_text_atomic(path, dropped_csv(by_type))
    return path


def comparison_csv(summaries: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """One row per summary with ``columns`` (missing values empty)."""
    rows = [[("" if s.get(c) is None else s.get(c)) for c in columns] for s in summaries]
    return _csv_text(columns, rows)
