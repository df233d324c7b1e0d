"""``wattplan bench``: solvers benchmarked on a set of instances; its options are :class:`BenchOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wattplan.planner.bench.options import BenchOptions
from wattplan.planner.cli.app import app, err, handles_errors, out, print_answer
from wattplan.planner.cli.faces import options_of, record_values
from wattplan.planner.cli.options_common import OutputFormatOpt, QuietOpt
from wattplan.planner.console.formats import OutputFormat, Section
from wattplan.planner.console.terminal import shown

if TYPE_CHECKING:
    from wattplan.planner.bench.session import BenchOutcome, BenchSession


@app.command()
@handles_errors
@options_of(BenchOptions)
def bench(
    instances: Annotated[
        Path,
        typer.Argument(
            metavar="SET", help="A folder of instances (its manifest.csv, else every *.json) or one instance file."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output folder (a rerun resumes).")] = Path("bench-out"),
    quiet: QuietOpt = False,
    fmt: OutputFormatOpt = OutputFormat.table,
    **given: Any,
) -> None:
    """Benchmark solvers: every instance x solver x seed in a fresh process; MIPLIB-style summary and profiles.

    Writes runs/<run>.json per finished run (a rerun skips them), runs.csv and runs.jsonl (every run),
    summary.csv and report.md (per solver: solved, wrong, shifted geometric mean time, mean gap, primal
    integral, failures; the wrong results listed) and profile.png (performance profile). A crash, hang or
    out-of-memory run is a result; so is a wrong one (a plan that fails the re-check, a bound a valid plan
    beats, an optimal claim a valid plan beats by more than the gap).
    """
    from wattplan.planner.bench.session import bench_config

    options = BenchOptions.checked(record_values(BenchOptions, given))
    session = bench_config(instances, out=out_path, options=options)
    outcome, failed = _run_with_bar(session, quiet)
    _print_outcome(outcome, failed, out_path, fmt)


def _run_with_bar(session: BenchSession, quiet: bool) -> tuple[BenchOutcome, int]:
    """Run ``session`` with a progress bar on stderr (none when ``quiet``); the outcome and how many runs failed."""
    from wattplan.planner.bench.session import run_bench_session
    from wattplan.planner.bench.summary import FAILURES
    from wattplan.planner.console.bars import count_bar

    failed = 0
    with count_bar("[bold]bench", "runs", err, quiet=quiet, extra=("{task.fields[failed]} failed",)) as bar:
        task = bar.add_task("bench", total=len(session.tasks), failed=0)

        def advance(record: dict[str, Any]) -> None:
            nonlocal failed
            failed += record.get("status") in FAILURES
            bar.update(task, advance=1, failed=failed)

        outcome = run_bench_session(session, advance)
    return outcome, failed


def _print_outcome(outcome: BenchOutcome, failed: int, out_path: Path, fmt: OutputFormat) -> None:
    """The per-solver table, then what failed, was wrong or stale, and where the results are."""
    from wattplan.planner.bench.report import summary_table

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
