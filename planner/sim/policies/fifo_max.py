"""``fifo-max``: the common production default.

First come, first served with greedy backfill, non-preemptive, every job exclusive on its
requested GPU count, on the fastest GPU type with room, at the GPU type's highest setting
(the default power limit): no energy awareness at all. This is what a Slurm or Kubernetes
cluster does out of the box (``--gres=gpu:N``, default power limit); Gavel's FIFO baseline
is the same rule. With a budget, jobs are admitted in the same order while the round's
predicted energy fits (:mod:`planner.sim.policies.fcfs`).
"""

from __future__ import annotations

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.sim.policies.fcfs import ExclusiveFcfs
from wattplan.planner.sim.policies.ledger import top_setting


class FifoMax(ExclusiveFcfs):
    """FCFS, exclusive, requested count, highest setting."""

    name = "fifo-max"

    def choose_setting(self, instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
        """The highest setting of ``g`` profiled for ``job`` on ``gpus`` GPUs (None: no profile)."""
        return top_setting(instance, job, g, gpus)
