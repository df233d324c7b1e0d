"""The replay's options, declared once: :class:`ReplayOptions`, :class:`SimulateOptions`, :class:`FrontierOptions`.

``wattplan simulate`` and ``wattplan frontier`` generate their options from these records (``planner.cli.faces``),
``wattplan.simulate`` and ``wattplan.frontier`` take the same keywords and check them with the record's
:meth:`~planner.contracts.options.OptionRecord.checked`, and :func:`planner.sim.session.replay_spec` and
:func:`~planner.sim.session.frontier_sweep` read the typed record. Each option's default, unit, range or choices and
help are written here once; the solve options take their units and ranges from
:class:`planner.planning.SolveOptions`, so a replay refuses what ``wattplan plan`` refuses, in the same words.

Not options of a record: the trace and ``--cluster`` (required inputs), the output folder, ``--plots``,
``--quiet`` and ``simulate``'s policies (``--policy``), whose defaults differ between the command line and Python
(each face declares its own). What needs more than a value and its range is checked where the spec is built: the
trace and the cluster (:mod:`planner.sim.session`), the items of the frontier's lists, the signal hour, the
policies' names and the solver on this machine (:func:`planner.sim.replay.check_spec`).

Percent options (``max_jct_increase``, ``tail_bound``) are percent here and fractions in the spec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from wattplan.planner import planning
from wattplan.planner.console.list_options import Bounds
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.figures import DPI_RANGE, PLOT_FORMATS
from wattplan.planner.contracts.options import (
    ROUND_RULE,
    OptionRecord,
    Rule,
    excludes,
    option,
    range_of,
    requires,
    same_as,
)
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.contracts.request import REPLAY_REQUEST, PlanRequest
from wattplan.planner.contracts.rules import DELTA_RANGE, OBJECTIVES
from wattplan.planner.executor import RAY_HELP
from wattplan.planner.rounds.cluster_spec import MAX_GPUS_PER_NODE, MAX_NODE_POWER_W, MIN_GPUS_PER_NODE

if TYPE_CHECKING:
    from wattplan.planner.sim.plots import FigureOptions

TRACE_FORMATS = ("auto", "gavel", "philly")
"""Trace formats (``--trace-format``, :data:`planner.rounds.traces.TraceFormat`): ``auto`` chooses by extension."""
GOVERNORS = ("accrued", "projected")
"""How ``--max-jct-increase`` compares JCTs (:data:`planner.sim.governor.GovernorRule`)."""
LIVE_GOVERNOR = "projected"
"""The rule of the live agent's loop by default: ``wattplan agent`` and ``simulate``, which replays
it. The replay measured ``accrued`` better on five of six workloads, but live it lost on ``gavel_mix`` (6.18 kWh
against 5.79) and won on ``philly_shape`` (3.67 against 3.73): when the replay and live disagree, live decides
(benchmarks/RESULTS.md, issue 43 second pass). The round-based replay, removed since, used ``accrued``."""
TAIL_PACES = ("steady", "fastest")
"""The rate ``--tail-bound`` assumes a job keeps (:data:`planner.sim.tail_bound.TailPace`)."""
MAX_TRACE_S = 1e9
"""The replay window's ends (``--start-s``, ``--end-s``) lie within ``±`` this many trace seconds: the value of
:data:`planner.rounds.traces.MAX_TRACE_S`, written here because that module loads pandas, which the command line
does not load to start (``tests/test_replay_options.py`` checks the two agree)."""
MAX_JCT_INCREASE_PCT = 1000.0
"""The largest JCT increase (percent) of ``--max-jct-increase`` and ``--tail-bound``: the high end of
:data:`planner.sim.replay.JCT_INCREASE_BOUNDS` (checked to agree, for the same reason)."""
JCT_INCREASE_ITEMS = Bounds(0.0, MAX_JCT_INCREASE_PCT, unit=" %")
"""The range of each item of ``frontier --max-jct-increase``, as its help says it."""
DELTA_ITEMS = Bounds(*DELTA_RANGE, high_open=True)
"""The range of each item of ``frontier --deltas``, as its help says it."""

REPLAY_SOLVER_HELP = (
    f"{planning.solver_help()}. Default {REPLAY_REQUEST.solver}: fastest to its plan; a replay reads no bound."
)
"""The solver help of every replay face (``simulate``, ``frontier``, ``agent``)."""
LIBRARY_METAVAR = "<path>"


def library_path(text: str) -> Path:
    """A profile library's path as given; an empty value (``Path("")`` is ``.``) or a NUL is refused.

    The command line's parser of ``--profiles``: its :class:`ValueError` becomes click's "Invalid value for
    '--profiles': ..." naming the option.
    """
    if not text.strip():
        raise ValueError("must name a profile library file, not an empty value")
    if "\x00" in text:
        raise ValueError("a file name cannot hold a NUL character")
    return Path(text)


def signal_needs_a_file(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """``signal_start`` names an hour of the carbon or the price signal: one of them must be given."""
    if values["signal_start"] is None or values["carbon"] is not None or values["price"] is not None:
        return []
    return [Problem("bad-option", label("signal_start"), f"needs {label('carbon')} or {label('price')}")]


def _budget_period(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """The energy budget is per period, as the agent's: a budget needs ``--budget-period-s`` and a period a budget."""
    budget, period = values.get("energy_budget_kwh"), values.get("budget_period_s")
    if budget is not None and period is None:
        why = f"needs {label('budget_period_s')}: the budget is per period, as the agent's"
        return [Problem("bad-option", label("energy_budget_kwh"), why)]
    if period is not None and budget is None:
        return [Problem("bad-option", label("budget_period_s"), f"needs {label('energy_budget_kwh')}")]
    return []


def _round_triggers(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """Rounds start on events, every ``--round-s``, or both (the loop's triggers, as the agent's); never on neither.

    An energy budget comes with its period (:func:`_budget_period`).
    """
    if not values.get("event_rounds", True) and not values.get("periodic_rounds", True):
        return [Problem("conflicting-options", label("periodic_rounds"), f"give it or {label('event_rounds')}")]
    return _budget_period(values, label)


@dataclass(frozen=True, kw_only=True)
class ReplayOptions(OptionRecord):
    """The options ``simulate`` and ``frontier`` share.

    The budget, the round, wattplan's solve, the trace's window, the cluster and profiles, the energy modes, the
    signals, the figures and where the replays run.
    """

    power_cap_w: float | None = option(
        None, "Power cap: a round's budget is cap x T.", unit="W", low=0.0, low_open=True
    )
    energy_budget_kwh: float | None = option(
        None,
        "Energy budget: the cluster draws at most this much in every --budget-period-s, paced round by round (as the "
        "agent's).",
        unit="kWh",
        low=0.0,
        low_open=True,
    )
    round_s: float = option(
        defaults.ROUND_S, "Round length T.", unit="s", low=defaults.ROUND_S_RANGE[0], high=defaults.ROUND_S_RANGE[1]
    )
    solver: str = option(REPLAY_REQUEST.solver, "wattplan's solver: " + REPLAY_SOLVER_HELP)
    time_limit: float = option(
        REPLAY_REQUEST.time_limit_s, "wattplan's seconds per round.", **range_of(planning.SolveOptions, "time_limit_s")
    )
    threads: int = option(REPLAY_REQUEST.threads, "Solver threads.", **range_of(planning.SolveOptions, "threads"))
    seed: int = option(
        REPLAY_REQUEST.seed, "Seed: solver, Philly job types, --noise.", **range_of(planning.SolveOptions, "seed")
    )
    node_limit: int | None = option(
        REPLAY_REQUEST.node_limit,
        "Branch-and-bound nodes per MIP stage (cbc, highs, scip). With --threads 1 and a time limit never reached, "
        "the same inputs give the same plans on any machine and load.",
        **range_of(planning.SolveOptions, "node_limit"),
    )
    horizon: int = option(
        REPLAY_REQUEST.horizon,
        "Rounds planned as one model, the first one run (1: this round alone; design §5.14).",
        **range_of(planning.SolveOptions, "horizon"),
    )
    max_jobs: int | None = option(None, "Replay the first N jobs (by arrival) of the window.", low=1)
    start_s: float | None = option(
        None, "Window start: jobs arriving from here.", unit="s", low=-MAX_TRACE_S, high=MAX_TRACE_S
    )
    end_s: float | None = option(
        None, "Window end: jobs arriving before this.", unit="s", low=-MAX_TRACE_S, high=MAX_TRACE_S
    )
    trace_format: str = option(
        "auto", "Trace format: auto (.csv is Philly), gavel, philly.", choices=TRACE_FORMATS, metavar="FMT"
    )
    vc: str | None = option(None, "Philly virtual cluster id to keep (e.g. 6214e9).")
    zeus_eta: float = option(defaults.ZEUS_ETA, "Zeus's weight of energy against time.", low=0.0, high=1.0)
    noise: float = option(
        0.0,
        "Throughput error: each job runs at U[1-x, 1+x] x the profile's throughput at its power, drawn at each "
        "job's start and every --round-s after it.",
        low=0.0,
        high=1.0,
        high_open=True,
    )
    restart_s: float | None = option(
        None,
        "Restart cost tau (default: what a restart costs on the simulated Slurm: the requeue delay, the launch and "
        "the checkpoint load).",
        unit="s",
        low=0.0,
    )
    min_pair_rate: float = option(
        defaults.MIN_PAIR_RATE, "Least slowdown either job of a pair may have.", low=0.0, high=1.0
    )
    governor: str | None = option(
        None,
        "How --max-jct-increase compares JCTs: accrued (time in system so far) or projected (whole JCTs, unfinished "
        f"work at full speed). Default: {LIVE_GOVERNOR}, the agent's.",
        choices=GOVERNORS,
    )
    delta_max: float = option(
        defaults.DELTA_MAX,
        "Largest delta --max-jct-increase sets per round.",
        low=DELTA_RANGE[0],
        high=DELTA_RANGE[1],
        high_open=True,
    )
    tail_bound: float | None = option(
        None,
        "Tail bound: wattplan gives the jobs the p95 reads the steps they need to finish within this many percent "
        "of Slurm alone's JCT just below the 95th percentile, which bounds the p95 JCT the same way; the few "
        "others (2 of 51 jobs), those whose deadline costs the most energy, get none (rounds with an energy budget "
        "excepted).",
        unit="%",
        low=0.0,
        high=MAX_JCT_INCREASE_PCT,
    )
    max_slowdown: float | None = option(
        None,
        "Slowdown limit: whenever a job runs it runs at least 1/(1 + x) as fast as its requested GPU count at full "
        "power would (x this many percent; fewer GPUs, a lower power limit or a pair only within it). It may still "
        "wait. The energy floor ignores it.",
        unit="%",
        low=0.0,
        high=MAX_JCT_INCREASE_PCT,
    )
    slurm_starts: bool = option(
        False,
        "Start each job when Slurm would (arrival order, first fit at its requested GPU count) and never stop a "
        "running one to wait: wattplan then chooses only how jobs run (GPU count, power limit, partner), within "
        "--max-slowdown. Rounds with an energy budget excepted.",
    )
    pin_running: bool = option(
        False,
        "No restarts: never move, resize, make a guest of or stop a running job; only its power limit or clock "
        "changes (implied by --slurm-starts). wattplan still chooses when each job starts and on what. Rounds with "
        "an energy budget excepted.",
    )
    tail_pace: str = option(
        "steady",
        "How --tail-bound paces a job: steady (held to the even pace that meets its deadline, once that pace is "
        "above its least-energy rate) or fastest (it may wait until only full speed meets it).",
        choices=TAIL_PACES,
    )
    carbon: Path | None = option(
        None, "Hourly carbon intensity CSV (gCO2/kWh), e.g. the shipped CISO_2022.csv: report kgCO2."
    )
    price: Path | None = option(None, "Hourly electricity price CSV ($/MWh): report energy cost.")
    signal_start: str | None = option(
        None, "Signal hour (ISO 8601, UTC) at which the replay starts; default the file's first."
    )
    signal_aware: bool = option(
        True,
        "wattplan follows the carbon (else price) signal against the day before: defers work in dirty or dear hours "
        "and runs harder in clean or cheap ones (efficiency objective).",
    )
    max_rounds: int = option(defaults.MAX_ROUNDS, "Stop after this many simulated rounds.", low=1)
    gpus_per_node: int = option(defaults.GPUS_PER_NODE, "GPUs per node.", low=MIN_GPUS_PER_NODE, high=MAX_GPUS_PER_NODE)
    node_power_w: float = option(
        defaults.NODE_POWER_W,
        "Node base power (CPU, memory, fans); an assumption, not measured data.",
        unit="W",
        low=0.0,
        high=MAX_NODE_POWER_W,
    )
    profiles: Path | None = option(
        None,
        "Profile library the planner and the baselines believe (default: the shipped one).",
        parser=library_path,
        metavar=LIBRARY_METAVAR,
    )
    truth: Path | None = option(
        None,
        "Profile library jobs really run and draw power by (default: the same as --profiles); make one with "
        "`wattplan profiles truth`.",
    )
    learn: bool = option(
        False,
        "Each policy corrects its profiles from the steps and power it observes, window by window (the jobs that "
        "ran a whole window in one configuration).",
    )
    plot_format: str = option(
        "png", "Figure files: png (raster, --dpi), pdf or svg (vector, for a paper).", choices=PLOT_FORMATS
    )
    dpi: int = option(
        defaults.FIGURE_DPI, "Resolution of PNG figures.", unit="dpi", low=DPI_RANGE[0], high=DPI_RANGE[1]
    )
    ray: str | None = option(None, RAY_HELP)

    RULES: ClassVar[tuple[Rule, ...]] = (
        excludes("power_cap_w", "energy_budget_kwh"),
        ROUND_RULE,
        Rule(signal_needs_a_file, "signal_start requires carbon or price"),
    )
    LISTS: ClassVar[tuple[str, ...]] = ()
    """Text options that hold a comma-separated list: from Python a list or tuple, joined with commas."""

    @classmethod
    def checked(cls, values: Mapping[str, Any] | None = None, **more: Any) -> Self:
        """The record of ``values`` and ``more``, checked (:meth:`OptionRecord.checked`), as Python spells them too.

        A path option may be a text (``carbon="CISO_2022.csv"``) and a list option (:attr:`LISTS`) a list or tuple
        (``deltas=[0.03, 0.2]``: the command line's ``0.03,0.2``), as ``wattplan.simulate`` took them before the
        record.
        """
        given = {**(values or {}), **more}
        for opt in cls.options():
            value = given.get(opt.name)
            if opt.kind is Path and isinstance(value, str):
                given[opt.name] = Path(value)
            elif opt.name in cls.LISTS and isinstance(value, list | tuple):
                given[opt.name] = ",".join(str(item) for item in value)
        return super().checked(given)

    def request(self) -> PlanRequest:
        """The plan request of each round: :data:`~planner.contracts.request.REPLAY_REQUEST`, these options set."""
        return dataclasses.replace(
            REPLAY_REQUEST,
            solver=self.solver,
            time_limit_s=self.time_limit,
            threads=self.threads,
            seed=self.seed,
            node_limit=self.node_limit,
            horizon=self.horizon,
        )

    def figures(self) -> FigureOptions:
        """How the figures are saved: ``plot_format`` and ``dpi``."""
        from wattplan.planner.sim.plots import FigureOptions

        return FigureOptions(self.plot_format, self.dpi)  # type: ignore[arg-type]  # one of PLOT_FORMATS


PASS_DELAY_REAL_S = 0.4
"""Real seconds from a change that may let a job start (a submission, a release, GPUs freed, a node up) to Slurm's
pass that starts it: the median from the agent's ``scontrol release`` to Slurm's start over the 360 starts of nine
live runs on the emulated cluster, 0.41 s (``benchmarks/slurm_latency.py``, benchmarks/RESULTS.md "The replay's
Slurm waits")."""
COMPLETING_REAL_S = 0.3
"""Real seconds a job that ended stays ``COMPLETING`` in the queue, holding its GPUs: from Slurm's ``_job_complete``
to the job's absence from ``squeue``, median 0.31 s over 40 jobs on the emulated cluster
(``benchmarks/completing_time.py``)."""


@dataclass(frozen=True, kw_only=True)
class SimulateOptions(ReplayOptions):
    """``wattplan simulate`` and ``wattplan.simulate``.

    The shared options, wattplan's objective and ``delta``, the runtime-bounded mode, a fresh start and the
    policies replayed at once.
    """

    objective: str | None = option(
        None, "wattplan's objective (default progress: fastest, not least energy).", choices=OBJECTIVES
    )
    delta: float = option(
        defaults.DELTA,
        "Progress the energy objective gives up per round.",
        low=DELTA_RANGE[0],
        high=DELTA_RANGE[1],
        high_open=True,
    )
    max_jct_increase: float | None = option(
        None,
        "Runtime-bounded energy mode: least energy with an average JCT at most this many percent above Slurm "
        "alone's on the same queue (wattplan plans with the efficiency objective, or energy if --objective energy is "
        "given; delta steered per round).",
        unit="%",
        low=0.0,
        high=MAX_JCT_INCREASE_PCT,
    )
    fresh: bool = option(
        False,
        "Start over: ignore what --out holds (by default, rerun with the same options and inputs, a replay reads back "
        "every policy that finished and replays the others from their start).",
        flag="--fresh",
    )
    workers: int = option(1, "Policies replayed at once, each in its own process (1: one after another).", low=1)
    time_scale: float = option(
        1.0,
        "emulated seconds per real second, as cluster up --time-scale (the agent reads Slurm's queue every "
        "--poll-s real seconds).",
        low=0.0,
        low_open=True,
        high=1e4,
    )
    load_s: float = option(30.0, "a job's checkpoint load at every start, the first included.", unit="s", low=0.0)
    event_rounds: bool = option(
        True,
        "As the agent: also start a round when a job arrives or leaves (--no-event-rounds: fixed rounds).",
    )
    poll_s: float = option(
        1.0,
        "As the agent: real seconds between two reads of Slurm's queue while waiting for a round; a job that "
        "arrives or leaves starts a round at the first read that sees it (--time-scale times as long in emulated "
        "time).",
        unit="s",
        low=0.1,
        high=60.0,
    )
    periodic_rounds: bool = option(
        True,
        "As the agent: start a round every --round-s even when no job arrived or left "
        "(--no-periodic-rounds: only then, and every --round-s while nothing runs; as fast as the events).",
    )
    requeue_delay_s: float | None = option(
        None,
        "from a requeue until Slurm may start the job again (default 6 real seconds x --time-scale; "
        "every start then takes Slurm a real second more).",
        unit="s",
        low=0.0,
    )
    pass_delay_s: float | None = option(
        None,
        "from a change that may let a job start (a submission, a release, GPUs freed) to Slurm's scheduler pass "
        f"that starts it (default {PASS_DELAY_REAL_S:g} real seconds x --time-scale, as measured on the emulated "
        "cluster).",
        unit="s",
        low=0.0,
    )
    completing_s: float | None = option(
        None,
        f"how long a job that ended stays COMPLETING, holding its GPUs (default {COMPLETING_REAL_S:g} real seconds x "
        "--time-scale, "
        "as measured on the emulated cluster).",
        unit="s",
        low=0.0,
    )
    power_save: bool = option(
        False,
        "As the agent: idle nodes are powered down by Slurm's power saving; the agent prices what "
        "a powered node draws and fills powered nodes first (policy slurm-powersave: Slurm alone with it).",
        flag="--power-save",
    )
    power_down: bool = option(
        False,
        "As the agent (with --power-save): wattplan also powers idle nodes down at once, keeping on those the last "
        "hour's arrivals are expected to need within a node's off-and-on cycle, and more where the JCT limit "
        "(--max-slowdown, --max-jct-increase, --tail-bound) cannot pay for a burst's wait for a boot (SuspendTime "
        "still applies).",
    )
    power_up: bool = option(
        False,
        "As the agent (with --power-down): wattplan also boots powered-down nodes ahead of the jobs when the queue "
        "grew over the last off-and-on cycle (GPUs asked for less those of the jobs that ended) by more than the "
        "powered nodes' free GPUs, so that a burst's jobs wait less for a boot.",
    )
    pairs: bool = option(
        False,
        "As the agent: the agent's policies co-locate pairs on shared GPUs (policy eaco always does). With "
        "--slurm-starts a pair forms only when a job starts and no running job restarts for one; otherwise a running "
        "job that becomes a guest or loses its host restarts.",
    )
    progress_metric: bool = option(
        True,
        "jobs export their steps to the agent (wattplan_job_steps_done); --no-progress-metric: "
        "none does, as most real training jobs, and the agent estimates them from the profiles.",
    )
    suspend_s: float = option(
        600.0, "power saving powers a node down after this long idle (SuspendTime).", unit="s", low=0.0
    )
    resume_s: float = option(
        300.0,
        "power saving boots a powered-down node given a job in this long (ResumeProgram).",
        unit="s",
        low=0.0,
    )
    up_before_s: float = option(
        0.0,
        "the cluster is up, every node on and idle, this long before the first arrival (a live "
        "run's time from cluster up to its first submission): power saving's idle timers count from then, and "
        "energy too.",
        unit="s",
        low=0.0,
    )
    budget_period_s: float | None = option(
        None,
        "the budget's period: the cluster draws at most --energy-budget-kwh in every period, back "
        "to back from the cluster's start (the first arrival, less --up-before-s).",
        unit="s",
        low=0.0,
        low_open=True,
    )
    power_cap_schedule: Path | None = option(
        None,
        "a power cap that moves, a CSV of t_s (s from the first arrival) and power_cap_w (W or "
        "none), written to the agent's --power-cap-file as the clock reaches each step (--power-cap-w before).",
        metavar="CSV",
    )

    RULES: ClassVar[tuple[Rule, ...]] = (
        *ReplayOptions.RULES,
        Rule(_round_triggers, "rounds on events, periodic or both; a budget needs its period"),
        requires("power_down", "power_save"),
        requires("power_up", "power_down"),
    )


@dataclass(frozen=True, kw_only=True)
class FrontierOptions(ReplayOptions):
    """``wattplan frontier`` and ``wattplan.frontier``.

    The shared options, the swept deltas and JCT increases (lists), the baselines beside them, the swept points'
    objective, the replays run at once, and the simulated Slurm's own options, declared once by
    :class:`SimulateOptions`.
    """

    objective: str = option(
        "efficiency",
        "Objective of the swept points: efficiency or energy (progress is always one point).",
        choices=OBJECTIVES,
    )
    deltas: str = option(
        "0.03,0.1,0.2,0.3", f"Energy-objective deltas to sweep, comma-separated (each in {DELTA_ITEMS})."
    )
    max_jct_increase: str = option(
        "0,5,10,20",
        f"Runtime-bounded mode: JCT increases to sweep, percent, comma-separated (each in {JCT_INCREASE_ITEMS}).",
    )
    baselines: str = option(
        "all",
        "Baselines to place beside the front, comma-separated, or all (the built-in policies and slurm, "
        "slurm-powersave and maxq).",
    )
    workers: int = option(2, "Replays run at once, each in its own process (with --ray: Ray tasks in flight).", low=1)
    time_scale: float = same_as(SimulateOptions, "time_scale")
    load_s: float = same_as(SimulateOptions, "load_s")
    event_rounds: bool = same_as(SimulateOptions, "event_rounds")
    poll_s: float = same_as(SimulateOptions, "poll_s")
    periodic_rounds: bool = same_as(SimulateOptions, "periodic_rounds")
    requeue_delay_s: float | None = same_as(SimulateOptions, "requeue_delay_s")
    pass_delay_s: float | None = same_as(SimulateOptions, "pass_delay_s")
    completing_s: float | None = same_as(SimulateOptions, "completing_s")
    power_save: bool = same_as(SimulateOptions, "power_save")
    power_down: bool = same_as(SimulateOptions, "power_down")
    power_up: bool = same_as(SimulateOptions, "power_up")
    pairs: bool = same_as(SimulateOptions, "pairs")
    progress_metric: bool = same_as(SimulateOptions, "progress_metric")
    suspend_s: float = same_as(SimulateOptions, "suspend_s")
    resume_s: float = same_as(SimulateOptions, "resume_s")
    up_before_s: float = same_as(SimulateOptions, "up_before_s")
    budget_period_s: float | None = same_as(SimulateOptions, "budget_period_s")
    power_cap_schedule: Path | None = same_as(SimulateOptions, "power_cap_schedule")

    LISTS: ClassVar[tuple[str, ...]] = ("deltas", "max_jct_increase", "baselines")
    RULES: ClassVar[tuple[Rule, ...]] = (
        *ReplayOptions.RULES,
        Rule(_round_triggers, "rounds on events, periodic or both; a budget needs its period"),
        requires("power_down", "power_save"),
        requires("power_up", "power_down"),
    )
