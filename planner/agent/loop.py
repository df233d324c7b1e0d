"""``wattplan agent``: the control loop on a live Slurm cluster (docs/design.md §11.6).

Every round (``--round-s`` on the agent's clock, real seconds on a real cluster):

1. **read** the managed jobs and the nodes from Slurm (``squeue --json``, ``sinfo --json``, and the GPU indices of
   running jobs from ``scontrol show job -d``); jobs that left the queue are recorded with their last state;
2. **observe** the last round's window in Prometheus: each job's steps done (``wattplan_job_steps_done``) and
   energy (apportioned between the jobs of a shared GPU) and each node's idle GPUs' energy; with ``--learn`` the
   profiles are corrected by the replay's learner (:class:`planner.sim.learning.ProfileLearner`) from the jobs
   that ran the whole window (rates, and power when alone) and the idle GPUs (idle power);
3. **build** the round instance exactly as the replay does (:func:`planner.sim.round_instance.round_instance`):
   the queued managed jobs with their remaining steps (total minus observed), their current configuration and
   placement, the nodes Slurm can schedule on (drained, down and nodes running unmanaged jobs are left out);
4. **decide** through the policy (``--policy``, the replay's policies by name; ``wattplan`` plans the round model
   through the front door), placed and validated as the replay places them, within the power cap and the energy
   budget's paced share of its period (:mod:`planner.agent.energy_budget`); a round that cannot be planned keeps
   what runs;
5. **apply** the difference (:mod:`planner.agent.decide`): the desired configurations and the calls are committed
   to the state (:mod:`planner.agent.store`) before the first call is sent; each outcome is committed as it
   comes; the nodes' setting files are written before a job is released.

Rounds are ``--round-s`` apart, and start early (at least a tenth of a round after the last) when a managed
job arrives or leaves the queue: Slurm starts a job the moment it fits, and a round model that made arrivals
wait for the next round boundary would add half a round to every job's JCT (``--no-event-rounds``: fixed
rounds, as the replay plays them).

The runtime-bounded energy mode is the default, as in the replay: the ``efficiency`` objective with the JCT
governor (:class:`planner.sim.governor.JctGovernor`, ``--governor``) holding the average JCT within
``--max-jct-increase`` of the reference: ``fifo-max`` in continuous time over the jobs seen so far, with the
current profiles (:func:`planner.agent.reference.slurm_reference`, what Slurm alone does with the same
submissions), recomputed whenever a job arrives. A carbon or price signal (``--carbon``, ``--price``) moves the
round's ``delta`` and credit weight as in the replay (:class:`planner.sim.governor.SignalSteer`); both are built
from one record (:class:`planner.sim.governor.Steering`).

Faults never stop the loop: Slurm or Prometheus unreachable (retried with backoff inside the round, then the
round is skipped or planned from the last known progress, and the log says so), a node drained mid-run (left
out; its jobs restart elsewhere), a job cancelled by its user or failing (recorded, forgotten), a call Slurm
refuses (recorded; the next round derives its calls from what Slurm then shows), a state file another process
keeps locked (the round is skipped, what runs is kept, the log says what to close). SIGTERM and SIGINT end the
loop between two steps. A damaged state file stops the loop with an operator-facing error (:class:`StoreError`):
without it the agent cannot record what it sends.

Trust (:mod:`planner.agent.trust`): only opted-in jobs of the allowed users and accounts are read as managed;
a job held by an administrator, or by its user after the agent first saw it, is left out of the round.
"""

from __future__ import annotations

import math
import signal
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Protocol, TypeVar

from wattplan.planner.agent.aligned_blocks import aligned_blocks
from wattplan.planner.agent.commands import CommandResult, Run, SlurmError
from wattplan.planner.agent.decide import Decision, SlurmJobNow, decide
from wattplan.planner.agent.energy_budget import SAME_S, EnergyLedger, RoundShare
from wattplan.planner.agent.learned_state import restored_learner, save_feed
from wattplan.planner.agent.metrics import AgentMetrics, RoundFigures
from wattplan.planner.agent.node_power import (
    SHUTDOWN_S,
    WINDOW_S,
    PowerDownChoice,
    boot_wait_share,
    choose_power_down,
    choose_power_up,
    tightest_limit,
)
from wattplan.planner.agent.node_settings import Clock, JobSetting
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.agent.power_cap import CapFile
from wattplan.planner.agent.progress_estimate import RateIndex, credited_steps, energy_steps
from wattplan.planner.agent.report import ReferenceTally, release_waits
from wattplan.planner.agent.slurm_actions import (
    Action,
    ActionOutcome,
    Release,
    RequeueHold,
    SlurmCall,
    apply,
    calls,
    power_down_call,
    power_up_call,
)
from wattplan.planner.agent.slurm_config import power_save_excluded, query_slurm_config
from wattplan.planner.agent.slurm_detail import expand_hostlist, query_job_gpus
from wattplan.planner.agent.slurm_queue import (
    ADMIN_HOLD,
    POWERING_DOWN,
    USER_HOLD,
    ManagedJob,
    NodeState,
    QueueRead,
    query_nodes,
    query_queue,
)
from wattplan.planner.agent.slurm_schema import LEGACY, Generation
from wattplan.planner.agent.steering import LiveSteering
from wattplan.planner.agent.store import AgentStore, Desired, KnownJob, StoreBusy
from wattplan.planner.agent.timing import Timer, WallTimer
from wattplan.planner.agent.trust import Allowed, foreign_hold
from wattplan.planner.contracts.domain import CurrentConfig, Instance, NodeGpus
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.core.assemble import SolveInfo, assemble_plan, with_every_node_on
from wattplan.planner.core.validate import InvalidPlanError, validate_plan
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.cluster_spec import ClusterSpec
from wattplan.planner.rounds.traces import TraceJob
from wattplan.planner.sim.budget import one_node_round_j
from wattplan.planner.sim.governor import Steering
from wattplan.planner.sim.learning import ProfileLearner
from wattplan.planner.sim.policies.base import Policy
from wattplan.planner.sim.policies.registry import PolicyOptions, make_policy
from wattplan.planner.sim.round_instance import (
    ClusterContext,
    cluster_context,
    nodes_stay_on,
    replay_round,
    round_instance,
)
from wattplan.planner.sim.signals import J_PER_KWH, SignalClock
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.telemetry import GpuObservation, JobObservation
from wattplan.planner.sim.workload import job_spec

ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"})
"""Slurm job states of a job still in the queue; any other state ends it."""
UNMETERED_REAL_S = 30.0
"""Real seconds a running job must go without GPU energy named after it before it counts as unmetered: a window
shorter than a scrape or two can miss its first samples (event rounds on the emulated cluster, 40-70 emulated
seconds apart at a time scale of 30, judged jobs that had just started unmetered)."""
SETTLING_STATES = frozenset({"COMPLETING"})
"""States of a job Slurm is settling (ending, or requeued a moment ago): the round leaves it out, the next one sees
it pending or gone. Planned, a job that had just ended drew a call Slurm refused (``Job has already finished``),
three rounds in a row on the emulated cluster."""
HOLD_SHOWN_STATES = frozenset({"PENDING", "RUNNING"})
"""States in which Slurm shows whether a job is held. A job completing a ``requeuehold`` shows ``COMPLETING``, not
held, until Slurm requeues it held (15 s after the call on a loaded machine, seen live): the agent's hold record
must outlive that, or the hold then looks like its owner's and the job is left out for good."""
_T = TypeVar("_T")
TRANSIENT_REFUSALS = ("no longer pending", "try again in a bit")
"""Refusals of an update that pass: a job requeued a moment ago is still completing; a job submitted a moment ago
has no database index yet (``Job update not available right now, the DB index is being set, try again in a bit``,
seen live). The update is retried for up to ``requeue_wait_s``, then in the next round, a second later
(:data:`REFUSED_RETRY_S`)."""
USABLE_NODE_STATES = frozenset({"idle", "mixed", "allocated"})
"""Node states a round plans on; with power saving (:attr:`AgentConfig.power_save`) also ``off``."""
IDLE_SAID_CHANGE = 0.05
"""A learned idle power is logged again once it moved this share from the value the log last gave."""

MAX_STALL_RESTARTS = 3
"""Requeues of one job for making no progress; after that it is left running and the log says so. Counted in the
state file (``jobs.stall_restarts``), so a restarted agent does not start counting again."""


@dataclass(frozen=True, slots=True)
class Observed:
    """What Prometheus showed over one window: steps done per job at its end, energy per job and in all (J).

    ``cluster_energy_j``: every GPU's and every node's energy over the window, idle included (what an energy budget
    charges, :mod:`planner.agent.energy_budget`); None when the telemetry does not tell.

    ``idle_gpus``: per node (Slurm's name) the energy (J) its GPUs drew while powered with no job on them, and that
    time in GPU-windows (GPU-seconds over the window's length: 2.5 is two and a half GPUs idle the whole window);
    so ``J / (GPU-windows * window s)`` is the idle power per GPU (W). Empty when the telemetry does not tell.
    """

    steps_done: Mapping[str, float]
    job_energy_j: Mapping[str, float]
    cluster_energy_j: float | None = None
    idle_gpus: Mapping[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Window:
    """One window as the learner takes it: steps per job over it, GPU energy per job (J), the idle GPUs' power.

    ``length_s`` and ``start_s`` on the agent's clock (emulated s on an emulated cluster).
    """

    steps: Mapping[str, float]
    energy_j: Mapping[str, float]
    idle: list[GpuObservation]
    length_s: float
    start_s: float


class Observer(Protocol):
    """Reads a window ``[t0, t1]`` (Unix s) of telemetry; raises an exception with a message when it cannot."""

    def window(self, t0_unix: float, t1_unix: float) -> Observed:
        """The window's observations."""
        ...


_OPTIONS = AgentOptions()
"""The options' defaults: :class:`AgentConfig`'s defaults for what an option sets (``wattplan agent``'s record)."""


@dataclass
class AgentConfig:
    """Everything the loop needs besides Slurm and Prometheus (see ``wattplan agent --help``).

    Built from the options' record by :meth:`of`; a field an option sets defaults to the record's default, so the
    loop and the command line have one default each. The rest is the loop's own: the clock, the settings folder
    and the idle marker come from the cluster (:func:`planner.agent.run.environment`), the waits are fixed.
    """

    library: ProfileLibrary
    rules: RoundRules
    request: PlanRequest
    clock: Clock = field(default_factory=Clock)
    steering: Steering = field(default_factory=_OPTIONS.steering)
    """How each round's ``delta``, credit weight and tail bound are steered (``--max-jct-increase`` or
    ``--no-jct-bound``, ``--governor``, ``--delta-max``, ``--signal-aware``, ``--tail-bound``, ``--tail-pace``): the
    record the replay builds its own steering from (:class:`~planner.sim.governor.Steering`)."""
    signal: SignalClock | None = None
    """The carbon (else price) signal on the agent's clock (``--carbon``, ``--price``, ``--signal-start``)."""
    learn: bool = _OPTIONS.learn
    settings_dir: Path | None = None
    dry_run: bool = _OPTIONS.dry_run
    until_idle: bool = _OPTIONS.until_idle
    idle_marker: Path | None = None
    """With ``until_idle``: the loop ends only once this file exists too (the emulated cluster's submitter writes
    it when every job is submitted); None: once no managed job is queued."""
    max_rounds: int | None = _OPTIONS.max_rounds
    node_power_w: float | None = _OPTIONS.node_power_w
    guest_wait_s: float = 10.0
    """Real seconds (at most 80% of a round) to wait for a pair's host to start before releasing its guest: a
    requeued host is eligible again only after about 7 s (later rounds retry)."""
    requeue_wait_s: float = 3.0
    """Real seconds to retry an update Slurm refuses for now (a job requeued this round still completing, a job
    with no database index yet); then the next round starts a second later and tries again. Some refusals last:
    seen live, a job refused ``the DB index is being set, try again in a bit`` for 15 s in two rounds, each of
    them held up for those 15 s (450 emulated seconds at a time scale of 30)."""
    retry_s: tuple[float, ...] = (0.5, 1.0, 2.0)
    pairs: bool = False
    """Co-locate pairs. On Slurm a pair's guest holds no GPU of its own, so becoming a guest or losing one's host
    is a restart. With the Slurm start rule (the by-job mode) the round cannot make one (:mod:`planner.sim.pinned`):
    pairs form only when a job starts. Steered, the round model does not price it; measured live
    (benchmarks/RESULTS.md), 24 of 58 restarts were pair changes and 16 more moved a job to another node."""
    event_rounds: bool = _OPTIONS.event_rounds
    """Start a round early when a managed job arrives or leaves the queue (as Slurm starts a job at once); ``squeue``
    is read every ``poll_s`` real seconds. Where a round may restart running jobs, at least ``event_gap`` of a
    round after the last one; with the Slurm start rule (the by-job mode: no round restarts a running job) at the
    first poll that sees the change (:meth:`Agent.event_gap`)."""
    power_save: bool = _OPTIONS.power_save
    """Slurm powers idle nodes down (its power saving): the round prices what a powered node draws, powered-down
    nodes are planned on (Slurm boots one for a job) after the powered ones. False: every node stays on."""
    power_down: bool = _OPTIONS.power_down
    """With ``power_save``: power idle nodes down at once (``scontrol update NodeName=N State=POWER_DOWN``) unless the
    recent arrivals are expected to need them within ``power_cycle_s`` (:mod:`planner.agent.node_power`); False:
    Slurm's ``SuspendTime`` alone powers them down."""
    power_up: bool = _OPTIONS.power_up
    """With ``power_down``: also boot powered-down nodes ahead of the jobs when the last cycle's arrivals outrun the
    free GPUs (``scontrol update NodeName=N State=POWER_UP``; :func:`~planner.agent.node_power.choose_power_up`)."""
    power_cycle_s: float = _OPTIONS.power_cycle_s
    """A node's off-and-on cycle (s, agent clock): its shutdown (``SuspendTimeout``) and its boot, both at about idle
    draw; a node idle longer than this pays for being powered down (:mod:`planner.agent.node_power`)."""
    event_gap: float = 0.1
    """The least time between a round and the next one an event starts (a share of a round), where rounds may
    restart running jobs: it spaces the restarts of the steered mode (benchmarks/RESULTS.md, "Event rounds")."""
    periodic_rounds: bool = _OPTIONS.periodic_rounds
    """Start a round every ``round_s`` even when no managed job arrived or left. False: rounds start on those events
    only, and every ``round_s`` while no managed job runs (a round that left jobs waiting with nothing running, or
    that could not plan, is retried): a replay then plays as many rounds as there are events."""
    stall_s: float | None = None
    """A running job whose steps have not advanced for this long (s, agent clock; default the restart cost plus
    one round) since it started or last advanced is requeued (``no progress for N s``), at most
    :data:`MAX_STALL_RESTARTS` times. Only jobs whose progress Prometheus has shown before are judged: a job
    that exports no progress is never stopped for it. None: ``restart_s + duration_s``."""
    start_s: float = _OPTIONS.start_s
    """A job's own start-up time (s) in the JCT reference (:func:`~planner.agent.reference.slurm_reference`):
    what Slurm alone would spend before its first step; the learner takes a job's windows only after it
    (:meth:`Agent._learn`)."""
    durable_settings: bool = True
    """Write the nodes' setting files to the disk before going on (False only in a replay, whose files no node
    reads after a crash)."""
    poll_s: float = _OPTIONS.poll_s
    """Real seconds between two reads of Slurm's queue while waiting for the next round (``--poll-s``)."""
    allowed: Allowed = field(default_factory=_OPTIONS.allowed)
    """Whose opted-in jobs the agent acts on (``--allow-user``, ``--allow-account``; default: its own user's)."""
    policy: str = _OPTIONS.policy
    """The policy that decides each round (``--policy``; :mod:`planner.sim.policies.registry`), ``wattplan``: the
    round model through the front door with :attr:`request`."""
    zeus_eta: float = _OPTIONS.zeus_eta
    power_cap_w: float | None = _OPTIONS.power_cap_w
    """The cluster's power cap (W, ``--power-cap-w``): each round's plan keeps the jobs' power within what the cap
    leaves above the powered nodes' idle draw (:meth:`Agent._budget_j`). None: no cap."""
    power_cap_file: Path | None = _OPTIONS.power_cap_file
    """A cap that moves (``--power-cap-file``, :mod:`planner.agent.power_cap`): read every round, a change starts a
    round at once; ``power_cap_w`` is the cap until the file holds one."""
    power_cap_port: int | None = _OPTIONS.power_cap_port
    """Also take the cap over HTTP on this port (``--power-cap-port``, :mod:`planner.agent.cap_endpoint`), written
    into ``power_cap_file``; None: not served."""
    power_cap_address: str = _OPTIONS.power_cap_address
    power_cap_token_file: Path | None = _OPTIONS.power_cap_token_file
    energy_budget_kwh: float | None = _OPTIONS.energy_budget_kwh
    """At most this much energy (kWh) in every ``budget_period_s`` (``--energy-budget-kwh``,
    :mod:`planner.agent.energy_budget`): each round's plan is paced within what its period has left. None: none."""
    budget_period_s: float | None = _OPTIONS.budget_period_s
    budget_origin_s: float | None = None
    """Where the budget's periods start (agent clock, s); None: at the first round, kept in the state. A replay gives
    the cluster's start, where its energy count starts."""
    metrics_port: int | None = _OPTIONS.metrics_port
    """Serve the agent's own Prometheus metrics on this port (:mod:`planner.agent.metrics`); None: not served."""
    metrics_address: str = _OPTIONS.metrics_address
    stall_rounds: int | None = None
    """Stop once this many rounds in a row ran nothing while managed jobs waited and every job was submitted (the
    replay's stall rule, for a cap too small for any job); None (live): never."""

    @classmethod
    def of(cls, options: AgentOptions, library: ProfileLibrary) -> AgentConfig:
        """The loop's configuration of ``options`` (checked: :meth:`AgentOptions.checked`) and its profiles."""
        return cls(
            library,
            options.rules(),
            options.request(),
            steering=options.steering(),
            learn=options.learn,
            dry_run=options.dry_run,
            until_idle=options.until_idle,
            max_rounds=options.max_rounds,
            node_power_w=options.node_power_w,
            pairs=options.co_locates(),
            event_rounds=options.event_rounds,
            poll_s=options.poll_s,
            periodic_rounds=options.periodic_rounds,
            power_save=options.powers_down(),
            power_down=options.power_down,
            power_up=options.power_up,
            power_cycle_s=options.power_cycle_s,
            start_s=options.start_s,
            allowed=options.allowed(),
            policy=options.decision_policy(),
            zeus_eta=options.zeus_eta,
            power_cap_w=options.power_cap_w,
            power_cap_file=options.power_cap_file,
            power_cap_port=options.power_cap_port,
            power_cap_address=options.power_cap_address,
            power_cap_token_file=options.power_cap_token_file,
            energy_budget_kwh=options.energy_budget_kwh,
            budget_period_s=options.budget_period_s,
            metrics_port=options.metrics_port,
            metrics_address=options.metrics_address,
        )


@dataclass
class RoundReport:
    """One round's summary for the log and the tests."""

    index: int
    now_s: float
    queued: int = 0
    running: int = 0
    planned_run: int = 0
    planned_pairs: int = 0
    """Pairs the round's plan runs (two jobs on shared GPUs count once)."""
    status: str = ""
    calls: list[ActionOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overhead_s: float = 0.0
    solve_s: float = 0.0
    delta: float | None = None
    planned_power_w: float | None = None
    """The plan's GPU energy over its round (W); None when the round planned nothing."""
    outcome: str = ""
    """How the round ended, as the state records it (``done``, ``idle``, ``kept``, ``slurm-unreachable``, ...)."""
    measured_j: float = 0.0
    """GPU energy DCGM measured for the managed jobs over the window that ended at this round (J)."""
    budget: RoundShare | None = None
    """The round's place in its period of the energy budget and its paced share (None: no budget)."""
    budget_binds: bool = False
    """The budget's share, not the power cap, set what the round's plan may draw."""

    def figures(self) -> RoundFigures:
        """What the round adds to the agent's metrics (:mod:`planner.agent.metrics`)."""
        return RoundFigures(
            self.outcome or self.status,
            self.solve_s,
            self.overhead_s,
            tuple(self.calls),
            self.running,
            max(self.queued - self.running, 0),
            self.delta,
            self.planned_power_w,
            self.measured_j,
            len(self.notes),
        )

    def line(self) -> str:
        """One log line."""
        verbs: dict[str, int] = {}
        for c in self.calls:
            verb = c.call.verb
            verbs[verb] = verbs.get(verb, 0) + (len(c.call.jobs) or 1)  # a node's call counts the node
        calls = ", ".join(f"{v} {n}" for v, n in verbs.items()) or "none"
        delta = "" if self.delta is None else f" delta {self.delta:.3f};"
        budget = "" if self.budget is None else f" {self.budget.words()};"
        pairs = f", {self.planned_pairs} pair{'s' if self.planned_pairs > 1 else ''}" if self.planned_pairs else ""
        text = (
            f"round {self.index} t={self.now_s:.0f}s: {self.queued} queued, {self.running} running, "
            f"plan runs {self.planned_run} ({self.status}){pairs};{delta}{budget} calls: {calls}; "
            f"overhead {self.overhead_s:.2f} s, solve {self.solve_s:.2f} s"
        )
        return text + "".join(f"\n  {n}" for n in self.notes)


NO_CLUSTER_ENERGY = (
    "energy budget: the telemetry tells no cluster energy (GPU and node energy counters): nothing is charged"
)
"""Said once when the observer reports no cluster energy, so the energy budget cannot be kept."""
NOT_PENDING = "Job is no longer pending execution"
"""Slurm's refusal of a hold or an update of a job that runs. A hold it refuses so is a race with Slurm's own start
of a released job (the round read it pending), not an error: the job runs, and its update is not sent."""
BENIGN_REFUSALS = frozenset({"Job has already finished"})
"""Slurm's refusals of a call on a job that ended between the round's reading of the queue and the call: a race
with the job's own completion, not an error (a new user counted 15 of them, worded as errors, in one README run)."""
REFUSED_RETRY_S = 1.0
"""Real seconds from a round that left an update Slurm refused for now (a job still completing, a database index
not set yet), or left out a node powering down while jobs waited, to the next round, which tries again."""


def _passing(result: CommandResult) -> bool:
    """Slurm refused an update for a reason that passes in seconds (:data:`TRANSIENT_REFUSALS`)."""
    return result.returncode != 0 and any(m in result.stderr for m in TRANSIENT_REFUSALS)


def _idle_now(node: NodeState) -> bool:
    """``sinfo`` shows ``node`` powered and running nothing: base state idle, no flag but ``COMPLETING``."""
    base, *flags = node.slurm_state.split("+")
    return base == "idle" and set(flags) <= {"COMPLETING"}


def _booting_idle(node: NodeState) -> bool:
    """``sinfo`` shows ``node`` booting with no job (``idle#``: base state idle, flag ``POWERING_UP``)."""
    base, *flags = node.slurm_state.split("+")
    return base == "idle" and "POWERING_UP" in flags


def _starting(decision: Decision, placements: Mapping[int, object]) -> dict[str, int]:
    """GPUs per node of the jobs ``decision`` starts (run, not a guest, not yet placed): nodes Slurm fills now."""
    out: dict[str, int] = {}
    for d in decision.desired:
        if d.state != "run" or d.host_job is not None or not d.hosts or not d.job_id.isdigit():
            continue
        if int(d.job_id) in placements:
            continue
        for host in d.hosts:
            out[host] = out.get(host, 0) + (d.gpus or 0) // len(d.hosts)
    return out


def _node_key(name: str) -> tuple[str, int, str]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1, name)


class Agent:
    """The loop's state between rounds (module docstring)."""

    def __init__(
        self,
        config: AgentConfig,
        store: AgentStore,
        run: Run,
        observer: Observer | None,
        log: Callable[[str], None],
        timer: Timer | None = None,
        generation: Generation = LEGACY,
    ):
        self.cfg = config
        self.timer: Timer = timer if timer is not None else WallTimer()
        """Where the loop reads the time and waits (the wall clock; a virtual one in a replay)."""
        self.store = store
        self.run = run
        self.generation = generation
        """The JSON generation Slurm is asked for (its release decides: :mod:`planner.agent.slurm_schema`)."""
        self.observer = observer
        self.log = log
        self.stop_requested = False
        self.stop_signal: int | None = None
        """The signal that stopped the loop (SIGTERM, SIGINT), if one did: a replay then stops as interrupted."""
        self._settled = False
        """The last round ended with a plan that runs jobs (or with no job queued): without periodic rounds, the
        next one waits for an event."""
        self._retry_soon = False
        """The last round left an update Slurm refused for now, or a node powering down while jobs wait: the next
        round starts :data:`REFUSED_RETRY_S` later."""
        self._powering_down = False
        """The last round left out a node Slurm was powering down (``POWERING_DOWN``)."""
        self._reserved: set[str] = set()
        """The idle nodes the power-down rule has kept on for a burst beyond the mean rule, each said once in an idle
        stretch (:attr:`~planner.agent.node_power.PowerDownChoice.reserved`)."""
        self.learner: ProfileLearner | None = None
        self.steering = LiveSteering(config.steering, config.rules, config.start_s, config.signal)
        """Each round's ``delta``, credit weight and tail bound (:mod:`planner.agent.steering`)."""
        knobs = PolicyOptions(zeus_eta=config.zeus_eta, request=config.request)
        self.policy: Policy = make_policy(config.policy, knobs)
        """What decides each round: the replay's policies, by name (a bad name raised before any round)."""
        self._last_round_unix: float | None = None
        self._last_running: dict[str, tuple[str, int, int, str | None]] = {}
        """Per running job what it runs at, as of this round's read (before its decision): what ran in the window
        that ended at this round."""
        self._prev_steps: dict[str, float] = {}
        self._unlearned: _Window | None = None
        """The window read this round, kept for the learner until the round knows what ran in it (:meth:`_learn`)."""
        self._placements: dict[int, tuple[tuple[str, tuple[int, ...]], ...]] = {}
        self._active_ids: frozenset[str] = frozenset()
        self._gpus_per_host: dict[str, int] = {}
        self._observed = False
        self._advanced_at: dict[str, float] = {}
        self._seen_steps: dict[str, float] = {}
        self._running_since: dict[str, float] = {}
        self._measured: set[str] = set()
        """Jobs whose steps Prometheus has shown: measured, never estimated (:mod:`.progress_estimate`)."""
        self._windows_read = 0
        """Prometheus windows read since this agent started (a restarted agent estimates nothing before one)."""
        self._node_types: dict[str, str] = {}
        """Each node's GPU type as Slurm last listed it (the learner's idle power is per GPU type)."""
        self._idle_said: dict[str, float] = {}
        """The learned idle power per GPU type the log last gave (W)."""
        self._run_start: dict[str, float] = {}
        """Per running job, when Slurm started its current run (agent clock, s), as of the last round."""
        self._stepping_since: dict[str, float] = {}
        """Per running job, the first read (agent clock, s) that saw its steps advance in its current run: its load
        was over by then, whatever ``--start-s`` says (:meth:`_learn`)."""
        self._rates: tuple[ProfileLibrary, RateIndex] | None = None
        self._estimated_said: set[str] = set()
        self.metrics: AgentMetrics | None = None
        """The agent's own Prometheus metrics, when served (``--metrics-port``)."""
        self._reference_tally = ReferenceTally()
        """The completed jobs against their reference, for the metrics (recomputed when a job completes)."""
        self._stored_reference: object = None
        """The reference runs last written to the state (rewritten when the steering rebuilds them)."""
        self._cap = CapFile(config.power_cap_file, config.power_cap_w) if config.power_cap_file is not None else None
        """The cap file, when the cap moves; else the cap is ``power_cap_w`` throughout."""
        self._said: set[tuple[str, str]] = set()
        """``(job id, why)`` of jobs left alone that the log named already (each is said once)."""
        self._window_start_s = 0.0
        self._window_end_s: float | None = None
        """The agent's time at the end of the last window read (None: none read)."""
        self._window_energy: dict[str, float] = {}
        """Each job's GPU energy in the last window read (J)."""
        self._idle_seen: dict[str, float] = {}
        """Per GPU type, the least power per GPU a job running alone drew over a window (W): its idle power once a
        job has loaded in a window (:mod:`.progress_estimate`)."""
        self._metered: frozenset[str] = frozenset()
        """Jobs that drew GPU energy in the last window, as DCGM's job mapping names them."""
        self._metered_at: dict[str, float] = {}
        """Per job, the end (emulated s) of the last window in which DCGM named GPU energy after it."""
        self.ledger: EnergyLedger | None = None
        """The energy budget over a period (``--energy-budget-kwh``), its spending kept in the state; None: none."""
        if config.energy_budget_kwh is not None:
            if config.budget_period_s is None:
                raise ValueError("an energy budget needs its period (budget_period_s, --budget-period-s)")
            kwh = config.energy_budget_kwh
            self.ledger = EnergyLedger(store, kwh * J_PER_KWH, config.budget_period_s, config.budget_origin_s)
        self._window_cluster_j: float | None = None
        """The whole cluster's energy in the window read this round (J); None: not read, or not told."""
        self._window_failed = False
        """This round's window could not be read."""
        self.stop_reason: str | None = None
        """Why the loop stopped itself (``stalled``, ``budget-exhausted``); None: it did not."""
        for rnd, argv in store.interrupted():
            self.log(
                f"restart: round {rnd} was interrupted before '{' '.join(argv)}' had an outcome; "
                "this round derives its calls from what Slurm shows now"
            )

    # ------------------------------------------------------------------ reading

    def _with_retries(self, what: str, fn: Callable[[], _T]) -> _T:
        last: Exception | None = None
        for wait in (*self.cfg.retry_s, None):
            try:
                return fn()
            except SlurmError as e:
                last = e
                if wait is None or self.stop_requested:
                    break
                self.timer.sleep(wait)
        raise SlurmError(f"{what}: {last}")

    def _context(
        self, nodes: Sequence[NodeState], busy_hosts: set[str]
    ) -> tuple[ClusterContext, dict[str, str], list[str]]:
        """The round's cluster (usable nodes by GPU type) and the plan-node -> host map; notes on left-out nodes."""
        by_type: dict[str, list[NodeState]] = {}
        notes: list[str] = []
        per_node: set[int] = set()
        usable = USABLE_NODE_STATES | ({"off"} if self.cfg.power_save else set())
        for n in sorted(nodes, key=lambda n: (n.state == "off", _node_key(n.name))):  # powered nodes fill first
            if n.gpu_type is None or n.gpus == 0:
                continue
            self._node_types[n.name] = n.gpu_type
            if n.state not in usable:
                notes.append(f"node {n.name} is {n.slurm_state.lower()}: left out")
                self._powering_down = self._powering_down or POWERING_DOWN in n.slurm_state.split("+")
                continue
            if n.name in busy_hosts:
                notes.append(f"node {n.name} runs jobs wattplan does not manage: left out")
                continue
            by_type.setdefault(n.gpu_type, []).append(n)
            per_node.add(n.gpus)
        types = [t for t in by_type if t in self.cfg.library.gpu_types]
        for t in by_type:
            if t not in self.cfg.library.gpu_types:
                notes.append(f"GPU type {t!r} has no profiles: its {len(by_type[t])} nodes are left out")
        if len(per_node) > 1:
            raise SlurmError(f"nodes have different GPU counts {sorted(per_node)}; the round model needs one")
        k = per_node.pop() if per_node else 8
        spec = ClusterSpec(
            tuple((t, len(by_type[t]) * k) for t in types),
            gpus_per_node=k,
            **({"node_power_w": self.cfg.node_power_w} if self.cfg.node_power_w is not None else {}),
        )
        host_of = {f"{t}-{i}": n.name for t in types for i, n in enumerate(by_type[t])}
        ctx = cluster_context(spec, self.cfg.library, self.cfg.rules) if types else None
        if ctx is None:
            raise SlurmError("no usable node has a profiled GPU type")
        return ctx, host_of, notes

    # ------------------------------------------------------------------ one round

    def round(self) -> RoundReport:
        """Play one round (module docstring); never raises for Slurm, Prometheus or planning faults."""
        self._settled = self._retry_soon = self._powering_down = False
        t_start = time.monotonic()  # the agent's own cost, in real time even in a replay
        unix = self.timer.unix()
        now_s = self.cfg.clock.at(unix)
        rnd = self.store.next_round()
        report = RoundReport(rnd, now_s)
        self.store.begin_round(rnd, unix, now_s)
        if self.ledger is not None:
            self.ledger.start(now_s)  # the first round is the budget's origin unless the state or a replay has one
        if self._cap is not None and (said := self._cap.read()) is not None:
            report.notes.append(said)
        try:
            queue = self._with_retries("squeue", lambda: query_queue(self.run, self.generation))
            nodes = self._with_retries("sinfo", lambda: query_nodes(self.run, self.generation))
            placements = self._with_retries("scontrol show job", lambda: query_job_gpus(self.run))
        except SlurmError as e:
            report.status = "slurm-unreachable"
            report.notes.append(f"Slurm did not answer ({e}); what runs is kept")
            self._finish(report, t_start, "kept")
            return report
        for p in (*queue.problems, *nodes.problems):
            report.notes.append(f"Slurm: {p.path}: {p.message}")
        managed = self._admitted(queue, report)
        self._active_ids = frozenset(jid for jid, j in managed.items() if j.state in ACTIVE_STATES)
        self._placements = dict(placements)
        self._gpus_per_host = {n.name: n.gpus for n in nodes.nodes}
        seen_before = set(self.store.known_jobs())
        known = self._remember(managed, queue.listed, rnd, now_s, report)
        active = {jid: j for jid, j in managed.items() if j.state in ACTIVE_STATES and jid in known}
        active = self._without_foreign_holds(active, seen_before, rnd, report)
        self._observe(unix, now_s, report)
        self._charge(unix, now_s, report)
        known = self.store.known_jobs()
        busy_hosts = self._unmanaged_hosts(placements, set(managed))
        try:
            ctx, host_of, notes = self._context(nodes.nodes, busy_hosts)
        except SlurmError as e:
            report.status = "no-nodes"
            report.notes.append(str(e))
            self._finish(report, t_start, "kept")
            return report
        report.notes.extend(notes)
        desired = self.store.desired()
        states, now_jobs, skipped = self._job_states(ctx, known, active, placements, host_of, desired, now_s)
        report.notes.extend(skipped)
        self._learn(rnd, report.notes)
        settling = {jid for jid, j in active.items() if j.state in SETTLING_STATES}
        queued = [s for s in states if not s.done and s.id in active and s.id not in settling]
        report.queued = len(queued)
        report.running = sum(1 for s in queued if now_jobs[s.id].running)
        if not queued:
            report.status = "idle"
            self._settled = True
            self._node_power(nodes.nodes, host_of, known, {}, 0, now_s, rnd, report)
            self._finish(report, t_start, "done")
            return report
        if self.cfg.learn and self.learner is None:  # its prior: the first round's cluster and profiles
            self.learner, rounds_seen = restored_learner(ctx, self.store)
            if rounds_seen:
                report.notes.append(f"learner: took back what it was shown in {rounds_seen} earlier round(s)")
                self._say_idle_learned(report.notes)
        seen_ctx = ctx if self.learner is None else replace(self.learner.context(), gpu_types=ctx.gpu_types)
        if not self.cfg.power_save:
            seen_ctx = nodes_stay_on(seen_ctx)  # no node is powered down (docs/design.md 11.6)
        report.budget = self._share(ctx, now_s, report)
        budget_j = self._budget_j(ctx, report)
        steer = self.steering.round(ctx, seen_ctx, states, queued, now_s, budget_j)
        runs = self.steering.reference_runs
        if runs is not self._stored_reference:  # rebuilt: the jobs seen changed
            self.store.set_reference({j: None if r is None else (r.finish_s, r.energy_j) for j, r in runs.items()})
            self._stored_reference = runs
        delta = steer.delta
        report.delta = delta
        instance = round_instance(seen_ctx, rnd, now_s, queued, budget_j, delta, steer.credit_weight, steer.min_steps)
        if not self.cfg.pairs:
            instance = replace(instance, pairs=())
        t_solve = time.monotonic()
        try:
            plan = self._plan(instance, queued, now_s)
        except (InputError, ValueError, RuntimeError) as e:
            report.solve_s = time.monotonic() - t_solve
            report.status = "kept"
            report.notes.append(f"the round could not be planned ({str(e).splitlines()[0]}); what runs is kept")
            self._finish(report, t_start, "kept")
            return report
        report.solve_s = time.monotonic() - t_solve
        plan = with_every_node_on(instance, plan)  # keep jobs where they run: a move is a restart on Slurm
        report.status = f"{plan.round.status} by {plan.round.solver}"
        report.planned_run = len(plan.running())
        report.planned_pairs = sum(1 for e in plan.running() if e.shares_with is not None) // 2
        booting = frozenset(jid for jid, j in active.items() if j.state == "CONFIGURING")
        now_jobs = self._mark_stalled(now_jobs, now_s, report, booting)
        decision = decide(instance, plan, now_jobs, host_of, rnd)
        self._runs_end(decision.requeued)
        if decision.why:
            report.notes.append("requeued: " + ", ".join(f"{j} ({w})" for j, w in decision.why.items()))
        self._apply(rnd, decision, report)
        self._settled = report.planned_run > 0
        waiting = report.queued - report.planned_run
        starting = _starting(decision, self._placements)
        self._node_power(nodes.nodes, host_of, known, starting, waiting, now_s, rnd, report)
        # a node powering down is left out until it is off, which no queue event announces: while jobs wait for
        # GPUs, look again a second later rather than a round later (it is plannable, and bootable, once off)
        self._retry_soon = self._retry_soon or (self._powering_down and report.planned_run < report.queued)
        if plan.round.energy_j is not None and instance.round.duration_s > 0:
            report.planned_power_w = plan.round.energy_j / instance.round.duration_s
        self._finish(
            report,
            t_start,
            "done",
            objective=instance.round.objective,
            solver=plan.round.solver,
            plan_status=plan.round.status,
            energy_j=plan.round.energy_j,
            running=report.planned_run,
            waiting=len(queued) - report.planned_run,
            delta=delta,
        )
        return report

    def _node_power(
        self,
        nodes: Sequence[NodeState],
        host_of: Mapping[str, str],
        known: Mapping[str, KnownJob],
        starting: Mapping[str, int],
        waiting: int,
        now_s: float,
        rnd: int,
        report: RoundReport,
    ) -> None:
        """Power idle nodes down no job is expected to need soon; boot nodes ahead of a burst (:mod:`.node_power`).

        Power-down with ``--power-down``, power-up with ``--power-up`` too. Only nodes the round plans on
        (``host_of``: a profiled GPU type, no job wattplan does not manage).

        Power-down: those Slurm's power saving does not leave on (``SuspendExcNodes``, ``SuspendExcParts``: read each
        time, nothing powered down when they cannot be read), that are powered and idle (``sinfo``: no job holds a
        CPU; no flag but ``COMPLETING``, an epilog ending, so no power-down pending and no boot), whose GPUs no job
        holds (``scontrol show job -d``: a job that ended lists its node with no GPU until ``MinJobAge``) and to which
        this round's plan starts no job (``starting``: GPUs per node). ``free`` counts the free GPUs of the usable
        nodes that run or start jobs. One ``scontrol update NodeName=N State=POWER_DOWN`` per node (on a node still
        completing, Slurm powers it down once the epilog ends).

        Power-up: the usable nodes ``sinfo`` shows powered down (not drained) to which this round starts no job
        (Slurm boots those for it), booted by one ``scontrol update NodeName=N State=POWER_UP`` each; the reserve
        counts the idle nodes and those booting with no job (``idle#``). A round that boots powers nothing down.
        """
        if not (self.cfg.power_down and self.cfg.power_save):
            return
        usable = set(host_of.values())
        used: dict[str, int] = dict(starting)
        for alloc in self._placements.values():
            for host, gpus in alloc:
                if gpus:
                    used[host] = used.get(host, 0) + len(gpus)
        mine = sorted((n for n in nodes if n.name in usable), key=lambda n: _node_key(n.name))
        idle = [n for n in mine if _idle_now(n) and n.name not in used]
        booting = [n for n in mine if _booting_idle(n) and n.name not in used]
        free = sum(max(n.gpus - used[n.name], 0) for n in mine if n.name in used and n.state in ("mixed", "idle"))
        arrivals = [(k.arrival_s, k.requested_gpus) for k in known.values()]
        watched = now_s - min((t for t, _ in arrivals), default=now_s)  # since the first arrival it knows of
        k = max((n.gpus for n in mine), default=1)
        if self.cfg.power_up:
            off = [n.name for n in mine if n.state == "off" and n.name not in used]  # not one Slurm boots for a job
            ends = [(j.ended_s, j.requested_gpus) for j in known.values() if j.ended_s is not None]
            standing = len(idle) + len(booting)
            rise = choose_power_up(off, standing, k, free, arrivals, ends, now_s, watched, self.cfg.power_cycle_s)
            if rise.up:
                report.notes.append(f"booting powered-down node(s) {', '.join(rise.up)}: {rise.why}")
                self._send_node_calls(rnd, [power_up_call(name) for name in rise.up], report)
                return

        share = self._boot_wait_share(known, now_s) if idle else 1.0  # no idle node: nothing to price

        def choose(candidates: Sequence[NodeState]) -> PowerDownChoice:
            names = [n.name for n in candidates]
            cycle = self.cfg.power_cycle_s
            return choose_power_down(
                names, k, free, arrivals, now_s, watched, cycle, waiting, WINDOW_S, overflow_share=share
            )

        first = choose(idle)
        self._reserved &= {n.name for n in idle}  # said once a node's idle stretch, not every round it holds
        if fresh := [name for name in first.reserved if name not in self._reserved]:
            self._reserved |= set(fresh)
            report.notes.append(f"keeping idle node(s) {', '.join(fresh)} on for a burst: {first.why}")
        if not first.down:  # Slurm's configuration is read only when a node would go down
            return
        try:
            kept_on = power_save_excluded(query_slurm_config(self.run), nodes)
        except (SlurmError, ValueError) as e:
            report.notes.append(f"no node powered down: Slurm's power-saving exclusions cannot be read ({e})")
            return
        choice = choose([n for n in idle if n.name not in kept_on])
        if not choice.down:
            return
        report.notes.append(f"powering down idle node(s) {', '.join(choice.down)}: {choice.why}")
        self._send_node_calls(rnd, [power_down_call(name) for name in choice.down], report)

    def _boot_wait_share(self, known: Mapping[str, KnownJob], now_s: float) -> float:
        """``q``: the share of jobs the JCT limit lets wait a boot (:func:`~planner.agent.node_power.boot_wait_share`).

        ``J`` is the median JCT Slurm alone gives the jobs that arrived in the last hour (the reference,
        :attr:`LiveSteering.reference_runs`), all jobs seen when none did; ``R`` the cycle less the shutdown.
        """
        runs = self.steering.reference_runs
        jcts = [(j.arrival_s, run.finish_s - j.arrival_s) for jid, j in known.items() if (run := runs.get(jid))]
        recent = [v for t, v in jcts if t >= now_s - WINDOW_S] or [v for _, v in jcts]
        if not recent:
            return 1.0
        steer = self.cfg.steering
        limit = tightest_limit(self.cfg.rules.max_slowdown, steer.max_increase, steer.tail_bound)
        return boot_wait_share(limit, statistics.median(recent), self.cfg.power_cycle_s - SHUTDOWN_S)

    def _send_node_calls(self, rnd: int, node_calls: Sequence[SlurmCall], report: RoundReport) -> None:
        """Send each node's power call (recorded as an intent first; only noted in a dry run)."""
        for call in node_calls:
            if self.cfg.dry_run:
                report.calls.append(ActionOutcome(call, False, None, "", ""))
                continue
            (action_id,) = self.store.commit_intent(rnd, [], [(call.argv, call.jobs)])
            self._record(action_id, call, self.run(call.argv), report)

    def cap_w(self) -> float | None:
        """The cluster's power cap now (W): the cap file's last value, else ``--power-cap-w``; None: no cap."""
        return self._cap.cap_w if self._cap is not None else self.cfg.power_cap_w

    def _budget_j(self, ctx: ClusterContext, report: RoundReport | None = None) -> float | None:
        """The round's budget (J) for what the round prices, under the cap (:meth:`cap_w`) and the budget's share.

        With every node on (:func:`~planner.sim.round_instance.nodes_stay_on`) the round instance prices a job's
        power above its GPUs' idle power only: the cap less the powered cluster's idle draw
        (``sum_g N_g (Pnode_g + K_g Pidle_g)`` over the usable nodes) is what the jobs may add, for the round's
        length ``T``. With power saving the round prices the powered nodes too: ``cap x T``. The energy budget's
        share ``S_r`` (``report.budget``, :meth:`_share`) leaves the same way ``S_r - T sum_g N_g (Pnode_g + K_g
        Pidle_g)`` (0 at least), with power saving ``S_r``; with both, the smaller. None with neither.
        """
        duration = ctx.rules.duration_s
        idle_j = self._committed_w(ctx) * duration
        cap = self.cap_w()
        cap_j = None if cap is None else max(0.0, cap * duration - idle_j)
        if report is None or report.budget is None:
            return cap_j
        share_j = max(0.0, report.budget.share_j - idle_j)
        report.budget_binds = cap_j is None or share_j <= cap_j
        return share_j if cap_j is None else min(cap_j, share_j)

    def _committed_w(self, ctx: ClusterContext) -> float:
        """The draw no plan changes (W), which the round does not price.

        With every node on, the usable nodes' idle power ``sum_g N_g (Pnode_g + K_g Pidle_g)``; with power saving 0
        (the round prices every powered node).
        """
        return 0.0 if self.cfg.power_save else sum(g.nodes * g.powered_node_w for g in ctx.gpu_types)

    def _share(self, ctx: ClusterContext, now_s: float, report: RoundReport) -> RoundShare | None:
        """The round's paced share of the energy budget (:mod:`planner.agent.energy_budget`); None without one.

        ``B_min`` is one node of the most power-hungry GPU type at full power for the round
        (:func:`~planner.sim.budget.one_node_round_j`); with every node on, the powered nodes' idle draw ``I`` is
        what the rest of the period draws whatever runs, and the floor leaves it that. A spent period says so
        (once): its jobs wait for the next one.
        """
        if self.ledger is None:
            return None
        idle_w = self._committed_w(ctx)
        share = self.ledger.share(now_s, ctx.rules.duration_s, one_node_round_j(ctx), idle_w)
        if share.left_j <= 0.0:
            said = (
                f"energy budget of period {share.period} spent: jobs wait until it renews at {share.period_end_s:.0f} s"
            )
            self._say_once(report, f"period {share.period}", "budget spent", said)
        return share

    def _plan(self, instance: Instance, queued: Sequence[JobState], now_s: float) -> Plan:
        """The policy's decision for the round, placed and validated as the replay places it.

        A plan the validator rejects is a bug of the policy (:class:`InvalidPlanError`): the round keeps what runs.
        """
        decision = self.policy.decide(instance, replay_round(now_s, queued))
        info = SolveInfo(solver=decision.solver, status=decision.status)
        plan = assemble_plan(instance, decision.allocations, info)
        if problems := validate_plan(instance, plan):
            raise InvalidPlanError(f"{self.policy.name} (round {instance.round.index})", problems)
        return plan

    def _admitted(self, queue: QueueRead, report: RoundReport | None) -> dict[str, ManagedJob]:
        """The opted-in jobs of allowed users and accounts, by id; the others are named once and left alone."""
        out: dict[str, ManagedJob] = {}
        for j in queue.jobs:
            jid = str(j.job_id)
            if self.cfg.allowed.admits(j):
                out[jid] = j
            elif report is not None and j.state in ACTIVE_STATES:
                owner = f"user {j.user_name!r}" + (f", account {j.account!r}" if j.account else "")
                self._say_once(
                    report,
                    jid,
                    "not allowed",
                    f"job {jid} opted in but belongs to {owner}, not to the allowed "
                    f"{self.cfg.allowed.describe()} (--allow-user, --allow-account): left alone",
                )
        return out

    def _without_foreign_holds(
        self, active: Mapping[str, ManagedJob], seen_before: set[str], rnd: int, report: RoundReport
    ) -> dict[str, ManagedJob]:
        """``active`` without jobs held by someone else than the agent (trust rule 2), holds recorded.

        A job's submission hold (``JobHeldUser`` the first time the agent sees it) is adopted; the hold record of
        a job Slurm shows not held is dropped.
        """
        holds = self.store.agent_holds()
        gone = [jid for jid, j in active.items() if not j.held and j.state in HOLD_SHOWN_STATES and jid in holds]
        adopted = [jid for jid, j in active.items() if jid not in seen_before and j.held and j.reason == USER_HOLD]
        self.store.drop_holds(gone)
        self.store.adopt_holds(adopted, rnd)
        holds = (holds - set(gone)) | set(adopted)
        out: dict[str, ManagedJob] = {}
        for jid, j in active.items():
            why = foreign_hold(j, holds)
            if why is None:
                out[jid] = j
            else:
                self._say_once(report, jid, why, f"job {jid} is {why}: left alone until it is released")
        return out

    def _metric_figures(self, report: RoundReport) -> RoundFigures:
        """What the round adds to the metrics: its figures, the reference tally and the jobs' release waits."""
        clock = self.cfg.clock
        waits = release_waits(self.store.db, clock.at, rounds=(report.index,)) if report.index >= 0 else []
        return replace(
            report.figures(),
            against=self._reference_tally.update(self.store.db),
            release_waits_s=tuple(clock.real_s(w) for w in waits),
        )

    def _say_once(self, report: RoundReport, job_id: str, key: str, text: str) -> None:
        if (job_id, key) not in self._said:
            self._said.add((job_id, key))
            report.notes.append(text)

    def _finish(self, report: RoundReport, t_start: float, status: str, **fields: object) -> None:
        report.overhead_s = time.monotonic() - t_start - report.solve_s
        report.outcome = status
        if report.budget is not None:
            fields["budget_share_j"] = report.budget.share_j
        self.store.finish_round(
            report.index,
            status,
            note="\n".join(report.notes)[:4000],
            overhead_s=report.overhead_s,
            solve_s=report.solve_s,
            **fields,
        )

    def _remember(
        self, managed: Mapping[str, ManagedJob], listed: frozenset[int], rnd: int, now_s: float, report: RoundReport
    ) -> dict[str, KnownJob]:
        """Record new managed jobs and those that left the queue; the jobs the store knows.

        A job Slurm still lists but that could not be read this round (a problem is logged) is not ended.
        """
        known = self.store.known_jobs()
        for jid, j in managed.items():
            if jid not in known and j.state in ACTIVE_STATES:
                requested = max(j.gpus_per_node, 1) * max(j.node_count, 1)
                arrival = self.cfg.clock.at(j.submit_time_s)
                self.store.add_job(jid, j.job_type, float(j.total_steps), requested, arrival, rnd)
        for jid, k in known.items():
            if k.ended:
                continue
            last = managed.get(jid)
            if (last is not None and last.state in ACTIVE_STATES) or (last is None and int(jid) in listed):
                continue
            state = last.state if last is not None else "GONE"
            reason = {
                "COMPLETED": "completed",
                "CANCELLED": "cancelled (by its user or an operator)",
                "FAILED": "failed",
                "GONE": "no longer listed by Slurm",
            }.get(state, state.lower())
            if state != "COMPLETED":
                report.notes.append(f"job {jid} ({k.job_type}) ended: {reason}")
            self.store.end_job(jid, state, reason, rnd, now_s)
            if not self.cfg.dry_run and self.cfg.settings_dir is not None:
                (self.cfg.settings_dir / f"{jid}.conf").unlink(missing_ok=True)
        return self.store.known_jobs()

    def _mark_stalled(
        self,
        now_jobs: Mapping[str, SlurmJobNow],
        now_s: float,
        report: RoundReport,
        booting: frozenset[str] = frozenset(),
    ) -> dict[str, SlurmJobNow]:
        """Slurm's view with ``stalled`` set on running jobs that are stuck or unmetered.

        A job whose nodes still boot (``booting``: Slurm's ``CONFIGURING``, power saving) has not started its run:
        its prolog has not run, so DCGM maps no GPU to it and it makes no progress; it is judged from the first
        round that sees it running. Judged while it booted, every job given a powered-down node was requeued as
        unmetered on the emulated cluster.

        Stuck: no progress for ``stall_s`` (see there); unmetered: a whole window, and at least
        :data:`UNMETERED_REAL_S` since the job was last metered or first seen running, without any GPU energy
        named after the job. A job is judged only in a round whose window Prometheus answered. No progress: only once
        its progress has been seen; the time without progress counts from the later of its last advance and the
        first round that saw it running in its current run. No energy: only when other jobs drew energy in the
        window (the exporter works). Such a job is not in DCGM's job mapping, so the prolog did not run for this
        run: seen live when Slurm relaunched a requeued job on the same node a few seconds after its epilog
        (most likely slurmd's credential state still held the job id, and slurmd runs the prolog only for a job
        id it does not hold). It then runs at the GPUs' default setting and unmetered, or, on the emulated
        cluster, on no GPU at all. Both share the :data:`MAX_STALL_RESTARTS` requeues.
        """
        rules = self.cfg.rules
        limit = self.cfg.stall_s if self.cfg.stall_s is not None else rules.restart_s + rules.duration_s
        out = dict(now_jobs)
        for jid, sj in now_jobs.items():
            if not sj.running or jid in booting:
                self._running_since.pop(jid, None)
                continue
            since = self._running_since.setdefault(jid, now_s)
            if not self._observed:
                continue
            quiet_s = now_s - max(since, self._metered_at.get(jid, since))
            unmetered = (
                since <= self._window_start_s < now_s
                and bool(self._metered)
                and jid not in self._metered
                and self.cfg.clock.real_s(quiet_s) >= UNMETERED_REAL_S
            )
            idle_s = now_s - max(since, self._advanced_at.get(jid, now_s))
            if not unmetered and (jid not in self._advanced_at or idle_s <= limit):
                continue
            done = self.store.stall_restarts(jid)
            if done >= MAX_STALL_RESTARTS:
                if done == MAX_STALL_RESTARTS:
                    what = "drawn no GPU energy" if unmetered else f"made no progress for {idle_s:.0f} s"
                    report.notes.append(f"job {jid} has {what} after {done} restarts: left running")
                    self.store.set_stall_restarts(jid, done + 1)
                continue
            self.store.set_stall_restarts(jid, done + 1)
            self._running_since.pop(jid, None)
            why = (
                f"no GPU energy for {now_s - self._window_start_s:.0f} s: not in DCGM's job mapping"
                if unmetered
                else f"no progress for {idle_s:.0f} s"
            )
            out[jid] = replace(sj, stalled=why)
        return out

    def _runs_end(self, requeued: Sequence[str]) -> None:
        """The runs of ``requeued`` end this round: a job's next run is judged from the round that sees it running.

        Without this a job requeued by one round and started again just before the next (its requeue delay as long
        as the gap between the rounds) was judged by the whole window, which it spent waiting: it drew no energy,
        and was requeued again as not in DCGM's job mapping (seen on the simulated Slurm).
        """
        for jid in requeued:
            self._running_since.pop(jid, None)

    def _unmanaged_hosts(
        self, placements: Mapping[int, tuple[tuple[str, tuple[int, ...]], ...]], managed: set[str]
    ) -> set[str]:
        return {h for jid, hosts in placements.items() if str(jid) not in managed for h, idx in hosts if idx}

    def _observe(self, unix: float, now_s: float, report: RoundReport) -> None:
        """Read the window since the last round; update progress and (``--learn``) the learner.

        The steps of a job Prometheus never showed are estimated as the round reads what runs
        (:meth:`_estimated_steps`), with or without Prometheus.
        """
        last = self._last_round_unix
        self._last_round_unix = unix
        self._observed = self._window_failed = False
        self._window_cluster_j = None
        if last is None or self.observer is None:
            return
        self._read_window(last, unix, now_s, report)

    def _charge(self, unix: float, now_s: float, report: RoundReport) -> None:
        """Charge the energy budget what the cluster drew since the last window charged, up to ``now_s``.

        The windows the ledger charges tile the time from the budget's origin (:mod:`planner.agent.energy_budget`):
        this round's window when it starts there; otherwise (the replay's first round after the cluster's start, a
        restarted agent's first, the round after one whose window could not be read) the whole stretch since the
        last one charged, read at once. A round whose window could not be read charges nothing: the next read covers
        it. When that stretch cannot be read (Prometheus no longer holds it, or not within the round's time), this
        round's window is charged and the stretch before it is not, and said so: the cluster's energy is never
        guessed, and the budget is never left uncharged for good.
        """
        ledger = self.ledger
        if ledger is None or self.observer is None or self._window_failed:
            return
        since = ledger.charged_to_s()
        if now_s - since <= SAME_S:
            return
        window_j = self._window_cluster_j
        if self._observed and window_j is None:
            self._say_once(report, "", "no cluster energy", NO_CLUSTER_ENERGY)
            return
        start = self._window_start_s
        own_j = window_j if self._observed and start >= since - SAME_S else None  # this round's, not overlapping
        if own_j is not None and start - since <= SAME_S:
            ledger.charge(since, now_s, own_j)
            return
        try:
            seen = self.observer.window(self.cfg.clock.unix_at(since), unix)
        except Exception as e:  # noqa: BLE001 - an unreachable Prometheus must not stop the loop
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            if own_j is None:
                report.notes.append(f"energy budget: the cluster's energy since {since:.0f} s not read ({why})")
                return
            # charge this round's window: a stretch that cannot be read must not stop the budget for good
            report.notes.append(
                f"energy budget: the cluster's energy over {since:.0f}-{start:.0f} s not read ({why}): not charged"
            )
            ledger.charge(start, now_s, own_j)
            return
        if seen.cluster_energy_j is None:
            self._say_once(report, "", "no cluster energy", NO_CLUSTER_ENERGY)
            return
        ledger.charge(since, now_s, seen.cluster_energy_j)

    def _estimated_steps(
        self, k: KnownJob, current: CurrentConfig, known: Mapping[str, KnownJob], now_s: float
    ) -> float | None:
        """The steps of a running job that exports none, credited up to ``now_s`` (:mod:`.progress_estimate`).

        ``current`` is what it runs at: the setting and partner of the agent's last decision, which the node scripts
        applied when it was made (or at its run's start). None: the job's steps are measured, or the profiles have
        no rate for what it runs at, or Slurm gave no start time.
        """
        if k.job_id in self._measured or k.job_id not in self._run_start:
            return None
        if self.observer is not None and not self._windows_read:
            return None  # no window read yet since this agent started: Prometheus may still show its steps
        if self._rates is None or self._rates[0] is not self.cfg.library:
            self._rates = (self.cfg.library, RateIndex.of(self.cfg.library))
        host = known.get(current.shares_with) if current.shares_with is not None else None
        partner = host.job_type if host is not None else None
        config = (current.gpu_type, current.gpus, current.setting, partner)
        rate = self._rates[1].rate(k.job_type, config)
        if rate is None:
            return None
        run_start, start_s, seen_s = self._run_start[k.job_id], self.cfg.start_s, k.steps_seen_s
        from_energy = self._energy_credit(k, config, run_start, now_s)
        if from_energy is None:
            made = credited_steps(rate, run_start, start_s, seen_s, now_s)
        else:  # before the window by time alone, in it no more than the energy pays for
            b = self._window_start_s
            before = credited_steps(rate, run_start, start_s, seen_s, b) if seen_s is None or seen_s < b else 0.0
            inside = credited_steps(rate, run_start, start_s, b if seen_s is None else max(seen_s, b), now_s)
            made = before + min(inside, from_energy)
        return min(k.total_steps, k.steps_done + made)

    def _energy_credit(
        self, k: KnownJob, config: tuple[str, int, int, str | None], run_start_s: float, now_s: float
    ) -> float | None:
        """The steps the job's GPU energy in the last window (which ends now) paid for (:mod:`.progress_estimate`).

        None when no window ends now (Prometheus was not read this round), or the job has no energy there or shares
        GPUs.
        """
        assert self._rates is not None
        energy = self._window_energy.get(k.job_id)
        per_step = self._rates[1].energy_per_step_j(k.job_type, config)
        if energy is None or per_step is None or self._window_end_s != now_s:
            return None
        held_s = now_s - max(self._window_start_s, run_start_s)
        gpu_type, gpus = config[0], config[1]
        if energy > 0 and held_s > 0:  # the least power per GPU seen: a loading job's GPUs draw their idle power
            seen = energy / (gpus * held_s)
            self._idle_seen[gpu_type] = min(self._idle_seen.get(gpu_type, seen), seen)
        idle_w = self._idle_seen.get(gpu_type, self._rates[1].idle_power_w(gpu_type) or 0.0)
        return energy_steps(energy, gpus, idle_w, held_s, per_step)

    def _say_estimated(self, estimated: Iterable[str], notes: list[str]) -> None:
        """Name, once each, the jobs whose steps are estimated."""
        new = sorted(set(estimated) - self._estimated_said, key=lambda j: (len(j), j))
        self._estimated_said.update(new)
        if new:
            notes.append(
                f"job {', '.join(new)}: no wattplan_job_steps_done in Prometheus; steps estimated from the profiles"
            )

    def _read_window(self, last: float, unix: float, now_s: float, report: RoundReport) -> None:
        """Prometheus' window ``[last, unix]``: measured steps and energy, the stall marks, the learner."""
        assert self.observer is not None
        try:
            seen = self.observer.window(last, unix)
        except Exception as e:  # noqa: BLE001 - an unreachable Prometheus must not stop the loop
            report.notes.append(
                f"Prometheus: {str(e).splitlines()[0] if str(e) else type(e).__name__}; "
                "planning from the last known progress"
            )
            self._window_failed = True
            return
        self._window_cluster_j = seen.cluster_energy_j
        self._measured.update(seen.steps_done)
        self._windows_read += 1
        report.measured_j = sum(seen.job_energy_j.values())
        window_s = self.cfg.clock.at(unix) - self.cfg.clock.at(last)
        self._observed = True
        self._window_start_s = self.cfg.clock.at(last)
        self._window_end_s = now_s
        self._window_energy = dict(seen.job_energy_j)
        self._metered = frozenset(j for j, e in seen.job_energy_j.items() if e > 0)
        self._metered_at.update(dict.fromkeys(self._metered, now_s))
        for jid, steps in seen.steps_done.items():
            if steps > self._seen_steps.get(jid, 0.0):
                self._advanced_at[jid] = now_s
                self._seen_steps[jid] = steps
                self._stepping_since.setdefault(jid, now_s)
        self.store.set_progress(seen.steps_done, now_s)
        self.store.add_observations(
            report.index,
            [
                (j, seen.steps_done.get(j), seen.job_energy_j.get(j), window_s)
                for j in sorted(set(seen.steps_done) | set(seen.job_energy_j))  # a job may export no steps
            ],
        )
        if self.learner is not None:
            prev = self._prev_steps
            made = {j: v - prev[j] for j, v in seen.steps_done.items() if j in prev}
            self._prev_steps = dict(seen.steps_done)
            idle = self._idle_observations(seen, window_s)
            self._unlearned = _Window(made, dict(seen.job_energy_j), idle, window_s, self._window_start_s)

    def _learn(self, rnd: int, notes: list[str]) -> None:
        """Feed the learner the window read this round (emulated s): the jobs that ran it all in one run, idle GPUs.

        Called once the round has read what runs (:meth:`_job_states`): a job's configuration in the window is the
        one it runs at now, before this round decides (the last round's decision, applied as the window began). A
        job is observed only when it runs now and its current run started, and loaded (``--start-s``), before the
        window, and a read before the window already saw its steps advance in this run: a job that ended, was
        requeued, started or was still loading within the window ran part of it, and its steps over the whole window
        would understate its rate (and its energy its power). The last test holds where ``--start-s`` is not set
        (0, the default) and a real job's load is unknown: the window in which its first steps show is not taken.
        It gives its rate, and its power per GPU when alone on its GPUs (their energy over ``gpus * window_s``, idle
        power included); the idle GPUs of each type give their power (:meth:`_idle_observations`), which the learner
        needs before it takes a job's power as dynamic power above idle. What the learner is shown is kept in the
        state (:mod:`.learned_state`), so a restarted agent takes it back.
        """
        window, self._unlearned = self._unlearned, None
        if self.learner is None or window is None or window.length_s <= 0:
            return
        known = self.store.known_jobs()
        obs: list[JobObservation] = []
        for jid, (gpu_type, gpus, setting, partner) in self._last_running.items():
            steps = window.steps.get(jid, 0.0)
            run_start = self._run_start.get(jid)
            if steps <= 0 or jid not in known or run_start is None:
                continue
            if run_start + self.cfg.start_s > window.start_s + SAME_S:
                continue  # started or restarted in the window, or still loading at its start
            if self._stepping_since.get(jid, math.inf) > window.start_s + SAME_S:
                continue  # its first steps of this run show in this window: it may have loaded in it
            energy = window.energy_j.get(jid)
            power = None
            if partner is None and energy is not None and energy > 0 and gpus > 0:
                power = energy / (gpus * window.length_s)
            weight = window.length_s / self.cfg.rules.duration_s
            obs.append(
                JobObservation(
                    jid,
                    known[jid].job_type,
                    gpu_type,
                    gpus,
                    setting,
                    partner,
                    steps / window.length_s,
                    power,
                    None,
                    weight,
                )
            )
        if obs or window.idle:
            self.learner.observe(obs, window.idle)
            save_feed(self.store, rnd, obs, window.idle)
            self._say_idle_learned(notes)

    def _say_idle_learned(self, notes: list[str]) -> None:
        """Note a GPU type's learned idle power when first measured and whenever it moves 5% from the last said."""
        assert self.learner is not None
        for g in self.learner.prior.gpu_types:
            if self.learner.evidence_idle(g.name) <= 0:
                continue
            now = self.learner.idle_power_w(g.name)
            said = self._idle_said.get(g.name)
            if said is None or abs(now - said) > IDLE_SAID_CHANGE * said:
                self._idle_said[g.name] = now
                notes.append(f"learned: {g.name} idle power {now:.1f} W per GPU (prior {g.idle_power_w:.1f} W)")

    def _idle_observations(self, seen: Observed, window_s: float) -> list[GpuObservation]:
        """Per GPU type the idle power of its powered GPUs no job held: ``J / (GPU-windows * window_s)`` (W).

        Weighted by idle GPU-rounds (``GPU-windows * window_s / round s``). Node power is not observed here
        (weight 0: the learner keeps the prior's).
        """
        by_type: dict[str, tuple[float, float]] = {}
        for name, (joules, gpu_windows) in seen.idle_gpus.items():
            gpu_type = self._node_types.get(name)
            if gpu_type is None or joules <= 0 or gpu_windows <= 0:
                continue
            j, n = by_type.get(gpu_type, (0.0, 0.0))
            by_type[gpu_type] = (j + joules, n + gpu_windows)
        return [
            GpuObservation(g, j / (n * window_s), n * window_s / self.cfg.rules.duration_s, 0.0, 0.0)
            for g, (j, n) in sorted(by_type.items())
        ]

    def _job_states(
        self,
        ctx: ClusterContext,
        known: Mapping[str, KnownJob],
        active: Mapping[str, ManagedJob],
        placements: Mapping[int, tuple[tuple[str, tuple[int, ...]], ...]],
        host_of: Mapping[str, str],
        desired: Mapping[str, Desired],
        now_s: float,
    ) -> tuple[list[JobState], dict[str, SlurmJobNow], list[str]]:
        """The replay's job states of every known job, Slurm's view of the active ones, notes on skipped jobs.

        A running job that exports no steps has them estimated up to ``now_s`` (the round's time) here, where what
        it runs at is known (:meth:`_estimated_steps`).
        """
        node_of = {h: n for n, h in host_of.items()}
        types = list(ctx.type_names)
        states: list[JobState] = []
        now_jobs: dict[str, SlurmJobNow] = {}
        notes: list[str] = []
        running_cfg: dict[str, tuple[str, int, int, str | None]] = {}
        estimates: dict[str, float] = {}
        for jid, k in sorted(known.items(), key=lambda kv: (kv[1].arrival_s, int(kv[0]))):
            spec = job_spec(
                TraceJob(jid, k.job_type, k.arrival_s, k.requested_gpus, k.total_steps), self.cfg.library, types
            )
            if spec is None:
                if jid in active:
                    notes.append(
                        f"job {jid}: no profile of {k.job_type!r} on {types} for {k.requested_gpus} GPUs: left alone"
                    )
                continue
            st = JobState.new(spec)
            st.remaining_steps = max(k.total_steps - k.steps_done, 1e-9)
            if k.ended:
                st.finish_s = k.ended_s
                states.append(st)
                continue
            slurm_job = active.get(jid)
            if slurm_job is None:
                continue
            j = slurm_job
            running = j.state in ("RUNNING", "CONFIGURING")
            d = desired.get(jid)
            host_job = d.host_job if (d is not None and running and d.state == "run") else None
            where = placements.get(int(host_job) if host_job else int(jid), ())
            hosts = (tuple(h for h, _ in where) or expand_hostlist(j.node_list)) if running else ()
            asks = () if running or not j.required_nodes else expand_hostlist(j.required_nodes)
            now_jobs[jid] = SlurmJobNow(
                jid, running, j.held, hosts, j.gpus_per_node, host_job, j.gpu_type is not None, None, asks, j.gpu_type
            )
            if j.state == "RUNNING" and j.start_time_s is not None:  # CONFIGURING: its nodes boot, its time will reset
                started = self.cfg.clock.at(j.start_time_s)
                if self._run_start.get(jid, started) != started:  # a new run: its steps have to show again
                    self._stepping_since.pop(jid, None)
                self._run_start[jid] = started
            else:
                self._run_start.pop(jid, None)
                self._stepping_since.pop(jid, None)
            current = self._current(jid, j, d, where, node_of, ctx, desired, active) if running else None
            if current is not None:
                st.current = current
                made = self._estimated_steps(k, current, known, now_s)
                if made is not None:
                    estimates[jid] = made
                    st.remaining_steps = max(k.total_steps - made, 1e-9)
                running_cfg[jid] = (current.gpu_type, current.gpus, current.setting, None)
            states.append(st)
        # partners' types for the learner
        by_id = {s.id: s for s in states}
        per_node = ctx.gpu_types[0].gpus_per_node
        running_now = {s.id: s.current for s in states if s.current is not None and s.id in now_jobs}
        for jid, aligned in aligned_blocks(running_now, per_node).items():
            by_id[jid].current = aligned
        for jid, (g, n, s_, _) in list(running_cfg.items()):
            cur = by_id[jid].current
            partner = cur.shares_with if cur else None
            running_cfg[jid] = (g, n, s_, by_id[partner].spec.type if partner in by_id else None)
        if estimates:
            self.store.set_progress(estimates, now_s)
            self._say_estimated(estimates, notes)
        self.store.mark_started([j for j, s in now_jobs.items() if s.running], self.cfg.clock.at(self.timer.unix()))
        self._last_running = running_cfg
        return states, now_jobs, notes

    def _current(
        self,
        jid: str,
        job: ManagedJob,
        d: Desired | None,
        where: tuple[tuple[str, tuple[int, ...]], ...],
        node_of: Mapping[str, str],
        ctx: ClusterContext,
        desired: Mapping[str, Desired],
        active: Mapping[str, ManagedJob],
    ) -> CurrentConfig | None:
        """What a running job runs now, as Slurm shows it; None when it runs where the round cannot plan.

        GPU type and count come from its GPU indices (the host's, for a pair's guest) and its nodes; the setting
        and partner from the agent's last decision when that matches, else the type's top setting (the GPUs'
        default limit) alone. A job on a node left out of the round (drained, down, shared with unmanaged
        jobs) has none: the round plans it afresh and moves or stops it.
        """
        if not where or not all(h in node_of for h, _ in where):
            return None
        holder = active.get(d.host_job) if d is not None and d.host_job else job
        per_node = holder.gpus_per_node if holder is not None else 0
        if per_node > 0 and any(not i for _, i in where):
            where = tuple((h, i or self._free_indices(h, per_node)) for h, i in where)
        gpus = sum(len(i) for _, i in where)
        gpu_type = node_of[where[0][0]].rsplit("-", 1)[0]
        if gpus == 0 or gpu_type not in ctx.type_names:
            return None
        placement = tuple(NodeGpus(node_of[h], tuple(i)) for h, i in where)
        if d is not None and d.state == "run" and (d.gpu_type, d.gpus) == (gpu_type, gpus):
            partner = d.host_job or next(
                (g for g, dd in desired.items() if dd.host_job == jid and g in active and active[g].state == "RUNNING"),
                None,
            )
            return CurrentConfig(gpu_type, gpus, int(d.setting or 0), partner, placement)
        top = max(next(g for g in ctx.gpu_types if g.name == gpu_type).settings)
        return CurrentConfig(gpu_type, gpus, top, None, placement)

    def _free_indices(self, host: str, count: int) -> tuple[int, ...]:
        """``count`` GPU indices of ``host`` no other job holds, for a job whose indices Slurm does not show.

        Slurm 22.05 sometimes prints a running job's detail line without ``IDX`` (seen after a requeue); the
        round needs a placement that does not collide with the other jobs', and Slurm chooses indices itself.
        """
        used = {i for hosts in self._placements.values() for h, idx in hosts if h == host for i in idx}
        free = [i for i in range(self._gpus_per_host.get(host, 0)) if i not in used][:count]
        self._placements = {**self._placements, -len(self._placements) - 1: ((host, tuple(free)),)}
        return tuple(free)

    # ------------------------------------------------------------------ applying

    def _changed_settings(self, settings: Sequence[JobSetting]) -> list[JobSetting]:
        """The settings whose file says something else, or nothing yet (its ``round`` aside)."""
        if self.cfg.settings_dir is None:
            return []
        changed = []
        for s in settings:
            path = self.cfg.settings_dir / f"{s.job_id}.conf"
            try:
                old = JobSetting.from_text(path.read_text())
            except (OSError, ValueError):  # none yet, or unreadable: written anew
                old = None
            if old is None or replace(old, round=s.round) != s:
                changed.append(s)
        return changed

    def _write_settings(self, settings: Sequence[JobSetting]) -> None:
        """Write each job's setting file whose setting changed (its ``round`` is the round that last changed it).

        A file that says the same but for the round is left as it is: rewriting every running job's file every
        round made the node scripts (and the simulated Slurm) read them all again for nothing.
        """
        for s in self._changed_settings(settings):
            path = self.cfg.settings_dir / f"{s.job_id}.conf"  # type: ignore[operator]  # set when any changed
            write_text_atomic(path, s.to_text(), durable=self.cfg.durable_settings)

    @staticmethod
    def _setting_words(s: JobSetting) -> str:
        """``job 12: 2 v100 GPUs at a 150 W power limit`` (or a locked SM clock, or a guest on its host's GPUs)."""
        watts = s.unit == "power_limit_w"
        level = f"a {s.setting} W power limit" if watts else f"an SM clock locked at {s.setting} MHz"
        where = f"on job {s.host_job}'s GPUs" if s.host_job else f"{s.gpus} {s.gpu_type} GPU(s)"
        return f"job {s.job_id}: {where} at {level}"

    def _send(self, rnd: int, actions: Sequence[Action], desired: Sequence[Desired], report: RoundReport) -> None:
        """Send the round's calls in order, each outcome recorded; an update Slurm refuses for now is retried last.

        An update refused with a passing reason (:data:`TRANSIENT_REFUSALS`: a job requeued a moment ago is still
        completing, a job submitted a moment ago has no database index yet) does not hold up the round: the calls
        after it go out at once, the job's own release waits, and its update is retried every 0.3 s for up to
        ``requeue_wait_s`` (then released if the update went through; if not, the next round comes a second later).
        Waiting in place held up every later call
        of the round, each job's release included, for those seconds: 15 s real, 450 emulated seconds at a time
        scale of 30, seen live as a whole cluster standing idle.
        """
        if not self.cfg.dry_run:
            actions = self._still_running_for_requeue(actions, report)
        planned = calls(actions)
        if self.cfg.dry_run:
            report.calls.extend(apply(actions, True, self.run))
            return
        ids = self.store.commit_intent(rnd, desired, [(c.argv, c.jobs) for c in planned])
        later: dict[int, tuple[int, SlurmCall]] = {}
        """Jobs whose update Slurm refused for now: the update's action id and call."""
        unreleased: set[int] = set()
        started: set[int] = set()
        """Jobs whose hold Slurm refused: they started since the round read the queue; no update may reach them."""
        for action_id, call in zip(ids, planned, strict=True):
            if call.argv[1:2] in (("update",), ("release",)) and started & set(call.jobs):
                kept = [Release(j) for j in call.jobs if j not in started]
                if call.argv[1:2] == ("update",) or not kept:
                    self.store.action_outcome(action_id, "refused", "not sent: the job started before its hold")
                    continue
                call = calls(kept)[0]
            if call.argv[1:2] == ("release",) and later.keys() & set(call.jobs):
                unreleased |= later.keys() & set(call.jobs)
                rest = [Release(j) for j in call.jobs if j not in later]
                if not rest:
                    self.store.action_outcome(action_id, "ok", "every job's release waits for its update")
                    continue
                call = calls(rest)[0]
            result = self.run(call.argv)
            if call.argv[1:2] == ("update",) and _passing(result):
                later[call.jobs[0]] = (action_id, call)
                continue
            outcome = self._record(action_id, call, result, report)
            if call.argv[1:2] == ("uhold",) and not outcome.ok:
                started |= set(outcome.refused) or set(call.jobs)  # no job named: Slurm refused the whole call
        self._retry_updates(rnd, later, unreleased, report)

    def _still_running_for_requeue(self, actions: Sequence[Action], report: RoundReport) -> list[Action]:
        """``actions`` without the requeues of jobs that stopped running since the round read the queue.

        Slurm requeues a finished batch job too: a ``requeuehold`` sent after its user's ``scancel`` revived the
        job (seen in the live test: cancelled, requeued the same second, released and started again). So the
        queue is read once more just before the round's requeues; a job no longer running or configuring is not
        requeued (its update and release then meet a finished job, a refusal logged as benign). If Slurm does not
        answer, the requeues go as planned.
        """
        requeues = {a.job for a in actions if isinstance(a, RequeueHold)}
        if not requeues:
            return list(actions)
        try:
            queue = query_queue(self.run, self.generation)
        except SlurmError:
            return list(actions)
        running = {j.job_id for j in queue.jobs if j.state in ("RUNNING", "CONFIGURING")}
        gone = requeues - running
        if not gone:
            return list(actions)
        report.notes.append(f"job {', '.join(map(str, sorted(gone)))} stopped running before its requeue: not requeued")
        return [a for a in actions if not (isinstance(a, RequeueHold) and a.job in gone)]

    def _retry_updates(
        self, rnd: int, later: dict[int, tuple[int, SlurmCall]], unreleased: set[int], report: RoundReport
    ) -> None:
        """Retry the updates Slurm refused for now (:meth:`_send`); release each that goes through and was held."""
        deadline = self.timer.monotonic() + self.cfg.requeue_wait_s
        last: dict[int, CommandResult] = {}
        while later and self.timer.monotonic() < deadline and not self.stop_requested:
            self.timer.sleep(0.3)
            for job, (action_id, call) in list(later.items()):
                last[job] = result = self.run(call.argv)
                if _passing(result):
                    continue
                later.pop(job)
                self._record(action_id, call, result, report)
                if result.ok and job in unreleased:
                    self._send(rnd, [Release(job)], [], report)
        for job, (action_id, call) in later.items():
            self._record(action_id, call, last.get(job) or self.run(call.argv), report)
        self._retry_soon = self._retry_soon or bool(later)

    def _record(self, action_id: int, call: SlurmCall, result: CommandResult, report: RoundReport) -> ActionOutcome:
        """One call's outcome, returned and in the report and the state (ok/refused/failed); restarts counted."""
        outcome = ActionOutcome(call, True, result.returncode, result.stdout, result.stderr)
        report.calls.append(outcome)
        status = "ok" if outcome.ok else ("refused" if outcome.refused else "failed")
        self.store.action_outcome(action_id, status, result.stderr.strip())
        if call.argv[1:2] == ("requeuehold",) and (outcome.ok or outcome.refused):
            self.store.count_restarts(str(j) for j in call.jobs if j not in outcome.refused)
        if call.argv[1:2] == ("release",) and (outcome.ok or outcome.refused):
            self.store.drop_released_holds(str(j) for j in call.jobs if j not in outcome.refused)
        if outcome.ok:
            return outcome
        refused = outcome.refused
        said = [line for line in outcome.stderr.splitlines() if line.strip()]
        named = ", ".join(str(j) for j in sorted(refused))
        if refused and len(said) == len(refused) and all(m in BENIGN_REFUSALS for m in refused.values()):
            report.notes.append(f"job {named} ended before its call reached Slurm: nothing to do ({call})")
        elif call.argv[1:2] == ("uhold",) and len(said) == len(refused) and set(refused.values()) == {NOT_PENDING}:
            report.notes.append(f"job {named} started before its hold reached Slurm: it runs as Slurm started it")
        else:
            report.notes.append(f"Slurm refused: {outcome}")
        return outcome

    def _apply(self, rnd: int, d: Decision, report: RoundReport) -> None:
        if self.cfg.dry_run:
            report.notes += [f"dry run, would set {self._setting_words(s)}" for s in self._changed_settings(d.settings)]
        else:
            self._write_settings(d.settings)
        self._send(rnd, d.actions, d.desired, report)
        if not d.guest_releases:
            return
        if self.cfg.dry_run:
            report.calls.extend(apply([Release(int(g)) for g in d.guest_releases], True, self.run))
            return
        wait_s = min(self.cfg.guest_wait_s, 0.8 * self.cfg.clock.real_s(self.cfg.rules.duration_s))
        deadline = self.timer.monotonic() + wait_s
        waiting = dict(d.guest_releases)
        while waiting and self.timer.monotonic() < deadline and not self.stop_requested:
            try:
                queue = query_queue(self.run, self.generation)
            except SlurmError:
                break
            admitted = self._admitted(queue, None)
            running = {jid for jid, j in admitted.items() if j.state == "RUNNING"}
            for g in [g for g in waiting if g in admitted and admitted[g].reason == ADMIN_HOLD]:
                waiting.pop(g)  # an administrator held it meanwhile: never released
                report.notes.append(f"job {g} was held by an administrator meanwhile: left alone")
            ready = [g for g, h in waiting.items() if h in running and g in admitted]
            if ready:
                self._send(rnd, [Release(int(g)) for g in ready], [], report)
                for g in ready:
                    waiting.pop(g)
            if waiting:
                self.timer.sleep(0.3)
        for g, h in waiting.items():
            report.notes.append(f"job {g} waits for its pair's host {h} to start; released in a later round")

    # ------------------------------------------------------------------ the loop

    def _queue_changed(self) -> bool:
        """Whether the managed jobs in the queue (pending or running) or the cap file changed since the last round."""
        if self._cap is not None and self._cap.changed():
            return True
        try:
            queue = query_queue(self.run, self.generation)
        except SlurmError:
            return False
        active = frozenset(jid for jid, j in self._admitted(queue, None).items() if j.state in ACTIVE_STATES)
        return active != self._active_ids

    def event_gap(self) -> float:
        """The least share of a round between a round and the next one an event starts (:attr:`AgentConfig.event_gap`).

        0 with the Slurm start rule or the no-restart rule: their rounds never restart a running job, so an arrival
        is planned at the first poll that sees it, as Slurm starts a job at once. In the replays of three families at
        time scales 1 and 30 a
        job's median wait for its first start fell from 0.7-29.9 s to 0.5-24.5 s, with the same energy to 0.2%; live
        (two families, time scale 30) nothing moved beyond the runs' own spread: there Slurm's own start after the
        release dominates (benchmarks/RESULTS.md, "Event rounds").
        """
        return 0.0 if self.cfg.rules.slurm_starts or self.cfg.rules.pin_running else self.cfg.event_gap

    def _stalled(self, rounds: int, since_s: float = math.nan, last: RoundReport | None = None) -> bool:
        """``rounds`` in a row ran nothing with jobs waiting, every job submitted: :attr:`AgentConfig.stall_rounds`.

        Where the energy budget's share set the ``last`` round's plan, rounds that ran nothing stop the loop only once
        they span a whole period from ``since_s`` (the first of them, agent clock): a budget spent for one period is
        renewed by the next, and only a budget no job fits in for a whole period stops it (``budget-exhausted``).
        """
        limit = self.cfg.stall_rounds
        if limit is None or rounds < limit:
            return False
        if self.cfg.idle_marker is not None and not self.cfg.idle_marker.exists():
            return False
        if self.ledger is not None and last is not None and last.budget is not None and last.budget_binds:
            if not self.ledger.covers_a_period(since_s, last.now_s):
                return False
            self.stop_reason = "budget-exhausted"
            self.log(f"{rounds} rounds in a row over a whole period of the energy budget ran nothing: budget-exhausted")
            return True
        self.stop_reason = "stalled"
        self.log(f"{rounds} rounds in a row ran nothing while jobs waited: stalled")
        return True

    def _next_period_at(self) -> float:
        """When (:meth:`Timer.monotonic` s) the energy budget's next period starts: a round starts then; inf: none."""
        if self.ledger is None or self.ledger.periods is None:
            return math.inf
        now_s = self.cfg.clock.at(self.timer.unix())
        return self.timer.monotonic() + self.cfg.clock.real_s(self.ledger.next_start_s(now_s) - now_s)

    def idle(self) -> bool:
        """Every managed job has ended (and the submitter, when there is one, is done)."""
        if self.cfg.idle_marker is not None and not self.cfg.idle_marker.exists():
            return False
        known = self.store.known_jobs()
        return bool(known) and all(k.ended for k in known.values())

    def run_loop(self) -> int:
        """Play rounds every ``--round-s`` until stopped (SIGTERM/SIGINT), idle (``--until-idle``) or done.

        With ``event_rounds`` a round also starts early when a managed job arrives or leaves (module docstring).
        """
        period = self.cfg.clock.real_s(self.cfg.rules.duration_s)
        played = stalled = 0
        stalled_since = math.nan

        def stop(signum: int, frame: FrameType | None) -> None:
            self.stop_requested = True
            self.stop_signal = signum
            self.log(f"signal {signal.Signals(signum).name}: stopping after this step")

        old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            next_at = self.timer.monotonic()
            while not self.stop_requested:
                try:
                    report = self.round()
                except StoreBusy as e:  # a damaged state (StoreError) stops the loop: nothing could be recorded
                    report = RoundReport(-1, self.cfg.clock.at(self.timer.unix()), status="state-busy")
                    self.log(f"round skipped, what runs is kept: {e}")
                else:
                    self.log(report.line())
                if self.metrics is not None:
                    self.metrics.observe(self._metric_figures(report))
                if self.cfg.dry_run:
                    for outcome in report.calls:
                        self.log(f"would run: {outcome.call}")
                played += 1
                if report.queued > 0 and report.planned_run == 0:
                    stalled_since = report.now_s if stalled == 0 else stalled_since
                    stalled += 1
                else:
                    stalled = 0
                if self.cfg.dry_run or (self.cfg.max_rounds is not None and played >= self.cfg.max_rounds):
                    break
                if self._stalled(stalled, stalled_since, report):
                    break
                if self.cfg.until_idle and self.idle():
                    self.log("every managed job has ended: done")
                    break
                started = next_at
                next_at += period
                if next_at < self.timer.monotonic():  # a round longer than the period starts the next at once
                    next_at = self.timer.monotonic()
                if self._retry_soon:  # an update Slurm refused for now: try again a second later
                    next_at = min(next_at, self.timer.monotonic() + REFUSED_RETRY_S)
                earliest = started + self.event_gap() * period if self.cfg.event_rounds else None
                next_at = min(next_at, self._next_period_at())  # a budget's new period renews it: plan then
                # a plan is priced for one round: under an energy budget rounds come every --round-s
                periodic = self.cfg.periodic_rounds or not self._settled or self.ledger is not None
                # a job that arrived or left starts the round early: plan now, as Slurm would start it now
                if self.timer.wait_for_round(
                    next_at if periodic else math.inf,
                    earliest,
                    self.cfg.poll_s,
                    self._queue_changed,
                    lambda: self.stop_requested,
                ):
                    next_at = self.timer.monotonic()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        return 0
