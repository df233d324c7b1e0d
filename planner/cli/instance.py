"""``wattplan instance``: round instances made from a trace, a job list, a plan (the next round) or a sweep; checked."""

from __future__ import annotations

import time
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wattplan.planner.cli.app import (
    _prior_notes,
    err,
    handles_errors,
    instance_app,
    left_out_lines,
    out,
    output_provenance,
    print_answer,
)
from wattplan.planner.cli.options_common import (
    FROM_TRACE_RANGES,
    FormatOpt,
    GpusPerNodeOpt,
    MinPairRateOpt,
    NodePowerOpt,
    OutputFormatOpt,
    PowerCapOpt,
    ProfilesOpt,
    RestartOpt,
    RoundSOpt,
    TraceArg,
    TraceFormat,
    VcOpt,
    _trace,
)
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.files.paths import refuse_overwriting_inputs

if TYPE_CHECKING:
    from wattplan.planner.contracts.domain import Instance
    from wattplan.planner.profile_library.library import ProfileLibrary


@instance_app.command("check")
@handles_errors
def instance_check(
    file: Annotated[Path, typer.Argument(help="Instance file to check.")], fmt: OutputFormatOpt = OutputFormat.table
) -> None:
    """Check an instance's structure and meaning; list every problem with its path (exit 2)."""
    from wattplan.planner.contracts.instance_io import load_instance

    inst = load_instance(file)
    counts = {"jobs": len(inst.jobs), "gpu_types": len(inst.gpu_types), "profiles": len(inst.profiles)}
    counts["pairs"] = len(inst.pairs)
    if fmt != OutputFormat.table:
        print_answer(fmt, list, lambda: [Section("instance", [{"ok": True, **counts}], record=True)])
        return
    out.print(
        f"[green]ok[/]: {counts['jobs']} jobs, {counts['gpu_types']} GPU types, "
        f"{counts['profiles']} profiles, {counts['pairs']} pair entries"
    )


def _from_trace_option_problems(values: dict[str, float | None]) -> list[Problem]:
    """A ``bad-option`` problem for each given value outside its :data:`FROM_TRACE_RANGES` range (or not finite)."""
    problems = []
    for option, value in values.items():
        low, high = FROM_TRACE_RANGES[option]
        if value is not None and not low <= value <= high:  # NaN fails both comparisons
            problems.append(Problem("bad-option", option, f"{value:g} is outside [{low:g}, {high:g}]"))
    return problems


@instance_app.command("from-trace")
@handles_errors
def instance_from_trace(
    trace: TraceArg,
    cluster: Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:64,p100:32 (whole nodes).")],
    at: Annotated[float, typer.Option(help="Round start, seconds after the trace's start.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Instance file to write.")] = Path("instance.json"),
    fmt: FormatOpt = TraceFormat.auto,
    max_jobs: Annotated[int | None, typer.Option(help="Keep at most this many jobs (earliest arrivals).")] = None,
    round_s: RoundSOpt = defaults.ROUND_S,
    budget_fraction: Annotated[
        float, typer.Option(help="Budget as a fraction of full power x T.")
    ] = defaults.BUDGET_FRACTION,
    budget_j: Annotated[float | None, typer.Option(help="Budget in joules (overrides --budget-fraction).")] = None,
    power_cap_w: PowerCapOpt = None,
    no_budget: Annotated[bool, typer.Option("--no-budget", help="No energy budget.")] = False,
    gpus_per_node: GpusPerNodeOpt = defaults.GPUS_PER_NODE,
    node_power_w: NodePowerOpt = defaults.NODE_POWER_W,
    restart_s: RestartOpt = defaults.RESTART_S,
    min_pair_rate: MinPairRateOpt = defaults.MIN_PAIR_RATE,
    seed: Annotated[int, typer.Option(help="Seed for drawing job types of Philly rows.")] = 0,
    vc: VcOpt = None,
    profiles: ProfilesOpt = None,
) -> None:
    """Make a round instance from a trace: the queue at --at with remaining steps."""
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.rounds.builder import RoundOptions, build_round
    from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
    from wattplan.planner.rounds.traces import read_trace, trace_format

    numbers = {
        "--at": at,
        "--round-s": round_s,
        "--budget-fraction": budget_fraction,
        "--budget-j": budget_j,
        "--power-cap-w": power_cap_w,
        "--node-power-w": node_power_w,
        "--restart-s": restart_s,
        "--min-pair-rate": min_pair_rate,
    }
    _refuse_from_trace_numbers(numbers)
    trace = _trace(trace)
    refuse_overwriting_inputs({"--out": out_path}, [trace, profiles])
    spec = parse_cluster_spec(cluster, gpus_per_node, node_power_w)
    lib = _with_priors(load_profile_library(profiles), [name for name, _ in spec.gpus])
    jobs = read_trace(trace, lib, fmt.value, seed, vc)
    fraction, joules = _trace_budget(round_s, budget_fraction, budget_j, power_cap_w, no_budget)
    opts = RoundOptions(
        at_s=at,
        rules=RoundRules(duration_s=round_s, restart_s=restart_s, min_pair_rate=min_pair_rate),
        budget_fraction=fraction,
        budget_j=joules,
        max_jobs=max_jobs,
    )
    kind = trace_format(trace, fmt.value)
    inst = build_round(jobs, spec, lib, opts, {"trace": trace.name, "format": kind, "cluster": cluster, "seed": seed})
    _write_trace_round(inst, out_path, at)


def _refuse_from_trace_numbers(numbers: dict[str, float | None]) -> None:
    """Refuse (exit 2) the options of ``instance from-trace`` outside their ranges, naming each one."""
    problems = _from_trace_option_problems(numbers)
    if problems:
        raise InputError(problems[0].path if len(problems) == 1 else "options", problems)


def _trace_budget(
    round_s: float, budget_fraction: float, budget_j: float | None, power_cap_w: float | None, no_budget: bool
) -> tuple[float | None, float | None]:
    """The round's budget as (fraction, joules), at most one set: --no-budget, --power-cap-w, --budget-j, fraction."""
    from wattplan.planner.core.economics import round_budget_j

    if no_budget:
        return None, None
    if power_cap_w is not None:
        return None, round_budget_j(round_s, power_cap_w=power_cap_w)
    return (None, budget_j) if budget_j is not None else (budget_fraction, None)


def _write_trace_round(inst: Instance, out_path: Path, at: float) -> None:
    """Write the instance made from a trace (with its provenance) and one line on what it holds."""
    import dataclasses

    from wattplan.planner.contracts.instance_io import write_instance

    write_instance(dataclasses.replace(inst, extra={**inst.extra, "written_by": output_provenance()}), out_path)
    budget = "none" if inst.round.budget_j is None else f"{inst.round.budget_j / 1e6:.3f} MJ"
    out.print(
        f"wrote [bold]{shown(out_path)}[/]: {len(inst.jobs)} jobs at t={at:g} s, "
        f"{sum(g.nodes for g in inst.gpu_types)} nodes, budget {budget}"
    )


JobsArg = Annotated[
    Path,
    typer.Argument(
        help="Job list (.csv, .yaml): id, type, gpus, remaining_steps or remaining_s, optional allowed_gpus, "
        "weight, command, workdir, user (docs/operators.md)."
    ),
]
ClusterFileOpt = Annotated[
    Path,
    typer.Option(
        "--cluster",
        help="Cluster file (YAML): nodes per GPU type, nodes down, GPUs held by unmanaged jobs, round_s, "
        "power_cap_kw (docs/operators.md).",
    ),
]


@instance_app.command("from-jobs")
@handles_errors
def instance_from_jobs_cmd(
    jobs: JobsArg,
    cluster: ClusterFileOpt,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Instance file to write.")] = Path("instance.json"),
    profiles: ProfilesOpt = None,
) -> None:
    """Make a round instance from your job list and cluster file: jobs wait, nothing runs yet."""
    from wattplan.planner.contracts.instance_io import write_instance
    from wattplan.planner.rounds.from_jobs import read_operator_instance

    refuse_overwriting_inputs({"--out": out_path}, [jobs, cluster, profiles])
    inst, added = read_operator_instance(jobs, cluster, profiles)
    _prior_notes(added)
    write_instance(inst, out_path)
    _print_operator_instance(inst, out_path)


def _print_operator_instance(inst: Instance, out_path: Path) -> None:
    """One line on what was written, and a line per host left out of planning."""
    nodes = ", ".join(f"{g.name}: {g.nodes} x {g.gpus_per_node} GPUs" for g in inst.gpu_types)
    cap = "none" if inst.round.budget_j is None else f"{inst.round.budget_j / inst.round.duration_s / 1e3:.3g} kW"
    out.print(f"wrote [bold]{shown(out_path)}[/]: round {inst.round.index}, {len(inst.jobs)} jobs; {nodes}; cap {cap}")
    for line in left_out_lines(inst.extra.get("left_out")):
        out.print(line)


@instance_app.command("next")
@handles_errors
def instance_next(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="This round's plan (wattplan.plan/1 JSON).")],
    instance: Annotated[Path, typer.Option("--instance", help="The instance the plan was made for.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Next round's instance to write.")] = Path("next.json"),
    jobs: Annotated[
        Path | None,
        typer.Option(help="Updated job list (the operator's counters): its jobs and remaining work are the truth."),
    ] = None,
    cluster: Annotated[Path | None, typer.Option(help="Cluster file for --jobs (YAML).")] = None,
    profiles: ProfilesOpt = None,
) -> None:
    """Carry a plan into the next round: running jobs get their allocation as current, work done is taken off."""
    from wattplan.planner.contracts.instance_io import load_instance, write_instance
    from wattplan.planner.contracts.plan import load_plan
    from wattplan.planner.rounds.from_jobs import read_operator_instance
    from wattplan.planner.rounds.next_round import (
        check_plan_matches,
        checked_next_instance,
        follow_plan,
        next_instance,
    )

    if (jobs is None) != (cluster is None):
        raise InputError("options", [Problem("bad-option", "--jobs", "--jobs and --cluster go together")])
    refuse_overwriting_inputs({"--out": out_path}, [plan_path, instance, jobs, cluster, profiles])
    previous = load_instance(instance)
    plan = load_plan(plan_path)
    check_plan_matches(previous, plan, str(plan_path), str(instance))
    if jobs is not None and cluster is not None:
        fresh, added = read_operator_instance(jobs, cluster, profiles, previous.round.rules)
        _prior_notes(added)
        inst = follow_plan(previous, plan, fresh)
    else:
        inst = next_instance(previous, plan)
    write_instance(checked_next_instance(inst, str(plan_path)), out_path)
    _print_operator_instance(inst, out_path)
    running = sum(1 for j in inst.jobs if j.current is not None)
    out.print(f"  {running} jobs continue from the plan, {len(inst.jobs) - running} wait")


def _with_priors(lib: ProfileLibrary, names: Sequence[str]) -> ProfileLibrary:
    """The library with priors for the named GPU types it lacks and the spec file knows, each with a note."""
    from wattplan.planner.profile_library.priors import with_prior_types

    lib, added = with_prior_types(lib, names)
    _prior_notes(added)
    return lib


class SweepFamily(StrEnum):
    """Where ``instance sweep`` takes its jobs (see :mod:`planner.bench.round_families`)."""

    trace = "trace"
    sampled = "sampled"
    long = "long"


@instance_app.command("sweep")
@handles_errors
def instance_sweep(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for the instances and manifest.csv.")],
    sizes: Annotated[
        str, typer.Option(help="Round sizes (jobs), comma-separated, each >= 1 (sampled, long: at most 100,000).")
    ] = "50,100,500,1000,2000,5000,10000",
    budgets: Annotated[str, typer.Option(help="Budgets as fractions of full power x T, each in (0, 1].")] = (
        "0.3,0.6,1.0"
    ),
    seeds: Annotated[str, typer.Option(help="Seeds of the sampled and long draws, comma-separated (>= 0).")] = "0",
    family: Annotated[
        SweepFamily,
        typer.Option(
            help="trace: real queues of the shipped Gavel traces (up to ~13,500 jobs); sampled: i.i.d. draws; "
            "long: long jobs a round moves 0.01-1% (badly scaled progress)."
        ),
    ] = SweepFamily.trace,
    gpu_mix: Annotated[str, typer.Option(help="Node weights per GPU type, e.g. v100:2,p100:1 or v100:1.")] = (
        "v100:2,p100:1"
    ),
    jobs_per_node: Annotated[
        float, typer.Option(help="The cluster has about N / this many 8-GPU nodes (0.25 to 64).")
    ] = 4.0,
    mps: Annotated[bool, typer.Option("--mps/--no-mps", help="Also write each round's model as MPS (large).")] = False,
) -> None:
    """Write reproducible benchmark rounds: one instance per (size, budget, seed) and DIR/manifest.csv.

    Files are named FAMILY-nN-bB-sS.json (and .mps with --mps); the same options give byte-identical
    files. Trace rounds do not depend on the seed. How jobs are chosen: instances/README.md.
    """
    from wattplan.planner.bench.instance_sets import sweep, sweep_spec
    from wattplan.planner.console.bars import count_bar
    from wattplan.planner.profile_library.library import load_profile_library

    refuse_overwriting_inputs({"--out": out_dir}, [], folders={"--out"})  # a file there, a name too long: exit 2
    lib = load_profile_library()
    spec = sweep_spec(out_dir, sizes, budgets, seeds, family.value, gpu_mix, jobs_per_node, mps, sorted(lib.gpu_types))
    start = time.perf_counter()
    with count_bar("[bold]{task.description}", "", err) as bar:
        task = bar.add_task("reading traces", total=len(spec.items()))
        rows = sweep(
            spec,
            lib,
            on_written=lambda row: bar.update(task, advance=1, description=row["file"]),
            on_prepared=lambda: bar.update(task, description="writing"),
        )
    out.print(
        f"wrote {len(rows)} instances and manifest.csv to [bold]{shown(out_dir)}[/] "
        f"in {time.perf_counter() - start:.1f} s"
    )
