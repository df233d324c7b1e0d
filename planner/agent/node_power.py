"""Which idle nodes the agent powers down at once (``--power-down``, with Slurm's power saving; docs/design.md §11.6).

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

Nothing is powered down while a managed job waits (it may start on an idle node at the next round), nor before
``c`` seconds have passed since the first arrival the agent knows of (no estimate of the demand yet; with no job
seen at all, Slurm's ``SuspendTime`` alone acts). The agent never powers a node up: Slurm boots a
powered-down node when it gives it a job.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WINDOW_S = 3600.0
"""The arrivals that set the demand rate: those of the last hour (s, agent clock)."""


@dataclass(frozen=True, slots=True)
class PowerDownChoice:
    """The idle nodes to power down now and those kept on, and why (:func:`choose_power_down`)."""

    down: tuple[str, ...]
    kept: tuple[str, ...]
    demand_gpus: float
    """``D``: the GPUs expected to be asked for within the off-and-on cycle."""
    why: str


def demand_rate(arrivals: Iterable[tuple[float, int]], now_s: float, watched_s: float, window_s: float) -> float:
    """``lambda`` (GPUs/s): the GPUs of the ``(arrival s, GPUs)`` in ``[now - S, now]``, over ``S``.

    ``S = min(window_s, watched_s)``; infinite when the agent has watched nothing yet.
    """
    span = min(window_s, watched_s)
    if span <= 0.0:
        return math.inf
    return sum(g for t, g in arrivals if now_s - span <= t <= now_s) / span


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
) -> PowerDownChoice:
    """Which of the ``idle`` powered nodes (in ``slurm.conf``'s order) to power down now (module docstring).

    ``free_gpus``: ``F``, the free GPUs of the powered nodes that run jobs; ``arrivals``: ``(arrival s, GPUs
    requested)`` of the managed jobs seen; ``watched_s``: the time since the first arrival the agent knows of (s);
    ``power_cycle_s``: ``c``; ``waiting``: managed jobs the round left waiting.
    """
    if not idle:
        return PowerDownChoice((), (), 0.0, "no idle node")
    if waiting:
        return PowerDownChoice((), tuple(idle), math.inf, f"{waiting} managed job(s) wait: every idle node stays on")
    if watched_s < power_cycle_s:
        return PowerDownChoice((), tuple(idle), math.inf, f"{watched_s:.0f} s since the first arrival: under a cycle")
    rates = [demand_rate(arrivals, now_s, watched_s, span) for span in (power_cycle_s, window_s)]
    demand = max(rates) * power_cycle_s
    keep = max(0, math.ceil((demand - free_gpus) / gpus_per_node - 1e-9))
    kept, down = tuple(idle[:keep]), tuple(idle[keep:])
    why = (
        f"{demand:.1f} GPUs expected within {power_cycle_s:.0f} s, {free_gpus} free on running nodes: "
        f"{len(kept)} idle node(s) kept on"
    )
    return PowerDownChoice(down, kept, demand, why)
