"""A replay that runs the live agent's loop on a simulated Slurm: ``wattplan simulate``.

One policy of one replay (:class:`~planner.sim.replay.ReplaySpec`) is played by :class:`planner.agent.loop.Agent`,
the loop ``wattplan agent`` runs on a cluster, with nothing replaced but what it talks to:

* Slurm is :class:`~planner.control.sim_slurm.SimulatedSlurm` (the agent's ``Run`` and its Prometheus
  ``Observer``): jobs submitted at their arrivals, held and opted in as ``wattplan cluster submit`` sends them,
  started by Slurm's rules the moment they fit, paying the checkpoint load ``load_s`` at every start and Slurm's
  requeue delay ``requeue_delay_s`` after every requeue, running and drawing power by the truth library through
  the GPUs' one truth model (:mod:`planner.control.truth_model`), with ``--noise`` at ``f`` times its speed
  (:func:`replay_noise`);
* time is :class:`~planner.control.virtual_timer.VirtualTimer`: the cluster's virtual clock at ``time_scale``
  emulated seconds per real second, which jumps from one event to the next;
* the state file, the settings folder and the submitter's done marker are files in a scratch folder, exactly as
  on a cluster.

So a round starts when it would live (every ``--round-s``, earlier on an arrival or a completion), decides through
the same policy and steering, and sends the same calls; what a job costs is what the simulated Slurm charges.
``slurm`` is Slurm alone: the same submissions without the agent, neither held nor opted in, scheduled by Slurm
(first come first served with backfill, every GPU at its default setting, every node on); ``slurm-powersave`` is
the same with Slurm's power saving (idle nodes powered down after ``suspend_s``, booted in ``resume_s`` for a job);
``maxq`` is ``slurm-powersave`` with every job's GPUs at the lowest setting that keeps 97% of its full-power
throughput by the planning library (:mod:`planner.core.maxq`), as a site's prolog sets NVIDIA's MaxQ profile.
The agent's policies run on a cluster with power saving when the replay asks for it (``--power-save``), and then
price what a powered node draws.

Slurm's own waits are measured live and charged: a scheduler pass :data:`PASS_DELAY_REAL_S` after the change that
lets a job start, a job that ended holding its GPUs :data:`COMPLETING_REAL_S` as ``COMPLETING``, and the launch
:data:`LAUNCH_REAL_S` (each times ``time_scale``). What this does not reproduce: the agent's own latency (a round
takes no virtual time; live, from its start to its release, a median of 0.15 real s, ``time_scale`` times as many
emulated seconds: choose a scale at which it is small), Prometheus's scrape lag, a launch that takes longer in a
burst of starts (:data:`LAUNCH_REAL_S` is one figure for every start), and the faults a real cluster has
(benchmarks/RESULTS.md, "Why the replay leaves the live run on philly_shape", "The replay's Slurm waits").
"""

from __future__ import annotations

import getpass
import json
import math
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.agent.energy_budget import BudgetPeriods, energy_by_period
from wattplan.planner.agent.loop import Agent, AgentConfig
from wattplan.planner.agent.node_settings import Clock
from wattplan.planner.agent.store import AgentStore
from wattplan.planner.agent.trust import Allowed
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.control.cap_schedule import CapStep, ScheduledCap, cap_followed
from wattplan.planner.control.common_window import IDLE_TAIL, idle_tail
from wattplan.planner.control.sim_slurm import PowerSaving, SimJob, SimNode, SimulatedSlurm
from wattplan.planner.control.truth_model import ThroughputNoise
from wattplan.planner.control.virtual_timer import EventClock, NoMoreEvents, VirtualTimer
from wattplan.planner.core.maxq import maxq_settings
from wattplan.planner.planning import retire_solver_workers
from wattplan.planner.profile_library.index import index_library
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.sim.options import COMPLETING_REAL_S, PASS_DELAY_REAL_S, SimulateOptions
from wattplan.planner.sim.replay import ReplaySpec, libraries, prepare, signal_clocks
from wattplan.planner.sim.replay import steering as replay_steering
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.signals import J_PER_KWH, SignalClock, SignalKind, signal_cost
from wattplan.planner.sim.workload import Workload

SLURM_ALONE = "slurm"
"""The policy name of Slurm alone: the jobs submitted without the agent, every node on."""
SLURM_POWERSAVE = "slurm-powersave"
"""Slurm alone with Slurm's power saving: idle nodes powered down, booted again for a job."""
SLURM_MAXQ = "maxq"
"""``slurm-powersave`` with a prolog that sets every job's GPUs to MaxQ's setting (:mod:`planner.core.maxq`)."""
SLURM_BASELINES = (SLURM_ALONE, SLURM_POWERSAVE, SLURM_MAXQ)
"""The policies that are Slurm without the agent."""
LAUNCH_REAL_S = 1.0
"""Real seconds from Slurm's start of a job to the job's own first instruction: slurmd's launch (the prolog, the
batch script; median 0.8 s over the 360 starts of nine live runs, ``benchmarks/slurm_latency.py``, boots left out
by the median) and the trainer's own start, which no log times. Set when the replay had no scheduler pass of its own,
as the whole of a start's latency (the first jobs of Slurm-alone runs on an idle emulated cluster started 0.5 to 1.3
real seconds after their submission); kept, as the pass (:data:`PASS_DELAY_REAL_S`) is now modelled apart."""
REQUEUE_DELAY_REAL_S = 6.0
"""Real seconds from ``scontrol requeuehold`` until Slurm may start the job again (``cred_expire`` 5 s, +1 s); with
the launch, the 7 s from a requeue to the job running again seen live (docs/design.md §11.6)."""
REPLAY_KEY = "replay_key"
"""The summary's field holding what a resumed ``simulate`` compares a saved policy by (:mod:`.saved_replay`)."""
POWER_FILE = "power.csv"
"""A policy's file of the cluster's draw step by step (:func:`write_result`)."""
STALL_ROUNDS = 3
"""A replay stops once this many rounds in a row ran nothing while jobs waited, every job submitted (a cap too small
for any job)."""
T0_UNIX = 1_700_000_000.0
"""The virtual Unix time of emulated second 0 (any fixed value: the replay never reads the machine's clock)."""


def cpu_s() -> float:
    """CPU seconds of this process and of its reaped children, user and system.

    The solver workers are long-lived: :func:`replay_on_slurm` retires them before it reads this, so a replay's
    CPU seconds include its solves.
    """
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_SIMULATE = SimulateOptions()
"""``wattplan simulate``'s defaults: :class:`SimulatedCluster`'s for what an option sets (one default each)."""


@dataclass(frozen=True, slots=True)
class SimulatedCluster:
    """The simulated Slurm's constants and when the agent's rounds start.

    Time scale, checkpoint load and requeue delay (emulated s); the agent's ``--event-rounds`` and
    ``--periodic-rounds``. A field an option of ``wattplan simulate`` sets defaults to that option's default.
    """

    time_scale: float = _SIMULATE.time_scale
    """Emulated seconds per real second, as ``wattplan cluster up --time-scale``: the agent's real-time waits
    (a read of the queue every ``poll_s``, a guest's wait for its host) last this many times as long in emulated
    time."""
    load_s: float = _SIMULATE.load_s
    """A job's checkpoint load at every start, the first included (the stand-in trainer's ``--restart-s``)."""
    requeue_delay_s: float | None = None
    """From a requeue until Slurm may start the job again; None: :data:`REQUEUE_DELAY_REAL_S` x ``time_scale``."""

    event_rounds: bool = _SIMULATE.event_rounds
    """The agent's rounds also start when a job arrives or leaves (``--event-rounds``)."""
    periodic_rounds: bool = _SIMULATE.periodic_rounds
    """The agent's rounds start every ``--round-s`` even when nothing changed (``--periodic-rounds``)."""
    poll_s: float = _SIMULATE.poll_s
    """Real seconds between the agent's reads of the queue while it waits for a round (``--poll-s``)."""

    pass_delay_s: float | None = None
    """From a change that may let a job start to Slurm's pass that starts it (emulated s); None:
    :data:`PASS_DELAY_REAL_S` x ``time_scale``."""
    completing_s: float | None = None
    """How long a job that ended stays ``COMPLETING``, holding its GPUs (emulated s); None:
    :data:`COMPLETING_REAL_S` x ``time_scale``."""
    launch_s: float | None = None
    """Every start's launch (emulated s), before the checkpoint load; None: :data:`LAUNCH_REAL_S` x ``time_scale``."""

    power_save: bool = _SIMULATE.power_save
    """The agent's policies run with Slurm's power saving (``--power-save``); ``slurm-powersave`` always does,
    ``slurm`` never."""
    power_down: bool = _SIMULATE.power_down
    """With ``power_save``, the agent's policies also power idle nodes down themselves (``--power-down``,
    :mod:`planner.agent.node_power`)."""
    power_up: bool = _SIMULATE.power_up
    """With ``power_down``, they also boot powered-down nodes ahead of the jobs (``--power-up``)."""
    pairs: bool = _SIMULATE.pairs
    """The agent's policies co-locate pairs (``--pairs``); ``eaco`` always does."""
    suspend_s: float = _SIMULATE.suspend_s
    """Power saving: a node idle this long is powered down (``SuspendTime``)."""
    resume_s: float = _SIMULATE.resume_s
    """Power saving: a powered-down node boots this long before a job given it starts (``ResumeProgram``)."""
    suspend_exc_nodes: tuple[str, ...] = ()
    """Power saving: nodes it never powers down (``SuspendExcNodes``); the agent leaves them on too."""
    cap_schedule: tuple[CapStep, ...] = ()
    """A power cap that moves (``--power-cap-schedule``): the agent's policies follow it through their cap file;
    the Slurm baselines know no cap."""

    progress_metric: bool = _SIMULATE.progress_metric
    """Jobs export their steps to the agent (``--progress-metric``); False: the agent estimates them."""
    up_before_s: float = _SIMULATE.up_before_s
    """The cluster is up, every node on and idle, this long before the first arrival (``--up-before-s``): power
    saving's idle timers count from then, and energy too (a live run's time from ``cluster up`` to its first
    submission)."""
    budget_period_s: float | None = None
    """The period of the replay's energy budget (``--budget-period-s``): the agent's policies draw at most
    ``--energy-budget-kwh`` in every period from the cluster's start (:mod:`planner.agent.energy_budget`)."""

    def power_saving(self, policy: str) -> PowerSaving | None:
        """The power saving ``policy`` runs with (module docstring); None: every node stays on."""
        on = policy in (SLURM_POWERSAVE, SLURM_MAXQ) or (policy != SLURM_ALONE and self.power_save)
        return PowerSaving(self.suspend_s, self.resume_s, excluded=self.suspend_exc_nodes) if on else None

    @property
    def start_cost_s(self) -> float:
        """What every start costs before the first step (emulated s): the launch and the checkpoint load."""
        return self.emulated(self.launch_s, LAUNCH_REAL_S) + self.load_s

    @property
    def restart_cost_s(self) -> float:
        """What a requeue costs a job before its next step (emulated s): the requeue delay, the launch, the load."""
        return self.requeue_s + self.start_cost_s

    @property
    def requeue_s(self) -> float:
        """The requeue delay in emulated seconds."""
        return self.emulated(self.requeue_delay_s, REQUEUE_DELAY_REAL_S)

    def emulated(self, given_s: float | None, default_real_s: float) -> float:
        """A wait in emulated seconds: ``given_s`` when given, else ``default_real_s`` real seconds x ``time_scale``."""
        return given_s if given_s is not None else default_real_s * self.time_scale


def cluster_nodes(ctx: ClusterContext) -> list[SimNode]:
    """The nodes of the replay's cluster, named as plans and ``wattplan cluster up`` name them (``v100-0``)."""
    return [SimNode(name, g.name, g.gpus_per_node) for g in ctx.gpu_types for name in g.node_names()]


def submissions(workload: Workload, managed: bool) -> tuple[list[SimJob], dict[int, str]]:
    """The workload as Slurm submissions (ids 1, 2, ... in arrival order) and the trace id of each Slurm id."""
    user = getpass.getuser()
    jobs = sorted(workload.jobs, key=lambda j: (j.arrival_s, j.id))
    out = [
        SimJob(k, j.type, j.arrival_s, j.requested_gpus, j.total_steps, managed=managed, user=user)
        for k, j in enumerate(jobs, start=1)
    ]
    return out, {k: j.id for k, j in enumerate(jobs, start=1)}


def simulated_slurm(
    ctx: ClusterContext,
    truth: ProfileLibrary,
    jobs: Sequence[SimJob],
    setup: SimulatedCluster,
    folder: Path | None,
    power_saving: PowerSaving | None = None,
    prolog_settings: Mapping[tuple[str, str], float] | None = None,
    noise: ThroughputNoise | None = None,
) -> SimulatedSlurm:
    """The simulated Slurm of the replay's cluster, running by ``truth`` (times ``noise``'s factors, when given).

    Its settings folder is ``folder``.
    """
    node_power = {g.name: g.node_power_w for g in ctx.real.gpu_types}
    return SimulatedSlurm(
        cluster_nodes(ctx),
        index_library(truth),
        node_power,
        jobs,
        clock=Clock(T0_UNIX, setup.time_scale),
        load_s=setup.start_cost_s,
        requeue_delay_s=setup.requeue_s,
        settings_dir=folder,
        power_saving=power_saving,
        prolog_settings=prolog_settings,
        progress_metric=setup.progress_metric,
        up_before_s=setup.up_before_s,
        noise=noise,
        pass_delay_s=setup.emulated(setup.pass_delay_s, PASS_DELAY_REAL_S),
        completing_s=setup.emulated(setup.completing_s, COMPLETING_REAL_S),
    )


def agent_config(
    spec: ReplaySpec,
    ctx: ClusterContext,
    library: ProfileLibrary,
    policy: str,
    setup: SimulatedCluster,
    scratch: Path,
    clocks: Mapping[SignalKind, SignalClock],
) -> AgentConfig:
    """The agent's configuration for one policy of the replay: the replay's rules, solve and steering options.

    ``clocks``: the replay's signals on its clock (:func:`~planner.sim.replay.signal_clocks`); the agent follows
    the carbon signal, else the price signal.
    """
    return AgentConfig(
        library,
        ctx.rules,
        spec.policy_options.request,
        clock=Clock(T0_UNIX, setup.time_scale),
        steering=replay_steering(spec),
        signal=clocks.get("carbon") or clocks.get("price"),
        learn=spec.learn,
        settings_dir=scratch / "settings",
        until_idle=True,
        idle_marker=scratch / "submitted",
        max_rounds=spec.max_rounds,
        node_power_w=spec.node_power_w,
        pairs=setup.pairs or policy == "eaco",
        power_save=(saving := setup.power_saving(policy)) is not None,
        power_down=setup.power_down and saving is not None,
        power_up=setup.power_up and setup.power_down and saving is not None,
        power_cycle_s=saving.power_cycle_s if saving is not None else AgentConfig.power_cycle_s,
        event_rounds=setup.event_rounds,
        poll_s=setup.poll_s,
        periodic_rounds=setup.periodic_rounds,
        start_s=setup.load_s,
        allowed=Allowed.of((getpass.getuser(),), ()),
        policy=policy,
        zeus_eta=spec.policy_options.zeus_eta,
        power_cap_w=spec.power_cap_w,
        power_cap_file=scratch / "power_cap" if setup.cap_schedule else None,
        energy_budget_kwh=spec.energy_budget_kwh,
        budget_period_s=setup.budget_period_s,
        stall_rounds=STALL_ROUNDS,
        durable_settings=False,
    )


@dataclass
class SlurmReplayResult:
    """One policy's replay on the simulated Slurm: its summary, one row per job and the cluster's power steps.

    ``power_steps``: ``(t0, t1, W)`` of constant cluster power over the energy window, emulated s
    (:meth:`~planner.control.sim_slurm.SimulatedSlurm.power_steps`).
    """

    policy: str
    summary: dict[str, Any]
    jobs: list[dict[str, Any]]
    power_steps: list[tuple[float, float, float]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ReplayProgress:
    """How far one policy's replay is, for a progress bar.

    ``work_done`` is the share of the workload's reference work done, ``sum_j n_j d_j f_j / sum_j n_j d_j`` with
    ``n_j`` the requested GPUs, ``d_j`` the reference duration (s) and ``f_j`` the share of its steps done;
    ``hours`` emulated hours since the first arrival.
    """

    policy: str
    jobs_done: int
    jobs_total: int
    work_done: float
    hours: float


ProgressHook = Callable[[ReplayProgress], None]
PROGRESS_EVERY_S = 0.25
"""Wall seconds between two progress reports of one replay (the last one is always sent)."""


class _Reporter:
    """Sends ``hook`` the replay's :class:`ReplayProgress`, at most every :data:`PROGRESS_EVERY_S` wall seconds."""

    def __init__(self, slurm: SimulatedSlurm, workload: Workload, policy: str, hook: ProgressHook | None) -> None:
        jobs = sorted(workload.jobs, key=lambda j: (j.arrival_s, j.id))
        self.weights = {k: j.requested_gpus * j.reference_duration_s for k, j in enumerate(jobs, start=1)}
        self.t0 = min((j.arrival_s for j in jobs), default=0.0)
        self.slurm, self.policy, self.hook = slurm, policy, hook
        self.last = -math.inf

    def __call__(self, final: bool = False) -> None:
        if self.hook is None:
            return
        now = time.monotonic()
        if not final and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        jobs = self.slurm.progress()
        total = sum(self.weights.values())
        done = sum(self.weights.get(jid, 0.0) * share for jid, (share, _) in jobs.items())
        ended = sum(1 for _, completed in jobs.values() if completed)
        hours = (self.slurm.now_s - self.t0) / 3600
        self.hook(ReplayProgress(self.policy, ended, len(jobs), done / total if total > 0 else 1.0, hours))


def _run_agent(
    slurm: SimulatedSlurm,
    config: AgentConfig,
    jobs: Sequence[SimJob],
    scratch: Path,
    log: Callable[[str], None],
    report: Callable[[], None] = lambda: None,
    cap_schedule: tuple[CapStep, ...] = (),
) -> tuple[int, str]:
    """Play the agent's loop on ``slurm`` from the cluster's start until every job has ended; the rounds played and why.

    The agent starts when the cluster does, ``up_before_s`` before the first arrival, as a live run's agent starts
    within that lead (``benchmarks/live_compare.py``); it once started at the first arrival, so that a replay could
    not show what the live agent did with the idle stretch before the first job.

    With a cap file in ``config``, ``cap_schedule`` writes it on the virtual clock (:class:`ScheduledCap`).

    ``completed``; ``max-rounds`` (the replay's ``--max-rounds``); ``stalled`` (the loop waited for an event the
    cluster will never have). A SIGINT or SIGTERM the loop stopped on raises ``SystemExit(128 + signal)``, as the
    executor's pools do: the replay is interrupted, not ended, and nothing of it is saved as finished.
    """
    last_arrival = max(j.arrival_s for j in jobs)
    marker = scratch / "submitted"

    def mark_submitted() -> None:
        if slurm.now_s >= last_arrival and not marker.exists():
            marker.write_text("")
        report()

    start_s = min(j.arrival_s for j in jobs)
    clock: EventClock = slurm
    if config.power_cap_file is not None:
        clock = ScheduledCap(slurm, cap_schedule, config.power_cap_file, start_s)
    timer = VirtualTimer(clock, config.clock, mark_submitted)
    if config.energy_budget_kwh is not None:  # the budget's periods start where the cluster's energy count does
        config.budget_origin_s = slurm.now_s
    mark_submitted()  # the agent starts with the cluster (``up_before_s`` before the first arrival), as it does live
    store = AgentStore(scratch / "agent.db", durable=False)  # a replay's state: no crash needs it again
    try:
        agent = Agent(config, store, slurm, slurm, log, timer)
        try:
            agent.run_loop()
        except NoMoreEvents as e:
            log(f"stalled: {e}")
            return store.next_round(), "stalled"
        finally:
            if agent.stop_signal is not None:  # interrupted: not a replay that ended, never saved as one
                raise SystemExit(128 + agent.stop_signal)
        played_all = store.next_round() >= (config.max_rounds or math.inf)
        stop = "completed" if slurm.done() else ("max-rounds" if played_all else agent.stop_reason or "stalled")
        return store.next_round(), stop
    finally:
        store.close()


def _run_alone(slurm: SimulatedSlurm, report: Callable[[], None] = lambda: None) -> None:
    """Slurm alone: play every event until the last job ends."""
    while not slurm.done():
        nxt = slurm.next_event_s()
        if math.isinf(nxt):
            break
        slurm.advance_to(nxt)
        report()


def replay_on_slurm(
    spec: ReplaySpec,
    policy: str,
    setup: SimulatedCluster | None = None,
    out: Path | None = None,
    log: Callable[[str], None] | None = None,
    progress: ProgressHook | None = None,
    prepared: tuple[Workload, ClusterContext] | None = None,
    key: Mapping[str, Any] | None = None,
) -> SlurmReplayResult:
    """Replay ``spec``'s workload with ``policy`` (or :data:`SLURM_ALONE`) on the simulated Slurm (module docstring).

    With ``out``, the policy's folder ``out/POLICY/`` gets ``summary.json``, ``jobs.csv``, ``power.csv`` and
    ``agent.log``. ``progress`` hears how far the replay is (:class:`ReplayProgress`) as it goes and once at its end;
    ``prepared`` is ``prepare(spec)`` when the caller has it already; ``key`` is saved in the summary as
    ``replay_key``, what a resumed ``simulate`` compares a saved policy by (:mod:`planner.control.saved_replay`).
    """
    setup = setup or SimulatedCluster()
    wall, cpu = time.perf_counter(), cpu_s()
    workload, ctx = prepared if prepared is not None else prepare(spec)
    library, truth = libraries(spec)
    clocks = signal_clocks(spec, workload)
    jobs, trace_id = submissions(workload, managed=policy not in SLURM_BASELINES)
    lines: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="wattplan-slurm-replay-"))
    try:
        (scratch / "settings").mkdir()
        prolog = maxq_settings(library.profiles) if policy == SLURM_MAXQ else None
        saving, noise = setup.power_saving(policy), replay_noise(spec)
        slurm = simulated_slurm(ctx, truth, jobs, setup, scratch / "settings", saving, prolog, noise)

        def say(text: str) -> None:
            lines.append(text)
            if log is not None:
                log(text)

        report = _Reporter(slurm, workload, policy, progress)
        rounds, stop = 0, "completed"
        if policy in SLURM_BASELINES:
            _run_alone(slurm, report)
        else:
            config = agent_config(spec, ctx, library, policy, setup, scratch, clocks)
            rounds, stop = _run_agent(slurm, config, jobs, scratch, say, report, setup.cap_schedule)
        report(final=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    retire_solver_workers()  # their CPU seconds count once they are reaped
    rows = job_rows(slurm, trace_id)
    summary = summarise(policy, slurm, rows, rounds, setup)
    power = slurm.power_steps(_window_end(slurm, rows))  # the energy window's steps, once for every use
    summary.update(signal_costs(power, clocks))
    summary[IDLE_TAIL] = idle_tail(slurm, _window_end(slurm, rows), saving)  # for the common window
    summary["stop_reason"] = stop
    if spec.energy_budget_kwh is not None and setup.budget_period_s is not None:
        origin = min(r["arrival_s"] for r in rows) - setup.up_before_s
        periods = BudgetPeriods(spec.energy_budget_kwh * J_PER_KWH, setup.budget_period_s, origin)
        summary["energy_budget"] = budget_summary(power, periods, applied=policy not in SLURM_BASELINES)
    if setup.cap_schedule and policy not in SLURM_BASELINES:
        summary["power_cap_steps"] = cap_followed(power, setup.cap_schedule, min(r["arrival_s"] for r in rows))
    summary["wall_s"] = round(time.perf_counter() - wall, 3)
    summary["cpu_s"] = round(cpu_s() - cpu, 3)
    if key is not None:
        summary[REPLAY_KEY] = dict(key)
    result = SlurmReplayResult(policy, summary, rows, power)
    if out is not None:
        write_result(out / policy, result, lines)
    return result


def replay_noise(spec: ReplaySpec) -> ThroughputNoise | None:
    """The replay's throughput noise: ``--noise`` drawn per job start and ``--round-s``, seeded by ``--seed``.

    None for a noise of 0. Every policy of the replay, the Slurm baselines included, runs on the same draws.
    """
    return ThroughputNoise(spec.noise, spec.seed, spec.rules.duration_s) if spec.noise > 0 else None


def budget_summary(
    steps: Sequence[tuple[float, float, float]], periods: BudgetPeriods, applied: bool
) -> dict[str, Any]:
    """The energy budget and, per period from the cluster's start, the energy the cluster drew (kWh).

    ``steps``: the energy window's steps of constant power ``(t0, t1, W)``, split exactly at the periods' starts
    (:func:`~planner.agent.energy_budget.energy_by_period`); ``applied``: the policy ran under the budget (the Slurm
    baselines do not). A period's ``end_s`` is its nominal end; the last one ends with the window (the last
    completion).
    """
    drawn = energy_by_period([(t0, t1, w * (t1 - t0)) for t0, t1, w in steps], periods)
    rows = [
        {
            "period": k,
            "start_s": periods.start_s(k),
            "end_s": periods.end_s(k),
            "energy_kwh": drawn.get(k, 0.0) / J_PER_KWH,
        }
        for k in range(min(drawn, default=0), max(drawn, default=-1) + 1)
    ]
    return {
        "energy_budget_kwh": periods.energy_j / J_PER_KWH,
        "budget_period_s": periods.period_s,
        "origin_s": periods.origin_s,
        "applied": applied,
        "max_period_energy_kwh": max((r["energy_kwh"] for r in rows), default=0.0),
        "periods": rows,
    }


def job_rows(slurm: SimulatedSlurm, trace_id: Mapping[int, str]) -> list[dict[str, Any]]:
    """One row per job: trace and Slurm ids, type, arrival, first start, finish, JCT (s), requeues, GPU energy (J)."""
    rows = []
    for r in slurm.job_records():
        jct = None if r.finish_s is None else r.finish_s - r.arrival_s
        rows.append(
            {
                "job_id": trace_id[r.job_id],
                "slurm_id": r.job_id,
                "job_type": r.job_type,
                "arrival_s": r.arrival_s,
                "start_s": r.first_start_s,
                "finish_s": r.finish_s,
                "jct_s": jct,
                "requeues": r.requeues,
                "steps": r.steps_done,
                "gpu_energy_j": r.gpu_energy_j,
            }
        )
    return rows


def _quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (linear between order statistics, as numpy's default), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarise(
    policy: str, slurm: SimulatedSlurm, rows: Sequence[Mapping[str, Any]], rounds: int, setup: SimulatedCluster
) -> dict[str, Any]:
    """The replay's figures: energy (kWh, split), JCTs (s), makespan (s), requeues, rounds and the cluster's constants.

    Energy is every node's and GPU's draw from the cluster's start (the first arrival, less ``--up-before-s``) to
    the last completion (to the replay's end when a job is unfinished), a live run's own window; a node powered down
    draws nothing meanwhile.
    """
    jcts = [r["jct_s"] for r in rows if r["jct_s"] is not None]
    arrivals = [r["arrival_s"] for r in rows]
    finishes = [r["finish_s"] for r in rows if r["finish_s"] is not None]
    split = slurm.energy(_window_end(slurm, rows))  # once every job is done, nothing computes after the last one
    kwh = 1.0 / 3.6e6
    return {
        "policy": policy,
        "engine": "slurm",
        "jobs": len(rows),
        "completed": len(jcts),
        "energy_kwh": (split.node_j + split.idle_j + split.dynamic_j) * kwh,
        "energy_node_kwh": split.node_j * kwh,
        "energy_idle_kwh": split.idle_j * kwh,
        "energy_dynamic_kwh": split.dynamic_j * kwh,
        "avg_jct_s": statistics.fmean(jcts) if jcts else None,
        "median_jct_s": _quantile(jcts, 0.5),
        "p95_jct_s": _quantile(jcts, 0.95),
        "makespan_s": (max(finishes) - min(arrivals)) if finishes else None,
        "requeues": sum(int(r["requeues"]) for r in rows),
        "rounds": rounds,
        "time_scale": setup.time_scale,
        "load_s": setup.load_s,
        "requeue_delay_s": setup.requeue_s,
        "up_before_s": setup.up_before_s,
        "power_saving": None
        if slurm.power_saving is None
        else {"suspend_s": slurm.power_saving.suspend_s, "resume_s": slurm.power_saving.resume_s},
        "noise": 0.0 if slurm.noise is None else slurm.noise.noise,
        "noise_seed": None if slurm.noise is None else slurm.noise.seed,
    }


def _window_end(slurm: SimulatedSlurm, rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The end of the replay's energy window: the last completion, or None (now) while a job is unfinished."""
    finishes = [r["finish_s"] for r in rows if r["finish_s"] is not None]
    return max(finishes) if finishes and len(finishes) == len(rows) else None


def signal_costs(
    steps: Sequence[tuple[float, float, float]], clocks: Mapping[SignalKind, SignalClock]
) -> dict[str, Any]:
    """``carbon_kg`` and ``energy_cost_usd`` of the cluster's draw over the energy window, and each signal's info.

    ``steps``: the window's steps of constant power ``(t0, t1, W)``
    (:meth:`~planner.control.sim_slurm.SimulatedSlurm.power_steps`), each priced at its signal's time-weighted mean
    over the step (:func:`~planner.sim.signals.signal_cost`).
    """
    out: dict[str, Any] = {}
    named: tuple[tuple[SignalKind, str, float], ...] = (("carbon", "carbon_kg", 1e-3), ("price", "energy_cost_usd", 1))
    for kind, name, scale in named:
        clock = clocks.get(kind)
        if clock is not None:
            out[name] = scale * sum(signal_cost(clock, t0, t1 - t0, w * (t1 - t0)) for t0, t1, w in steps)
    if clocks:
        out["signals"] = {k: {**c.signal.info(), "offset_h": c.offset_h} for k, c in clocks.items()}
    return out


def write_result(folder: Path, result: SlurmReplayResult, log_lines: Sequence[str]) -> None:
    """``summary.json``, ``jobs.csv``, ``power.csv`` and ``agent.log`` of one policy in ``folder``.

    Each is written atomically, the summary last (a summary saved before is removed first): a folder whose summary
    names this replay holds its other files too. ``power.csv`` is the cluster's draw step by step, ``t0_s``,
    ``t1_s`` (emulated s) and ``power_w`` (W).
    """
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").unlink(missing_ok=True)
    write_text_atomic(folder / "jobs.csv", pd.DataFrame(result.jobs).to_csv(index=False))
    steps = "".join(f"{a!r},{b!r},{w!r}\n" for a, b, w in result.power_steps)
    write_text_atomic(folder / POWER_FILE, "t0_s,t1_s,power_w\n" + steps)
    write_text_atomic(folder / "agent.log", "".join(f"{line}\n" for line in log_lines))
    write_text_atomic(folder / "summary.json", json.dumps(result.summary, indent=2) + "\n")
