"""What a profile library holds, as tables for ``wattplan profiles ls`` and ``profiles show`` (no math).

Cells wrap (``overflow="fold"``) rather than being cut, so the tables stay whole at 80 columns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.profile_library.library import ProfileLibrary

BASIS_COLUMNS = ("measured", "fitted", "prior", "repaired", "other", "none")
"""Entry counts by basis kind; ``other`` another kind (e.g. ``truth``), ``none`` no basis (the shipped library)."""


@dataclass(frozen=True, slots=True)
class GpuSummary:
    """One GPU type: settings and unit, idle power (W per GPU), job types, GPU counts, profiles by basis kind."""

    name: str
    settings: tuple[int, ...]
    setting_unit: str
    idle_power_w: float
    job_types: int
    counts: tuple[int, ...]
    pairs: int
    by_basis: dict[str, int]


def _kind(basis: object) -> str:
    if not isinstance(basis, dict):
        return "none"
    kind = basis.get("kind")
    return kind if kind in BASIS_COLUMNS else "other"


def gpu_summaries(lib: ProfileLibrary) -> list[GpuSummary]:
    """A :class:`GpuSummary` per GPU type, in the library's order."""
    out = []
    for name, entry in lib.gpu_types.items():
        mine = [p for p in lib.profiles if p.gpu_type == name]
        kinds = Counter(_kind(p.basis) for p in mine)
        out.append(
            GpuSummary(
                name=name,
                settings=tuple(entry["settings"]),
                setting_unit=str(entry["setting_unit"]),
                idle_power_w=float(entry["idle_power_w"]),
                job_types=len({p.type for p in mine}),
                counts=tuple(sorted({p.gpus for p in mine})),
                pairs=sum(1 for q in lib.pairs if q.gpu_type == name),
                by_basis={k: kinds[k] for k in BASIS_COLUMNS if kinds[k]},
            )
        )
    return out


def summary_table(lib: ProfileLibrary, title: str) -> Table:
    """``profiles ls``: one row per GPU type."""
    table = Table(title=shown(title), title_justify="left")
    table.add_column("GPU", style="bold", overflow="fold")
    table.add_column("settings", overflow="fold")
    table.add_column("idle W", justify="right")
    table.add_column("job types", justify="right")
    table.add_column("GPU counts", overflow="fold")
    table.add_column("pairs", justify="right")
    table.add_column("profiles by basis", overflow="fold")
    for g in gpu_summaries(lib):
        unit = "W" if g.setting_unit == "power_limit_w" else "MHz"
        table.add_row(
            shown(g.name),
            f"{', '.join(str(s) for s in g.settings)} {unit}",
            f"{g.idle_power_w:g}",
            str(g.job_types),
            ", ".join(str(n) for n in g.counts) or "-",
            str(g.pairs),
            ", ".join(f"{k} {v}" for k, v in g.by_basis.items()) or "-",
        )
    return table


def entries_table(lib: ProfileLibrary, gpu_type: str, job_type: str | None, title: str) -> Table:
    """``profiles show``: every profile of ``gpu_type`` (of ``job_type`` when given), sorted."""
    table = Table(title=shown(title), title_justify="left")
    table.add_column("job type", overflow="fold", ratio=3)
    table.add_column("GPUs", justify="right")
    table.add_column("setting", justify="right")
    table.add_column("steps/s", justify="right")
    table.add_column("W/GPU", justify="right")
    table.add_column("basis", overflow="fold")
    table.add_column("error", justify="right")
    rows = sorted(
        (p for p in lib.profiles if p.gpu_type == gpu_type and (job_type is None or p.type == job_type)),
        key=lambda p: (p.type, p.gpus, p.setting),
    )
    for p in rows:
        basis = p.basis if isinstance(p.basis, dict) else {}
        err = basis.get("rel_error")
        table.add_row(
            shown(p.type),
            str(p.gpus),
            str(p.setting),
            f"{p.steps_per_s:.4g}",
            f"{p.power_w:.4g}",
            _kind(p.basis),
            "-" if err is None else f"{err:.0%}",
        )
    return table
