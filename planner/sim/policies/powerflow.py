"""``powerflow``: GPU counts and settings by marginal progress per joule, within the round budget.

Follows Gu, Xie, Huang, Jin and Liu, "Energy-Efficient GPU Clusters Scheduling for Deep
Learning" (PowerFlow, arXiv:2304.06381): it chooses every job's GPU count and GPU frequency
from fitted throughput and energy models to minimise the average JCT under an energy
budget, greedily, by marginal gain per unit of energy, and places jobs with buddy
allocation (here the loop's, the same for every policy). Jobs are elastic and preemptible
(a change of GPU type or count restarts the job, at the model's restart cost). The paper
adjusts GPU frequency; our profiles vary the power limit, which plays the same role.

Each round, with progress ``pi = sigma / R`` (:func:`planner.core.economics.job_outcome`; summing it
over jobs favours nearly finished ones, which shortens the average JCT) and an option's full
cost ``c = e + n * T * (Pnode_g / K_g + Pidle_g)`` (dynamic energy plus its GPUs' share of node
and idle power, J):

1. **Admission**: the greedy plan of :mod:`planner.core.greedy`: options in decreasing
   ``w * pi / c``, one per job, while GPUs and the budget allow (exclusive, no sharing).
2. **Marginal upgrades**: repeatedly take the admitted job and other option of that job with
   the highest ``delta(w * pi) / delta(c)`` (more GPUs, a higher setting, another GPU type; an
   upgrade that costs nothing comes first) that fits the GPUs left and the budget, until no
   upgrade with ``delta(w * pi) > 0`` fits. A job's upgrades are tried best first and one that
   does not fit is not retried later in the round.

With no budget step 2 runs until the GPUs are full, so PowerFlow then spends energy freely
on speed; with a budget it spends exactly where progress per joule is highest.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance, Job
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.core.economics import exclusive_outcomes, full_cost_j
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.sim.policies.base import Decision
from wattplan.planner.sim.policies.ledger import RoundLedger
from wattplan.planner.sim.round_instance import ReplayRound


@dataclass(frozen=True, slots=True)
class Option:
    """One exclusive configuration of a job and what it yields in the round."""

    gpu_type: str
    gpus: int
    setting: int
    value: float  # w * pi
    dynamic_j: float  # e (J)
    cost_j: float  # c (J)


def job_options(instance: Instance, job: Job) -> list[Option]:
    """Every profiled exclusive option of ``job`` with positive progress."""
    return [
        Option(g.name, n, s, job.weight * o.progress, o.energy_j, full_cost_j(instance, g, n, o.energy_j))
        for g, n, s, o in exclusive_outcomes(instance, job)
        if o.progress > 0
    ]


def _upgrades(current: Option, options: list[Option]) -> list[tuple[float, Option]]:
    """Options with more progress than ``current``, best ``delta value / delta cost`` first."""
    ranked = []
    for o in options:
        gain = o.value - current.value
        if gain <= 0:
            continue
        extra = o.cost_j - current.cost_j
        ratio = math.inf if extra <= 0 else gain / extra
        ranked.append((ratio, gain, o))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2].gpu_type, r[2].gpus, r[2].setting))
    return [(ratio, o) for ratio, _, o in ranked]


class PowerFlow:
    """Greedy admission by progress per joule, then marginal upgrades (see the module docstring)."""

    name = "powerflow"

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        """Admit the greedy plan, then upgrade by ``delta(w * pi) / delta(c)`` while GPUs and budget allow."""
        ledger = RoundLedger(instance)
        chosen: dict[str, Option] = {}
        options: dict[str, list[Option]] = {}
        for a in greedy_allocations(instance):
            job = instance.job(a.job_ids[0])
            options[job.id] = job_options(instance, job)
            pick = next(
                o for o in options[job.id] if (o.gpu_type, o.gpus, o.setting) == (a.gpu_type, a.gpus, a.setting)
            )
            chosen[job.id] = pick
            ledger.add({pick.gpu_type: pick.gpus}, pick.dynamic_j)
        self._upgrade(instance, ledger, chosen, options)
        allocations = tuple(
            Allocation((j.id,), chosen[j.id].gpu_type, chosen[j.id].gpus, chosen[j.id].setting)
            for j in instance.jobs
            if j.id in chosen
        )
        return Decision(allocations, solver=self.name)

    @staticmethod
    def _upgrade(
        instance: Instance, ledger: RoundLedger, chosen: dict[str, Option], options: dict[str, list[Option]]
    ) -> None:
        order = {j.id: i for i, j in enumerate(instance.jobs)}
        lists: dict[str, list[tuple[float, Option]]] = {}
        version: dict[str, int] = {}
        heap: list[tuple[float, int, str, int, int]] = []

        def refresh(job_id: str) -> None:
            version[job_id] = version.get(job_id, -1) + 1
            lists[job_id] = _upgrades(chosen[job_id], options[job_id])
            push(job_id, 0)

        def push(job_id: str, k: int) -> None:
            if k < len(lists[job_id]):
                heapq.heappush(heap, (-lists[job_id][k][0], order[job_id], job_id, k, version[job_id]))

        for job_id in chosen:
            refresh(job_id)
        while heap:
            _, _, job_id, k, ver = heapq.heappop(heap)
            if ver != version[job_id]:
                continue
            cur, new = chosen[job_id], lists[job_id][k][1]
            delta = {cur.gpu_type: -cur.gpus}
            delta[new.gpu_type] = delta.get(new.gpu_type, 0) + new.gpus
            if ledger.try_add(delta, new.dynamic_j - cur.dynamic_j):
                chosen[job_id] = new
                refresh(job_id)
            else:
                push(job_id, k + 1)
