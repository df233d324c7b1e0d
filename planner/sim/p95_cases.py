"""A p95 JCT limit as a finite set of cases, each a set of per-job windows: what the aim by intervals solves.

numpy's p95 of ``N`` JCTs is ``(1 - f) J_(k) + f J_(k+1)`` with ``k = floor(0.95 (N - 1))`` and ``f = 0.95 (N - 1)
- k`` (0-based ranks, ascending). A schedule keeps a p95 within ``P`` (s) only if, with ``T = J_(k)``,

    #{j : J_j > T} <= N - k - 1   and   #{j : J_j > B(T)} <= N - k - 2,   B(T) = (P - (1 - f) T) / f      (*)

and ``T`` lies in ``[m_(k), P]``: every job's JCT is at least ``m_j`` (its steps at its fastest rate), so
``J_(k) >= m_(k)``, the rank-``k`` least JCT, and the p95 is at least ``J_(k)``. ``B`` falls as ``T`` rises.

**Intervals.** Cut ``[m_(k), P]`` at ``a_0 = m_(k) < a_1 < ... < a_r = P``. If ``T`` lies in ``[a_(i-1), a_i]``
then at most ``late_p = N - k - 1`` jobs take longer than ``a_i`` (the set ``L``) and at most ``late_b = N - k - 2``
longer than ``B(a_(i-1)) >= P >= a_i`` (the set ``V``, inside ``L``).

**Long jobs.** The jobs with ``m_j >= m_(k)`` (at least ``N - k`` of them) are named in every case; the others
(*short*) only by count. A case fixes ``L_long = L & long`` (at most ``late_p`` jobs) and ``W = V & long``:

* long jobs outside ``L_long`` within ``a_i``; those of ``L_long - W`` within ``B(a_(i-1))``; those of ``W`` free;
* short jobs: at most ``late_p - |L_long|`` longer than ``a_i``, at most ``late_b - |W|`` longer than ``B(a_(i-1))``.

When ``|L_long| = late_p`` no short job is late, and ``W`` of size ``min(late_b, |L_long|)`` covers every smaller
``V``; otherwise every ``W`` inside ``L_long`` is a case of its own (the short jobs' count depends on it), or, with
``split_outer`` off, one case covers them all: ``L_long`` free and at most ``late_p - |L_long|`` short jobs past
``a_i``, without the count past ``B`` (fewer cases, each a little looser). So every
JCT vector that keeps (*) and ``J_j >= m_j`` is admitted by at least one case (:meth:`P95Case.admits`;
property test; every window is widened by :data:`ROUNDING`). Cases that no schedule can meet (a long job's window
below its ``m_j``) are left out.

Cutting at the long jobs' own ``m_j`` separates the cases where they can keep ``a_i`` from those where they cannot.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

P95 = 95.0
ROUNDING = 1e-9
"""Every window is widened by this share, so JCTs on a window's edge, computed in floating point, stay inside."""


@dataclass(frozen=True)
class P95Case:
    """One case of the module docstring; JCT windows in seconds from each job's arrival."""

    interval_s: tuple[float, float]
    """``[a_(i-1), a_i]``: the range of ``J_(k)`` this case covers."""
    within_s: Mapping[str, float]
    """The long jobs held to a window (``a_i`` or ``B(a_(i-1))``), whatever the counts."""
    free: tuple[str, ...]
    """The long jobs of ``W``: no window."""
    short_window_s: float
    """``a_i``: the short jobs' window, of which at most :attr:`short_late` may be missed."""
    short_late: int
    short_outer_s: float
    """``B(a_(i-1))`` (``inf`` when the p95 is a single rank): at most :attr:`short_outer_late` may miss it."""
    short_outer_late: int

    def admits(self, jct_s: Mapping[str, float]) -> bool:
        """Whether the JCTs ``jct_s`` (every job, s) keep this case's windows and counts."""
        if any(jct_s[j] > w for j, w in self.within_s.items()):
            return False
        short = [v for j, v in jct_s.items() if j not in self.within_s and j not in self.free]
        return (
            sum(v > self.short_window_s for v in short) <= self.short_late
            and sum(v > self.short_outer_s for v in short) <= self.short_outer_late
        )


def _cuts(lo: float, hi: float, long_least: list[float], pieces: int) -> list[float]:
    """``a_0 = lo < ... < a_r = hi``: the long jobs' least JCTs inside, and steps of at most ``(hi - lo) / pieces``."""
    inner = {m for m in long_least if lo < m < hi}
    inner |= {lo + (hi - lo) * i / pieces for i in range(1, pieces)}
    return [lo, *sorted(inner), hi]


def p95_cases(
    limit_s: float, least_jct_s: Mapping[str, float], pieces: int = 1, split_outer: bool = False, q: float = P95
) -> list[P95Case]:
    """The cases of the module docstring for a p95 within ``limit_s`` (s) of the jobs of ``least_jct_s``.

    ``least_jct_s``: each job's least JCT ``m_j`` (s); ``pieces``: besides the long jobs' ``m_j``, cuts at least
    every ``(P - m_(k)) / pieces`` seconds; ``split_outer``: a case per ``W`` (module docstring). An empty list:
    no schedule keeps the limit (``m_(k) > P``).
    """
    n = len(least_jct_s)
    if n == 0:
        return []
    rank = q / 100.0 * (n - 1)
    k = math.floor(rank)
    f = rank - k
    m_k = sorted(least_jct_s.values())[k]
    if m_k > limit_s:
        return []
    late_p, late_b = n - k - 1, max(n - k - 2, 0)
    long = sorted(j for j, m in least_jct_s.items() if m >= m_k)

    def outer(a: float) -> float:
        return (limit_s - (1.0 - f) * a) / f if f > 0 else math.inf

    cases: list[P95Case] = []
    cuts = _cuts(m_k, limit_s, [least_jct_s[j] for j in long], max(pieces, 1))
    for a0, cut in itertools.pairwise(cuts):
        a1 = cut * (1.0 + ROUNDING)
        b = max(outer(a0), cut) * (1.0 + ROUNDING)
        for size in range(min(late_p, len(long)), -1, -1):
            for late in itertools.combinations(long, size):
                if size == late_p:
                    ws = list(itertools.combinations(late, min(late_b, size)))
                elif split_outer:
                    ws = [w for r in range(min(late_b, size) + 1) for w in itertools.combinations(late, r)]
                else:
                    ws = [late]
                for w in ws:
                    within = {j: a1 for j in long if j not in late} | {j: b for j in late if j not in w}
                    if any(least_jct_s[j] > v for j, v in within.items()):
                        continue
                    outer_late = late_b - len(w) if size == late_p or split_outer else late_p - size
                    cases.append(P95Case((a0, cut), within, w, a1, late_p - size, b, outer_late))
    return cases
