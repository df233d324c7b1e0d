"""Which idle nodes the agent powers down (``--power-down``) and which it boots early (``--power-up``; §11.6).

Slurm's power saving powers a node down once it has held no job for ``SuspendTime`` (600 s on the emulated
cluster), whatever the queue says. The agent knows more: the jobs that arrived lately and the GPUs left free on the
nodes that run. It powers an idle node down at once when no job is expected to need it before an off-and-on cycle
would have paid for itself, and leaves the rest to Slurm (whose ``SuspendTime`` still applies to them).

**Break-even.** A node kept on and idle for ``t`` seconds draws ``P t`` (``P`` its idle draw, GPUs included). Powered
down and booted again for the next job it draws ``P c`` over the cycle: ``c`` (``power_cycle_s``) is the time it
spends shutting down (``SuspendTimeout``) and booting (the ``ResumeProgram`` until its slurmd registers), both at
about idle draw, and that job waits the boot. So a node pays for being powered down only if it would stay idle
longer than ``c``.

**Demand** (a fluid estimate). ``lambda_S = sum of the GPUs requested by the managed jobs that arrived in the last
S seconds / S``, GPUs per second, and ``lambda = max(lambda_c, lambda_H)``: over the last cycle and over the last
hour (``H``, ``window_s``), so that a burst that began minutes ago counts at its own rate and not thinned over the
hour (seen live on two_waves: a second wave's first arrivals, read over the hour, powered a node down under the
wave). Each ``S`` is at most the time watched, since the earliest arrival
the agent knows of (Slurm's submit times, kept in its state), so that an idle cluster before a burst does not
thin the burst's rate (seen live: an agent started 290 s before the first job powered two nodes down in the
first wave's ramp-up, and the wave's next 8-GPU job waited for a boot); the GPUs expected within
``c`` are ``D = lambda c``. Arrivals take the free GPUs of the powered nodes that run jobs first (``F`` of them),
then the idle powered nodes in ``slurm.conf``'s order, ``K`` GPUs each. The ``k``-th idle node is needed once
``F + (k - 1) K`` GPUs have been asked for, expected at ``(F + (k - 1) K) / lambda``; it is kept on if that is
within ``c``, so the first ``ceil((D - F) / K)`` idle nodes stay on (none when ``D <= F``) and the others are
powered down.

**The boot priced against the JCT limits** (the reserve). The mean ``D`` is a knife's edge: with 6.8 GPUs
expected and 7 free, a run powers the node down, and a burst larger than its mean makes jobs wait a boot of
``R`` seconds (``R = c - SHUTDOWN_S``). A job that waits a boot finishes ``R`` later; if a share ``q`` of the
jobs do, the average JCT grows by ``q R / J`` (``J``: the median JCT Slurm alone gives the recent jobs, the
agent's reference). The JCT limit ``x`` (the tightest of ``--max-slowdown``, ``--max-jct-increase`` and
``--tail-bound``, :func:`tightest_limit`) allows
``q R / J <= x``, so the reserve keeps the share of the next cycle's GPUs asked for that find no powered GPU at
``q = min(1, x J / R)`` at most (``boot_wait_share``). The arrivals over a cycle are taken as compound Poisson: the
window's jobs at ``mu = n c / S`` per cycle, each asking for ``g`` GPUs with the window's shares ``p_g``; the GPUs
asked for, ``A``, have ``P(A = m)`` by Panjer's recursion ``f_0 = exp(-mu)``, ``f_m = (mu / m) sum_g g p_g
f_{m-g}`` (exact for that model; the normal law of the same mean and variance once ``mu`` is over 300 jobs a
cycle). With ``C`` powered GPUs free, ``E[(A - C)+] = E[A] - sum_{m < C} P(A > m)`` of them find none (the
overflow's share is ``E[(A - C)+] / E[A]``, ``E[A] = mu sum_g g p_g``). The first ``k`` idle nodes stay on, with
``k`` the least for which ``C = F + k K`` leaves a share of ``q`` at most, and never fewer than the mean rule
keeps. Jobs that end within the cycle are not counted (as in the mean rule): the share is an upper bound for the
model. Long jobs (``x J >= R``) leave the mean rule as it was; short ones keep a reserve: on 5-minute jobs under a
10% limit ``q`` is about 0.1. ``x = 0`` keeps every idle node on (no boot is within the limit); no limit at all
(``q = 1``) is the mean rule.

Nothing is powered down while a managed job waits (it may start on an idle node at the next round), nor before
``c`` seconds have passed since the first arrival the agent knows of (no estimate of the demand yet; with no job
seen at all, Slurm's ``SuspendTime`` alone acts).

**Power-up** (``--power-up``, :func:`choose_power_up`). Slurm boots a powered-down node when it gives it a job, and
the job waits the boot. When the queue grows faster than the powered nodes' free GPUs take it, the agent boots
nodes ahead of the jobs. Over the last cycle the managed jobs asked for ``A_c`` GPUs and those that ended had asked
for ``E_c``; both are expected again over the next cycle, so ``N_c = A_c - E_c`` more GPUs will be held, and the
first ``ceil((N_c - F) / K)`` nodes of the reserve are to be powered (idle, or booting with no job), the missing
ones booted now (``scontrol update NodeName=N State=POWER_UP``) in ``slurm.conf``'s order. Only the last cycle
counts: a burst is taken to last one more cycle, and once its arrivals stop, or jobs end as fast as they come,
nothing more is booted (counting arrivals alone, a steady queue booted nodes it never used: gavel_mix in the
replay, +1.2% and +2.7% energy). Since ``N_c <= A_c <= D``, the power-down rule keeps every node this rule boots
(it never powers down what the same arrivals boot). A node booted for nothing costs one cycle, ``P c``; a job that
finds it booted waits less than the boot, by up to the boot's whole length.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

SHUTDOWN_S = 60.0
"""Emulated seconds a server takes to shut down, part of the off-and-on cycle ``c``: the emulated cluster's
``SuspendTimeout`` (:meth:`planner.cluster.slurm_daemons.PowerSave.real_times`) and the simulated Slurm's default
(:class:`planner.control.sim_slurm.PowerSaving`), one constant so that the agent's ``c`` is the same live and in
the replay. Kept in this module, which imports no other planner module, so that the suspend program slurmctld runs
(:mod:`planner.cluster.power`) starts in a fraction of a second."""
WINDOW_S = 3600.0
"""The arrivals that set the demand rate: those of the last hour (s, agent clock)."""
EXACT_JOBS = 300.0
"""Up to this many jobs expected per cycle the demand's law is Panjer's (exact); above, the normal law."""


@dataclass(frozen=True, slots=True)
class PowerDownChoice:
    """The idle nodes to power down now and those kept on, and why (:func:`choose_power_down`)."""

    down: tuple[str, ...]
    kept: tuple[str, ...]
    demand_gpus: float
    """``D``: the GPUs expected to be asked for within the off-and-on cycle."""
    why: str
    reserved: tuple[str, ...] = ()
    """The idle nodes kept on beyond what the mean rule keeps: the reserve the JCT limit asks for."""


def demand_rate(arrivals: Iterable[tuple[float, int]], now_s: float, watched_s: float, window_s: float) -> float:
    """``lambda`` (GPUs/s): the GPUs of the ``(arrival s, GPUs)`` in ``[now - S, now]``, over ``S``.

    ``S = min(window_s, watched_s)``; infinite when the agent has watched nothing yet.
    """
    span = min(window_s, watched_s)
    if span <= 0.0:
        return math.inf
    return sum(g for t, g in arrivals if now_s - span <= t <= now_s) / span


def tightest_limit(*limits: float | None) -> float | None:
    """``x``: the tightest of the JCT limits set; None when none is.

    The limits are fractions: the slowdown limit, the average JCT bound and the tail bound.
    """
    return min((x for x in limits if x is not None), default=None)


def boot_wait_share(jct_limit: float | None, jct_s: float, boot_s: float) -> float:
    """``q = min(1, x J / R)``: the share of jobs the JCT limit lets wait a boot (module docstring).

    ``jct_limit``: ``x`` (a fraction; None: no limit, ``q = 1``); ``jct_s``: ``J``, the recent jobs' median JCT
    under Slurm alone (s); ``boot_s``: ``R`` (s). ``q R / J`` is what a share ``q`` of the jobs waiting ``R`` adds
    to the average JCT.
    """
    if jct_limit is None or boot_s <= 0.0:
        return 1.0
    return min(1.0, max(0.0, jct_limit) * max(0.0, jct_s) / boot_s)


def demand_cdf(sizes: Counter[int], jobs_per_cycle: float, upto: int) -> list[float]:
    """``[P(A <= m) for m in 0..upto]``: the GPUs ``A`` asked for over a cycle, compound Poisson.

    ``jobs_per_cycle``: ``mu``; ``sizes``: how many of the window's jobs asked for each GPU count (their shares are
    ``p_g``). Panjer's recursion ``f_0 = exp(-mu)``, ``f_m = (mu / m) sum_g g p_g f_{m-g}`` up to
    :data:`EXACT_JOBS` jobs a cycle; above, the normal law of mean ``mu E[g]`` and variance ``mu E[g^2]``.
    """
    total = sum(sizes.values())
    if total == 0 or jobs_per_cycle <= 0.0:
        return [1.0] * (upto + 1)
    shares = {g: n / total for g, n in sizes.items() if g > 0}
    if jobs_per_cycle > EXACT_JOBS:
        mean = jobs_per_cycle * sum(g * p for g, p in shares.items())
        sd = math.sqrt(jobs_per_cycle * sum(g * g * p for g, p in shares.items()))
        law = NormalDist(mean, sd)
        return [law.cdf(m + 0.5) for m in range(upto + 1)]
    f = [math.exp(-jobs_per_cycle)]
    for m in range(1, upto + 1):
        f.append(jobs_per_cycle / m * sum(g * p * f[m - g] for g, p in shares.items() if g <= m))
    cdf, acc = [], 0.0
    for v in f:
        acc += v
        cdf.append(min(acc, 1.0))
    return cdf


def overflow_shares(cdf: Sequence[float], mean: float) -> list[float]:
    """``[E[(A - C)+] / E[A] for C in 0..len(cdf)]``: the share of the GPUs asked for beyond ``C`` free ones.

    ``cdf``: ``P(A <= m)`` for ``m = 0, 1, ...`` (:func:`demand_cdf`); ``mean``: ``E[A] > 0``.
    ``E[(A - C)+] = E[A] - E[min(A, C)]`` and ``E[min(A, C)] = sum_{m < C} P(A > m)``.
    """
    shares, within = [1.0], 0.0
    for p in cdf:
        within += 1.0 - p
        shares.append(max(0.0, mean - within) / mean)
    return shares


def reserve_nodes(
    arrivals: Sequence[tuple[float, int]],
    now_s: float,
    span_s: float,
    power_cycle_s: float,
    free_gpus: int,
    gpus_per_node: int,
    idle: int,
    overflow_share: float,
) -> int:
    """The least ``k <= idle`` for which ``C = F + k K`` free GPUs leave a share of ``q`` at most unserved.

    ``A``: the GPUs asked for over the next cycle, from the window ``[now - S, now]`` (:func:`demand_cdf`, ``mu = n
    c / S`` for its ``n`` arrivals); the share: :func:`overflow_shares`; ``q``: ``overflow_share``. ``q >= 1`` or no
    arrival needs no reserve (0); ``idle`` when no ``k`` does.
    """
    if overflow_share >= 1.0 or span_s <= 0.0:
        return 0
    sizes = Counter(g for t, g in arrivals if now_s - span_s <= t <= now_s if g > 0)
    jobs = sum(sizes.values())
    if jobs == 0:
        return 0
    mu = jobs * power_cycle_s / span_s
    mean = mu * sum(g * n for g, n in sizes.items()) / jobs
    shares = overflow_shares(demand_cdf(sizes, mu, free_gpus + idle * gpus_per_node), mean)
    for k in range(idle + 1):
        if shares[free_gpus + k * gpus_per_node] <= overflow_share + 1e-12:
            return k
    return idle


def choose_power_down(
    idle: Sequence[str],
    gpus_per_node: int,
    free_gpus: int,
    arrivals: Iterable[tuple[float, int]],
    now_s: float,
    watched_s: float,
    power_cycle_s: float,
    waiting: int,
    window_s: float = WINDOW_S,
    overflow_share: float = 1.0,
) -> PowerDownChoice:
    """Which of the ``idle`` powered nodes (in ``slurm.conf``'s order) to power down now (module docstring).

    ``free_gpus``: ``F``, the free GPUs of the powered nodes that run jobs; ``arrivals``: ``(arrival s, GPUs
    requested)`` of the managed jobs seen; ``watched_s``: the time since the first arrival the agent knows of (s);
    ``power_cycle_s``: ``c``; ``waiting``: managed jobs the round left waiting; ``overflow_share``: ``q``
    (:func:`boot_wait_share`; 1: the mean rule alone).
    """
    if not idle:
        return PowerDownChoice((), (), 0.0, "no idle node")
    if waiting:
        return PowerDownChoice((), tuple(idle), math.inf, f"{waiting} managed job(s) wait: every idle node stays on")
    if watched_s < power_cycle_s:
        return PowerDownChoice((), tuple(idle), math.inf, f"{watched_s:.0f} s since the first arrival: under a cycle")
    arrivals = list(arrivals)
    spans = (min(power_cycle_s, watched_s), min(window_s, watched_s))
    demand = max(demand_rate(arrivals, now_s, watched_s, span) for span in spans) * power_cycle_s
    mean_keep = max(0, math.ceil((demand - free_gpus) / gpus_per_node - 1e-9))
    reserve = max(
        reserve_nodes(arrivals, now_s, span, power_cycle_s, free_gpus, gpus_per_node, len(idle), overflow_share)
        for span in spans
    )
    keep = min(len(idle), max(mean_keep, reserve))
    kept, down = tuple(idle[:keep]), tuple(idle[keep:])
    why = f"{demand:.1f} GPUs expected within {power_cycle_s:.0f} s, {free_gpus} free on running nodes: "
    if reserve > mean_keep:
        share = f"{overflow_share:.0%}"
        why += f"{len(kept)} idle node(s) kept on, so that at most {share} of the GPUs asked for wait a boot"
    else:
        why += f"{len(kept)} idle node(s) kept on"
    return PowerDownChoice(down, kept, demand, why, tuple(idle[min(mean_keep, keep) : keep]))


@dataclass(frozen=True, slots=True)
class PowerUpChoice:
    """The powered-down nodes to boot now, and why (:func:`choose_power_up`)."""

    up: tuple[str, ...]
    demand_gpus: float
    """``N_c``: the GPUs asked for less those of the jobs that ended over the last off-and-on cycle, expected again
    over the next."""
    why: str


def choose_power_up(
    off: Sequence[str],
    standing: int,
    gpus_per_node: int,
    free_gpus: int,
    arrivals: Iterable[tuple[float, int]],
    departures: Iterable[tuple[float, int]],
    now_s: float,
    watched_s: float,
    power_cycle_s: float,
) -> PowerUpChoice:
    """Which of the ``off`` nodes (powered down, in ``slurm.conf``'s order) to boot now (module docstring).

    ``standing``: the reserve's nodes now, those powered or booting with no job; ``free_gpus``: ``F``, the free GPUs
    of the powered nodes that run jobs; ``departures``: ``(end s, GPUs requested)`` of the managed jobs that ended;
    the rest as :func:`choose_power_down`. ``ceil((N_c - F) / K) - standing`` nodes are booted (none before a cycle
    was watched).
    """
    if not off or watched_s < power_cycle_s:
        return PowerUpChoice((), 0.0, "no powered-down node" if not off else "under a cycle watched")
    asked = demand_rate(arrivals, now_s, watched_s, power_cycle_s) * power_cycle_s
    ended = demand_rate(departures, now_s, watched_s, power_cycle_s) * power_cycle_s
    growth = asked - ended
    need = max(0, math.ceil((growth - free_gpus) / gpus_per_node - 1e-9)) - standing
    up = tuple(off[: max(0, need)])
    why = (
        f"{asked:.1f} GPUs asked for and {ended:.1f} ended in the last {power_cycle_s:.0f} s, {free_gpus} free on "
        f"running nodes and {standing} idle node(s): {len(up)} booted"
    )
    return PowerUpChoice(up, growth, why)
