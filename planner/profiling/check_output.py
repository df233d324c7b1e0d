"""A fidelity report (:mod:`planner.profiling.check`) as JSON, CSV and rich tables (no math here).

JSON (``wattplan.fidelity/1``): ``shape``, ``mapping``, ``summary`` (per quantity: count, median
``|error|``, worst signed error and its row's points, unmatched count), ``rows`` and ``unmatched``.
CSV: one line per row (``status`` ``matched``) and per unmatched entry (``status`` ``unmatched``, the
reason in ``note``); relative errors are ``(predicted - measured) / measured``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from rich.console import JustifyMethod
from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic
from wattplan.planner.profiling.check import UNITS, FidelityReport, FidelityRow

FIDELITY_SCHEMA = "wattplan.fidelity/1"
CSV_COLUMNS = (
    "status",
    "quantity",
    "job_type",
    "gpu_type",
    "gpus",
    "setting",
    "partner",
    "predicted",
    "measured",
    "rel_error",
    "points",
    "note",
)


def row_to_doc(r: FidelityRow) -> dict[str, Any]:
    """A row as JSON, its relative error included."""
    return {
        "quantity": r.quantity,
        "job_type": r.job_type,
        "gpu_type": r.gpu_type,
        "gpus": r.gpus,
        "setting": r.setting,
        "partner": r.partner,
        "predicted": r.predicted,
        "measured": r.measured,
        "rel_error": r.rel_error,
        "points": list(r.points),
        "note": r.note,
    }


def report_to_doc(report: FidelityReport) -> dict[str, Any]:
    """The whole report as a ``wattplan.fidelity/1`` document."""
    return {
        "schema": FIDELITY_SCHEMA,
        "shape": report.shape,
        "mapping": dict(sorted(report.mapping.items())),
        "summary": [
            {
                "quantity": s.quantity,
                "unit": UNITS[s.quantity],
                "count": s.count,
                "median_abs_error": s.median_abs_error,
                "worst_error": s.worst_error,
                "worst_points": [] if s.worst is None else list(s.worst.points),
                "unmatched": s.unmatched,
            }
            for s in report.summary()
        ],
        "rows": [row_to_doc(r) for r in report.rows],
        "unmatched": [
            {"quantity": u.quantity, "config": u.config, "reason": u.reason, "points": list(u.points)}
            for u in report.unmatched
        ],
    }


def write_report_json(path: Path, report: FidelityReport) -> None:
    """Write :func:`report_to_doc` atomically."""
    write_json_atomic(path, report_to_doc(report))


def report_csv(report: FidelityReport) -> str:
    """Rows and unmatched entries as CSV text (:data:`CSV_COLUMNS`)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in report.rows:
        cells = (r.job_type, r.gpu_type, r.gpus, r.setting, r.partner, r.predicted, r.measured, r.rel_error)
        w.writerow(("matched", r.quantity, *("" if v is None else v for v in cells), " ".join(r.points), r.note))
    for u in report.unmatched:
        w.writerow(("unmatched", u.quantity, u.config, "", "", "", "", "", "", "", " ".join(u.points), u.reason))
    return buf.getvalue()


def write_report_csv(path: Path, report: FidelityReport) -> None:
    """Write :func:`report_csv` atomically."""
    write_text_atomic(path, report_csv(report))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _cell(x: int | str | None) -> str:
    """A table cell: nothing for None, else the value printed literally."""
    return "" if x is None else shown(x)


def rows_table(report: FidelityReport, quantity: str, max_rows: int = 40) -> Table:
    """The rows of one quantity (at most ``max_rows``): configuration, predicted, measured, error."""
    rows = [r for r in report.rows if r.quantity == quantity]
    first = f", first {max_rows} shown" if len(rows) > max_rows else ""
    table = Table(title=f"{quantity} ({UNITS[quantity]}): {len(rows)} rows{first}", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("job type", "left"),
        ("GPU", "left"),
        ("n", "right"),
        ("setting", "right"),
        ("partner", "left"),
        ("predicted", "right"),
        ("measured", "right"),
        ("rel. error", "right"),
        ("points", "left"),
    )
    for col, justify in columns:
        table.add_column(col, justify=justify)
    for r in rows[:max_rows]:
        ids = ", ".join(r.points[:2]) + (f" +{len(r.points) - 2}" if len(r.points) > 2 else "")
        table.add_row(
            _cell(r.job_type),
            _cell(r.gpu_type),
            _cell(r.gpus),
            _cell(r.setting),
            _cell(r.partner),
            f"{r.predicted:.4g}",
            f"{r.measured:.4g}",
            _pct(r.rel_error),
            _cell(ids),
        )
    return table


def summary_table(report: FidelityReport) -> Table:
    """Per quantity: rows, median ``|error|``, worst error (signed) and where, unmatched."""
    mode = "shape" if report.shape else "absolute"
    table = Table(title=f"fidelity summary ({mode} mode)", title_justify="left")
    for col in ("quantity", "rows", "median |err|", "worst err", "worst at", "unmatched"):
        table.add_column(col, justify="left" if col in ("quantity", "worst at") else "right")
    for s in report.summary():
        where = ""
        if s.worst is not None:
            w = s.worst
            where = " ".join(str(v) for v in (w.job_type, w.gpu_type, w.gpus, w.setting, w.partner) if v is not None)
        median = None if s.median_abs_error is None else f"{s.median_abs_error:.1%}"
        table.add_row(s.quantity, str(s.count), median or "-", _pct(s.worst_error), _cell(where), str(s.unmatched))
    return table


def unmatched_table(report: FidelityReport, max_rows: int = 40) -> Table:
    """Unmatched entries (at most ``max_rows``), the quantities of one configuration and reason on one line."""
    merged: dict[tuple[str, str, int], list[str]] = {}
    for u in report.unmatched:
        merged.setdefault((u.config, u.reason, len(u.points)), []).append(u.quantity)
    first = f", first {max_rows} shown" if len(merged) > max_rows else ""
    table = Table(title=f"unmatched: {len(report.unmatched)} entries{first}", title_justify="left")
    for col in ("quantities", "configuration", "reason", "points"):
        table.add_column(col)
    for (config, reason, points), quantities in list(merged.items())[:max_rows]:
        table.add_row(_cell(", ".join(quantities)), _cell(config), _cell(reason), str(points))
    return table
