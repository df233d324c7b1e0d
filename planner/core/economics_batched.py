"""Option outcomes for whole groups of interchangeable jobs at once (NumPy).

:func:`planner.core.economics.job_outcome` is the arithmetic of one job on one option; here the same
operations, in the same order, run over every job of a *group* (same type, same allowed GPU
counts) at once, so each value equals the scalar one bit for bit. The option enumeration of the
round model (:mod:`formulations.options`) and the greedy ranking (:mod:`planner.core.greedy`) use it
at rounds of thousands of jobs.

:func:`grid_outcomes` does the same for many options of one group at once (a 2-D grid, options x members),
and :func:`exclusive_outcomes` gives every exclusive option of every job of an instance as flat columns, computed
once per instance and kept in ``instance.derived`` (the instance is immutable, so they stay true): the greedy
ranking and the round model's options read the same numbers instead of computing them twice a round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

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
    min_rate: np.ndarray  # steps/s: an option whose rate rho X is below it is not allowed (0: no slowdown limit)
    pair_only: np.ndarray  # bool: the job has no exclusive option (Job.pair_only)


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
                np.array([job.min_rate for job in jobs], dtype=float),
                np.array([job.pair_only for job in jobs], dtype=bool),
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


def allowed(progress: np.ndarray, group: JobGroup, rate: np.ndarray) -> np.ndarray:
    """Options x members allowed: progress above 0, at least ``min_progress``, at a rate at least ``min_rate``.

    ``progress`` (``w sigma / R``) has shape (options, members), ``rate`` (``rho X``, steps/s) one value per option;
    ``min_progress`` and ``min_rate`` are the members' (:class:`JobGroup`).
    """
    return (progress > 0) & (progress >= group.min_progress) & (rate[:, None] >= group.min_rate[None, :])


@dataclass(frozen=True)
class OptionRows:
    """Per option (row) of one group: what :func:`group_outcomes` reads from the option and its profile.

    ``gpu``: index of the GPU type in ``instance.gpu_types``; ``gpus``: its count ``n``; ``rate``: ``rho X``
    (steps/s); ``steps_per_s``: ``X`` (steps/s); ``coef``: ``n (P - Pidle)`` (W), each computed as the scalar
    code computes it.
    """

    gpu: np.ndarray
    gpus: np.ndarray
    rate: np.ndarray
    steps_per_s: np.ndarray
    coef: np.ndarray


def option_rows(
    gpu: Sequence[int] | np.ndarray,
    gpus: Sequence[int] | np.ndarray,
    rate: Sequence[float],
    x: Sequence[float],
    coef: Sequence[float],
) -> OptionRows:
    """:class:`OptionRows` from per-option lists (indices and counts as int64, the rest float64)."""
    return OptionRows(
        np.array(gpu, dtype=np.int64),
        np.array(gpus, dtype=np.int64),
        np.array(rate, dtype=float),
        np.array(x, dtype=float),
        np.array(coef, dtype=float),
    )


def grid_outcomes(instance: Instance, group: JobGroup, rows: OptionRows) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_outcomes` of many options at once: arrays of shape (options, members).

    Row ``i`` equals ``group_outcomes`` on option ``i`` bit for bit: the same IEEE operations on the same operands
    in the same order (``t = max(T - tau, 0)`` on a restart else ``T``; ``sigma = min(R, rate t)``, 0 when
    ``rate <= 0``; energy ``coef * (sigma / X)``, 0 when ``X <= 0``; progress ``w (sigma / R)``), only laid out
    in two dimensions.
    """
    T = instance.round.duration_s
    restart = (group.current_gpu[None, :] != rows.gpu[:, None]) | (group.current_gpus[None, :] != rows.gpus[:, None])
    t = np.where(restart, max(T - instance.round.restart_s, 0.0), T)
    runs = rows.rate > 0
    steps = np.where(runs[:, None], np.minimum(group.remaining[None, :], rows.rate[:, None] * t), 0.0)
    x_pos = rows.steps_per_s > 0
    per_step = np.where(x_pos[:, None], steps / np.where(x_pos, rows.steps_per_s, 1.0)[:, None], 0.0)
    energy = rows.coef[:, None] * per_step
    return group.weight[None, :] * (steps / group.remaining[None, :]), energy


@dataclass(frozen=True)
class ExclusiveOutcomes:
    """Every profiled exclusive option of every job that fits its GPU type's pool, as flat columns.

    Row order: groups (:func:`job_groups` order), GPU type (instance order), count (as the group lists them),
    setting (ascending), then the group's members (each option's members in turn). ``job``: index into
    ``instance.jobs``; ``gpu``/``count_pos``/``setting_pos``: positions of the GPU type, count and setting (sort
    keys); ``progress``: ``w sigma / R``; ``energy_j``: dynamic energy (J); ``keep``: progress above 0 and at least
    the job's tail bound (:func:`allowed`), and the job not ``pair_only``. Read-only arrays.
    """

    job: np.ndarray
    gpu: np.ndarray
    gpus: np.ndarray
    setting: np.ndarray
    count_pos: np.ndarray
    setting_pos: np.ndarray
    progress: np.ndarray
    energy_j: np.ndarray
    keep: np.ndarray


def _group_exclusive(instance: Instance, group: JobGroup) -> list[np.ndarray] | None:
    """The :class:`ExclusiveOutcomes` columns of one group (None when it has no profiled option)."""
    gi_l, n_l, s_l, k_l, si_l, rate_l, x_l, coef_l = [], [], [], [], [], [], [], []
    for gi, g in enumerate(instance.gpu_types):
        for k, n in enumerate(group.counts):
            if n > g.total_gpus:
                continue
            for si, s in enumerate(g.settings):
                prof = instance.profile(group.type, g.name, n, s)
                if prof is None:
                    continue
                gi_l.append(gi)
                n_l.append(n)
                s_l.append(s)
                k_l.append(k)
                si_l.append(si)
                rate_l.append(1.0 * prof.steps_per_s)
                x_l.append(prof.steps_per_s)
                coef_l.append(n * (prof.power_w - g.idle_power_w))
    if not gi_l:
        return None
    rows = option_rows(gi_l, n_l, rate_l, x_l, coef_l)
    progress, energy = grid_outcomes(instance, group, rows)
    m = len(group.index)

    def per_row(values: list[int]) -> np.ndarray:
        return np.repeat(np.array(values, dtype=np.int64), m)

    return [
        np.tile(group.index, len(gi_l)),
        np.repeat(rows.gpu, m),
        np.repeat(rows.gpus, m),
        per_row(s_l),
        per_row(k_l),
        per_row(si_l),
        progress.ravel(),
        energy.ravel(),
        (allowed(progress, group, rows.rate) & ~group.pair_only[None, :]).ravel(),
    ]


def exclusive_outcomes(instance: Instance) -> ExclusiveOutcomes:
    """The :class:`ExclusiveOutcomes` of ``instance``, computed at the first call and kept in ``instance.derived``.

    The values depend only on the instance's fields (jobs, GPU types, profiles, round length and restart cost),
    which never change, so the kept columns (made read-only) cannot go stale; an instance made by
    ``dataclasses.replace`` starts with an empty ``derived`` and computes its own.
    """
    hit = instance.derived.get("exclusive_outcomes")
    if isinstance(hit, ExclusiveOutcomes):
        return hit
    parts = [p for group in job_groups(instance) if (p := _group_exclusive(instance, group)) is not None]
    width = len(fields(ExclusiveOutcomes))
    if parts:
        cols = [np.concatenate([p[c] for p in parts]) for c in range(width)]
    else:
        cols = [np.zeros(0, dtype=np.int64) for _ in range(width - 1)] + [np.zeros(0, dtype=bool)]
    for c in cols:
        c.setflags(write=False)
    out = ExclusiveOutcomes(*cols)
    instance.derived["exclusive_outcomes"] = out
    return out
