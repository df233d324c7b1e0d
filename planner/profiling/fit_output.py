"""A fit (:mod:`planner.profiling.fit`) and a sanity pass as rich tables (no math here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.profiling.basis import BASIS_KINDS
from wattplan.planner.profiling.fit import FitResult
from wattplan.planner.profiling.sanity import FINDING_KINDS, Finding, count_by_kind

NOTES_SHOWN = 10
"""Left-out notes printed in full; the rest are counted (all are in the output's ``notes.fit.left_out``)."""


def _key(key: Sequence[Any]) -> str:
    """The entry ``key`` as one line of terminal markup that prints it literally."""
    return shown(" / ".join(str(k) for k in key))


def findings_table(findings: Sequence[Finding], title: str) -> Table:
    """Findings per kind, with the most extreme one of each kind (largest value / limit)."""
    table = Table(title=shown(title))
    for col in ("finding", "entries", "most extreme", "reason"):
        table.add_column(col, justify="right" if col == "entries" else "left")
    counts = count_by_kind(findings)
    for kind in FINDING_KINDS:
        mine = [f for f in findings if f.kind == kind]
        if not mine:
            table.add_row(kind, "0", "", "")
            continue
        top = max(mine, key=lambda f: abs(f.value / f.limit - 1.0) if f.limit else abs(f.value))
        table.add_row(kind, str(counts[kind]), _key(top.key), shown(top.reason))
    return table


def kinds_table(result: FitResult) -> Table:
    """Profile and pair entries per basis kind."""
    table = Table(title="entries by basis")
    table.add_column("entries")
    for kind in BASIS_KINDS:
        table.add_column(kind, justify="right")
    for entries in ("profiles", "pairs"):
        counts = result.kinds(entries)
        table.add_row(entries, *(str(counts[k]) for k in BASIS_KINDS))
    return table


def worst_table(result: FitResult, k: int = 5) -> Table:
    """The entries with the largest expected relative error."""
    table = Table(title=f"largest expected errors (of {k})")
    for col in ("entry", "kind", "rel. error"):
        table.add_column(col, justify="right" if col == "rel. error" else "left")
    for e in result.worst_errors(k):
        key = (e["type"], e["gpu_type"], e["gpus"], e["setting"]) if "type" in e else (e["a"], e["b"], e["gpu_type"])
        table.add_row(_key(key), shown(e["basis"]["kind"]), f"{e['basis']['rel_error']:.3f}")
    return table


def gpu_table(result: FitResult) -> Table | None:
    """GPU types whose idle, held-idle, node power or top limit points measured (None when none did)."""
    rows = [g for g in result.doc["gpu_types"] if "idle_basis" in g]
    if not rows:
        return None
    table = Table(title="GPU types from points")
    for col in ("GPU type", "idle W", "held idle W", "node W", "top limit W", "basis"):
        table.add_column(col, justify="left" if col in ("GPU type", "basis") else "right")
    for g in rows:
        cells = [g.get(k) for k in ("idle_power_w", "held_idle_power_w", "node_power_w", "top_limit_w")]
        table.add_row(
            shown(g["name"]), *("" if v is None else f"{v:.1f}" for v in cells), shown(g["idle_basis"]["reason"])
        )
    return table


def fit_tables(result: FitResult) -> list[Table]:
    """Every table of a fit's summary, in print order."""
    tables = [kinds_table(result)]
    if (gpus := gpu_table(result)) is not None:
        tables.append(gpus)
    tables += [
        findings_table(result.input_findings, "sanity findings in the prior library"),
        findings_table(result.output_findings, "sanity findings in the fitted library"),
        worst_table(result),
    ]
    if result.notes:
        table = Table(title=f"left out ({len(result.notes)})")
        table.add_column("note")
        for note in result.notes[:NOTES_SHOWN]:
            table.add_row(shown(note))
        if len(result.notes) > NOTES_SHOWN:
            table.add_row(f"... {len(result.notes) - NOTES_SHOWN} more in notes.fit.left_out")
        tables.append(table)
    return tables
