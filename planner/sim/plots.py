"""Figures of replays, for a screen or a paper: PNG, PDF or SVG (matplotlib, no display needed).

Every plotting function is public, builds a :class:`matplotlib.figure.Figure` without pyplot's
global state, returns it (so a caller can restyle it or inspect its lines) and, given a
``path``, saves it there atomically in the format of :class:`FigureOptions`:

* :func:`power_steps_plot`: cluster power (kW) over time (hours since the replay's start), one step line per
  replay, each level held until the next change; the power cap (``cap_w`` W, drawn at ``cap_w / 1000`` kW) as a
  horizontal line when given;
* :func:`jct_cdf_series_plot`: the empirical CDF of completed jobs' JCT (hours, log scale), as a share of all of a
  replay's jobs;
* :func:`energy_jct_plot`: total energy (kWh) against average JCT (hours); the points of a
  ``series`` (e.g. one policy under several budgets) that no other point of it beats on both
  axes are joined by a line (its Pareto front); the workload's energy floor (kWh, no schedule
  uses less) as a dashed vertical line with the unreachable side shaded, and the reference
  schedule ringed.

``simulate``'s three figures (``power``, ``jct_cdf``, ``energy_jct``) are drawn by
:func:`planner.control.session.write_slurm_plots` with these.

Readable in greyscale: each policy keeps one marker shape and one line style on every figure
(:func:`series_style`). Series that coincide stay visible: markers are hollow and shrink with
each series drawn (a later point nests inside an earlier one), and lines thin with each series
drawn (a later line runs inside an earlier, wider one); the legend says so.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wattplan.planner.contracts.defaults import FIGURE_DPI
from wattplan.planner.contracts.figures import PLOT_FORMATS, PlotFormat, figure_option_problems
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.sim.metrics import J_PER_KWH, pareto_front

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DEFAULT_DPI = FIGURE_DPI
"""Dots per inch of a raster (PNG) figure unless asked otherwise (:data:`planner.contracts.defaults.FIGURE_DPI`)."""


@dataclass(frozen=True, slots=True)
class FigureOptions:
    """How figures are saved: the file ``format`` and, for PNG, the resolution ``dpi`` (dots per inch)."""

    format: PlotFormat = "png"
    dpi: int = DEFAULT_DPI

    def path(self, folder: Path, stem: str) -> Path:
        """The file of figure ``stem`` in ``folder``: ``folder/stem.format``."""
        return Path(folder) / f"{stem}.{self.format}"


DEFAULT_FIGURES = FigureOptions()
"""PNG at :data:`DEFAULT_DPI`."""


def figure_problems(options: FigureOptions) -> list[Problem]:
    """Every bad value of ``options``, naming the option (:func:`planner.contracts.figures.figure_option_problems`)."""
    return figure_option_problems(options.format, options.dpi)


def check_figure_options(options: FigureOptions) -> None:
    """Raise :class:`InputError` listing :func:`figure_problems`, if any."""
    if problems := figure_problems(options):
        raise InputError("figures", problems)


# ------------------------------------------------------------------------------------------------ styles


@dataclass(frozen=True, slots=True)
class SeriesStyle:
    """How one series is drawn: matplotlib ``marker``, ``linestyle`` and ``color``."""

    marker: str
    linestyle: str | tuple[float, tuple[float, ...]]
    color: str


POLICY_STYLES: dict[str, SeriesStyle] = {
    "fifo-max": SeriesStyle("s", "--", "tab:gray"),
    "fifo-maxq": SeriesStyle("d", (0.0, (5.0, 1.0, 1.0, 1.0, 1.0, 1.0)), "black"),
    "zeus": SeriesStyle("^", ":", "tab:orange"),
    "eaco": SeriesStyle("D", "-.", "tab:green"),
    "powerflow": SeriesStyle("v", (0.0, (6.0, 2.0, 1.0, 2.0, 1.0, 2.0)), "tab:purple"),
    "wattplan": SeriesStyle("o", "-", "tab:blue"),
}
"""One marker shape and line style per policy, the same on every figure (readable without colour)."""
_SPARE_MARKERS = ("P", "X", "*", "h", "<", ">", "p", "8")
_SPARE_LINES: tuple[str | tuple[float, tuple[float, ...]], ...] = (
    (0.0, (3.0, 1.0)),
    (0.0, (1.0, 3.0)),
    (0.0, (8.0, 2.0, 2.0, 2.0)),
    (0.0, (4.0, 1.0, 1.0, 1.0)),
)
_SPARE_COLORS = ("tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def series_style(name: str, index: int = 0) -> SeriesStyle:
    """The style of series ``name``: its policy's (:data:`POLICY_STYLES`, also for ``wattplan-...`` labels).

    Any other name takes the ``index``-th spare style (distinct shapes, dashes and colours).
    """
    for policy, style in POLICY_STYLES.items():
        if name == policy or name.startswith(f"{policy}-") or name.startswith(f"{policy} "):
            return style
    return SeriesStyle(
        _SPARE_MARKERS[index % len(_SPARE_MARKERS)],
        _SPARE_LINES[index % len(_SPARE_LINES)],
        _SPARE_COLORS[index % len(_SPARE_COLORS)],
    )


LINE_WIDTH_FIRST, LINE_WIDTH_STEP, LINE_WIDTH_LEAST = 3.0, 0.5, 1.0
"""Line width (points) of the first series, how much thinner each next one is, and the thinnest."""
MARKER_SIZE_FIRST, MARKER_SIZE_STEP, MARKER_SIZE_LEAST = 13.0, 2.0, 5.0
"""Marker size (points) of the first series, how much smaller each next one is, and the smallest."""
LINES_NOTE = "coinciding lines: later one inside"
MARKERS_NOTE = "hollow markers: coinciding points nest"


def line_width(order: int) -> float:
    """Width of the ``order``-th line drawn (0 first): wider lines first, so a later line shows inside one."""
    return max(LINE_WIDTH_LEAST, LINE_WIDTH_FIRST - LINE_WIDTH_STEP * order)


def marker_size(order: int) -> float:
    """Size of the ``order``-th series' hollow markers: larger first, so a later marker nests inside one."""
    return max(MARKER_SIZE_LEAST, MARKER_SIZE_FIRST - MARKER_SIZE_STEP * order)


# --------------------------------------------------------------------------------------------- figures


def new_figure(width_in: float, height_in: float) -> tuple[Figure, Axes]:
    """A figure of ``width_in`` x ``height_in`` inches with one axes, outside pyplot (nothing to close)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in))
    return fig, fig.subplots()


def _metadata(fmt: PlotFormat) -> dict[str, Any]:
    """File metadata that makes the same figure the same bytes: no creation date in PDF or SVG."""
    if fmt == "pdf":
        return {"CreationDate": None}
    if fmt == "svg":
        return {"Date": None}
    return {}


def save_figure(fig: Figure, path: Path, options: FigureOptions = DEFAULT_FIGURES) -> Path:
    """Save ``fig`` to ``path`` in ``options.format`` at ``options.dpi``, atomically (a temporary file renamed).

    The format is ``options.format`` whatever ``path``'s suffix; the same figure gives the same
    bytes (no creation date, fixed SVG ids). Returns ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{options.format}", dir=path.parent)
    os.close(fd)
    from matplotlib import rc_context

    try:
        with rc_context({"svg.hashsalt": "wattplan"}):  # SVG element ids from a fixed salt, not a random one
            fig.savefig(
                tmp, format=options.format, dpi=options.dpi, bbox_inches="tight", metadata=_metadata(options.format)
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def finish_axes(
    ax: Axes, xlabel: str, ylabel: str, title: str, note: str = "", grid: Literal["major", "minor", "both"] = "major"
) -> None:
    """Label the axes, grid and legend (``note``: the legend's title, e.g. how overlaps are drawn)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which=grid)
    if ax.get_legend_handles_labels()[0]:
        legend = ax.legend(fontsize=8, title=note or None, title_fontsize=7)
        legend.set_zorder(10)


def _maybe_save(fig: Figure, path: Path | None, options: FigureOptions) -> Figure:
    if path is not None:
        save_figure(fig, path, options)
    return fig


CAP_LABEL = "power cap"
FLOOR_LABEL = "energy floor"
REFERENCE_LABEL = "reference (fifo-max, no budget)"


def power_steps_plot(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    path: Path | None = None,
    title: str = "Cluster power",
    *,
    cap_w: float | None = None,
    options: FigureOptions = DEFAULT_FIGURES,
) -> Figure:
    """One step line per series of ``(hours since start, kW)`` points, each held until the next; saved to ``path``.

    ``cap_w``: the power cap (W), drawn at ``cap_w / 1000`` kW as a horizontal line; None: none.
    """
    fig, ax = new_figure(9, 4)
    for k, (label, (xs, ys)) in enumerate(series.items()):
        style = series_style(label, k)
        ax.step(
            xs,
            ys,
            where="post",
            label=label,
            color=style.color,
            linestyle=style.linestyle,
            linewidth=line_width(k),
            alpha=0.85,
            zorder=2 + k,
        )
    if cap_w is not None:
        cap_kw = cap_w / 1000
        ax.axhline(cap_kw, color="black", linestyle=(0, (6, 3)), linewidth=1.2, label=f"{CAP_LABEL} ({cap_kw:g} kW)")
    notes = LINES_NOTE if len(series) > 1 else ""
    finish_axes(ax, "time since replay start (h)", "cluster power (kW)", title, notes)
    return _maybe_save(fig, path, options)


def jct_cdf_series_plot(
    series: Mapping[str, tuple[Sequence[float], int]],
    path: Path | None = None,
    title: str = "",
    *,
    options: FigureOptions = DEFAULT_FIGURES,
) -> Figure:
    """CDF of job completion time (h, log scale) per series ``(JCTs of the completed jobs in s, jobs in all)``."""
    fig, ax = new_figure(6, 4)
    for k, (label, (done, total)) in enumerate(series.items()):
        jcts = sorted(j / 3600 for j in done)
        if not jcts:
            continue
        style = series_style(label, k)
        ys = [(i + 1) / total for i in range(len(jcts))]
        ax.step(
            jcts,
            ys,
            where="post",
            label=label,
            color=style.color,
            linestyle=style.linestyle,
            linewidth=line_width(k),
            alpha=0.85,
            zorder=2 + k,
        )
    ax.set_xscale("log")
    notes = LINES_NOTE if len(series) > 1 else ""
    finish_axes(ax, "job completion time (h)", "fraction of jobs completed", title or "JCT CDF", notes, grid="both")
    return _maybe_save(fig, path, options)


@dataclass(frozen=True, slots=True)
class EnergyJctPoint:
    """One replay on the energy-JCT plane: energy (kWh), average JCT (s) and the series it belongs to."""

    label: str
    energy_kwh: float
    avg_jct_s: float
    series: str


def mark_floor(ax: Axes, floor_kwh: float | None) -> None:
    """The energy floor (kWh) as a dashed vertical line, the energies below it (unreachable) shaded."""
    if floor_kwh is None:
        return
    ax.axvline(floor_kwh, color="0.2", linestyle="--", linewidth=1.2, label=f"{FLOOR_LABEL} ({floor_kwh:.4g} kWh)")
    left, right = ax.get_xlim()
    span = max(right - left, abs(floor_kwh) * 0.1, 1e-9)
    left = min(left, floor_kwh - 0.05 * span)
    right = max(right, floor_kwh + 0.05 * span)
    ax.axvspan(left, floor_kwh, color="0.5", alpha=0.12, hatch="//", linewidth=0, zorder=0)
    ax.set_xlim(left, right)


def mark_reference(ax: Axes, reference: EnergyJctPoint | None) -> None:
    """The reference replay (energy kWh, average JCT h) ringed by a large black circle, labelled."""
    if reference is None:
        return
    ax.plot(
        [reference.energy_kwh],
        [reference.avg_jct_s / 3600],
        marker="o",
        markersize=MARKER_SIZE_FIRST + 8,
        markerfacecolor="none",
        markeredgecolor="black",
        markeredgewidth=1.0,
        linestyle="none",
        label=REFERENCE_LABEL,
        zorder=1,
    )


def energy_jct_plot(
    points: Sequence[EnergyJctPoint],
    path: Path | None = None,
    title: str = "",
    *,
    floor_kwh: float | None = None,
    reference: EnergyJctPoint | None = None,
    options: FigureOptions = DEFAULT_FIGURES,
) -> Figure:
    """Every point as a hollow marker of its series' shape; each series' Pareto front as a line in its style.

    The front is :func:`planner.sim.metrics.pareto_front`. ``floor_kwh``: :func:`mark_floor`;
    ``reference``: :func:`mark_reference`. Saved to ``path`` when given.
    """
    fig, ax = new_figure(6.5, 4.5)
    series: dict[str, list[EnergyJctPoint]] = {}
    for p in points:
        series.setdefault(p.series, []).append(p)
    for k, (name, pts) in enumerate(series.items()):
        style = series_style(name, k)
        xs = [p.energy_kwh for p in pts]
        ys = [p.avg_jct_s / 3600 for p in pts]
        ax.plot(
            xs,
            ys,
            marker=style.marker,
            markersize=marker_size(k),
            markerfacecolor="none",
            markeredgecolor=style.color,
            markeredgewidth=1.6,
            linestyle="none",
            label=name,
            zorder=3 + k,
        )
        front = pareto_front(list(zip(xs, ys, strict=True)))
        if len(front) > 1:
            ax.plot(
                [e for e, _ in front],
                [j for _, j in front],
                color=style.color,
                linestyle=style.linestyle,
                linewidth=1.0,
                zorder=2,
            )
    mark_reference(ax, reference)
    mark_floor(ax, floor_kwh)
    note = MARKERS_NOTE if len(series) > 1 else ""
    finish_axes(ax, "total energy (kWh)", "average JCT (h)", title or "Energy vs average JCT", note)
    return _maybe_save(fig, path, options)


def summary_points(summaries: Sequence[dict[str, Any]]) -> list[EnergyJctPoint]:
    """Energy-JCT points of replays whose jobs all completed (one series per policy)."""
    return [
        EnergyJctPoint(s["policy"], s["energy_kwh"], s["avg_jct_s"], s["policy"])
        for s in summaries
        if s.get("avg_jct_s") is not None and s.get("jobs_unfinished", 0) == 0
    ]


def floor_of(summaries: Sequence[Mapping[str, Any]]) -> float | None:
    """The workload's energy floor (kWh) the summaries carry (``energy_floor_kwh``), or None."""
    return next((float(s["energy_floor_kwh"]) for s in summaries if s.get("energy_floor_kwh") is not None), None)


__all__ = [
    "DEFAULT_DPI",
    "DEFAULT_FIGURES",
    "J_PER_KWH",
    "PLOT_FORMATS",
    "POLICY_STYLES",
    "EnergyJctPoint",
    "FigureOptions",
    "PlotFormat",
    "SeriesStyle",
    "check_figure_options",
    "energy_jct_plot",
    "figure_problems",
    "jct_cdf_series_plot",
    "mark_floor",
    "mark_reference",
    "power_steps_plot",
    "save_figure",
    "series_style",
    "summary_points",
]
