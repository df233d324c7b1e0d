"""An energy budget over a period on the live loop: ``--energy-budget-kwh E --budget-period-s P`` (§10.8, §11.6).

The cluster may draw at most ``E`` joules in every period of ``P`` seconds. Periods run back to back from the
budget's origin ``t0`` (agent clock, s): period ``k`` is ``[t0 + k P, t0 + (k + 1) P)``. Live the origin is the
agent's first round, kept in its state (:meth:`planner.agent.store.AgentStore.budget_origin`), so a restarted agent
keeps the period and what it spent; a replay on the simulated Slurm gives the cluster's start (the first arrival,
less ``--up-before-s``), where its energy count starts too.

What the cluster drew is charged window by window (:class:`EnergyLedger`): each window ``[a, b]`` holds the whole
cluster's energy (every GPU and every node, idle included; J) and starts where the last one charged ended, so the
windows tile the time from the origin without gap or overlap. A window that spans a period boundary is split
between the periods in proportion to time (exact where the draw is constant over the window; the loop starts a
round at every period start, so live only the seconds by which that round is late are split).

A round at ``t`` in period ``k`` (ending at ``t_end``) has ``E_left = E - spent_k`` (J, ``spent_k`` the energy
charged to period ``k`` so far) and gets the paced share ``S_r = max(E_left T / max(T, t_end - t), min(E_left - I
max(0, t_end - t - T), B_min))`` (:func:`planner.sim.budget.period_share_j`, ``I`` the powered nodes' idle draw
when every node stays on, else 0); the loop turns it into the budget of what the round prices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from wattplan.planner.agent.store import AgentStore
from wattplan.planner.sim.budget import period_share_j
from wattplan.planner.sim.signals import J_PER_KWH

SAME_S = 1e-3
"""Two times on the agent's clock within this many seconds are one (a window's end and the next one's start, a
round and the period start it was timed for: a virtual Unix time near 1.7e9 s holds about 2e-7 s, times the time
scale on the agent's clock)."""


@dataclass(frozen=True, slots=True)
class BudgetPeriods:
    """The budget ``E`` (J) per period of ``P`` seconds from the origin ``t0`` (agent clock, s)."""

    energy_j: float
    period_s: float
    origin_s: float

    def index(self, t_s: float) -> int:
        """The period holding ``t_s``: ``floor((t - t0) / P)``, a time within :data:`SAME_S` of a start in it."""
        return math.floor((t_s - self.origin_s + SAME_S) / self.period_s)

    def start_s(self, k: int) -> float:
        """Period ``k``'s start, ``t0 + k P`` (s)."""
        return self.origin_s + k * self.period_s

    def end_s(self, k: int) -> float:
        """Period ``k``'s end, the next one's start (s)."""
        return self.start_s(k + 1)


def energy_by_period(windows: Iterable[tuple[float, float, float]], periods: BudgetPeriods) -> dict[int, float]:
    """Each period's energy (J) from windows ``(a, b, J)``, a window split in proportion to its time in each period.

    A window of no length counts whole in the period holding it.
    """
    out: dict[int, float] = {}
    for a, b, joules in windows:
        if b - a <= 0.0:
            k = periods.index(a)
            out[k] = out.get(k, 0.0) + joules
            continue
        for k in range(periods.index(a), periods.index(b - SAME_S) + 1):
            overlap = min(b, periods.end_s(k)) - max(a, periods.start_s(k))
            if overlap > 0.0:
                out[k] = out.get(k, 0.0) + joules * overlap / (b - a)
    return out


@dataclass(frozen=True, slots=True)
class RoundShare:
    """A round's place in its period and its paced share: period ``k``, its end (s), spent, left and share (J)."""

    period: int
    period_end_s: float
    spent_j: float
    left_j: float
    share_j: float

    def words(self) -> str:
        """``budget: round share 0.210 kWh, 1.502 of 2.000 kWh left in period 3``, for the round's line."""
        left = f"{self.left_j / J_PER_KWH:.3f} of {(self.left_j + self.spent_j) / J_PER_KWH:.3f} kWh"
        return f"budget: round share {self.share_j / J_PER_KWH:.3f} kWh, {left} left in period {self.period}"


class EnergyLedger:
    """The agent's energy budget over a period: its periods, what each window drew, each round's share.

    The windows live in the agent's state (:meth:`AgentStore.charge_energy`), so what was spent survives the agent.
    ``origin_s`` is the origin when the state keeps none yet; None: the first round's time (:meth:`start`).
    """

    def __init__(self, store: AgentStore, energy_j: float, period_s: float, origin_s: float | None = None):
        if not (energy_j > 0 and period_s > 0):
            raise ValueError(f"an energy budget needs E > 0 J and P > 0 s, got {energy_j} J per {period_s} s")
        self.store = store
        self.energy_j = energy_j
        self.period_s = period_s
        self.origin_s = origin_s
        self.periods: BudgetPeriods | None = None
        """Set by the first round (:meth:`start`)."""

    def start(self, now_s: float) -> BudgetPeriods:
        """The periods, their origin read from the state or set to ``origin_s`` (else ``now_s``) once for all."""
        if self.periods is None:
            first = self.origin_s if self.origin_s is not None else now_s
            origin = self.store.budget_origin(first, self.period_s, self.energy_j)
            self.periods = BudgetPeriods(self.energy_j, self.period_s, origin)
        return self.periods

    def charged_to_s(self) -> float:
        """Where the next window to charge starts: the last one's end, else the origin (s; after :meth:`start`)."""
        assert self.periods is not None, "start the ledger first"
        last = self.store.charged_to_s()
        return self.periods.origin_s if last is None else last

    def charge(self, start_s: float, end_s: float, energy_j: float) -> None:
        """Charge the cluster's energy (J) over ``[start_s, end_s]``, which starts where the last window ended or later.

        Later leaves a stretch uncharged for good (one the telemetry could not tell); earlier would count twice.
        """
        if start_s < self.charged_to_s() - SAME_S:
            raise ValueError(f"window [{start_s}, {end_s}] s starts before the last one's end ({self.charged_to_s()})")
        if end_s > start_s:
            self.store.charge_energy(start_s, end_s, energy_j)

    def spent_j(self, k: int) -> float:
        """The energy charged to period ``k`` so far (J)."""
        assert self.periods is not None
        windows = self.store.energy_windows(self.periods.start_s(k))
        return energy_by_period(windows, self.periods).get(k, 0.0)

    def share(self, now_s: float, duration_s: float, floor_j: float, committed_w: float = 0.0) -> RoundShare:
        """The round at ``now_s``: its period, what is left (``E - spent``) and its share (module docstring; J).

        ``duration_s``: the round's ``T``; ``floor_j``: ``B_min``; ``committed_w``: ``I`` (W).
        """
        periods = self.start(now_s)
        k = periods.index(now_s)
        spent = self.spent_j(k)
        left = self.energy_j - spent
        end = periods.end_s(k)
        return RoundShare(k, end, spent, left, period_share_j(left, now_s, end, duration_s, floor_j, committed_w))

    def next_start_s(self, now_s: float) -> float:
        """The start of the period after the one holding ``now_s`` (s)."""
        periods = self.start(now_s)
        return periods.end_s(periods.index(now_s))

    def covers_a_period(self, since_s: float, now_s: float) -> bool:
        """Whether ``[since_s, now_s]`` holds a whole period: ``since_s`` is at or before the previous one's start."""
        periods = self.start(now_s)
        return since_s <= periods.start_s(periods.index(now_s) - 1) + SAME_S
