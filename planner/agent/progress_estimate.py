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

**Bounded by the energy it drew.** Where Prometheus gave the job's GPU energy ``E`` (DCGM, J) for exactly the
interval to credit, a job running alone is credited no more than that energy pays for:

    steps += min(X * rho * dt,  max(0, E - n * Pidle_g * h) / e),    e = n * (P(type, g, n, s) - Pidle_g) / X

where ``h`` is the time it held its GPUs in the window (start-up included), ``Pidle_g`` the GPU type's idle power
(W: the least power per GPU a job alone drew over a window, the profiles' until a window shows one) and ``e`` the
profile's dynamic energy per step (J; :meth:`RateIndex.energy_per_step_j`). A GPU draws its idle
power while the job loads and its dynamic power while it computes, and measured runs keep the dynamic energy per
step nearly the same at every GPU count (``planner.profiling.truth``: within about 1% in the logs), so the energy
term follows a job that runs slower than its profile (a steeper scaling, a slower input pipeline) where the time
term runs ahead, and it credits nothing while a job loads. It is not used alone: a profile that is wrong about the
energy per step (the shipped library's multi-GPU entries keep one GPU's power beside a scaled throughput), or an
idle power read too low, would credit steps no time supports, which the time term caps. A pair's guest and host
share their GPUs' energy, so a pair stays time-based; so does a round whose window was not read, and the part of
the interval before the window (a job last credited before it, after a gap).

A job whose steps Prometheus has shown even once is measured, never estimated. An estimate is as good as the
profiles: it drifts by the profile's error (``--learn`` corrects profiles only from measured steps), and a job
requeued between two rounds is credited up to the later round (the steps its checkpoint lost are not known).
"""

from __future__ import annotations

from dataclasses import dataclass

from wattplan.planner.profile_library.index import LibraryIndex, index_library
from wattplan.planner.profile_library.library import ProfileLibrary

RunningConfig = tuple[str, int, int, str | None]
"""What a job ran at: ``(GPU type, GPU count, setting, partner's job type or None)``."""


@dataclass(frozen=True, slots=True)
class RateIndex:
    """Throughputs (steps/s), pair slowdowns and dynamic energies per step off a library's one index.

    The index is :mod:`planner.profile_library.index`'s, the one the truth model evaluates with.
    """

    index: LibraryIndex

    @classmethod
    def of(cls, library: ProfileLibrary) -> RateIndex:
        """The rates of ``library``'s profiles and pairs."""
        return cls(index_library(library))

    def idle_power_w(self, gpu_type: str) -> float | None:
        """The GPU type's idle power per GPU in the library (W); None for a type it lacks."""
        info = self.index.gpu_types.get(gpu_type)
        return None if info is None else info.idle_power_w

    def energy_per_step_j(self, job_type: str, config: RunningConfig) -> float | None:
        """``e = n (P - Pidle) / X``: the dynamic GPU energy of one step alone at ``config`` (J).

        The library's own entry, as the plans use it. (One GPU's ``e`` at every count, which measured runs support,
        was tried and dropped: the shipped library's multi-GPU entries copy one GPU's power beside a scaled
        throughput, so it credited too few steps there; its figures were of code no longer here.) None with a
        partner, without a profile, or when ``e`` is not positive.
        """
        gpu_type, gpus, setting, partner = config
        p = self.index.profiles.get((job_type, gpu_type, gpus, setting))
        idle = self.idle_power_w(gpu_type)
        if partner is not None or p is None or idle is None or p.steps_per_s <= 0:
            return None
        e = gpus * (p.power_w - idle) / p.steps_per_s
        return e if e > 0 else None

    def rate(self, job_type: str, config: RunningConfig) -> float | None:
        """Steps per second of ``job_type`` run at ``config``; None when the library has no such profile or pair."""
        gpu_type, gpus, setting, partner = config
        p = self.index.profiles.get((job_type, gpu_type, gpus, setting))
        if p is None or partner is None:
            return None if p is None else p.steps_per_s
        rho = self.index.pairs.get((job_type, partner, gpu_type, gpus))  # either order: the index holds both
        return None if rho is None else p.steps_per_s * rho[0]


def credited_steps(rate: float, run_start_s: float, start_s: float, credited_s: float | None, now_s: float) -> float:
    """Steps a job made since it was last credited: ``rate * max(0, now_s - max(credited_s, run_start_s + start_s))``.

    ``rate`` in steps/s; ``run_start_s`` when its current run started, ``start_s`` its start-up before the first
    step, ``credited_s`` when its steps were last set (None: never), ``now_s`` now; all seconds on one clock.
    """
    since = run_start_s + start_s if credited_s is None else max(credited_s, run_start_s + start_s)
    return rate * max(0.0, now_s - since)


def energy_steps(energy_j: float, gpus: int, idle_w: float, held_s: float, energy_per_step_j: float) -> float:
    """Steps that ``energy_j`` of measured GPU energy pays for: ``max(0, E - n Pidle h) / e`` (module docstring)."""
    return max(0.0, energy_j - gpus * idle_w * max(held_s, 0.0)) / energy_per_step_j
