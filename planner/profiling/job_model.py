"""One job type on one GPU type: its exclusive points turned into a table over counts and settings.

* Setting curves (:func:`planner.profiling.power_model.fit_setting_curves`), one per measured count: the reference
  count ``n_ref`` (measured at the most settings, ties to the smaller) extends beyond its settings with the prior
  library's curve of the job; every other measured count with the reference count's curve, so a count measured
  at one setting inherits the job's own shape. ``s*`` is the highest setting measured at ``n_ref``.
* Scaling (:mod:`planner.profiling.scaling`) on the rates at ``s*``, ``A(n) = X_n(s*)`` of each measured count's
  curve: Amdahl with two or more counts; with one count the prior's shape through it, or for a job type the prior
  does not have the library's median ``alpha``.
* Power across counts (:mod:`planner.profiling.power_model`): ``c = sum(y_n E(n)) / sum(E(n)^2)`` over measured
  counts with ``y_n = P_n(s*) - P_idle`` and ``E(n) = A(n) / (n A(1))``.
* Table: at a measured count its own curve, ``X_n(s)`` and ``P_n(s)`` (the points' mean at a measured cell). At an
  unmeasured count the curve of the nearest measured count ``m`` (in ``log2``, ties to the larger) scaled:
  ``X(n, s) = A(n) X_m(s) / X_m(s*)`` and ``P(n, s) = P_idle + c E(n) (P_m(s) - P_idle) / (P_m(s*) - P_idle)``.
* Utilisation, where points measure it: the mean at a measured count, else ``min(1, u1 E(n))``;
  ``k(s) = c q(s) / u1`` W is reported in the fit's notes.

A cell with points is ``measured`` (the mean of its points; expected error the larger coefficient of variation of
throughput and power with two or more points, else unknown). Any other is ``fitted``, expected error
``max(sqrt(e_n^2 + e_s^2), sqrt((e_n (P - P_idle) / P)^2 + e_p^2))``: ``e_n`` the scaling error (0 at a measured
count), ``e_s`` / ``e_p`` the used curve's errors of throughput and power (0 at a setting it measured; carrying a
curve from one count to another is not charged). Only the dynamic part of power carries the scaling error.
Predicted power is clamped to ``[P_idle, s]`` (``s`` a power limit in W), with the reason in the basis.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wattplan.planner.contracts.domain import gpu_count_fits_type
from wattplan.planner.profiling.basis import make_basis, worst
from wattplan.planner.profiling.points import MeasuredPoint
from wattplan.planner.profiling.power_model import (
    SettingCurves,
    fit_busy_fraction,
    fit_dynamic_power,
    fit_setting_curves,
)
from wattplan.planner.profiling.scaling import (
    ScalingFit,
    fit_scaling,
    population_fit,
    prior_shape_fit,
)


@dataclass(frozen=True, slots=True)
class GpuContext:
    """What the fit needs of a GPU type.

    Name, idle power (W per GPU), settings and their unit, node size, and the library's borrowed-curve errors and
    median ``alpha`` (None where the library has too few curves).
    """

    name: str
    idle_w: float
    settings: tuple[int, ...]
    power_limit: bool
    gpus_per_node: int
    borrowed: tuple[float, float] | None
    alpha: float | None


@dataclass
class JobModel:
    """A fitted job type on a GPU type (module docstring); :meth:`rate` and :meth:`power` at any (n, s)."""

    job_type: str
    gpu: GpuContext
    points: list[MeasuredPoint]
    cells: dict[tuple[int, int], list[MeasuredPoint]]
    curves: dict[int, SettingCurves]
    ref_setting: int
    scaling: ScalingFit | None
    levels: dict[int, float]
    c_w: float = 0.0
    u1: float | None = None

    def counts(self) -> list[int]:
        """Counts the model predicts: the measured ones and those the scaling curve covers."""
        return sorted(self.levels)

    def level(self, n: int) -> float:
        """``A(n)``: throughput at ``s*`` (steps/s)."""
        if n in self.levels:
            return self.levels[n]
        if self.scaling is None:
            raise KeyError(n)
        return self.scaling.rate(n)

    def efficiency(self, n: int) -> float:
        """``E(n) = A(n) / (n A(1))``; 1 when the model has no scaling curve."""
        if self.scaling is None:
            return 1.0
        return self.level(n) / (n * self.level(1))

    def nearest(self, n: int) -> int:
        """The measured count whose curve serves ``n``: nearest in ``log2``, ties to the larger."""
        return min(self.curves, key=lambda m: (abs(math.log2(m) - math.log2(n)), -m))

    def rate(self, n: int, s: int) -> float:
        """``X(n, s)`` (steps/s): the points' mean at a measured cell, else the module docstring's rule."""
        if cell := self.cells.get((n, s)):
            return statistics.fmean(p.steps_per_s or 0.0 for p in cell)
        if n in self.curves:
            return self.curves[n].rate(s)
        return self.level(n) * self.curves[self.nearest(n)].ratio(s, self.ref_setting)

    def power(self, n: int, s: int) -> float:
        """``P(n, s)`` (W per GPU) before clamping: the points' mean at a measured cell, else the rule."""
        if cell := self.cells.get((n, s)):
            return statistics.fmean(p.power_w or 0.0 for p in cell)
        if n in self.curves:
            return self.curves[n].power(s)
        q = self.curves[self.nearest(n)].dynamic_ratio(s, self.ref_setting)
        return self.gpu.idle_w + self.c_w * self.efficiency(n) * q

    def utilisation(self, n: int) -> float | None:
        """Busy fraction on ``n`` GPUs: the mean measured at that count, else ``min(1, u1 E(n))``."""
        got = [p.utilisation for p in self.points if p.gpus == n and p.utilisation is not None]
        if got:
            return statistics.fmean(got)
        return None if self.u1 is None else min(1.0, self.u1 * self.efficiency(n))

    def errors(self, n: int, s: int) -> tuple[float | None, float | None]:
        """Expected relative errors ``(throughput, power)`` at an unmeasured (n, s) (module docstring)."""
        e_n = 0.0 if n in self.curves else (self.scaling.rel_error if self.scaling else None)
        curve = self.curves[n if n in self.curves else self.nearest(n)]
        e_s = 0.0 if s in curve.measured else curve.rel_error_x
        e_p = 0.0 if s in curve.measured else curve.rel_error_p
        p = self.power(n, s)
        share = (p - self.gpu.idle_w) / p if p > 0 else 0.0
        return _hypot(e_n, e_s), _hypot(None if e_n is None else e_n * share, e_p)

    def describe(self) -> dict[str, Any]:
        """The model's parameters for the library's notes."""
        sc = self.scaling
        ref = self.curves[min(self.curves, key=lambda m: (-len(self.curves[m].measured), m))]
        return {
            "type": self.job_type,
            "gpu_type": self.gpu.name,
            "points": len(self.points),
            "settings_measured": {str(n): list(c.measured) for n, c in sorted(self.curves.items())},
            "reference_setting": self.ref_setting,
            "scaling": None
            if sc is None
            else {"x1": sc.x1, "alpha": sc.alpha, "cap": sc.cap, "counts": list(sc.counts), "rel_error": sc.rel_error},
            "c_w": self.c_w,
            "u1": self.u1,
            "k_w": None
            if not self.u1
            else {str(s): self.c_w * ref.dynamic_ratio(s, self.ref_setting) / self.u1 for s in self.gpu.settings},
        }


def _hypot(*parts: float | None) -> float | None:
    """``sqrt(sum of squares)`` of the known parts; None when none is known."""
    known = [p for p in parts if p is not None]
    return math.sqrt(math.fsum(p * p for p in known)) if known else None


def _cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation (sample standard deviation over mean); None with fewer than two values."""
    if len(values) < 2 or statistics.fmean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def _prior_curve(prior_rows: Sequence[Mapping[str, Any]]) -> dict[int, tuple[float, float]] | None:
    """The prior's setting curve at its smallest count: setting -> (steps/s, W)."""
    if not prior_rows:
        return None
    n0 = min(r["gpus"] for r in prior_rows)
    return {r["setting"]: (r["steps_per_s"], r["power_w"]) for r in prior_rows if r["gpus"] == n0}


def _prior_scaling(prior_rows: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """The prior's rates at its top setting by count (steps/s)."""
    if not prior_rows:
        return {}
    top = max(r["setting"] for r in prior_rows)
    return {r["gpus"]: r["steps_per_s"] for r in prior_rows if r["setting"] == top}


def _fit_counts(
    levels: dict[int, float], prior_rows: Sequence[Mapping[str, Any]], gpu: GpuContext
) -> ScalingFit | None:
    """The scaling curve through the measured counts' ``A(n)`` (module docstring); None when nothing scales."""
    if len(levels) >= 2:
        return fit_scaling(list(levels), list(levels.values()))
    ((n0, x0),) = levels.items()
    shape = _prior_scaling(prior_rows)
    if n0 in shape and len(shape) >= 2:
        return prior_shape_fit(shape, n0, x0)
    if gpu.alpha is not None:
        return population_fit(gpu.alpha, n0, x0)
    return None


def _mean_curve(cells: Mapping[tuple[int, int], list[MeasuredPoint]], n: int) -> dict[int, tuple[float, float]]:
    """Setting -> (mean steps/s, mean W per GPU) of the points on ``n`` GPUs."""
    return {
        s: (
            statistics.fmean(p.steps_per_s or 0.0 for p in cell),
            statistics.fmean(p.power_w or 0.0 for p in cell),
        )
        for (k, s), cell in sorted(cells.items())
        if k == n
    }


def fit_job(
    job_type: str, gpu: GpuContext, points: Sequence[MeasuredPoint], prior_rows: Sequence[Mapping[str, Any]]
) -> JobModel:
    """Fit one job type on one GPU type from its exclusive points and the prior's rows (module docstring)."""
    cells: dict[tuple[int, int], list[MeasuredPoint]] = defaultdict(list)
    for p in points:
        if p.gpus is None or p.setting is None:
            raise ValueError(f"point {p.id} has no GPU count or setting")
        cells[(p.gpus, p.setting)].append(p)
    counts = sorted({n for n, _ in cells})
    n_ref = min(counts, key=lambda n: (-sum(1 for k, _ in cells if k == n), n))
    settings = sorted(set(gpu.settings) | {s for _, s in cells})
    ref = fit_setting_curves(
        _mean_curve(cells, n_ref), settings, gpu.idle_w, _prior_curve(prior_rows), gpu.borrowed, gpu.power_limit
    )
    curves = {n_ref: ref}
    for n in counts:
        if n != n_ref:
            curves[n] = fit_setting_curves(
                _mean_curve(cells, n), settings, gpu.idle_w, ref.as_prior(), gpu.borrowed, gpu.power_limit
            )
    s_star = ref.top
    levels = {n: curves[n].rate(s_star) for n in counts}
    scaling = _fit_counts(levels, prior_rows, gpu)
    table_counts = {r["gpus"] for r in prior_rows} or {
        1 << i for i in range(gpu.gpus_per_node.bit_length()) if 1 << i <= gpu.gpus_per_node
    }
    model = JobModel(job_type, gpu, list(points), dict(cells), curves, s_star, scaling, dict(levels))
    if scaling is not None:
        model.levels |= {n: scaling.rate(n) for n in table_counts if n not in levels}
    samples = [(model.efficiency(n), curves[n].power(s_star) - gpu.idle_w) for n in counts]
    model.c_w = fit_dynamic_power(samples)
    busy = [(model.efficiency(p.gpus or 0), p.utilisation) for p in points if p.utilisation is not None]
    if busy:
        model.u1 = fit_busy_fraction([(e, u) for e, u in busy if u is not None])
    return model


def table_entries(model: JobModel) -> tuple[list[dict[str, Any]], list[str]]:
    """The model's profile entries over its counts (placeable on a node) and the GPU type's settings.

    Also returns the notes for measured cells left out of the table (a setting the GPU type does not list, or
    a count no node can place).
    """
    gpu = model.gpu
    ids = [p.id for p in model.points]
    rows, notes = [], []
    for (n, s), cell in sorted(model.cells.items()):
        if s not in gpu.settings or not gpu_count_fits_type(n, gpu.gpus_per_node):
            why = "setting not listed" if s not in gpu.settings else "count not placeable"
            notes.append(
                f"{model.job_type} on {n} {gpu.name} at {s}: {len(cell)} point(s) used for the fit, not tabled ({why})"
            )
    for n in model.counts():
        if gpu_count_fits_type(n, gpu.gpus_per_node):
            rows += [_entry(model, n, s, ids) for s in gpu.settings]
    return rows, notes


def _entry(model: JobModel, n: int, s: int, ids: list[str]) -> dict[str, Any]:
    """One profile entry with its basis (module docstring)."""
    gpu = model.gpu
    x, p = model.rate(n, s), model.power(n, s)
    row: dict[str, Any] = {"type": model.job_type, "gpu_type": gpu.name, "gpus": n, "setting": s}
    u = model.utilisation(n)
    if u is not None:
        row["utilisation"] = u
    if cell := model.cells.get((n, s)):
        err = worst(_cv([q.steps_per_s or 0.0 for q in cell]), _cv([q.power_w or 0.0 for q in cell]))
        basis = make_basis("measured", [q.id for q in cell], err, f"mean of {len(cell)} point(s)")
    else:
        ex, ep = model.errors(n, s)
        m = n if n in model.curves else model.nearest(n)
        scaled = "" if n in model.curves else f"A({n}) = {model.level(n):.6g} steps/s from the scaling; "
        sc = model.scaling.how if model.scaling else "no scaling curve"
        reason = (
            f"{scaled}setting curve of {m} GPU(s): {model.curves[m].how}; scaling: {sc}; power: P_idle "
            f"{gpu.idle_w:.4g} W + c E(n) q(s), c = {model.c_w:.4g} W"
        )
        basis = make_basis("fitted", ids, worst(ex, ep), reason)
        if p < gpu.idle_w:
            basis["reason"] += f"; power {p:.4g} W raised to idle {gpu.idle_w:.4g} W"
            p = gpu.idle_w
        elif gpu.power_limit and p > s:
            basis["reason"] += f"; power {p:.4g} W lowered to the {s} W limit"
            p = float(s)
    row |= {"steps_per_s": x, "power_w": p, "basis": basis}
    return row
