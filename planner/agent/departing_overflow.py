"""The share of a cycle's GPUs asked for that find none free, counting the GPUs running jobs free within the cycle.

:mod:`planner.agent.node_power`'s reserve counts the free GPUs ``C`` at the cycle's start only: the GPUs the
arrivals ``A`` ask for beyond them, ``E[(A - C)+]``, wait for a boot. Running jobs that end within the cycle free
GPUs before later arrivals come, so fewer wait. With ``Fr(t)`` the GPUs freed by time ``t`` (each running job's
GPUs at its expected end) and arrivals that find no free GPU sent to a booting node (Slurm boots one for a job no
powered node fits, so they take no powered GPU), the GPUs that wait are the reflected overflow

    U(C) = max over t in [0, c] of (A(t) - Fr(t) - C)+,

and the reserve asks ``E[U(C)] / E[A(c)] <= q``. ``Fr`` is a step function, so the maximum is taken at the end of
each stretch between departures, where ``A`` is largest and ``Fr`` has not grown yet: with epochs
``0 = s_0 < s_1 < ... < s_m < s_{m+1} = c`` and ``F_i`` freed by ``s_i``, ``U(C) = (M - C)+`` with
``M = max_i (A(s_{i+1}) - F_i)``. ``A`` is compound Poisson with independent increments (``mu (s_{i+1} - s_i) / c``
jobs over stretch ``i``, sizes ``p_g``: Panjer's recursion), so ``P(M < L)`` is the chance the path stays below the
staircase ``L + F_i``: a dynamic programme over the stretches, one row per level ``L``, killing the mass that
reaches the staircase. ``E[U(C)] = sum_{L > C} P(M >= L)``, summed from the top level down, where
``E[(A(c) - L)+]`` is below :data:`TAIL` of ``E[A(c)]`` (``M <= A(c)``).

Departure times are rounded up to a grid of ``epochs`` stretches of the cycle (a job's GPUs counted free later than
expected, never earlier; :data:`planner.agent.node_power.EPOCHS`), which bounds the work at ``epochs`` matrix
products of about ``L x L``. With no
departure within the cycle ``M = A(c)`` and the share is :func:`planner.agent.node_power.overflow_shares`'.
Jobs that arrive within the cycle are taken to hold their GPUs to its end.

Kept apart from :mod:`planner.agent.node_power`, which imports no numpy (the suspend program imports it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

TAIL = 1e-9
"""Levels are summed up to where ``E[(A(c) - L)+]`` is below this share of ``E[A(c)]``."""


def compound_pmf(shares: dict[int, float], jobs: float, upto: int) -> np.ndarray:
    """``[P(A = m) for m in 0..upto]``: ``jobs`` Poisson jobs, each of ``g`` GPUs with chance ``shares[g]``.

    Panjer's recursion ``f_0 = exp(-mu)``, ``f_m = (mu / m) sum_g g p_g f_{m-g}`` (``mu = jobs``).
    """
    f = np.zeros(upto + 1)
    f[0] = math.exp(-jobs)
    for m in range(1, upto + 1):
        f[m] = jobs / m * sum(g * p * f[m - g] for g, p in shares.items() if g <= m)
    return f


def _stretches(cycle_s: float, departures: Sequence[tuple[float, int]], epochs: int) -> list[tuple[float, int]]:
    """``[(length s, GPUs freed by its start)]`` of the stretches between the departures, rounded up to the grid."""
    step = cycle_s / epochs
    freed_at: Counter[int] = Counter()
    for t, gpus in departures:
        if gpus > 0 and t < cycle_s:
            freed_at[max(0, math.ceil(t / step - 1e-9))] += gpus
    stretches, freed, start = [], freed_at.get(0, 0), 0
    for k in sorted(e for e in freed_at if 0 < e < epochs):
        stretches.append(((k - start) * step, freed))
        freed += freed_at[k]
        start = k
    stretches.append(((epochs - start) * step, freed))
    return stretches


def departing_overflow_shares(
    sizes: Counter[int],
    jobs_per_cycle: float,
    cycle_s: float,
    departures: Sequence[tuple[float, int]],
    upto: int,
    epochs: int = 8,
) -> list[float]:
    """``[E[U(C)] / E[A(c)] for C in 0..upto]`` (module docstring).

    ``sizes``: how many of the window's jobs asked for each GPU count; ``jobs_per_cycle``: ``mu``; ``cycle_s``:
    ``c``; ``departures``: ``(s from now, GPUs freed)`` of the running jobs' expected ends, rounded up to a multiple
    of ``c / epochs``. All ones when no job is expected.
    """
    total = sum(n for g, n in sizes.items() if g > 0)
    if total == 0 or jobs_per_cycle <= 0.0:
        return [1.0] * (upto + 1)
    shares = {g: n / total for g, n in sizes.items() if g > 0}
    mean = jobs_per_cycle * sum(g * p for g, p in shares.items())
    top = upto + 1
    while True:  # the highest level: E[(A(c) - L)+] below TAIL of E[A(c)]
        cdf = np.cumsum(compound_pmf(shares, jobs_per_cycle, top))
        beyond = mean - float(np.sum(1.0 - cdf[:top]))  # E[(A - top)+] = E[A] - sum_{m < top} P(A > m)
        if beyond <= TAIL * mean:
            break
        top *= 2
    stretches = _stretches(cycle_s, departures, epochs)
    width = top + stretches[-1][1]  # A's values kept: below the last stretch's staircase, L + F_m
    levels = np.arange(1, top + 1)
    kept = np.zeros((top, width))
    kept[:, 0] = 1.0
    gaps = np.arange(width)[None, :] - np.arange(width)[:, None]  # b - a
    for length, freed in stretches:
        f = compound_pmf(shares, jobs_per_cycle * length / cycle_s, width - 1)
        step = np.where(gaps >= 0, f[np.clip(gaps, 0, None)], 0.0)  # T[a, b] = P(increment = b - a)
        kept = kept @ step
        kept[np.arange(width)[None, :] >= (levels + freed)[:, None]] = 0.0  # reached L + F_i: it overflowed
    over = np.clip(1.0 - kept.sum(axis=1), 0.0, 1.0)  # P(M >= L), L = 1..top
    above = np.concatenate([np.cumsum(over[::-1])[::-1], [0.0]])  # [sum_{L > C} P(M >= L) for C = 0..top]
    return [min(1.0, float(above[c]) / mean) for c in range(upto + 1)]
