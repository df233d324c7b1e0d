"""What a figure option may be: its file formats and the resolution range, checked for every command that plots.

``simulate``, ``frontier`` (:mod:`planner.sim.plots`) and ``bench`` (:mod:`planner.bench.report`) take the same
``--plot-format`` and ``--dpi``; :func:`figure_option_problems` names a bad one before any work starts.
"""

from __future__ import annotations

from typing import Literal, get_args

from wattplan.planner.contracts.problems import Problem

PlotFormat = Literal["png", "pdf", "svg"]
PLOT_FORMATS: tuple[PlotFormat, ...] = get_args(PlotFormat)
"""File formats a figure is saved in: PNG (raster, ``dpi``), PDF and SVG (vector, for papers)."""
DPI_RANGE = (50, 1200)
"""Allowed ``dpi`` (dots per inch of a PNG figure), both ends included."""


def figure_option_problems(plot_format: str, dpi: int) -> list[Problem]:
    """Every bad value, naming the option (``--plot-format``, ``--dpi``)."""
    problems = []
    if plot_format not in PLOT_FORMATS:
        problems.append(
            Problem("bad-option", "--plot-format", f"{plot_format!r}; choose from {', '.join(PLOT_FORMATS)}")
        )
    low, high = DPI_RANGE
    if not low <= dpi <= high:
        problems.append(Problem("bad-option", "--dpi", f"must be in [{low}, {high}], got {dpi}"))
    return problems
