"""PNG plots of replays (matplotlib, Agg backend, no display needed).

* :func:`power_plot`: cluster power (kW, round energy / T) over time (hours since the replay's
  start), one step line per replay; rounds skipped because nothing was queued draw 0 W;
* :func:`jct_cdf_plot`: the empirical CDF of completed jobs' JCT (hours, log scale);
* :func:`energy_jct_plot`: total energy (kWh) against average JCT (hours); the points of a
  ``series`` (e.g. one policy under several budgets) that no other point of it beats on both
  axes are joined by a line (its Pareto front).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.sim.engine import SimResult
from planner.sim.metrics import J_PER_KWH, pareto_front


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    """Save atomically: a temporary PNG in the same folder, renamed over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
        _pyplot().close(fig)


def power_series(result: SimResult) -> tuple[list[float], list[float]]:
    """(hours since start, kW) step points, with 0 kW through skipped rounds."""
    T = result.duration_s
    xs: list[float] = []
    ys: list[float] = []
    prev_end: float | None = None
    for r in result.rounds:
        if prev_end is not None and r.start_s > prev_end + 1e-6:
            xs.append((prev_end - result.t0_s) / 3600)
            ys.append(0.0)
        xs.append((r.start_s - result.t0_s) / 3600)
        ys.append(r.energy_j / T / 1000)
        prev_end = r.start_s + T
    if prev_end is not None:
        xs.append((prev_end - result.t0_s) / 3600)
        ys.append(0.0)
    return xs, ys


def _finish(fig: Any, ax: Any, path: Path, xlabel: str, ylabel: str, title: str, grid: str = "major") -> None:
    """Label the axes, grid and legend, then save ``fig`` to ``path``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which=grid)
    ax.legend(fontsize=8)
    _save(fig, path)


def power_plot(results: Mapping[str, SimResult], path: Path, title: str = "") -> None:
    """Cluster power per round (kW, ``energy_j / T``) over hours since start, one line per replay, to ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    for label, res in results.items():
        xs, ys = power_series(res)
        ax.step(xs, ys, where="post", label=label, linewidth=1.0)
    _finish(fig, ax, path, "time since replay start (h)", "cluster power (kW)", title or "Cluster power per round")


def jct_cdf_plot(results: Mapping[str, SimResult], path: Path, title: str = "") -> None:
    """CDF of job completion time (h, log scale) per replay, as a fraction of all its jobs, to ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, res in results.items():
        jcts = sorted(s.jct_s / 3600 for s in res.jobs if s.jct_s is not None)
        if not jcts:
            continue
        ys = [(i + 1) / len(res.jobs) for i in range(len(jcts))]
        ax.step(jcts, ys, where="post", label=label, linewidth=1.2)
    ax.set_xscale("log")
    _finish(fig, ax, path, "job completion time (h)", "fraction of jobs completed", title or "JCT CDF", grid="both")


@dataclass(frozen=True, slots=True)
class EnergyJctPoint:
    """One replay on the energy-JCT plane."""

    label: str
    energy_kwh: float
    avg_jct_s: float
    series: str


def energy_jct_plot(points: Sequence[EnergyJctPoint], path: Path, title: str = "") -> None:
    """Every point as a marker; each series' Pareto front (:func:`planner.sim.metrics.pareto_front`) as a line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    series: dict[str, list[EnergyJctPoint]] = {}
    for p in points:
        series.setdefault(p.series, []).append(p)
    for name, pts in series.items():
        xs = [p.energy_kwh for p in pts]
        ys = [p.avg_jct_s / 3600 for p in pts]
        (line,) = ax.plot(xs, ys, marker="o", linestyle="none", label=name, alpha=0.8)
        front = pareto_front(list(zip(xs, ys, strict=True)))
        if len(front) > 1:
            ax.plot([e for e, _ in front], [j for _, j in front], color=line.get_color(), linewidth=1.0)
    _finish(fig, ax, path, "total energy (kWh)", "average JCT (h)", title or "Energy vs average JCT")


def summary_points(summaries: Sequence[dict[str, Any]]) -> list[EnergyJctPoint]:
    """Energy-JCT points of replays whose jobs all completed (one series per policy)."""
    return [
        EnergyJctPoint(s["policy"], s["energy_kwh"], s["avg_jct_s"], s["policy"])
        for s in summaries
        if s.get("avg_jct_s") is not None and s.get("jobs_unfinished", 0) == 0
    ]


__all__ = ["J_PER_KWH", "EnergyJctPoint", "energy_jct_plot", "jct_cdf_plot", "power_plot", "summary_points"]
