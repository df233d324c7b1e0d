"""One ``bench`` run without a command line: typed options to a checked config, the runs, the report files.

``wattplan bench`` and :func:`wattplan.bench` both call :func:`bench_config` (every option as a keyword of the same
name and default: ``time_limit`` s per run, ``gap`` relative, ``memory_limit_mb`` MiB, ``grace`` s) and
:func:`run_bench_session` (:func:`planner.bench.runner.run_bench`, then :func:`planner.bench.report.write_report`).
Neither prints; ``run_done(record)`` hears each run as it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.bench.report import BenchReport, write_report
from wattplan.planner.bench.runner import BenchConfig, BenchTask, SweepResult, prepare_runs, run_bench
from wattplan.planner.contracts.defaults import FIGURE_DPI
from wattplan.planner.contracts.figures import figure_option_problems
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import DEFAULT_REQUEST

DEFAULT_SOLVERS = "cbc,highs,cpsat,greedy"
"""The solvers a bench compares unless told (``--solvers``)."""


@dataclass(frozen=True)
class BenchSession:
    """A checked bench: its config, its tasks (instance x solver x seed) and the figure format of its report."""

    config: BenchConfig
    tasks: list[BenchTask]
    plot_format: str = "png"
    dpi: int = FIGURE_DPI


@dataclass
class BenchOutcome:
    """A finished bench: the sweep (records, how many ran and were reused, stale saved runs) and the report."""

    sweep: SweepResult
    report: BenchReport


def bench_config(
    instances: str | Path,
    *,
    out: str | Path,
    solvers: str | Sequence[str] = DEFAULT_SOLVERS,
    time_limit: float = 10.0,
    seeds: int = 1,
    workers: int | None = None,
    ray: str | None = None,
    gap: float = DEFAULT_REQUEST.rel_gap,
    threads: int = 1,
    memory_limit_mb: int | None = None,
    grace: float | None = None,
    node_limit: int | None = None,
    plot_format: str = "png",
    dpi: int = FIGURE_DPI,
) -> BenchSession:
    """The bench of ``wattplan bench``: each keyword is its option; ``solvers`` a sequence or a comma-separated string.

    Checked before any run: the figure options, an ``out`` that names a file of the set, then every option and the
    set (:func:`planner.bench.runner.prepare_runs`); each problem an :class:`InputError` naming the option.
    """
    from wattplan.planner.console.solver_list import split_solvers
    from wattplan.planner.files.paths import inside, refuse_overwriting_inputs, same_path

    if problems := figure_option_problems(plot_format, dpi):
        raise InputError("figures", problems)
    folder, out_path = Path(instances), Path(out)
    # every file of the set is an input: --out naming its manifest.csv failed with 'File exists' (exit 1)
    # an input inside --out is refused as well (a bench writes and replaces files there); an earlier bench's own
    # outputs, in an --out inside the set's folder, are not inputs
    found = folder.rglob("*") if folder.is_dir() else []
    files = [p for p in found if not (same_path(p, out_path) or inside(p, out_path))]
    refuse_overwriting_inputs({"--out": out_path}, [folder, *files], folders={"--out"})
    text = solvers if isinstance(solvers, str) else ",".join(solvers)
    config = BenchConfig(
        instances=folder,
        solvers=tuple(split_solvers(text, "--solvers")),
        time_limit_s=time_limit,
        seeds=seeds,
        out=out_path,
        rel_gap=gap,
        threads=threads,
        workers=workers,
        ray_address=ray,
        memory_limit_mb=memory_limit_mb,
        grace_s=grace,
        node_limit=node_limit,
    )
    return BenchSession(config, prepare_runs(config), plot_format, dpi)


def run_bench_session(session: BenchSession, run_done: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run every task of ``session`` not saved yet, then write the report files to its ``out``."""
    sweep = run_bench(session.config, session.tasks, run_done)
    report = write_report(session.config, sweep.tasks, sweep.records, plot_format=session.plot_format, dpi=session.dpi)
    return BenchOutcome(sweep, report)
