"""Why a plan leaves a job waiting: one reason code and a sentence per waiting job (docs/design.md §6.5).

Decided from the instance and the plan alone (no solver is imported here, design §8.1), so an operator reads
the same answer whatever planner made the plan. The checks run in this order and the first that holds is the
job's reason; the order puts the reason an operator can act on first (a missing profile hides every other cause,
and no budget helps a job that has no GPUs to run on):

1. ``no-gpu-type``: the job has no *option*: no GPU type ``g`` of the cluster and allowed count ``n`` in
   ``A_j`` with ``n <= N_g * K_g``, ``n`` placeable on nodes of ``K_g`` GPUs
   (:func:`~planner.contracts.domain.gpu_count_fits_type`) and an exclusive profile of the job's type on
   ``(g, n, s)`` with throughput ``X > 0`` for some setting ``s`` of ``g``. The sentence says, per GPU type,
   which of the two it lacks (:func:`unusable_types`).
   Act: profile the type on a GPU type of the cluster, or allow another GPU count.
2. ``partner-slowdown``: no option fits the free GPUs alone (as in rule 3), but the job has a pair entry
   ``(type_j, type_k, g, n)`` with some job ``k`` the plan runs alone on ``n`` GPUs of ``g`` (``n`` an
   allowed count of ``j``), and every such entry has ``min(rho_j, rho_k) < min_pair_rate``.
   Act: lower the round's ``min_pair_rate``.
3. ``no-free-gpus``: for every GPU type ``g`` with an option, the free GPUs the plan leaves,
   ``F_g = N_g * K_g - gpus_used_g``, are fewer than the job's smallest option count on ``g``. A GPU type with
   free GPUs but no option for the job is named too, with what it lacks: the sentence never makes the types it
   names look like the only ones the cluster has (a GPU type added without a profile of the job's type is the
   usual cause).
   Act: add GPUs of such a type, or allow a smaller count, or profile the job's type on the type that lacks it.
4. ``budget``: the round has a budget ``B`` and every option that fits the free GPUs costs more than the
   energy the plan leaves, ``B - E``. An option's cost is its dynamic energy ``e = n (P - Pidle_g) sigma / X``
   (J, design §2.3, with the restart rule of §2.1) plus the node and idle energy of the nodes it would power
   on, ``(ceil((used_g + n) / K_g) - u_g)^+ * T * (Pnode_g + K_g * Pidle_g)`` (J); the cheapest is reported.
   Act: raise the budget (``--budget-j``, ``--power-cap-w``).
5. ``lower-value``: the job fits and its cheapest option is within budget, but the objective preferred other
   jobs: ``progress`` ran jobs of more weighted progress within the budget; ``energy`` and ``efficiency``
   saved energy giving up up to ``delta`` of the best progress (the sentence names the objective and ``delta``).
   Act: raise the job's ``weight``, or plan with ``--objective progress`` (or a smaller ``--delta``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from wattplan.planner.contracts.domain import GpuType, Instance, Job, gpu_count_fits_type
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.core.economics import job_outcome

WaitingCode = Literal["no-gpu-type", "partner-slowdown", "no-free-gpus", "budget", "lower-value"]
WAITING_CODES: tuple[WaitingCode, ...] = ("no-gpu-type", "partner-slowdown", "no-free-gpus", "budget", "lower-value")
"""Every reason code, in the order the checks run (module docstring)."""


@dataclass(frozen=True, slots=True)
class WaitingReason:
    """Why ``job_id`` waits: a ``code`` of :data:`WAITING_CODES` and a ``message`` for the operator."""

    job_id: str
    job_type: str
    requested_gpus: int | None  # what the user asked for (the instance's requested_gpus), None: not given
    allowed_gpus: tuple[int, ...]  # the counts the planner may give (the instance's gpus)
    code: WaitingCode
    message: str


@dataclass(frozen=True, slots=True)
class _Option:
    """One exclusive option of a job: ``n`` GPUs of ``gpu_type`` at ``setting`` with a profile of ``X > 0``."""

    gpu_type: GpuType
    gpus: int
    setting: int


def _runs(instance: Instance, job: Job, g: GpuType, n: int, s: int) -> bool:
    """The job's type has an exclusive profile on ``(g, n, s)`` with ``X > 0``."""
    p = instance.profile(job.type, g.name, n, s)
    return p is not None and p.steps_per_s > 0


def _options(instance: Instance, job: Job) -> Iterator[_Option]:
    """The job's options (rule 1 of the module docstring), GPU type by GPU type, count, setting."""
    for g in instance.gpu_types:
        for n in job.gpus:
            if n > g.total_gpus or not gpu_count_fits_type(n, g.gpus_per_node):
                continue
            for s in g.settings:
                if _runs(instance, job, g, n, s):
                    yield _Option(g, n, s)


def unusable_types(instance: Instance, job: Job) -> dict[str, str]:
    """Why each GPU type of the cluster offers ``job`` no option (types with an option are left out).

    ``no profile of type T`` when no allowed count has a profile with ``X > 0`` there; else the counts that cannot
    be placed (more than its ``N_g * K_g`` GPUs, or not placeable on nodes of ``K_g``).
    """
    found: dict[str, str] = {}
    for g in instance.gpu_types:
        fits = [n for n in job.gpus if n <= g.total_gpus and gpu_count_fits_type(n, g.gpus_per_node)]
        profiled = [
            n
            for n in job.gpus
            if any(
                (p := instance.profile(job.type, g.name, n, s)) is not None and p.steps_per_s > 0 for s in g.settings
            )
        ]
        if set(fits) & set(profiled):
            continue
        counts = ",".join(map(str, job.gpus))
        if not profiled:
            found[g.name] = f"no profile of type {job.type} at {counts} GPUs"
        else:
            shown = ",".join(map(str, profiled))
            found[g.name] = (
                f"profiled at {shown} GPUs, which {g.total_gpus} GPUs on nodes of {g.gpus_per_node} cannot hold"
            )
    return found


def free_gpus(instance: Instance, plan: Plan) -> dict[str, int]:
    """``F_g = N_g * K_g - gpus_used_g``: the GPUs of each type the plan leaves free (a pair's GPUs once)."""
    return {g.name: g.total_gpus - plan.round.gpus_used.get(g.name, 0) for g in instance.gpu_types}


def option_cost_j(instance: Instance, plan: Plan, job: Job, option: _Option) -> float:
    """What running ``job`` on ``option`` would add to the plan's energy (J): rule 4 of the module docstring."""
    g = option.gpu_type
    outcome = job_outcome(instance, job, g, option.gpus, option.setting)
    dynamic_j = 0.0 if outcome is None else outcome.energy_j
    used = plan.round.gpus_used.get(g.name, 0)
    extra_nodes = max(math.ceil((used + option.gpus) / g.gpus_per_node) - plan.round.nodes_on.get(g.name, 0), 0)
    return dynamic_j + extra_nodes * instance.round.duration_s * g.powered_node_w


def _solo_partners(instance: Instance, plan: Plan, job: Job) -> list[tuple[str, float]]:
    """``(id, min(rho_j, rho_k))`` of every job ``k`` running alone on a GPU type and count ``j`` could share."""
    found = []
    for k in plan.running():
        if k.shares_with is not None or k.gpu_type is None or k.gpus is None or k.gpus not in job.gpus:
            continue
        other = instance.job(k.job_id)
        rates = instance.pair_rates(job.type, other.type, k.gpu_type, k.gpus)
        if rates is not None:
            found.append((k.job_id, min(rates)))
    return found


def _kj(x: float) -> str:
    return f"{x / 1e3:.1f} kJ"


def waiting_reason(instance: Instance, plan: Plan, job: Job) -> tuple[WaitingCode, str]:
    """The reason code and sentence for one job ``plan`` leaves waiting (the first rule of the module docstring)."""
    options = list(_options(instance, job))
    counts = ",".join(map(str, job.gpus))
    unusable = unusable_types(instance, job)
    if not options:
        why = "; ".join(f"{g}: {text}" for g, text in unusable.items())
        return "no-gpu-type", (
            f"no GPU type has a profile of type {job.type} at an allowed count ({counts}) that fits it ({why})"
        )
    free = free_gpus(instance, plan)
    fitting = [o for o in options if o.gpus <= free[o.gpu_type.name]]
    min_rate = instance.round.min_pair_rate
    if not fitting:
        partners = _solo_partners(instance, plan, job)
        if partners and all(rate < min_rate for _, rate in partners):
            best_id, best = max(partners, key=lambda p: p[1])
            return "partner-slowdown", (
                f"no free GPUs to run alone; sharing is the only way in, but every pair is slowed below "
                f"min_pair_rate {min_rate:g} (best: with {best_id}, {best:.2f})"
            )
        smallest: dict[str, int] = {}
        for o in options:
            smallest[o.gpu_type.name] = min(o.gpus, smallest.get(o.gpu_type.name, o.gpus))
        needs = ", ".join(f"{g}: needs {n}, {free[g]} free" for g, n in smallest.items())
        idle = [f"{g} has {free[g]} free but {text}" for g, text in unusable.items() if free[g] > 0]
        also = f"; {'; '.join(idle)}" if idle else ""
        return "no-free-gpus", f"not enough free GPUs on any usable type ({needs}){also}"
    cheapest = min(option_cost_j(instance, plan, job, o) for o in fitting)
    budget_j = plan.round.budget_j
    if budget_j is not None:
        left_j = budget_j - plan.round.energy_j
        if cheapest > left_j:
            return "budget", (
                f"its cheapest option costs {_kj(cheapest)} (nodes it powers on included), "
                f"more than the {_kj(max(left_j, 0.0))} left of the budget"
            )
    objective = plan.round.objective
    if objective == "progress":
        why = "the progress objective ran jobs of more weighted progress"
    else:
        why = (
            f"the {objective} objective saved energy by giving up up to delta = {instance.round.delta:g} "
            "of the best progress"
        )
    return "lower-value", f"it fits (cheapest option {_kj(cheapest)}), but {why}"


def waiting_reasons(instance: Instance, plan: Plan) -> list[WaitingReason]:
    """One :class:`WaitingReason` per job ``plan`` leaves waiting, in plan order.

    The plan's own budget (``round.budget_j``, which a ``--budget-j`` override may have set) is the one used.
    """
    reasons = []
    for planned in plan.jobs:
        if planned.state != "wait" or not instance.has_job(planned.job_id):
            continue
        job = instance.job(planned.job_id)
        code, message = waiting_reason(instance, plan, job)
        reasons.append(WaitingReason(job.id, job.type, job.requested_gpus, job.gpus, code, message))
    return reasons


__all__ = [
    "WAITING_CODES",
    "WaitingCode",
    "WaitingReason",
    "free_gpus",
    "option_cost_j",
    "unusable_types",
    "waiting_reason",
    "waiting_reasons",
]
