"""The benchmark's files: ``runs.csv``, ``runs.jsonl``, ``summary.csv``, ``report.md``, ``profile.png``.

Every file is rebuilt from the saved runs (:mod:`planner.bench.runner`) and written atomically.
A run's row (:data:`RUN_COLUMNS`, then the manifest's own columns) joins the task (instance
name, job count, objective sense, manifest columns) with the run's record and the references
of :func:`planner.bench.summary.with_references`: ``gap`` is ``gamma(objective, bound)`` of
the run alone, ``gap_ref`` to the best bound known for the instance over the runs that are not
wrong; ``wrong`` is why the wrong-result check flags the run (empty when it does not,
:func:`planner.bench.summary.wrong_reasons`), ``objective`` the plan's value recomputed from the
instance, ``claimed_objective`` the planner's and ``valid`` the independent re-check
(:mod:`planner.bench.check`). ``report.md`` lists the wrong runs.
``runs.jsonl`` holds everything, the incumbent timeline and the plan's ``round`` included.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.bench.incumbents import maximizes
from planner.bench.runner import BenchConfig, BenchTask, Record
from planner.bench.summary import (
    SUMMARY_COLUMNS,
    gap_curve,
    performance_ratios,
    profile_steps,
    relative_gap,
    solver_summary,
    with_references,
)
from planner.contracts.jsonio import write_text_atomic

RUN_COLUMNS = (
    "instance",
    "solver",
    "seed",
    "status",
    "wrong",
    "objective",
    "claimed_objective",
    "bound",
    "lp_bound",
    "valid",
    "gap",
    "gap_ref",
    "time_s",
    "build_s",
    "solve_s",
    "wall_s",
    "peak_mb",
    "primal_integral",
    "nodes",
    "lp_iterations",
    "branches",
    "conflicts",
    "jobs",
    "columns",
    "rows",
    "plan_solver",
    "objective_name",
    "sense",
    "time_limit_s",
    "rel_gap",
    "threads",
    "instance_sha256",
    "message",
)
"""Columns of ``runs.csv`` (the manifest's columns follow, prefixed ``manifest_`` where a name is taken)."""
FILES = ("runs.csv", "runs.jsonl", "summary.csv", "report.md", "profile.png")


@dataclass(frozen=True)
class BenchReport:
    """What the tables hold: every run's row, the per-solver summary, and the files written."""

    rows: list[Record]
    summary: list[Record]
    paths: list[Path]


def _extra_name(column: str) -> str:
    return f"manifest_{column}" if column in RUN_COLUMNS else column


def run_rows(tasks: Sequence[BenchTask], records: Sequence[Record | None]) -> list[Record]:
    """One row per task with a record: task fields, the record, ``gap``, then ``gap_ref`` and ``primal_integral``."""
    rows = []
    for task, record in zip(tasks, records, strict=True):
        if record is None:
            continue
        entry = task.entry
        sense = None if entry.objective is None else ("max" if maximizes(entry.objective) else "min")
        row = {
            "instance": entry.name,
            "jobs": entry.jobs,
            "objective_name": entry.objective,
            "sense": sense,
            **record,
            "gap": relative_gap(record.get("objective"), record.get("bound")),
        }
        row.update({_extra_name(c): v for c, v in entry.extra.items()})
        rows.append(row)
    return with_references(rows)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def csv_text(rows: Sequence[Record], columns: Sequence[str]) -> str:
    """``rows`` as CSV with ``columns`` (missing values empty, floats as their shortest exact repr)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def run_columns(tasks: Sequence[BenchTask]) -> list[str]:
    """:data:`RUN_COLUMNS` then every manifest column, in manifest order."""
    columns = list(RUN_COLUMNS)
    for task in tasks:
        for c in task.entry.extra:
            name = _extra_name(c)
            if name not in columns:
                columns.append(name)
    return columns


def write_runs(out: Path, tasks: Sequence[BenchTask], records: Sequence[Record | None]) -> list[Record]:
    """Write ``runs.csv`` and ``runs.jsonl`` in ``out`` from the records so far; return the rows."""
    rows = run_rows(tasks, records)
    write_text_atomic(out / "runs.csv", csv_text(rows, run_columns(tasks)))
    write_text_atomic(out / "runs.jsonl", "".join(json.dumps(r, allow_nan=False) + "\n" for r in rows))
    return rows


def _commit() -> str:
    """The checkout's commit (``+dirty`` with local changes), or ``unknown`` outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _fmt(value: Any, spec: str = ".4g") -> str:
    if value is None:
        return "-"
    return format(value, spec) if isinstance(value, float) else str(value)


def markdown_table(summary: Sequence[Record]) -> str:
    """The per-solver summary as a Markdown table (:data:`SUMMARY_COLUMNS`)."""
    lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|" + "---|" * len(SUMMARY_COLUMNS)]
    for s in summary:
        lines.append("| " + " | ".join(_fmt(s.get(c)) for c in SUMMARY_COLUMNS) + " |")
    return "\n".join(lines)


def command_line(config: BenchConfig) -> str:
    """The ``wattplan bench`` command that asks for ``config``, every option spelled out."""
    args = ["wattplan", "bench", str(config.instances), "--solvers", ",".join(config.solvers)]
    args += ["--time-limit", f"{config.time_limit_s:g}", "--seeds", str(config.seeds), "--gap", f"{config.rel_gap:g}"]
    args += ["--threads", str(config.threads), "--grace", f"{config.grace:g}"]
    if config.workers is not None:
        args += ["--workers", str(config.workers)]
    if config.memory_limit_mb is not None:
        args += ["--memory-limit-mb", str(config.memory_limit_mb)]
    if config.ray_address is not None:
        args += ["--ray", config.ray_address]
    return shlex.join([*args, "--out", str(config.out)])


def _cell_text(value: Any) -> str:
    """A value for a Markdown table cell: ``|`` escaped, one line."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def wrong_section(rows: Sequence[Record]) -> str:
    """The ``Wrong results`` list of ``report.md``: solver, instance, seed and reason of each wrong run, or none."""
    wrong = [r for r in rows if r.get("wrong")]
    if not wrong:
        return "none"
    lines = ["| solver | instance | seed | reason |", "|---|---|---|---|"]
    for r in wrong:
        cells = (r["solver"], r["instance"], r["seed"], r["wrong"])
        lines.append("| " + " | ".join(_cell_text(c) for c in cells) + " |")
    return "\n".join(lines)


def report_markdown(config: BenchConfig, summary: Sequence[Record], rows: Sequence[Record], command: str) -> str:
    """``report.md``: the command, the machine, the settings, the summary table and the profile figure."""
    runs, instances = len(rows), len({r["instance"] for r in rows})
    where = f"Ray at `{config.ray_address}`" if config.ray_address else f"{config.workers or 1} local worker(s)"
    memory = "none" if config.memory_limit_mb is None else f"{config.memory_limit_mb} MiB"
    return f"""# wattplan bench

Command: `{command}`

Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; commit {_commit()}.

Settings: {runs} runs ({instances} instance(s) x {len(config.solvers)} solver(s) x {config.seeds} seed(s)),
time limit {config.time_limit_s:g} s (killed after {config.time_limit_s + config.grace:g} s), gap {config.rel_gap:g},
{config.threads} thread(s) per run, memory limit {memory}, {where}.

{markdown_table(summary)}

![performance profile](profile.png)

`solved`: not wrong, and status optimal or within the gap of the best bound known for the instance over
the runs that are not wrong (`gap_ref`). `wrong`: runs the wrong-result check flags (below).
`sgm_time_s`: shifted geometric mean (shift 1 s) of the planning time, unsolved runs at the limit.
`mean_gap_ref`: failures count 1. `mean_primal_integral`: Berthold's primal integral over the limit,
to the best objective known (incumbent times approximated from the solve report, see
`planner/bench/incumbents.py`). Failure columns count runs: `timeout` answered past the limit, `hang` killed
at the deadline, `crash`, `oom` out of memory, `error` reported by the worker. Every run: `runs.csv`,
`runs.jsonl`.

## Wrong results

A run is wrong when its plan fails the independent re-check (validator and evaluator, no solver), misses its
own progress target (energy, efficiency) or reports a value other than its evaluated one; when a valid plan of
any run beats its bound by more than 1e-6 relative; or when it says optimal and a valid plan is better by more
than its gap (`wrong_reasons` in `planner/bench/summary.py`). A wrong run is not solved and its bound is not
the reference.

{wrong_section(rows)}
"""


def summary_table(summary: Sequence[Record]) -> Any:
    """The per-solver summary as a rich table, for the terminal."""
    from rich.table import Table

    from planner.console.terminal import shown

    table = Table(title="Benchmark")
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column == "solver" else "right")
    for s in summary:
        table.add_row(*(shown(_fmt(s.get(c))) for c in SUMMARY_COLUMNS))
    return table


def _save_png(fig: Any, path: Path) -> None:
    """Save ``fig`` atomically: a temporary PNG beside ``path``, renamed over it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
        plt.close(fig)


GAP_FLOOR = 1e-6
"""The gap profile's left edge: gaps below it (zero included) are drawn there."""
LINE_STYLES = ("-", "--", "-.", ":")
"""Solvers that draw the same line (all solved everything) stay visible by their dashes."""


def profile_plot(rows: Sequence[Record], path: Path, title: str = "") -> None:
    """Two panels to ``path`` (PNG): the Dolan-More time profile (log2 tau) and the share of runs within each gap.

    Left: ``rho_s(tau)``, the share of problems (instance x seed) that solver ``s`` solved within
    ``tau`` times the fastest solver's time. Right: the share of a solver's runs with
    ``gap_ref <= g`` against ``g`` (log axis, failures at 1).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = performance_ratios(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    top = max((r for by in ratios.values() for r in by.values() if r != float("inf")), default=1.0)
    right_edge = max(2.0, top * 1.25)
    for k, (solver, by) in enumerate(ratios.items()):
        steps = profile_steps(by)
        xs = [1.0] + [t for t, _ in steps] + [right_edge]
        ys = [0.0] + [f for _, f in steps] + [steps[-1][1] if steps else 0.0]
        left.step(xs, ys, where="post", label=solver, linewidth=1.4, linestyle=LINE_STYLES[k % len(LINE_STYLES)])
    left.set_xscale("log", base=2)
    left.set_xlim(1.0, right_edge)
    left.set_ylim(-0.02, 1.02)
    left.set_xlabel("tau (time / fastest solver's time, log2)")
    left.set_ylabel("share of problems solved within tau")
    left.set_title(title or "Performance profile (time)")
    for k, (solver, gaps) in enumerate(gap_curve(rows).items()):
        n = len(gaps)
        xs = [GAP_FLOOR] + [max(g, GAP_FLOOR) for g in gaps] + [1.0]
        ys = [0.0] + [(i + 1) / n for i in range(n)] + [1.0]
        style = LINE_STYLES[k % len(LINE_STYLES)]
        right.step(xs, ys, where="post", label=solver, linewidth=1.4, linestyle=style)
    right.set_xscale("log")
    right.set_xlim(GAP_FLOOR, 1.0)
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel("gap to the best bound known (log; failures at 1)")
    right.set_ylabel("share of runs within the gap")
    right.set_title("Gap profile")
    for ax in (left, right):
        ax.grid(alpha=0.3, which="major")
        ax.legend(fontsize=8, loc="lower right")
    _save_png(fig, path)


def write_report(
    config: BenchConfig, tasks: Sequence[BenchTask], records: Sequence[Record | None], command: str | None = None
) -> BenchReport:
    """Write every file of :data:`FILES` in ``config.out`` from the records; return the rows and the summary."""
    out = Path(config.out)
    rows = write_runs(out, tasks, records)
    summary = solver_summary(rows)
    command = command or command_line(config)
    write_text_atomic(out / "summary.csv", csv_text(summary, SUMMARY_COLUMNS))
    write_text_atomic(out / "report.md", report_markdown(config, summary, rows, command))
    profile_plot(rows, out / "profile.png")
    return BenchReport(rows, summary, [out / name for name in FILES])


__all__ = [
    "FILES",
    "RUN_COLUMNS",
    "BenchReport",
    "csv_text",
    "profile_plot",
    "run_rows",
    "summary_table",
    "write_report",
    "write_runs",
]
