"""Measured points from an nvidia-smi log and the job side: runs, idle and held-idle GPUs, the top limit.

Integrals (per GPU, over the samples ``t_1 < ... < t_m`` of one segment inside a window; trapezoid rule):

* energy of the sampled span ``A = sum_i (t_(i+1) - t_i) (P_i + P_(i+1)) / 2`` (J), mean power
  ``P_bar = A / (t_m - t_1)`` (W); the mean utilisation ``u_bar`` is the same integral of
  ``utilization.gpu / 100`` over ``t_m - t_1`` (a fraction).

A run (:class:`~planner.profiling.job_side.JobRun`) on GPUs ``G`` in the window ``[a, b]`` (``a``/``b``
default to the latest first and the earliest last sample of its GPUs) becomes an ``exclusive`` point, or
a ``pair`` point when it names a partner, with:

* ``duration_s = b - a``; ``steps_per_s = steps / (b - a)`` (whole job);
* ``power_w = mean over g in G of P_bar_g`` (W per GPU); ``energy_j = sum over g of P_bar_g * (b - a)``
  (J: each GPU's mean power over the window's length);
* ``utilisation = mean over g of u_bar_g`` (None when a GPU's window has a sample without one);
* ``setting``: the run's, else the log's power limit in the window (one value on all its GPUs, rounded to
  a whole W).

A run is skipped, with a problem naming it (``runs[k]``), when: a GPU of it is not in the log
(``gpu-not-in-log``); a GPU has fewer than two samples in the window or its samples leave more than
:data:`COVER_STEPS` median steps uncovered at either end (``window-not-covered``: the window lies outside the
log or the log has a hole there); a clock jump lies inside the window (``clock-jump``); no setting is given
and the log has no power limit there, or it changes (``no-setting``, ``setting-varies``).

Idle and held idle (one point each per log, every GPU pooled, ``P = sum A / sum (t_m - t_1)``):

* a sample is *idle* when no run (computing or holding) covers its GPU at that time and the log agrees:
  ``utilization.gpu`` is 0 where the column exists and ``memory.used`` is at most :data:`IDLE_MEMORY_MIB`
  where it exists (a process's CUDA context alone takes hundreds of MiB). A GPU that some run names counts
  outside its windows only when ``memory.used`` is logged, since without it a process may still hold it.
  Only pairs of consecutive idle samples of one segment are integrated;
* a run's ``held_idle`` GPUs over its window give a ``held_idle`` point (W per GPU, ``job_type`` the holder)
  if their mean utilisation is at most :data:`HELD_IDLE_MAX_UTIL` (0 but for the odd blip); else the run's
  held-idle part is skipped (``held-gpu-busy``).

``top_limit``: the largest ``power.max_limit`` in the log (W), when the column exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from wattplan.planner.contracts.problems import Problem
from wattplan.planner.profiling.job_side import JobRun
from wattplan.planner.profiling.nvidia_smi import GpuSamples, SmiLog, format_time, from_seconds, seconds
from wattplan.planner.profiling.points import MeasuredPoint, Provenance

COVER_STEPS = 2.0
"""A window's first/last sample may lie at most this many median sampling steps inside its ends."""
IDLE_MEMORY_MIB = 64.0
"""Most memory.used (MiB) of a GPU no process holds."""
HELD_IDLE_MAX_UTIL = 0.01
"""Largest mean utilisation (fraction) of a GPU counted as held idle."""
SETTING_UNIT = "power_limit_w"


@dataclass(frozen=True, slots=True)
class IngestResult:
    """The points read from one source and the problems reported on the way (rows or runs skipped)."""

    points: list[MeasuredPoint]
    skipped: list[Problem] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Integral:
    """One GPU's trapezoid integrals over samples: ``energy_j`` (J), ``span_s`` (s), ``util_s`` (s, or None)."""

    energy_j: float
    span_s: float
    util_s: float | None
    first_line: int
    last_line: int

    @property
    def mean_power_w(self) -> float:
        """``A / span`` (W)."""
        return self.energy_j / self.span_s

    @property
    def mean_utilisation(self) -> float | None:
        """``integral of u dt / span`` (fraction), None if a sample had no utilisation."""
        return None if self.util_s is None else self.util_s / self.span_s


def integrate(samples: GpuSamples) -> Integral:
    """Trapezoid integrals over consecutive samples (at least two, one segment, times increasing)."""
    dt = np.diff(samples.t_s)
    energy = float(np.sum(dt * (samples.power_w[:-1] + samples.power_w[1:]) / 2))
    u = samples.utilisation
    util = None if np.isnan(u).any() else float(np.sum(dt * (u[:-1] + u[1:]) / 2))
    return Integral(energy, float(np.sum(dt)), util, int(samples.line[0]), int(samples.line[-1]))


def _gpu_list(gpus: Sequence[int]) -> str:
    return ",".join(str(g) for g in gpus)


def _window(log: SmiLog, run: JobRun, gpus: Sequence[int]) -> tuple[float, float]:
    """The run's window ``[a, b]`` in log seconds; defaults from the GPUs' samples."""
    a = seconds(run.start) if run.start else max(float(log.samples[g].t_s[0]) for g in gpus)
    b = seconds(run.end) if run.end else min(float(log.samples[g].t_s[-1]) for g in gpus)
    return a, b


def _window_integral(log: SmiLog, gpu: int, a: float, b: float) -> Integral | tuple[str, str]:
    """The GPU's integral over ``[a, b]``, or ``(code, reason)`` why it cannot be trusted."""
    inside = log.samples[gpu].between(a, b)
    tolerance = COVER_STEPS * log.median_step_s[gpu]
    if len(inside) < 2 or inside.t_s[0] - a > tolerance or b - inside.t_s[-1] > tolerance:
        return "window-not-covered", f"GPU {gpu}'s samples do not cover the window (outside the log, or a hole)"
    if inside.segment[0] != inside.segment[-1]:
        return "clock-jump", f"GPU {gpu}'s log has a clock jump inside the window (see the clock-jump problem)"
    return integrate(inside)


def _setting(log: SmiLog, run: JobRun, a: float, b: float) -> int | tuple[str, str]:
    """The run's setting (W), else the log's single power limit in the window."""
    if run.setting is not None:
        return run.setting
    values = np.concatenate([log.samples[g].between(a, b).power_limit_w for g in run.gpus])
    if not len(values) or np.isnan(values).any():
        return "no-setting", "no setting given and the log has no power.limit in the window"
    limits = sorted({round(float(v)) for v in np.unique(values)})
    if len(limits) > 1:
        return "setting-varies", f"the log's power limit changes in the window ({limits} W): give the setting"
    return limits[0]


def _run_points(log: SmiLog, run: JobRun, k: int, gpu_type: str) -> tuple[list[MeasuredPoint], list[Problem]]:
    """The run's exclusive/pair point and held-idle point, or the problems that skip them."""
    path = f"runs[{k}]"
    missing = [g for g in (*run.gpus, *run.held_idle) if g not in log.samples]
    if missing:
        return [], [Problem("gpu-not-in-log", path, f"GPU(s) {_gpu_list(missing)} have no samples in {log.file}")]
    a, b = _window(log, run, run.gpus)
    if b <= a:
        return [], [Problem("window-not-covered", path, f"the window is empty in {log.file}")]
    per_gpu = [_window_integral(log, g, a, b) for g in run.gpus]
    bad = [x for x in per_gpu if isinstance(x, tuple)]
    setting = _setting(log, run, a, b) if not bad else 0
    if isinstance(setting, tuple):
        bad.append(setting)
    if bad or isinstance(setting, tuple):
        return [], [Problem(code, path, f"{reason}: run skipped") for code, reason in bad]
    integrals = [x for x in per_gpu if isinstance(x, Integral)]
    duration = b - a
    utils = [x.mean_utilisation for x in integrals]
    lines = f"lines {min(x.first_line for x in integrals)}-{max(x.last_line for x in integrals)}"
    span = f"from {format_time(from_seconds(a))} to {format_time(from_seconds(b))}"
    window = f"GPUs {_gpu_list(run.gpus)} {span} ({lines}), {run.steps:.10g} steps"
    mean_powers = [x.mean_power_w for x in integrals]
    point = MeasuredPoint(
        kind="pair" if run.partner_type else "exclusive",
        gpu_type=gpu_type,
        provenance=Provenance(log.file, log.sha256, window),
        job_type=run.job_type,
        gpus=len(run.gpus),
        setting=setting,
        setting_unit=SETTING_UNIT,
        partner_type=run.partner_type,
        steps_per_s=run.steps / duration,
        power_w=sum(mean_powers) / len(mean_powers),
        utilisation=_mean_or_none(utils),
        duration_s=duration,
        steps=run.steps,
        energy_j=sum(mean_powers) * duration,
    )
    if not run.held_idle:
        return [point], []
    held = _held_idle(log, run, k, a, b, gpu_type, span)
    return ([point, held], []) if isinstance(held, MeasuredPoint) else ([point], [held])


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    """The mean of ``values``, None if any is None."""
    known = [v for v in values if v is not None]
    return None if len(known) < len(values) or not known else sum(known) / len(known)


def _held_idle(
    log: SmiLog, run: JobRun, k: int, a: float, b: float, gpu_type: str, span: str
) -> MeasuredPoint | Problem:
    """The held-idle point of a run's ``held_idle`` GPUs over its window, or the problem that skips it."""
    path = f"runs[{k}].held_idle"
    per_gpu = [_window_integral(log, g, a, b) for g in run.held_idle]
    bad = [x for x in per_gpu if isinstance(x, tuple)]
    if bad:
        code, reason = bad[0]
        return Problem(code, path, f"{reason}: held-idle point skipped")
    integrals = [x for x in per_gpu if isinstance(x, Integral)]
    busy = [(g, u) for g, x in zip(run.held_idle, integrals, strict=True) if (u := x.mean_utilisation) is not None]
    busy = [(g, u) for g, u in busy if u > HELD_IDLE_MAX_UTIL]
    if busy:
        g, u = busy[0]
        message = f"GPU {g} computes ({u:.1%} mean utilisation) while said to be held idle: held-idle point skipped"
        return Problem("held-gpu-busy", path, message)
    lines = f"lines {min(x.first_line for x in integrals)}-{max(x.last_line for x in integrals)}"
    powers = [x.mean_power_w for x in integrals]
    return MeasuredPoint(
        kind="held_idle",
        gpu_type=gpu_type,
        provenance=Provenance(log.file, log.sha256, f"held idle: GPUs {_gpu_list(run.held_idle)} {span} ({lines})"),
        job_type=run.job_type,
        gpus=len(run.held_idle),
        power_w=sum(powers) / len(powers),
        utilisation=_mean_or_none([x.mean_utilisation for x in integrals]),
        duration_s=b - a,
        energy_j=sum(powers) * (b - a),
    )


def _covered(log: SmiLog, runs: Sequence[JobRun]) -> dict[int, list[tuple[float, float]]]:
    """Per GPU, the windows in which some run computes on it or holds it."""
    out: dict[int, list[tuple[float, float]]] = {}
    for run in runs:
        gpus = [g for g in (*run.gpus, *run.held_idle) if g in log.samples]
        if not gpus:
            continue
        a, b = _window(log, run, gpus)
        for g in gpus:
            out.setdefault(g, []).append((a, b))
    return out


def _idle_mask(samples: GpuSamples, windows: Sequence[tuple[float, float]], fields: frozenset[str]) -> np.ndarray:
    """The idle rule of the module docstring for each sample of a GPU whose run windows are ``windows``."""
    idle = np.ones(len(samples), dtype=bool)
    for a, b in windows:
        idle &= ~((samples.t_s >= a) & (samples.t_s <= b))
    if windows and "memory_used_mib" not in fields:
        idle[:] = False
    if "utilisation" in fields:
        idle &= samples.utilisation == 0  # NaN (unknown) is not idle
    if "memory_used_mib" in fields:
        idle &= samples.memory_used_mib <= IDLE_MEMORY_MIB
    return idle


def idle_point(log: SmiLog, runs: Sequence[JobRun], gpu_type: str) -> MeasuredPoint | None:
    """The ``idle`` point of the log (W per GPU, all idle intervals pooled), None when no interval is idle."""
    covered = _covered(log, runs)
    energy = span = 0.0
    gpus, lines, times = [], [], []
    for g in log.gpus:
        s = log.samples[g]
        idle = _idle_mask(s, covered.get(g, []), log.fields)
        pair = idle[:-1] & idle[1:] & (s.segment[:-1] == s.segment[1:])
        if not pair.any():
            continue
        dt = np.diff(s.t_s)[pair]
        energy += float(np.sum(dt * (s.power_w[:-1][pair] + s.power_w[1:][pair]) / 2))
        span += float(np.sum(dt))
        first, last = int(np.flatnonzero(pair)[0]), int(np.flatnonzero(pair)[-1]) + 1
        lines += [int(s.line[first]), int(s.line[last])]
        times += [s[first].time, s[last].time]
        gpus.append(g)
    if span <= 0:
        return None
    window = (
        f"idle: GPUs {_gpu_list(gpus)} from {format_time(min(times))} to {format_time(max(times))} "
        f"(lines {min(lines)}-{max(lines)})"
    )
    return MeasuredPoint(
        kind="idle",
        gpu_type=gpu_type,
        provenance=Provenance(log.file, log.sha256, window),
        power_w=energy / span,
        duration_s=span,
        energy_j=energy,
    )


def top_limit_point(log: SmiLog, gpu_type: str) -> MeasuredPoint | None:
    """The ``top_limit`` point: the largest ``power.max_limit`` of the log (W), None without the column."""
    limits = np.concatenate([log.samples[g].max_limit_w for g in log.gpus])
    lines = np.concatenate([log.samples[g].line for g in log.gpus])
    known = ~np.isnan(limits)
    if not known.any():
        return None
    top = float(limits[known].max())
    line = int(lines[limits == top].min())
    window = f"power.max_limit, largest of {int(known.sum())} samples (first at line {line})"
    return MeasuredPoint(
        kind="top_limit", gpu_type=gpu_type, provenance=Provenance(log.file, log.sha256, window), power_w=top
    )


def points_from_smi(log: SmiLog, runs: Sequence[JobRun], gpu_type: str) -> IngestResult:
    """Every point of a log (runs, held idle, idle, top limit); ``skipped`` holds the log's and the runs' problems."""
    points: list[MeasuredPoint] = []
    skipped = list(log.problems)
    for k, run in enumerate(runs):
        found, problems = _run_points(log, run, k, gpu_type)
        points += found
        skipped += problems
    for extra in (idle_point(log, runs, gpu_type), top_limit_point(log, gpu_type)):
        if extra is not None:
            points.append(extra)
    return IngestResult(points, skipped)
