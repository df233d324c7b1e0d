"""Pair rates from observation, Gavel's as an untrusted prior.

A ``pair`` point measures one side of two job types time-sharing the same ``n`` GPUs of one type at setting
``s``. Its observed rate is::

    rho_obs = shared steps/s / exclusive steps/s          (dimensionless, same type, GPU type, n and s)

with the exclusive rate from exclusive points at that configuration, else from the fitted table. ``m``
observations of one side are combined with the prior's ``rho_0`` (Gavel, in the shipped library) by shrinkage::

    rho = (w0 rho_0 + sum(rho_obs_i)) / (w0 + m),   w0 = PRIOR_WEIGHT (0 without a prior)

``w0 = 0.25``: the prior counts as a quarter of one observation, so one observation moves the estimate 80% of the
way; issue 14 measured Gavel's pair rates 0.71 and 1.00 (sum 1.71) against 0.83 and 0.21-0.27 (sum 1.07), so the
prior is kept only as a tie-breaker. Rates above 1 (a job faster when sharing) are capped at 1.

Expected relative error of an observed side, combined in quadrature: the exclusive rate's expected error, the
standard error of the mean observation ``sd / (mean sqrt(m))`` (with ``m >= 2``), and the shrinkage's pull
``|rho - mean rho_obs| / mean rho_obs``. A side nobody observed keeps the prior with :data:`PRIOR_PAIR_ERROR`.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wattplan.planner.profiling.basis import BasisKind, make_basis, worst
from wattplan.planner.profiling.points import MeasuredPoint

PRIOR_WEIGHT = 0.25
"""Weight of the prior's pair rate, in observations (see the module docstring)."""

PRIOR_PAIR_ERROR = 0.37
"""Expected relative error of a pair rate nobody observed: issue 14 measured Gavel's pair-rate sum 1.71 against
1.07 on a V100 node, ``1 - 1.07 / 1.71 = 0.37``."""


@dataclass(frozen=True, slots=True)
class SideEstimate:
    """One side's rate ``rho`` (capped at 1), its expected relative error and a one-line description."""

    rho: float
    rel_error: float | None
    how: str


def observed_rate(shared_steps_per_s: float, exclusive_steps_per_s: float) -> float:
    """``rho_obs = shared / exclusive`` (dimensionless)."""
    if exclusive_steps_per_s <= 0:
        raise ValueError("the exclusive rate must be positive")
    return shared_steps_per_s / exclusive_steps_per_s


def shrink(prior: float | None, observations: Sequence[float], prior_weight: float = PRIOR_WEIGHT) -> float:
    """``(w0 rho_0 + sum(rho_obs)) / (w0 + m)``; ``w0 = 0`` when there is no prior."""
    if not observations:
        raise ValueError("shrink needs at least one observation")
    w0 = 0.0 if prior is None else prior_weight
    return (w0 * (prior or 0.0) + math.fsum(observations)) / (w0 + len(observations))


def estimate_side(
    prior: float | None, observations: Sequence[float], exclusive_error: float | None = 0.0
) -> SideEstimate:
    """A side's rate from its observations and the prior (module docstring), capped at 1.

    The expected error is None for a single observation against a measured exclusive rate without a prior
    (nothing estimates it).
    """
    mean = statistics.fmean(observations)
    rho = shrink(prior, observations)
    parts = [exclusive_error or 0.0, abs(rho - mean) / mean if mean > 0 else 0.0]
    if len(observations) >= 2 and mean > 0:
        parts.append(statistics.stdev(observations) / (mean * math.sqrt(len(observations))))
    error = math.sqrt(math.fsum(e * e for e in parts)) if len(observations) >= 2 or any(parts) else None
    prior_text = "no prior" if prior is None else f"prior {prior:.4g} at weight {PRIOR_WEIGHT}"
    how = f"{len(observations)} observation(s), mean {mean:.4g}, {prior_text} -> {rho:.4g}"
    if rho > 1.0:
        how += ", capped at 1"
        rho = 1.0
    return SideEstimate(rho, error, how)


def prior_side(prior: float) -> SideEstimate:
    """A side nobody observed: the prior's rate with :data:`PRIOR_PAIR_ERROR`."""
    return SideEstimate(prior, PRIOR_PAIR_ERROR, f"unobserved: prior {prior:.4g} (expected error {PRIOR_PAIR_ERROR})")


@dataclass(frozen=True, slots=True)
class Exclusive:
    """The exclusive rate a pair point is divided by.

    ``rate`` in steps/s, its expected relative error, the point ids behind it, and whether it is measured (points
    at that very configuration) or predicted.
    """

    rate: float
    rel_error: float | None
    ids: tuple[str, ...]
    measured: bool


ExclusiveLookup = Callable[[str, str, int, int], Exclusive | None]
"""(job type, GPU type, n, setting) -> the exclusive rate there, or None when the library has none."""

_Obs = tuple[float, Exclusive, str]  # (rho_obs, exclusive rate used, pair point id)


def _observations(
    points: Sequence[MeasuredPoint], exclusive: ExclusiveLookup
) -> tuple[dict[tuple[str, str, str, int], dict[str, list[_Obs]]], list[str]]:
    """Observed rates by pair key and side (``a <= b``; a pair of one type feeds both sides)."""
    obs: dict[tuple[str, str, str, int], dict[str, list[_Obs]]] = defaultdict(lambda: {"a": [], "b": []})
    notes = []
    for p in points:
        if p.job_type is None or p.partner_type is None or p.gpus is None or p.setting is None:
            continue
        a, b = sorted((p.job_type, p.partner_type))
        excl = exclusive(p.job_type, p.gpu_type, p.gpus, p.setting)
        if excl is None or excl.rate <= 0:
            notes.append(
                f"pair point {p.id} ({p.job_type} with {p.partner_type} on {p.gpus} {p.gpu_type} at {p.setting}): "
                "no exclusive rate for that configuration, not used"
            )
            continue
        rho = observed_rate(p.steps_per_s or 0.0, excl.rate)
        for side in ("a", "b") if a == b else ("a" if p.job_type == a else "b",):
            obs[(a, b, p.gpu_type, p.gpus)][side].append((rho, excl, p.id))
    return obs, notes


def fit_pairs(
    prior_pairs: Sequence[dict[str, Any]], points: Sequence[MeasuredPoint], exclusive: ExclusiveLookup
) -> tuple[list[dict[str, Any]], list[str]]:
    """Pair entries: the prior's, each observed side re-estimated, and new pairs with both sides observed.

    A pair is keyed ``(a, b, gpu_type, n)`` with ``a <= b`` as strings (the library's rule). An entry is
    ``measured`` when it has no prior and every exclusive rate behind it is measured, else ``fitted``; prior
    entries nobody observed keep their basis or get a ``prior`` one. Returns the entries, sorted by key, and notes
    on pair points that could not be used.
    """
    obs, notes = _observations(points, exclusive)
    prior_by_key = {(q["a"], q["b"], q["gpu_type"], q["gpus"]): q for q in prior_pairs}
    out = []
    for key in sorted(set(prior_by_key) | set(obs)):
        q = prior_by_key.get(key)
        seen = obs.get(key)
        if seen is None:
            assert q is not None
            out.append(q if "basis" in q else q | {"basis": _prior_basis()})
            continue
        sides: dict[str, SideEstimate] = {}
        for side in ("a", "b"):
            prior = None if q is None else float(q[f"rho_{side}"])
            if seen[side]:
                err = worst(*(e.rel_error for _, e, _ in seen[side]))
                sides[side] = estimate_side(prior, [r for r, _, _ in seen[side]], err)
            elif prior is not None:
                sides[side] = prior_side(prior)
        if len(sides) < 2:
            notes.append(f"pair {key}: one side observed, no prior entry for the other: not added")
            continue
        used = seen["a"] + seen["b"]
        ids = [i for _, e, pid in used for i in (pid, *e.ids)]
        kind: BasisKind = "measured" if q is None and all(e.measured for _, e, _ in used) else "fitted"
        reason = f"rho = shared / exclusive steps/s; rho_a: {sides['a'].how}; rho_b: {sides['b'].how}"
        a, b, g, n = key
        out.append(
            {"a": a, "b": b, "gpu_type": g, "gpus": n, "rho_a": sides["a"].rho, "rho_b": sides["b"].rho}
            | {"basis": make_basis(kind, ids, worst(sides["a"].rel_error, sides["b"].rel_error), reason)}
        )
    return out, notes


def _prior_basis() -> dict[str, Any]:
    return make_basis(
        "prior",
        [],
        PRIOR_PAIR_ERROR,
        f"prior (Gavel's co-location throughputs), not observed; expected error {PRIOR_PAIR_ERROR} "
        "(issue 14: Gavel's pair-rate sum 1.71 against 1.07 measured)",
    )
