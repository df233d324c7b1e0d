"""What one allocation achieves and costs in a round (docs/design.md §2).

Pure arithmetic on an :class:`~planner.contracts.domain.Instance`; no solver is imported here, so
the plan validator, the greedy planner, the simulator and the formulations share it.

For a job ``j`` on ``n`` GPUs of type ``g`` at setting ``s`` with exclusive throughput
``X`` (steps/s) and power ``P`` (W per GPU):

* effective time ``t = max(T - tau, 0)`` if the job restarts, else ``t = T`` (s);
* a job restarts when it was waiting or its GPU type or count changes; a new setting or a
  new partner does not restart it;
* steps ``sigma = min(R, rho * X * t)`` with ``rho = 1`` alone and the pair slowdown shared;
* progress ``pi = sigma / R`` (fraction of the remaining work, dimensionless);
* run time ``r = sigma / (rho * X)`` (s), the time the job is actually computing;
* dynamic energy ``e = n * (P - Pidle_g) * sigma / X`` (J): each step costs what it costs
  alone, so sharing saves idle power only (a V100 pair measurement supports this).

Node energy of the round is ``u_g * T * (Pnode_g + K_g * Pidle_g)`` (J) for ``u_g``
powered-on nodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from wattplan.planner.contracts.domain import GpuType, Instance, Job, Profile


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One job's share of an allocation over the round."""

    job_id: str
    restarts: bool
    steps_per_s: float  # effective throughput rho * X (steps/s)
    power_w: float  # power per GPU while running (W)
    steps: float  # sigma (steps)
    progress: float  # pi = sigma / R
    run_s: float  # sigma / (rho * X) (s)
    energy_j: float  # dynamic energy n * (P - Pidle) * sigma / X (J)


def restarts(job: Job, gpu_type: str, gpus: int) -> bool:
    """True when the job (re)starts this round: waiting, or a new GPU type or count."""
    cur = job.current
    return cur is None or cur.gpu_type != gpu_type or cur.gpus != gpus


def effective_time_s(instance: Instance, job: Job, gpu_type: str, gpus: int) -> float:
    """``t = max(T - tau, 0)`` when the job restarts, else ``T`` (s)."""
    T = instance.round.duration_s
    if restarts(job, gpu_type, gpus):
        return max(T - instance.round.restart_s, 0.0)
    return T


def job_outcome(
    instance: Instance,
    job: Job,
    gpu_type: GpuType,
    gpus: int,
    setting: int,
    rho: float = 1.0,
) -> JobOutcome | None:
    """Outcome of ``job`` on ``gpus`` GPUs of ``gpu_type`` at ``setting``, slowed by ``rho``.

    Returns None when no profile covers ``(job.type, gpu_type, gpus, setting)``.
    """
    prof = instance.profile(job.type, gpu_type.name, gpus, setting)
    if prof is None:
        return None
    t = effective_time_s(instance, job, gpu_type.name, gpus)
    rate = rho * prof.steps_per_s
    steps = min(job.remaining_steps, rate * t) if rate > 0 else 0.0
    run_s = steps / rate if rate > 0 else 0.0
    energy = gpus * (prof.power_w - gpu_type.idle_power_w) * (steps / prof.steps_per_s if prof.steps_per_s > 0 else 0.0)
    return JobOutcome(
        job_id=job.id,
        restarts=restarts(job, gpu_type.name, gpus),
        steps_per_s=rate,
        power_w=prof.power_w,
        steps=steps,
        progress=steps / job.remaining_steps,
        run_s=run_s,
        energy_j=energy,
    )


def ordered_pair_rates(
    instance: Instance, job_a: Job, job_b: Job, gpu_type: str, gpus: int
) -> tuple[float, float] | None:
    """``(rho_a, rho_b)`` for two jobs sharing, respecting instance order for equal types.

    For two jobs of the same type the pair entry's ``rho_a`` goes to the job listed first
    in ``instance.jobs`` (docs/design.md §3.2).
    """
    if job_a.type == job_b.type:
        order = {j.id: i for i, j in enumerate(instance.jobs)}
        first, second = (job_a, job_b) if order[job_a.id] <= order[job_b.id] else (job_b, job_a)
        rates = instance.pair_rates(first.type, second.type, gpu_type, gpus)
        if rates is None:
            return None
        return rates if first is job_a else (rates[1], rates[0])
    return instance.pair_rates(job_a.type, job_b.type, gpu_type, gpus)


def exclusive_outcomes(instance: Instance, job: Job) -> Iterator[tuple[GpuType, int, int, JobOutcome]]:
    """Every profiled exclusive option ``(g, n, s)`` of ``job`` that fits the cluster, with its outcome.

    Options run in the order GPU type (instance order), allowed count, setting (ascending);
    counts above the type's ``N_g * K_g`` GPUs and settings without a profile are skipped.
    Zero-progress options are yielded too: callers decide what to do with them.
    """
    for g in instance.gpu_types:
        for n in job.gpus:
            if n > g.total_gpus:
                continue
            for s in g.settings:
                o = job_outcome(instance, job, g, n, s)
                if o is not None:
                    yield g, n, s, o


def full_cost_j(instance: Instance, g: GpuType, gpus: int, dynamic_j: float) -> float:
    """An allocation's full energy cost ``c = e + n * T * (Pnode_g / K_g + Pidle_g)`` (J).

    Its dynamic energy plus its GPUs' share of the powered node's base and idle power over
    the round; heuristics rank options by progress per joule of ``c``.
    """
    return dynamic_j + gpus * instance.round.duration_s * g.powered_share_w


def nodes_for(instance: Instance, gpus_used: Mapping[str, int]) -> dict[str, int]:
    """The fewest nodes that hold ``gpus_used``: ``u_g = ceil(used_g / K_g)`` per GPU type."""
    return {g: math.ceil(n / instance.gpu_type(g).gpus_per_node) for g, n in gpus_used.items() if n > 0}


def node_energy_j(instance: Instance, nodes_on: Mapping[str, int]) -> float:
    """``sum_g u_g * T * (Pnode_g + K_g * Pidle_g)`` (J)."""
    T = instance.round.duration_s
    return sum(instance.gpu_type(g).powered_node_w * T * u for g, u in nodes_on.items())


def powered_energy_j(instance: Instance, gpus_used: Mapping[str, int]) -> float:
    """Node and idle energy of the fewest nodes that hold ``gpus_used`` (J).

    ``sum_g ceil(used_g / K_g) * T * (Pnode_g + K_g * Pidle_g)`` (J).
    """
    return node_energy_j(instance, nodes_for(instance, gpus_used))


def profiled_options(instance: Instance, job_type: str, counts: Iterable[int]) -> Iterator[tuple[GpuType, Profile]]:
    """Every ``(g, profile)`` of ``job_type`` at a count in ``counts`` that fits ``g``'s pool, with progress."""
    for g in instance.gpu_types:
        for n in counts:
            if n > g.total_gpus:
                continue
            for s in g.settings:
                p = instance.profile(job_type, g.name, n, s)
                if p is not None and p.steps_per_s > 0:
                    yield g, p


def exclusive_power_w(g: GpuType, p: Profile) -> float:
    """An exclusive configuration on full nodes: ``n (P + Pnode_g / K_g)`` (W)."""
    return p.gpus * (p.power_w + g.node_power_w / g.gpus_per_node)


def pair_power_w(g: GpuType, gpus: int, p_a: Profile, p_b: Profile, rho_a: float, rho_b: float) -> float:
    """A pair on full nodes: ``n (Pidle + rho_a (P_a - Pidle) + rho_b (P_b - Pidle) + Pnode_g / K_g)`` (W)."""
    dynamic = rho_a * (p_a.power_w - g.idle_power_w) + rho_b * (p_b.power_w - g.idle_power_w)
    return gpus * (g.idle_power_w + dynamic + g.node_power_w / g.gpus_per_node)


def usable_pair_rates(
    instance: Instance, type_a: str, type_b: str, g: GpuType, gpus: int
) -> tuple[float, float] | None:
    """``(rho_a, rho_b)`` when the pair entry exists, fits ``g``'s pool and keeps ``min_pair_rate``, else None."""
    rates = instance.pair_rates(type_a, type_b, g.name, gpus)
    if rates is None or gpus > g.total_gpus or min(rates) < instance.round.min_pair_rate:
        return None
    return rates


def fastest_steps_per_s(instance: Instance, job_type: str, counts: Iterable[int]) -> float:
    """An upper bound on ``job_type``'s step rate at ``counts`` (steps/s; 0 without any option).

    ``max X`` over its exclusive options, times the largest pair rate any pair entry of the type has when that is
    above 1 (a shared GPU rarely speeds a job up, but nothing forbids it).
    """
    fastest = max((p.steps_per_s for _, p in profiled_options(instance, job_type, counts)), default=0.0)
    rhos = [r for q in instance.pairs for t, r in ((q.a, q.rho_a), (q.b, q.rho_b)) if t == job_type]
    return fastest * max([1.0, *rhos])


def best_step_energy_j(instance: Instance, job_type: str, counts: Iterable[int]) -> float:
    """``e = min n (P + Pnode_g / K_g) / X`` over the exclusive options (J/step; 0 without any)."""
    costs = [exclusive_power_w(g, p) / p.steps_per_s for g, p in profiled_options(instance, job_type, counts)]
    return min(costs, default=0.0)


def static_multiplier(
    instance: Instance, options: Mapping[str, Sequence[tuple[GpuType, Profile]]] | None = None
) -> float:
    """``rho >= 1``: the powered GPUs the queue needs per GPU it uses, when it cannot fill the cluster.

    Each job with steps left is put on its least-energy exclusive option (:func:`best_step_energy_j`'s),
    ``D_g`` the GPUs so used on type ``g``. When ``sum_g D_g`` reaches the cluster's GPUs, ``rho = 1``;
    otherwise ``rho = sum_g min(ceil(D_g / K_g) K_g, N_g K_g) / sum_g D_g``: the GPUs of the nodes that must be on
    over the GPUs that compute, so each used GPU carries ``rho`` times its own static power ``Pnode_g / K_g +
    Pidle_g`` (a last job on one GPU of an 8-GPU node carries the whole node, ``rho = 8``). ``options``: each
    job's :func:`profiled_options` by job id, when the caller has listed them already.
    """
    demand: dict[str, int] = {}
    for job in instance.jobs:
        if job.remaining_steps <= 0 or job.weight <= 0:
            continue
        listed = options[job.id] if options is not None else list(profiled_options(instance, job.type, job.gpus))
        if listed:
            g, p = min(listed, key=lambda gp: (exclusive_power_w(*gp) / gp[1].steps_per_s, gp[1].gpus))
            demand[g.name] = demand.get(g.name, 0) + p.gpus
    used = sum(demand.values())
    if used == 0 or used >= sum(g.total_gpus for g in instance.gpu_types):
        return 1.0
    needed = sum(
        min(math.ceil(demand.get(g.name, 0) / g.gpus_per_node) * g.gpus_per_node, g.total_gpus)
        for g in instance.gpu_types
    )
    return max(needed / used, 1.0)


def _credit_j(options: Iterable[tuple[GpuType, Profile]], rho: float) -> float:
    """:func:`step_credit_j` over listed options (J/step; 0 without any)."""
    costs = [
        p.gpus
        * (p.power_w - g.idle_power_w + rho * (g.node_power_w / g.gpus_per_node + g.idle_power_w))
        / p.steps_per_s
        for g, p in options
    ]
    return min(costs, default=0.0)


def step_credit_j(instance: Instance, job_type: str, counts: Iterable[int], rho: float) -> float:
    """``e_j = min n (P - Pidle_g + rho (Pnode_g / K_g + Pidle_g)) / X`` over the exclusive options (J/step).

    What a step of the job costs when each GPU it uses carries ``rho`` times its static power
    (:func:`static_multiplier`); ``rho = 1`` gives :func:`best_step_energy_j`. 0 without any option.
    """
    return _credit_j(profiled_options(instance, job_type, counts), rho)


def step_credits_j(instance: Instance) -> dict[str, float]:
    """``{job id: e_j}`` at the round's own ``rho`` (:func:`step_credit_j`, :func:`static_multiplier`; J/step).

    Lists each job's profiled options once for both (this runs on every build of the round model).
    """
    options = {job.id: list(profiled_options(instance, job.type, job.gpus)) for job in instance.jobs}
    rho = static_multiplier(instance, options)
    return {job_id: _credit_j(listed, rho) for job_id, listed in options.items()}


BUDGET_SLACK = 1e-9
"""Relative slack of :func:`within_budget`: the same energy summed in another order differs in its
last bits, and a budget set to exactly a plan's energy (a paced replay's last round) must admit it."""


def within_budget(energy_j: float, budget_j: float | None) -> bool:
    """``E <= B (1 + 1e-9)``, or True without a budget (J); the validator allows more (1e-6)."""
    return budget_j is None or energy_j <= budget_j * (1.0 + BUDGET_SLACK)


def full_power_w(instance: Instance) -> float:
    """Power with every node on and every GPU at its highest setting's profiled power.

    ``sum_g N_g * (Pnode_g + K_g * Pmax_g)`` where ``Pmax_g`` is the largest ``power_w`` of
    any profile on that GPU type (W). Budgets quoted as "x% of full power" use this.
    """
    total = 0.0
    for g in instance.gpu_types:
        pmax = max((p.power_w for p in instance.profiles if p.gpu_type == g.name), default=g.idle_power_w)
        total += g.nodes * (g.node_power_w + g.gpus_per_node * pmax)
    return total


def round_budget_j(
    duration_s: float,
    *,
    power_cap_w: float | None = None,
    fraction: float | None = None,
    full_power_w: float | None = None,
) -> float:
    """A round's energy budget ``B`` (J) from a power cap or from a fraction of full power.

    * a power cap ``C`` (W, ``power_cap_w``): ``B = C * T``;
    * a fraction ``f`` (``fraction``, dimensionless) of the cluster's full power ``P_full`` (W,
      ``full_power_w``, :func:`full_power_w`): ``B = f * P_full * T``, multiplied in that order;

    with ``T`` = ``duration_s`` (s). Give the cap, or the fraction with the full power. Not rounded: a
    round built from a trace floors it to whole joules (:func:`planner.rounds.builder.build_round`).
    """
    if power_cap_w is not None and fraction is None:
        return power_cap_w * duration_s
    if fraction is not None and full_power_w is not None and power_cap_w is None:
        return fraction * full_power_w * duration_s
    raise ValueError("give power_cap_w, or fraction and full_power_w")
