"""Option outcomes for whole groups of interchangeable jobs at once (NumPy).

:func:`planner.core.economics.job_outcome` is the arithmetic of one job on one option; here the same
operations, in the same order, run over every job of a *group* (same type, same allowed GPU
counts) at once, so each value equals the scalar one bit for bit. The option enumeration of the
round model (:mod:`formulations.options`) and the greedy ranking (:mod:`planner.core.greedy`) use it
at rounds of thousands of jobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from wattplan.planner.contracts.domain import GpuType, Instance, Job


@dataclass(frozen=True)
class JobGroup:
    """Jobs of one type with the same allowed GPU counts (``index`` into ``instance.jobs``)."""

    type: str
    counts: tuple[int, ...]
    index: np.ndarray
    remaining: np.ndarray  # R_j (steps)
    weight: np.ndarray  # w_j
    current_gpu: np.ndarray  # index of the current GPU type, -1 when waiting
    current_gpus: np.ndarray  # current GPU count, 0 when waiting
    min_progress: np.ndarray  # w_j min_steps_j / R_j: an option below it is not allowed (0: no tail bound)


def job_groups(instance: Instance) -> list[JobGroup]:
    """The jobs grouped by (type, allowed counts), groups in order of their first job."""
    gpu_index = {g.name: i for i, g in enumerate(instance.gpu_types)}
    members: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for j, job in enumerate(instance.jobs):
        members.setdefault((job.type, job.gpus), []).append(j)
    groups = []
    for (job_type, counts), idx in members.items():
        jobs: list[Job] = [instance.jobs[j] for j in idx]
        groups.append(
            JobGroup(
                job_type,
                counts,
                np.array(idx, dtype=np.int64),
                np.array([job.remaining_steps for job in jobs], dtype=float),
                np.array([job.weight for job in jobs], dtype=float),
                np.array([gpu_index[job.current.gpu_type] if job.current else -1 for job in jobs], dtype=np.int64),
                np.array([job.current.gpus if job.current else 0 for job in jobs], dtype=np.int64),
                np.array([job.weight * job.min_steps / job.remaining_steps for job in jobs], dtype=float),
            )
        )
    return groups


def group_outcomes(
    instance: Instance, group: JobGroup, gi: int, g: GpuType, n: int, setting: int, rho: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Weighted progress ``w sigma / R`` and dynamic energy (J) of every job of ``group`` on ``(g, n, s)``.

    :func:`planner.core.economics.job_outcome` for a whole group at once (same operations, same
    order): ``t = max(T - tau, 0)`` for a job that restarts (waiting, or another type or count)
    else ``T``; ``sigma = min(R, rho X t)``; energy ``n (P - Pidle) sigma / X``. None without a profile.
    """
    prof = instance.profile(group.type, g.name, n, setting)
    if prof is None:
        return None
    T = instance.round.duration_s
    restart = (group.current_gpu != gi) | (group.current_gpus != n)
    t = np.where(restart, max(T - instance.round.restart_s, 0.0), T)
    rate = rho * prof.steps_per_s
    steps = np.minimum(group.remaining, rate * t) if rate > 0 else np.zeros(len(group.index))
    per_step = steps / prof.steps_per_s if prof.steps_per_s > 0 else np.zeros(len(group.index))
    energy = n * (prof.power_w - g.idle_power_w) * per_step
    return group.weight * (steps / group.remaining), energy


@dataclass(frozen=True, slots=True)
class GroupOption:
    """One exclusive option ``(g, n, s)`` of a job group with every member's outcome.

    ``gpu``/``count_pos``/``setting_pos``: positions of ``g`` in ``instance.gpu_types``, of ``n`` in the
    group's counts and of ``s`` in ``g.settings`` (sort keys); ``progress`` is ``w sigma / R`` and
    ``energy_j`` the dynamic energy (J) of each member, ``keep`` the members with progress ``> 0`` that
    meet their tail bound (``w sigma / R >= w min_steps / R``).
    """

    group: JobGroup
    gpu: int
    gpu_type: GpuType
    count_pos: int
    gpus: int
    setting_pos: int
    setting: int
    progress: np.ndarray
    energy_j: np.ndarray

    @property
    def keep(self) -> np.ndarray:
        """The members for which this option makes progress, and at least their tail bound's."""
        return allowed(self.progress, self.group)


def allowed(progress: np.ndarray, group: JobGroup) -> np.ndarray:
    """Members whose ``progress`` (``w sigma / R``) is above 0 and at least their ``min_progress``."""
    return (progress > 0) & (progress >= group.min_progress)


def exclusive_group_options(instance: Instance, groups: list[JobGroup]) -> Iterator[GroupOption]:
    """Every profiled exclusive option of every group that fits its GPU type's pool.

    Groups in the given order, then GPU type (instance order), count (as the group lists them),
    setting (ascending); zero-progress members are included (``keep`` marks the others).
    """
    for group in groups:
        for gi, g in enumerate(instance.gpu_types):
            for k, n in enumerate(group.counts):
                if n > g.total_gpus:
                    continue
                for si, s in enumerate(g.settings):
                    out = group_outcomes(instance, group, gi, g, n, s, 1.0)
                    if out is not None:
                        yield GroupOption(group, gi, g, k, n, si, s, out[0], out[1])
