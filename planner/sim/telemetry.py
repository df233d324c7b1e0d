"""What the learner is shown of a window: per job its rate, power and utilisation; per GPU type idle and node power.

A real cluster sees each job's steps (the training loop's counter) and each GPU's energy and utilisation (NVML,
DCGM or ``nvidia-smi -l``); the agent's loop reads them from Prometheus (:mod:`planner.agent.loop`), live or from the
simulated Slurm's meters, never from the planner's beliefs. For one running job with ``sigma`` steps computed in
``c`` seconds (restart loss excluded) and dynamic energy ``E_dyn`` (J) on ``n`` GPUs:

* rate ``sigma / c`` (steps/s, whole job; while sharing, its shared rate ``rho * X``);
* power per GPU ``Pidle + E_dyn / (n c)`` (W), only for a job alone on its GPUs: a shared GPU's
  energy meter mixes the two jobs, so a pair gives rates, not powers;
* utilisation: the fraction of compute time the GPUs are busy, when known (a pair: none);
* weight ``c / T``: how much of a round the observation covers (round-equivalents).

Per GPU type: the idle power of the powered GPUs no job holds (W per GPU, weight: idle
GPU-rounds) and the node power (W, weight: nodes on), as a node-level meter (BMC) reports it.
"""

from __future__ import annotations

from dataclasses import dataclass


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
