"""Multi-GPU scaling of one job type on one GPU type: Amdahl's law with an optional data-loading cap.

Model (``X`` whole-job throughput in steps/s on ``n`` GPUs, at one setting)::

    X(n) = min(X1 * n / (1 + alpha * (n - 1)), X_cap)

Below the cap the time per step is ``t(n) = 1 / X(n) = t1 * ((1 - alpha) / n + alpha)`` (s/step): a part
``1 - alpha`` of a 1-GPU step divides over the GPUs, a part ``alpha`` (gradient exchange, synchronisation) does
not. ``0 <= alpha <= 1``: 0 is linear scaling, 1 no gain at all; ``alpha < 0`` (superlinear) and ``alpha > 1``
(slower with more GPUs) are excluded. ``X_cap`` (steps/s) is a rate no count exceeds: the input pipeline
saturates (issue 14 measured VGG-16 speedups 1.85 / 3.24 / 3.28 at 2 / 4 / 8 GPUs). Two parameters (three with
the cap) are identifiable from two (three) GPU counts; Pollux's compute / communication / synchronisation terms
need more counts than users measure.

Fit: ``t(n) = c + d / n`` is linear in ``c = t1 alpha`` and ``d = t1 (1 - alpha)`` (s/step); weighted least
squares on relative residuals, ``min sum ((c + d / n_i - t_i) / t_i)^2``, so a 10% miss counts the same at every
count. A free solution with ``c < 0`` (superlinear) is refitted with ``c = 0`` (linear), one with ``d < 0`` with
``d = 0`` (flat). Then ``X1 = 1 / (c + d)`` and ``alpha = c / (c + d)``.

Cap: tried with three or more distinct counts. Capping the top ``j >= 1`` counts, the counts below (at least two)
fit Amdahl and the cap is the relative least-squares rate of the capped points,
``1 / X_cap = sum(1 / t_i) / sum(1 / t_i^2)``. The capped model is used only when the plain fit misses some point
by more than :data:`CAP_TOLERANCE` and the capped fit's worst miss is smaller; among the splits the one with the
least sum of squared relative residuals wins.

Expected error of a prediction at an unmeasured count: with three or more counts, leave-one-count-out (each
count predicted from the others by the same rule; the largest ``|predicted / measured - 1|``); with fewer none can
be left out, and :data:`SPEEDUP_PRIOR_ERROR` is used.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

CAP_TOLERANCE = 0.05
"""Worst relative miss of the plain Amdahl fit above which a data-loading cap is tried (5%, measurement noise)."""

SPEEDUP_PRIOR_ERROR = 0.26
"""Expected relative error of a speedup nobody validated: issue 14's worst measured error of the shipped
library's speedups (8 V100s: 4.12 predicted, 3.28 measured, ``4.12 / 3.28 - 1 = 0.256``)."""


@dataclass(frozen=True, slots=True)
class ScalingFit:
    """A fitted curve ``X(n) = min(x1 n / (1 + alpha (n - 1)), cap)`` (steps/s) and how it was obtained.

    ``counts`` are the distinct measured counts, ``rel_error`` the expected relative error at an unmeasured
    count (see the module docstring), ``how`` a one-line description for a basis reason. ``table``, when set,
    gives the rates at its counts in place of the formula (a prior's shape through one measurement).
    """

    x1: float
    alpha: float
    cap: float | None
    counts: tuple[int, ...]
    rel_error: float
    how: str
    table: tuple[tuple[int, float], ...] = ()

    def rate(self, n: int) -> float:
        """``X(n)`` in steps/s."""
        for count, x in self.table:
            if count == n:
                return x
        return amdahl(n, self.x1, self.alpha, self.cap)

    def efficiency(self, n: int) -> float:
        """Parallel efficiency ``E(n) = X(n) / (n X(1))`` (dimensionless, 1 at one GPU)."""
        return self.rate(n) / (n * self.rate(1))


def amdahl(n: int, x1: float, alpha: float, cap: float | None = None) -> float:
    """``min(x1 n / (1 + alpha (n - 1)), cap)`` (steps/s)."""
    x = x1 * n / (1.0 + alpha * (n - 1))
    return x if cap is None else min(x, cap)


def _fit_times(counts: Sequence[int], times: Sequence[float]) -> tuple[float, float]:
    """``(c, d)`` >= 0 minimising ``sum(((c + d / n_i) - t_i) / t_i)^2`` (see the module docstring)."""
    n = np.asarray(counts, dtype=float)
    t = np.asarray(times, dtype=float)
    if len(set(counts)) >= 2:
        design = np.column_stack([1.0 / t, 1.0 / (n * t)])
        (c, d), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
        if c >= 0 and d >= 0:
            return float(c), float(d)
        if c < 0:
            a = 1.0 / (n * t)
            return 0.0, float(a.sum() / (a * a).sum())
    return float((1.0 / t).sum() / (1.0 / t**2).sum()), 0.0


def _params(c: float, d: float) -> tuple[float, float]:
    """``(X1, alpha)`` from ``t(n) = c + d / n``."""
    return 1.0 / (c + d), c / (c + d)


def _worst_miss(counts: Sequence[int], rates: Sequence[float], x1: float, alpha: float, cap: float | None) -> float:
    return max(abs(amdahl(n, x1, alpha, cap) / x - 1.0) for n, x in zip(counts, rates, strict=True))


def _sse(counts: Sequence[int], rates: Sequence[float], x1: float, alpha: float, cap: float | None) -> float:
    return math.fsum((x / amdahl(n, x1, alpha, cap) - 1.0) ** 2 for n, x in zip(counts, rates, strict=True))


def _fit_once(counts: Sequence[int], rates: Sequence[float]) -> tuple[float, float, float | None]:
    """``(X1, alpha, cap)`` of the rule in the module docstring, without error estimate."""
    times = [1.0 / x for x in rates]
    x1, alpha = _params(*_fit_times(counts, times))
    distinct = sorted(set(counts))
    if len(distinct) < 3 or _worst_miss(counts, rates, x1, alpha, None) <= CAP_TOLERANCE:
        return x1, alpha, None
    best: tuple[float, float, float, float] | None = None  # (sse, x1, alpha, cap)
    for j in range(1, len(distinct) - 1):
        top = set(distinct[-j:])
        below = [(n, t) for n, t in zip(counts, times, strict=True) if n not in top]
        above = [t for n, t in zip(counts, times, strict=True) if n in top]
        bx1, balpha = _params(*_fit_times([n for n, _ in below], [t for _, t in below]))
        cap = math.fsum(1.0 / t**2 for t in above) / math.fsum(1.0 / t for t in above)
        sse = _sse(counts, rates, bx1, balpha, cap)
        if best is None or sse < best[0]:
            best = (sse, bx1, balpha, cap)
    assert best is not None
    _, bx1, balpha, cap = best
    if _worst_miss(counts, rates, bx1, balpha, cap) < _worst_miss(counts, rates, x1, alpha, None):
        return bx1, balpha, cap
    return x1, alpha, None


def fit_scaling(counts: Sequence[int], rates: Sequence[float]) -> ScalingFit:
    """Fit Amdahl (and a cap where it helps) to rates ``X_i`` (steps/s) measured at ``counts`` (two or more).

    Several rates at one count all enter the least squares. Raises ValueError with fewer than two distinct
    counts or a rate that is not positive.
    """
    if len(set(counts)) < 2:
        raise ValueError("fit_scaling needs rates at two or more GPU counts")
    if any(not (x > 0 and math.isfinite(x)) for x in rates):
        raise ValueError("rates must be positive and finite")
    x1, alpha, cap = _fit_once(counts, rates)
    distinct = sorted(set(counts))
    if len(distinct) >= 3:
        misses = []
        for left_out in distinct:
            keep = [(n, x) for n, x in zip(counts, rates, strict=True) if n != left_out]
            lx1, lalpha, lcap = _fit_once([n for n, _ in keep], [x for _, x in keep])
            measured = [x for n, x in zip(counts, rates, strict=True) if n == left_out]
            misses += [abs(amdahl(left_out, lx1, lalpha, lcap) / x - 1.0) for x in measured]
        error, how_error = max(misses), "leave-one-count-out"
    else:
        error, how_error = SPEEDUP_PRIOR_ERROR, "two counts, none to leave out: issue 14's speedup error"
    shown = f", cap {cap:.6g} steps/s" if cap is not None else ""
    how = (
        f"Amdahl fit on counts {distinct}: X1 {x1:.6g} steps/s, alpha {alpha:.4g}{shown}; expected error "
        f"{error:.3g} ({how_error})"
    )
    return ScalingFit(x1, alpha, cap, tuple(distinct), error, how)


def monotone_sublinear(values: Mapping[int, float]) -> dict[int, float]:
    """Rates made non-decreasing and at most linear between adjacent counts (steps/s).

    In ascending count order: ``v'(n_0) = v(n_0)`` and
    ``v'(n_k) = min(max(v(n_k), v'(n_(k-1))), v'(n_(k-1)) * n_k / n_(k-1))``.
    """
    out: dict[int, float] = {}
    prev: tuple[int, float] | None = None
    for n in sorted(values):
        v = values[n]
        if prev is not None:
            pn, pv = prev
            v = min(max(v, pv), pv * n / pn)
        out[n] = v
        prev = (n, v)
    return out


def prior_shape_fit(prior: Mapping[int, float], count: int, rate: float) -> ScalingFit:
    """One measured count: the prior's curve, made :func:`monotone_sublinear`, scaled through the measurement.

    ``X(n) = rate * v'(n) / v'(count)`` (steps/s) at the prior's counts (the fit's ``table``); between or beyond
    them the Amdahl curve through the smallest and largest of those rates. The expected error is
    :data:`SPEEDUP_PRIOR_ERROR`. ``prior`` needs ``count``.
    """
    shape = monotone_sublinear(prior)
    scale = rate / shape[count]
    table = tuple((n, v * scale) for n, v in sorted(shape.items()))
    (lo, x_lo), (hi, x_hi) = table[0], table[-1]
    x1, alpha = _through(lo, x_lo, hi, x_hi)
    how = (
        f"one measured count ({count} GPUs): the prior's shape (made non-decreasing, at most linear) through it; "
        f"expected error {SPEEDUP_PRIOR_ERROR} (issue 14's speedup error of the prior)"
    )
    return ScalingFit(x1, alpha, None, (count,), SPEEDUP_PRIOR_ERROR, how, table)


def _through(n_a: int, x_a: float, n_b: int, x_b: float) -> tuple[float, float]:
    """``(X1, alpha)`` of the Amdahl curve through two points (one point: linear from it)."""
    if n_a == n_b:
        return x_a / n_a, 0.0
    c, d = _fit_times([n_a, n_b], [1.0 / x_a, 1.0 / x_b])
    return _params(c, d)


def population_alpha(curves: Sequence[Mapping[int, float]]) -> float | None:
    """Median ``alpha`` of plain Amdahl fits (no cap) to curves with two or more counts, made monotone first.

    Each curve is :func:`monotone_sublinear` first, so a superlinear prior cannot pull the median below 0.
    """
    alphas = []
    for curve in map(monotone_sublinear, curves):
        if len(curve) >= 2:
            alphas.append(_params(*_fit_times(list(curve), [1.0 / x for x in curve.values()]))[1])
    return statistics.median(alphas) if alphas else None


def population_fit(alpha: float, count: int, rate: float) -> ScalingFit:
    """A new job type measured at one count: the population's median ``alpha`` through its rate."""
    x1 = rate * (1.0 + alpha * (count - 1)) / count
    how = (
        f"one measured count ({count} GPUs), no prior of its own: the library's median alpha {alpha:.4g} through "
        f"it; expected error {SPEEDUP_PRIOR_ERROR} (issue 14's speedup error)"
    )
    return ScalingFit(x1, alpha, None, (count,), SPEEDUP_PRIOR_ERROR, how)
