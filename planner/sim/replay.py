"""One call from options to written results: what ``wattplan simulate`` and the benchmark run.

:func:`prepare` reads the trace and the profile library and builds the workload and cluster
context; :func:`run_policy` replays one policy with a fresh budget; :func:`write_outputs`
writes one folder per replay (or the files directly in ``out`` for a single policy) and the
comparison plots at the top of ``out``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wattplan.planner.console.list_options import Bounds
from wattplan.planner.contracts.defaults import DELTA_MAX, GPUS_PER_NODE, MAX_ROUNDS, NODE_POWER_W
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import DELTA_RANGE, RoundRules, rules_problems
from wattplan.planner.files.resources import resolve_signal
from wattplan.planner.planning import energy_floor, request_problems
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.profile_library.priors import with_prior_types
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import MAX_TRACE_S, TraceFormat, read_trace, trace_format
from wattplan.planner.sim.budget import Budget, EnergyBudget, NoBudget, PowerCap, one_node_round_j, step_prices
from wattplan.planner.sim.decision_memo import ReplanOn
from wattplan.planner.sim.engine import ProgressCallback, SimConfig, SimResult, simulate
from wattplan.planner.sim.governor import DeltaSteer, GovernorRule, Steering
from wattplan.planner.sim.journal import ReplayJournal, inputs_sha256
from wattplan.planner.sim.learning import LearnConfig, ProfileLearner, learning_report
from wattplan.planner.sim.metrics import J_PER_KWH, summarise, with_reference
from wattplan.planner.sim.output import comparison_csv, write_dropped, write_result
from wattplan.planner.sim.plots import DEFAULT_FIGURES, FigureOptions, write_replay_plots
from wattplan.planner.sim.policies import PolicyOptions, expand_policy_names, make_policy
from wattplan.planner.sim.round_instance import ClusterContext, cluster_context, workload_instance
from wattplan.planner.sim.signals import (
    SignalClock,
    SignalKind,
    parse_signal_start,
    signal_clock,
    signal_cost,
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
    replan: ReplanOn = "rounds"
    """When each policy is asked again (:data:`planner.sim.decision_memo.ReplanOn`): every changed round (exact)
    or only at events (``--replan events``)."""
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
    learn_config: LearnConfig = field(default_factory=LearnConfig)


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


def signal_summary(result: SimResult, clocks: dict[SignalKind, SignalClock]) -> dict[str, Any]:
    """``carbon_kg`` and ``energy_cost_usd`` of the replay's rounds, and each signal's description."""
    out: dict[str, Any] = {}
    T = result.duration_s
    if "carbon" in clocks:
        out["carbon_kg"] = sum(signal_cost(clocks["carbon"], r.start_s, T, r.energy_j) for r in result.rounds) / 1e3
    if "price" in clocks:
        out["energy_cost_usd"] = sum(signal_cost(clocks["price"], r.start_s, T, r.energy_j) for r in result.rounds)
    if clocks:
        out["signals"] = {k: {**c.signal.info(), "offset_h": c.offset_h} for k, c in clocks.items()}
    return out


def steering(spec: ReplaySpec) -> Steering:
    """The replay's steering record (:class:`~planner.sim.governor.Steering`), as the agent builds its own."""
    return Steering(
        spec.max_jct_increase, spec.governor, spec.delta_max, spec.signal_aware, spec.tail_bound, spec.tail_pace
    )


def _steer(
    spec: ReplaySpec, ctx: ClusterContext, clocks: dict[SignalKind, SignalClock], ref: SimResult | None
) -> DeltaSteer | None:
    """The wattplan policy's per-round ``delta``: the JCT governor and/or the signal; None when both are off."""
    record = steering(spec)
    inner = None if ref is None else record.governor({s.id: s.finish_s for s in ref.jobs}, ctx.rules.delta)
    return record.steer(inner, ctx.rules.delta, clocks.get("carbon") or clocks.get("price"), ctx.rules.duration_s)


def reference_run(spec: ReplaySpec, workload: Workload, ctx: ClusterContext) -> tuple[SimResult, dict[str, Any]]:
    """The reference schedule: ``fifo-max`` on the same queue with no budget (a fraction of a second)."""
    return run_policy(replace(spec, power_cap_w=None, energy_budget_kwh=None), workload, ctx, "fifo-max")


def make_budget(spec: ReplaySpec, ctx: ClusterContext, workload: Workload, steer: DeltaSteer | None = None) -> Budget:
    """A fresh budget for one replay (an energy budget's round floor and reserve prices from ``ctx``).

    With a ``steer`` an energy budget is paced by its credit weight (the budget follows the signal;
    1 in every round without one).
    """
    if spec.power_cap_w is not None:
        return PowerCap(spec.power_cap_w)
    if spec.energy_budget_kwh is not None:
        prices = step_prices(workload_instance(ctx, [JobState.new(s) for s in workload.jobs]))
        weight = None if steer is None else steer.credit_weight_for_round
        return EnergyBudget(
            spec.energy_budget_kwh * J_PER_KWH, floor_j=one_node_round_j(ctx), prices=prices, weight=weight
        )
    return NoBudget()


def run_policy(
    spec: ReplaySpec,
    workload: Workload,
    ctx: ClusterContext,
    policy: str,
    progress: ProgressCallback | None = None,
    reference: SimResult | None = None,
    journal: ReplayJournal | None = None,
) -> tuple[SimResult, dict[str, Any]]:
    """Replay one policy; return the result and its summary (with the replay's settings).

    The runtime-bounded mode (``spec.max_jct_increase``) steers wattplan against ``reference``
    (:func:`reference_run`'s result; computed here when not given). A ``journal`` streams the rounds into
    its folder and checkpoints them; a checkpoint it holds is resumed (:mod:`planner.sim.journal`).
    """
    config = SimConfig(
        start_s=spec.start_s, max_rounds=spec.max_rounds, noise=spec.noise, seed=spec.seed, replan=spec.replan
    )
    clocks = signal_clocks(spec, workload)
    governor = None
    tail = None
    if policy == "wattplan":
        ref = None
        if spec.max_jct_increase is not None or spec.tail_bound is not None:
            ref = reference if reference is not None else reference_run(spec, workload, ctx)[0]
        governor = _steer(spec, ctx, clocks, ref)
        if ref is not None:
            tail = steering(spec).tail(ctx, {s.id: s.finish_s for s in ref.jobs}, ref.jobs)
    budget = make_budget(spec, ctx, workload, governor)
    learner = ProfileLearner(replace(ctx, truth=None), spec.learn_config) if spec.learn else None
    resume = None if journal is None else journal.load()
    if resume is not None:
        learner = resume.learner  # what it learned before the checkpoint
    result = simulate(
        workload,
        ctx,
        make_policy(policy, spec.policy_options),
        budget,
        config,
        progress,
        governor=governor,
        learner=learner,
        tail=tail,
        resume=resume,
        observer=journal,
    )
    if learner is not None:
        result.info["learning"] = learning_report(learner, ctx.real, result.decisions)
    result.info.update(
        {
            "workload": workload.source,
            "objective": ctx.rules.objective,
            "delta": ctx.rules.delta,
            "max_jct_increase": spec.max_jct_increase,
            "tail_bound": spec.tail_bound,
            "max_slowdown": spec.rules.max_slowdown,
            "restart_s": spec.rules.restart_s,
            "power_cap_w": spec.power_cap_w,
            "energy_budget_kwh": spec.energy_budget_kwh,
            "noise": spec.noise,
            "seed": spec.seed,
            "profiles": str(spec.profiles) if spec.profiles else "shipped",
            "truth": str(spec.truth) if spec.truth else "profiles",
            "learn": spec.learn,
        }
    )
    if policy == "wattplan":
        req = spec.policy_options.request
        result.info["solver"] = {
            "name": req.solver,
            "time_limit_s": req.time_limit_s,
            "threads": req.threads,
            "node_limit": req.node_limit,
        }
    if policy == "zeus":
        result.info["zeus_eta"] = spec.policy_options.zeus_eta
    if clocks:
        result.info["signal_aware"] = governor is not None and spec.signal_aware and policy == "wattplan"
    return result, {**summarise(result), **signal_summary(result, clocks)}


def replay_sha256(spec: ReplaySpec) -> str:
    """The identity a checkpoint records of its replay: the spec and the bytes of every file it reads."""
    files = (spec.trace, spec.profiles, spec.truth, spec.carbon, spec.price)
    return inputs_sha256(repr(spec), [None if f is None else resolve_signal(f) for f in files])


def journal_folder(out: Path, spec: ReplaySpec, policy: str) -> Path:
    """Where :func:`write_outputs` puts ``policy``'s files: ``out/<policy>``, for one policy as for several."""
    del spec  # the layout no longer depends on how many policies ran
    return Path(out) / policy


LEGACY_TOP_FILES = ("rounds.csv", "jobs.csv", "summary.json", "decisions.csv")
"""Files a one-policy replay wrote at the top of ``out`` before every policy had its folder (removed on rewrite)."""


def with_floor_and_reference(
    spec: ReplaySpec,
    workload: Workload,
    ctx: ClusterContext,
    runs: Sequence[tuple[SimResult, dict[str, Any]]],
) -> list[tuple[SimResult, dict[str, Any]]]:
    """Each run's summary with the workload's energy floor, captured share and JCT increase.

    The reference is the ``fifo-max`` run with no budget: taken from ``runs`` when one of them
    is, else replayed here (:func:`reference_run`).
    """
    ref = next((s for r, s in runs if r.policy == "fifo-max" and s["budget"] == "none"), None)
    if ref is None:
        ref = reference_run(spec, workload, ctx)[1]
    floor = workload_floor(workload, ctx)
    out = []
    for result, summary in runs:
        extended = with_reference(summary, ref, floor.energy_kwh)
        extended["energy_floor"] = {"note": floor.note, "paired_step_share": floor.paired_step_share}
        out.append((result, extended))
    return out


def write_outputs(
    out: Path,
    runs: Sequence[tuple[SimResult, dict[str, Any]]],
    plots: bool = True,
    dropped: Mapping[str, Sequence[str]] | None = None,
    figures: FigureOptions = DEFAULT_FIGURES,
) -> list[Path]:
    """Write every replay to ``out/<policy>/`` and the comparison to ``out/``; return the files written at the top.

    Each policy's folder holds ``summary.json``, ``rounds.csv`` and ``jobs.csv`` (one policy as several);
    ``comparison.csv``/``.json`` have one row per policy. A one-policy replay of an older version wrote its files at
    the top of ``out``: those are removed, so the folder holds one layout.

    ``dropped`` (:attr:`Workload.dropped_by_type`): the jobs not replayed, written to ``dropped.csv``
    (:func:`planner.sim.output.write_dropped`; an older one removed when none). ``plots``: the
    figures of :func:`planner.sim.plots.write_replay_plots`, in ``figures``' format.
    """
    out = Path(out)
    for result, summary in runs:
        write_result(result, summary, out / result.policy)
    for name in LEGACY_TOP_FILES:  # an older one-policy replay's files at the top would shadow the new ones
        (out / name).unlink(missing_ok=True)
    summaries = [s for _, s in runs]
    written = [path] if (path := write_dropped(out, dropped or {})) else []
    write_text_atomic(out / "comparison.csv", comparison_csv(summaries))
    write_json_atomic(out / "comparison.json", summaries)
    written += [out / "comparison.csv", out / "comparison.json"]
    if plots:
        written += write_replay_plots(out, {r.policy: r for r, _ in runs}, summaries, figures)
    return written
