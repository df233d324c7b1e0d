"""wattplan's command line: parse, call the planner, render. No math and no solver here.

Installed as the ``wattplan`` console script (``wattplan.planner.cli:main``); ``python cli.py`` and
``python -m wattplan.planner`` run the same app from a checkout. Every solve option's default comes
from :class:`planner.contracts.request.PlanRequest` and every round default from :mod:`planner.contracts.defaults`.

Exit codes: 0 success, 1 a plan or run failed (e.g. the validator rejected a plan),
2 bad input (every problem is listed with the path of the offending field), 130 interrupted,
143 terminated (the solver's processes and scratch files are removed first).
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import RenderableType

from wattplan.planner import planning
from wattplan.planner.console.formats import OutputFormat, Section, sections_text
from wattplan.planner.console.terminal import shown, terminal_console
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem, RunFailed, SolutionRejected
from wattplan.planner.contracts.request import DEFAULT_REQUEST, REPLAY_REQUEST, PlanRequest
from wattplan.planner.files.paths import refuse_overwriting_inputs
from wattplan.planner.launch.limits import DEFAULT_GRACE_S, DEFAULT_SIGNAL_LEAD_S

if TYPE_CHECKING:
    from wattplan.planner.contracts.domain import Instance
    from wattplan.planner.profile_library.library import ProfileLibrary
    from wattplan.planner.sim.plots import FigureOptions

HELP_SETTINGS: dict[str, Any] = {"max_content_width": 80}
"""Help text at most 80 columns wide, whatever the terminal (plain click help, no rich panels)."""

app = typer.Typer(
    name="wattplan",
    help="Energy-aware batch planner for GPU clusters: plan a round of training jobs under an energy budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: it wraps at the terminal's width and never truncates an option
    context_settings=HELP_SETTINGS,
)
instance_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="Build and check round instances (wattplan.instance/1).",
    no_args_is_help=True,
)
profiles_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="Job profiles: build from the shipped Gavel and Zeus data, ingest measurements, fit, check, make a truth.",
    no_args_is_help=True,
)
cluster_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="An emulated GPU cluster on this host (real Slurm, munge and Prometheus; emulated GPUs) for tests, "
    "benchmarks and demos of `wattplan agent`.",
    no_args_is_help=True,
)


def _print_version(value: bool) -> None:
    """``--version``: print ``wattplan X.Y.Z`` and stop."""
    if value:
        from wattplan.planner.contracts.provenance import wattplan_version

        typer.echo(f"wattplan {wattplan_version()}")
        raise typer.Exit()


@app.callback()
def wattplan_options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print wattplan's version and exit."),
    ] = False,
) -> None:
    """Energy-aware batch planner for GPU clusters: plan a round of training jobs under an energy budget."""
    if not COMMAND_LINE:  # called from Python (tests): the words click has left to parse are the whole command
        words = list(ctx.args)
        if ctx.invoked_subcommand and words[:1] != [ctx.invoked_subcommand]:
            words.insert(0, ctx.invoked_subcommand)
        COMMAND_LINE[:] = words
        ctx.call_on_close(COMMAND_LINE.clear)


COMMAND_LINE: list[str] = []
"""The words of this run's command line after ``wattplan``: set by :func:`main`, or, when the app is called from
Python (tests), by the app's callback from the words click has yet to parse (cleared when the command ends)."""


def output_provenance() -> dict[str, Any]:
    """The ``written_by`` record of every JSON file this run writes (planner.contracts.provenance)."""
    from wattplan.planner.contracts.provenance import written_by

    return written_by(["wattplan", *COMMAND_LINE])


app.add_typer(instance_app, name="instance")
app.add_typer(profiles_app, name="profiles")
app.add_typer(cluster_app, name="cluster")

out = terminal_console()  # no control character of user text reaches the terminal; ":name:" stays text
err = terminal_console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


class ExitCode:
    """The command line's exit codes (see the module docstring)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2


def report_problems(source: str, problems: list[Problem], title: str) -> None:
    """Print a heading naming ``source`` and a table of problems (path, message, code) to standard error.

    The heading is a line of its own that is never wrapped (``soft_wrap``): as a table title it was wrapped to the
    table's width, cutting the file's name in two (a path longer than the table was named nowhere whole).
    """
    from wattplan.planner.console.tables import problems_heading, problems_table

    err.print(problems_heading(title, source, len(problems)), soft_wrap=True)
    err.print(problems_table(problems))


def handles_errors(fn: F) -> F:
    """Turn expected failures into a message and an exit code, in one place."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            report_problems(exc.source, exc.problems, "bad input")
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except FileNotFoundError as exc:
            err.print(f"[bold red]error:[/] no such file: {shown(exc.filename)}")
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except (ValueError, OSError, RunFailed) as exc:
            err.print(f"[bold red]error:[/] {shown(exc)}")
            raise typer.Exit(ExitCode.FAILED) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("WATTPLAN_DEBUG"):
                raise
            err.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {shown(exc)}\n"
                "this is a wattplan bug; run again with WATTPLAN_DEBUG=1 for the traceback and report it"
            )
            raise typer.Exit(ExitCode.FAILED) from None

    return wrapper  # type: ignore[return-value]


OutputFormatOpt = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        metavar="FMT",
        help="Print as table, json (one document) or csv (a block per table, blank line between).",
    ),
]
"""The shared ``--format table|json|csv`` of every command that prints tables (planner.console.formats)."""


def print_answer(
    fmt: OutputFormat, tables: Callable[[], Sequence[RenderableType]], sections: Callable[[], Sequence[Section]]
) -> None:
    """Print a command's answer: its rich ``tables`` for ``table``, else its ``sections`` as JSON or CSV."""
    if fmt == OutputFormat.table:
        from wattplan.planner.console.tables import folded

        for t in tables():
            out.print(folded(t))
    else:
        typer.echo(sections_text(sections(), fmt), nl=False)


def say(fmt: OutputFormat, markup: str) -> None:
    """A line beside the answer: on standard output with tables, on standard error with JSON or CSV."""
    (out if fmt == OutputFormat.table else err).print(markup)


class ObjectiveChoice(StrEnum):
    """The objectives of the round model."""

    progress = "progress"
    energy = "energy"
    efficiency = "efficiency"


class GovernorChoice(StrEnum):
    """How the runtime-bounded mode compares JCTs (planner.sim.governor)."""

    accrued = "accrued"
    projected = "projected"


class PlotFormatChoice(StrEnum):
    """File formats of figures (planner.sim.plots)."""

    png = "png"
    pdf = "pdf"
    svg = "svg"


class TailPaceChoice(StrEnum):
    """The rate the tail bound assumes a job keeps (planner.sim.tail_bound)."""

    fastest = "fastest"
    steady = "steady"


class ReplanChoice(StrEnum):
    """When a replay asks its policies again (planner.sim.decision_memo.ReplanOn)."""

    rounds = "rounds"
    events = "events"


class TraceFormat(StrEnum):
    """Trace formats: ``auto`` chooses by file extension (``.csv`` is Philly)."""

    auto = "auto"
    gavel = "gavel"
    philly = "philly"


SOLVERS_HELP = planning.solver_help() + "."
SOLVER_HELP = (
    f"{SOLVERS_HELP} Default {DEFAULT_REQUEST.solver}: its own bound proves every plan of the bound audit "
    "within the gap (benchmarks/RESULTS.md)."
)
REPLAY_SOLVER_HELP = f"{SOLVERS_HELP} Default {REPLAY_REQUEST.solver}: fastest to its plan; a replay reads no bound."
TRACE_HELP = (
    "Gavel .trace file or Philly-derived CSV, or the name of a shipped trace "
    "(e.g. 6c71a0.trace, b436b2.trace, philly.csv)."
)

# Options shared by the commands that build rounds from a trace.
TraceArg = Annotated[Path, typer.Argument(help=TRACE_HELP)]
FormatOpt = Annotated[
    TraceFormat,
    typer.Option("--trace-format", metavar="FMT", help="Trace format: auto (.csv is Philly), gavel, philly."),
]
RoundSOpt = Annotated[float, typer.Option(help="Round length T (s).")]
RestartOpt = Annotated[float, typer.Option(help="Restart cost tau (s).")]
MinPairRateOpt = Annotated[float, typer.Option(help="Least slowdown either job of a pair may have.")]
GpusPerNodeOpt = Annotated[int, typer.Option(help="GPUs per node.")]
NodePowerOpt = Annotated[
    float, typer.Option(help="Node base power (CPU, memory, fans) in W; an assumption, not measured data.")
]
VcOpt = Annotated[str | None, typer.Option(help="Philly virtual cluster id to keep (e.g. 6214e9).")]
JOB_LIST_SUFFIXES = (".csv", ".yaml", ".yml")
"""Inputs that are an operator's job list, not an instance (:mod:`planner.rounds.job_list`)."""


def _library_path(text: str) -> Path:
    """A profile library's path as given; an empty value (Path("") is ".") or a NUL is refused, naming the option."""
    if not text.strip():
        raise typer.BadParameter("must name a profile library file, not an empty value")
    if "\x00" in text:
        raise typer.BadParameter("a file name cannot hold a NUL character")
    return Path(text)


ProfilesOpt = Annotated[
    Path | None,
    typer.Option(help="Profile library (default: the shipped Gavel+Zeus one).", parser=_library_path, metavar="<path>"),
]
PowerCapOpt = Annotated[float | None, typer.Option(help="Power cap (W): a round's budget is cap x T.")]

# Options shared by ``simulate`` and ``frontier``.
ClusterOpt = Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")]
EnergyBudgetOpt = Annotated[float | None, typer.Option(help="Energy budget over the replay (kWh), paced per round.")]
ReplaySolverOpt = Annotated[str, typer.Option(help="wattplan's solver: " + REPLAY_SOLVER_HELP)]
ReplayTimeLimitOpt = Annotated[float, typer.Option(help="wattplan's seconds per round (> 0).")]
HorizonOpt = Annotated[
    int,
    typer.Option(help="Rounds planned as one model, the first one run (1-8; 1: this round alone; design §5.14)."),
]
MaxJobsOpt = Annotated[int | None, typer.Option(help="Replay the first N jobs (by arrival) of the window.")]
StartSOpt = Annotated[float | None, typer.Option(help="Window start: jobs arriving from here (trace s).")]
EndSOpt = Annotated[float | None, typer.Option(help="Window end: jobs arriving before this (trace s).")]
CarbonOpt = Annotated[
    Path | None,
    typer.Option(help="Hourly carbon intensity CSV (gCO2/kWh), e.g. the shipped CISO_2022.csv: report kgCO2."),
]
PriceOpt = Annotated[Path | None, typer.Option(help="Hourly electricity price CSV ($/MWh): report energy cost.")]
SignalStartOpt = Annotated[
    str | None, typer.Option(help="Signal hour (ISO 8601, UTC) at which the replay starts; default the file's first.")
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run on Ray: a cluster address (auto, HOST:6379, ray://HOST:10001) or local (a Ray instance started "
        "for this run); an address is refused when nothing answers there within 5 s; needs the ray extra "
        "(pip install 'wattplan[ray]').",
    ),
]
SignalAwareOpt = Annotated[
    bool,
    typer.Option(
        help="wattplan follows the carbon (else price) signal against the day before: defers work in dirty or "
        "dear hours and runs harder in clean or cheap ones (efficiency objective); an energy budget is paced by it."
    ),
]

ThreadsOpt = Annotated[int, typer.Option(help="Solver threads (>= 1).")]
NodeLimitOpt = Annotated[
    int | None,
    typer.Option(
        help="Branch-and-bound nodes per MIP stage (>= 1; cbc, highs, scip). With --threads 1 and a time limit "
        "never reached, the same inputs give the same plans on any machine and load."
    ),
]
ReplaySeedOpt = Annotated[int, typer.Option(help="Seed: solver, Philly job types, --noise.")]
ZeusEtaOpt = Annotated[float, typer.Option(help="Zeus's weight of energy against time, in [0, 1].")]
NoiseOpt = Annotated[
    float, typer.Option(help="Throughput error: each job and round runs at U[1-x, 1+x] x the profile.")
]
GovernorOpt = Annotated[
    GovernorChoice,
    typer.Option(
        help="How --max-jct-increase compares JCTs: accrued (time in system so far) or projected (whole "
        "JCTs, unfinished work at full speed)."
    ),
]
DeltaMaxOpt = Annotated[float, typer.Option(help="Largest delta --max-jct-increase sets per round, in [0, 1).")]
TailBoundOpt = Annotated[
    float | None,
    typer.Option(
        help="Tail bound: wattplan gives the jobs the p95 reads the steps they need to finish within this many "
        "percent of fifo-max's JCT just below the 95th percentile, which bounds the p95 JCT the same way; the "
        "few others (2 of 51 jobs), those whose deadline costs the most energy, get none (rounds with an energy "
        "budget excepted)."
    ),
]
TailPaceOpt = Annotated[
    TailPaceChoice,
    typer.Option(
        help="How --tail-bound paces a job: steady (held to the even pace that meets its deadline, once that "
        "pace is above its least-energy rate) or fastest (it may wait until only full speed meets it)."
    ),
]
ReplanOpt = Annotated[
    ReplanChoice,
    typer.Option(
        help="When policies re-plan: rounds (every round that changed; exact) or events (only at an arrival, "
        "a completion, a budget, delta or profile change; faster, an approximation for wattplan)."
    ),
]
MaxRoundsOpt = Annotated[int, typer.Option(help="Stop after this many simulated rounds.")]
BelievedProfilesOpt = Annotated[
    Path | None,
    typer.Option(
        help="Profile library the planner and the baselines believe (default: the shipped one).",
        parser=_library_path,
        metavar="<path>",
    ),
]
TruthOpt = Annotated[
    Path | None,
    typer.Option(
        help="Profile library jobs really run and draw power by (default: the same as --profiles); "
        "make one with `wattplan profiles truth`."
    ),
]
LearnOpt = Annotated[
    bool,
    typer.Option(
        help="Each policy corrects its profiles from every round's observed steps, power and utilisation "
        "(writes decisions.csv and a learning block in summary.json)."
    ),
]
PlotsOpt = Annotated[bool, typer.Option(help="Write the figures (see --plot-format).")]
PlotFormatOpt = Annotated[
    PlotFormatChoice,
    typer.Option("--plot-format", help="Figure files: png (raster, --dpi), pdf or svg (vector, for a paper)."),
]
DpiOpt = Annotated[int, typer.Option(help="Resolution of PNG figures, dots per inch (50 to 1200).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
SWEEP_ONLY_OPTIONS = ("--policy", "--delta", "--fresh")
"""``simulate`` options ``frontier`` has not: it replays wattplan and --baselines, sweeps --deltas, and resumes per
point (a point whose spec and inputs are unchanged is reused; delete its ``runs/<label>`` to redo it)."""


def _figure_options(plot_format: PlotFormatChoice, dpi: int) -> FigureOptions:
    """``--plot-format`` and ``--dpi`` as figure options, checked (a bad ``--dpi`` raises :class:`InputError`)."""
    from wattplan.planner.sim.plots import FigureOptions, check_figure_options

    options = FigureOptions(plot_format.value, dpi)
    check_figure_options(options)
    return options


def _trace(path: Path) -> Path:
    """The trace a user named: a file, or a shipped trace by name."""
    from wattplan.planner.files.resources import resolve_trace

    return resolve_trace(path)


@app.command()
@handles_errors
def plan(
    instance: Annotated[
        Path | None,
        typer.Argument(
            help="Round instance (wattplan.instance/1 JSON), or a job list (.csv, .yaml) with --cluster; "
            "default: the shipped default round."
        ),
    ] = None,
    solver: Annotated[str, typer.Option(help=SOLVER_HELP)] = DEFAULT_REQUEST.solver,
    objective: Annotated[
        ObjectiveChoice | None,
        typer.Option(
            help="progress: most weighted progress, then least energy; energy: least energy "
            "within delta of the best progress; efficiency: least energy above each job's best "
            "energy per step, within delta of the best progress. Default: the instance's."
        ),
    ] = None,
    delta: Annotated[
        float | None,
        typer.Option(
            help="Progress the energy objective gives up, in [0, 1): target (1 - delta) x best; default: instance."
        ),
    ] = None,
    budget_j: Annotated[
        float | None, typer.Option(help="Energy budget of the round (J); overrides the instance.")
    ] = None,
    power_cap_w: PowerCapOpt = None,
    time_limit: Annotated[
        float, typer.Option(help="Seconds for the whole run, from reading the instance to the written plan (> 0).")
    ] = DEFAULT_REQUEST.time_limit_s,
    gap: Annotated[
        float, typer.Option(help="Relative optimality gap at which a solve stops, in [0, 1).")
    ] = DEFAULT_REQUEST.rel_gap,
    threads: Annotated[int, typer.Option(help="Solver threads (>= 1).")] = DEFAULT_REQUEST.threads,
    seed: Annotated[int, typer.Option(help="Solver random seed (>= 0).")] = DEFAULT_REQUEST.seed,
    node_limit: NodeLimitOpt = DEFAULT_REQUEST.node_limit,
    export_model: Annotated[
        Path | None,
        typer.Option(
            help="Also write the model for outside solvers: stage 1 to FILE.mps (or .lp), stage 2 to "
            "FILE.stage2.mps with the progress floor the planner used (solvers "
            + ", ".join(planning.solvers_with("export"))
            + ")."
        ),
    ] = None,
    stage2_progress: Annotated[
        float | None,
        typer.Option(
            help="With --export-model: write both stage models and no plan; stage 2's progress floor "
            "(row progress_floor) taken from this stage-1 optimum P of your own solver."
        ),
    ] = None,
    from_solution: Annotated[
        Path | None,
        typer.Option(
            help="Make the plan from an outside solver's solution of an exported model (CBC -solution, "
            "HiGHS writeSolution or SCIP writeSol file) instead of solving; status feasible."
        ),
    ] = None,
    lp_bound: Annotated[
        bool,
        typer.Option(help="Solve the LP relaxation first (HiGHS): the reported LP bound and an LP-rounded start plan."),
    ] = DEFAULT_REQUEST.lp_bound,
    horizon: HorizonOpt = DEFAULT_REQUEST.horizon,
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
) -> None:
    """Plan one round: GPUs, settings, partners and placements under the energy budget; validate; write.

    The input is a round instance, or your job list with --cluster (and --profiles): the instance made from them
    is written beside the plan, for validate, launch and instance next. Prints the running jobs, the waiting jobs
    with the reason each waits (docs/design.md §6.5) and a summary.
    """
    from wattplan.planner.console.tables import (
        plan_table,
        running_rows,
        summary_record,
        summary_table,
        waiting_rows,
        waiting_table,
    )
    from wattplan.planner.contracts.instance_io import load_instance
    from wattplan.planner.contracts.plan import write_plan
    from wattplan.planner.core.validate import InvalidPlanError
    from wattplan.planner.core.waiting import waiting_reasons
    from wattplan.planner.files.resources import default_instance

    started_at = time.perf_counter()
    request = PlanRequest(
        solver=solver,
        objective=None if objective is None else objective.value,
        delta=delta,
        time_limit_s=time_limit,
        rel_gap=gap,
        threads=threads,
        seed=seed,
        node_limit=node_limit,
        lp_bound=lp_bound,
        export_model=export_model,
        horizon=horizon,
    )
    planner: planning.Planner | None = None
    problems: list[Problem] = []
    try:
        if stage2_progress is None and from_solution is None:
            planner = planning.Planner(request)  # checks the request and loads its solvers, once
        else:
            problems += planning.request_problems(request)
    except InputError as exc:
        problems += exc.problems
    if budget_j is not None and power_cap_w is not None:
        problems.append(Problem("conflicting-options", "--budget-j", "give --budget-j or --power-cap-w"))
    if from_solution is not None and (export_model is not None or stage2_progress is not None):
        problems.append(
            Problem("conflicting-options", "--from-solution", "solves nothing: drop --export-model, --stage2-progress")
        )
    if stage2_progress is not None and export_model is None:
        problems.append(Problem("bad-option", "--stage2-progress", "needs --export-model FILE"))
    numbers = (
        ("--budget-j", budget_j, FROM_TRACE_RANGES["--budget-j"][1]),
        ("--power-cap-w", power_cap_w, FROM_TRACE_RANGES["--power-cap-w"][1]),
        ("--stage2-progress", stage2_progress, math.inf),
    )
    for option, value, high in numbers:  # a 1e308 W cap made a budget of inf J, unwritable as JSON
        if value is not None and not (math.isfinite(value) and 0 <= value <= high):
            problems.append(Problem("bad-option", option, f"must be a finite number in [0, {high:g}], got {value}"))
    if problems:
        raise InputError("options", problems)
    source = instance or default_instance()
    from_jobs = source.suffix.lower() in JOB_LIST_SUFFIXES
    if from_jobs and cluster is None:
        problems.append(Problem("bad-option", "--cluster", f"a job list ({source.name}) needs --cluster FILE"))
    if not from_jobs and (cluster or profiles or instance_out):
        problems.append(Problem("bad-option", "--cluster", "--cluster, --profiles, --instance-out go with a job list"))
    if problems:
        raise InputError("options", problems)
    outputs: dict[str, Path | None] = {"--out": out_path}
    if from_jobs:
        instance_out = instance_out or out_path.with_suffix(".instance.json")
        outputs["--instance-out"] = instance_out
    if export_model is not None:
        stage1, stage2 = planning.model_export_paths(export_model)
        outputs |= {"--export-model": stage1, "--export-model (stage 2)": stage2}
    refuse_overwriting_inputs(outputs, [source, from_solution, cluster, profiles])
    from wattplan.planner.contracts.instance_io import write_instance

    if from_jobs:
        from wattplan.planner.rounds.from_jobs import read_operator_instance

        assert cluster is not None and instance_out is not None
        inst, added = read_operator_instance(source, cluster, profiles)
        _prior_notes(added)
        source = instance_out  # written once the plan is made: a failed plan keeps the previous instance file
    else:
        inst = load_instance(source)
    override = planning.budget_override(inst.round.budget_j, inst.round.duration_s, budget_j, power_cap_w)
    planned_inst = planning.with_overridden_budget(inst, override)
    if stage2_progress is not None:
        written = planning.export_stage_models(planned_inst, request, stage2_progress)
        if from_jobs:
            write_instance(inst, source)
        out.print(f"models written (no plan): {shown(', '.join(map(str, written)))}")
        return
    try:
        if from_solution is not None:
            result = planning.plan_from_solution(planned_inst, from_solution, request)
        else:
            assert planner is not None
            with err.status(f"planning with {shown(solver)} (at most {time_limit:g} s)..."):
                result = planner.plan(planned_inst, started_at)
        if override is not None:
            result = planning.declare_budget_override(result, override, inst)
    except SolutionRejected as exc:
        report_problems(exc.source, exc.problems, "solution rejected, no plan written")
        raise typer.Exit(ExitCode.FAILED) from None
    except InvalidPlanError as exc:
        report_problems(solver, exc.problems, "planner bug: invalid plan, not written")
        raise typer.Exit(ExitCode.FAILED) from None
    if from_jobs:
        write_instance(inst, source)
    write_plan(result, out_path, written_by=output_provenance())
    waiting = waiting_reasons(planned_inst, result)

    def tables() -> list[RenderableType]:
        shown_tables: list[RenderableType] = [] if quiet else [plan_table(result, planned_inst)]
        if waiting and not quiet:
            shown_tables.append(waiting_table(waiting))
        return [*shown_tables, summary_table(result)]

    def sections() -> list[Section]:
        summary = Section("summary", [summary_record(result, waiting)], record=True)
        if quiet:
            return [summary]
        return [
            Section("running", running_rows(result, planned_inst)),
            Section("waiting", waiting_rows(waiting)),
            summary,
        ]

    print_answer(fmt, tables, sections)
    if basis_line := profile_basis_summary(result):
        say(fmt, shown(basis_line))
    if override is not None:
        say(fmt, shown(override.describe()))
    say(fmt, f"plan written to [bold]{shown(out_path)}[/] and validated against {shown(source)}")
    if export_model is not None:
        say(fmt, f"model written to {shown(', '.join(map(str, planning.exported_model_files(export_model))))}")


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


@app.command()
@handles_errors
def launch(
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="Plan to launch (wattplan.plan/1 JSON).")],
    instance: Annotated[
        Path, typer.Option(help="Instance the plan is for; its jobs' command, workdir, env and user are used.")
    ],
    to: Annotated[LaunchTarget, typer.Option("--to", help="What to render: Slurm, Kubernetes or node scripts.")],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Folder to write: new, empty or ours (its scripts' records are kept).")
    ],
    node_map: Annotated[
        Path | None,
        typer.Option(
            help="JSON object: plan node (e.g. v100-3) -> real host name (default: the instance's hosts, "
            "from instance from-jobs, else the plan's node names)."
        ),
    ] = None,
    node_prefix: Annotated[str | None, typer.Option(help="Host name = this prefix + plan node name.")] = None,
    partition: Annotated[str | None, typer.Option(help="Slurm partition for every job.")] = None,
    gres_type: Annotated[
        bool, typer.Option("--gres-type/--no-gres-type", help="Slurm: --gres=gpu:TYPE:N (or gpu:N).")
    ] = True,
    namespace: Annotated[str, typer.Option(help="Kubernetes namespace of the Jobs and the GPU agent.")] = "default",
    image: Annotated[str, typer.Option(help="Kubernetes: container image of the jobs.")] = DEFAULT_IMAGE,
    agent_image: Annotated[
        str, typer.Option(help="Kubernetes: image of the GPU agent (needs bash; nvidia-smi is injected).")
    ] = DEFAULT_IMAGE,
    device_plugin_namespace: Annotated[
        str, typer.Option(help="Kubernetes: namespace of the NVIDIA device plugin's config.")
    ] = "gpu-operator",
    from_plan: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="OLD_PLAN",
            help="Slurm: the previous round's plan; render only what changes (apply.sh, changes.md).",
        ),
    ] = None,
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from-dir",
            metavar="OLD_DIR",
            help="With --from: the previous round's launch folder; apply.sh acts only on the job ids it recorded.",
        ),
    ] = None,
    time_grace_s: Annotated[
        int, typer.Option(help="Job time limit = round.duration_s + this, in whole minutes.")
    ] = DEFAULT_GRACE_S,
    signal_lead_s: Annotated[
        int, typer.Option(help="Slurm: SIGUSR1 this many s before the limit, to checkpoint (0: none).")
    ] = DEFAULT_SIGNAL_LEAD_S,
    no_time_limit: Annotated[
        bool, typer.Option("--no-time-limit", help="No time limit nor signal: jobs run to completion.")
    ] = False,
) -> None:
    """Render a validated plan for Slurm (sbatch scripts), Kubernetes (Jobs and config) or plain node scripts.

    Jobs get a time limit of one round plus a grace (Slurm --time,
    Kubernetes activeDeadlineSeconds) and, on Slurm, SIGUSR1 before it:
    the job should write a checkpoint and exit.

    With --from OLD_PLAN (Slurm only) the folder holds only what changes
    and apply.sh: kept jobs get one more round, stopped, resized, moved and
    re-paired ones end, settings are re-set in place, new jobs submitted.
    """
    from wattplan.planner.launch.hosts import instance_host_map, load_host_map
    from wattplan.planner.launch.kubernetes import KubernetesOptions
    from wattplan.planner.launch.launcher import LaunchOptions, PlanRejected, launch_files, launch_followon_files
    from wattplan.planner.launch.limits import LimitOptions
    from wattplan.planner.launch.quoting import comment_text, is_plain_token
    from wattplan.planner.launch.render import PLACEHOLDER_EXIT
    from wattplan.planner.launch.slurm import SlurmOptions

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
    refuse_overwriting_inputs(
        {"--out": out_dir}, [plan_file, instance, node_map, from_plan, from_dir], replaced={"--out"}
    )
    hosts = load_host_map(node_map, node_prefix)
    if node_map is None and not node_prefix:
        hosts = instance_host_map(instance) or hosts  # an instance made by from-jobs names its hosts
    options = LaunchOptions(
        hosts=hosts,
        slurm=SlurmOptions(partition=partition, gres_type=gres_type),
        kubernetes=KubernetesOptions(
            namespace=namespace, image=image, agent_image=agent_image, device_plugin_namespace=device_plugin_namespace
        ),
        limits=LimitOptions(grace_s=time_grace_s, signal_lead_s=signal_lead_s, enabled=not no_time_limit),
        from_dir=from_dir,
    )
    try:
        if from_plan is None:
            result = launch_files(plan_file, instance, to.value, out_dir, options)
        else:
            result = launch_followon_files(plan_file, instance, from_plan, out_dir, options)
    except PlanRejected as exc:
        report_problems(exc.source, exc.problems, "invalid plan, nothing rendered")
        raise typer.Exit(ExitCode.FAILED) from None
    units = result.model.units
    if result.changeover is not None:
        c = result.changeover
        out.print(
            f"round {c.diff.from_round} -> {result.model.round_index}: keep {len(c.keep)} "
            f"({len(c.reset)} re-set in place), end {len(c.end)}, submit {len(c.submit)} allocation(s); "
            f"{len(result.files)} files in [bold]{shown(out_dir)}[/] (run apply.sh; see changes.md)"
        )
    else:
        out.print(
            f"rendered {len(units)} allocation(s) of round {result.model.round_index} for {to.value}: "
            f"{len(result.files)} files in [bold]{shown(out_dir)}[/]"
        )
    if result.budget_override is not None:
        out.print(shown(result.budget_override.describe()))
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
    import json

    from wattplan.planner.contracts.instance_io import load_instance
    from wattplan.planner.contracts.jsonio import write_json_atomic
    from wattplan.planner.contracts.plan import load_plan
    from wattplan.planner.launch.diff import diff_plans, diff_problems, diff_table, diff_to_doc

    instances = [p for p in (old_instance, new_instance) if p is not None]
    refuse_overwriting_inputs({"--json": json_out}, [old_plan, new_plan, *instances])
    sides = [
        (
            old_plan,
            "--old-instance",
            load_plan(old_plan),
            None if old_instance is None else load_instance(old_instance),
        ),
        (
            new_plan,
            "--new-instance",
            load_plan(new_plan),
            None if new_instance is None else load_instance(new_instance),
        ),
    ]
    refused = False
    for path, _, the_plan, inst in sides:
        problems = diff_problems(the_plan, inst)
        if problems:
            report_problems(str(path), problems, "invalid plan, no diff")
            refused = True
    if refused:
        raise typer.Exit(ExitCode.FAILED)
    unchecked = [f"{path} (no {option})" for path, option, _, inst in sides if inst is None]
    if unchecked:
        err.print(f"checked without an instance, so not validated in full: {shown(', '.join(map(str, unchecked)))}")
    result = diff_plans(sides[0][2], sides[1][2])
    doc = diff_to_doc(result)
    if json_out is not None:
        write_json_atomic(json_out, {**doc, "written_by": output_provenance()})
    if fmt == OutputFormat.json:
        typer.echo(json.dumps(doc, indent=1))
    else:
        print_answer(fmt, lambda: [diff_table(result)], lambda: [Section("actions", doc["actions"])])


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


FROM_TRACE_RANGES: dict[str, tuple[float, float]] = {
    "--at": (-1e9, 1e9),
    "--round-s": defaults.ROUND_S_RANGE,
    "--budget-fraction": (0.0, 1.0),
    "--budget-j": (0.0, 1e15),
    "--power-cap-w": (1e-3, 1e10),
    "--node-power-w": (0.0, 1e6),
    "--restart-s": (0.0, 86_400.0),
    "--min-pair-rate": (0.0, 1.0),
}
"""The range (both ends included) of each number option of ``instance from-trace``: seconds, a fraction
of full power, joules, watts, a slowdown. Wide enough for any real round (``--at`` within a trace's
1e9 s, :data:`planner.rounds.traces.MAX_TRACE_S`; a round of at most a day; 1e15 J, 1e10 W), narrow enough
that no product overflows: NaN, infinity or 1e308 ended in an internal error or in
``Out of range float values are not JSON compliant`` naming no option."""


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
    from wattplan.planner.contracts.instance_io import write_instance
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.core.economics import round_budget_j
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
    problems = _from_trace_option_problems(numbers)
    if problems:
        raise InputError(problems[0].path if len(problems) == 1 else "options", problems)
    trace = _trace(trace)
    refuse_overwriting_inputs({"--out": out_path}, [trace, profiles])
    spec = parse_cluster_spec(cluster, gpus_per_node, node_power_w)
    lib = _with_priors(load_profile_library(profiles), [name for name, _ in spec.gpus])
    jobs = read_trace(trace, lib, fmt.value, seed, vc)
    if no_budget:
        fraction, joules = None, None
    elif power_cap_w is not None:
        fraction, joules = None, round_budget_j(round_s, power_cap_w=power_cap_w)
    else:
        fraction, joules = (None, budget_j) if budget_j is not None else (budget_fraction, None)
    opts = RoundOptions(
        at_s=at,
        rules=RoundRules(duration_s=round_s, restart_s=restart_s, min_pair_rate=min_pair_rate),
        budget_fraction=fraction,
        budget_j=joules,
        max_jobs=max_jobs,
    )
    kind = trace_format(trace, fmt.value)
    inst = build_round(jobs, spec, lib, opts, {"trace": trace.name, "format": kind, "cluster": cluster, "seed": seed})
    import dataclasses

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
    for host, why in sorted((inst.extra.get("left_out") or {}).items()):
        out.print(f"  not planned: {shown(host)} ({shown(why)})")


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


def _prior_notes(added: Sequence[str]) -> None:
    """A note for each GPU type planned from its prior (design §9.8), with the prior's expected error."""
    from wattplan.planner.profile_library.priors import load_gpu_specs

    if not added:
        return
    specs = load_gpu_specs()
    told = specs.error.summary() if specs.error else "expected error not measured"
    for name in added:
        err.print(
            f"[yellow]note:[/] {shown(name)} has no profiles: planned from a prior scaled from the V100 by its "
            f"specs; {told}"
        )


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


@profiles_app.command("build")
@handles_errors
def profiles_build(
    sources: Annotated[
        Path | None, typer.Option(help="Folder with gavel/ and zeus/ source files (default: the shipped ones).")
    ] = None,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Profile library to write.")] = Path("profiles.json"),
) -> None:
    """Build V100 and P100 profiles (exclusive and co-located) from Gavel throughputs and Zeus power curves."""
    from wattplan.planner.files.resources import source_dir
    from wattplan.planner.profile_library.build import build_profile_library, write_profile_library

    folder = sources or source_dir()
    refuse_overwriting_inputs({"--out": out_path}, [folder, *(folder.rglob("*") if folder.is_dir() else [])])
    lib = build_profile_library(folder)
    write_profile_library(lib, out_path)
    out.print(
        f"wrote [bold]{shown(out_path)}[/]: {len(lib['profiles'])} profiles, {len(lib['pairs'])} pair entries, "
        f"GPU types {shown(', '.join(g['name'] for g in lib['gpu_types']))}"
    )


@profiles_app.command("fit")
@handles_errors
def profiles_fit(
    library: Annotated[
        Path | None, typer.Argument(help="Prior library (default: the shipped one).", show_default=False)
    ] = None,
    measurements: Annotated[
        list[Path] | None,
        typer.Option("--measurements", "-m", help="Measurements file or library with measurements (repeatable)."),
    ] = None,
    repair: Annotated[
        bool, typer.Option("--repair/--no-repair", help="Repair the prior's sanity findings (else only flag them).")
    ] = True,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Fitted library to write.")] = None,
    sanity_only: Annotated[
        bool, typer.Option("--sanity-only", help="Print the library's sanity findings and write nothing.")
    ] = False,
) -> None:
    """Fit the full profile table from measured points and a prior library; every entry gets a basis."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profiling import fit_output as show
    from wattplan.planner.profiling.fit import fit_files, sanity_file, write_fitted

    source = library or profile_library()
    if sanity_only:
        out.print(show.findings_table(sanity_file(source), f"sanity findings: {shown(source)}"))
        return
    if out_path is None:
        raise InputError("options", [Problem("bad-option", "--out", "is required unless --sanity-only")])
    refuse_overwriting_inputs({"--out": out_path}, [source, *(measurements or [])])
    result = fit_files(source, measurements or [], repair)
    write_fitted(result, out_path)
    for table in show.fit_tables(result):
        out.print(table)
    counts = f"{len(result.doc['profiles'])} profiles, {len(result.doc['pairs'])} pairs"
    out.print(f"wrote [bold]{shown(out_path)}[/]: {counts}")


class IngestFormat(StrEnum):
    """Measurement file formats of ``profiles ingest``: ``auto`` decides by each file's header."""

    auto = "auto"
    nvidia_smi = "nvidia-smi"
    zeus_windows = "zeus-windows"
    zeus_summary = "zeus-summary"


@profiles_app.command("ingest")
@handles_errors
def profiles_ingest(
    files: Annotated[list[Path], typer.Argument(help="nvidia-smi query logs, Zeus profile windows or summaries.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Library (or measurements file) to write.")],
    fmt: Annotated[IngestFormat, typer.Option("--format", help="File format.")] = IngestFormat.auto,
    job_side: Annotated[
        list[Path] | None,
        typer.Option(
            help="JSON of the runs in the nvidia-smi logs: job type, GPUs, window, steps. One describes every log; "
            "repeat it to pair by order (the k-th --job-side with the k-th log; the counts must match)."
        ),
    ] = None,
    job_type: Annotated[str | None, typer.Option(help="Job type of Zeus windows (default: the file name's).")] = None,
    gpu_type: Annotated[
        str | None,
        typer.Option(help="GPU type (default: an nvidia-smi log's name column, the file name's or the job side's)."),
    ] = None,
    steps_per_window: Annotated[
        float | None, typer.Option(help="Training steps in each Zeus window (required for Zeus windows).")
    ] = None,
    library: Annotated[
        str | None,
        typer.Option(help="Base library or measurements file to merge into (default: the shipped library; 'none')."),
    ] = None,
    measurements_only: Annotated[
        bool, typer.Option("--measurements-only", help="Write a wattplan.measurements/1 file, not a library.")
    ] = False,
) -> None:
    """Read measurements into points with their provenance and merge them (by id) into a library's measurements."""
    from wattplan.planner.profiling.ingest import NoBase, ingest, ingest_tables

    base: Path | NoBase | None = "none" if library == "none" else Path(library) if library else None
    # --library may be --out (merge in place); the measurement files and job sides may not
    refuse_overwriting_inputs({"--out": out_path}, [*files, *(job_side or [])])
    report = ingest(files, out_path, fmt.value, job_side, job_type, gpu_type, steps_per_window, base, measurements_only)
    for table in ingest_tables(report):
        out.print(table)
    counts = f"{report.total_points} points, {sum(report.added)} new"
    out.print(f"wrote [bold]{shown(out_path)}[/] ({report.out_kind}): {counts}")


@profiles_app.command("check")
@handles_errors
def profiles_check(
    library: Annotated[Path, typer.Argument(help="Profile library whose predictions are checked.")],
    measurements: Annotated[
        list[Path],
        typer.Argument(help="wattplan.measurements/1 files, or profile libraries with measurements."),
    ],
    type_map: Annotated[
        list[str] | None,
        typer.Option("--map", help="MEASURED=LIBRARY: the library's name of a measured job type (repeatable)."),
    ] = None,
    shape: Annotated[
        bool,
        typer.Option(
            "--shape",
            help="Compare throughput, power and energy per step as ratios to the top measured setting "
            "(for points whose steps are not the library's, e.g. Zeus windows).",
        ),
    ] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON here.")] = None,
    csv_out: Annotated[Path | None, typer.Option("--csv", help="Write rows and unmatched points as CSV here.")] = None,
) -> None:
    """Predicted vs measured per quantity (throughput, speedup, power, energy per step, pair rates, idle)."""
    from wattplan.planner.profiling import check_output as show
    from wattplan.planner.profiling.check import check_files

    refuse_overwriting_inputs({"--json": json_out, "--csv": csv_out}, [library, *measurements])
    report = check_files(library, measurements, type_map or [], shape)
    for quantity in report.quantities():
        if any(r.quantity == quantity for r in report.rows):
            out.print(show.rows_table(report, quantity))
    if report.unmatched:
        out.print(show.unmatched_table(report))
    out.print(show.summary_table(report))
    for path, write in ((json_out, show.write_report_json), (csv_out, show.write_report_csv)):
        if path is not None:
            write(path, report)
            out.print(f"wrote [bold]{shown(path)}[/]")


@profiles_app.command("truth")
@handles_errors
def profiles_truth(
    library: Annotated[
        Path | None, typer.Argument(help="Prior library to bend (default: the shipped one).", show_default=False)
    ] = None,
    alpha: Annotated[float, typer.Option(help="Amdahl loss per extra GPU: S(n) = n / (1 + alpha (n-1)).")] = 0.08,
    cap: Annotated[float, typer.Option(help="Data-loading ceiling of the speedup S(n).")] = 3.3,
    pair_factor: Annotated[float, typer.Option(help="True pair rates = factor x the prior's.")] = 1.07 / 1.71,
    idle_power_w: Annotated[float, typer.Option(help="True idle power per GPU (W).")] = 41.0,
    node_power_w: Annotated[float, typer.Option(help="True node power without GPUs (W).")] = 230.0,
    cap_spread: Annotated[
        float, typer.Option(help="Per-family spread of the ceiling: cap x 2^(spread x h), h in [-1, 1] per family.")
    ] = 0.0,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Truth library to write.")] = Path("truth.json"),
) -> None:
    """Write a truth library for replays: the prior bent the way real nvidia-smi measurements differ from it.

    Saturating scaling, power that follows utilisation, lower pair rates, measured idle and node power
    (defaults: an 8x V100 node's logs; planner/profiling/truth.py). Use it as `simulate --truth`.
    """
    from wattplan.planner.contracts.jsonio import write_json_atomic
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profiling.truth import TruthParams, truth_from_file

    params = TruthParams(alpha, cap, pair_factor, idle_power_w, node_power_w, cap_spread)
    prior = library or profile_library()
    refuse_overwriting_inputs({"--out": out_path}, [prior])
    doc = truth_from_file(prior, params)
    write_json_atomic(out_path, doc)
    out.print(f"wrote [bold]{shown(out_path)}[/]: {len(doc['profiles'])} profiles, {len(doc['pairs'])} pair entries")


@profiles_app.command("prior")
@handles_errors
def profiles_prior(
    gpu: Annotated[str, typer.Option(help="GPU types to add from their specs, comma-separated (e.g. a100,h100).")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Profile library to write.")],
    profiles: ProfilesOpt = None,
    specs: Annotated[
        Path | None, typer.Option(help="GPU spec file (default: the shipped instances/profiles/gpu_specs.json).")
    ] = None,
) -> None:
    """Add GPU types without measurements, scaled from the V100 by public specs.

    Each new type's profiles and pairs are marked basis prior with the rule's measured expected error
    (docs/design.md §9.8); `profiles fit` and learning correct them like any prior.
    """
    from wattplan.planner.console.list_options import split_list
    from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import library_from_doc
    from wattplan.planner.profile_library.priors import add_prior_types_doc, load_gpu_specs

    source = profiles or profile_library()
    names = split_list(gpu, "--gpu")
    refuse_overwriting_inputs({"--out": out_path}, [source, specs])
    doc = read_json(source)
    lib = library_from_doc(doc, str(source))
    spec_file = load_gpu_specs(specs)
    add_prior_types_doc(doc, lib, names, spec_file)
    library_from_doc(doc, "the library with priors")  # every check, before writing
    write_json_atomic(out_path, doc)
    told = spec_file.error.summary() if spec_file.error else "expected error not measured"
    out.print(f"wrote [bold]{shown(out_path)}[/]: added {shown(', '.join(names))} from priors; {told}")


@profiles_app.command("ls")
@handles_errors
def profiles_ls(profiles: ProfilesOpt = None) -> None:
    """Per GPU type: settings, idle power, job types, GPU counts, pairs, profiles by basis kind."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profile_library.listing import summary_table

    source = profiles or profile_library()
    out.print(summary_table(load_profile_library(source), f"GPU types in {source.name}"))


@profiles_app.command("show")
@handles_errors
def profiles_show(
    gpu: Annotated[str, typer.Option(help="GPU type whose profiles are listed.")],
    job_type: Annotated[str | None, typer.Option("--type", help="Only this job type.")] = None,
    profiles: ProfilesOpt = None,
) -> None:
    """The profile entries of one GPU type: job type, GPUs, setting, steps/s, W per GPU, basis, error."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profile_library.listing import entries_table

    source = profiles or profile_library()
    lib = load_profile_library(source)
    if gpu not in lib.gpu_types:
        raise InputError("--gpu", [Problem("unknown-gpu-type", "--gpu", f"{gpu!r} is not in {sorted(lib.gpu_types)}")])
    if job_type is not None and not any(p.type == job_type and p.gpu_type == gpu for p in lib.profiles):
        raise InputError("--type", [Problem("unknown-job-type", "--type", f"no profile of {job_type!r} on {gpu}")])
    what = gpu if job_type is None else f"{job_type} on {gpu}"
    out.print(entries_table(lib, gpu, job_type, f"profiles of {what} in {source.name}"))


@app.command()
@handles_errors
def simulate(
    trace: TraceArg,
    cluster: ClusterOpt,
    policy: Annotated[
        list[str],
        typer.Option(
            "--policy",
            "-p",
            help="fifo-max, zeus, eaco, powerflow, wattplan, all (these five) or a plug-in's name "
            "(entry points of wattplan.policies); repeat for several.",
        ),
    ] = ["wattplan"],  # noqa: B006 (typer needs a list default)
    power_cap_w: PowerCapOpt = None,
    energy_budget_kwh: EnergyBudgetOpt = None,
    round_s: RoundSOpt = defaults.ROUND_S,
    objective: Annotated[
        ObjectiveChoice | None,
        typer.Option(help="wattplan's objective (default progress: fastest, not least energy)."),
    ] = None,
    solver: ReplaySolverOpt = REPLAY_REQUEST.solver,
    time_limit: ReplayTimeLimitOpt = REPLAY_REQUEST.time_limit_s,
    threads: ThreadsOpt = REPLAY_REQUEST.threads,
    seed: ReplaySeedOpt = REPLAY_REQUEST.seed,
    node_limit: NodeLimitOpt = REPLAY_REQUEST.node_limit,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("sim-out"),
    max_jobs: MaxJobsOpt = None,
    start_s: StartSOpt = None,
    end_s: EndSOpt = None,
    fmt: FormatOpt = TraceFormat.auto,
    vc: VcOpt = None,
    zeus_eta: ZeusEtaOpt = defaults.ZEUS_ETA,
    noise: NoiseOpt = 0.0,
    restart_s: RestartOpt = defaults.RESTART_S,
    min_pair_rate: MinPairRateOpt = defaults.MIN_PAIR_RATE,
    delta: Annotated[
        float, typer.Option(help="Progress the energy objective gives up per round, in [0, 1).")
    ] = defaults.DELTA,
    max_jct_increase: Annotated[
        float | None,
        typer.Option(
            help="Runtime-bounded energy mode: least energy with an average JCT at most this many percent "
            "above fifo-max's on the same queue (wattplan plans with the efficiency objective, or energy if "
            "--objective energy is given; delta steered per round)."
        ),
    ] = None,
    governor: GovernorOpt = GovernorChoice.accrued,
    delta_max: DeltaMaxOpt = defaults.DELTA_MAX,
    tail_bound: TailBoundOpt = None,
    tail_pace: TailPaceOpt = TailPaceChoice.steady,
    horizon: HorizonOpt = REPLAY_REQUEST.horizon,
    carbon: CarbonOpt = None,
    price: PriceOpt = None,
    signal_start: SignalStartOpt = None,
    signal_aware: SignalAwareOpt = True,
    max_rounds: MaxRoundsOpt = defaults.MAX_ROUNDS,
    gpus_per_node: GpusPerNodeOpt = defaults.GPUS_PER_NODE,
    node_power_w: NodePowerOpt = defaults.NODE_POWER_W,
    profiles: BelievedProfilesOpt = None,
    truth: TruthOpt = None,
    learn: LearnOpt = False,
    replan: ReplanOpt = ReplanChoice.rounds,
    plots: PlotsOpt = True,
    plot_format: PlotFormatOpt = PlotFormatChoice.png,
    dpi: DpiOpt = defaults.FIGURE_DPI,
    quiet: QuietOpt = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Start over: ignore the checkpoint --out holds (by default a replay resumes from its last "
            "checkpoint when rerun with the same options and inputs).",
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option(help="Policies replayed at once, each in its own process (>= 1; 1: one after another).")
    ] = 1,
    ray: RayOpt = None,
    answer_format: OutputFormatOpt = OutputFormat.table,
) -> None:
    """Replay a trace round by round with one or more policies; write logs, summary.json and figures.

    rounds.csv and jobs.csv are written as the replay goes, with a checkpoint every 1000 rounds or 30 s:
    an interrupted replay rerun with the same command resumes where it stopped (--fresh starts over).
    Without --objective wattplan plans for progress (fastest, not least energy); the energy
    modes are --objective efficiency --max-jct-increase PCT and `wattplan frontier`.
    """
    from wattplan.planner.sim.render import progress_callback, progress_display, progress_log, summary_table
    from wattplan.planner.sim.session import ReplayHooks, interrupted_note, replay_spec, run_simulate

    spec = replay_spec(
        trace,
        cluster=cluster,
        policies=policy,
        power_cap_w=power_cap_w,
        energy_budget_kwh=energy_budget_kwh,
        round_s=round_s,
        objective=None if objective is None else objective.value,
        solver=solver,
        time_limit=time_limit,
        threads=threads,
        seed=seed,
        node_limit=node_limit,
        max_jobs=max_jobs,
        start_s=start_s,
        end_s=end_s,
        trace_format=fmt.value,
        vc=vc,
        zeus_eta=zeus_eta,
        noise=noise,
        restart_s=restart_s,
        min_pair_rate=min_pair_rate,
        delta=delta,
        max_jct_increase=max_jct_increase,
        governor=governor.value,
        delta_max=delta_max,
        tail_bound=tail_bound,
        tail_pace=tail_pace.value,
        carbon=carbon,
        price=price,
        signal_start=signal_start,
        signal_aware=signal_aware,
        max_rounds=max_rounds,
        gpus_per_node=gpus_per_node,
        node_power_w=node_power_w,
        profiles=profiles,
        truth=truth,
        learn=learn,
        replan=replan.value,
        horizon=horizon,
    )
    figures = _figure_options(plot_format, dpi)
    hooks = ReplayHooks(
        warn=lambda text: err.print(f"[yellow]warning:[/] {shown(text)}"),
        note=lambda text: err.print(shown(text)),
    )
    serial = workers == 1 and ray is None
    with (
        _ResumeNote(lambda: interrupted_note(spec, out_path, workers, ray)),
        progress_display(err) if serial else _policies_bar(len(spec.policies), quiet) as bar,
    ):
        if not serial:
            task = bar.add_task("simulate", total=len(spec.policies))
            hooks.policy_done = lambda: bar.advance(task)
        elif quiet:
            hooks.round_progress = lambda name, _: progress_log(
                lambda line: err.print(shown(line), soft_wrap=True), name
            )
        else:
            hooks.round_progress = lambda name, jobs: progress_callback(bar, name, jobs)
        outcome = run_simulate(
            spec,
            out_path,
            plots=plots,
            figures=figures,
            fresh=fresh,
            workers=workers,
            ray=ray,
            written_by=output_provenance(),
            hooks=hooks,
        )
    workload, ctx = outcome.workload, outcome.ctx
    summaries = outcome.summaries
    print_answer(answer_format, lambda: [summary_table(summaries)], lambda: [Section("replays", summaries)])
    _report_dropped(workload.dropped_by_type, ctx.type_names, out_path)
    say(answer_format, f"{len(workload.jobs)} jobs replayed; results written to [bold]{shown(out_path)}[/]")
    if objective is None and max_jct_increase is None and "wattplan" in spec.policies:
        err.print(PROGRESS_MODE_HINT)


PROGRESS_MODE_HINT = (
    "wattplan used --objective progress (the default: fastest, not least energy). "
    "To save energy: --objective efficiency --max-jct-increase 3, or sweep the trade-off "
    "with `wattplan frontier`."
)
"""What ``simulate`` says when wattplan ran without ``--objective``: the mode it used and the energy modes."""


class _ResumeNote:
    """Around a replay: interrupted (Ctrl-C, or SIGINT or SIGTERM ending a pool with 130 or 143), say ``note()``.

    The note says whether the same command run again resumes (``planner.sim.session.interrupted_note``); the
    interruption then goes on as it was (exit 130 or 143).
    """

    def __init__(self, note: Callable[[], str]) -> None:
        self.note = note

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        code = exc.code if isinstance(exc, SystemExit) else None
        if isinstance(exc, KeyboardInterrupt) or code in (130, 143):
            err.print(shown(self.note()), soft_wrap=True)


def _report_dropped(by_type: Mapping[str, Sequence[str]], cluster_types: Sequence[str], out_path: Path) -> None:
    """Say on stderr which job types were dropped (no profile on the cluster), how many jobs, the first id of each."""
    from wattplan.planner.sim.output import DROPPED_FILE
    from wattplan.planner.sim.workload import dropped_text

    if text := dropped_text(by_type, cluster_types):
        err.print(f"[yellow]{shown(text)}; ids in {shown(out_path / DROPPED_FILE)}[/]")


def _log_line(line: str) -> None:
    """A progress line of a quiet replay, on stderr, never wrapped."""
    err.print(shown(line), soft_wrap=True)


def _policies_bar(total: int, quiet: bool) -> Any:
    """The bar of a parallel ``simulate``: policies done of ``total``, the time elapsed and left (none when quiet)."""
    from wattplan.planner.console.bars import count_bar

    return count_bar("[bold]simulate", "policies", err, quiet=quiet)


@app.command()
@handles_errors
def frontier(
    trace: TraceArg,
    cluster: ClusterOpt,
    deltas: Annotated[
        str, typer.Option(help="Energy-objective deltas to sweep, comma-separated (each in [0, 1)).")
    ] = "0.03,0.1,0.2,0.3",
    max_jct_increase: Annotated[
        str, typer.Option(help="Runtime-bounded mode: JCT increases to sweep, percent, comma-separated.")
    ] = "0,5,10,20",
    baselines: Annotated[
        str, typer.Option(help="Baselines to place beside the front, comma-separated, or all.")
    ] = "all",
    objective: Annotated[
        ObjectiveChoice,
        typer.Option(help="Objective of the swept points: efficiency or energy (progress is always one point)."),
    ] = ObjectiveChoice.efficiency,
    workers: Annotated[
        int, typer.Option(help="Replays run at once, each in its own process (>= 1; with --ray: Ray tasks in flight).")
    ] = 2,
    ray: RayOpt = None,
    power_cap_w: PowerCapOpt = None,
    energy_budget_kwh: EnergyBudgetOpt = None,
    round_s: RoundSOpt = defaults.ROUND_S,
    solver: ReplaySolverOpt = REPLAY_REQUEST.solver,
    time_limit: ReplayTimeLimitOpt = REPLAY_REQUEST.time_limit_s,
    threads: ThreadsOpt = REPLAY_REQUEST.threads,
    seed: ReplaySeedOpt = REPLAY_REQUEST.seed,
    node_limit: NodeLimitOpt = REPLAY_REQUEST.node_limit,
    max_jobs: MaxJobsOpt = None,
    start_s: StartSOpt = None,
    end_s: EndSOpt = None,
    fmt: FormatOpt = TraceFormat.auto,
    vc: VcOpt = None,
    zeus_eta: ZeusEtaOpt = defaults.ZEUS_ETA,
    noise: NoiseOpt = 0.0,
    restart_s: RestartOpt = defaults.RESTART_S,
    min_pair_rate: MinPairRateOpt = defaults.MIN_PAIR_RATE,
    governor: GovernorOpt = GovernorChoice.accrued,
    delta_max: DeltaMaxOpt = defaults.DELTA_MAX,
    tail_bound: TailBoundOpt = None,
    tail_pace: TailPaceOpt = TailPaceChoice.steady,
    carbon: CarbonOpt = None,
    price: PriceOpt = None,
    signal_start: SignalStartOpt = None,
    signal_aware: SignalAwareOpt = True,
    max_rounds: MaxRoundsOpt = defaults.MAX_ROUNDS,
    gpus_per_node: GpusPerNodeOpt = defaults.GPUS_PER_NODE,
    node_power_w: NodePowerOpt = defaults.NODE_POWER_W,
    profiles: BelievedProfilesOpt = None,
    truth: TruthOpt = None,
    learn: LearnOpt = False,
    horizon: HorizonOpt = REPLAY_REQUEST.horizon,
    replan: ReplanOpt = ReplanChoice.rounds,
    plots: PlotsOpt = True,
    plot_format: PlotFormatOpt = PlotFormatChoice.png,
    dpi: DpiOpt = defaults.FIGURE_DPI,
    quiet: QuietOpt = False,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder (a rerun resumes).")] = Path(
        "frontier-out"
    ),
    answer_format: OutputFormatOpt = OutputFormat.table,
) -> None:
    """Sweep wattplan's energy knob on one trace in parallel; plot the energy-JCT front beside every baseline.

    Writes runs/<label>/ per replay, frontier.csv, frontier.json and frontier.png (or .pdf, .svg:
    energy against average JCT, baselines as markers, the workload's energy floor as a line, the
    reference fifo-max ringed). Every simulate option applies to every point but --policy
    (--baselines), --delta (--deltas) and --max-jct-increase (a list here). Finished replays
    are reused when the sweep is run again with the same settings and the same input files (by
    SHA-256); saved replays of other settings or inputs are stale: replayed, and counted.
    """
    from wattplan.planner.console.bars import count_bar
    from wattplan.planner.sim.render import summary_table
    from wattplan.planner.sim.session import frontier_sweep, run_frontier

    sweep = frontier_sweep(
        trace,
        cluster=cluster,
        deltas=deltas,
        max_jct_increase=max_jct_increase,
        baselines=baselines,
        objective=objective.value,
        power_cap_w=power_cap_w,
        energy_budget_kwh=energy_budget_kwh,
        round_s=round_s,
        solver=solver,
        time_limit=time_limit,
        threads=threads,
        seed=seed,
        node_limit=node_limit,
        max_jobs=max_jobs,
        start_s=start_s,
        end_s=end_s,
        trace_format=fmt.value,
        vc=vc,
        zeus_eta=zeus_eta,
        noise=noise,
        restart_s=restart_s,
        min_pair_rate=min_pair_rate,
        governor=governor.value,
        delta_max=delta_max,
        tail_bound=tail_bound,
        tail_pace=tail_pace.value,
        carbon=carbon,
        price=price,
        signal_start=signal_start,
        signal_aware=signal_aware,
        max_rounds=max_rounds,
        gpus_per_node=gpus_per_node,
        node_power_w=node_power_w,
        profiles=profiles,
        truth=truth,
        learn=learn,
        replan=replan.value,
        horizon=horizon,
    )
    figures = _figure_options(plot_format, dpi) if plots else None
    total = sweep.total
    with count_bar("[bold]frontier", "replays", err, quiet=quiet) as bar:
        task = bar.add_task("frontier", total=total)
        result = run_frontier(
            sweep, out_path, workers=workers, ray=ray, figures=figures, point_done=lambda: bar.advance(task)
        )
    print_answer(answer_format, lambda: [summary_table(result.rows)], lambda: [Section("frontier", result.rows)])
    _report_dropped(result.dropped, result.cluster_types, out_path)
    if result.stale:
        err.print(
            f"[yellow]{len(result.stale)} saved replay(s) stale (options or an input file changed), "
            f"replayed: {shown(', '.join(result.stale))}[/]"
        )
    failed = [r["label"] for r in result.rows if r.get("error")]
    if failed:
        err.print(f"[yellow]{len(failed)} replay(s) failed: {shown(', '.join(failed))} (see frontier.csv)[/]")
    files = shown(", ".join(p.name for p in result.paths))
    say(answer_format, f"{total} replays; frontier written to [bold]{shown(out_path)}[/] ({files})")


@app.command()
@handles_errors
def bench(
    instances: Annotated[
        Path,
        typer.Argument(
            metavar="SET", help="A folder of instances (its manifest.csv, else every *.json) or one instance file."
        ),
    ],
    solvers: Annotated[
        str,
        typer.Option(
            help="Solvers to compare, comma-separated: "
            + ", ".join([*planning.SOLVER_NAMES, *planning.SOLVER_PATTERNS])
            + ', a plug-in\'s name (entry points of wattplan.solvers); quote a command: cmd:"x {mps} {sol}".'
        ),
    ] = "cbc,highs,cpsat,greedy",
    time_limit: Annotated[float, typer.Option(help="Seconds per run, the whole planning call (> 0).")] = 10.0,
    seeds: Annotated[int, typer.Option(help="Runs per instance and solver, seeds 0 .. K-1 (>= 1).")] = 1,
    workers: Annotated[
        int | None,
        typer.Option(help="Runs at once, each a fresh process (>= 1; default 1, with --ray as many as Ray places)."),
    ] = None,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder (a rerun resumes).")] = Path("bench-out"),
    ray: RayOpt = None,
    gap: Annotated[
        float, typer.Option(help="Relative gap at which a solve stops and a run counts as solved, in [0, 1).")
    ] = DEFAULT_REQUEST.rel_gap,
    threads: Annotated[int, typer.Option(help="Solver threads per run (>= 1).")] = 1,
    memory_limit_mb: Annotated[
        int | None, typer.Option(help="Address-space cap of each run (MiB, RLIMIT_AS); over it a run is oom.")
    ] = None,
    grace: Annotated[
        float | None, typer.Option(help="Seconds past the limit before a run is killed (default max(5, 0.5 x limit)).")
    ] = None,
    node_limit: Annotated[
        int | None,
        typer.Option(
            help="Branch-and-bound nodes per MIP stage of every run (>= 1; cbc, highs, scip; greedy runs as it is): "
            "runs that stop on nodes, not on the clock, repeat on any machine and load."
        ),
    ] = None,
    plot_format: Annotated[
        PlotFormatChoice,
        typer.Option("--plot-format", help="Also write profile.pdf or profile.svg (profile.png is always written)."),
    ] = PlotFormatChoice.png,
    dpi: DpiOpt = defaults.FIGURE_DPI,
    quiet: QuietOpt = False,
    fmt: OutputFormatOpt = OutputFormat.table,
) -> None:
    """Benchmark solvers: every instance x solver x seed in a fresh process; MIPLIB-style summary and profiles.

    Writes runs/<run>.json per finished run (a rerun skips them), runs.csv and runs.jsonl (every run),
    summary.csv and report.md (per solver: solved, wrong, shifted geometric mean time, mean gap, primal
    integral, failures; the wrong results listed) and profile.png (performance profile). A crash, hang or
    out-of-memory run is a result; so is a wrong one (a plan that fails the re-check, a bound a valid plan
    beats, an optimal claim a valid plan beats by more than the gap).
    """
    from wattplan.planner.bench.report import summary_table
    from wattplan.planner.bench.session import bench_config, run_bench_session
    from wattplan.planner.bench.summary import FAILURES
    from wattplan.planner.console.bars import count_bar

    session = bench_config(
        instances,
        out=out_path,
        solvers=solvers,
        time_limit=time_limit,
        seeds=seeds,
        workers=workers,
        ray=ray,
        gap=gap,
        threads=threads,
        memory_limit_mb=memory_limit_mb,
        grace=grace,
        node_limit=node_limit,
        plot_format=plot_format.value,
        dpi=dpi,
    )
    failed = 0
    with count_bar("[bold]bench", "runs", err, quiet=quiet, extra=("{task.fields[failed]} failed",)) as bar:
        task = bar.add_task("bench", total=len(session.tasks), failed=0)

        def advance(record: dict[str, Any]) -> None:
            nonlocal failed
            failed += record.get("status") in FAILURES
            bar.update(task, advance=1, failed=failed)

        outcome = run_bench_session(session, advance)
    result, report = outcome.sweep, outcome.report
    print_answer(fmt, lambda: [summary_table(report.summary)], lambda: [Section("solvers", report.summary)])
    if failed:
        err.print(f"[yellow]{failed} run(s) failed (crash, hang, timeout, oom or error): see runs.csv[/]")
    wrong = sum(bool(r.get("wrong")) for r in report.rows)
    if wrong:
        err.print(f"[red]{wrong} wrong result(s): see 'Wrong results' in report.md[/]")
    if result.stale:
        err.print(
            f"[yellow]{result.stale} saved run(s) in {shown(out_path / 'runs')} are stale (an instance changed, "
            "or other options): not reused[/]"
        )
    out.print(
        f"{len(report.rows)} runs ({result.ran} now, {result.reused} reused); "
        f"results in [bold]{shown(out_path)}[/] ({shown(', '.join(p.name for p in report.paths))})"
    )


# ---------------------------------------------------------------------------------------------- the live agent

ClusterDirOpt = Annotated[Path, typer.Option("--dir", help="The emulated cluster's folder.")]


@app.command()
@handles_errors
def agent(
    cluster_dir: Annotated[
        Path | None,
        typer.Option(
            "--cluster",
            help="An emulated cluster's folder (wattplan cluster up): its Slurm, Prometheus, settings folder and "
            "clock. Without it: the Slurm of SLURM_CONF and --prometheus.",
        ),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option(help="SQLite state file (default: agent.db in --cluster, else ./wattplan-agent.db)."),
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option(help="Prometheus URL scraping the DCGM exporters (http://HOST:PORT).")
    ] = None,
    settings_dir: Annotated[
        Path | None,
        typer.Option(help="Shared folder the node scripts read settings from (default /var/lib/wattplan/settings)."),
    ] = None,
    profiles: Annotated[
        Path | None,
        typer.Option(help="Profile library (default: the shipped one).", parser=_library_path, metavar="<path>"),
    ] = None,
    learn: Annotated[
        bool, typer.Option(help="Correct the profiles from each round's observed steps and power.")
    ] = False,
    objective: Annotated[
        ObjectiveChoice | None,
        typer.Option(help="Objective (default: efficiency with the JCT bound, progress without it)."),
    ] = None,
    max_jct_increase: Annotated[
        float,
        typer.Option(
            help="Runtime-bounded energy mode: least energy with an average JCT at most this many percent above "
            "what Slurm's first-come-first-served scheduling at full power would give (estimated by fifo-max over "
            "the jobs seen so far: in continuous time, as Slurm starts jobs, or with --no-event-rounds round by "
            "round, as the replay does)."
        ),
    ] = 3.0,
    jct_bound: Annotated[
        bool, typer.Option(help="Steer each round's delta by the JCT bound (--no-jct-bound: a fixed --delta).")
    ] = True,
    delta: Annotated[float, typer.Option(help="Progress given up per round without the JCT bound.")] = defaults.DELTA,
    round_s: RoundSOpt = defaults.ROUND_S,
    restart_s: RestartOpt = defaults.RESTART_S,
    min_pair_rate: MinPairRateOpt = defaults.MIN_PAIR_RATE,
    solver: ReplaySolverOpt = REPLAY_REQUEST.solver,
    time_limit: ReplayTimeLimitOpt = REPLAY_REQUEST.time_limit_s,
    threads: Annotated[int, typer.Option(help="Solver threads (>= 1).")] = REPLAY_REQUEST.threads,
    seed: Annotated[int, typer.Option(help="Solver seed.")] = REPLAY_REQUEST.seed,
    node_limit: NodeLimitOpt = REPLAY_REQUEST.node_limit,
    node_power_w: Annotated[
        float | None, typer.Option(help="A node's power besides its GPUs (W; default: the library's or 300).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option(help="Play one round on a copy of the state; print the Slurm calls, send none.")
    ] = False,
    until_idle: Annotated[
        bool, typer.Option(help="Stop once every managed job has ended (and, with --cluster, all were submitted).")
    ] = False,
    max_rounds: Annotated[int | None, typer.Option(help="Stop after this many rounds.")] = None,
    pairs: Annotated[
        bool,
        typer.Option(
            help="Co-locate pairs on shared GPUs (off: on Slurm a pair change restarts the guest, which the round "
            "model does not price; see docs/design.md 11.6)."
        ),
    ] = False,
    event_rounds: Annotated[
        bool,
        typer.Option(help="Also start a round when a managed job arrives or leaves (--no-event-rounds: fixed rounds)."),
    ] = True,
    start_s: Annotated[
        float,
        typer.Option(
            help="A job's own start-up time before its first step (s), for the JCT reference (a requeue costs "
            "--restart-s)."
        ),
    ] = 0.0,
    allow_user: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-user",
            metavar="NAME",
            help="Act on opted-in jobs of this Slurm user (repeatable). With no --allow-user and no "
            "--allow-account: the user the agent runs as, and no one else.",
        ),
    ] = None,
    allow_account: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-account", metavar="NAME", help="Act on opted-in jobs of this Slurm account (repeatable)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Log only notes and faults.")] = False,
) -> None:
    """Run the control loop on a Slurm cluster: read the queue, observe, plan, apply; every --round-s.

    A job opts in with sbatch --hold --comment='wattplan:type=TYPE;steps=STEPS' and is managed only if its user
    or account is allowed (--allow-user, --allow-account); no other job is touched, and no administrator's hold
    is ever released.

    Install the node scripts (planner/agent/node_files) so that power limits reach the GPUs.
    """
    from wattplan.planner.agent.loop import AgentConfig
    from wattplan.planner.agent.run import environment, run_agent, stderr_log
    from wattplan.planner.agent.trust import Allowed, name_problem
    from wattplan.planner.contracts.rules import RoundRules, rules_problems
    from wattplan.planner.profile_library.library import load_profile_library

    bound = max_jct_increase / 100.0 if jct_bound else None
    if bound is not None and not 0 <= bound <= 10:
        raise InputError("--max-jct-increase", [Problem("bad-option", "--max-jct-increase", "must be in [0, 1000]")])
    if not 0 <= start_s < 1e7:
        raise InputError("--start-s", [Problem("bad-option", "--start-s", "must be a number of seconds >= 0")])
    names = [("--allow-user", n) for n in allow_user or []] + [("--allow-account", n) for n in allow_account or []]
    if problems := [Problem("bad-option", o, m) for o, n in names if (m := name_problem(n)) is not None]:
        raise InputError("options", problems)
    if objective is not None:
        rules = RoundRules(round_s, restart_s, min_pair_rate, objective.value, delta)
    else:
        rules = RoundRules(round_s, restart_s, min_pair_rate, "efficiency" if bound is not None else "progress", delta)
    options = {"duration_s": "--round-s", "restart_s": "--restart-s", "delta": "--delta"}
    if problems := rules_problems(rules, options):
        raise InputError("options", problems)
    request = PlanRequest(
        solver=solver, time_limit_s=time_limit, threads=threads, seed=seed, node_limit=node_limit, lp_bound=False
    )
    if problems := planning.request_problems(request):  # before any daemon is asked: not at the first round
        raise InputError("options", problems)
    env = environment(
        cluster_dir, prometheus, settings_dir or (None if cluster_dir else Path("/var/lib/wattplan/settings"))
    )
    config = AgentConfig(
        library=load_profile_library(profiles),
        rules=rules,
        request=request,
        max_jct_increase=bound,
        learn=learn,
        dry_run=dry_run,
        until_idle=until_idle,
        max_rounds=max_rounds,
        node_power_w=node_power_w,
        event_rounds=event_rounds,
        pairs=pairs,
        start_s=start_s,
        allowed=Allowed.of(allow_user or [], allow_account or []),
    )
    default_state = (cluster_dir / "agent.db") if cluster_dir else Path("wattplan-agent.db")
    code = run_agent(config, env, state or default_state, stderr_log(quiet))
    raise typer.Exit(code)


@cluster_app.command("up")
@handles_errors
def cluster_up(
    cluster_dir: ClusterDirOpt,
    gpus: Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")] = "v100:32",
    gpus_per_node: GpusPerNodeOpt = defaults.GPUS_PER_NODE,
    truth: Annotated[
        Path | None, typer.Option(help="Profile library the emulated GPUs run by (default: the shipped one).")
    ] = None,
    time_scale: Annotated[float, typer.Option(help="Emulated seconds per real second (> 0).")] = 60.0,
    restart_s: Annotated[
        float, typer.Option(help="Emulated seconds a (re)started job spends loading its checkpoint.")
    ] = defaults.RESTART_S,
) -> None:
    """Start munged, slurmctld, one slurmd per node, the GPU emulator, node agents and Prometheus (needs root).

    --dir must be new, empty, or a folder an earlier `cluster up` made (it holds .wattplan-cluster).
    """
    from wattplan.planner.cluster.up import cluster_up as up
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.rounds.cluster_spec import parse_cluster_spec

    try:
        spec = parse_cluster_spec(gpus, gpus_per_node)
    except InputError as e:  # the parser names plan's --cluster; here the option is --gpus
        raise InputError("--gpus", [Problem(p.code, "--gpus", p.message) for p in e.problems]) from None
    if not 0 < time_scale <= 10_000:
        raise InputError("--time-scale", [Problem("bad-option", "--time-scale", "must be in (0, 10000]")])
    manifest = up(
        cluster_dir,
        spec.gpus,
        gpus_per_node,
        load_profile_library(truth),
        truth,
        time_scale,
        restart_s,
        log=lambda m: err.print(shown(m)),
    )
    out.print(
        f"cluster up in [bold]{shown(cluster_dir)}[/]: {len(manifest['nodes'])} nodes, Prometheus "
        f"{shown(manifest['prometheus_url'])}, {time_scale:g} emulated s per real s"
    )


@cluster_app.command("down")
@handles_errors
def cluster_down(cluster_dir: ClusterDirOpt) -> None:
    """Stop exactly what `wattplan cluster up` started in --dir (its jobs, every user's, are cancelled first)."""
    from wattplan.planner.cluster.up import cluster_down as down

    down(cluster_dir, log=lambda m: out.print(shown(m)))


@cluster_app.command("submit")
@handles_errors
def cluster_submit(
    trace: TraceArg,
    cluster_dir: ClusterDirOpt,
    unmanaged: Annotated[
        bool, typer.Option(help="Submit as a user would, for Slurm's own scheduling (no hold, no opt-in comment).")
    ] = False,
    max_jobs: MaxJobsOpt = None,
    start_s: StartSOpt = None,
    end_s: EndSOpt = None,
    fmt: FormatOpt = TraceFormat.auto,
    vc: VcOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of Philly job types.")] = 0,
    wait: Annotated[bool, typer.Option(help="Return once every job is submitted (default: at once).")] = False,
) -> None:
    """Submit a trace's jobs (the replay's selection) at their arrival times, on the emulated clock."""
    from wattplan.planner.cluster.submit import start_submitter, submissions
    from wattplan.planner.contracts.rules import RoundRules

    jobs, layout = submissions(cluster_dir, trace, fmt.value, vc, start_s, end_s, max_jobs, seed, RoundRules())
    pid = start_submitter(layout, jobs, managed=not unmanaged)
    kind = "unmanaged" if unmanaged else "managed (held, for wattplan agent)"
    out.print(f"submitting {len(jobs)} {kind} jobs over {jobs[-1].offset_s:.0f} emulated s (submitter pid {pid})")
    if wait:
        while not (layout.submit_dir / "done").exists():
            time.sleep(0.5)


@cluster_app.command("report")
@handles_errors
def cluster_report(
    cluster_dir: ClusterDirOpt,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON here.")] = None,
) -> None:
    """Energy (from Prometheus), JCTs and per-job times of the jobs submitted to the emulated cluster."""
    import json as json_module

    from wattplan.planner.cluster.layout import ClusterLayout
    from wattplan.planner.cluster.report import cluster_report as report_of
    from wattplan.planner.contracts.jsonio import write_text_atomic

    layout = ClusterLayout(cluster_dir)
    report = report_of(layout, layout.read_manifest()["prometheus_url"])
    for w in report.get("warnings", []):
        err.print(f"[yellow]warning:[/] {shown(w)}")
    if json_path is not None:
        write_text_atomic(json_path, json_module.dumps(report, indent=1) + "\n")
    keys = ("energy_kwh", "avg_jct_s", "p95_jct_s", "jobs_total", "jobs_completed")
    out.print("  ".join(f"{k}={report.get(k)}" for k in keys))


def main() -> None:
    """Console-script entry point."""
    import sys

    COMMAND_LINE[:] = sys.argv[1:]
    app()


if __name__ == "__main__":
    main()
