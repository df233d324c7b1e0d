"""Where a round's energy goes above every step at its best: the split by lever (issue 25, item 1).

A round's energy ``E = node + idle + dynamic`` (J, :mod:`planner.sim.accounting`) is split exactly as

    E = base + setting + count + gpu_type + pairing + idle_gpus + restarts

with, for a job-round of ``sigma`` steps on ``n`` GPUs of type ``g`` at setting ``s`` with slowdown
``rho`` (1 alone) and share ``h`` of its GPUs' static power (1 alone, 1/2 in a pair), the energy per
step it is charged

    e(g, n, s, rho, h) = n (P - Pidle_g) / X  +  h n w_g / (rho X)          (J/step)

``w_g = Pnode_g / K_g + Pidle_g`` (W, one GPU's share of a powered node) and ``X``, ``P`` the
exclusive profile:

* **setting** ``sigma (e(g, n, s) - min_s' e(g, n, s'))``: a dearer setting than the best on the same
  GPUs (same partner);
* **count** ``sigma (min_s' e(g, n, s') - min_{n', s'} e(g, n', s'))``: a dearer GPU count than the best the
  job allows on the same GPU type, in the same sharing state (a pair: where the pair has rates);
* **gpu_type** ``sigma (min_{n', s'} e(g, n', s') - min_{g', n', s'} e(g', n', s'))``: a dearer GPU type;
* **pairing** (job-rounds that ran alone) ``sigma max(0, e_alone* - e_pair*)``: ``e_alone*`` the best
  alone, ``e_pair*`` the best in a pair with a job type queued in the same round;
* **restarts** ``h n w_g tau`` per job-round that (re)started: GPUs held while no step is made;
* **idle_gpus**: the static energy ``node + idle`` not charged to a computing job or a restart:
  powered GPUs without a job, and GPUs whose job finished mid-round;
* **base** ``sum sigma e*``, every step at its best in its sharing state (after the pairing lever).

Over a replay, ``E - E_floor = setting + count + gpu_type + pairing + idle_gpus + restarts + (base - E_floor)``;
the last term is at most 0 up to the floor's own limits (the floor cannot give every step its best
partner), so the six levers bound what a schedule could still save. Each round also gets a
**phase**: ``saturated`` when the queued jobs request at least the cluster's GPUs, ``tail`` when no
job arrives after the round starts and it is not saturated, ``light`` otherwise.

Pure arithmetic on the round's instance, plan and outcome; no solver is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from wattplan.planner.contracts.domain import GpuType, Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.core.economics import ordered_pair_rates, usable_pair_rates
from wattplan.planner.sim.accounting import RoundOutcome

LEVERS = ("setting", "count", "gpu_type", "pairing", "idle_gpus", "restarts")
"""The six levers, in the order tables print them."""
PHASES = ("saturated", "light", "tail")
"""A round's phase (module docstring)."""


@dataclass(frozen=True, slots=True)
class LeverSplit:
    """One round's (or a sum of rounds') energy by lever (J); ``base + sum(levers) = E``."""

    base: float = 0.0
    setting: float = 0.0
    count: float = 0.0
    gpu_type: float = 0.0
    pairing: float = 0.0
    idle_gpus: float = 0.0
    restarts: float = 0.0

    def __add__(self, other: LeverSplit) -> LeverSplit:
        return LeverSplit(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def total_j(self) -> float:
        """``base`` plus every lever: the round's energy (J)."""
        return sum(getattr(self, f.name) for f in fields(self))


def phase_of(requested_gpus: int, total_gpus: int, arrivals_left: bool) -> str:
    """``saturated`` (requests >= GPUs), else ``light`` while jobs still arrive, else ``tail``."""
    if requested_gpus >= total_gpus:
        return "saturated"
    return "light" if arrivals_left else "tail"


def _per_step_j(g: GpuType, gpus: int, steps_per_s: float, power_w: float, rho: float, share: float) -> float:
    """``e = n (P - Pidle) / X + h n w_g / (rho X)`` (J/step)."""
    return gpus * (power_w - g.idle_power_w) / steps_per_s + share * gpus * g.powered_share_w / (rho * steps_per_s)


class LeverBook:
    """Best energies per step, cached per job type and sharing state over one replay's rounds.

    Every round's instance holds the same profiles, pairs and GPU types for the job types it queues
    (the replay's library), so a best energy found in one round holds in every round: :meth:`use`
    points the book at the round's instance, and the cache stays.
    """

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self._cache: dict[tuple[str, tuple[int, ...], str | None, str | None], float | None] = {}
        """``best``'s answers by argument: a plain dict, so that a replay checkpoint can pickle the book."""
        self._settings: dict[tuple[str, str, int, float, float], float | None] = {}
        """``best_setting``'s answers by argument (the GPU type by name)."""

    def __setstate__(self, state: dict[str, object]) -> None:
        """Unpickle, also a book checkpointed before ``best_setting`` kept its answers."""
        self.__dict__.update(state)
        self.__dict__.setdefault("_settings", {})

    def use(self, inst: Instance) -> LeverBook:
        """Read profiles from ``inst`` (the next round of the same replay) from now on; returns the book."""
        self.inst = inst
        return self

    def per_step(self, job_type: str, g: GpuType, gpus: int, setting: int, rho: float, share: float) -> float | None:
        """``e(g, n, s, rho, h)`` of ``job_type`` (J/step); None without a profile that makes steps."""
        p = self.inst.profile(job_type, g.name, gpus, setting)
        if p is None or p.steps_per_s <= 0 or rho <= 0:
            return None
        return _per_step_j(g, gpus, p.steps_per_s, p.power_w, rho, share)

    def best_setting(self, job_type: str, g: GpuType, gpus: int, rho: float, share: float) -> float | None:
        """``min_s e(g, n, s, rho, h)`` (J/step), kept per argument like :meth:`best`."""
        key = (job_type, g.name, gpus, rho, share)
        if key not in self._settings:
            costs = [self.per_step(job_type, g, gpus, s, rho, share) for s in g.settings]
            self._settings[key] = min((c for c in costs if c is not None), default=None)
        return self._settings[key]

    def best(
        self, job_type: str, counts: tuple[int, ...], partner: str | None, gpu_type: str | None = None
    ) -> float | None:
        """Least ``e`` over GPU types (``gpu_type`` only, if given), ``counts``, settings, beside ``partner``."""
        key = (job_type, counts, partner, gpu_type)
        if key not in self._cache:
            self._cache[key] = self._best_uncached(job_type, counts, partner, gpu_type)
        return self._cache[key]

    def _best_uncached(
        self, job_type: str, counts: tuple[int, ...], partner: str | None, gpu_type: str | None
    ) -> float | None:
        costs = []
        for g in self.inst.gpu_types:
            if gpu_type is not None and g.name != gpu_type:
                continue
            for n in counts:
                if n > g.total_gpus:
                    continue
                if partner is None:
                    rho, share = 1.0, 1.0
                else:
                    rates = usable_pair_rates(self.inst, job_type, partner, g, n)
                    if rates is None:
                        continue
                    rho, share = rates[0], 0.5
                c = self.best_setting(job_type, g, n, rho, share)
                if c is not None:
                    costs.append(c)
        return min(costs, default=None)

    def best_pair(self, job_type: str, counts: tuple[int, ...], partners: Iterable[str]) -> float | None:
        """Least ``e`` beside any of ``partners`` (job types), None when no pair has rates."""
        costs = [self.best(job_type, counts, b) for b in sorted(set(partners))]
        return min((c for c in costs if c is not None), default=None)


def round_levers(book: LeverBook, plan: Plan, out: RoundOutcome) -> LeverSplit:
    """The split of the module docstring for one simulated round (``out`` is ``plan``'s outcome on ``book.inst``)."""
    inst = book.inst
    running = {e.job_id: e for e in plan.running()}
    queued_types = [j.type for j in inst.jobs]
    base = setting = count = on_type = pairing = restarts = charged = 0.0
    for jid, p in out.jobs.items():
        e = running[jid]
        job = inst.job(jid)
        g = inst.gpu_type(e.gpu_type or "")
        n = e.gpus or 0
        partner = running.get(e.shares_with or "")
        share = 0.5 if partner is not None else 1.0
        rho = 1.0
        if partner is not None:
            rates = ordered_pair_rates(inst, job, inst.job(partner.job_id), g.name, n)
            rho = 1.0 if rates is None else rates[0]
        static_j = share * n * g.powered_share_w * p.compute_s
        charged += static_j
        if p.restarts:
            restarts += share * n * g.powered_share_w * inst.round.restart_s
        sigma = p.steps
        if sigma <= 0:
            continue
        actual = (p.dynamic_j + static_j) / sigma
        here = book.best_setting(job.type, g, n, rho, share) or actual
        partner_type = inst.job(partner.job_id).type if partner else None
        same_type = min(book.best(job.type, job.gpus, partner_type, g.name) or here, here)
        state = min(book.best(job.type, job.gpus, partner_type) or same_type, same_type)
        setting += sigma * (actual - here)
        count += sigma * (here - same_type)
        on_type += sigma * (same_type - state)
        if partner is None:
            others = list(queued_types)
            others.remove(job.type)
            pair_best = book.best_pair(job.type, job.gpus, others)
            if pair_best is not None and pair_best < state:
                pairing += sigma * (state - pair_best)
                state = pair_best
        base += sigma * state
    idle = out.energy.node_j + out.energy.idle_j - charged - restarts
    return LeverSplit(base, setting, count, on_type, pairing, idle, restarts)
