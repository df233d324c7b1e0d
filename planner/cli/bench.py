"""``wattplan bench``: solvers benchmarked on a set of instances."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wattplan.planner import planning
from wattplan.planner.cli.app import app, err, handles_errors, out, print_answer
from wattplan.planner.cli.options_common import DpiOpt, OutputFormatOpt, PlotFormatChoice, QuietOpt, RayOpt
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.request import DEFAULT_REQUEST


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
