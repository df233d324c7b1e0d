"""What ``wattplan agent`` reads from Prometheus about one window of real time ``[t0, t1]`` (Unix s).

The metrics are those of NVIDIA's DCGM exporter and of the emulator (docs/design.md §11.7). A GPU is the pair of
labels ``(Hostname, gpu)``; its series change whenever its ``hpc_job`` label changes (the job ids on the GPU,
comma-joined; absent or empty: no job), so every series of one GPU is merged into one time-ordered stream.

Energy of a counter over the window. The baseline is the counter's last sample at or before ``t0``; every later
sample ``v_i`` with ``t_i <= t1`` adds ``v_i - v_{i-1}``, or ``v_i`` when the counter went down (a reset: the
counter restarted from 0, so the energy since the reset is its new value; energy between the last sample before
the reset and the reset itself is lost). Consecutive windows therefore tile time without gap or overlap. With no
sample at or before ``t0`` (a GPU that appeared during the window) the first sample in the window is the baseline
and a note says so, unless ``from_zero`` is set (counters known to start at 0, as an emulator's do): then the
baseline is 0. ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` is in mJ (reported here in J: ``/ 1000``);
``wattplan_node_energy_joules_total`` is in J. On an emulated cluster both count *emulated* energy, so the joules
here are emulated joules and need no clock: only the window's ends are real time.

Energy of a job (apportioning). Each increment ``v_i - v_{i-1}`` of a GPU belongs to the jobs named in the
``hpc_job`` label of sample ``i`` (the jobs on the GPU when the energy was counted). A job alone on the GPU gets
all of it (its share of the idle power included); jobs sharing the GPU split it by the caller's ``weights``
(job id -> weight, e.g. each job's modelled dynamic power in W): job ``j`` gets ``w_j / sum_k w_k`` of it when
every job of the group has a finite weight > 0, and an equal share otherwise (the default, with no weights).
Increments of a GPU with no job are its idle energy, reported per GPU and in all. A job on several GPUs sums its
shares over them.

Idle time. Each increment covers the time since the sample before it (its ``span_s``, real s; the first one since
the baseline sample; unknown without one, as from 0 with ``from_zero``). An increment is *idle and on* when it names
no job and the GPU is on at its end: its ``DCGM_FI_DEV_POWER_USAGE`` sample of the same scrape is above 0 W (an
emulated node powered down reads 0 W; a real one exports nothing), or, with no such sample, its energy is above 0.
An increment of 0 J whose GPU reads power is idle and on: the counter had not moved since the last scrape (an
emulator that ticked late), and the next increment carries that energy. It is *steady* when the increment before
it (or the baseline sample, which must exist) was idle and on too: the first idle increment after a job may hold
the end of that job's run at its power, the first after the GPU was off part of a boot. ``GpuWindow.idle_s`` sums
the spans of a GPU's steady increments and ``idle_on_j`` their energy, so ``idle_on_j / (idle_s * time scale)`` is
the idle power (W) of the GPU while it was powered and held no job.

Means. ``mean_power_w`` and ``mean_util_pct`` are the plain means of the ``DCGM_FI_DEV_POWER_USAGE`` (W) and
``DCGM_FI_DEV_GPU_UTIL`` (%) samples with ``t0 < t <= t1`` (the scrape interval is regular, so this is the time
mean); None with no sample.

Steps. ``wattplan_job_steps_done`` (a gauge per ``hpc_job``) evaluated at ``t0`` and at ``t1`` (Prometheus'
5-minute look-back; a job whose trainer stopped is absent); None where absent: a job that was not running at
``t0`` may still have resumed from a checkpoint, so a missing value is never taken as 0.

Freshness. :class:`ScrapeHealth` says whether every target of the scrape job was ``up`` at ``t1`` and the newest
energy sample is at most ``fresh_s`` old at ``t1``; otherwise ``reason`` says what is missing
("Prometheus has no data for the last round").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wattplan.planner.agent.prometheus import Queries, Sample, Series

GPU_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
GPU_POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
STEPS_DONE = "wattplan_job_steps_done"
NODE_ENERGY = "wattplan_node_energy_joules_total"
MJ_PER_J = 1000.0


@dataclass(frozen=True, slots=True, order=True)
class GpuKey:
    """One GPU: its node's ``Hostname`` label and its ``gpu`` index label."""

    hostname: str
    gpu: str


@dataclass(frozen=True, slots=True)
class Increment:
    """One counter increase (J) between two samples, and the jobs the later sample names (empty: idle).

    ``span_s``: the real seconds between the two samples (the increment's energy was drawn over them); None when
    the earlier one is not a sample (no baseline: the counter's start is not known).
    """

    t_unix: float
    joules: float
    jobs: tuple[str, ...]
    span_s: float | None = None


@dataclass(frozen=True, slots=True)
class CounterWindow:
    """A counter's increments over a window, how many resets it saw and whether it had a baseline sample.

    ``baseline_jobs``: the jobs the baseline sample names (empty without one).
    """

    increments: tuple[Increment, ...]
    resets: int
    baseline: bool
    baseline_jobs: tuple[str, ...] = ()

    @property
    def joules(self) -> float:
        """Energy over the window (J)."""
        return sum(i.joules for i in self.increments)


@dataclass(frozen=True, slots=True)
class GpuWindow:
    """One GPU over the window: energy (J), its idle part (J), mean power (W) and utilisation (%), jobs seen.

    ``idle_s``: the real seconds its steady idle increments span (module docstring), ``idle_on_j`` their energy (J).
    """

    key: GpuKey
    energy_j: float
    idle_j: float
    mean_power_w: float | None
    mean_util_pct: float | None
    resets: int
    jobs: tuple[str, ...]
    idle_s: float = 0.0
    idle_on_j: float = 0.0


@dataclass(frozen=True, slots=True)
class JobWindow:
    """One job over the window: apportioned GPU energy (J), GPUs it was seen on, steps done at ``t0`` and ``t1``."""

    job_id: str
    energy_j: float
    gpus: tuple[GpuKey, ...]
    steps_t0: float | None
    steps_t1: float | None
    job_type: str | None


@dataclass(frozen=True, slots=True)
class NodeWindow:
    """One node's own energy over the window (J, ``wattplan_node_energy_joules_total``) and its resets."""

    hostname: str
    energy_j: float
    resets: int


@dataclass(frozen=True, slots=True)
class ScrapeHealth:
    """Whether Prometheus had fresh samples at ``t1``; ``reason`` says what is missing when not."""

    ok: bool
    targets: int
    targets_up: int
    newest_sample_unix: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything :func:`observe` read about ``[t0_unix, t1_unix]``; ``notes`` list what could not be read."""

    t0_unix: float
    t1_unix: float
    gpus: tuple[GpuWindow, ...]
    jobs: tuple[JobWindow, ...]
    nodes: tuple[NodeWindow, ...]
    scrape: ScrapeHealth
    notes: tuple[str, ...]

    @property
    def gpu_energy_j(self) -> float:
        """All GPUs' energy (J)."""
        return sum(g.energy_j for g in self.gpus)

    @property
    def idle_gpu_j(self) -> float:
        """The energy of GPUs while no job was on them (J)."""
        return sum(g.idle_j for g in self.gpus)

    @property
    def node_energy_j(self) -> float:
        """All nodes' own energy (J)."""
        return sum(n.energy_j for n in self.nodes)

    @property
    def cluster_energy_j(self) -> float:
        """The whole cluster's energy (J): every GPU's, idle included, and every node's own (what a budget charges)."""
        return self.gpu_energy_j + self.node_energy_j

    def idle_by_node(self) -> dict[str, tuple[float, float]]:
        """Per node: its GPUs' idle energy (J) and idle time in GPU-windows (idle GPU-seconds over ``t1 - t0``)."""
        length = self.t1_unix - self.t0_unix
        out: dict[str, tuple[float, float]] = {}
        for g in self.gpus:
            j, n = out.get(g.key.hostname, (0.0, 0.0))
            out[g.key.hostname] = (j + g.idle_on_j, n + (g.idle_s / length if length > 0 else 0.0))
        return out

    def job(self, job_id: str) -> JobWindow | None:
        """The job's window, None when it was not seen."""
        return next((j for j in self.jobs if j.job_id == job_id), None)


# ---------------------------------------------------------------------------------------------- pure functions


def job_ids(label: str | None) -> tuple[str, ...]:
    """The job ids of an ``hpc_job`` label (comma-joined, spaces dropped); empty for none."""
    if not label:
        return ()
    return tuple(sorted({part.strip() for part in label.split(",") if part.strip()}))


def merge_streams(
    series: Iterable[Series], key_labels: Sequence[str], notes: list[str]
) -> dict[tuple[str, ...], list[tuple[float, float, tuple[str, ...]]]]:
    """Series grouped by ``key_labels`` into time-ordered ``(t, value, jobs)`` streams, one point per time.

    A series lacking a key label is skipped with a note; two samples of one key at the same time keep the last.
    """
    merged: dict[tuple[str, ...], dict[float, tuple[float, tuple[str, ...]]]] = {}
    for s in series:
        if any(not s.labels.get(k) for k in key_labels):
            name = s.labels.get("__name__", "a series")
            notes.append(f"{name} without label(s) {', '.join(key_labels)} skipped: {s.labels}")
            continue
        key = tuple(s.labels[k] for k in key_labels)
        jobs = job_ids(s.labels.get("hpc_job"))
        stream = merged.setdefault(key, {})
        for t, v in s.points:
            stream[t] = (v, jobs)
    return {k: [(t, v, j) for t, (v, j) in sorted(p.items())] for k, p in merged.items()}


def counter_window(
    stream: Sequence[tuple[float, float, tuple[str, ...]]],
    t0: float,
    t1: float,
    scale: float = 1.0,
    from_zero: bool = False,
) -> CounterWindow:
    """A counter's increments over ``[t0, t1]`` (module docstring), each multiplied by ``scale`` (mJ -> J: 1e-3).

    NaN and infinite samples are ignored.
    """
    points = [p for p in stream if math.isfinite(p[1]) and p[0] <= t1]
    before = [p for p in points if p[0] <= t0]
    inside = [p for p in points if p[0] > t0]
    baseline = bool(before)
    if before:
        prev: float | None = before[-1][1]
    elif from_zero:
        prev = 0.0
    else:
        prev = None
    prev_t: float | None = before[-1][0] if before else None
    increments: list[Increment] = []
    resets = 0
    for t, v, jobs in inside:
        if prev is not None:
            if v >= prev:
                delta = v - prev
            else:
                resets += 1
                delta = v
            increments.append(Increment(t, delta * scale, jobs, None if prev_t is None else t - prev_t))
        prev, prev_t = v, t
    return CounterWindow(tuple(increments), resets, baseline, before[-1][2] if before else ())


def shares(jobs: Sequence[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    """Each job's share (sum 1) of an increment of a GPU the ``jobs`` share (module docstring)."""
    if not jobs:
        return {}
    w = [weights.get(j, math.nan) if weights else math.nan for j in jobs]
    if all(math.isfinite(x) and x > 0 for x in w):
        total = sum(w)
        return {j: x / total for j, x in zip(jobs, w, strict=True)}
    return {j: 1.0 / len(jobs) for j in jobs}


def apportion(
    windows: Mapping[GpuKey, CounterWindow], weights: Mapping[str, float] | None = None
) -> tuple[dict[str, float], dict[str, set[GpuKey]], dict[GpuKey, float]]:
    """Per job its energy (J) and the GPUs it drew it on, and per GPU its idle energy (J)."""
    energy: dict[str, float] = {}
    seen: dict[str, set[GpuKey]] = {}
    idle: dict[GpuKey, float] = {}
    for key, window in windows.items():
        idle[key] = 0.0
        for inc in window.increments:
            if not inc.jobs:
                idle[key] += inc.joules
                continue
            for job, share in shares(inc.jobs, weights).items():
                energy[job] = energy.get(job, 0.0) + inc.joules * share
                seen.setdefault(job, set()).add(key)
    return energy, seen, idle


def idle_meter(window: CounterWindow, power_w: Mapping[float, float]) -> tuple[float, float]:
    """A GPU's idle energy while on (J) and that time (real s), over its steady idle increments (module docstring).

    ``power_w``: the GPU's power samples by time (W).
    """
    joules = seconds = 0.0
    steady = window.baseline and not window.baseline_jobs
    for inc in window.increments:
        watts = power_w.get(inc.t_unix)
        on = (inc.joules > 0) if watts is None or not math.isfinite(watts) else watts > 0
        idle_on = on and not inc.jobs
        if idle_on and steady and inc.span_s is not None:
            joules += inc.joules
            seconds += inc.span_s
        steady = idle_on
    return joules, seconds


def window_mean(stream: Sequence[tuple[float, float, tuple[str, ...]]], t0: float, t1: float) -> float | None:
    """The mean of the finite samples with ``t0 < t <= t1``; None with none."""
    values = [v for t, v, _ in stream if t0 < t <= t1 and math.isfinite(v)]
    return sum(values) / len(values) if values else None


def steps_by_job(samples: Iterable[Sample]) -> dict[str, tuple[float, str | None]]:
    """``{job id: (steps done, job type)}`` of ``wattplan_job_steps_done`` samples (the largest if repeated)."""
    out: dict[str, tuple[float, str | None]] = {}
    for s in samples:
        job = s.labels.get("hpc_job")
        if not job or not math.isfinite(s.value):
            continue
        if job not in out or s.value > out[job][0]:
            out[job] = (s.value, s.labels.get("job_type"))
    return out


def scrape_health(
    up: Sequence[Sample], newest_unix: float | None, t1: float, fresh_s: float, job_label: str
) -> ScrapeHealth:
    """Fresh when every ``up`` sample of the scrape job is 1 and the newest energy sample is ``fresh_s`` old at most."""
    targets = len(up)
    targets_up = sum(1 for s in up if s.value == 1.0)
    if targets == 0:
        reason = f"Prometheus knows no target of scrape job {job_label!r} at the end of the window"
    elif targets_up < targets:
        down = [s.labels.get("instance", "?") for s in up if s.value != 1.0]
        reason = f"Prometheus could not scrape {', '.join(sorted(down))} (up = 0)"
    elif newest_unix is None:
        reason = f"Prometheus has no {GPU_ENERGY} samples for the window"
    elif t1 - newest_unix > fresh_s:
        reason = f"Prometheus' newest {GPU_ENERGY} sample is {t1 - newest_unix:.1f} s old (more than {fresh_s:g} s)"
    else:
        reason = ""
    return ScrapeHealth(not reason, targets, targets_up, newest_unix, reason)


def build_observation(
    t0: float,
    t1: float,
    energy: Iterable[Series],
    power: Iterable[Series],
    util: Iterable[Series],
    node_energy: Iterable[Series],
    steps_t0: Iterable[Sample],
    steps_t1: Iterable[Sample],
    up: Sequence[Sample],
    weights: Mapping[str, float] | None = None,
    from_zero: bool = False,
    fresh_s: float = 10.0,
    job_label: str = "dcgm",
) -> Observation:
    """The :class:`Observation` of ``[t0, t1]`` from the query answers (pure; module docstring)."""
    notes: list[str] = []
    gpu_key = ("Hostname", "gpu")
    energy_streams = merge_streams(energy, gpu_key, notes)
    power_streams = merge_streams(power, gpu_key, notes)
    util_streams = merge_streams(util, gpu_key, notes)
    windows = {
        GpuKey(*k): counter_window(s, t0, t1, 1.0 / MJ_PER_J, from_zero) for k, s in sorted(energy_streams.items())
    }
    for key, w in windows.items():
        if not w.baseline and not from_zero and w.increments:
            notes.append(f"GPU {key.gpu} of {key.hostname}: no energy sample at or before t0; counted from its first")
        if w.resets:
            notes.append(f"GPU {key.gpu} of {key.hostname}: energy counter reset {w.resets} time(s), counted from 0")
    job_energy, job_gpus, idle = apportion(windows, weights)
    gpus = []
    for key, w in windows.items():
        k = (key.hostname, key.gpu)
        seen = sorted({j for inc in w.increments for j in inc.jobs})
        on_j, on_s = idle_meter(w, {t: v for t, v, _ in power_streams.get(k, [])})
        gpus.append(
            GpuWindow(
                key,
                w.joules,
                idle[key],
                window_mean(power_streams.get(k, []), t0, t1),
                window_mean(util_streams.get(k, []), t0, t1),
                w.resets,
                tuple(seen),
                on_s,
                on_j,
            )
        )
    at_t0, at_t1 = steps_by_job(steps_t0), steps_by_job(steps_t1)
    jobs = []
    for job in sorted({*job_energy, *at_t0, *at_t1}, key=_job_order):
        s0, s1 = at_t0.get(job), at_t1.get(job)
        job_type = (s1 or s0 or (None, None))[1]
        jobs.append(
            JobWindow(
                job,
                job_energy.get(job, 0.0),
                tuple(sorted(job_gpus.get(job, set()))),
                s0[0] if s0 else None,
                s1[0] if s1 else None,
                job_type,
            )
        )
    nodes = []
    for (host,), stream in sorted(merge_streams(node_energy, ("Hostname",), notes).items()):
        w = counter_window(stream, t0, t1, 1.0, from_zero)
        if w.resets:
            notes.append(f"node {host}: energy counter reset {w.resets} time(s), counted from 0")
        nodes.append(NodeWindow(host, w.joules, w.resets))
    times = [t for s in energy_streams.values() for t, _, _ in s if t0 < t <= t1]
    health = scrape_health(up, max(times) if times else None, t1, fresh_s, job_label)
    return Observation(t0, t1, tuple(gpus), tuple(jobs), tuple(nodes), health, tuple(notes))


def _job_order(job: str) -> tuple[int, int | str]:
    """Numeric job ids in numeric order, then the others by text."""
    return (0, int(job)) if job.isdigit() else (1, job)


# ---------------------------------------------------------------------------------------------- the queries


def observe(
    client: Queries,
    t0_unix: float,
    t1_unix: float,
    weights: Mapping[str, float] | None = None,
    lookback_s: float = 60.0,
    from_zero: bool = False,
    fresh_s: float = 10.0,
    job_label: str = "dcgm",
) -> Observation:
    """Query Prometheus about ``[t0_unix, t1_unix]`` and build the :class:`Observation` (module docstring).

    Raw samples are read from ``t0_unix - lookback_s`` so each counter has its baseline (``lookback_s`` must cover
    a few scrape intervals). Raises :class:`~planner.agent.prometheus.PrometheusError` when a query fails; wrap
    the call in :func:`~planner.agent.prometheus.with_retries` to retry.
    """
    if t1_unix < t0_unix:
        raise ValueError(f"window ends ({t1_unix}) before it starts ({t0_unix})")
    if not re.fullmatch(r"[A-Za-z0-9_.:-]+", job_label):
        raise ValueError(f"scrape job name {job_label!r} is not a plain name")
    start = t0_unix - lookback_s
    return build_observation(
        t0_unix,
        t1_unix,
        energy=client.raw(GPU_ENERGY, start, t1_unix),
        power=client.raw(GPU_POWER, t0_unix, t1_unix),
        util=client.raw(GPU_UTIL, t0_unix, t1_unix),
        node_energy=client.raw(NODE_ENERGY, start, t1_unix),
        steps_t0=client.instant(STEPS_DONE, t0_unix),
        steps_t1=client.instant(STEPS_DONE, t1_unix),
        up=client.instant(f'up{{job="{job_label}"}}', t1_unix),
        weights=weights,
        from_zero=from_zero,
        fresh_s=fresh_s,
        job_label=job_label,
    )
