"""``wattplan agent``'s options, declared once: :class:`AgentOptions` (docs/design.md §11.6).

The command line generates ``wattplan agent`` from this record (``planner.cli.faces``) and checks what it is given
with :meth:`AgentOptions.checked`, which names every bad value both ways (``start_s (--start-s): must be ...``).
The loop reads the same record: :meth:`planner.agent.loop.AgentConfig.of` builds the loop's configuration from it,
and the configuration's defaults are the record's.

The agent plays the replay's rounds: its round options are :class:`planner.sim.options.ReplayOptions`' and its
solve options take :class:`planner.planning.SolveOptions`' flags, units and ranges with the replay's defaults
(:data:`~planner.contracts.request.REPLAY_REQUEST`), each declared there once
(:func:`~planner.contracts.options.same_as`). The rule between the round's options (the restart shorter than the
round) is :data:`~planner.contracts.options.ROUND_RULE`.

This module loads no solver and no pandas: the command line imports it to build ``wattplan --help``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, get_args

from wattplan.planner.agent.trust import Allowed, name_problem
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.options import (
    ROUND_RULE,
    OptionRecord,
    Rule,
    option,
    range_of,
    requires,
    same_as,
)
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.contracts.request import REPLAY_REQUEST, PlanRequest
from wattplan.planner.contracts.rules import Objective, RoundRules
from wattplan.planner.planning import SolveOptions
from wattplan.planner.sim.options import (
    LIBRARY_METAVAR,
    LIVE_GOVERNOR,
    MAX_JCT_INCREASE_PCT,
    REPLAY_SOLVER_HELP,
    ReplayOptions,
    SimulateOptions,
    library_path,
    signal_needs_a_file,
)

if TYPE_CHECKING:
    from wattplan.planner.sim.governor import GovernorRule, Steering
    from wattplan.planner.sim.tail_bound import TailPace

DEFAULT_SETTINGS_DIR = Path("/var/lib/wattplan/settings")
"""The folder the node scripts read settings from on a real cluster (``--settings-dir``)."""
STATE_FILE = Path("wattplan-agent.db")
"""The state file on a real cluster (``--state``), in the working folder."""
CLUSTER_STATE_NAME = "agent.db"
"""The state file's name in an emulated cluster's folder (``--cluster``)."""
JCT_INCREASE_PCT = 3.0
"""The steered mode's JCT bound by default (%, ``--max-jct-increase``): the average JCT at most 3% above Slurm's."""
MODES = ("by-job", "steered")
"""How the agent trades JCT for energy (``--mode``); by-job by default (module docstring of the options)."""
BY_JOB_SLOWDOWN_PCT = 10.0
"""The by-job mode's slowdown limit when ``--max-slowdown`` is not given (%): measured live on three families
(benchmarks/RESULTS.md, "The levers of a real cluster, second pass")."""
BY_JOB_DELTA = 0.9
"""The by-job mode's ``delta``: the energy objective may give up 90% of the progress, so within the slowdown limit
and the Slurm start rule each job runs at its least-energy option."""
AGENT_BASELINES: Mapping[str, tuple[str, bool]] = {
    "slurm": ("fifo-max", False),
    "slurm-powersave": ("fifo-max", True),
    "maxq": ("fifo-maxq", True),
}
"""The operators' baselines by the names ``wattplan simulate`` gives them, run by the agent: the policy that decides
and whether the cluster powers idle nodes down (``--power-save``). ``slurm``: first come, first served at full
power, every node on; ``slurm-powersave``: the same on a cluster with Slurm's power saving; ``maxq``: that, each job
at the lowest power limit keeping 97% of its speed. ``simulate -p NAME`` replays them as Slurm alone, with no agent
(:data:`planner.control.slurm_replay.SLURM_BASELINES`); live the agent's run of each lands within 0.4% of Slurm
alone in energy (benchmarks/RESULTS.md)."""
POWER_CYCLE_S = 360.0
"""A GPU server's off-and-on cycle by default (s): a 60 s shutdown and a 300 s boot, the emulated cluster's."""
MAX_START_S = 1e7
"""``--start-s`` is below this (s, about 116 days): a job's start-up, far longer than any real one, and finite."""


def _names(name: str) -> Rule:
    """A rule: each item of the list option ``name`` is a Slurm user or account name (``trust.name_problem``)."""

    def check(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
        given = values.get(name) or ()
        items = given.split(",") if isinstance(given, str) else given
        return [Problem("bad-option", label(name), why) for item in items if (why := name_problem(item)) is not None]

    return Rule(check, f"{name}: Slurm user or account names")


def _baseline_power_save(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """``--policy slurm`` means every node on: with ``--power-save`` the operator meant ``slurm-powersave``."""
    if values.get("policy") == "slurm" and values.get("power_save"):
        why = "slurm keeps every node on; on a cluster with Slurm's power saving name slurm-powersave"
        return [Problem("conflicting-options", label("power_save"), why)]
    return []


def _saves_power(power_save: bool, policy: str) -> bool:
    """Whether the cluster powers idle nodes down: ``--power-save``, or a baseline that names it."""
    return power_save or (policy in AGENT_BASELINES and AGENT_BASELINES[policy][1])


def _power_down_saves(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """``--power-down`` acts through Slurm's power saving: ``--power-save`` or a baseline that runs with it."""
    if values.get("power_down") and not _saves_power(bool(values.get("power_save")), str(values.get("policy"))):
        return [Problem("bad-option", label("power_down"), f"needs {label('power_save')}")]
    return []


def _steered_only(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """The tail bound steers the rounds: refused in the by-job mode, which does not."""
    if values.get("mode", "by-job") != "by-job" or values.get("tail_bound") is None:
        return []
    return [Problem("conflicting-options", label("tail_bound"), "steers the rounds; give --mode steered")]


def _some_rounds(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """Rounds start on events, every round, or both: not neither."""
    if values.get("event_rounds", True) or values.get("periodic_rounds", True):
        return []
    return [Problem("conflicting-options", label("periodic_rounds"), f"give it or {label('event_rounds')}")]


def _port_option(help: str) -> Any:
    """An option holding a TCP port this host serves on (off by default)."""
    return option(None, help, low=1, high=65535, metavar="PORT")


def _address_option(what: str) -> Any:
    """An option holding the address a port is served on: this host only by default."""
    return option("127.0.0.1", f"{what} (0.0.0.0: every interface).", metavar="ADDRESS")


@dataclass(frozen=True, kw_only=True)
class AgentOptions(OptionRecord):
    """``wattplan agent``: where the cluster and the state are, the round's rules, the solver, whose jobs."""

    cluster: Path | None = option(
        None,
        "An emulated cluster's folder (wattplan cluster up): its Slurm, Prometheus, settings folder and clock. "
        "Without it: the Slurm of SLURM_CONF and --prometheus.",
    )
    state: Path | None = option(
        None, f"SQLite state file (default: {CLUSTER_STATE_NAME} in --cluster, else ./{STATE_FILE})."
    )
    prometheus: str | None = option(None, "Prometheus URL scraping the DCGM exporters (http://HOST:PORT).")
    settings_dir: Path | None = option(
        None, f"Shared folder the node scripts read settings from (default {DEFAULT_SETTINGS_DIR})."
    )
    profiles: Path | None = option(
        None, "Profile library (default: the shipped one).", parser=library_path, metavar=LIBRARY_METAVAR
    )
    learn: bool = option(
        False,
        "Correct the profiles from each round's observed steps and power; what was observed is kept in the "
        "state, so a restarted agent takes it back.",
    )
    policy: str = option(
        "wattplan",
        "Policy that decides each round: wattplan (the round model); the operators' baselines slurm (first come, "
        "first served at full power, every node on), slurm-powersave (the same with --power-save) and maxq "
        "(slurm-powersave, each job at the lowest power limit keeping 97% of its speed); fifo-max, fifo-maxq, "
        "zeus, eaco, powerflow or a plug-in's name, as wattplan simulate takes them.",
        metavar="NAME",
    )
    zeus_eta: float = same_as(ReplayOptions, "zeus_eta")
    mode: str = option(
        "by-job",
        "How wattplan trades JCT for energy. by-job: every job starts when Slurm would start it, is never stopped "
        "or resized, and always runs at least 1/(1 + x) as fast as its request at full power (x: --max-slowdown, "
        f"default {BY_JOB_SLOWDOWN_PCT:g}%); wattplan picks its GPU count and power limit. steered: each round "
        "gives up progress for energy, steered so that the average JCT stays within --max-jct-increase of Slurm's; "
        "jobs may wait, be resized and restarted.",
        choices=MODES,
    )
    objective: str | None = option(
        None,
        "Objective (default: energy in the by-job mode; steered: efficiency with the JCT bound, progress without).",
        choices=get_args(Objective),
    )
    max_jct_increase: float = option(
        JCT_INCREASE_PCT,
        "Steered mode: least energy with an average JCT at most this many percent above what Slurm's "
        "first-come-first-served scheduling at full power would give (estimated by fifo-max over the jobs seen so "
        "far, in continuous time, as Slurm starts jobs).",
        unit="%",
        low=0.0,
        high=MAX_JCT_INCREASE_PCT,
    )
    jct_bound: bool = option(
        True, "Steered mode: steer each round's delta by the JCT bound (--no-jct-bound: a fixed --delta)."
    )
    governor: str | None = same_as(
        ReplayOptions,
        "governor",
        LIVE_GOVERNOR,
        "How --max-jct-increase compares JCTs: accrued (time in system so far) or projected (whole JCTs, unfinished "
        "work at full speed; the default, measured live).",
    )
    delta_max: float = same_as(ReplayOptions, "delta_max")
    tail_bound: float | None = same_as(ReplayOptions, "tail_bound")
    tail_pace: str = same_as(ReplayOptions, "tail_pace")
    max_slowdown: float | None = same_as(
        ReplayOptions,
        "max_slowdown",
        help="Slowdown limit: whenever a job runs it runs at least 1/(1 + x) as fast as its requested GPU count at "
        f"full power would (x this many percent; default {BY_JOB_SLOWDOWN_PCT:g} in the by-job mode, none when "
        "steered).",
    )
    slurm_starts: bool = same_as(
        ReplayOptions,
        "slurm_starts",
        help="Steered mode: start each job when Slurm would and never stop a running one to wait (always so in the "
        "by-job mode).",
    )
    pin_running: bool = same_as(
        ReplayOptions,
        "pin_running",
        help="Steered mode: never move, resize, make a guest of or stop a running job, so no round restarts one; "
        "only its power limit or clock changes (always so in the by-job mode).",
    )
    carbon: Path | None = same_as(
        ReplayOptions, "carbon", help="Hourly carbon intensity CSV (gCO2/kWh): wattplan follows it (--signal-aware)."
    )
    price: Path | None = same_as(
        ReplayOptions, "price", help="Hourly electricity price CSV ($/MWh): followed when no --carbon is given."
    )
    signal_start: str | None = same_as(
        ReplayOptions, "signal_start", help="Signal hour (ISO 8601, UTC) at which the agent starts; default the first."
    )
    signal_aware: bool = same_as(ReplayOptions, "signal_aware")
    delta: float = same_as(
        SolveOptions,
        "delta",
        defaults.DELTA,
        f"Steered mode: progress given up per round without the JCT bound (the by-job mode's is {BY_JOB_DELTA:g}).",
    )
    round_s: float = same_as(ReplayOptions, "round_s")
    restart_s: float = same_as(
        ReplayOptions, "restart_s", defaults.RESTART_S, "Restart cost tau: Slurm's requeue delay and the job's restart."
    )
    min_pair_rate: float = same_as(ReplayOptions, "min_pair_rate")
    solver: str = same_as(SolveOptions, "solver", REPLAY_REQUEST.solver, "wattplan's solver: " + REPLAY_SOLVER_HELP)
    time_limit_s: float = same_as(
        SolveOptions, "time_limit_s", REPLAY_REQUEST.time_limit_s, "wattplan's seconds per round."
    )
    threads: int = same_as(SolveOptions, "threads", REPLAY_REQUEST.threads)
    seed: int = same_as(SolveOptions, "seed", REPLAY_REQUEST.seed)
    node_limit: int | None = same_as(SolveOptions, "node_limit", REPLAY_REQUEST.node_limit)
    horizon: int = same_as(SolveOptions, "horizon", REPLAY_REQUEST.horizon)
    power_cap_w: float | None = same_as(ReplayOptions, "power_cap_w")
    power_cap_file: Path | None = option(
        None,
        "A file holding the cluster's power cap in W, or none (an operator or a grid program writes it): read every "
        "round, a change starts a round at once; --power-cap-w is the cap until it holds one.",
        metavar="FILE",
    )
    power_cap_port: int | None = _port_option(
        "Also take the cap over HTTP on this port: PUT /power-cap with the file's syntax as the body and "
        "'Authorization: Bearer TOKEN' writes it into --power-cap-file; GET /power-cap reads it. Off by default."
    )
    power_cap_address: str = _address_option("Address --power-cap-port listens on")
    power_cap_token_file: Path | None = option(
        None,
        "The token --power-cap-port asks for (a file of mode 0600 holding one token of 16 or more characters, "
        "e.g. from 'openssl rand -hex 16').",
        metavar="FILE",
    )
    energy_budget_kwh: float | None = same_as(
        ReplayOptions,
        "energy_budget_kwh",
        help="Energy budget: the cluster (GPUs and nodes, idle included, as Prometheus counts them) draws at most "
        "this much per period (--budget-period-s); each round is paced over the time left in its period (with a cap "
        "too, the smaller of the two).",
    )
    budget_period_s: float | None = same_as(
        SimulateOptions,
        "budget_period_s",
        help="The period of --energy-budget-kwh, back to back from the agent's first round (kept in --state).",
    )
    node_power_w: float | None = option(
        None,
        f"A node's power besides its GPUs (default: the library's or {defaults.NODE_POWER_W:g} W).",
        **range_of(ReplayOptions, "node_power_w"),
    )
    dry_run: bool = option(False, "Play one round on a copy of the state; print the Slurm calls, send none.")
    until_idle: bool = option(False, "Stop once every managed job has ended (and, with --cluster, all were submitted).")
    max_rounds: int | None = option(None, "Stop after this many rounds.", unit="rounds", low=1)
    pairs: bool | None = option(
        None,
        "Plan pairs on shared GPUs (default: off; docs/design.md 11.6): a job becomes a guest (Gres=gpu:0 on its "
        "host's node), but Slurm 22.05 and 24.11 keep the GPUs it was submitted with, so it waits for one there and "
        "runs on it alone: no pair forms on Slurm. On with --policy eaco, whose lever it is.",
    )
    event_rounds: bool = same_as(SimulateOptions, "event_rounds")
    poll_s: float = same_as(
        SimulateOptions,
        "poll_s",
        help="Real seconds between two reads of Slurm's queue (squeue) while waiting for the next round: a job that "
        "arrives or leaves starts a round at the first read that sees it, so an arrival waits half of this on "
        "average. On an emulated cluster at --time-scale S, S times as long in emulated time.",
    )
    power_save: bool = same_as(SimulateOptions, "power_save")
    power_down: bool = same_as(
        SimulateOptions,
        "power_down",
        help="With --power-save: also power idle nodes down at once, keeping on those the last hour's arrivals are "
        "expected to need within a node's off-and-on cycle (--power-cycle-s), and more where the JCT limit "
        "(--max-slowdown, --max-jct-increase, --tail-bound) cannot pay for a burst's wait for a boot; Slurm's "
        "SuspendTime still applies.",
    )
    power_up: bool = same_as(
        SimulateOptions,
        "power_up",
        help="With --power-down: also boot powered-down nodes ahead of the jobs (scontrol update NodeName=N "
        "State=POWER_UP) when the queue grew over the last off-and-on cycle (GPUs asked for less those of the jobs "
        "that ended) by more than the powered nodes' free GPUs, so that a burst's jobs wait less for a boot; the "
        "nodes booted early draw idle power.",
    )
    power_cycle_s: float = option(
        POWER_CYCLE_S,
        "With --power-down: how long a node powered down and booted again draws idle power without running a job "
        "(Slurm's SuspendTimeout plus the boot); a node expected idle longer is powered down. With --cluster: the "
        "emulated cluster's own.",
        unit="s",
        low=0.0,
        low_open=True,
    )
    periodic_rounds: bool = same_as(SimulateOptions, "periodic_rounds")
    start_s: float = option(
        0.0,
        "A job's own start-up time before its first step, for the JCT reference (a requeue costs --restart-s); "
        "with --learn a job is learned from only in windows after it.",
        unit="s",
        low=0.0,
        high=MAX_START_S,
        high_open=True,
    )
    allow_user: tuple[str, ...] = option(
        (),
        "Act on opted-in jobs of this Slurm user (repeatable). With no --allow-user and no --allow-account: the "
        "user the agent runs as, and no one else.",
        metavar="NAME",
    )
    allow_account: tuple[str, ...] = option(
        (), "Act on opted-in jobs of this Slurm account (repeatable).", metavar="NAME"
    )
    metrics_port: int | None = _port_option(
        "Serve the agent's own Prometheus metrics on this port (/metrics: rounds, Slurm calls, jobs, delta, planned "
        "and measured GPU power) for Prometheus to scrape; off by default."
    )
    metrics_address: str = _address_option("Address the metrics are served on")
    quiet: bool = option(False, "Log only notes and faults.", flag="--quiet", short="-q")

    RULES: ClassVar[tuple[Rule, ...]] = (
        ROUND_RULE,
        Rule(signal_needs_a_file, "signal_start requires carbon or price"),
        Rule(_some_rounds, "event_rounds or periodic_rounds"),
        Rule(_baseline_power_save, "policy slurm excludes power_save"),
        Rule(_power_down_saves, "power_down requires power saving"),
        requires("power_up", "power_down"),
        Rule(_steered_only, "tail_bound requires mode steered"),
        requires("power_cap_port", "power_cap_file"),
        requires("power_cap_port", "power_cap_token_file"),
        requires("power_cap_token_file", "power_cap_port"),
        requires("energy_budget_kwh", "budget_period_s"),
        requires("budget_period_s", "energy_budget_kwh"),
        _names("allow_user"),
        _names("allow_account"),
    )

    def decision_policy(self) -> str:
        """The policy that decides each round: ``--policy``, a baseline's (:data:`AGENT_BASELINES`) for its name."""
        return AGENT_BASELINES[self.policy][0] if self.policy in AGENT_BASELINES else self.policy

    def powers_down(self) -> bool:
        """Whether the cluster powers idle nodes down: ``--power-save``, or a baseline that names it."""
        return _saves_power(self.power_save, self.policy)

    def steering(self) -> Steering:
        """The steering record of the options (:class:`~planner.sim.governor.Steering`), fractions for percents."""
        from wattplan.planner.sim.governor import Steering

        rule: GovernorRule = "accrued" if self.governor == "accrued" else "projected"
        pace: TailPace = "fastest" if self.tail_pace == "fastest" else "steady"
        tail = None if self.tail_bound is None else self.tail_bound / 100.0
        return Steering(self.jct_increase(), rule, self.delta_max, self.signal_aware, tail, pace)

    def co_locates(self) -> bool:
        """Whether the agent pairs jobs.

        ``--pairs``/``--no-pairs`` as given, off by default: on Slurm 22.05 and 24.11 a guest keeps the GPUs it
        was submitted with (``benchmarks/guest_gres.sh``), so it waits for GPUs of its own on its host's node, and
        the prolog runs it on them alone: no pair forms, and it may wait where Slurm alone would have started it
        elsewhere (benchmarks/RESULTS.md, "Pairs on Slurm"). ``--policy eaco`` always does (its lever).
        """
        if self.decision_policy() == "eaco":
            return True
        return bool(self.pairs)

    def jct_increase(self) -> float | None:
        """The JCT bound as a fraction (``--max-jct-increase`` / 100); None with ``--no-jct-bound`` or by job."""
        return self.max_jct_increase / 100.0 if self.jct_bound and self.mode == "steered" else None

    def rules(self) -> RoundRules:
        """The round's rules.

        By job (``--mode by-job``): the Slurm start rule, the slowdown limit (``--max-slowdown``, default
        :data:`BY_JOB_SLOWDOWN_PCT`), ``delta`` :data:`BY_JOB_DELTA` and the energy objective unless another is
        given. Steered: the options as given, the objective by default efficiency with the JCT bound, progress
        without it.
        """
        if self.mode == "by-job":
            objective: Objective = self.objective or "energy"  # type: ignore[assignment]
            slowdown = (BY_JOB_SLOWDOWN_PCT if self.max_slowdown is None else self.max_slowdown) / 100.0
            return RoundRules(self.round_s, self.restart_s, self.min_pair_rate, objective, BY_JOB_DELTA, slowdown, True)
        objective = self.objective or ("efficiency" if self.jct_bound else "progress")  # type: ignore[assignment]
        slowdown_or_none = None if self.max_slowdown is None else self.max_slowdown / 100.0
        return RoundRules(
            self.round_s,
            self.restart_s,
            self.min_pair_rate,
            objective,
            self.delta,
            slowdown_or_none,
            self.slurm_starts,
            self.pin_running,
        )

    def request(self) -> PlanRequest:
        """The solve request: the replay's (:data:`REPLAY_REQUEST`) with the solve options given."""
        return dataclasses.replace(
            REPLAY_REQUEST,
            solver=self.solver,
            time_limit_s=self.time_limit_s,
            threads=self.threads,
            seed=self.seed,
            node_limit=self.node_limit,
            horizon=self.horizon,
        )

    def allowed(self) -> Allowed:
        """Whose opted-in jobs the agent acts on (its own user's when neither list is given)."""
        return Allowed.of(self.allow_user, self.allow_account)

    def state_path(self) -> Path:
        """The state file: ``--state``, else ``agent.db`` in ``--cluster``, else ``./wattplan-agent.db``."""
        if self.state is not None:
            return self.state
        return self.cluster / CLUSTER_STATE_NAME if self.cluster is not None else STATE_FILE

    def settings_path(self) -> Path | None:
        """``--settings-dir``; by default the emulated cluster's, else :data:`DEFAULT_SETTINGS_DIR`.

        None for an emulated cluster's default: its manifest names the folder (:func:`planner.agent.run.environment`).
        """
        if self.settings_dir is not None or self.cluster is not None:
            return self.settings_dir
        return DEFAULT_SETTINGS_DIR
