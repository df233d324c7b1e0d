"""What a round's telemetry shows: per job its rate, power and utilisation; per GPU type idle and node power.

A real cluster sees each job's steps (the training loop's counter) and each GPU's energy and
utilisation (NVML, DCGM or ``nvidia-smi -l``). In the replay these come from the *truth*
(:mod:`planner.sim.accounting` applied to the truth instance), never from the planner's beliefs.
For one running job of a round, with ``sigma`` steps computed in ``c`` seconds (restart loss
excluded), dynamic energy ``E_dyn`` (J) on ``n`` GPUs:

* rate ``sigma / c`` (steps/s, whole job; while sharing, its shared rate ``rho * X``);
* power per GPU ``Pidle + E_dyn / (n c)`` (W), only for a job alone on its GPUs: a shared GPU's
  energy meter mixes the two jobs, so a pair gives rates, not powers;
* utilisation: the truth profile's ``utilisation`` (fraction of compute time the GPUs are busy),
  when the truth library has one (a pair: none);
* weight ``c / T``: how much of the round the observation covers (round-equivalents).

Per GPU type: the idle power of the powered GPUs no job holds (W per GPU, weight: idle
GPU-rounds) and the node power (W, weight: nodes on), as a node-level meter (BMC) reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.sim.accounting import RoundOutcome


@dataclass(frozen=True, slots=True)
class JobObservation:
    """One running job's round as telemetry shows it (see the module docstring)."""

    job_id: str
    job_type: str
    gpu_type: str
    gpus: int
    setting: int
    partner_type: str | None
    steps_per_s: float
    power_w: float | None
    utilisation: float | None
    weight: float


@dataclass(frozen=True, slots=True)
class GpuObservation:
    """One GPU type's idle and node power in a round (W), with their weights."""

    gpu_type: str
    idle_power_w: float | None
    idle_weight: float
    node_power_w: float
    node_weight: float


UtilisationTable = Mapping[tuple[str, str, int, int], float]  # (type, GPU type, count, setting) -> fraction


def observe_round(
    truth: Instance, plan: Plan, outcome: RoundOutcome, utilisation: UtilisationTable
) -> tuple[list[JobObservation], list[GpuObservation]]:
    """The round's observations from the truth instance and the outcome it produced."""
    T = truth.round.duration_s
    running = {e.job_id: e for e in plan.running()}
    jobs = []
    for jid, progress in outcome.jobs.items():
        if progress.compute_s <= 0 or progress.steps <= 0:
            continue
        e = running[jid]
        job = truth.job(jid)
        g = truth.gpu_type(e.gpu_type or "")
        n, s = e.gpus or 0, e.setting or 0
        partner = truth.job(e.shares_with).type if e.shares_with else None
        alone = partner is None
        jobs.append(
            JobObservation(
                job_id=jid,
                job_type=job.type,
                gpu_type=g.name,
                gpus=n,
                setting=s,
                partner_type=partner,
                steps_per_s=progress.steps / progress.compute_s,
                power_w=g.idle_power_w + progress.dynamic_j / (n * progress.compute_s) if alone else None,
                utilisation=utilisation.get((job.type, g.name, n, s)) if alone else None,
                weight=progress.compute_s / T,
            )
        )
    gpus = []
    for name, nodes in plan.round.nodes_on.items():
        if nodes <= 0:
            continue
        g = truth.gpu_type(name)
        idle_gpus = nodes * g.gpus_per_node - plan.round.gpus_used.get(name, 0)
        gpus.append(
            GpuObservation(
                gpu_type=name,
                idle_power_w=g.idle_power_w if idle_gpus > 0 else None,
                idle_weight=float(idle_gpus),
                node_power_w=g.node_power_w,
                node_weight=float(nodes),
            )
        )
    return jobs, gpus
