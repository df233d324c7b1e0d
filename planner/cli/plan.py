"""``wattplan plan``, ``validate``, ``launch`` and ``diff``: one round planned, checked, rendered, compared."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import RenderableType

from wattplan.planner import planning
from wattplan.planner.cli.app import (
    ExitCode,
    _prior_notes,
    app,
    err,
    handles_errors,
    left_out_lines,
    out,
    output_provenance,
    print_answer,
    report_problems,
    say,
)
from wattplan.planner.cli.faces import options_of, record_values
from wattplan.planner.cli.options_common import OutputFormatOpt, _library_path
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.problems import InputError, Problem, SolutionRejected
from wattplan.planner.files.paths import refuse_overwriting_inputs
from wattplan.planner.launch.limits import DEFAULT_GRACE_S, DEFAULT_SIGNAL_LEAD_S
from wattplan.planner.plan_options import PlanOptions

if TYPE_CHECKING:
    from wattplan.planner.contracts.domain import Instance
    from wattplan.planner.contracts.plan import BudgetOverride, Plan
    from wattplan.planner.launch.diff import PlanDiff
    from wattplan.planner.launch.hosts import HostMap
    from wattplan.planner.launch.launcher import LaunchOptions, LaunchResult

JOB_LIST_SUFFIXES = (".csv", ".yaml", ".yml")
"""Inputs that are an operator's job list, not an instance (:mod:`planner.rounds.job_list`)."""


@dataclass(frozen=True, slots=True)
class _PlanFiles:
    """The files of one ``plan`` call: what it reads and where it writes (``instance_out`` with a job list)."""

    source: Path
    out_path: Path
    cluster: Path | None
    profiles: Path | None
    instance_out: Path | None

    @property
    def from_jobs(self) -> bool:
        """Whether the input is an operator's job list, not an instance."""
        return self.source.suffix.lower() in JOB_LIST_SUFFIXES


def _plan_files(files: _PlanFiles, opts: PlanOptions) -> _PlanFiles:
    """``files`` checked (a job list needs --cluster; the other inputs go with one), outputs refused over inputs."""
    problems = []
    if files.from_jobs and files.cluster is None:
        problems.append(Problem("bad-option", "--cluster", f"a job list ({files.source.name}) needs --cluster FILE"))
    if not files.from_jobs and (files.cluster or files.profiles or files.instance_out):
        problems.append(Problem("bad-option", "--cluster", "--cluster, --profiles, --instance-out go with a job list"))
    if problems:
        raise InputError("options", problems)
    if files.from_jobs and files.instance_out is None:
        files = replace(files, instance_out=files.out_path.with_suffix(".instance.json"))
    outputs: dict[str, Path | None] = {"--out": files.out_path, "--instance-out": files.instance_out}
    if opts.export_model is not None:
        stage1, stage2 = planning.model_export_paths(opts.export_model)
        outputs |= {"--export-model": stage1, "--export-model (stage 2)": stage2}
    refuse_overwriting_inputs(outputs, [files.source, opts.from_solution, files.cluster, files.profiles])
    return files


def _read_round(files: _PlanFiles) -> Instance:
    """The round to plan: the instance file, or the instance made from the job list (written once planned)."""
    from wattplan.planner.contracts.instance_io import load_instance

    if not files.from_jobs:
        return load_instance(files.source)
    from wattplan.planner.rounds.from_jobs import read_operator_instance

    assert files.cluster is not None
    inst, added = read_operator_instance(files.source, files.cluster, files.profiles)
    _prior_notes(added)
    for line in left_out_lines(inst.extra.get("left_out")):  # as `instance from-jobs` says them
        err.print(line)
    return inst


def _solved(planned: Instance, opts: PlanOptions, planner: planning.Planner | None, started_at: float) -> Plan:
    """The plan of ``planned``: from an outside solver's solution, or solved (exit 1 on a rejected solution)."""
    from wattplan.planner.core.validate import InvalidPlanError

    try:
        if opts.from_solution is not None:
            return planning.plan_from_solution(planned, opts.from_solution, opts.request())
        assert planner is not None
        with err.status(f"planning with {shown(opts.solver)} (at most {opts.time_limit_s:g} s)..."):
            return planner.plan(planned, started_at)
    except SolutionRejected as exc:
        report_problems(exc.source, exc.problems, "solution rejected, no plan written")
        raise typer.Exit(ExitCode.FAILED) from None
    except InvalidPlanError as exc:
        report_problems(opts.solver, exc.problems, "planner bug: invalid plan, not written")
        raise typer.Exit(ExitCode.FAILED) from None


def _print_plan(result: Plan, planned: Instance, quiet: bool, fmt: OutputFormat) -> None:
    """The running jobs, the waiting jobs with their reasons and the summary (only the summary when ``quiet``)."""
    from wattplan.planner.console.tables import (
        plan_table,
        running_rows,
        summary_record,
        summary_table,
        waiting_rows,
        waiting_table,
    )
    from wattplan.planner.core.waiting import waiting_reasons

    waiting = waiting_reasons(planned, result)

    def tables() -> list[RenderableType]:
        shown_tables: list[RenderableType] = [] if quiet else [plan_table(result, planned)]
        if waiting and not quiet:
            shown_tables.append(waiting_table(waiting))
        return [*shown_tables, summary_table(result)]

    def sections() -> list[Section]:
        summary = Section("summary", [summary_record(result, waiting)], record=True)
        if quiet:
            return [summary]
        return [Section("running", running_rows(result, planned)), Section("waiting", waiting_rows(waiting)), summary]

    print_answer(fmt, tables, sections)


@app.command()
@handles_errors
@options_of(PlanOptions)
def plan(
    instance: Annotated[
        Path | None,
        typer.Argument(
            help="Round instance (wattplan.instance/1 JSON), or a job list (.csv, .yaml) with --cluster; "
            "default: the shipped default round."
        ),
    ] = None,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Where to write the plan (atomically).")] = Path(
        "plan.json"
    ),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")] = False,
    cluster: Annotated[
        Path | None, typer.Option(help="With a job list (.csv, .yaml) as input: the cluster file (YAML).")
    ] = None,
    profiles: Annotated[
        Path | None,
        typer.Option(
            help="With a job list: the profile library (default: the shipped one).",
            parser=_library_path,
            metavar="<path>",
        ),
    ] = None,
    instance_out: Annotated[
        Path | None,
        typer.Option(help="With a job list: where to write the instance made from it (default: PLAN.instance.json)."),
    ] = None,
    fmt: OutputFormatOpt = OutputFormat.table,
    **given: Any,
) -> None:
    """Plan one round: GPUs, settings, partners and placements under the energy budget; validate; write.

    The input is a round instance, or your job list with --cluster (and --profiles): the instance made from them
    is written beside the plan, for validate, launch and instance next. Prints the running jobs, the waiting jobs
    with the reason each waits (docs/design.md §6.5) and a summary.
    """
    from wattplan.planner.contracts.plan import write_plan
    from wattplan.planner.files.resources import default_instance

    started_at = time.perf_counter()
    opts = PlanOptions.checked(record_values(PlanOptions, given))
    planner = _planner(opts)
    files = _plan_files(_PlanFiles(instance or default_instance(), out_path, cluster, profiles, instance_out), opts)
    inst = _read_round(files)
    override = planning.budget_override(inst.round.budget_j, inst.round.duration_s, opts.budget_j, opts.power_cap_w)
    planned = planning.with_overridden_budget(inst, override)
    if opts.stage2_progress is not None:
        written = planning.export_stage_models(planned, opts.request(), opts.stage2_progress)
    else:
        result = _solved(planned, opts, planner, started_at)
        if override is not None:
            result = planning.declare_budget_override(result, override, inst)
    _write_job_list_instance(inst, files)
    if opts.stage2_progress is not None:
        out.print(f"models written (no plan): {shown(', '.join(map(str, written)))}")
        return
    write_plan(result, out_path, written_by=output_provenance())
    _print_plan(result, planned, quiet, fmt)
    _say_written(result, opts, files, override, fmt)


def _write_job_list_instance(inst: Instance, files: _PlanFiles) -> None:
    """A job list's instance, written once the plan (or the model export) is made: a failure keeps the old file."""
    from wattplan.planner.contracts.instance_io import write_instance

    if files.instance_out is not None:
        write_instance(inst, files.instance_out)


def _planner(opts: PlanOptions) -> planning.Planner | None:
    """The request checked and its solvers loaded once; None when nothing is solved (an export or a solution)."""
    if opts.stage2_progress is None and opts.from_solution is None:
        return planning.Planner(opts.request())
    if problems := planning.request_problems(opts.request()):
        raise InputError("options", problems)
    return None


def _say_written(
    result: Plan, opts: PlanOptions, files: _PlanFiles, override: BudgetOverride | None, fmt: OutputFormat
) -> None:
    """The lines beside the tables: the profiles' basis, the budget override, the files written."""
    if basis_line := profile_basis_summary(result):
        say(fmt, shown(basis_line))
    if override is not None:
        say(fmt, shown(override.describe()))
    source = files.instance_out or files.source
    say(fmt, f"plan written to [bold]{shown(files.out_path)}[/] and validated against {shown(source)}")
    if opts.export_model is not None:
        say(fmt, f"model written to {shown(', '.join(map(str, planning.exported_model_files(opts.export_model))))}")


def profile_basis_summary(result: Any) -> str | None:
    """One line: how many running jobs were planned on measured, fitted or prior profiles (None: no basis given)."""
    kinds: dict[str, int] = {}
    worst = 0.0
    for e in result.running():
        kind = str((e.basis or {}).get("kind", "unknown"))
        kinds[kind] = kinds.get(kind, 0) + 1
        worst = max(worst, float((e.basis or {}).get("rel_error") or 0.0))
    if set(kinds) <= {"unknown"}:
        return None
    parts = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    unmeasured = sum(v for k, v in kinds.items() if k != "measured")
    return (
        f"profiles behind the {sum(kinds.values())} running jobs: {parts}; {unmeasured} rest on predictions "
        f"(expected error up to {100 * worst:.0f}%; each plan entry's basis names its points)"
    )


@app.command()
@handles_errors
def validate(
    instance: Annotated[Path, typer.Argument(help="Round instance the plan is for.")],
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="Plan to check (wattplan.plan/1 JSON).")],
    fmt: OutputFormatOpt = OutputFormat.table,
) -> None:
    """Check a plan against its instance (no solver involved); exit 1 on any violation."""
    from wattplan.planner.contracts.instance_io import load_instance
    from wattplan.planner.contracts.plan import load_plan
    from wattplan.planner.core.validate import validate_plan

    inst = load_instance(instance)
    the_plan = load_plan(plan_file)
    if the_plan.round.budget_override is not None:
        say(fmt, shown(the_plan.round.budget_override.describe()))
    problems = validate_plan(inst, the_plan)
    r = the_plan.round
    running = sum(j.state == "run" for j in the_plan.jobs)
    if fmt != OutputFormat.table:
        verdict = {"valid": not problems, "running": running, "energy_j": r.energy_j, "progress": r.progress}
        rows = [{"path": p.path, "code": p.code, "message": p.message} for p in problems]
        print_answer(fmt, list, lambda: [Section("validation", [verdict], record=True), Section("problems", rows)])
    if problems:
        report_problems(str(plan_file), problems, "invalid plan")
        raise typer.Exit(ExitCode.FAILED)
    say(fmt, f"[green]valid[/]: {running} jobs run, energy {r.energy_j / 1e6:.3f} MJ, progress {r.progress:.4f}")


class LaunchTarget(StrEnum):
    """What ``launch`` renders a plan for."""

    slurm = "slurm"
    kubernetes = "kubernetes"
    shell = "shell"


DEFAULT_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"

# The options of ``launch``, declared here so that its signature takes one line per option.
LaunchPlanArg = Annotated[Path, typer.Argument(metavar="PLAN", help="Plan to launch (wattplan.plan/1 JSON).")]
LaunchInstanceOpt = Annotated[
    Path, typer.Option(help="Instance the plan is for; its jobs' command, workdir, env and user are used.")
]
LaunchToOpt = Annotated[LaunchTarget, typer.Option("--to", help="What to render: Slurm, Kubernetes or node scripts.")]
LaunchOutOpt = Annotated[
    Path, typer.Option("--out", "-o", help="Folder to write: new, empty or ours (its scripts' records are kept).")
]
NodeMapOpt = Annotated[
    Path | None,
    typer.Option(
        help="JSON object: plan node (e.g. v100-3) -> real host name (default: the instance's hosts, "
        "from instance from-jobs, else the plan's node names)."
    ),
]
NodePrefixOpt = Annotated[str | None, typer.Option(help="Host name = this prefix + plan node name.")]
PartitionOpt = Annotated[str | None, typer.Option(help="Slurm partition for every job.")]
GresTypeOpt = Annotated[bool, typer.Option("--gres-type/--no-gres-type", help="Slurm: --gres=gpu:TYPE:N (or gpu:N).")]
NamespaceOpt = Annotated[str, typer.Option(help="Kubernetes namespace of the Jobs and the GPU agent.")]
ImageOpt = Annotated[str, typer.Option(help="Kubernetes: container image of the jobs.")]
AgentImageOpt = Annotated[
    str, typer.Option(help="Kubernetes: image of the GPU agent (needs bash; nvidia-smi is injected).")
]
DevicePluginNamespaceOpt = Annotated[
    str, typer.Option(help="Kubernetes: namespace of the NVIDIA device plugin's config.")
]
FromPlanOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        metavar="OLD_PLAN",
        help="Slurm: the previous round's plan; render only what changes (apply.sh, changes.md).",
    ),
]
FromDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--from-dir",
        metavar="OLD_DIR",
        help="With --from: the previous round's launch folder; apply.sh acts only on the job ids it recorded.",
    ),
]
TimeGraceOpt = Annotated[int, typer.Option(help="Job time limit = round.duration_s + this, in whole minutes.")]
SignalLeadOpt = Annotated[
    int, typer.Option(help="Slurm: SIGUSR1 this many s before the limit, to checkpoint (0: none).")
]
NoTimeLimitOpt = Annotated[
    bool, typer.Option("--no-time-limit", help="No time limit nor signal: jobs run to completion.")
]


@app.command()
@handles_errors
def launch(
    plan_file: LaunchPlanArg,
    instance: LaunchInstanceOpt,
    to: LaunchToOpt,
    out_dir: LaunchOutOpt,
    node_map: NodeMapOpt = None,
    node_prefix: NodePrefixOpt = None,
    partition: PartitionOpt = None,
    gres_type: GresTypeOpt = True,
    namespace: NamespaceOpt = "default",
    image: ImageOpt = DEFAULT_IMAGE,
    agent_image: AgentImageOpt = DEFAULT_IMAGE,
    device_plugin_namespace: DevicePluginNamespaceOpt = "gpu-operator",
    from_plan: FromPlanOpt = None,
    from_dir: FromDirOpt = None,
    time_grace_s: TimeGraceOpt = DEFAULT_GRACE_S,
    signal_lead_s: SignalLeadOpt = DEFAULT_SIGNAL_LEAD_S,
    no_time_limit: NoTimeLimitOpt = False,
) -> None:
    """Render a validated plan for Slurm (sbatch scripts), Kubernetes (Jobs and config) or plain node scripts.

    Jobs get a time limit of one round plus a grace (Slurm --time,
    Kubernetes activeDeadlineSeconds) and, on Slurm, SIGUSR1 before it:
    the job should write a checkpoint and exit.

    With --from OLD_PLAN (Slurm only) the folder holds only what changes
    and apply.sh: kept jobs get one more round, stopped, resized, moved and
    re-paired ones end, settings are re-set in place, new jobs submitted.
    """
    from wattplan.planner.launch.kubernetes import KubernetesOptions
    from wattplan.planner.launch.launcher import LaunchOptions
    from wattplan.planner.launch.limits import LimitOptions
    from wattplan.planner.launch.slurm import SlurmOptions

    _check_launch_options(to, partition, from_plan, from_dir)
    refuse_overwriting_inputs(
        {"--out": out_dir}, [plan_file, instance, node_map, from_plan, from_dir], replaced={"--out"}
    )
    options = LaunchOptions(
        hosts=_launch_hosts(instance, node_map, node_prefix),
        slurm=SlurmOptions(partition=partition, gres_type=gres_type),
        kubernetes=KubernetesOptions(
            namespace=namespace, image=image, agent_image=agent_image, device_plugin_namespace=device_plugin_namespace
        ),
        limits=LimitOptions(grace_s=time_grace_s, signal_lead_s=signal_lead_s, enabled=not no_time_limit),
        from_dir=from_dir,
    )
    result = _rendered(plan_file, instance, to, from_plan, out_dir, options)
    _print_launch(result, to, out_dir)
    _launch_warnings(result)


def _check_launch_options(
    to: LaunchTarget, partition: str | None, from_plan: Path | None, from_dir: Path | None
) -> None:
    """Refuse (exit 2) --from without --to slurm, --from-dir without --from, a --partition that is not one token."""
    from wattplan.planner.launch.quoting import comment_text, is_plain_token

    if from_plan is not None and to.value != "slurm":
        raise InputError("options", [Problem("bad-option", "--from", "only --to slurm renders a follow-on round")])
    if from_dir is not None and from_plan is None:
        raise InputError("options", [Problem("bad-option", "--from-dir", "goes with --from (a follow-on round)")])
    tokens = {"--partition": partition}  # written on #SBATCH lines, which sbatch parses
    bad_tokens = [
        Problem("bad-option", name, f"{comment_text(value)} is not one plain token (letters, digits, ._,:=/%+@-)")
        for name, value in tokens.items()
        if value is not None and not is_plain_token(value)
    ]
    if bad_tokens:
        raise InputError(bad_tokens[0].path if len(bad_tokens) == 1 else "options", bad_tokens)


def _launch_hosts(instance: Path, node_map: Path | None, node_prefix: str | None) -> HostMap:
    """Plan node -> host: --node-map or --node-prefix, else the instance's own hosts (from-jobs), else the names."""
    from wattplan.planner.launch.hosts import instance_host_map, load_host_map

    hosts = load_host_map(node_map, node_prefix)
    if node_map is None and not node_prefix:
        hosts = instance_host_map(instance) or hosts  # an instance made by from-jobs names its hosts
    return hosts


def _rendered(
    plan_file: Path, instance: Path, to: LaunchTarget, from_plan: Path | None, out_dir: Path, options: LaunchOptions
) -> LaunchResult:
    """The plan rendered into ``out_dir`` (only what changes from --from's round); exit 1 on an invalid plan."""
    from wattplan.planner.launch.launcher import PlanRejected, launch_files, launch_followon_files

    try:
        if from_plan is None:
            return launch_files(plan_file, instance, to.value, out_dir, options)
        return launch_followon_files(plan_file, instance, from_plan, out_dir, options)
    except PlanRejected as exc:
        report_problems(exc.source, exc.problems, "invalid plan, nothing rendered")
        raise typer.Exit(ExitCode.FAILED) from None


def _print_launch(result: LaunchResult, to: LaunchTarget, out_dir: Path) -> None:
    """What was rendered (or, for a follow-on round, what is kept, ended, submitted) and the budget override."""
    if result.changeover is not None:
        c = result.changeover
        out.print(
            f"round {c.diff.from_round} -> {result.model.round_index}: keep {len(c.keep)} "
            f"({len(c.reset)} re-set in place), end {len(c.end)}, submit {len(c.submit)} allocation(s); "
            f"{len(result.files)} files in [bold]{shown(out_dir)}[/] (run apply.sh; see changes.md)"
        )
    else:
        out.print(
            f"rendered {len(result.model.units)} allocation(s) of round {result.model.round_index} for {to.value}: "
            f"{len(result.files)} files in [bold]{shown(out_dir)}[/]"
        )
    if result.budget_override is not None:
        out.print(shown(result.budget_override.describe()))


def _launch_warnings(result: LaunchResult) -> None:
    """Warn (stderr) of jobs that run a placeholder for want of a command, and of env names the launcher sets."""
    from wattplan.planner.launch.render import PLACEHOLDER_EXIT

    placeholders = result.model.placeholders()
    if placeholders:
        err.print(
            f"[yellow]warning:[/] {len(placeholders)} job(s) have no command in the instance and run a placeholder "
            f"that exits {PLACEHOLDER_EXIT}: {shown(', '.join(repr(j) for j in placeholders[:10]))}"
        )
    for job_id, names in result.model.dropped_env()[:10]:
        err.print(
            f"[yellow]warning:[/] job {shown(repr(job_id))}: env {shown(', '.join(names))} not used, "
            "the launcher sets these itself"
        )


@app.command()
@handles_errors
def diff(
    old_plan: Annotated[Path, typer.Argument(metavar="OLD_PLAN", help="The previous round's plan.")],
    new_plan: Annotated[Path, typer.Argument(metavar="NEW_PLAN", help="The next round's plan.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the actions as JSON to FILE.")] = None,
    fmt: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            metavar="FMT",
            help="Print a table, the wattplan.diff/1 JSON document, or csv (one row per action).",
        ),
    ] = OutputFormat.table,
    old_instance: Annotated[
        Path | None, typer.Option(help="Instance OLD_PLAN is for: validate OLD_PLAN fully against it.")
    ] = None,
    new_instance: Annotated[
        Path | None, typer.Option(help="Instance NEW_PLAN is for: validate NEW_PLAN fully against it.")
    ] = None,
) -> None:
    """The actions between two rounds (stop, resize, move, re-set, re-pair, start), so a launcher changes only those.

    Both plans are checked first (exit 1, nothing printed or written, if either fails): against their
    instances when given, else by the checks that need no instance.
    """
    from wattplan.planner.launch.diff import diff_plans

    instances = [p for p in (old_instance, new_instance) if p is not None]
    refuse_overwriting_inputs({"--json": json_out}, [old_plan, new_plan, *instances])
    sides = [
        _DiffSide.read(old_plan, "--old-instance", old_instance),
        _DiffSide.read(new_plan, "--new-instance", new_instance),
    ]
    _check_diff_sides(sides)
    _print_diff(diff_plans(sides[0].plan, sides[1].plan), json_out, fmt)


@dataclass(frozen=True, slots=True)
class _DiffSide:
    """One plan of ``diff``: its file, the option naming its instance, the plan and the instance (None: not given)."""

    path: Path
    option: str
    plan: Plan
    instance: Instance | None

    @classmethod
    def read(cls, path: Path, option: str, instance: Path | None) -> _DiffSide:
        """The plan at ``path`` and, when given, the instance it is for (exit 2 on a bad file)."""
        from wattplan.planner.contracts.instance_io import load_instance
        from wattplan.planner.contracts.plan import load_plan

        return cls(path, option, load_plan(path), None if instance is None else load_instance(instance))


def _check_diff_sides(sides: list[_DiffSide]) -> None:
    """Report every problem of both plans (exit 1 if any); say which were checked without an instance."""
    from wattplan.planner.launch.diff import diff_problems

    refused = False
    for side in sides:
        problems = diff_problems(side.plan, side.instance)
        if problems:
            report_problems(str(side.path), problems, "invalid plan, no diff")
            refused = True
    if refused:
        raise typer.Exit(ExitCode.FAILED)
    unchecked = [f"{side.path} (no {side.option})" for side in sides if side.instance is None]
    if unchecked:
        err.print(f"checked without an instance, so not validated in full: {shown(', '.join(map(str, unchecked)))}")


def _print_diff(result: PlanDiff, json_out: Path | None, fmt: OutputFormat) -> None:
    """The actions written to --json (with provenance) when given, and printed as a table, JSON or csv."""
    import json

    from wattplan.planner.contracts.jsonio import write_json_atomic
    from wattplan.planner.launch.diff import diff_table, diff_to_doc

    doc = diff_to_doc(result)
    if json_out is not None:
        write_json_atomic(json_out, {**doc, "written_by": output_provenance()})
    if fmt == OutputFormat.json:
        typer.echo(json.dumps(doc, indent=1))
    else:
        print_answer(fmt, lambda: [diff_table(result)], lambda: [Section("actions", doc["actions"])])
