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

(the *accrued* rule) or, with ``projected`` (the live agent's default, and
``simulate``'s), the whole JCT of every job arrived by ``t``, its unfinished part projected at full
speed from now:

    A'(t) = sum_{j finished} (f_j - a_j) + sum_{j running or waiting} (t + r_j / X_j - a_j)
    R'(t) = sum_j (f_ref_j - a_j)                                                      (s)

with ``r_j`` the steps left and ``X_j`` the job's throughput at its requested count on the fastest type at
the top setting (``JobSpec.reference_steps_per_s``). The accrued rule sees a job slowed or kept waiting only
once the reference has finished it, so under a long backlog it keeps raising ``delta`` while the debt grows
(measured live against the round-by-round reference: ``delta`` 0.15 and +17% average JCT on a 40-job workload);
the projected rule sees the slowdown while the job runs and a wait as it happens. ``A'`` is optimistic (no
further wait or restart), so it still errs towards headroom. Against the continuous-time reference, replayed on
the one scheduler (``benchmarks/RESULTS.md``, issue 43: three 150-job slices and three 40-job families), the
accrued rule saved as much energy or more in five of six cases; live it lost on one family and won on the other,
so the live default stays projected (:data:`planner.sim.options.LIVE_GOVERNOR`) and both rules are on both faces
(``--governor``).

It is an integral controller: headroom raises ``delta`` (rounds buy less progress and spend less
energy: lower power limits, pairs, fewer nodes on, waiting for a better partner), a deficit
lowers it to 0 (the progress-optimal plan within 0). It is a feedback rule, not a guarantee:
``benchmarks/RESULTS.md`` reports the JCT increase it reached against the bound asked for.

Carbon- or price-aware rounds (:class:`SignalSteer`) compare the round's signal ``v(t)`` with
its mean over the 24 hours before the round, ``rel = v(t) / vbar_24h(t)``
(:meth:`~planner.sim.signals.SignalClock.relative`; no forecast needed), and change two knobs:

* ``delta_r = clip(d_r + kappa (rel - 1), 0, delta_max)`` with ``d_r`` the governor's ``delta``
  (or the fixed one): a dirty or dear hour (``rel > 1``) may give up more progress;
* the ``efficiency`` objective's credit weight ``w_r = clip(1 / rel, w_min, w_max)``, so the
  round minimises ``E - w_r sum_j e_j sigma_j``: up to the constant ``vbar``, the signal cost
  of the energy drawn, ``v E``, minus the work valued at the day's mean, ``vbar sum e_j sigma_j``.
  A clean hour (``w > 1``) buys every step that costs less than ``w`` times its best energy, a
  dirty one (``w < 1``) defers work down to the progress floor ``(1 - delta_r) P*``.

The governor then sees the JCT this costs and corrects ``d_r``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from wattplan.planner.contracts.defaults import DELTA_MAX
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.signals import SignalClock
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import TailBound, TailPace, deadline_cost_j

GovernorRule = Literal["accrued", "projected"]
"""How :class:`JctGovernor` compares JCTs (module docstring)."""
GAIN = 0.25
"""``k``: change of ``delta`` per unit of relative slack, per round. 0.5, measured on node-limited replays of the six
slices (benchmarks/RESULTS.md, "Energy mode, sixth pass"), gained 1.8-2.9 points on three Gavel slices, lost 2.9 on
Philly 6214e9 and left the worst slice as it was; 0.5 also overshoots the projected rule's JCT bound on a four-job
trace (``tests/test_energy_floor.py``). So 0.25 stays."""
MARGIN = 0.05
"""``m``: relative slack held back for the jobs still in the system."""
KAPPA = 0.5
"""``kappa``: ``delta`` added per unit of the signal's relative excess over its mean."""
WEIGHT_MIN = 0.5
"""``w_min``: the least credit weight (a round at twice the day's mean signal or more)."""
WEIGHT_MAX = 2.0
"""``w_max``: the largest credit weight (a round at half the day's mean or less, or a non-positive price)."""


class DeltaSteer(Protocol):
    """Anything that sets each round's ``delta`` from the replay's state."""

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """``delta_r`` for the round starting at ``now_s``."""
        ...

    def credit_weight_for_round(self, now_s: float) -> float:
        """``w_r`` of the ``efficiency`` objective for the round starting at ``now_s`` (1: no signal)."""
        ...


class _NoSignal:
    """Steers ``delta`` only: the credit weight stays 1."""

    def credit_weight_for_round(self, now_s: float) -> float:
        """1: work is worth its best energy in every round."""
        return 1.0


def accrued_s(arrivals: Mapping[str, float], finishes: Mapping[str, float | None], now_s: float) -> float:
    """``sum_j (min(now, f_j) - a_j)`` over jobs with ``a_j <= now`` (unfinished: ``f_j`` None) (s)."""
    total = 0.0
    for jid, a in arrivals.items():
        if a > now_s:
            continue
        f = finishes.get(jid)
        total += (now_s if f is None else min(now_s, f)) - a
    return total


def projected_s(
    states: Sequence[JobState], reference_finish_s: Mapping[str, float | None], now_s: float
) -> tuple[float, float]:
    """``(A'(t), R'(t))`` of the module docstring over the jobs arrived by ``now_s`` that the reference finishes (s)."""
    ours = ref = 0.0
    for s in states:
        a = s.spec.arrival_s
        f_ref = reference_finish_s.get(s.id)
        if a > now_s or f_ref is None:
            continue
        if s.finish_s is not None:
            ours += s.finish_s - a
        else:
            rate = s.spec.reference_steps_per_s
            ours += now_s - a + (s.remaining_steps / rate if rate > 0 else 0.0)
        ref += f_ref - a
    return ours, ref


@dataclass
class JctGovernor(_NoSignal):
    """Per-round ``delta`` keeping the average JCT within ``1 + max_increase`` of the reference's."""

    reference_finish_s: Mapping[str, float | None]
    max_increase: float
    delta: float = 0.0
    delta_max: float = DELTA_MAX
    gain: float = GAIN
    margin: float = MARGIN
    projected: bool = False
    """Compare whole JCTs with the unfinished part projected (module docstring) instead of accrued time."""
    history: list[float] = field(default_factory=list)

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """Update and return ``delta_r`` for the round starting at ``now_s`` (module docstring)."""
        if self.projected:
            ours, ref = projected_s(states, self.reference_finish_s, now_s)
        else:
            arrivals = {s.id: s.spec.arrival_s for s in states}
            ours = accrued_s(arrivals, {s.id: s.finish_s for s in states}, now_s)
            ref = accrued_s(arrivals, self.reference_finish_s, now_s)
        if ref > 0:
            slack = 1.0 - ours / ((1.0 + self.max_increase) * ref)
            self.delta = min(max(self.delta + self.gain * (slack - self.margin), 0.0), self.delta_max)
        self.history.append(self.delta)
        return self.delta


@dataclass
class FixedDelta(_NoSignal):
    """The same ``delta`` every round (what the rules say)."""

    delta: float

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """The fixed ``delta``."""
        return self.delta


@dataclass
class SignalSteer:
    """``delta`` and the credit weight from the round's signal against the day before (module docstring)."""

    clock: SignalClock
    inner: DeltaSteer
    round_s: float
    kappa: float = KAPPA
    delta_max: float = DELTA_MAX

    _last: tuple[float, float | None] | None = field(default=None, init=False, repr=False)

    def relative(self, now_s: float) -> float | None:
        """``v(t) / vbar_24h(t)`` over the round; None when the trailing mean is not positive (a price).

        Computed once per round start (``delta``, the credit weight and the budget all ask for it).
        """
        if self._last is None or self._last[0] != now_s:
            try:
                rel: float | None = self.clock.relative(now_s, self.round_s)
            except ValueError:
                rel = None
            self._last = (now_s, rel)
        return self._last[1]

    def delta_for_round(self, states: Sequence[JobState], now_s: float) -> float:
        """``clip(inner + kappa (rel - 1), 0, delta_max)``; the inner ``delta`` when ``rel`` is undefined."""
        base = self.inner.delta_for_round(states, now_s)
        rel = self.relative(now_s)
        if rel is None:
            return base
        return min(max(base + self.kappa * (rel - 1.0), 0.0), self.delta_max)

    def credit_weight_for_round(self, now_s: float) -> float:
        """``clip(1 / rel, w_min, w_max)``; ``w_max`` for a free or negative price, 1 when ``rel`` is undefined."""
        rel = self.relative(now_s)
        if rel is None:
            return 1.0
        return WEIGHT_MAX if rel <= 0 else min(max(1.0 / rel, WEIGHT_MIN), WEIGHT_MAX)


@dataclass(frozen=True)
class Steering:
    """How each round's ``delta`` and credit weight are steered: one record, for the replay and the agent alike.

    Its fields are ``--max-jct-increase`` (a fraction), ``--governor``, ``--delta-max`` and ``--signal-aware``.

    The replay builds its governor once, against the reference known before it starts; the agent rebuilds it
    whenever the jobs it has seen change (its reference grows with them), carrying the last ``delta`` over.
    """

    max_increase: float | None = None
    """The JCT bound as a fraction; None: no governor (a fixed ``delta``, or the signal's)."""
    rule: GovernorRule = "projected"
    delta_max: float = DELTA_MAX
    signal_aware: bool = True
    """Follow the signal (carbon, else price) when one is given."""
    tail_bound: float | None = None
    """The per-job tail bound as a fraction (``--tail-bound``, :mod:`planner.sim.tail_bound`); None: none."""
    tail_pace: TailPace = "steady"

    def governor(self, reference_finish_s: Mapping[str, float | None], delta: float) -> JctGovernor | None:
        """The JCT governor against ``reference_finish_s`` starting from ``delta``; None without a bound."""
        if self.max_increase is None:
            return None
        return JctGovernor(
            reference_finish_s,
            self.max_increase,
            delta=delta,
            delta_max=self.delta_max,
            projected=self.rule == "projected",
        )

    def steer(
        self, inner: DeltaSteer | None, delta: float, signal: SignalClock | None, round_s: float
    ) -> DeltaSteer | None:
        """``inner`` (the governor, or None for the fixed ``delta``) under the signal when one is followed.

        The signal's ``delta`` is clipped to ``delta_max`` as the governor's is. None when neither steers: the round
        keeps the rules' ``delta`` and a credit weight of 1.
        """
        if signal is not None and self.signal_aware:
            return SignalSteer(signal, inner or FixedDelta(delta), round_s, delta_max=self.delta_max)
        return inner

    def tail(
        self, ctx: ClusterContext, reference_finish_s: Mapping[str, float | None], jobs: Sequence[JobState]
    ) -> TailBound | None:
        """The tail bound over ``jobs`` against ``reference_finish_s``; None without ``tail_bound``.

        The jobs to keep free are ranked by what their deadline costs from their start (:func:`deadline_cost_j`
        of each job whole, on ``ctx``).
        """
        if self.tail_bound is None:
            return None
        fresh = {s.id: JobState.new(s.spec) for s in jobs}
        return TailBound.from_reference(
            reference_finish_s,
            {s.id: s.spec.arrival_s for s in jobs},
            self.tail_bound,
            self.tail_pace,
            deadline_cost=lambda j, allowed_s: deadline_cost_j(ctx, fresh[j], allowed_s),
        )
