"""Round budgets: none, a power cap, or an energy budget over the whole replay, paced.

* **No budget**: every round's ``budget_j`` is None.
* **Power cap** ``W`` watts: every round gets ``B = W * T`` joules.
* **Energy budget** ``E`` joules over the replay: round ``r`` gets ``B_r = E_left / rounds_left``,
  where ``E_left`` is ``E`` minus the energy every earlier round actually drew and
  ``rounds_left`` is the expected number of rounds still needed, estimated from the remaining
  work at each job's requested GPU count and reference throughput
  (:attr:`~planner.sim.state.JobSpec.reference_steps_per_s`):

  - ``d_j = R_j / X_ref_j`` (s) for every unfinished job, arrived or still to arrive (the
    replay knows the trace the budget was set for); ``W = sum_j n_j * d_j`` (GPU-seconds);
  - ``w`` = the GPU-seconds the queued jobs can use this round,
    ``min(G * T, sum_queued n_j * min(d_j, T))`` with ``G`` the cluster's GPUs;
  - ``D = max(W / G, max_j (max(a_j - now, 0) + d_j))``: a lower bound on the time left
    (the work spread over the whole cluster, or the longest job's own path);
  - ``rounds_left = max(1, min(W / w, D / T))``.

  ``W / w`` spends in proportion to the work a round can do, so busy rounds get more than
  quiet ones; ``D / T`` guarantees at least an even share of the time left, so energy saved in
  a quiet stretch is spent later. Both estimates assume the reference speed; a policy that
  runs slower than that (lower settings, a smaller or slower GPU, sharing) needs more
  rounds than estimated, and the next rounds' budgets shrink accordingly (the estimate is
  recomputed from the true remaining work every round).

  A round never gets less than ``min(E_left, B_min)``, with ``B_min`` the energy of one node
  of the most power-hungry GPU type at full power for the round (``T * (Pnode_g + K_g * Pmax_g)``):
  whenever energy is left, at least one node's worth of jobs can run, so a pacing estimate
  that is too long cannot stop the replay while energy remains.

  A round may also spend all but a **reserve**: ``B_r >= E_left - F_rest``, with ``F_rest`` a
  lower bound on the energy of the work no schedule can avoid after this round, each queued job's
  ``R_j - min(R_j, Xmax_j T)`` steps (``Xmax_j`` its fastest configuration) and all the steps of
  jobs still to arrive, priced at ``y_k`` J per step:
  ``y_k = min(min_c n (P + Pnode/K) / X, min_q P_q / (2 r_kq))`` over the exclusive configurations
  ``c`` and the pair configurations ``q`` of the job's class (``P_q`` the pair's power, ``r_kq`` the
  class's rate in it). These prices are feasible for the dual of the energy floor LP
  (:mod:`formulations.energy_floor`), so ``sum y_k d_k`` never exceeds the floor of the work, nor
  what any replay spends on it. Hence, by induction on the rounds: with a budget at least a
  deterministic policy's own unbudgeted energy, every round's share covers what that policy
  spends in it unbudgeted, the replay is the unbudgeted one, and every job finishes.

  A signal-aware replay scales the paced share by the round's signal weight ``w(t)`` (above 1
  in an hour cleaner or cheaper than the day before it, :mod:`planner.sim.governor`): the budget
  follows the signal, and the reserve rule still holds every guarantee above.

  A round that drew nothing (every queued job waited: its share was below what any of them
  costs for a round, e.g. a job's first round with its restart loss) leaves the next round
  all of ``E_left``: a paced share smaller than one allocation can otherwise stall a replay whose
  budget would have finished every job (found by a property test: a budget equal to the
  policy's own unbudgeted energy must finish every job).

  When the budget is spent (``E_left <= 0``), or what is left cannot power anything, jobs
  wait and the engine ends the replay with the unfinished jobs reported (stop reason
  ``budget-exhausted`` or ``stalled``).

Energy drawn can exceed a round's budget only when reality differs from the profiles
(``--noise``); the overshoot is charged to ``E_left``.

The live loop (``wattplan agent``, ``simulate --engine slurm``) knows no work still to arrive: its budget is ``E``
per period of ``P`` seconds, paced by :func:`period_share_j` over the time left in the period
(:mod:`planner.agent.energy_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.core.economics import (
    best_step_energy_j,
    pair_power_w,
    profiled_options,
    round_budget_j,
    usable_pair_rates,
)
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobState


@dataclass(frozen=True, slots=True)
class PacingEstimate:
    """The quantities of the pacing rule at one round start (see the module docstring)."""

    work_gpu_s: float  # W
    round_work_gpu_s: float  # w
    time_left_s: float  # D
    rounds_left: float


def pacing_estimate(
    unfinished: Sequence[JobState], now_s: float, duration_s: float, cluster_gpus: int
) -> PacingEstimate:
    """``W``, ``w``, ``D`` and ``rounds_left`` for the unfinished jobs at ``now_s``."""
    work = 0.0
    round_work = 0.0
    longest = 0.0
    for s in unfinished:
        d = s.remaining_steps / s.spec.reference_steps_per_s
        n = s.spec.requested_gpus
        work += n * d
        wait = max(s.spec.arrival_s - now_s, 0.0)
        longest = max(longest, wait + d)
        if wait == 0.0:
            round_work += n * min(d, duration_s)
    round_work = min(round_work, cluster_gpus * duration_s)
    time_left = max(work / cluster_gpus, longest)
    by_work = work / round_work if round_work > 0 else math.inf
    rounds = max(1.0, min(by_work, time_left / duration_s))
    return PacingEstimate(work, round_work, time_left, rounds)


def one_node_round_j(ctx: ClusterContext) -> float:
    """``B_min = T * max_g (Pnode_g + K_g * Pmax_g)``, ``Pmax_g`` the highest profiled power on ``g`` (J)."""
    best = 0.0
    for g in ctx.gpu_types:
        pmax = max(
            (p.power_w for ps in ctx.profiles_by_type.values() for p in ps if p.gpu_type == g.name),
            default=g.idle_power_w,
        )
        best = max(best, g.node_power_w + g.gpus_per_node * pmax)
    return ctx.rules.duration_s * best


def period_share_j(
    left_j: float, now_s: float, period_end_s: float, duration_s: float, floor_j: float, committed_w: float = 0.0
) -> float:
    """The paced share of a round under an energy budget over a period (the live loop's; J).

    ``S_r = max(E_left * T / max(T, t_end - t), min(E_left - I * max(0, t_end - t - T), B_min))``: ``E_left`` (J)
    spread evenly over the period's time left ``t_end - t`` (s) in rounds of ``T`` (s), so energy a quiet stretch
    left unspent is spent later, and never less than one node's round ``B_min`` (J, :func:`one_node_round_j`) while
    that much is left beyond what the rest of the period will draw anyway: ``I`` (``committed_w``, W) is the draw no
    plan avoids, the powered nodes' idle power when every node stays on. The last round of a period
    (``t_end - t <= T``) gets all of ``E_left``; ``S_r <= E_left`` always; 0 once the period's budget is spent.

    Why ``I``: with every node on the cluster draws ``I`` whatever runs, and a round spends at most ``I dt`` plus
    ``S_r - I T`` over the next ``dt <= T`` seconds. While ``E_left >= I (t_end - t)`` at a round, each term of
    ``S_r`` keeps it so at the next (the even share because ``E_left / (t_end - t) >= I``, the floor by its
    reserve), so a period whose budget is at least its idle draw ``I P`` draws at most ``E``; one below it runs
    nothing and draws ``I P``. Without the reserve (``I = 0``) a floor round spent what the idle draw needed later:
    on three jobs of one V100 node the period drew 20% over its budget.
    """
    if left_j <= 0.0:
        return 0.0
    even = left_j * duration_s / max(duration_s, period_end_s - now_s)
    reserve = committed_w * max(0.0, period_end_s - now_s - duration_s)
    return max(even, min(left_j - reserve, floor_j))


class Budget(Protocol):
    """What the replay engine asks of a round budget rule (:mod:`planner.sim.engine`)."""

    @property
    def label(self) -> str:
        """The rule in words, for reports (``none``, ``power cap 8000 W``, ``energy budget 5 kWh``)."""
        ...

    @property
    def exhausted(self) -> bool:
        """True once nothing is left to spend: the replay stops (``budget-exhausted``)."""
        ...

    @property
    def stall_reason(self) -> str:
        """Why a replay whose rounds run nothing stops: ``budget-exhausted`` or ``stalled``."""
        ...

    def round_budget_j(
        self, unfinished: Sequence[JobState], now_s: float, duration_s: float, gpus: int
    ) -> float | None:
        """The budget of the round starting at ``now_s`` (J; None: none)."""
        ...

    def charge(self, energy_j: float) -> None:
        """Record the energy the round actually drew (J)."""
        ...


class _PerRoundOnly:
    """A budget with no memory across rounds: nothing to charge, never exhausted; a stall is ``stalled``."""

    stall_reason = "stalled"

    def charge(self, energy_j: float) -> None:
        pass

    @property
    def exhausted(self) -> bool:
        return False


class NoBudget(_PerRoundOnly):
    """Every round unconstrained."""

    label = "none"

    def round_budget_j(self, unfinished: Sequence[JobState], now_s: float, duration_s: float, gpus: int) -> None:
        """No round budget (None), whatever the queue."""
        return None


@dataclass
class PowerCap(_PerRoundOnly):
    """``B = W * T`` every round (J)."""

    watts: float

    @property
    def label(self) -> str:
        """``power cap <W> W``, for reports."""
        return f"power cap {self.watts:g} W"

    def round_budget_j(self, unfinished: Sequence[JobState], now_s: float, duration_s: float, gpus: int) -> float:
        """``B = W * T`` (J) for a round of ``duration_s`` (s), whatever the queue."""
        return round_budget_j(duration_s, power_cap_w=self.watts)


@dataclass(frozen=True, slots=True)
class StepPrice:
    """A job's reserve price ``y`` (J per step) and its fastest rate ``Xmax`` (steps/s)."""

    joules_per_step: float
    max_steps_per_s: float


def step_prices(instance: Instance) -> dict[str, StepPrice]:
    """``y_k`` and ``Xmax`` of every job of ``instance`` (module docstring); jobs without a profile get 0.

    Computed once per class (type, allowed counts): jobs of a class share their prices.
    """
    types = sorted({j.type for j in instance.jobs})
    by_class: dict[tuple[str, tuple[int, ...]], StepPrice] = {}
    for key in sorted({(j.type, j.gpus) for j in instance.jobs}):
        job_type, counts = key
        best, fastest = best_step_energy_j(instance, job_type, counts), 0.0
        for g, p in profiled_options(instance, job_type, counts):
            fastest = max(fastest, p.steps_per_s)
            for other in types:
                rates = usable_pair_rates(instance, job_type, other, g, p.gpus)
                q = instance.profile(other, g.name, p.gpus, p.setting)
                if rates is None or q is None:
                    continue
                for mine, theirs in {rates, rates[::-1]} if other == job_type else {rates}:
                    if mine > 0:
                        power = pair_power_w(g, p.gpus, p, q, mine, theirs)
                        best = min(best, power / (2 * mine * p.steps_per_s))
        by_class[key] = StepPrice(best, fastest)
    return {j.id: by_class[(j.type, j.gpus)] for j in instance.jobs}


def reserve_j(
    prices: Mapping[str, StepPrice], unfinished: Sequence[JobState], now_s: float, duration_s: float
) -> float:
    """``F_rest``: the priced steps no schedule can avoid after the round starting at ``now_s`` (J)."""
    total = 0.0
    for s in unfinished:
        price = prices.get(s.id)
        if price is None:
            continue
        doable = price.max_steps_per_s * duration_s if s.spec.arrival_s <= now_s else 0.0
        total += price.joules_per_step * max(s.remaining_steps - doable, 0.0)
    return total


@dataclass
class EnergyBudget:
    """An energy budget over the replay, paced per round (see the module docstring)."""

    total_j: float
    floor_j: float = 0.0  # B_min (J)
    spent_j: float = 0.0
    starved: bool = False  # the last round drew nothing
    prices: Mapping[str, StepPrice] = field(default_factory=dict)  # no reserve rule without them
    weight: Callable[[float], float] | None = None
    """``w(t)``, the round's signal weight (a clean or cheap round > 1): the paced share becomes
    ``w(t) E_left / rounds_left`` (:class:`~planner.sim.governor.SignalSteer`); None: 1."""

    @property
    def label(self) -> str:
        """``energy budget <E> kWh``, for reports."""
        return f"energy budget {self.total_j / 3.6e6:g} kWh"

    @property
    def left_j(self) -> float:
        """``E_left = E - spent`` (J); negative after an overshoot."""
        return self.total_j - self.spent_j

    @property
    def exhausted(self) -> bool:
        """True once the budget is spent: ``E_left <= 0``."""
        return self.left_j <= 0.0

    @property
    def stall_reason(self) -> str:
        """``budget-exhausted``: rounds that run nothing under an energy budget mean what is left powers nothing."""
        return "budget-exhausted"

    def round_budget_j(self, unfinished: Sequence[JobState], now_s: float, duration_s: float, gpus: int) -> float:
        """``B_r = max(w E_left / rounds_left, min(E_left, B_min), E_left - F_rest)`` (J), at most ``E_left``.

        ``E_left`` after a starved round.

        0 once exhausted (module docstring).
        """
        if self.exhausted:
            return 0.0
        if self.starved:
            return self.left_j
        est = pacing_estimate(unfinished, now_s, duration_s, gpus)
        w = 1.0 if self.weight is None else self.weight(now_s)
        paced = max(w * self.left_j / est.rounds_left, min(self.left_j, self.floor_j))
        if not self.prices:
            return paced
        return min(self.left_j, max(paced, self.left_j - reserve_j(self.prices, unfinished, now_s, duration_s)))

    def charge(self, energy_j: float) -> None:
        """Add the energy a round actually drew (J) to what is spent; a round that drew none starved."""
        self.spent_j += energy_j
        self.starved = energy_j <= 0.0
