"""Bookkeeping the heuristic policies share: free GPUs and the round's predicted energy.

The predicted energy of a set of allocations is the model's (:mod:`planner.core.economics`):
``sum e + sum_g ceil(used_g / K_g) * T * (Pnode_g + K_g * Pidle_g)`` (J), i.e. their dynamic
energy plus the node and idle energy of the fewest nodes that hold them, which is exactly
what :func:`planner.core.assemble.assemble_plan` powers. An allocation is admitted only if the
GPUs of its type still fit the cluster (``used_g <= N_g * K_g``; buddy placement then always
succeeds, see :mod:`planner.core.placement`) and, with a budget, that energy stays ``<= B``.
"""

from __future__ import annotations

from collections.abc import Mapping

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.core.economics import JobOutcome, job_outcome, powered_energy_j, within_budget


class RoundLedger:
    """GPUs in use per type and dynamic energy (J) of the allocations admitted so far."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.used: dict[str, int] = {g.name: 0 for g in instance.gpu_types}
        self.dynamic_j = 0.0

    @property
    def energy_j(self) -> float:
        """Predicted energy of the round so far (J)."""
        return self.dynamic_j + powered_energy_j(self.instance, self.used)

    def fits(self, gpu_delta: Mapping[str, int], dynamic_delta_j: float) -> bool:
        """True if the change keeps every type within its GPUs and the predicted energy within the budget.

        That is ``used_g + delta_g <= N_g * K_g`` for every type ``g`` and, with a budget,
        ``dynamic_j + dynamic_delta_j + powered_energy_j(used + delta) <= B`` (J).
        """
        trial = dict(self.used)
        for g, n in gpu_delta.items():
            trial[g] += n
            if trial[g] > self.instance.gpu_type(g).total_gpus:
                return False
        budget = self.instance.round.budget_j
        return within_budget(self.dynamic_j + dynamic_delta_j + powered_energy_j(self.instance, trial), budget)

    def add(self, gpu_delta: Mapping[str, int], dynamic_delta_j: float) -> None:
        """Book the change unchecked: GPUs per type and dynamic energy (J)."""
        for g, n in gpu_delta.items():
            self.used[g] += n
        self.dynamic_j += dynamic_delta_j

    def try_add(self, gpu_delta: Mapping[str, int], dynamic_delta_j: float) -> bool:
        """Admit the change if it :meth:`fits`; report whether it was admitted."""
        if not self.fits(gpu_delta, dynamic_delta_j):
            return False
        self.add(gpu_delta, dynamic_delta_j)
        return True


def outcome(
    instance: Instance, job: Job, gpu_type: str, gpus: int, setting: int, rho: float = 1.0
) -> JobOutcome | None:
    """:func:`planner.core.economics.job_outcome` by GPU type name; None without a profile or room."""
    g = instance.gpu_type(gpu_type)
    if gpus > g.total_gpus:
        return None
    return job_outcome(instance, job, g, gpus, setting, rho)


def top_setting(instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
    """The highest setting of ``g`` with a profile for ``job`` on ``gpus`` GPUs."""
    profiled = [s for s in g.settings if instance.profile(job.type, g.name, gpus, s) is not None]
    return max(profiled) if profiled else None


def types_by_speed(instance: Instance, job: Job, gpus: int) -> list[GpuType]:
    """GPU types that can run ``job`` on ``gpus`` GPUs, fastest first (at each type's top setting).

    Ties keep the cluster's order.
    """
    ranked = []
    for k, g in enumerate(instance.gpu_types):
        s = top_setting(instance, job, g, gpus)
        if s is None or gpus > g.total_gpus:
            continue
        prof = instance.profile(job.type, g.name, gpus, s)
        if prof is None:  # cannot happen: top_setting returned a profiled setting
            continue
        ranked.append((-prof.steps_per_s, k, g))
    return [g for _, _, g in sorted(ranked, key=lambda r: (r[0], r[1]))]


def instance_order(instance: Instance, *job_ids: str) -> tuple[str, ...]:
    """Job ids sorted as the instance lists them (a pair allocation's required order)."""
    order = {j.id: i for i, j in enumerate(instance.jobs)}
    return tuple(sorted(job_ids, key=order.__getitem__))
