"""How long a replay will take, said before it starts (``wattplan simulate`` warns when it is long).

From the selected jobs alone, before any policy runs: each job's reference duration ``d_j`` (alone at its
requested count ``n_j`` on the fastest GPU type at its top setting, s) and arrival ``a_j``. The replay simulates
at least the span ``S = max(W / G, max_j (a_j + d_j) - t0)`` (``W = sum_j n_j d_j`` GPU-seconds of work, ``G``
the cluster's GPUs, ``t0`` the replay's start): the cluster cannot do the work faster, nor finish a job
before it could alone. That is at least ``S / T`` rounds of ``T`` s (a power cap or an energy budget slows
jobs down, so more). Wall time: rounds times a cost per round, measured on the issue's replay:
:data:`WATTPLAN_ROUND_S` for ``wattplan``, :data:`BASELINE_ROUND_S` for each other policy.

A replay is *long* when the jobs average more than :data:`LONG_JOB_S` of reference run time (a day) or the
estimated wall time exceeds :data:`LONG_WALL_S`; :func:`long_replay_warning` then says so, with the numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from wattplan.planner.sim.state import JobSpec

WATTPLAN_ROUND_S = 0.1
"""Wall seconds per ``wattplan`` round (14 min 23 s over 8,595 rounds of the issue's replay, CBC)."""
BASELINE_ROUND_S = 0.005
"""Wall seconds per round of a heuristic policy (``fifo-max``, ``zeus``, ``eaco``, ``powerflow``): 1.3 ms in the
issue's replay (71 s for four policies), 7-16 ms on a loaded 2-core machine; a middle value."""
LONG_JOB_S = 86_400.0
"""A mean reference job duration above which the replay is called long (s)."""
LONG_WALL_S = 600.0
"""An estimated wall time above which the replay is called long (s)."""


@dataclass(frozen=True)
class ReplayForecast:
    """The least a replay simulates and the wall time that takes (s; module docstring)."""

    jobs: int
    mean_job_s: float
    median_first_jobs_s: float
    span_s: float
    rounds: int
    wall_s: float

    @property
    def long(self) -> bool:
        """Jobs of more than a day on average, or more than :data:`LONG_WALL_S` of wall time expected."""
        return self.mean_job_s > LONG_JOB_S or self.wall_s > LONG_WALL_S


def forecast(
    jobs: Sequence[JobSpec], total_gpus: int, round_s: float, policies: Sequence[str], start_s: float | None = None
) -> ReplayForecast:
    """The :class:`ReplayForecast` of ``jobs`` replayed by ``policies`` on ``total_gpus`` GPUs, ``round_s`` rounds."""
    if not jobs:
        return ReplayForecast(0, 0.0, 0.0, 0.0, 0, 0.0)
    t0 = start_s if start_s is not None else min(j.arrival_s for j in jobs)
    durations = [j.reference_duration_s for j in jobs]
    work = sum(j.requested_gpus * j.reference_duration_s for j in jobs)
    span = max(work / max(total_gpus, 1), max(j.arrival_s + j.reference_duration_s for j in jobs) - t0)
    rounds = int(span // round_s) + 1
    per_round = sum(WATTPLAN_ROUND_S if p == "wattplan" else BASELINE_ROUND_S for p in policies)
    first = sorted(jobs, key=lambda j: j.arrival_s)[:10]
    return ReplayForecast(
        jobs=len(jobs),
        mean_job_s=statistics.fmean(durations),
        median_first_jobs_s=statistics.median(j.reference_duration_s for j in first),
        span_s=span,
        rounds=rounds,
        wall_s=rounds * per_round,
    )


def _duration(seconds: float) -> str:
    """``seconds`` in the largest unit that reads well: s, min, h or days."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"


def long_replay_warning(f: ReplayForecast) -> str | None:
    """What to tell the user before a long replay starts (None when it is not long)."""
    if not f.long:
        return None
    return (
        f"this replay is long: the {f.jobs} selected jobs run {_duration(f.mean_job_s)} each on average "
        f"at full speed (median of the first ten {_duration(f.median_first_jobs_s)}), so it simulates at "
        f"least {_duration(f.span_s)} ({f.rounds:,} rounds) and will likely take about {_duration(f.wall_s)}; "
        "select fewer or shorter jobs with --start-s, --end-s or --max-jobs"
    )
