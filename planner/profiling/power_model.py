"""Per-GPU power across GPU counts, and throughput and power across settings (power limits).

Across counts (one job type on one GPU type at a setting, W per GPU)::

    P(n) = P_idle + u(n) k,    u(n) = u1 E(n),    E(n) = X(n) / (n X(1))

``u(n)`` is the busy fraction (``utilization.gpu``): a GPU computes for a share of the time and idles, waiting on
gradients or data, the rest, so the busy fraction follows the parallel efficiency ``E(n)`` of the fitted scaling
curve (:mod:`planner.profiling.scaling`); ``u1`` is the busy fraction at full efficiency and ``k`` (W) the power a
fully busy GPU draws above idle at that setting. Only the product ``c = k u1`` (W) matters for power; it is fitted
by least squares through the origin, ``c = sum(y_i w_i) / sum(w_i^2)`` with ``y_i = P_i - P_idle`` and
``w_i = E(n_i)`` (:func:`fit_dynamic_power`). Where points also measure utilisation,
``u1 = sum(u_i E(n_i)) / sum(E(n_i)^2)`` (:func:`fit_busy_fraction`) and ``k = c / u1``; without it ``u1`` is not
identifiable and only ``c`` is reported. Issue 14 measured per-GPU power falling 42% from 1 to 8 GPUs while the
speedup at 8 was 3.28 (``E(8) = 0.41``): the model's fall is ``(1 - E(8)) (P1 - P_idle) / P1``.

Across settings (:func:`fit_setting_curves`, one job type on ``n`` GPUs), the mean throughput ``X(s)`` (steps/s)
and power ``P(s)`` (W per GPU) at the measured settings are the knots of a piecewise-linear curve:

* between measured settings: linear interpolation;
* outside them, when there is a prior curve (the library's entry of the job on this GPU type, or the job's own
  curve at another count): anchored at the nearest measured setting,
  ``X(s) = X(s_end) X_prior(s) / X_prior(s_end)`` and, for the power above idle,
  ``P(s) = P_idle + (P(s_end) - P_idle) (P_prior(s) - P_idle) / (P_prior(s_end) - P_idle)``, kept in
  ``[P_idle, s]``;
* otherwise clamped: above the highest measured setting ``X`` and ``P`` stay; below the lowest ``s_lo`` a GPU
  capped at ``s`` W draws at most ``s``, ``P(s) = min(P(s_lo), s)``, and each step costs the same energy,
  ``X(s) = X(s_lo) P(s) / P(s_lo)``.

Both are monotone where the knots are. Expected error at an unmeasured setting: with three or more measured
settings, leave-one-setting-out (each one predicted from the others by the rules above, the largest
``|predicted / measured - 1|``, separately for ``X`` and ``P``); with fewer, :func:`borrowed_curve_error` of the
library's curves on the GPU type.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Curve = Mapping[int, tuple[float, float]]
"""Setting -> (throughput in steps/s, power in W per GPU)."""


def interpolate(knots: Sequence[tuple[int, float]], s: float) -> float:
    """Piecewise-linear value at ``s`` through ``knots`` (sorted by setting), constant beyond the ends."""
    xs = [k for k, _ in knots]
    i = bisect.bisect_left(xs, s)
    if i < len(xs) and xs[i] == s:
        return knots[i][1]
    if i == 0:
        return knots[0][1]
    if i == len(xs):
        return knots[-1][1]
    (s0, v0), (s1, v1) = knots[i - 1], knots[i]
    return v0 + (v1 - v0) * (s - s0) / (s1 - s0)


def _anchored_power(p_end: float, prior_s: float, prior_end: float, idle_w: float) -> float:
    """``P_idle + (P(s_end) - P_idle) (P_prior(s) - P_idle) / (P_prior(s_end) - P_idle)`` (W).

    The prior's dynamic power ratio; its plain power ratio when the prior draws no more than idle at ``s_end``.
    """
    if prior_end - idle_w > 0:
        return idle_w + (p_end - idle_w) * (prior_s - idle_w) / (prior_end - idle_w)
    return p_end * prior_s / prior_end


def _extend(
    measured: Curve, settings: Sequence[int], prior: Curve | None, power_limit: bool, idle_w: float
) -> dict[int, tuple[float, float]]:
    """Measured knots plus one knot per setting outside the measured range (module docstring rules)."""
    out = dict(measured)
    lo, hi = min(measured), max(measured)
    for s in settings:
        if lo <= s <= hi:
            continue
        end = lo if s < lo else hi
        x_end, p_end = measured[end]
        if prior is not None and s in prior and end in prior:
            p = max(idle_w, _anchored_power(p_end, prior[s][1], prior[end][1], idle_w))
            out[s] = (x_end * prior[s][0] / prior[end][0], min(p, float(s)) if power_limit else p)
        elif s > hi:
            out[s] = (x_end, p_end)
        else:
            p = min(p_end, float(s)) if power_limit else p_end
            out[s] = (x_end * p / p_end, p)
    return out


def _predict(
    measured: Curve, s: int, settings: Sequence[int], prior: Curve | None, power_limit: bool, idle_w: float
) -> tuple[float, float]:
    """``(X(s), P(s))`` from the measured knots by the module docstring's rules."""
    knots = _extend(measured, [*settings, s], prior, power_limit, idle_w)
    ordered = sorted(knots)
    return (
        interpolate([(k, knots[k][0]) for k in ordered], s),
        interpolate([(k, knots[k][1]) for k in ordered], s),
    )


@dataclass(frozen=True, slots=True)
class SettingCurves:
    """Throughput and power across settings on one GPU count (module docstring).

    ``measured`` the settings with points; ``rel_error_x`` / ``rel_error_p`` the expected relative errors at other
    settings (None when nothing estimates them); ``how`` a one-line description.
    """

    knots: tuple[tuple[int, float, float], ...]
    measured: tuple[int, ...]
    top: int
    idle_w: float
    rel_error_x: float | None
    rel_error_p: float | None
    how: str

    def rate(self, s: int) -> float:
        """``X(s)`` (steps/s)."""
        return interpolate([(k, x) for k, x, _ in self.knots], s)

    def power(self, s: int) -> float:
        """``P(s)`` (W per GPU)."""
        return interpolate([(k, p) for k, _, p in self.knots], s)

    def ratio(self, s: int, ref: int) -> float:
        """``r(s) = X(s) / X(ref)`` (dimensionless)."""
        return self.rate(s) / self.rate(ref)

    def dynamic_ratio(self, s: int, ref: int) -> float:
        """``q(s) = (P(s) - P_idle) / (P(ref) - P_idle)``; 1 when ``ref`` draws no more than idle."""
        top = self.power(ref) - self.idle_w
        return (self.power(s) - self.idle_w) / top if top > 0 else 1.0

    def as_prior(self) -> dict[int, tuple[float, float]]:
        """The knots as a prior curve for another count's :func:`fit_setting_curves`."""
        return {s: (x, p) for s, x, p in self.knots}


def fit_setting_curves(
    measured: Curve,
    settings: Sequence[int],
    idle_w: float,
    prior: Curve | None = None,
    borrowed: tuple[float, float] | None = None,
    power_limit: bool = True,
) -> SettingCurves:
    """Curves through ``measured`` (setting -> (X, P), one or more), extended over ``settings``.

    ``prior`` is the job's prior curve on this GPU type (any count), ``borrowed`` the (X, P) expected errors of
    a borrowed curve, ``power_limit`` whether settings are power limits in W (then ``P(s) <= s`` below the
    measured range).
    """
    if not measured:
        raise ValueError("fit_setting_curves needs at least one measured setting")
    knots = _extend(measured, settings, prior, power_limit, idle_w)
    rows = tuple((s, knots[s][0], knots[s][1]) for s in sorted(knots))
    done = tuple(sorted(measured))
    if len(done) >= 3:
        miss_x, miss_p = [], []
        for s in done:
            rest = {k: v for k, v in measured.items() if k != s}
            x, p = _predict(rest, s, settings, prior, power_limit, idle_w)
            miss_x.append(abs(x / measured[s][0] - 1.0))
            miss_p.append(abs(p / measured[s][1] - 1.0))
        ex: float | None = max(miss_x)
        ep: float | None = max(miss_p)
        how_error = "leave-one-setting-out"
    else:
        ex, ep = borrowed if borrowed is not None else (None, None)
        how_error = "fewer than 3 settings measured: the library's borrowed-curve error"
    outside = "the prior's curve" if prior else "clamped ends (P <= s below, same energy per step)"
    shown = "n/a" if ex is None or ep is None else f"{ex:.3g} (X), {ep:.3g} (P)"
    how = (
        f"settings measured {list(done)}, interpolated between them, outside: {outside}; expected error {shown} "
        f"({how_error})"
    )
    return SettingCurves(rows, done, done[-1], idle_w, ex, ep, how)


def borrowed_curve_error(curves: Sequence[Curve]) -> tuple[float, float] | None:
    """How wrong a job's curve is when it borrows another job's: ``(error of X, error of P)``.

    For every ordered pair of distinct curves (a, b) over their common settings, both as ratios to the highest
    common setting: ``max_s |r_b(s) / r_a(s) - 1|`` for throughput and the same for power; the median over pairs.
    None with fewer than two distinct curves.
    """
    shapes: list[tuple[tuple[tuple[int, float, float], ...], Curve]] = []
    for curve in curves:
        top = max(curve)
        shape = {s: (x / curve[top][0], p / curve[top][1]) for s, (x, p) in curve.items()}
        rounded = tuple(sorted((s, round(x, 9), round(p, 9)) for s, (x, p) in shape.items()))
        if all(rounded != other[0] for other in shapes):
            shapes.append((rounded, curve))
    ex, ep = [], []
    for _, a in shapes:
        for _, b in shapes:
            if a is b:
                continue
            common = sorted(set(a) & set(b))
            if len(common) < 2:
                continue
            top = common[-1]
            ex.append(max(abs((b[s][0] / b[top][0]) / (a[s][0] / a[top][0]) - 1.0) for s in common))
            ep.append(max(abs((b[s][1] / b[top][1]) / (a[s][1] / a[top][1]) - 1.0) for s in common))
    if not ex:
        return None
    return statistics.median(ex), statistics.median(ep)


def fit_dynamic_power(samples: Sequence[tuple[float, float]]) -> float:
    """``c = sum(y_i w_i) / sum(w_i^2)`` (W) from ``(w_i, y_i)``: ``w = E(n)``, ``y = P - P_idle``."""
    den = sum(w * w for w, _ in samples)
    if den <= 0:
        raise ValueError("no sample with a positive weight E(n) q(s)")
    return sum(w * y for w, y in samples) / den


def fit_busy_fraction(samples: Sequence[tuple[float, float]]) -> float:
    """``u1 = sum(u_i E_i) / sum(E_i^2)`` from ``(E_i, u_i)`` (dimensionless)."""
    den = sum(e * e for e, _ in samples)
    if den <= 0:
        raise ValueError("no sample with a positive efficiency")
    return sum(e * u for e, u in samples) / den
