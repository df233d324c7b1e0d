"""``fifo-maxq``: the ``maxq`` baseline decided round by round: ``fifo-max`` at MaxQ's setting.

First come, first served with greedy backfill, non-preemptive, every job exclusive on its requested GPU count on the
fastest GPU type with room (:mod:`planner.sim.policies.fcfs`), as ``fifo-max``; each job at the setting of the MaxQ
rule (:mod:`planner.core.maxq`: per job type and GPU type, the lowest setting whose throughput is at least 97% of the
top setting's at every GPU count the round's profiles know), or at the top setting where no setting keeps that at
every count. It is the baseline ``maxq`` (Slurm alone with a prolog that sets MaxQ) as a policy of the loop, so
``wattplan agent --policy fifo-maxq`` runs it live through the agent and ``simulate -p fifo-maxq`` replays that; the
replay's ``-p maxq`` is Slurm alone with the prolog, no agent.
"""

from __future__ import annotations

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.core.maxq import maxq_settings
from wattplan.planner.sim.policies.fcfs import ExclusiveFcfs
from wattplan.planner.sim.policies.ledger import top_setting


class FifoMaxq(ExclusiveFcfs):
    """FCFS, exclusive, requested count, MaxQ's setting (module docstring)."""

    name = "fifo-maxq"

    def __init__(self) -> None:
        self._tables: dict[int, tuple[object, dict[tuple[str, str], int]]] = {}
        """MaxQ's table of each profiles tuple seen, by its id (the tuple kept alive beside it)."""

    def table(self, instance: Instance) -> dict[tuple[str, str], int]:
        """MaxQ's settings for the round's profiles, computed once per profiles tuple (rounds share them)."""
        key = id(instance.profiles)
        found = self._tables.get(key)
        if found is None or found[0] is not instance.profiles:
            found = (instance.profiles, maxq_settings(instance.profiles))
            self._tables = {key: found}
        return found[1]

    def choose_setting(self, instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
        """MaxQ's setting of ``job``'s type on ``g`` where it is profiled at ``gpus``, else the top setting."""
        setting = self.table(instance).get((job.type, g.name))
        if setting is not None and instance.profile(job.type, g.name, gpus, setting) is not None:
            return setting
        return top_setting(instance, job, g, gpus)
