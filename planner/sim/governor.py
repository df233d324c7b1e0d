"""The runtime-bounded energy mode: each round's ``delta`` steered by the JCT against a reference.

A user states "least energy, at most ``x`` longer average JCT than the reference schedule"
(``--max-jct-increase``; the reference is ``fifo-max`` replayed on the same queue with no
budget, known before the replay starts). wattplan then plans every round with the ``efficiency``
objective (or ``energy``), ``min E - credit  s.t.  progress >= (1 - delta_r) P*``, and this governor
picks ``delta_r``.

Average JCT is total time in system over jobs, ``(1/N) sum_j (f_j - a_j)``, so the contract is
``S_w <= (1 + x) S_ref`` with ``S`` summed over the same jobs. At a round start ``t`` both
schedules have accrued, over the jobs arrived by ``t``,

    A(t) = sum_j (min(t, f_j) - a_j)          (this replay; s)
    R(t) = sum_j (min(t, f_ref_j) - a_j)       (the reference; s)

and the governor holds the accrued ratio under the target, with a margin ``m`` for the jobs
still in the system (they accrue after the reference has finished them):

    e(t) = 1 - A(t) / ((1 + x) R(t))           (relative slack; > 0: headroom left)
    delta_r = clip(delta_{r-1} + k (e(t) - m), 0, delta_max)

an integral controller: headroom raises ``delta`` (rounds buy less progress and spend less
energy: lower power limits, pairs, fewer nodes on, waiting for a better partner), a deficit
lowers it to 0 (the progress-optimal plan within 0). It is a feedback rule, not a guarantee:
``benchmarks/RESULTS.md`` reports the JCT increase it reached against the bound asked for.

Carbon- or price-aware rounds (:class:`SignalSteer`) shift ``delta`` by the hour's signal
against its mean, ``delta_r = clip(d_r + kappa (v(t) / mean - 1), 0, delta_max)`` with ``d_r``
the governor's ``delta`` (or the fixed one): a dirty or dear hour (``v > mean``) buys less
progress for less energy, a clean or cheap one runs harder; the governor then sees the JCT
this costs and corrects ``d_r``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from planner.sim.signals import SignalClock
from planner.sim.state import JobState

DELTA_MAX = 0.25
"""Largest ``delta`` the governor sets. Measured on a 150-job slice (benchmarks/RESULTS.md), a fixed
``delta`` past about 0.2 buys no energy: deferred work keeps nodes on for longer."""
GAIN = 0.25
"""``k``: change of ``delta`` per unit of relative slack, per round."""
MARGIN = 0.05
"""``m``: relative slack held back for the jobs still in the system."""
KAPPA = 0.5
"""``kappa``: ``delta`` added per unit of the signal's relative excess over its mean."""


class DeltaSteer(Protocol):
    """Anything that sets each round's ``delta`` from the replay's state."""

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """``delta_r`` for the round starting at ``now_s``."""
        ...


def accrued_s(arrivals: Mapping[str, float], finishes: Mapping[str, float | None], now_s: float) -> float:
    """``sum_j (min(now, f_j) - a_j)`` over jobs with ``a_j <= now`` (unfinished: ``f_j`` None) (s)."""
    total = 0.0
    for jid, a in arrivals.items():
        if a > now_s:
            continue
        f = finishes.get(jid)
        total += (now_s if f is None else min(now_s, f)) - a
    return total


@dataclass
class JctGovernor:
    """Per-round ``delta`` keeping the average JCT within ``1 + max_increase`` of the reference's."""

    reference_finish_s: Mapping[str, float | None]
    max_increase: float
    delta: float = 0.0
    delta_max: float = DELTA_MAX
    gain: float = GAIN
    margin: float = MARGIN
    history: list[float] = field(default_factory=list)

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """Update and return ``delta_r`` for the round starting at ``now_s`` (module docstring)."""
        arrivals = {s.id: s.spec.arrival_s for s in states}
        ours = accrued_s(arrivals, {s.id: s.finish_s for s in states}, now_s)
        ref = accrued_s(arrivals, self.reference_finish_s, now_s)
        if ref > 0:
            slack = 1.0 - ours / ((1.0 + self.max_increase) * ref)
            self.delta = min(max(self.delta + self.gain * (slack - self.margin), 0.0), self.delta_max)
        self.history.append(self.delta)
        return self.delta


@dataclass
class FixedDelta:
    """The same ``delta`` every round (what the rules say)."""

    delta: float

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """The fixed ``delta``."""
        return self.delta


@dataclass
class SignalSteer:
    """``clip(inner + kappa (v(t) / mean - 1), 0, delta_max)`` over the round (module docstring)."""

    clock: SignalClock
    inner: DeltaSteer
    round_s: float
    kappa: float = KAPPA
    delta_max: float = DELTA_MAX

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """The inner ``delta`` shifted by this round's relative signal."""
        base = self.inner.delta_for_round(states, now_s)
        shift = self.kappa * (self.clock.relative(now_s, self.round_s) - 1.0)
        return min(max(base + shift, 0.0), self.delta_max)
