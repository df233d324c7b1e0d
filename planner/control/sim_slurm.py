"""A Slurm 22.05 cluster on a virtual clock: the live agent runs on it unchanged, as a replay (docs/design.md §10.8).

:class:`SimulatedSlurm` is the agent's :data:`~planner.agent.commands.Run` (``__call__``) and its
:class:`~planner.agent.loop.Observer` (:meth:`~SimulatedSlurm.window`); it reads the agent's setting files
(``settings_dir/JOBID.conf``, :class:`~planner.agent.node_settings.JobSetting`) as the node scripts do, and
moves from one event to the next (:meth:`~SimulatedSlurm.advance_to`), never by fixed ticks. Units: emulated
seconds (``_s``) on the cluster's clock, which :class:`~planner.agent.node_settings.Clock` turns into the
virtual Unix seconds the agent sees (``_unix``); steps; watts; joules.

**Scheduling** (``sched/backfill``, ``select/cons_tres``, no time limits). A job enters the queue at its
arrival: managed (opted in) PENDING and held (``JobHeldUser``, ``sbatch --hold``), unmanaged PENDING. At every
scheduler pass the pending jobs that are neither held nor waiting for their begin time start in priority order
(arrival, then job id); one that does not fit is skipped (reason ``Resources``, ``Priority`` for those behind it)
and later ones may start. A job fits when its ``NodeList`` nodes (``scontrol update``) each have its
per-node GPUs free, or, without one, when first fit over the nodes in the order given (``slurm.conf``'s, which
``wattplan cluster up`` writes in its ``--gpus`` order) finds ``NumNodes``
such nodes; a typed request (``gpu:TYPE:N``) takes nodes of that type only. It gets the lowest free indices of
each node. A request above a node's GPU count ``K`` is submitted as ``gpu:K`` on ``ceil(n / K)`` nodes, as
``cluster submit`` does. A job submitted with ``gpu:0`` fits on any node that is up and holds no GPU; a job
updated to ``Gres=gpu:0`` (a pair's guest, as the agent makes one) keeps the GPUs it asked for before, as Slurm
22.05 and 24.11 do (``benchmarks/guest_gres.sh``): it waits for them to be free and holds them while ``squeue``
shows ``gpu:0``; it then runs on them, not on its host's GPUs (below).
A pass runs ``pass_delay_s`` after an event or a command that may let a job start (at once with 0), once for
every change within that time, and a command that reads the cluster after one that changed it sees the pass only
when it is due: a round's calls (requeuehold, update, release) act together, as Slurm's scheduler, which runs every
second, sees them.

**A run.** A started job first loads its checkpoint for ``load_s`` (phase ``loading``: no progress, no dynamic
power), then computes at the truth's rate (:func:`planner.control.truth_model.evaluate`). Progress is
checkpointed continuously: a requeued job keeps every step. It completes the moment its steps reach its total,
stays ``COMPLETING`` for ``completing_s`` (drawing nothing beyond idle, holding its GPUs, in the queue; its end is
its last step), then is ``COMPLETED``, frees its GPUs and stays listed for ``min_job_age_s``.

**Settings** follow the node scripts: at a start the prolog reads ``JOBID.conf`` and sets the job's GPUs to its
power limit (``-pl``) or SM clock lock (``-lgc``), by the file's ``unit``; a job without a file runs at the
GPUs' current setting (the default on GPUs no job held: the epilog resets a GPU no job remains on). The node
agent re-applies a changed file to a running job at once (a file is seen as changed by inode, size and
modification time), with no restart. A pair's guest (a file naming ``host_job``) runs as the node scripts run it:
``prolog.sh`` maps a job Slurm gave GPUs to those GPUs, and a guest made by an update kept its own (above), so it
runs on them, alone, at its file's setting; no two jobs share a GPU (the prolog's branch that maps a job Slurm gave
no GPU to its host's is for jobs submitted without GPUs, which the simulated Slurm does not take). The node agent
never applies a file naming a host again (``apply_settings.sh`` skips it). With
``prolog_settings`` (the ``maxq`` baseline, :mod:`planner.core.maxq`) a job without a file gets the table's
setting for its job type and its nodes' GPU type, as a site's prolog would set it.

**Power saving** (:class:`PowerSaving`, off by default). A node that has held no job for ``suspend_s`` is powered
down: ``POWERING_DOWN`` for ``suspend_timeout_s`` (no job, idle power), then ``POWERED_DOWN`` (no power at all).
A job without a node list tries the powered nodes first, then booting ones, then powered-down ones, each in
``slurm.conf``'s order; a powered-down node it gets boots for ``resume_s`` (``POWERING_UP``, idle power) while the
job is ``CONFIGURING``, and its launch and checkpoint load start once every node of it is up.

**Commands** (Slurm 22.05.8's answers; refusals are ``MESSAGE for job N`` lines on standard error, exit 1,
while the other jobs of the call are acted on): ``sinfo --version``, ``squeue --json``, ``sinfo --json``,
``scontrol show job -d``, ``scontrol uhold|hold|release|requeuehold ID[,ID...]``, ``scontrol update JobId=N
[Gres=...] [NodeList=...] [NumNodes=N]``, ``scancel ID...``. ``update`` and ``hold`` of a running job: ``Job is no
longer pending execution``; ``requeuehold`` of a pending one: ``Job is pending execution``; any of them on a
finished job: ``Job has already finished`` (the simulation never requeues a finished job); an unknown id:
``Invalid job id specified``. ``requeuehold`` stops a running job now, frees its GPUs and leaves it pending,
held (``JobHeldUser``) and eligible again ``requeue_delay_s`` after the call (``BeginTime`` until then).
``uhold`` holds as the user (``JobHeldUser``), ``hold`` as root (``JobHeldAdmin``); ``release`` clears either.

**Energy**, exact between events (the physics is piecewise constant): every powered node draws ``node_power_w``
of its GPU type (a powered-down one nothing, its GPUs neither); every GPU of a powered node draws the truth's
idle power with no computing job on it, else ``evaluate``'s power. :meth:`~SimulatedSlurm.energy` splits it into
node, idle (the powered GPUs' idle power) and dynamic (the rest) joules since the start. A job's GPU energy
(:meth:`~SimulatedSlurm.window`, like DCGM's counters apportioned by the agent) is the energy of the GPUs it is on,
idle power included, split equally between the jobs on a shared GPU, and none while its nodes boot (no prolog has
mapped its GPUs yet); its dynamic energy
(:meth:`~SimulatedSlurm.job_records`) is its own ``rho (P - Pidle)`` per GPU while it computes. A node's idle GPUs
(powered, no job holding them) are metered too, as DCGM's counters show them live: their energy and their
GPU-seconds over the window (:attr:`Observed.idle_gpus`). Deterministic: no wall clock, no threads.

**Noise** (``noise``, :class:`~planner.control.truth_model.ThroughputNoise`, off by default): a computing job runs at
``f * X`` at the truth's power, ``f`` drawn at each start and every ``period_s`` after it; each new interval of a
computing job is an event, at which its rate changes and its completion is computed again (a job loading its
checkpoint computes nothing: its interval is caught up when the load ends). The agent is not told ``f``: it sees
the steps in :meth:`~SimulatedSlurm.window`, as Prometheus shows them live.
"""

from __future__ import annotations

import bisect
import math
import os
import pwd
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from wattplan.planner.agent.commands import CommandResult
from wattplan.planner.agent.loop import Observed
from wattplan.planner.agent.node_power import SHUTDOWN_S
from wattplan.planner.agent.node_settings import Clock, JobSetting
from wattplan.planner.agent.slurm_config import CONFIG_COMMAND
from wattplan.planner.agent.slurm_detail import COMMAND as DETAIL_COMMAND
from wattplan.planner.agent.slurm_detail import expand_hostlist
from wattplan.planner.agent.slurm_queue import ADMIN_HOLD, NODES_COMMAND, QUEUE_COMMAND, USER_HOLD, opt_in_comment
from wattplan.planner.agent.slurm_version import VERSION_COMMAND
from wattplan.planner.control import sim_slurm_text as txt
from wattplan.planner.control.truth_model import (
    GpuId,
    GpuState,
    Phase,
    RunningJob,
    Snapshot,
    ThroughputNoise,
    evaluate,
)
from wattplan.planner.profile_library.index import LibraryIndex
from wattplan.planner.sim.accounting import EnergySplit

EPS = 1e-9
"""Relative tolerance (of the time's magnitude, at least 1 s) within which two event times are one."""
_FINISHED = ("COMPLETED", "CANCELLED")
_ENDED = (*_FINISHED, "COMPLETING")
"""States of a job that has ended: Slurm refuses to hold, release, requeue, update or cancel it."""


NodePower = Literal["on", "powering_down", "off", "powering_up"]
"""A node's power state under Slurm's power saving: on, being suspended (``POWERING_DOWN``), powered down
(``POWERED_DOWN``) or booting for a job (``POWERING_UP``)."""
_NODE_POWER_STATES = ("POWER_DOWN", "POWER_UP")
"""The states a node update may set: power saving's own."""


@dataclass(frozen=True, slots=True)
class PowerSaving:
    """Slurm's power saving (``SuspendProgram``/``ResumeProgram``), in emulated seconds.

    ``suspend_s`` (``SuspendTime``): a node that has held no job this long is powered down. ``suspend_timeout_s``
    (``SuspendTimeout``): a node being powered down takes no job and draws its idle power this long, then draws
    nothing. ``resume_s``: a powered-down node allocated to a job boots this long (``ResumeProgram`` until its slurmd
    registers), drawing its idle power; the job's launch and checkpoint load start when it is up.
    """

    suspend_s: float = 600.0
    resume_s: float = 300.0
    suspend_timeout_s: float = SHUTDOWN_S
    excluded: tuple[str, ...] = ()
    """``SuspendExcNodes``: nodes Slurm never powers down by itself (``scontrol show config`` lists them)."""

    @property
    def power_cycle_s(self) -> float:
        """A node's off-and-on cycle (s): powering down, then booting, both at idle power and running no job."""
        return self.suspend_timeout_s + self.resume_s

    def __post_init__(self) -> None:
        for name in ("suspend_s", "resume_s", "suspend_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"power saving: {name} must be a finite number of seconds >= 0, got {value}")


def _current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


@dataclass(frozen=True, slots=True)
class SimNode:
    """One node: its name (``v100-0``), its GPU type and how many GPUs it has."""

    name: str
    gpu_type: str
    gpus: int


@dataclass(frozen=True, slots=True)
class SimJob:
    """One submission: arrival (emulated s), requested GPUs, total steps.

    ``managed``: submitted held with the opt-in comment (the agent's to run); else Slurm schedules it alone.
    ``gres_type``: submitted typed (``--gres=gpu:TYPE:N``), None for ``--gres=gpu:N``.
    """

    job_id: int
    job_type: str
    arrival_s: float
    requested_gpus: int
    total_steps: float
    managed: bool = True
    user: str = field(default_factory=_current_user)
    gres_type: str | None = None


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job at the end of a simulation (or now): times in emulated s (None: not yet), energy in J."""

    job_id: int
    job_type: str
    arrival_s: float
    first_start_s: float | None
    finish_s: float | None
    requeues: int
    steps_done: float
    total_steps: float
    dynamic_energy_j: float
    gpu_energy_j: float
    state: str


@dataclass(eq=False, slots=True)
class _Job:
    """A job's mutable state and its history.

    ``ts``/``es``/``ss``/``ds``: breakpoint times (s) and the cumulative GPU energy (J), steps and dynamic energy
    (J) there; after the last breakpoint they grow at ``rates`` (J/s, steps/s, J/s).
    """

    spec: SimJob
    per_node: int
    """The GPUs per node its ``Gres`` asks for, as ``squeue`` shows it."""
    num_nodes: int
    gres_type: str | None
    ts: list[float]
    state: str = "FUTURE"
    hold: str | None = None
    reason: str = "None"
    eligible_s: float = -math.inf
    required: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    alloc: tuple[GpuId, ...] = ()
    gpus: tuple[GpuId, ...] = ()
    loading: bool = False
    load_end_s: float = 0.0
    boot_end_s: float = 0.0
    """When the last of its nodes is up (its start when every node was on): ``CONFIGURING`` until then."""
    start_s: float | None = None
    first_start_s: float | None = None
    end_s: float | None = None
    completing_until_s: float = math.inf
    """When a job that ended (``COMPLETING``) leaves its GPUs and the queue."""
    requeues: int = 0
    listed: bool = False
    signature: tuple[int, int, int] | None = None
    conf: str = ""
    """The path of its setting file (empty without a settings folder)."""
    comment: str = ""
    shown: tuple[tuple[object, ...], txt.JobView, str] | None = None
    """What the job's view was made from, the view and its ``squeue`` record."""
    es: list[float] = field(default_factory=lambda: [0.0])
    ss: list[float] = field(default_factory=lambda: [0.0])
    ds: list[float] = field(default_factory=lambda: [0.0])
    rates: tuple[float, float, float] = (0.0, 0.0, 0.0)
    kept_gpus: int = 0
    """GPUs per node Slurm still allocates after an update to ``Gres=gpu:0``: the count the job asked for before
    it (Slurm 22.05 and 24.11 keep a job's GPUs when an update asks for none; ``benchmarks/guest_gres.sh``)."""

    @property
    def alloc_per_node(self) -> int:
        """The GPUs per node Slurm allocates the job: its ``Gres``, or the GPUs it kept through ``gpu:0``."""
        return self.per_node or self.kept_gpus

    starts: int = 0
    """How many times it has started (the current start is ``starts - 1``, from 0)."""
    noise_interval: int = 0
    """The throughput noise's interval of the current start its ``factor`` was drawn for."""
    factor: float = 1.0
    """Its throughput factor ``f`` now (1 without noise)."""

    def at(self, series: list[float], rate: float, t: float) -> float:
        """``series`` at time ``t``: linear between breakpoints, at ``rate`` after the last, 0 before the first."""
        i = bisect.bisect_right(self.ts, t) - 1
        if i < 0:
            return 0.0
        if i == len(self.ts) - 1:
            return series[i] + rate * (t - self.ts[i])
        t0, t1 = self.ts[i], self.ts[i + 1]
        return series[i] + (series[i + 1] - series[i]) * (t - t0) / (t1 - t0)

    def settle(self, t: float) -> None:
        """Add a breakpoint at ``t`` (no later than any query) before the rates change."""
        if t <= self.ts[-1]:
            return
        e, s, d = (self.at(x, r, t) for x, r in zip((self.es, self.ss, self.ds), self.rates, strict=True))
        self.ts.append(t)
        self.es.append(e)
        self.ss.append(s)
        self.ds.append(d)

    def completion_s(self) -> float:
        """When the job's steps reach its total at the current rate (inf when it makes no progress)."""
        rate = self.rates[1]
        return self.ts[-1] + (self.spec.total_steps - self.ss[-1]) / rate if rate > 0 else math.inf


def _step_integral(
    steps: Sequence[tuple[float, ...]], t0: float, t1: float, value: Callable[[tuple[float, ...]], float]
) -> float:
    """``integral over [t0, t1] of value(step at t) dt`` (the value's unit times s).

    ``steps`` are ``(t_k, ...)`` in time order, each holding from ``t_k`` until the next (the last until ``t1``);
    nothing before the first.
    """
    first = max(bisect.bisect_right(steps, t0, key=lambda step: step[0]) - 1, 0)
    total = 0.0
    for k in range(first, len(steps)):
        a = steps[k][0]
        if a >= t1:
            break
        b = steps[k + 1][0] if k + 1 < len(steps) else t1
        total += value(steps[k]) * max(0.0, min(b, t1) - max(a, t0))
    return total


def _eps(t: float) -> float:
    return EPS * max(1.0, abs(t))


class SimulatedSlurm:
    """A Slurm 22.05 cluster on a virtual clock (module docstring), from ``up_before_s`` before the first arrival.

    It starts with every node on and idle: ``up_before_s`` is a live run's time from ``cluster up`` to its first
    submission, in which power saving's idle timers already count. Energy counts from that start, as a live run's
    report does.

    ``node_power_w``: W per node besides its GPUs, by GPU type; ``load_s``: checkpoint load of every start (s);
    ``requeue_delay_s``: a requeued job's wait before it may start again (s); ``min_job_age_s``: how long a
    finished job stays listed (s); ``settings_dir``: the agent's setting files (None: every job at the default).
    """

    def __init__(
        self,
        nodes: Sequence[SimNode],
        truth: LibraryIndex,
        node_power_w: Mapping[str, float],
        jobs: Sequence[SimJob],
        *,
        clock: Clock,
        load_s: float,
        requeue_delay_s: float,
        settings_dir: Path | None,
        min_job_age_s: float = 300.0,
        power_saving: PowerSaving | None = None,
        prolog_settings: Mapping[tuple[str, str], float] | None = None,
        progress_metric: bool = True,
        up_before_s: float = 0.0,
        noise: ThroughputNoise | None = None,
        pass_delay_s: float = 0.0,
        completing_s: float = 0.0,
    ):
        for name, value in (("pass_delay_s", pass_delay_s), ("completing_s", completing_s)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
        self.pass_delay_s, self.completing_s = pass_delay_s, completing_s
        """From a change that may let a job start (a submission, a release, GPUs freed, a node up) to the scheduler
        pass that starts it; and how long a job that ended stays ``COMPLETING``, holding its GPUs (s; 0: at once)."""
        self._pass_s = math.inf
        """When the next scheduler pass runs (``math.inf``: none is due)."""
        if not (math.isfinite(up_before_s) and up_before_s >= 0):
            raise ValueError(f"up_before_s must be a finite number of seconds >= 0, got {up_before_s}")
        self.truth, self.clock, self.settings_dir = truth, clock, settings_dir
        self.power_saving = power_saving
        self.prolog_settings = dict(prolog_settings or {})
        self.progress_metric = progress_metric
        """Jobs export their steps (``wattplan_job_steps_done``); False: as most real training jobs, none does."""
        self.noise = noise if noise is not None and noise.noise > 0 else None
        """The throughput noise (module docstring); None without (a noise of 0 is none: every figure unchanged)."""
        self.load_s, self.requeue_delay_s, self.min_job_age_s = load_s, requeue_delay_s, min_job_age_s
        self._nodes = list(nodes)  # slurm.conf's order, which first fit follows (the cluster's --gpus order)
        self._node = {n.name: n for n in self._nodes}
        _check(self._nodes, truth, node_power_w, jobs)
        # the cluster's life (every node on, idle) starts up_before_s before the first arrival
        self.now_s = min((j.arrival_s for j in jobs), default=0.0) - up_before_s
        self._start_s = self.now_s
        self._pnode = {n.name: float(node_power_w[n.gpu_type]) for n in self._nodes}
        self._node_w = sum(self._pnode.values())
        self._idle = {g: truth.gpu_types[g].idle_power_w for g in {n.gpu_type for n in self._nodes}}
        self._idle_w = sum(self._idle[n.gpu_type] * n.gpus for n in self._nodes)
        """The powered nodes' draw besides their GPUs, and their GPUs' idle power (W)."""
        self._dyn_w = 0.0
        self._steps: list[tuple[float, float, float, float]] = [(self.now_s, self._node_w, self._idle_w, 0.0)]
        """``(t, node W, idle W, dynamic W from t on)`` at every change of the cluster's power (:meth:`power_steps`)."""
        self._power: dict[str, NodePower] = {n.name: "on" for n in self._nodes}
        self._down_pending: set[str] = set()
        """Nodes told ``State=POWER_DOWN`` while they ran jobs: powered down when the last one ends (``mix!``)."""
        self._power_due: dict[str, float] = {n.name: self._suspend_due(n.name) for n in self._nodes}
        """When a node's power state changes by itself: the end of a power-down or a resume, or an idle node's
        ``SuspendTime``; ``math.inf`` when it will not."""
        self._owner: dict[GpuId, int] = {}
        self._nfree = {n.name: n.gpus for n in self._nodes}
        self._on_gpu: dict[GpuId, set[int]] = {(n.name, i): set() for n in self._nodes for i in range(n.gpus)}
        self._gpu_state = {(n.name, i): GpuState(n.gpu_type) for n in self._nodes for i in range(n.gpus)}
        self._gpu_power = {(n.name, i): self._idle[n.gpu_type] for n in self._nodes for i in range(n.gpus)}
        self._idle_gpus: dict[str, list[tuple[float, int]]] = {n.name: [(self.now_s, n.gpus)] for n in self._nodes}
        """Per node ``(t, GPUs powered with no job from t on)`` at every change (:meth:`window`'s idle meter)."""
        self._touched_jobs: set[int] = set()
        self._touched_gpus: set[GpuId] = set()
        per_node = max(n.gpus for n in self._nodes)
        self._jobs: dict[int, _Job] = {}
        for j in sorted(jobs, key=lambda j: j.job_id):
            count = max(1, math.ceil(j.requested_gpus / per_node))
            job = _Job(j, j.requested_gpus // count, count, j.gres_type, [j.arrival_s])
            job.conf = "" if settings_dir is None else os.path.join(settings_dir, f"{j.job_id}.conf")
            job.comment = opt_in_comment(j.job_type, math.ceil(j.total_steps)) if j.managed else ""
            self._jobs[j.job_id] = job
        self._arrivals = sorted(self._jobs.values(), key=lambda j: (j.spec.arrival_s, j.spec.job_id))
        self._next_arrival = 0
        self._running: dict[int, _Job] = {}
        self._pending: dict[int, _Job] = {}
        self._completing: dict[int, _Job] = {}
        self._ended: dict[int, _Job] = {}
        self._schedule_due = self._physics_due = True

    # ------------------------------------------------------------------ the clock

    def next_event_s(self) -> float:
        """The next emulated time (s) at which something changes by itself; ``math.inf`` when nothing will."""
        self._sync(files=True)
        return self._next_event()

    def advance_to(self, t_s: float) -> None:
        """Play every event up to ``t_s`` (emulated s, not before ``now_s``) in time order; then ``now_s = t_s``."""
        if t_s < self.now_s - _eps(self.now_s):
            raise ValueError(f"cannot go back from {self.now_s} s to {t_s} s")
        self._sync(files=True)  # nothing writes a setting file while the clock runs
        while (nxt := self._next_event()) <= t_s and nxt < math.inf:
            self._move_to(nxt)
            self._events()
            self._sync()
        if t_s < math.inf:
            self._move_to(t_s)

    def done(self) -> bool:
        """Every job has arrived and finished (completed or cancelled)."""
        return all(j.state in _FINISHED for j in self._jobs.values())

    def _move_to(self, t: float) -> None:
        self.now_s = max(self.now_s, t)

    def _next_event(self) -> float:
        times = [math.inf]
        if self._next_arrival < len(self._arrivals):
            times.append(self._arrivals[self._next_arrival].spec.arrival_s)
        for j in self._running.values():
            times.append(j.load_end_s if j.loading else min(j.completion_s(), self._noise_due(j)))
        limit = self.now_s + _eps(self.now_s)
        times.extend(j.eligible_s for j in self._pending.values() if j.hold is None and j.eligible_s > limit)
        times.extend(j.end_s + self.min_job_age_s for j in self._ended.values() if j.end_s is not None)
        if self.power_saving is not None:
            times.append(min(self._power_due.values()))
        times.extend(j.completing_until_s for j in self._completing.values())
        times.append(self._pass_s)
        return max(min(times), self.now_s)

    def _events(self) -> None:
        """Everything due at ``now_s``: loads that end, completions, arrivals, finished jobs leaving the list."""
        limit = self.now_s + _eps(self.now_s)
        for j in list(self._running.values()):
            if j.loading and j.load_end_s <= limit:
                j.loading = False
                self._touch(j)
            elif not j.loading and j.completion_s() <= limit:
                j.settle(self.now_s)
                j.ss[-1] = j.spec.total_steps
                self._complete(j)
            elif not j.loading and self._noise_due(j) <= limit:
                self._touch(j)  # a new noise interval: the physics draws its factor (_noise_now)
        for j in [j for j in self._completing.values() if j.completing_until_s <= limit]:
            end_s = j.end_s
            del self._completing[j.spec.job_id]
            self._stop(j, "COMPLETED")
            j.end_s = end_s  # the job ended when its steps did; its GPUs leave only now
        for jid, j in list(self._ended.items()):
            if j.end_s is not None and j.end_s + self.min_job_age_s <= limit:
                j.listed = False
                del self._ended[jid]
        for name, due in self._power_due.items():
            if due <= limit:
                self._power_event(name)
        self._schedule_due = True

    def _admit(self) -> None:
        """Jobs that arrive by ``now_s`` enter the queue: managed ones held (``sbatch --hold``)."""
        limit = self.now_s + _eps(self.now_s)
        while self._next_arrival < len(self._arrivals) and self._arrivals[self._next_arrival].spec.arrival_s <= limit:
            j = self._arrivals[self._next_arrival]
            self._next_arrival += 1
            j.state, j.listed = "PENDING", True
            j.hold = USER_HOLD if j.spec.managed else None
            j.reason = j.hold or "None"
            self._pending[j.spec.job_id] = j
            self._schedule_due = True

    def _sync(self, files: bool = False) -> None:
        """Arrivals due, changed setting files (with ``files``), a scheduler pass and the physics, at ``now_s``."""
        self._admit()
        if files:
            self._reapply_settings()
        if self._schedule_due:
            self._schedule_due = False
            self._pass_s = min(self._pass_s, self.now_s + self.pass_delay_s)
        if self._pass_s <= self.now_s + _eps(self.now_s):
            self._pass_s = math.inf
            self._schedule()
        if self._physics_due:
            self._physics()

    # ------------------------------------------------------------------ scheduling

    def _schedule(self) -> None:
        self._schedule_due = False
        limit = self.now_s + _eps(self.now_s)
        blocked: set[tuple[object, ...]] = set()  # shapes that did not fit: GPUs only go in this pass
        for j in sorted(self._pending.values(), key=lambda j: (j.spec.arrival_s, j.spec.job_id)):
            shape = (j.alloc_per_node, j.num_nodes, j.gres_type, j.required)
            if j.hold is not None:
                j.reason = j.hold
            elif j.eligible_s > limit:
                j.reason = "BeginTime"
            elif shape in blocked or (place := self._fit(j)) is None:
                j.reason = "Priority" if blocked else "Resources"
                blocked.add(shape)
            else:
                self._start(j, *place)

    def _free(self, node: SimNode) -> list[int]:
        return [i for i in range(node.gpus) if (node.name, i) not in self._owner] if self._nfree[node.name] else []

    def _fit(self, j: _Job) -> tuple[tuple[str, ...], tuple[GpuId, ...]] | None:
        """The nodes and GPUs ``j`` gets now, or None when it does not fit (module docstring)."""
        chosen: list[SimNode] = []
        for node in [self._node[n] for n in j.required] if j.required else self._by_power():
            usable = self._power[node.name] != "powering_down"
            if (
                usable
                and (j.gres_type is None or node.gpu_type == j.gres_type)
                and self._nfree[node.name] >= j.alloc_per_node
            ):
                chosen.append(node)
                if not j.required and len(chosen) == j.num_nodes:
                    break
            elif j.required:
                return None
        if len(chosen) < (len(j.required) or j.num_nodes):
            return None
        gpus = tuple((n.name, i) for n in chosen for i in self._free(n)[: j.alloc_per_node])
        return tuple(n.name for n in chosen), gpus

    def _start(self, j: _Job, nodes: tuple[str, ...], alloc: tuple[GpuId, ...]) -> None:
        jid = j.spec.job_id
        del self._pending[jid]
        self._running[jid] = j
        j.state, j.reason, j.nodes, j.alloc = "RUNNING", "None", nodes, alloc
        j.start_s = self.now_s
        j.first_start_s = self.now_s if j.first_start_s is None else j.first_start_s
        j.starts += 1
        if self.noise is not None:
            j.noise_interval, j.factor = 0, self.noise.factor(jid, j.starts - 1, 0)
        for g in alloc:
            self._owner[g] = jid
            self._nfree[g[0]] -= 1
        for name in {g[0] for g in alloc}:
            self._note_idle(name)
        j.boot_end_s = max((self._held(n) for n in nodes), default=self.now_s)
        j.load_end_s = j.boot_end_s + self.load_s
        j.loading = j.load_end_s > self.now_s
        setting = self._read_setting(j)
        j.gpus = alloc  # the prolog maps a job to the GPUs Slurm gave it, a guest's kept ones too (prolog.sh)
        for g in j.gpus:
            self._on_gpu[g].add(jid)
        if setting is not None and alloc:
            self._apply(j, setting)
        elif alloc and (value := self.prolog_settings.get((j.spec.job_type, self._node[nodes[0]].gpu_type))):
            self._set(j, self.truth.gpu_types[self._node[nodes[0]].gpu_type].unit, value)
        self._touch(j)

    def _complete(self, j: _Job) -> None:
        """``j`` made its last step now: ``COMPLETED``, or with ``completing_s`` first ``COMPLETING`` that long.

        A completing job computes and draws nothing (its GPUs idle, reset as the epilog resets them) but holds its
        GPUs and stays in the queue, so nothing starts on them and the agent does not yet plan them free, as live.
        """
        if self.completing_s <= 0:
            self._stop(j, "COMPLETED")
            return
        jid = j.spec.job_id
        j.rates = (0.0, 0.0, 0.0)
        self._touch(j)
        del self._running[jid]
        self._completing[jid] = j
        for g in j.gpus:
            self._on_gpu[g].discard(jid)
            self._touched_gpus.add(g)
            if not self._on_gpu[g]:
                self._gpu_state[g] = GpuState(self._gpu_state[g].gpu_type)
        j.gpus = ()
        j.loading, j.state = False, "COMPLETING"
        j.end_s, j.completing_until_s = self.now_s, self.now_s + self.completing_s
        self._physics_due = True

    def _stop(self, j: _Job, state: str) -> None:
        """End ``j``'s run now: ``state`` is PENDING (requeued), COMPLETED or CANCELLED."""
        jid = j.spec.job_id
        j.settle(self.now_s)
        j.rates = (0.0, 0.0, 0.0)
        self._touch(j)
        self._running.pop(jid, None)
        self._pending.pop(jid, None)
        for g in j.alloc:
            del self._owner[g]
            self._nfree[g[0]] += 1
        for name in {g[0] for g in j.alloc}:
            self._note_idle(name)
            if self._power[name] == "on" and self._nfree[name] == self._node[name].gpus:
                self._power_due[name] = self.now_s if name in self._down_pending else self._suspend_due(name)
                self._down_pending.discard(name)
        for g in j.gpus:
            self._on_gpu[g].discard(jid)
            if not self._on_gpu[g]:  # the epilog resets a GPU no job remains on
                self._gpu_state[g] = GpuState(self._gpu_state[g].gpu_type)
        j.alloc = j.gpus = ()
        j.loading, j.state = False, state
        if state == "PENDING":
            self._pending[jid] = j
        else:
            j.end_s = self.now_s
            self._ended[jid] = j
        self._schedule_due = self._physics_due = True

    # ------------------------------------------------------------------ power saving

    def _suspend_due(self, name: str = "") -> float:
        """When node ``name``, holding no job from ``now_s`` on, is powered down (``math.inf``: never by itself)."""
        if self.power_saving is None or name in self.power_saving.excluded:
            return math.inf
        return self.now_s + self.power_saving.suspend_s

    def _by_power(self) -> list[SimNode]:
        """The nodes a job without a node list may get, in the order Slurm tries them.

        Those powered on, then those booting, then those powered down, each in ``slurm.conf``'s order; a node being
        powered down takes none.
        """
        rank: dict[NodePower, int] = {"on": 0, "powering_up": 1, "off": 2}
        usable = [n for n in self._nodes if self._power[n.name] in rank]
        return sorted(usable, key=lambda n: rank[self._power[n.name]])

    def _held(self, name: str) -> float:
        """A node just given a job: when it is up (``now_s`` if on); a powered-down node starts to boot now."""
        state = self._power[name]
        if state == "off":
            assert self.power_saving is not None
            self._set_power(name, "powering_up", self.now_s + self.power_saving.resume_s)
        elif state == "on":
            self._power_due[name] = math.inf
        return self._power_due[name] if self._power[name] == "powering_up" else self.now_s

    def _power_event(self, name: str) -> None:
        """The power state change of ``name`` that is due now (:attr:`_power_due`)."""
        assert self.power_saving is not None
        state = self._power[name]
        if state == "on" and self.power_saving.suspend_timeout_s > 0:
            self._set_power(name, "powering_down", self.now_s + self.power_saving.suspend_timeout_s)
        elif state in ("on", "powering_down"):
            self._set_power(name, "off", math.inf)
        elif state == "powering_up":
            busy = self._nfree[name] < self._node[name].gpus
            self._set_power(name, "on", math.inf if busy else self._suspend_due(name))
            for j in self._running.values():  # their prolog runs now: DCGM maps their GPUs from here on
                if name in j.nodes:
                    self._touch(j)

    def _set_power(self, name: str, state: NodePower, due: float) -> None:
        """Put ``name`` in ``state`` until ``due``; a node powered down draws nothing, any other its idle power."""
        node = self._node[name]
        was_off, is_off = self._power[name] == "off", state == "off"
        self._power[name], self._power_due[name] = state, due
        if was_off != is_off:
            sign = -1.0 if is_off else 1.0
            self._node_w += sign * self._pnode[name]
            self._idle_w += sign * self._idle[node.gpu_type] * node.gpus
            for i in range(node.gpus):
                self._gpu_power[(name, i)] = 0.0 if is_off else self._idle[node.gpu_type]
            self._record_power()
            self._note_idle(name)
        self._schedule_due = True

    def _note_idle(self, name: str) -> None:
        """Note ``name``'s count of GPUs powered with no job from ``now_s`` on (:attr:`_idle_gpus`)."""
        count = 0 if self._power[name] == "off" else self._nfree[name]
        log = self._idle_gpus[name]
        if log[-1][0] >= self.now_s:
            log[-1] = (log[-1][0], count)
        elif log[-1][1] != count:
            log.append((self.now_s, count))

    def _record_power(self) -> None:
        """Note the cluster's power from ``now_s`` on (:attr:`_steps`)."""
        self._dyn_w = sum(self._gpu_power.values()) - self._idle_w
        step = (self.now_s, self._node_w, self._idle_w, self._dyn_w)
        if self._steps[-1][0] >= self.now_s:
            self._steps[-1] = step
        elif self._steps[-1][1:] != step[1:]:
            self._steps.append(step)

    def node_power(self) -> dict[str, NodePower]:
        """Every node's power state now, by name."""
        return dict(self._power)

    # ------------------------------------------------------------------ settings and physics

    def _read_setting(self, j: _Job) -> JobSetting | None:
        """``JOBID.conf`` as the prolog reads it (None: none, unreadable, or another job's); remembers its signature."""
        j.signature = None
        if not j.conf:
            return None
        try:
            st = os.stat(j.conf)
            j.signature = (st.st_ino, st.st_size, st.st_mtime_ns)
            with open(j.conf, encoding="utf-8") as f:
                setting = JobSetting.from_text(f.read())
        except (OSError, ValueError):
            return None
        return setting if setting.job_id == str(j.spec.job_id) else None

    def _reapply_settings(self) -> None:
        """The node agent: a running job (not a guest) whose setting file changed gets its new setting now."""
        for j in self._running.values():
            if not j.conf:
                continue
            try:
                st = os.stat(j.conf)
            except OSError:
                continue
            if (st.st_ino, st.st_size, st.st_mtime_ns) != j.signature:
                setting = self._read_setting(j)
                if setting is not None and j.alloc and not setting.host_job:  # apply_settings.sh skips a guest's
                    self._apply(j, setting)

    def _apply(self, j: _Job, setting: JobSetting) -> None:
        """Set ``j``'s GPUs to ``setting`` (``nvidia-smi -pl`` or ``-lgc`` by its unit)."""
        self._set(j, setting.unit, float(setting.setting))
        self._touch(j)

    def _set(self, j: _Job, unit: str, value: float) -> None:
        """Set ``j``'s GPUs' power limit (``unit`` ``power_limit_w``, W) or SM clock lock (MHz) to ``value``."""
        for g in j.gpus:
            old = self._gpu_state[g]
            if unit == "power_limit_w":
                self._gpu_state[g] = GpuState(old.gpu_type, value, old.sm_clock_lock_mhz)
            else:
                self._gpu_state[g] = GpuState(old.gpu_type, old.power_limit_w, value)

    def _touch(self, j: _Job) -> None:
        """``j`` and its GPUs changed (start, stop, load done, setting): their physics is due again."""
        self._touched_jobs.add(j.spec.job_id)
        self._touched_gpus.update(j.gpus)
        self._physics_due = True

    def _physics(self) -> None:
        """Rates and GPU powers from the truth, from ``now_s`` on, of the touched jobs and GPUs.

        Jobs interact only through the GPUs they share, so the truth evaluates the touched jobs and GPUs with
        every job and GPU linked to them through a shared GPU; the rest keeps its rates.
        """
        self._physics_due = False
        ids: set[int] = set()
        gpus: set[GpuId] = set()
        todo_ids = [jid for jid in self._touched_jobs if jid in self._running]
        todo_gpus = list(self._touched_gpus)
        self._touched_jobs.clear()
        self._touched_gpus.clear()
        while todo_ids or todo_gpus:
            if todo_gpus:
                g = todo_gpus.pop()
                if g not in gpus:
                    gpus.add(g)
                    todo_ids.extend(self._on_gpu[g])
            elif (jid := todo_ids.pop()) not in ids:
                ids.add(jid)
                todo_gpus.extend(self._running[jid].gpus)
        jobs = [self._running[jid] for jid in sorted(ids)]
        phase: dict[bool, Phase] = {True: "loading", False: "running"}
        snap = evaluate(
            self.truth,
            [RunningJob(str(j.spec.job_id), j.spec.job_type, phase[j.loading], j.gpus) for j in jobs],
            {g: self._gpu_state[g] for g in gpus},
        )
        for g in gpus:
            self._gpu_power[g] = snap.gpus[g].power_w
        self._record_power()
        for j in jobs:
            self._noise_now(j)
            rates = self._rates(j, snap)
            if rates != j.rates:
                j.settle(self.now_s)
                j.rates = rates

    def _rates(self, j: _Job, snap: Snapshot) -> tuple[float, float, float]:
        """``(GPU power shared equally per GPU, steps/s, own dynamic power)`` of a running job."""
        r = snap.jobs[str(j.spec.job_id)]
        if self._configuring(j):  # its nodes boot: no prolog has mapped its GPUs, DCGM names no energy after it
            return (0.0, 0.0, 0.0)
        gpu_w = sum(snap.gpus[g].power_w / len(snap.gpus[g].jobs) for g in set(j.gpus))
        if not r.computing or r.gpu_type is None:
            return (gpu_w, 0.0, 0.0)
        speed = r.steps_per_s if self.noise is None else j.factor * r.steps_per_s
        return (gpu_w, speed, r.rho * (r.power_w - self._idle[r.gpu_type]) * r.gpus)

    def _noise_due(self, j: _Job) -> float:
        """When ``j``'s next noise interval starts (emulated s); ``math.inf`` without noise or before its start."""
        if self.noise is None or j.start_s is None:
            return math.inf
        return j.start_s + (j.noise_interval + 1) * self.noise.period_s

    def _noise_now(self, j: _Job) -> None:
        """Move ``j`` to the noise interval of ``now_s`` and draw its factor there (a no-op without noise)."""
        if self.noise is None or j.start_s is None:
            return
        limit = self.now_s + _eps(self.now_s)
        interval = j.noise_interval
        if self._noise_due(j) <= limit:  # skip the intervals of a long load at once, then settle the last one
            j.noise_interval = max(interval + 1, math.floor((self.now_s - j.start_s) / self.noise.period_s) - 1)
            while self._noise_due(j) <= limit:
                j.noise_interval += 1
        if j.noise_interval != interval:
            j.factor = self.noise.factor(j.spec.job_id, j.starts - 1, j.noise_interval)

    # ------------------------------------------------------------------ telemetry

    def window(self, t0_unix: float, t1_unix: float) -> Observed:
        """Steps done at ``t1`` and GPU energy (J) over ``[t0, t1]`` (virtual Unix s) of every job that has run.

        And the whole cluster's energy over the window (J): every node's and GPU's draw, as :meth:`energy` counts it;
        and per node its idle GPUs' energy (J) and GPU-windows (GPU-seconds with no job, powered, over ``t1 - t0``).
        """
        self._sync()
        t0, t1 = self.clock.at(t0_unix), self.clock.at(t1_unix)
        slack = 1e-6 * max(1.0, abs(self.now_s))
        if t1 > self.now_s + slack or t0 > t1 + slack:
            raise ValueError(f"window [{t0}, {t1}] s is not within the simulated time (now {self.now_s} s)")
        t1 = min(t1, self.now_s)
        t0 = min(t0, t1)
        steps: dict[str, float] = {}
        energy: dict[str, float] = {}
        for jid, j in sorted(self._jobs.items()):
            if j.first_start_s is None or j.first_start_s > t1:
                continue
            if self.progress_metric:
                steps[str(jid)] = min(j.at(j.ss, j.rates[1], t1), j.spec.total_steps)
            energy[str(jid)] = j.at(j.es, j.rates[0], t1) - j.at(j.es, j.rates[0], t0)
        cluster = _step_integral(self._steps, t0, t1, lambda step: step[1] + step[2] + step[3])
        idle: dict[str, tuple[float, float]] = {}
        if t1 > t0:
            for name, log in self._idle_gpus.items():
                gpu_s = _step_integral(log, t0, t1, lambda step: step[1])
                idle[name] = (gpu_s * self._idle[self._node[name].gpu_type], gpu_s / (t1 - t0))
        return Observed(steps, energy, cluster, idle)

    def energy(self, until_s: float | None = None) -> EnergySplit:
        """Node, idle and dynamic energy (J) from the first arrival to ``until_s`` (default ``now_s``).

        Node energy is the powered nodes' draw besides their GPUs, idle energy their GPUs' idle power, dynamic the
        rest; a powered-down node draws nothing (:class:`PowerSaving`), every other node its full idle draw.
        """
        node = idle = dyn = 0.0
        for t0, t1, (node_w, idle_w, dyn_w) in self._clipped_steps(until_s):
            node += node_w * (t1 - t0)
            idle += idle_w * (t1 - t0)
            dyn += dyn_w * (t1 - t0)
        return EnergySplit(node, idle, dyn)

    def _clipped_steps(self, until_s: float | None) -> list[tuple[float, float, tuple[float, float, float]]]:
        """``(t0, t1, (node W, idle W, dynamic W))`` of every non-empty step up to ``until_s`` (default ``now_s``)."""
        self._sync()
        end = self.now_s if until_s is None else min(until_s, self.now_s)
        out = []
        for k, (t0, node_w, idle_w, dyn_w) in enumerate(self._steps):
            t1 = min(self._steps[k + 1][0] if k + 1 < len(self._steps) else end, end)
            if t1 > t0:
                out.append((t0, t1, (node_w, idle_w, dyn_w)))
        return out

    def power_steps(self, until_s: float | None = None) -> list[tuple[float, float, float]]:
        """The cluster's draw as steps ``(t0, t1, W)`` from the first arrival to ``until_s`` (default ``now_s``).

        ``W`` is every node's and GPU's power over ``[t0, t1)``: the sum of ``W (t1 - t0)`` is :meth:`energy`'s total
        (the same window and the same limit on ``until_s``), and a signal's cost is summed step by step.
        """
        return [(t0, t1, sum(w)) for t0, t1, w in self._clipped_steps(until_s)]

    def progress(self) -> dict[int, tuple[float, bool]]:
        """Per job id: the share of its steps done now and whether it has completed.

        It only reads: no arrival is admitted and no scheduler pass runs (as :meth:`job_records` does), so a
        progress display, called on the wall clock, cannot change what the replay does.
        """
        t = self.now_s
        return {
            jid: (
                min(j.at(j.ss, j.rates[1], t) / j.spec.total_steps, 1.0) if j.spec.total_steps > 0 else 1.0,
                j.state == "COMPLETED",
            )
            for jid, j in self._jobs.items()
        }

    def job_records(self) -> list[JobRecord]:
        """Every job now, by job id: times (emulated s), requeues, steps done, dynamic and GPU energy (J)."""
        self._sync()
        out = []
        for jid, j in sorted(self._jobs.items()):
            t = self.now_s
            out.append(
                JobRecord(
                    jid,
                    j.spec.job_type,
                    j.spec.arrival_s,
                    j.first_start_s,
                    j.end_s if j.state == "COMPLETED" else None,
                    j.requeues,
                    min(j.at(j.ss, j.rates[1], t), j.spec.total_steps),
                    j.spec.total_steps,
                    j.at(j.ds, j.rates[2], t),
                    j.at(j.es, j.rates[0], t),
                    "PENDING" if j.state == "FUTURE" else j.state,
                )
            )
        return out

    # ------------------------------------------------------------------ commands

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        """Answer one command at ``now_s`` as Slurm 22.05.8 does (module docstring)."""
        args = tuple(argv)
        self._admit()
        if args == VERSION_COMMAND:
            return CommandResult(args, 0, txt.VERSION_TEXT, "")
        if args == CONFIG_COMMAND:
            saving = self.power_saving
            suspend = None if saving is None else saving.suspend_s
            resume = 0.0 if saving is None else saving.resume_s
            return CommandResult(
                args, 0, txt.config_text(suspend, resume, () if saving is None else saving.excluded), ""
            )
        if args in (QUEUE_COMMAND, NODES_COMMAND, DETAIL_COMMAND):
            self._sync()
            if args == QUEUE_COMMAND:
                return CommandResult(args, 0, txt.squeue_json([self._cached(j)[1] for j in self._listed_jobs()]), "")
            if args == NODES_COMMAND:
                return CommandResult(args, 0, txt.sinfo_json(self._node_views()), "")
            return CommandResult(args, 0, txt.show_job_text([self._cached(j)[0] for j in self._listed_jobs()]), "")
        if len(args) == 3 and args[0] == "scontrol" and args[1] in ("uhold", "hold", "release", "requeuehold"):
            return self._verb(args)
        if len(args) >= 3 and args[:2] == ("scontrol", "update"):
            return self._update(args)
        if len(args) >= 2 and args[0] == "scancel":
            return self._cancel(args)
        return CommandResult(args, 1, "", f"simulated Slurm: unsupported command: {' '.join(args)}\n")

    run = __call__

    def _listed(self, jid: int) -> _Job | None:
        j = self._jobs.get(jid)
        return j if j is not None and j.listed else None

    def _verb(self, args: tuple[str, ...]) -> CommandResult:
        ids = txt.parse_job_ids(args[2])
        if ids is None:
            return CommandResult(args, 1, "", f"scontrol: error: Invalid job id {args[2]}\n")
        refused: list[tuple[int, str]] = []
        for jid in ids:
            j = self._listed(jid)
            why = txt.INVALID_ID if j is None else self._act(args[1], j)
            if why is not None:
                refused.append((jid, why))
        return CommandResult(args, 1 if refused else 0, "", txt.refusals(refused))

    def _act(self, verb: str, j: _Job) -> str | None:
        """Apply one hold, release or requeuehold to ``j``; Slurm's refusal, or None."""
        if j.state in _ENDED:
            return txt.FINISHED
        running = j.state == "RUNNING"
        if verb in ("uhold", "hold"):
            if running:
                return txt.NOT_PENDING
            j.hold = USER_HOLD if verb == "uhold" else ADMIN_HOLD
            j.reason = j.hold
        elif verb == "release":
            if j.hold is not None:
                j.hold = None
                j.reason = "None"
                self._schedule_due = True
        elif not running:
            return txt.PENDING
        else:
            self._stop(j, "PENDING")
            j.hold = j.reason = USER_HOLD
            j.eligible_s = self.now_s + self.requeue_delay_s
            j.requeues += 1
            j.nodes = ()
        return None

    def _update(self, args: tuple[str, ...]) -> CommandResult:
        key, _, value = args[2].partition("=")
        if key.lower() == "nodename":
            return self._update_nodes(args, value)
        ids = txt.parse_job_ids(value) if key.lower() == "jobid" else None
        if ids is None or len(ids) != 1:
            return CommandResult(args, 1, "", f"scontrol: error: Invalid job ID {value or args[2]}\n")
        jid = ids[0]
        j = self._listed(jid)
        why = txt.INVALID_ID if j is None else self._update_job(j, args[3:])
        if why is not None:
            return CommandResult(args, 1, "", txt.refusals([(jid, why)]))
        self._schedule_due = True
        return CommandResult(args, 0, "", "")

    def _update_nodes(self, args: tuple[str, ...], value: str) -> CommandResult:
        """``scontrol update NodeName=N[,...] State=POWER_DOWN|POWER_UP``, as Slurm 22.05 does it with power saving.

        ``POWER_DOWN``: an idle powered node powers down now (``POWERING_DOWN`` for ``suspend_timeout_s``, then off);
        one that holds a job (or boots for one) keeps it and powers down when its last job ends (flag
        ``POWER_DOWN``, ``mix!``), still taking jobs meanwhile, as the emulated cluster's 22.05 did; one powering
        down or off is left so. ``POWER_UP``: a powered-down node boots (``POWERING_UP`` for ``resume_s``, then
        idle until its ``SuspendTime``); any other is left as it is.
        """
        try:
            names = expand_hostlist(value)
        except ValueError:
            names = ()
        if not names or any(n not in self._node for n in names):
            return CommandResult(args, 1, "", f"scontrol: error: {txt.BAD_NODE}\n")
        fields = [a.partition("=") for a in args[3:]]
        if len(fields) != 1 or fields[0][0].lower() != "state" or fields[0][2].upper() not in _NODE_POWER_STATES:
            return CommandResult(args, 1, "", "simulated Slurm: a node update takes State=POWER_DOWN|POWER_UP alone\n")
        if self.power_saving is None:
            return CommandResult(args, 1, "", "scontrol: error: power saving is not configured\n")
        self._sync()
        if fields[0][2].upper() == "POWER_UP":
            for name in names:
                if self._power[name] == "off":
                    self._set_power(name, "powering_up", self.now_s + self.power_saving.resume_s)
            return CommandResult(args, 0, "", "")
        for name in names:
            state = self._power[name]
            if state == "on" and self._nfree[name] == self._node[name].gpus:
                self._power_event(name)
            elif state in ("on", "powering_up"):
                self._down_pending.add(name)
        return CommandResult(args, 0, "", "")

    def _update_job(self, j: _Job, fields: Sequence[str]) -> str | None:
        """Change a pending job's ``Gres``, ``NodeList`` and ``NumNodes`` together; Slurm's refusal, or None."""
        if j.state in _ENDED:
            return txt.FINISHED
        if j.state != "PENDING":
            return txt.NOT_PENDING
        gres, required, count = (j.gres_type, j.per_node), j.required, j.num_nodes
        for item in fields:
            key, _, value = item.partition("=")
            if key.lower() == "gres":
                parsed = txt.parse_gres(value)
                if parsed is None or (parsed[0] is not None and parsed[0] not in self._idle):
                    return txt.BAD_GRES
                if (parsed[0] is None) != (j.gres_type is None):
                    return txt.MIXED_GRES
                gres = parsed
            elif key.lower() == "nodelist":
                try:
                    required = tuple(sorted(set(expand_hostlist(value)), key=txt.natural_key))
                except ValueError:
                    return txt.BAD_NODE
                if any(n not in self._node for n in required):
                    return txt.BAD_NODE
            elif key.lower() == "numnodes" and value.isdigit() and int(value) >= 1:
                count = int(value)
            else:
                return txt.BAD_COUNT if key.lower() == "numnodes" else f"Update of {key} is not supported"
        if any(
            self._node[n].gpus < gres[1] or (gres[0] is not None and self._node[n].gpu_type != gres[0])
            for n in required
        ):
            return txt.NODE_CONFIG
        if gres[1] == 0 and j.per_node > 0:
            j.kept_gpus = j.per_node  # Slurm keeps the GPUs it asked for (``kept_gpus``)
        (j.gres_type, j.per_node), j.required, j.num_nodes = gres, required, count
        return None

    def _cancel(self, args: tuple[str, ...]) -> CommandResult:
        errors = []
        for item in args[1:]:
            j = self._listed(int(item)) if item.isdigit() else None
            if j is None or j.state in _ENDED:
                why = txt.INVALID_ID if j is None else txt.CANCEL_DONE
                errors.append(f"scancel: error: Kill job error on job id {item}: {why}\n")
            else:
                self._stop(j, "CANCELLED")
        return CommandResult(args, 1 if errors else 0, "", "".join(errors))

    # ------------------------------------------------------------------ views

    def _listed_jobs(self) -> list[_Job]:
        return [j for j in self._jobs.values() if j.listed]

    def _cached(self, j: _Job) -> tuple[txt.JobView, str]:
        """``j``'s view and its ``squeue`` record, made again only when something they show changed."""
        key: tuple[object, ...] = (j.state, j.reason, j.hold, j.nodes, j.alloc, j.required, j.per_node, j.gres_type)
        key += (j.num_nodes, j.requeues, j.start_s, j.end_s, j.eligible_s, self._configuring(j))
        if j.shown is None or j.shown[0] != key:
            view = self._view(j)
            j.shown = (key, view, txt.job_json(view))
        return j.shown[1], j.shown[2]

    def _configuring(self, j: _Job) -> bool:
        """``j`` holds nodes that are still booting (Slurm's ``CONFIGURING``)."""
        return j.state == "RUNNING" and self.now_s < j.boot_end_s - _eps(j.boot_end_s)

    def _shown_start(self, j: _Job) -> float | None:
        """``start_time`` as Slurm shows it: the allocation, and once a booted node is up, that moment.

        Slurm 22.05 logs ``Resetting JobId=N start time for node power up`` when the job leaves ``CONFIGURING``.
        """
        if j.state == "RUNNING" and j.start_s is not None and not self._configuring(j):
            return max(j.start_s, j.boot_end_s)
        return j.start_s

    def _unix(self, t_s: float | None) -> int:
        return 0 if t_s is None else math.floor(self.clock.unix_at(t_s))

    def _view(self, j: _Job) -> txt.JobView:
        s = j.spec
        running = j.state == "RUNNING"
        gpus = tuple(
            (n, self._node[n].gpu_type, tuple(i for node, i in j.alloc if node == n)) for n in j.nodes if running
        )
        started = j.state != "PENDING" or j.requeues > 0
        return txt.JobView(
            job_id=s.job_id,
            name=f"wp-{s.job_id}",
            user=s.user,
            account="",
            comment=j.comment,
            state="CONFIGURING" if self._configuring(j) else j.state,
            reason=j.reason,
            priority=0 if j.hold is not None else 4_294_901_760 - s.job_id,
            per_node=j.per_node,
            gres_type=j.gres_type,
            node_count=len(j.nodes) if running else (len(j.required) or j.num_nodes),
            nodes=j.nodes if j.state != "PENDING" else (),
            required=j.required,
            gpus=gpus,
            submit_unix=self._unix(s.arrival_s),
            eligible_unix=self._unix(max(s.arrival_s, j.eligible_s)) if j.hold is None or j.requeues else 0,
            start_unix=self._unix(self._shown_start(j)) if started else 0,
            end_unix=self._unix(j.end_s)
            if j.end_s is not None
            else (self._unix(j.start_s) + txt.YEAR_S if running else 0),
            restarts=j.requeues,
        )

    def _node_views(self) -> list[txt.NodeView]:
        return [
            txt.NodeView(
                n.name,
                n.gpu_type,
                n.gpus,
                tuple(i for i in range(n.gpus) if (n.name, i) in self._owner),
                any(n.name in j.nodes for j in self._running.values()),
                self._power[n.name],
                n.name in self._down_pending,
            )
            for n in self._nodes
        ]


def _check(
    nodes: Sequence[SimNode], truth: LibraryIndex, node_power_w: Mapping[str, float], jobs: Sequence[SimJob]
) -> None:
    """ValueError naming the first thing the simulation cannot run: no node, an unknown type, a bad job."""
    if not nodes:
        raise ValueError("a simulated cluster needs at least one node")
    if len({n.name for n in nodes}) != len(nodes):
        raise ValueError("node names must be unique")
    for n in nodes:
        if n.gpus < 1 or n.gpu_type not in truth.gpu_types or n.gpu_type not in node_power_w:
            raise ValueError(f"node {n.name}: needs GPUs of a GPU type the truth and node_power_w both know")
    if len({j.job_id for j in jobs}) != len(jobs):
        raise ValueError("job ids must be unique")
    for j in jobs:
        if j.job_id < 1 or j.requested_gpus < 1 or not j.total_steps > 0 or not math.isfinite(j.arrival_s):
            raise ValueError(f"job {j.job_id}: needs an id >= 1, GPUs >= 1, steps > 0 and a finite arrival")
