"""One ``bench`` run without a command line: the checked options to a config, the runs, the report files.

``wattplan bench`` and :func:`wattplan.bench` both check their options with the one record,
:class:`~planner.bench.options.BenchOptions`, and call :func:`bench_config` with it and :func:`run_bench_session`
(:func:`planner.bench.runner.run_bench`, then :func:`planner.bench.report.write_report`). Neither prints;
``run_done(record)`` hears each run as it ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.bench.options import DEFAULT_SOLVERS, BenchOptions
from wattplan.planner.bench.report import BenchReport, write_report
from wattplan.planner.bench.runner import BenchConfig, BenchTask, SweepResult, prepare_runs, run_bench

__all__ = ["DEFAULT_SOLVERS", "BenchOutcome", "BenchSession", "bench_config", "run_bench_session"]


@dataclass(frozen=True)
class BenchSession:
    """A checked bench: its config, its tasks (instance x solver x seed) and its options (the report's figures)."""

    config: BenchConfig
    tasks: list[BenchTask]
    options: BenchOptions = field(default_factory=BenchOptions)


@dataclass
class BenchOutcome:
    """A finished bench: the sweep (records, how many ran and were reused, stale saved runs) and the report."""

    sweep: SweepResult
    report: BenchReport


def bench_config(
    instances: str | Path, *, out: str | Path, options: BenchOptions | None = None, **values: Any
) -> BenchSession:
    """The bench of ``wattplan bench``: the set ``instances``, the output folder ``out`` and the checked ``options``.

    ``values`` instead of ``options``: the options by name, checked here (:meth:`BenchOptions.checked`). Checked
    before any run: the options, an ``out`` that names a file of the set, then the set and the solvers
    (:func:`planner.bench.runner.prepare_runs`); each problem an :class:`InputError` naming the option.
    """
    if options is not None and values:
        raise TypeError(f"bench_config() takes options or {', '.join(values)}, not both")
    opts = BenchOptions.checked(values) if options is None else options
    folder, out_path = Path(instances), Path(out)
    _refuse_writing_into_the_set(folder, out_path)
    config = _config(folder, out_path, opts)
    return BenchSession(config, prepare_runs(config), opts)


def _refuse_writing_into_the_set(folder: Path, out_path: Path) -> None:
    """:class:`InputError` naming ``--out`` when it is, or holds, a file of the set ``folder``.

    Every file of the set is an input: ``--out`` naming its manifest.csv failed with 'File exists' (exit 1). An input
    inside ``--out`` is refused as well (a bench writes and replaces files there); an earlier bench's own outputs, in
    an ``--out`` inside the set's folder, are not inputs.
    """
    from wattplan.planner.files.paths import inside, refuse_overwriting_inputs, same_path

    found = folder.rglob("*") if folder.is_dir() else []
    files = [p for p in found if not (same_path(p, out_path) or inside(p, out_path))]
    refuse_overwriting_inputs({"--out": out_path}, [folder, *files], folders={"--out"})


def _config(folder: Path, out_path: Path, opts: BenchOptions) -> BenchConfig:
    """The runner's config of the checked options (``--solvers`` split at commas outside quotes)."""
    from wattplan.planner.console.solver_list import split_solvers

    return BenchConfig(
        instances=folder,
        solvers=tuple(split_solvers(opts.solvers, BenchOptions.option("solvers").flag)),
        time_limit_s=opts.time_limit,
        seeds=opts.seeds,
        out=out_path,
        rel_gap=opts.gap,
        threads=opts.threads,
        workers=opts.workers,
        ray_address=opts.ray,
        memory_limit_mb=opts.memory_limit_mb,
        grace_s=opts.grace,
        node_limit=opts.node_limit,
    )


def run_bench_session(session: BenchSession, run_done: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run every task of ``session`` not saved yet, then write the report files to its ``out``."""
    sweep = run_bench(session.config, session.tasks, run_done)
    figures = session.options
    report = write_report(session.config, sweep.tasks, sweep.records, plot_format=figures.plot_format, dpi=figures.dpi)
    return BenchOutcome(sweep, report)
