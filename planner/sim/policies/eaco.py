"""``eaco``: exclusive FCFS, then co-locate waiting jobs onto running ones.

Follows Haghshenas and Hashemi, "EaCO: Resource Sharing Dynamics and Its Impact on Energy
Efficiency for DNN Training" (arXiv:2412.08294): jobs start exclusive, first come first
served; when the cluster is full, a waiting job time-shares the GPUs of a running job
(hardware context switching) if the predicted slowdown of both is acceptable, which pays the
idle power once and fills idle GPU cycles.

Each round: phases 1 and 2 of :mod:`planner.sim.policies.fcfs` at the highest setting
(pairs formed earlier persist), then, in arrival order, every job still waiting is paired
with a running exclusive allocation of its requested GPU count (same GPU type, count and
setting, as a pair must be) whose measured pair rates (Gavel's co-location throughputs,
:func:`planner.core.economics.ordered_pair_rates`) are both at least ``min_pair_rate``; among
several, the one with the highest combined normalised throughput ``rho_job + rho_partner``
(ties: the earliest-arrived partner). With a budget the pair must keep the round's predicted
energy within it. The paper predicts slowdowns from profiled utilisation; the replay uses the
measured rates, its best case.
"""

from __future__ import annotations

from wattplan.planner.contracts.domain import GpuType, Instance, Job
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.core.economics import ordered_pair_rates
from wattplan.planner.sim.policies.fcfs import ExclusiveFcfs
from wattplan.planner.sim.policies.ledger import RoundLedger, instance_order, outcome, top_setting
from wattplan.planner.sim.round_instance import ReplayRound


class Eaco(ExclusiveFcfs):
    """FCFS exclusive at the highest setting, then pair waiting jobs onto running ones."""

    name = "eaco"

    def choose_setting(self, instance: Instance, job: Job, g: GpuType, gpus: int) -> int | None:
        """The highest setting of ``g`` profiled for ``job`` on ``gpus`` GPUs (None: no profile)."""
        return top_setting(instance, job, g, gpus)

    def extra_phase(
        self, instance: Instance, context: ReplayRound, ledger: RoundLedger, allocations: list[Allocation]
    ) -> None:
        """Phase 3: pair each still-waiting job, in arrival order, with its best exclusive allocation.

        The best has the highest ``rho_job + rho_partner`` among those whose pair rates are
        both at least ``min_pair_rate`` and whose added dynamic energy fits the budget.
        """
        placed = {j for a in allocations for j in a.job_ids}
        for job in instance.jobs:
            if job.id in placed:
                continue
            best = self._best_partner(instance, ledger, allocations, job, context.requested(job))
            if best is None:
                continue
            k, delta_j = best
            a = allocations[k]
            ledger.add({}, delta_j)
            allocations[k] = Allocation(instance_order(instance, job.id, a.job_ids[0]), a.gpu_type, a.gpus, a.setting)
            placed.add(job.id)

    @staticmethod
    def _best_partner(
        instance: Instance, ledger: RoundLedger, allocations: list[Allocation], job: Job, n: int
    ) -> tuple[int, float] | None:
        """Index of the best exclusive allocation to join and the dynamic energy the pair adds (J).

        ``n``: ``job``'s requested GPU count, the count of the allocations it may join.
        """
        order = {j.id: i for i, j in enumerate(instance.jobs)}
        best: tuple[float, int, float] | None = None
        for k, a in sorted(enumerate(allocations), key=lambda ka: order[ka[1].job_ids[0]]):
            if a.is_pair or a.gpus != n or n not in job.gpus:
                continue
            partner = instance.job(a.job_ids[0])
            rates = ordered_pair_rates(instance, job, partner, a.gpu_type, n)
            if rates is None or min(rates) < instance.round.min_pair_rate:
                continue
            mine = outcome(instance, job, a.gpu_type, n, a.setting, rates[0])
            theirs = outcome(instance, partner, a.gpu_type, n, a.setting, rates[1])
            alone = outcome(instance, partner, a.gpu_type, n, a.setting)
            if mine is None or theirs is None or alone is None:
                continue
            delta = mine.energy_j + theirs.energy_j - alone.energy_j
            score = rates[0] + rates[1]
            if (best is None or score > best[0]) and ledger.fits({}, delta):
                best = (score, k, delta)
        return None if best is None else (best[1], best[2])
