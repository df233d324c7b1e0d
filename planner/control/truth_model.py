"""What the emulated GPUs really do: each running job's speed and each GPU's power, from a truth library.

Pure functions, no I/O: :func:`~planner.profile_library.index.index_library` indexes a profile library once
(the emulator's truth), and
:func:`evaluate` turns the jobs on the GPUs now into speeds and powers. The arithmetic is the replay's
(:mod:`planner.sim.accounting`, :mod:`planner.core.economics`), so a job runs here exactly as the simulator says:

* a job of type ``t`` alone on ``n`` GPUs of type ``g`` at setting ``s`` runs at ``X = steps_per_s`` of the
  profile ``(t, g, n, s)`` (steps per emulated second, the whole job) and draws ``P = power_w`` per GPU;
* two jobs on the same GPUs (a co-located pair) run at ``rho * X`` each, ``rho`` from the pair entry
  ``(a, b, g, n)`` (either order; for two jobs of the same type the job with the smaller id, numerically when
  both ids are whole numbers, gets ``rho_a``, as the replay gives it to the job listed first);
* a GPU draws ``Pidle + sum_j rho_j * (P_j - Pidle)`` (W) over the jobs on it that compute (phase
  ``running``, speed > 0; ``rho = 1`` alone): idle power always, a job's dynamic power only while it computes,
  so a job in its restart loss (phase ``loading``) draws nothing beyond idle. Its speed is still reported (the
  configuration's), and it still slows its partner: the replay keeps a pair's shared rates for the whole round.

The inputs:

* the job's GPUs, ``(node, index)`` pairs: ``n`` is how many it holds; the guest of a pair holds its host's
  GPUs, so both jobs appear on the same GPUs;
* the GPUs' states: a GPU type and a power limit (W) or an SM clock lock (MHz), whichever is the type's
  ``setting_unit``. **Setting rule**: the value maps to the library's setting of that GPU type equal to it, else
  the largest setting below it, else the smallest setting; no value (no limit set, no lock) is the type's
  default, its largest setting. A job spanning GPUs at different settings runs at the smallest of them (the
  slowest GPU paces a synchronous job) and draws that setting's power on each of its GPUs.

Faults give speed 0 and a reason string, never an exception, and the job then draws no dynamic power: a job
on no GPU, on a GPU the state does not know, on GPUs of two types, three or more jobs on one GPU, a partner
that is not on exactly the same GPUs (both jobs fault), a configuration the library lacks (``no truth profile
for resnet50 on 3 v100 at 150``) or a pair it lacks. ``sm_active`` is ``min(1, sum_j rho_j * u_j)`` over the
computing jobs, ``u_j`` the profile's ``utilisation`` when the library has one, else 1.

**Throughput noise** (:class:`ThroughputNoise`, ``simulate --noise x``): the profiles' error. A job runs at
``f * X`` (``X`` what :func:`evaluate` gives) at the same power, ``f ~ U[1 - x, 1 + x]`` piecewise constant: one
draw per start of the job and per ``period_s`` after that start, each a function of the seed, the job, the start
and the interval alone. :func:`evaluate` knows no noise; the simulated Slurm applies it to the speed it reports.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from wattplan.planner.profile_library.index import GpuTypeInfo, LibraryIndex

GpuId = tuple[str, int]
"""A GPU: ``(node name, index on the node)``."""
Phase = Literal["loading", "running"]


@dataclass(frozen=True, slots=True)
class GpuState:
    """One GPU as the emulator sees it: its type and its power limit (W) or SM clock lock (MHz), None if unset."""

    gpu_type: str
    power_limit_w: float | None = None
    sm_clock_lock_mhz: float | None = None


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job on the GPUs: its id, type, phase and the GPUs it holds."""

    job_id: str
    job_type: str
    phase: Phase
    gpus: tuple[GpuId, ...]


@dataclass(frozen=True, slots=True)
class JobRate:
    """A job's speed (steps per emulated second, 0 on a fault) and what it runs at."""

    job_id: str
    steps_per_s: float
    gpu_type: str | None = None
    gpus: int = 0
    setting: int | None = None
    partner: str | None = None
    rho: float = 1.0
    power_w: float = 0.0  # profile power per GPU at this setting (W), alone
    reason: str | None = None  # why the job cannot run (speed 0)
    computing: bool = False  # phase running and speed > 0


@dataclass(frozen=True, slots=True)
class GpuPower:
    """A GPU's power (W), the jobs on it (sorted by id), whether one computes and its SM activity (0..1)."""

    power_w: float
    jobs: tuple[str, ...]
    computing: bool
    sm_active: float


@dataclass(frozen=True, slots=True)
class ThroughputNoise:
    """The profiles' throughput error: a running job's speed is ``f * X`` at the truth's power (module docstring).

    ``f = 1 - x + 2 x u``, so ``f ~ U[1 - x, 1 + x)``, with ``x = noise`` and ``u`` in ``[0, 1)`` the first 8 bytes
    of BLAKE2b over ``seed:job:start:interval`` read as an integer over ``2^64``. ``start`` counts the job's starts
    from 0 and ``interval`` the ``period_s`` (emulated s, the replay's ``--round-s``) since that start, from 0:
    interval ``k`` of a start at ``t0`` is ``[t0 + k period_s, t0 + (k + 1) period_s)``. A draw depends on those
    four numbers alone, never on the order events are processed in nor on Python's salted ``hash``.
    """

    noise: float
    seed: int
    period_s: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.noise < 1.0:
            raise ValueError(f"throughput noise must be in [0, 1), got {self.noise}")
        if not (math.isfinite(self.period_s) and self.period_s > 0):
            raise ValueError(f"throughput noise: period_s must be a finite number of seconds > 0, got {self.period_s}")

    def factor(self, job_id: int | str, start: int, interval: int) -> float:
        """The throughput factor ``f`` of ``job_id`` in interval ``interval`` of its start ``start`` (both from 0)."""
        key = f"{self.seed}:{job_id}:{start}:{interval}".encode()
        u = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2.0**64
        return 1.0 - self.noise + 2.0 * self.noise * u


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The result of :func:`evaluate`: every job's rate and every known GPU's power."""

    jobs: Mapping[str, JobRate]
    gpus: Mapping[GpuId, GpuPower]


def setting_for(info: GpuTypeInfo, state: GpuState) -> int | None:
    """The setting a GPU in ``state`` runs at (module docstring's rule); None when the type has no settings."""
    value = state.power_limit_w if info.unit == "power_limit_w" else state.sm_clock_lock_mhz
    if not info.settings:
        return None
    if value is None:
        return info.settings[-1]
    below = [s for s in info.settings if s <= value]
    return below[-1] if below else info.settings[0]


def default_power_limit_w(info: GpuTypeInfo) -> float | None:
    """A GPU's power limit when none is set (W): the largest setting of a power-limited type, else ``top_limit_w``."""
    if info.unit == "power_limit_w" and info.settings:
        return float(info.settings[-1])
    return info.top_limit_w


def id_order(job_id: str) -> tuple[int, int, str]:
    """Sort key of job ids: whole numbers numerically, before any other id (alphabetical)."""
    return (0, int(job_id), "") if job_id.isdigit() else (1, 0, job_id)


def _fault(job: RunningJob, reason: str) -> JobRate:
    return JobRate(job.job_id, 0.0, gpus=len(set(job.gpus)), reason=reason)


def _gpu_text(gpu: GpuId) -> str:
    return f"{gpu[0]}:{gpu[1]}"


def _rho(index: LibraryIndex, job: RunningJob, partner: RunningJob, gpu_type: str, n: int) -> float | None:
    """``job``'s pair slowdown next to ``partner`` (None when the library has no entry)."""
    if job.job_type == partner.job_type:
        first = id_order(job.job_id) <= id_order(partner.job_id)
        rates = index.pairs.get((job.job_type, job.job_type, gpu_type, n))
        return None if rates is None else rates[0 if first else 1]
    rates = index.pairs.get((job.job_type, partner.job_type, gpu_type, n))
    return None if rates is None else rates[0]


def _job_rate(
    index: LibraryIndex,
    job: RunningJob,
    on_gpu: Mapping[GpuId, list[RunningJob]],
    gpus: Mapping[GpuId, GpuState],
) -> JobRate:
    """One job's rate (see the module docstring)."""
    held = tuple(sorted(set(job.gpus)))
    if not held:
        return _fault(job, f"job {job.job_id} holds no GPU")
    unknown = [g for g in held if g not in gpus]
    if unknown:
        return _fault(job, f"job {job.job_id} is on unknown GPU {_gpu_text(unknown[0])}")
    types = sorted({gpus[g].gpu_type for g in held})
    if len(types) > 1:
        return _fault(job, f"job {job.job_id} spans GPU types {', '.join(types)}")
    gpu_type, n = types[0], len(held)
    partners: dict[str, RunningJob] = {}
    for g in held:
        others = [o for o in on_gpu[g] if o.job_id != job.job_id]
        if len(others) > 1:
            return _fault(job, f"{len(others) + 1} jobs on GPU {_gpu_text(g)}")
        partners.update((o.job_id, o) for o in others)
    partner = next(iter(partners.values())) if len(partners) == 1 else None
    if partners and (partner is None or tuple(sorted(set(partner.gpus))) != held):
        names = ", ".join(sorted(partners, key=id_order))
        return _fault(job, f"job {job.job_id} shares only some of its GPUs (with {names})")
    info = index.gpu_types.get(gpu_type)
    if info is None:
        return _fault(job, f"no truth GPU type {gpu_type}")
    settings = [setting_for(info, gpus[g]) for g in held]
    if any(s is None for s in settings):
        return _fault(job, f"no truth settings for GPU type {gpu_type}")
    setting = min(s for s in settings if s is not None)
    prof = index.profiles.get((job.job_type, gpu_type, n, setting))
    if prof is None:
        return _fault(job, f"no truth profile for {job.job_type} on {n} {gpu_type} at {setting}")
    rho = 1.0
    if partner is not None:
        r = _rho(index, job, partner, gpu_type, n)
        if r is None:
            return _fault(job, f"no truth pair for {job.job_type} with {partner.job_type} on {n} {gpu_type}")
        rho = r
    speed = rho * prof.steps_per_s
    return JobRate(
        job_id=job.job_id,
        steps_per_s=speed,
        gpu_type=gpu_type,
        gpus=n,
        setting=setting,
        partner=partner.job_id if partner else None,
        rho=rho,
        power_w=prof.power_w,
        computing=job.phase == "running" and speed > 0,
    )


def evaluate(index: LibraryIndex, jobs: Iterable[RunningJob], gpus: Mapping[GpuId, GpuState]) -> Snapshot:
    """Every job's speed and every GPU's power (W) for ``jobs`` on ``gpus`` (module docstring)."""
    job_list = list(jobs)
    on_gpu: dict[GpuId, list[RunningJob]] = {g: [] for g in gpus}
    for job in job_list:
        for g in set(job.gpus):
            on_gpu.setdefault(g, []).append(job)
    rates = {job.job_id: _job_rate(index, job, on_gpu, gpus) for job in job_list}
    powers: dict[GpuId, GpuPower] = {}
    for g, state in gpus.items():
        info = index.gpu_types.get(state.gpu_type)
        idle = info.idle_power_w if info else 0.0
        power, active, computing = idle, 0.0, False
        for job in on_gpu[g]:
            r = rates[job.job_id]
            if r.computing and r.gpu_type is not None and r.setting is not None:
                power += r.rho * (r.power_w - idle)
                key = (job.job_type, r.gpu_type, r.gpus, r.setting)
                active += r.rho * index.utilisation.get(key, 1.0)
                computing = True
        ids = tuple(sorted((j.job_id for j in on_gpu[g]), key=id_order))
        powers[g] = GpuPower(power, ids, computing, min(1.0, active))
    return Snapshot(rates, powers)
