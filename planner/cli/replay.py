"""``wattplan simulate`` and ``frontier``: a trace replayed on the agent's loop on a simulated Slurm, or swept."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wattplan.planner.cli.app import app, err, handles_errors, output_provenance, print_answer, say
from wattplan.planner.cli.faces import options_of, record_values
from wattplan.planner.cli.options_common import OutputFormatOpt, QuietOpt, TraceArg
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown
from wattplan.planner.sim.options import FrontierOptions, SimulateOptions

if TYPE_CHECKING:
    from wattplan.planner.sim.frontier import FrontierResult

# What only the command line has: the inputs, the output folder, the policies, figures or none, progress shown.
ClusterOpt = Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")]
PolicyOpt = Annotated[
    list[str],
    typer.Option(
        "--policy",
        "-p",
        help="fifo-max, fifo-maxq (fifo-max at MaxQ's setting), zeus, eaco, powerflow, wattplan, all (these six "
        "and Slurm alone), a plug-in's name (entry points of wattplan.policies), or the baselines slurm (Slurm alone, "
        "every node on), slurm-powersave (with Slurm's power saving) and maxq (slurm-powersave, every job at the "
        "lowest power limit keeping 97% of its speed); repeat for several.",
    ),
]
PlotsOpt = Annotated[bool, typer.Option(help="Write the figures (see --plot-format).")]


@app.command()
@handles_errors
@options_of(SimulateOptions)
def simulate(
    trace: TraceArg,
    cluster: ClusterOpt,
    policy: PolicyOpt = ["wattplan"],  # noqa: B006 (typer needs a list default)
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("sim-out"),
    plots: PlotsOpt = True,
    quiet: QuietOpt = False,
    answer_format: OutputFormatOpt = OutputFormat.table,
    **given: Any,
) -> None:
    """Replay a trace with one or more policies; write summary.json, jobs.csv and figures.

    Each policy runs the loop `wattplan agent` runs, on a simulated Slurm: jobs start when they fit, every change
    is a requeue, every node stays on unless --power-save; -p slurm is Slurm alone. A rerun reads back every
    policy that finished (--fresh replays all).
    Without --objective wattplan plans for progress (fastest, not least energy); the energy
    modes are --objective efficiency --max-jct-increase PCT and `wattplan frontier`.
    """
    opts = SimulateOptions.checked(record_values(SimulateOptions, given))
    _simulate_on_slurm(trace, cluster, opts, policy, out_path, answer_format, plots, quiet)


def _simulate_on_slurm(
    trace: Path,
    cluster: str,
    opts: SimulateOptions,
    policy: list[str],
    out_path: Path,
    answer_format: OutputFormat,
    plots: bool,
    quiet: bool,
) -> None:
    """``simulate``'s replays: the agent's loop on a simulated Slurm, each policy with its progress; a table.

    Serial: a bar per policy (a line every 30 s when ``quiet``); in parallel (``--workers``): one bar of the
    policies done. An interruption says that the same command reads back the policies that finished.
    """
    from wattplan.planner.control.session import (
        SlurmHooks,
        comparison_rows,
        comparison_table,
        progress_bar_hook,
        progress_log_hook,
        slurm_replays,
    )
    from wattplan.planner.sim.output import DROPPED_FILE
    from wattplan.planner.sim.render import progress_display

    hooks = SlurmHooks(
        note=lambda text: err.print(shown(text)),
        warn=lambda text: err.print(f"[yellow]warning:[/] {shown(text)}"),
        dropped=lambda text: err.print(f"[yellow]{shown(text)}; ids in {shown(out_path / DROPPED_FILE)}[/]"),
    )
    serial = opts.workers == 1 and opts.ray is None
    with (
        _ResumeNote(lambda: SLURM_INTERRUPTED),
        progress_display(err) if serial else _policies_bar(len(policy), quiet) as bar,
    ):
        if not serial:
            task = bar.add_task("simulate", total=None)
            hooks.start = lambda n: bar.update(task, total=n)
            hooks.policy_done = lambda: bar.advance(task)
        elif quiet:
            hooks.progress = lambda name, _: progress_log_hook(_log_line, name)
        else:
            hooks.progress = lambda name, jobs: progress_bar_hook(bar, name, jobs)
        results = slurm_replays(
            trace, cluster, opts, policy, out_path, hooks, plots=plots, written_by=output_provenance()
        )
    rows = comparison_rows(results)
    print_answer(answer_format, lambda: [comparison_table(rows)], lambda: [Section("replays", rows)])
    say(answer_format, f"results written to [bold]{shown(out_path)}[/]")
    if opts.objective is None and opts.max_jct_increase is None and any(r.policy == "wattplan" for r in results):
        err.print(PROGRESS_MODE_HINT)


SLURM_INTERRUPTED = (
    "interrupted: the same command run again reads back every policy that finished and replays the others from "
    "their start (--fresh replays all)"
)
"""What an interrupted ``simulate`` tells its user."""


PROGRESS_MODE_HINT = (
    "wattplan used --objective progress (the default: fastest, not least energy). "
    "To save energy: --objective efficiency --max-jct-increase 3, or sweep the trade-off "
    "with `wattplan frontier`."
)
"""What ``simulate`` says when wattplan ran without ``--objective``: the mode it used and the energy modes."""


class _ResumeNote:
    """Around a replay: interrupted (Ctrl-C, or SIGINT or SIGTERM ending a pool with 130 or 143), say ``note()``.

    The note says what the same command run again does (:data:`SLURM_INTERRUPTED`); the interruption then goes on as
    it was (exit 130 or 143).
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
@options_of(FrontierOptions)
def frontier(
    trace: TraceArg,
    cluster: ClusterOpt,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder (a rerun resumes).")] = Path(
        "frontier-out"
    ),
    plots: PlotsOpt = True,
    quiet: QuietOpt = False,
    answer_format: OutputFormatOpt = OutputFormat.table,
    **given: Any,
) -> None:
    """Sweep wattplan's energy knob on one trace in parallel; plot the energy-JCT front beside every baseline.

    Writes runs/<label>/ per replay, frontier.csv, frontier.json and frontier.png (or .pdf, .svg:
    energy against average JCT, baselines as markers, the workload's energy floor as a line, the
    reference ringed). Every simulate option applies to every point but --policy
    (--baselines), --delta (--deltas) and --max-jct-increase (a list here). Each point is the agent's loop on a
    simulated Slurm, as simulate replays it, against Slurm alone and the powered floor. Finished replays
    are reused when the sweep is run again with the same settings and the same input files (by
    SHA-256); saved replays of other settings or inputs are stale: replayed, and counted.
    """
    from wattplan.planner.console.bars import count_bar
    from wattplan.planner.control.frontier import frontier_table, run_slurm_frontier, slurm_frontier_sweep

    opts = FrontierOptions.checked(record_values(FrontierOptions, given))
    sweep = slurm_frontier_sweep(trace, cluster, opts)
    total = sweep.total
    with count_bar("[bold]frontier", "replays", err, quiet=quiet) as bar:
        task = bar.add_task("frontier", total=total)
        result = run_slurm_frontier(
            sweep,
            out_path,
            workers=opts.workers,
            ray=opts.ray,
            figures=opts.figures() if plots else None,
            point_done=lambda: bar.advance(task),
        )
    print_answer(answer_format, lambda: [frontier_table(result.rows)], lambda: [Section("frontier", result.rows)])
    _report_frontier(result, total, out_path, answer_format)


def _report_frontier(result: FrontierResult, total: int, out_path: Path, answer_format: OutputFormat) -> None:
    """What ``frontier`` says beside its table: dropped job types, stale and failed replays, where the files are."""
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
