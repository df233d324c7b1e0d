"""Exclusive first-come-first-served allocation, the core of ``fifo-max``, ``zeus`` and ``eaco``.

Each round, in arrival order (the instance's job order):

1. **Running jobs keep their GPUs** (non-preemptive): same GPU type and count, so no
   restart, and the policy's setting for that configuration; a pair from the previous round
   stays a pair while both partners are queued. With a budget, a running allocation that no
   longer fits the round's energy is paused (it waits and restarts later).
2. **Waiting jobs start** at their requested GPU count on the fastest GPU type that still has
   that many free GPUs (and, with a budget, keeps the round's predicted energy within it);
   a job that fits nowhere waits and later, smaller jobs may start (greedy backfill).

Subclasses choose the setting (:meth:`ExclusiveFcfs.choose_setting`) and may add a phase
(:class:`planner.sim.policies.eaco.Eaco` pairs waiting jobs onto running ones).
"""

from __future__ import annotations

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.core.economics import ordered_pair_rates
from wattplan.planner.sim.policies.base import Decision
from wattplan.planner.sim.policies.ledger import RoundLedger, instance_order, outcome, types_by_speed
from wattplan.planner.sim.round_instance import ReplayRound


class ExclusiveFcfs:
    """First come, first served; exclusive GPUs at the requested count (see the module docstring)."""

    name = "fcfs"

    def choose_setting(self, instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
        """The setting this policy runs ``job`` at on ``gpus`` GPUs of ``g`` (None: cannot run)."""
        raise NotImplementedError

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        """Run the phases in order: keep running jobs, start waiting ones, then :meth:`extra_phase`."""
        ledger = RoundLedger(instance)
        allocations: list[Allocation] = []
        self.keep_running(instance, ledger, allocations)
        self.start_waiting(instance, context, ledger, allocations)
        self.extra_phase(instance, context, ledger, allocations)
        return Decision(tuple(allocations), solver=self.name)

    def extra_phase(
        self, instance: Instance, context: ReplayRound, ledger: RoundLedger, allocations: list[Allocation]
    ) -> None:
        """Hook for a further phase after the exclusive ones (none here)."""

    # ------------------------------------------------------------------ phase 1

    def keep_running(self, instance: Instance, ledger: RoundLedger, allocations: list[Allocation]) -> None:
        """Phase 1: every running allocation continues unchanged while it fits."""
        done: set[str] = set()
        for job in instance.jobs:
            cur = job.current
            if cur is None or job.id in done or not instance.has_gpu_type(cur.gpu_type):
                continue
            g = instance.gpu_type(cur.gpu_type)
            s = self.choose_setting(instance, job, g, cur.gpus)
            if s is None:
                continue
            partner = self._current_partner(instance, job)
            if partner is not None and self._keep_pair(instance, ledger, allocations, job, partner, g, s):
                done.update((job.id, partner.id))
                continue
            o = outcome(instance, job, g.name, cur.gpus, s)
            if o is not None and ledger.try_add({g.name: cur.gpus}, o.energy_j):
                allocations.append(Allocation((job.id,), g.name, cur.gpus, s))
                done.add(job.id)

    @staticmethod
    def _current_partner(instance: Instance, job: Job) -> Job | None:
        """The partner ``job`` shared with last round, if it is queued with the same configuration."""
        cur = job.current
        if cur is None or cur.shares_with is None or not instance.has_job(cur.shares_with):
            return None
        other = instance.job(cur.shares_with)
        oc = other.current
        if oc is None or (oc.gpu_type, oc.gpus, oc.shares_with) != (cur.gpu_type, cur.gpus, job.id):
            return None
        return other

    @staticmethod
    def _keep_pair(
        instance: Instance,
        ledger: RoundLedger,
        allocations: list[Allocation],
        job: Job,
        partner: Job,
        g: GpuType,
        setting: int,
    ) -> bool:
        cur = job.current
        if cur is None:  # cannot happen: _current_partner pairs only running jobs
            return False
        n = cur.gpus
        rates = ordered_pair_rates(instance, job, partner, g.name, n)
        if rates is None or min(rates) < instance.round.min_pair_rate:
            return False
        oa = outcome(instance, job, g.name, n, setting, rates[0])
        ob = outcome(instance, partner, g.name, n, setting, rates[1])
        if oa is None or ob is None or not ledger.try_add({g.name: n}, oa.energy_j + ob.energy_j):
            return False
        allocations.append(Allocation(instance_order(instance, job.id, partner.id), g.name, n, setting))
        return True

    # ------------------------------------------------------------------ phase 2

    def start_waiting(
        self, instance: Instance, context: ReplayRound, ledger: RoundLedger, allocations: list[Allocation]
    ) -> None:
        """Phase 2: jobs without GPUs, in arrival order, at their requested count, fastest type first."""
        placed = {j for a in allocations for j in a.job_ids}
        for job in instance.jobs:
            if job.id in placed:
                continue
            n = context.requested(job)
            for g in types_by_speed(instance, job, n):
                s = self.choose_setting(instance, job, g, n)
                if s is None:
                    continue
                o = outcome(instance, job, g.name, n, s)
                if o is not None and ledger.try_add({g.name: n}, o.energy_j):
                    allocations.append(Allocation((job.id,), g.name, n, s))
                    break
