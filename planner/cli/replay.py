"""``wattplan simulate`` and ``frontier``: a trace replayed round by round, once or as a sweep of the energy knob."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from wattplan.planner.cli.app import app, err, handles_errors, output_provenance, print_answer, say
from wattplan.planner.cli.options_common import (
    BelievedProfilesOpt,
    CarbonOpt,
    ClusterOpt,
    DeltaMaxOpt,
    DpiOpt,
    EndSOpt,
    EnergyBudgetOpt,
    FormatOpt,
    GovernorChoice,
    GovernorOpt,
    GpusPerNodeOpt,
    HorizonOpt,
    LearnOpt,
    MaxJobsOpt,
    MaxRoundsOpt,
    MinPairRateOpt,
    NodeLimitOpt,
    NodePowerOpt,
    NoiseOpt,
    ObjectiveChoice,
    OutputFormatOpt,
    PlotFormatChoice,
    PlotFormatOpt,
    PlotsOpt,
    PowerCapOpt,
    PriceOpt,
    QuietOpt,
    RayOpt,
    ReplanChoice,
    ReplanOpt,
    ReplaySeedOpt,
    ReplaySolverOpt,
    ReplayTimeLimitOpt,
    RestartOpt,
    RoundSOpt,
    SignalAwareOpt,
    SignalStartOpt,
    StartSOpt,
    TailBoundOpt,
    TailPaceChoice,
    TailPaceOpt,
    ThreadsOpt,
    TraceArg,
    TraceFormat,
    TruthOpt,
    VcOpt,
    ZeusEtaOpt,
    _figure_options,
)
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.request import REPLAY_REQUEST


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
