"""Online profile learning: each round's observations correct what the planner believes.

The learner keeps, for every quantity the planner uses, a correction *ratio* to the prior library
(``--profiles``) and estimates its logarithm by hierarchical shrinkage. For a cell ``c`` with
observations ``r_i = observed_i / prior_i`` of weights ``w_i`` (round-equivalents of compute,
:mod:`planner.sim.telemetry`) and a parent estimate ``m_parent``:

    log r_c = (sum_i w_i log r_i + k * log m_parent) / (sum_i w_i + k)

so a cell with no evidence takes its parent's correction and one with much evidence its own
mean; ``k`` (:attr:`LearnConfig.prior_weight`) is what the parent is worth in round-equivalents.
The hierarchy, cell -> parent -> prior (ratio 1, weight :attr:`LearnConfig.pool_weight`):

* throughput ``X``: job (job id, g, n) -> type (type, g, n) -> pool (g, n) -> 1. A ratio measured at
  one setting corrects every setting of the cell (the power-limit curve's shape is kept: energy
  per step held within about 1% in the logs, time did not). Once the cluster's speedup of ``n``
  GPUs over one, ``S(g, n)``, has been observed (a job's rate on ``n`` GPUs over its type's believed
  1-GPU rate, pooled over types), a type's ``n``-GPU cell takes ``X(1) * S(g, n)`` as its parent
  instead: scaling is mostly a property of the node (interconnect, data loading), not of the model;
* dynamic power ``P - Pidle`` per GPU: type (type, g, n) -> pool (g, n) -> 1 (jobs alone only; an
  observation is used once an idle GPU of its type has been measured, with the idle power believed then);
* pair rates ``rho``: side (own type, partner type, g, n) -> pool (g, n) -> 1, the observed shared
  rate divided by the current belief of the job's exclusive rate;
* idle power per GPU and node power per GPU type: observed means, prior weight ``k``.

The planner plans with one profile per *type* (the round model is written per type), so the
type-level estimates go into its instances; the job-level estimates are kept
(:meth:`ProfileLearner.job_estimate`). An observed pair whose corrected rate falls below
``min_pair_rate`` drops out of the model, so it is not repeated.

Unobserved counts next to an observed one use the telemetry's utilisation ``u`` (the share of time
the GPUs compute) instead of the pooled correction:

* twice the GPUs (``model``): a step's compute share halves and its waiting share (data loading,
  communication) does not, ``X(2m) = X(m) / (u / 2 + 1 - u)``, Pollux-style; a compute-bound job
  (``u = 1``) is predicted to scale linearly, so the planner tries it and learns the real rate;
* half the GPUs (``explore``): when a job alone on ``n > 1`` GPUs shows ``u`` below
  :attr:`LearnConfig.explore_utilisation`, its GPUs wait more than they compute, and ``n / 2`` is
  believed to run at the rate of ``n`` GPUs with the same dynamic energy per step (the optimistic
  bound: a job that waits on data loses nothing on fewer GPUs).

The next round's observation replaces either guess. The loop's learner sees no utilisation (the agent's windows
carry steps and energy): it learns rates and pair rates from the jobs' steps, idle power per GPU type from the
GPUs no job held (their energy over their idle time), and dynamic power from the jobs alone on their GPUs once
that type's idle power has been seen; not node power.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from wattplan.planner.contracts.domain import GpuType, PairSlowdown, Profile
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.telemetry import GpuObservation, JobObservation

Basis = str  # "observed" | "model" | "explore" | "pooled" | "prior": what the belief of a decision rests on


@dataclass(frozen=True, slots=True)
class LearnConfig:
    """Knobs of the learner (weights in round-equivalents of observation)."""

    prior_weight: float = 0.1
    """``k``: what a parent estimate is worth against a cell's own observations."""
    pool_weight: float = 1.0
    """What the prior (ratio 1) is worth against a pool's observations."""
    explore_utilisation: float = 0.5
    """Below this utilisation a job on ``n > 1`` GPUs makes ``n / 2`` worth trying."""
    observed_weight: float = 0.5
    """Evidence a cell needs to count as observed (round-equivalents)."""


@dataclass
class _LogMeans:
    """Weighted sums of log ratios per key: ``sum w`` and ``sum w log r``."""

    w: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))
    wl: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, key: Hashable, ratio: float, weight: float) -> None:
        if ratio > 0 and weight > 0 and math.isfinite(ratio):
            self.w[key] += weight
            self.wl[key] += weight * math.log(ratio)

    def log_estimate(self, key: Hashable, parent_log: float, k: float) -> float:
        """``(sum w log r + k * parent_log) / (sum w + k)``."""
        w = self.w.get(key, 0.0)
        return (self.wl.get(key, 0.0) + k * parent_log) / (w + k) if w + k > 0 else parent_log

    def weight(self, key: Hashable) -> float:
        return self.w.get(key, 0.0)


@dataclass
class _Means:
    """Weighted means of a value per key with a prior value of weight ``k``."""

    w: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))
    wv: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, key: Hashable, value: float, weight: float) -> None:
        if weight > 0 and math.isfinite(value):
            self.w[key] += weight
            self.wv[key] += weight * value

    def estimate(self, key: Hashable, prior: float, k: float) -> float:
        w = self.w.get(key, 0.0)
        return (self.wv.get(key, 0.0) + k * prior) / (w + k)


class ProfileLearner:
    """Beliefs of one replayed policy, starting at the prior context (see the module docstring)."""

    def __init__(self, prior: ClusterContext, config: LearnConfig | None = None):
        self.prior = prior
        self.cfg = config or LearnConfig()
        self._x = _LogMeans()  # keys: ("pool", g, n), (type, g, n), ("job", id, g, n)
        self._p = _LogMeans()  # dynamic power: ("pool", g, n), (type, g, n)
        self._rho = _LogMeans()  # ("pool", g, n), (type, partner, g, n)
        self._idle = _Means()
        self._node = _Means()
        self._utilisation: dict[tuple[str, str, int], float] = {}
        self._speedup = _LogMeans()  # ("pool", g, n): observed X(n) over the believed X(1) of the same type
        self._pending_power: dict[str, list[JobObservation]] = defaultdict(list)
        self._prior_profiles = {
            (p.type, p.gpu_type, p.gpus, p.setting): p for ps in prior.profiles_by_type.values() for p in ps
        }
        self._prior_idle = {g.name: g.idle_power_w for g in prior.gpu_types}
        self._prior_speedup: dict[tuple[str, str, int], float] = {}
        for (t, g, n, s), p in self._prior_profiles.items():
            one = self._prior_profiles.get((t, g, 1, s))
            if n > 1 and one is not None and one.steps_per_s > 0:
                self._prior_speedup[(t, g, n)] = p.steps_per_s / one.steps_per_s
        self._context: ClusterContext | None = prior

    # -- estimates --------------------------------------------------------------------------
    def _pool_log(self, means: _LogMeans, g: str, n: int) -> float:
        return means.log_estimate(("pool", g, n), 0.0, self.cfg.pool_weight)

    def x_ratio(self, job_type: str, g: str, n: int) -> float:
        """Belief of ``X_true / X_prior`` for (type, g, n), shrunk to :meth:`_x_parent_log`."""
        k = self.cfg.prior_weight
        return math.exp(self._x.log_estimate((job_type, g, n), self._x_parent_log(job_type, g, n), k))

    def _x_parent_log(self, job_type: str, g: str, n: int) -> float:
        """What a throughput cell without observations believes (log of the ratio to the prior).

        With the cluster's pooled speedup ``S(g, n)`` observed: ``X(n) = X(1) * S(g, n)``, i.e.
        ``log r = log r(type, g, 1) + log S(g, n) - log S_prior(type, g, n)``; else the pooled ratio of (g, n).
        """
        prior_s = self._prior_speedup.get((job_type, g, n))
        if n > 1 and prior_s and self._speedup.weight(("pool", g, n)) >= self.cfg.observed_weight:
            log_s = self._speedup.log_estimate(("pool", g, n), 0.0, 0.0)
            return math.log(self.x_ratio(job_type, g, 1)) + log_s - math.log(prior_s)
        return self._pool_log(self._x, g, n)

    def power_ratio(self, job_type: str, g: str, n: int) -> float:
        """Belief of ``(P - Pidle)_true / (P - Pidle)_prior`` for (type, g, n)."""
        k = self.cfg.prior_weight
        return math.exp(self._p.log_estimate((job_type, g, n), self._pool_log(self._p, g, n), k))

    def rho_ratio(self, own: str, partner: str, g: str, n: int) -> float:
        """Belief of ``rho_true / rho_prior`` for ``own``'s side of a pair with ``partner``."""
        k = self.cfg.prior_weight
        return math.exp(self._rho.log_estimate((own, partner, g, n), self._pool_log(self._rho, g, n), k))

    def evidence(self, quantity: str, key: Hashable) -> float:
        """Round-equivalents observed for ``key`` of ``quantity`` (``throughput``, ``power`` or ``pair``)."""
        return {"throughput": self._x, "power": self._p, "pair": self._rho}[quantity].weight(key)

    def evidence_idle(self, g: str) -> float:
        """Idle GPU-rounds observed of GPU type ``g``."""
        return self._idle.w.get(g, 0.0)

    def job_estimate(self, job_id: str, job_type: str, g: str, n: int) -> float:
        """Belief of ``X_true / X_prior`` for one job: its own rounds, shrunk to its type's estimate."""
        parent = math.log(self.x_ratio(job_type, g, n))
        return math.exp(self._x.log_estimate(("job", job_id, g, n), parent, self.cfg.prior_weight))

    def idle_power_w(self, g: str) -> float:
        """Belief of ``g``'s idle power per GPU (W)."""
        return self._idle.estimate(g, self._prior_idle[g], self.cfg.prior_weight)

    def node_power_w(self, g: GpuType) -> float:
        """Belief of ``g``'s node power (W)."""
        return self._node.estimate(g.name, g.node_power_w, self.cfg.prior_weight)

    def basis(self, job_type: str, g: str, n: int, partner: str | None = None) -> Basis:
        """What the belief of a decision rests on: ``observed``, ``explore``, ``pooled`` or ``prior``."""
        need = self.cfg.observed_weight
        if partner is not None and self._rho.weight((job_type, partner, g, n)) < need:
            return "pooled" if self._rho.weight(("pool", g, n)) > 0 else "prior"
        if self._x.weight((job_type, g, n)) >= need:
            return "observed"
        if self._explore_source(job_type, g, n) is not None:
            return "explore"
        if self._speedup_known(g, n):
            return "pooled"
        if self._scale_up_source(job_type, g, n) is not None:
            return "model"
        return "pooled" if self._x.weight(("pool", g, n)) > 0 else "prior"

    def _explore_source(self, job_type: str, g: str, n: int) -> int | None:
        """The observed count ``2n`` whose low utilisation makes ``n`` worth trying, if any."""
        if self._x.weight((job_type, g, n)) > 0:
            return None
        u = self._utilisation.get((job_type, g, 2 * n))
        return 2 * n if u is not None and u < self.cfg.explore_utilisation else None

    def _speedup_known(self, g: str, n: int) -> bool:
        """Whether the cluster's speedup of ``n`` GPUs of ``g`` over one has been observed."""
        return n > 1 and self._speedup.weight(("pool", g, n)) >= self.cfg.observed_weight

    def _scale_up_source(self, job_type: str, g: str, n: int) -> tuple[int, float] | None:
        """The observed count ``n / 2`` and its utilisation, from which ``n`` is predicted (unobserved ``n``)."""
        if n < 2 or n % 2 or self._x.weight((job_type, g, n)) > 0:
            return None
        u = self._utilisation.get((job_type, g, n // 2))
        return (n // 2, u) if u is not None and u > 0 else None

    # -- observing --------------------------------------------------------------------------
    def observe(self, jobs: Iterable[JobObservation], gpus: Iterable[GpuObservation]) -> None:
        """Add one round's observations (exclusive first, so pairs divide by the updated rates)."""
        ordered = sorted(jobs, key=lambda o: o.partner_type is not None)
        for o in ordered:
            prior = self._prior_profiles.get((o.job_type, o.gpu_type, o.gpus, o.setting))
            if prior is None or prior.steps_per_s <= 0:
                continue
            if o.partner_type is None:
                r = o.steps_per_s / prior.steps_per_s
                self._x.add(("pool", o.gpu_type, o.gpus), r, o.weight)
                self._x.add((o.job_type, o.gpu_type, o.gpus), r, o.weight)
                self._x.add(("job", o.job_id, o.gpu_type, o.gpus), r, o.weight)
                one = self._prior_profiles.get((o.job_type, o.gpu_type, 1, o.setting))
                if (
                    o.gpus > 1
                    and one is not None
                    and self._x.weight((o.job_type, o.gpu_type, 1)) >= self.cfg.observed_weight
                ):
                    x_one = one.steps_per_s * self.x_ratio(o.job_type, o.gpu_type, 1)
                    self._speedup.add(("pool", o.gpu_type, o.gpus), o.steps_per_s / x_one, o.weight)
                if o.power_w is not None:
                    self._pending_power[o.gpu_type].append(o)
                if o.utilisation is not None:
                    self._utilisation[(o.job_type, o.gpu_type, o.gpus)] = o.utilisation
            else:
                exclusive = prior.steps_per_s * self.x_ratio(o.job_type, o.gpu_type, o.gpus)
                rho_prior = self._prior_rho(o.job_type, o.partner_type, o.gpu_type, o.gpus)
                if rho_prior is None or rho_prior <= 0:
                    continue
                r = (o.steps_per_s / exclusive) / rho_prior
                self._rho.add(("pool", o.gpu_type, o.gpus), r, o.weight)
                self._rho.add((o.job_type, o.partner_type, o.gpu_type, o.gpus), r, o.weight)
        for gobs in gpus:
            if gobs.idle_power_w is not None:
                self._idle.add(gobs.gpu_type, gobs.idle_power_w, gobs.idle_weight)
            self._node.add(gobs.gpu_type, gobs.node_power_w, gobs.node_weight)
        self._learn_power()
        self._context = None

    def _learn_power(self) -> None:
        """Dynamic power ratios of the waiting observations of GPU types whose idle power has been seen.

        A job's dynamic power is its GPUs' power minus the idle power, so an observation waits until an
        idle GPU of its type has been measured (the prior's idle power would bias a small dynamic power).
        """
        for g, waiting in self._pending_power.items():
            if not waiting or self._idle.w.get(g, 0.0) <= 0:
                continue
            idle = self.idle_power_w(g)
            for o in waiting:
                prior = self._prior_profiles[(o.job_type, o.gpu_type, o.gpus, o.setting)]
                dyn_prior = prior.power_w - self._prior_idle[g]
                if o.power_w is not None and dyn_prior > 0:
                    rp = max(o.power_w - idle, 1e-3) / dyn_prior
                    self._p.add(("pool", g, o.gpus), rp, o.weight)
                    self._p.add((o.job_type, g, o.gpus), rp, o.weight)
            waiting.clear()

    def _prior_rho(self, own: str, partner: str, g: str, n: int) -> float | None:
        """The prior's rate of ``own`` when sharing with ``partner`` (same-type pairs: ``rho_a``)."""
        for p in self._pairs_by_key().get((own, partner, g, n), ()):
            return p.rho_a if p.a == own else p.rho_b
        return None

    def _pairs_by_key(self) -> Mapping[tuple[str, str, str, int], tuple[PairSlowdown, ...]]:
        if not hasattr(self, "_pair_index"):
            index: dict[tuple[str, str, str, int], list[PairSlowdown]] = defaultdict(list)
            for p in self.prior.pairs:
                index[(p.a, p.b, p.gpu_type, p.gpus)].append(p)
                index[(p.b, p.a, p.gpu_type, p.gpus)].append(p)
            self._pair_index = {k: tuple(v) for k, v in index.items()}
        return self._pair_index

    # -- the planner's context --------------------------------------------------------------
    def context(self) -> ClusterContext:
        """The cluster context the planner sees now: prior profiles times the current corrections."""
        if self._context is None:
            self._context = self._build_context()
        return self._context

    def _build_context(self) -> ClusterContext:
        gpu_types = tuple(
            replace(g, idle_power_w=self.idle_power_w(g.name), node_power_w=self.node_power_w(g))
            for g in self.prior.gpu_types
        )
        idle = {g.name: g.idle_power_w for g in gpu_types}
        by_type = {
            t: tuple(self._belief_profile(p, idle[p.gpu_type]) for p in ps)
            for t, ps in self.prior.profiles_by_type.items()
        }
        pairs = tuple(
            replace(
                p,
                rho_a=p.rho_a * self.rho_ratio(p.a, p.b, p.gpu_type, p.gpus),
                rho_b=p.rho_b * self.rho_ratio(p.b, p.a, p.gpu_type, p.gpus),
            )
            for p in self.prior.pairs
        )
        return ClusterContext(gpu_types, by_type, pairs, self.prior.rules)

    def _belief_profile(self, p: Profile, idle_w: float) -> Profile:
        """``X = X_prior * r_X``, ``P = Pidle + (P_prior - Pidle_prior) * r_P``; explore and model cells apart."""
        src = self._explore_source(p.type, p.gpu_type, p.gpus)
        up = (
            None
            if src is not None or self._speedup_known(p.gpu_type, p.gpus)
            else self._scale_up_source(p.type, p.gpu_type, p.gpus)
        )
        if up is not None and (scaled := self._scaled_up(p, idle_w, *up)) is not None:
            return scaled
        dyn_prior = max(0.0, p.power_w - self._prior_idle[p.gpu_type])
        if src is not None:
            big = self._prior_profiles.get((p.type, p.gpu_type, src, p.setting))
            if big is not None:
                rate = big.steps_per_s * self.x_ratio(p.type, p.gpu_type, src)
                dyn_big = max(0.0, big.power_w - self._prior_idle[p.gpu_type]) * self.power_ratio(
                    p.type, p.gpu_type, src
                )
                # Same rate on half the GPUs with the same dynamic energy per step: twice the power per GPU.
                return replace(p, steps_per_s=rate, power_w=idle_w + 2.0 * dyn_big)
        rate = p.steps_per_s * self.x_ratio(p.type, p.gpu_type, p.gpus)
        return replace(p, steps_per_s=rate, power_w=idle_w + dyn_prior * self.power_ratio(p.type, p.gpu_type, p.gpus))

    def _scaled_up(self, p: Profile, idle_w: float, half: int, u: float) -> Profile | None:
        """Twice the GPUs of an observed cell by the utilisation model (see the module docstring).

        A step on ``m`` GPUs takes ``t = 1 / X(m)``: a share ``u`` computing, which halves on ``2m`` GPUs,
        and ``1 - u`` waiting (data, communication), which does not: ``X(2m) = X(m) / (u / 2 + 1 - u)``.
        The GPUs then compute a share ``u' = (u / 2) / (u / 2 + 1 - u)`` of the time, and the dynamic power
        per GPU follows: ``(P - Pidle)(2m) = (P - Pidle)(m) * u' / u``.
        """
        small = self._prior_profiles.get((p.type, p.gpu_type, half, p.setting))
        if small is None:
            return None
        base = self._belief_profile(small, idle_w)
        stretch = u / 2.0 + 1.0 - u
        u_big = (u / 2.0) / stretch
        return replace(p, steps_per_s=base.steps_per_s / stretch, power_w=idle_w + (base.power_w - idle_w) * u_big / u)
