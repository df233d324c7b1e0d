"""A job's progress without instrumentation: its steps estimated from what it ran at and the profiles.

A training job that exports no ``wattplan_job_steps_done`` (most real ones) still advances. Between two rounds
the agent knows what each running job ran at (GPU type, count, setting, partner) and when its current run started
(Slurm's ``start_time``), so it credits

    steps += X(type, g, n, s) * rho * max(0, t_k - max(t_credited, t_start + start_s))

where ``X`` is the profile's throughput (steps/s) of the job type on ``n`` GPUs of type ``g`` at setting ``s``,
``rho`` the pair slowdown next to its partner's type (1 alone), ``t_k`` this round's time, ``t_credited`` the time
its steps were last set (observed or estimated; kept in the state, so a restarted agent credits nothing twice) and
``start_s`` the job's own start-up before its first step on every run (``--start-s``). All times are the agent's
clock in seconds.

A job whose steps Prometheus has shown even once is measured, never estimated. An estimate is as good as the
profiles: it drifts by the profile's error (``--learn`` corrects profiles only from measured steps), and a job
requeued between two rounds is credited up to the later round (the steps its checkpoint lost are not known).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattplan.planner.profile_library.library import ProfileLibrary

RunningConfig = tuple[str, int, int, str | None]
"""What a job ran at: ``(GPU type, GPU count, setting, partner's job type or None)``."""


@dataclass(frozen=True, slots=True)
class RateIndex:
    """A profile library's throughput (steps/s) by ``(type, GPU type, count, setting)``, pair slowdowns by pair."""

    steps_per_s: Mapping[tuple[str, str, int, int], float]
    rho: Mapping[tuple[str, str, str, int], tuple[float, float]]

    @classmethod
    def of(cls, library: ProfileLibrary) -> RateIndex:
        """The index of ``library``'s profiles and pairs."""
        rates = {(p.type, p.gpu_type, p.gpus, p.setting): p.steps_per_s for p in library.profiles}
        pairs = {(q.a, q.b, q.gpu_type, q.gpus): (q.rho_a, q.rho_b) for q in library.pairs}
        return cls(rates, pairs)

    def rate(self, job_type: str, config: RunningConfig) -> float | None:
        """Steps per second of ``job_type`` run at ``config``; None when the library has no such profile or pair."""
        gpu_type, gpus, setting, partner = config
        alone = self.steps_per_s.get((job_type, gpu_type, gpus, setting))
        if alone is None or partner is None:
            return alone
        if (job_type, partner, gpu_type, gpus) in self.rho:
            return alone * self.rho[(job_type, partner, gpu_type, gpus)][0]
        if (partner, job_type, gpu_type, gpus) in self.rho:
            return alone * self.rho[(partner, job_type, gpu_type, gpus)][1]
        return None


def credited_steps(rate: float, run_start_s: float, start_s: float, credited_s: float | None, now_s: float) -> float:
    """Steps a job made since it was last credited: ``rate * max(0, now_s - max(credited_s, run_start_s + start_s))``.

    ``rate`` in steps/s; ``run_start_s`` when its current run started, ``start_s`` its start-up before the first
    step, ``credited_s`` when its steps were last set (None: never), ``now_s`` now; all seconds on one clock.
    """
    since = run_start_s + start_s if credited_s is None else max(credited_s, run_start_s + start_s)
    return rate * max(0.0, now_s - since)
