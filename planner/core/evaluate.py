"""Recompute a plan's predicted quantities from its instance alone (no solver imported).

For the plan's allocations (GPU type, count, setting, partner) and ``nodes_on``:

* per job: the :class:`~planner.core.economics.JobOutcome` (steps, progress, dynamic energy);
* ``gpus_used[g] = sum n`` over exclusive jobs plus ``n`` once per pair;
* ``progress = sum_j w_j * pi_j``;
* ``energy_j = sum_j e_j + sum_g u_g * T * (Pnode_g + K_g * Pidle_g)`` (J).

Jobs whose allocation cannot be evaluated (unknown GPU type, no profile, no pair entry) are
left out of the totals; the validator reports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.core.economics import JobOutcome, job_outcome, node_energy_j, ordered_pair_rates


@dataclass
class Evaluation:
    """A plan's recomputed figures: per-job outcomes, GPUs used per type, energies (J) and progress."""

    outcomes: dict[str, JobOutcome] = field(default_factory=dict)
    gpus_used: dict[str, int] = field(default_factory=dict)
    dynamic_energy_j: float = 0.0
    node_energy_j: float = 0.0
    progress: float = 0.0

    @property
    def energy_j(self) -> float:
        """Total predicted energy of the round: dynamic plus node and idle energy (J)."""
        return self.dynamic_energy_j + self.node_energy_j


def rho_of(instance: Instance, entry: PlannedJob, partner: PlannedJob | None) -> float | None:
    """Slowdown of ``entry``'s job: 1 alone, the pair entry's rate when shared, None if unknown."""
    if partner is None:
        return 1.0
    if not (instance.has_job(entry.job_id) and instance.has_job(partner.job_id)):
        return None
    rates = ordered_pair_rates(
        instance, instance.job(entry.job_id), instance.job(partner.job_id), entry.gpu_type or "", entry.gpus or 0
    )
    return None if rates is None else rates[0]


def evaluate_plan(instance: Instance, plan: Plan) -> Evaluation:
    """Predicted outcome of ``plan`` recomputed from ``instance`` (docs/design.md §6.3)."""
    ev = Evaluation()
    running = {j.job_id: j for j in plan.running()}
    counted_pairs: set[frozenset[str]] = set()
    for entry in running.values():
        gpu_name = entry.gpu_type or ""
        if not instance.has_job(entry.job_id) or not instance.has_gpu_type(gpu_name):
            continue
        partner = running.get(entry.shares_with) if entry.shares_with else None
        gpu_type = instance.gpu_type(gpu_name)
        rho = rho_of(instance, entry, partner)
        if rho is None:
            continue
        outcome = job_outcome(instance, instance.job(entry.job_id), gpu_type, entry.gpus or 0, entry.setting or 0, rho)
        if outcome is None:
            continue
        ev.outcomes[entry.job_id] = outcome
        ev.dynamic_energy_j += outcome.energy_j
        ev.progress += instance.job(entry.job_id).weight * outcome.progress
        key = frozenset({entry.job_id, entry.shares_with or entry.job_id})
        if partner is None or key not in counted_pairs:
            counted_pairs.add(key)
            ev.gpus_used[gpu_type.name] = ev.gpus_used.get(gpu_type.name, 0) + (entry.gpus or 0)
    ev.node_energy_j = node_energy_j(
        instance, {g: u for g, u in plan.round.nodes_on.items() if instance.has_gpu_type(g)}
    )
    return ev
