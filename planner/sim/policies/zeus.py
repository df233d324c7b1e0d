"""``zeus``: per-job power limits by Zeus's energy-time cost, on FCFS scheduling.

Follows You, Chung and Chowdhury, "Zeus: Understanding and Optimizing GPU Energy Consumption
of DNN Training", NSDI 2023. Zeus does not schedule; it picks each job's GPU power limit to
minimise the cost ``eta * ETA + (1 - eta) * MAXPOWER * TTA``: energy and time to reach the
target (here: to finish the job's remaining steps), with ``MAXPOWER`` the GPU's maximum power
limit so both terms are in joules. Scheduling is therefore ``fifo-max``'s (FCFS, exclusive,
requested count, fastest type with room); only the setting differs.

For ``n`` GPUs of type ``g`` at setting ``s`` (profile ``X_s`` steps/s, ``P_s`` W per GPU) and
``R`` remaining steps: ``TTA = R / X_s``, ``ETA = n * P_s * R / X_s`` and ``MAXPOWER = n * Pmax_g``,
so the cost is ``n * R * (eta * P_s + (1 - eta) * Pmax_g) / X_s`` and the chosen setting minimises
``(eta * P_s + (1 - eta) * Pmax_g) / X_s`` (ties: the higher setting). ``Pmax_g`` is the type's
highest power limit when settings are power limits (250 W on V100 and P100), else the highest
profiled power of the type. Zeus learns these costs online (a multi-armed bandit across
recurring jobs); the replay gives it the profiled values, its converged choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.sim.policies.fcfs import ExclusiveFcfs


def max_power_w(instance: Instance, g: GpuType) -> float:
    """Zeus's ``MAXPOWER`` per GPU: the highest power limit, or the highest profiled power."""
    if g.setting_unit == "power_limit_w":
        return float(max(g.settings))
    return max((p.power_w for p in instance.profiles if p.gpu_type == g.name), default=g.idle_power_w)


def zeus_setting(instance: Instance, job: Job, g: GpuType, gpus: int, eta: float) -> int | None:
    """The setting minimising ``(eta * P_s + (1 - eta) * Pmax_g) / X_s`` (ties: higher setting)."""
    pmax = max_power_w(instance, g)
    best: tuple[float, int] | None = None
    for s in g.settings:
        prof = instance.profile(job.type, g.name, gpus, s)
        if prof is None or prof.steps_per_s <= 0:
            continue
        cost = (eta * prof.power_w + (1.0 - eta) * pmax) / prof.steps_per_s
        if best is None or cost < best[0] or (cost == best[0] and s > best[1]):
            best = (cost, s)
    return None if best is None else best[1]


@dataclass
class Zeus(ExclusiveFcfs):
    """FCFS, exclusive, requested count, setting by Zeus's cost with weight ``eta``."""

    eta: float = 0.5
    name = "zeus"

    def __post_init__(self) -> None:
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"zeus eta must be in [0, 1], got {self.eta}")

    def choose_setting(self, instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
        """The setting minimising ``(eta * P_s + (1 - eta) * Pmax_g) / X_s`` (:func:`zeus_setting`)."""
        return zeus_setting(instance, job, g, gpus, self.eta)
