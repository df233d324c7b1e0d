"""What a placed round plan really does: steps, finish times and energy (J).

This is the simulator's single energy accounting, the same for every policy, and it is the
model's (docs/design.md §2 and §10.2, :mod:`planner.core.economics`). For a round of ``T`` seconds:

* node energy ``sum_g u_g * T * Pnode_g`` and idle energy ``sum_g u_g * T * K_g * Pidle_g``
  for the ``u_g = nodes_on[g]`` powered-on nodes (suspended nodes draw nothing);
* dynamic energy, per running job, ``n * (P - Pidle_g) * sigma / X``: each step costs what
  it costs alone, so a job in a pair draws ``rho * n * (P - Pidle)`` while it computes;
  a job that finishes mid-round stops drawing then, and nothing is drawn during the restart
  loss ``tau`` at the start of a round in which a job (re)starts.

Steps are :func:`planner.core.economics.job_outcome`'s: ``sigma = min(R, rho * X * t)`` with
``t = T - tau`` on a restart, else ``T``. With a throughput factor ``f`` (profile error,
``--noise``), the job really runs at ``f * rho * X`` at the profiled power, so
``sigma = min(R, f * rho * X * t)`` and its dynamic energy is ``n * (P - Pidle) * sigma / (f * X)``;
``f = 1`` reproduces ``job_outcome`` exactly. A pair keeps its shared rates for the whole
round even when one partner finishes early (the model's assumption).

GPU utilisation counts a GPU busy while any job on it computes: an allocation of ``n`` GPUs
is busy ``n * |union of its jobs' compute intervals|`` GPU-seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.core.economics import job_outcome
from wattplan.planner.core.evaluate import rho_of


@dataclass(frozen=True, slots=True)
class JobProgress:
    """One running job's round: it computes from ``start_s`` for ``compute_s`` (offsets in the round)."""

    job_id: str
    restarts: bool
    shared: bool
    gpus: int
    steps: float
    start_s: float
    compute_s: float
    dynamic_j: float
    finished: bool


@dataclass(frozen=True, slots=True)
class EnergySplit:
    """Energy (J) split into nodes besides their GPUs, the GPUs' idle power and the rest (dynamic).

    A round's in the replay; a whole run's in the simulated Slurm (``SimulatedSlurm.energy``, planner.control).
    """

    node_j: float
    idle_j: float
    dynamic_j: float

    @property
    def total_j(self) -> float:
        """Node plus idle plus dynamic energy (J)."""
        return self.node_j + self.idle_j + self.dynamic_j


@dataclass(frozen=True)
class RoundOutcome:
    """Everything the engine needs from one simulated round."""

    jobs: dict[str, JobProgress]
    energy: EnergySplit
    gpus_used: int  # GPUs holding a job (a pair's GPUs once)
    powered_gpus: int  # sum_g u_g * K_g
    busy_gpu_s: float
    powered_gpu_s: float


def job_progress(inst: Instance, entry: PlannedJob, partner: PlannedJob | None, factor: float = 1.0) -> JobProgress:
    """Steps, compute time and dynamic energy of one running plan entry (see the module docstring)."""
    job = inst.job(entry.job_id)
    g = inst.gpu_type(entry.gpu_type or "")
    n, s = entry.gpus or 0, entry.setting or 0
    rho = rho_of(inst, entry, partner)
    o = job_outcome(inst, job, g, n, s, 1.0 if rho is None else rho)
    prof = inst.profile(job.type, g.name, n, s)
    if o is None or rho is None or prof is None:
        raise ValueError(f"round {inst.round.index}: cannot evaluate job {entry.job_id!r} as planned")
    if factor == 1.0:
        steps, compute_s, dynamic_j = o.steps, o.run_s, o.energy_j
    else:
        t = inst.round.duration_s - inst.round.restart_s if o.restarts else inst.round.duration_s
        rate = o.steps_per_s * factor
        steps = min(job.remaining_steps, rate * max(t, 0.0)) if rate > 0 else 0.0
        compute_s = steps / rate if rate > 0 else 0.0
        dynamic_j = n * (prof.power_w - g.idle_power_w) * (steps / (prof.steps_per_s * factor))
    return JobProgress(
        job_id=job.id,
        restarts=o.restarts,
        shared=partner is not None,
        gpus=n,
        steps=steps,
        start_s=inst.round.restart_s if o.restarts else 0.0,
        compute_s=compute_s,
        dynamic_j=dynamic_j,
        finished=steps >= job.remaining_steps,
    )


def _union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length of a union of closed intervals (s)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def round_outcome(inst: Instance, plan: Plan, factors: Mapping[str, float] | None = None) -> RoundOutcome:
    """Simulate ``plan`` (placed and validated for ``inst``) over one round."""
    T = inst.round.duration_s
    running = {e.job_id: e for e in plan.running()}
    progress = {
        jid: job_progress(inst, e, running.get(e.shares_with or ""), (factors or {}).get(jid, 1.0))
        for jid, e in running.items()
    }
    busy = 0.0
    gpus_used = 0
    seen: set[str] = set()
    for jid, e in running.items():
        if jid in seen:
            continue
        members = [jid] + ([e.shares_with] if e.shares_with else [])
        seen.update(members)
        spans = [(progress[m].start_s, progress[m].start_s + progress[m].compute_s) for m in members]
        busy += (e.gpus or 0) * _union_length(spans)
        gpus_used += e.gpus or 0
    nodes_on = plan.round.nodes_on
    node_j = sum(inst.gpu_type(g).node_power_w * T * u for g, u in nodes_on.items())
    idle_j = sum(inst.gpu_type(g).gpus_per_node * inst.gpu_type(g).idle_power_w * T * u for g, u in nodes_on.items())
    powered = sum(inst.gpu_type(g).gpus_per_node * u for g, u in nodes_on.items())
    energy = EnergySplit(node_j, idle_j, sum(p.dynamic_j for p in progress.values()))
    return RoundOutcome(progress, energy, gpus_used, powered, busy, powered * T)
