"""A replay specified and prepared: what ``wattplan simulate``, ``frontier`` and the benchmarks replay.

:class:`ReplaySpec` holds every option of a replay; :func:`check_spec` reports every bad one at once; :func:`prepare`
reads the trace and the profile library and builds the workload and the cluster context, which
:func:`planner.control.slurm_replay.replay_on_slurm` replays on the simulated Slurm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from wattplan.planner.console.list_options import Bounds
from wattplan.planner.contracts.defaults import DELTA_MAX, GPUS_PER_NODE, MAX_ROUNDS, NODE_POWER_W
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import DELTA_RANGE, RoundRules, rules_problems
from wattplan.planner.planning import energy_floor, request_problems
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.profile_library.priors import with_prior_types
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import MAX_TRACE_S, TraceFormat, read_trace, trace_format
from wattplan.planner.sim.governor import GovernorRule, Steering
from wattplan.planner.sim.policies import PolicyOptions, expand_policy_names
from wattplan.planner.sim.round_instance import ClusterContext, cluster_context, workload_instance
from wattplan.planner.sim.signals import (
    SignalClock,
    SignalKind,
    parse_signal_start,
    signal_clock,
)
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import TailPace
from wattplan.planner.sim.workload import Workload, build_workload, dropped_text, select_jobs

DELTA_BOUNDS = Bounds(*DELTA_RANGE, high_open=True)
"""Allowed ``delta`` (progress the energy objective gives up per round, a fraction), :data:`DELTA_RANGE` as the
bounds of a list option: ``frontier --deltas``."""
JCT_INCREASE_BOUNDS = Bounds(0.0, 1000.0, unit=" %")
"""Allowed runtime-bounded JCT increase, in percent (``--max-jct-increase``; the spec holds the fraction)."""


@dataclass(frozen=True)
class ReplaySpec:
    """Everything a replay needs (units in the names; budgets: at most one of the two)."""

    trace: Path
    cluster: str
    policies: tuple[str, ...] = ("wattplan",)
    fmt: TraceFormat = "auto"
    virtual_cluster: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    max_jobs: int | None = None
    rules: RoundRules = field(default_factory=RoundRules)
    power_cap_w: float | None = None
    energy_budget_kwh: float | None = None
    policy_options: PolicyOptions = field(default_factory=PolicyOptions)
    noise: float = 0.0
    seed: int = 0
    max_rounds: int = MAX_ROUNDS
    gpus_per_node: int = GPUS_PER_NODE
    node_power_w: float = NODE_POWER_W
    profiles: Path | None = None
    max_jct_increase: float | None = None
    """Runtime-bounded energy mode: wattplan's average JCT at most ``1 + x`` times the reference's
    (fraction; :mod:`planner.sim.governor`); wattplan then plans with ``efficiency`` (or ``energy`` if asked)."""
    carbon: Path | None = None
    """Hourly carbon intensity (gCO2/kWh, :mod:`planner.sim.signals`): every replay reports kgCO2."""
    price: Path | None = None
    """Hourly electricity price ($/MWh): every replay reports its cost."""
    signal_start: str | None = None
    """The signal hour (ISO 8601, UTC) at which the replay starts; default the file's first hour."""
    signal_aware: bool = True
    """wattplan steers its ``delta`` by the carbon signal (else the price signal) when one is given."""
    truth: Path | None = None
    """Profile library jobs really run by (``--truth``); None: the planning library (``profiles``) is the truth."""
    tail_pace: TailPace = "steady"
    """The rate the tail bound assumes a job keeps after the round (:attr:`~planner.sim.tail_bound.TailBound.pace`)."""
    governor: GovernorRule = "accrued"
    """How the runtime-bounded mode compares JCTs (:class:`~planner.sim.governor.JctGovernor`): accrued time,
    or whole JCTs with the unfinished work projected."""
    delta_max: float = DELTA_MAX
    """The largest ``delta`` the runtime-bounded mode sets."""
    tail_bound: float | None = None
    """Per-job tail bound (fraction): wattplan keeps the JCTs the p95 reads within ``1 + x`` of the reference's
    p95 order statistics (:mod:`planner.sim.tail_bound`), which bounds the p95 JCT the same way."""
    learn: bool = False
    """Each replayed policy learns its profiles from every round's observations (:mod:`planner.sim.learning`)."""


def expand_policies(names: Sequence[str]) -> tuple[str, ...]:
    """Policy names in the given order, ``all`` meaning every built-in policy; unknown names raise.

    Plug-in policies (registered or entry points, :mod:`planner.sim.policies.registry`) are known by name.
    """
    return expand_policy_names(names, "--policy")


def check_spec(spec: ReplaySpec, options: Mapping[str, str] | None = None) -> None:
    """Every bad option at once, as an :class:`InputError` naming the option.

    ``options`` renames an option to the one the user gave for this spec's value (``frontier`` sets each
    point's ``delta`` from ``--deltas``: ``{"--delta": "--deltas"}``); unnamed options keep their names.
    """
    names = options or {}

    def bad(option: str, message: str) -> Problem:
        return Problem("bad-option", names.get(option, option), message)

    problems = []
    if spec.power_cap_w is not None and spec.energy_budget_kwh is not None:
        problems.append(Problem("conflicting-options", "--power-cap-w", "give --power-cap-w or --energy-budget-kwh"))
    problems += rules_problems(spec.rules, {"duration_s": "--round-s"})
    for name, value in (
        ("--power-cap-w", spec.power_cap_w),
        ("--energy-budget-kwh", spec.energy_budget_kwh),
        ("--max-rounds", spec.max_rounds),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):  # NaN is neither <= 0 nor > 0
            problems.append(bad(name, f"must be finite and > 0, got {value}"))
    for name, value in (("--start-s", spec.start_s), ("--end-s", spec.end_s)):
        # the replay clock runs from --start-s by rounds: at -1e308 it never reached the first arrival (a hang)
        if value is not None and not -MAX_TRACE_S <= value <= MAX_TRACE_S:
            problems.append(bad(name, f"must be in [{-MAX_TRACE_S:g}, {MAX_TRACE_S:g}] trace s, got {value}"))
    if spec.max_jobs is not None and spec.max_jobs <= 0:
        problems.append(bad("--max-jobs", f"must be > 0, got {spec.max_jobs}"))
    if not 0.0 <= spec.noise < 1.0:
        problems.append(bad("--noise", f"must be in [0, 1), got {spec.noise}"))
    if not 0.0 <= spec.policy_options.zeus_eta <= 1.0:
        problems.append(bad("--zeus-eta", f"must be in [0, 1], got {spec.policy_options.zeus_eta}"))
    problems += rules_problems(
        spec.rules, {"restart_s": names.get("--restart-s", "--restart-s"), "delta": names.get("--delta", "--delta")}
    )
    if spec.max_jct_increase is not None and spec.max_jct_increase * 100 not in JCT_INCREASE_BOUNDS:
        problems.append(
            bad("--max-jct-increase", f"must be in {JCT_INCREASE_BOUNDS}, got {spec.max_jct_increase * 100:g} %")
        )
    if not 0.0 <= spec.delta_max < 1.0:
        problems.append(bad("--delta-max", f"must be in [0, 1), got {spec.delta_max}"))
    if spec.tail_bound is not None and spec.tail_bound * 100 not in JCT_INCREASE_BOUNDS:
        problems.append(bad("--tail-bound", f"must be in {JCT_INCREASE_BOUNDS}, got {spec.tail_bound * 100:g} %"))
    slowdown = spec.rules.max_slowdown
    if slowdown is not None and slowdown * 100 not in JCT_INCREASE_BOUNDS:
        problems.append(bad("--max-slowdown", f"must be in {JCT_INCREASE_BOUNDS}, got {slowdown * 100:g} %"))
    if spec.signal_start is not None and spec.carbon is None and spec.price is None:
        problems.append(Problem("bad-option", "--signal-start", "needs --carbon or --price"))
    elif spec.signal_start is not None:
        try:
            parse_signal_start(spec.signal_start, "--signal-start")
        except InputError as exc:
            problems += exc.problems
    if "wattplan" in spec.policies:
        problems += request_problems(spec.policy_options.request)
    if problems:
        raise InputError("options", problems)


def truth_coverage_problems(
    truth: ProfileLibrary, profiles: ProfileLibrary, profiles_name: str = "the profiles library"
) -> list[Problem]:
    """What ``truth`` lacks to replay plans made with ``profiles``: each job type and GPU type ``profiles`` has.

    The replay reads every job's real rate and power from the truth, so a type missing there would
    fail mid-replay; checked before round 1 instead.
    """
    problems = []
    wanted = (
        ("job type", "profiles", {p.type for p in profiles.profiles}, {p.type for p in truth.profiles}),
        ("GPU type", "gpu_types", set(profiles.gpu_types), set(truth.gpu_types)),
    )
    for what, path, need, have in wanted:
        if missing := sorted(need - have):
            problems.append(Problem("truth-missing-type", path, f"no {what}(s) {missing}, which {profiles_name} has"))
    return problems


def _empty_selection(spec: ReplaySpec) -> str:
    """Why no job is replayed, naming the selecting options that were given (the trace file is named apart)."""
    given = [
        f"{name} {value:g}" if isinstance(value, float | int) else f"{name} {value}"
        for name, value in (
            ("--start-s", spec.start_s),
            ("--end-s", spec.end_s),
            ("--max-jobs", spec.max_jobs),
            ("--vc", spec.virtual_cluster),
        )
        if value is not None
    ]
    return "no job of the trace is selected" + (f" by {', '.join(given)}" if given else "")


def libraries(spec: ReplaySpec, lib: ProfileLibrary | None = None) -> tuple[ProfileLibrary, ProfileLibrary]:
    """The library ``spec``'s policies plan with and the one its jobs really run by (the same without a truth).

    A GPU type of the cluster with a public spec but no profiles is replayed on its prior (design §9.8), as it
    would be planned; only such a type may be true to its prior, and a truth missing a measured type is refused.
    """
    names = [name for name, _ in parse_cluster_spec(spec.cluster, spec.gpus_per_node, spec.node_power_w).gpus]
    library, from_prior = with_prior_types(lib or load_profile_library(spec.profiles), names)
    if spec.truth is None:
        return library, library
    real, _ = with_prior_types(load_profile_library(spec.truth), from_prior)
    named = f"--profiles {Path(spec.profiles).name}" if spec.profiles else "the shipped profile library"
    if problems := truth_coverage_problems(real, library, named):
        raise InputError(str(spec.truth), problems)
    return library, real


def prepare(spec: ReplaySpec, lib: ProfileLibrary | None = None) -> tuple[Workload, ClusterContext]:
    """The workload and the cluster context of ``spec`` (bad input raises :class:`InputError`)."""
    check_spec(spec)
    cluster = parse_cluster_spec(spec.cluster, spec.gpus_per_node, spec.node_power_w)
    library, real = libraries(spec, lib)
    ctx = cluster_context(cluster, library, effective_rules(spec))
    if spec.truth is not None:
        ctx = replace(ctx, truth=cluster_context(cluster, real, ctx.rules))
    # A Philly row gives a duration; its steps are what the job really did in it (the truth's rate).
    trace_jobs = read_trace(spec.trace, real, spec.fmt, spec.seed, spec.virtual_cluster)
    chosen = select_jobs(trace_jobs, spec.start_s, spec.end_s, spec.max_jobs)
    source = {
        "trace": Path(spec.trace).name,
        "format": trace_format(spec.trace, spec.fmt),
        "virtual_cluster": spec.virtual_cluster,
        "start_s": spec.start_s,
        "end_s": spec.end_s,
        "max_jobs": spec.max_jobs,
        "cluster": spec.cluster,
    }
    workload = build_workload(chosen, library, ctx.type_names, source)
    if not workload.jobs and workload.dropped:
        why = f"every selected job is dropped: {dropped_text(workload.dropped_by_type, ctx.type_names)}"
        raise InputError(str(spec.trace), [Problem("no-profiled-job", "(jobs)", why)])
    if not workload.jobs:
        raise InputError(str(spec.trace), [Problem("empty-replay", "(selection)", _empty_selection(spec))])
    signal_clocks(spec, workload)  # a bad signal file stops the replay before any policy runs
    return workload, ctx


def effective_rules(spec: ReplaySpec) -> RoundRules:
    """The round rules the replay uses: the runtime-bounded mode plans with ``efficiency`` unless ``energy`` is asked.

    ``efficiency`` captured 74% of the achievable saving against ``energy``'s 55% (benchmarks/RESULTS.md).
    """
    if spec.max_jct_increase is None or spec.rules.objective in ("energy", "efficiency"):
        return spec.rules
    return replace(spec.rules, objective="efficiency")


def workload_floor(workload: Workload, ctx: ClusterContext) -> EnergyFloor:
    """The energy floor of every job of the workload, whole, under the truth (:func:`planner.planning.energy_floor`)."""
    return energy_floor(workload_instance(ctx.real, [JobState.new(s) for s in workload.jobs]))


def signal_clocks(spec: ReplaySpec, workload: Workload) -> dict[SignalKind, SignalClock]:
    """The replay's signals on its clock: hour ``signal_start`` of each file at the replay's start."""
    t0 = spec.start_s if spec.start_s is not None else min(j.arrival_s for j in workload.jobs)
    named: tuple[tuple[SignalKind, Path | None], ...] = (("carbon", spec.carbon), ("price", spec.price))
    return {kind: signal_clock(kind, path, t0, spec.signal_start) for kind, path in named if path is not None}


def steering(spec: ReplaySpec) -> Steering:
    """The replay's steering record (:class:`~planner.sim.governor.Steering`), as the agent builds its own."""
    return Steering(
        spec.max_jct_increase, spec.governor, spec.delta_max, spec.signal_aware, spec.tail_bound, spec.tail_pace
    )
