"""One call from options to written results: what ``wattplan simulate`` and the benchmark run.

:func:`prepare` reads the trace and the profile library and builds the workload and cluster
context; :func:`run_policy` replays one policy with a fresh budget; :func:`write_outputs`
writes one folder per replay (or the files directly in ``out`` for a single policy) and the
comparison plots at the top of ``out``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.defaults import GPUS_PER_NODE, NODE_POWER_W
from planner.jsonio import write_json_atomic, write_text_atomic
from planner.planning import request_problems
from planner.problems import InputError, Problem
from planner.round_builder import (
    ProfileLibrary,
    TraceFormat,
    load_profile_library,
    parse_cluster_spec,
    read_trace,
    trace_format,
)
from planner.sim.budget import Budget, EnergyBudget, NoBudget, PowerCap, one_node_round_j
from planner.sim.engine import ProgressCallback, SimConfig, SimResult, simulate
from planner.sim.metrics import J_PER_KWH, summarise
from planner.sim.output import comparison_csv, write_result
from planner.sim.plots import energy_jct_plot, jct_cdf_plot, power_plot, summary_points
from planner.sim.policies import POLICY_NAMES, PolicyOptions, make_policy
from planner.sim.round_instance import ClusterContext, RoundRules, cluster_context
from planner.sim.workload import Workload, build_workload, select_jobs


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
    max_rounds: int = 20_000
    gpus_per_node: int = GPUS_PER_NODE
    node_power_w: float = NODE_POWER_W
    profiles: Path | None = None


def expand_policies(names: Sequence[str]) -> tuple[str, ...]:
    """Policy names in the given order, ``all`` meaning every policy; unknown names raise."""
    out: list[str] = []
    bad = []
    for k, name in enumerate(names):
        for n in POLICY_NAMES if name == "all" else (name,):
            if n not in POLICY_NAMES:
                bad.append(
                    Problem("unknown-policy", f"--policy[{k}]", f"{n!r}; choose from all, {', '.join(POLICY_NAMES)}")
                )
            elif n not in out:
                out.append(n)
    if bad or not out:
        raise InputError("--policy", bad or [Problem("no-policy", "--policy", "name at least one policy")])
    return tuple(out)


def check_spec(spec: ReplaySpec) -> None:
    """Every bad option at once, as an :class:`InputError` naming the option."""
    problems = []
    if spec.power_cap_w is not None and spec.energy_budget_kwh is not None:
        problems.append(Problem("conflicting-options", "--power-cap-w", "give --power-cap-w or --energy-budget-kwh"))
    for name, value in (
        ("--power-cap-w", spec.power_cap_w),
        ("--energy-budget-kwh", spec.energy_budget_kwh),
        ("--round-s", spec.rules.duration_s),
        ("--max-rounds", spec.max_rounds),
    ):
        if value is not None and value <= 0:
            problems.append(Problem("bad-option", name, f"must be > 0, got {value}"))
    if spec.max_jobs is not None and spec.max_jobs <= 0:
        problems.append(Problem("bad-option", "--max-jobs", f"must be > 0, got {spec.max_jobs}"))
    if not 0.0 <= spec.noise < 1.0:
        problems.append(Problem("bad-option", "--noise", f"must be in [0, 1), got {spec.noise}"))
    if not 0.0 <= spec.policy_options.zeus_eta <= 1.0:
        problems.append(Problem("bad-option", "--zeus-eta", f"must be in [0, 1], got {spec.policy_options.zeus_eta}"))
    if spec.rules.restart_s < 0 or spec.rules.restart_s >= spec.rules.duration_s:
        problems.append(Problem("bad-option", "--restart-s", "must be >= 0 and shorter than the round"))
    if "wattplan" in spec.policies:
        problems += request_problems(spec.policy_options.request)
    if problems:
        raise InputError("options", problems)


def prepare(spec: ReplaySpec, lib: ProfileLibrary | None = None) -> tuple[Workload, ClusterContext]:
    """The workload and the cluster context of ``spec`` (bad input raises :class:`InputError`)."""
    from planner.profile_build import DEFAULT_PROFILE_LIBRARY

    check_spec(spec)
    library = lib or load_profile_library(spec.profiles or DEFAULT_PROFILE_LIBRARY)
    cluster = parse_cluster_spec(spec.cluster, spec.gpus_per_node, spec.node_power_w)
    ctx = cluster_context(cluster, library, spec.rules)
    trace_jobs = read_trace(spec.trace, library, spec.fmt, spec.seed, spec.virtual_cluster)
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
    if not workload.jobs:
        raise InputError(str(spec.trace), [Problem("empty-replay", "(selection)", "no job of the trace is selected")])
    return workload, ctx


def make_budget(spec: ReplaySpec, ctx: ClusterContext) -> Budget:
    """A fresh budget for one replay (an energy budget's round floor from ``ctx``)."""
    if spec.power_cap_w is not None:
        return PowerCap(spec.power_cap_w)
    if spec.energy_budget_kwh is not None:
        return EnergyBudget(spec.energy_budget_kwh * J_PER_KWH, floor_j=one_node_round_j(ctx))
    return NoBudget()


def run_policy(
    spec: ReplaySpec,
    workload: Workload,
    ctx: ClusterContext,
    policy: str,
    progress: ProgressCallback | None = None,
) -> tuple[SimResult, dict[str, Any]]:
    """Replay one policy; return the result and its summary (with the replay's settings)."""
    config = SimConfig(start_s=spec.start_s, max_rounds=spec.max_rounds, noise=spec.noise, seed=spec.seed)
    result = simulate(workload, ctx, make_policy(policy, spec.policy_options), make_budget(spec, ctx), config, progress)
    result.info.update(
        {
            "workload": workload.source,
            "objective": spec.rules.objective,
            "restart_s": spec.rules.restart_s,
            "power_cap_w": spec.power_cap_w,
            "energy_budget_kwh": spec.energy_budget_kwh,
            "noise": spec.noise,
            "seed": spec.seed,
        }
    )
    if policy == "wattplan":
        req = spec.policy_options.request
        result.info["solver"] = {"name": req.solver, "time_limit_s": req.time_limit_s, "threads": req.threads}
    if policy == "zeus":
        result.info["zeus_eta"] = spec.policy_options.zeus_eta
    return result, summarise(result)


def write_outputs(out: Path, runs: Sequence[tuple[SimResult, dict[str, Any]]], plots: bool = True) -> list[Path]:
    """Write every replay and the comparison; return the files written at the top of ``out``."""
    out = Path(out)
    single = len(runs) == 1
    for result, summary in runs:
        write_result(result, summary, out if single else out / result.policy)
    summaries = [s for _, s in runs]
    written = []
    if not single:
        write_text_atomic(out / "comparison.csv", comparison_csv(summaries))
        write_json_atomic(out / "comparison.json", summaries)
        written += [out / "comparison.csv", out / "comparison.json"]
    if plots:
        results = {r.policy: r for r, _ in runs}
        power_plot(results, out / "power.png")
        jct_cdf_plot(results, out / "jct_cdf.png")
        energy_jct_plot(summary_points(summaries), out / "energy_jct.png")
        written += [out / "power.png", out / "jct_cdf.png", out / "energy_jct.png"]
    return written
