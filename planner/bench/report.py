"""The benchmark's files: ``runs.csv``, ``runs.jsonl``, ``summary.csv``, ``per_instance.csv``, ``report.md``, a PNG.

Every file is rebuilt from the saved runs (:mod:`planner.bench.runner`) and written atomically.
A run's row (:data:`RUN_COLUMNS`, then the manifest's own columns) joins the task (instance
name, job count, objective sense, manifest columns) with the run's record and the references
of :func:`planner.bench.summary.with_references`: ``gap`` is ``gamma(objective, bound)`` of
the run alone, ``gap_ref`` to the best bound known for the instance over the runs that are not
wrong; ``wrong`` is why the wrong-result check flags the run (empty when it does not,
:func:`planner.bench.summary.wrong_reasons`), ``objective`` the plan's value recomputed from the
instance, ``claimed_objective`` the planner's and ``valid`` the independent re-check
(:mod:`planner.bench.check`); ``nodes``, ``lp_iterations``, ``branches`` and ``conflicts`` the search
effort where the solver tells it (blank where not). ``report.md`` lists the wrong runs.
``per_instance.csv`` is Mittelmann's view (:func:`planner.bench.comparison.per_instance_frame`).
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

from wattplan.planner.bench.comparison import (
    EFFORT_COLUMNS,
    HEURISTIC_COLUMNS,
    VIRTUAL_BEST,
    bench_summary,
    effort_summary,
    heuristic_summary,
    per_instance_frame,
    profile_tau_max,
)
from wattplan.planner.bench.incumbents import maximizes
from wattplan.planner.bench.runner import BenchConfig, BenchTask, Record
from wattplan.planner.bench.summary import (
    SUMMARY_COLUMNS,
    gap_curve,
    is_heuristic,
    performance_ratios,
    profile_fraction,
    profile_steps,
    relative_gap,
    with_references,
)
from wattplan.planner.contracts.defaults import FIGURE_DPI
from wattplan.planner.contracts.jsonio import write_text_atomic

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
    "node_limit",
    "instance_sha256",
    "message",
)
"""Columns of ``runs.csv`` (the manifest's columns follow, prefixed ``manifest_`` where a name is taken)."""
FILES = ("runs.csv", "runs.jsonl", "summary.csv", "per_instance.csv", "report.md", "profile.png")


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


def markdown_table(summary: Sequence[Record], columns: Sequence[str] = SUMMARY_COLUMNS) -> str:
    """Rows as a Markdown table of ``columns`` (default the per-solver summary's, :data:`SUMMARY_COLUMNS`)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for s in summary:
        lines.append("| " + " | ".join(_cell_text(_fmt(s.get(c))) for c in columns) + " |")
    return "\n".join(lines)


def _instance_cell(table: Any, i: int, solver: str) -> str:
    """One solver's cell of the per-instance table: time (s), bold when the best; the outcome unless solved."""
    time_s, status = table.at[i, f"{solver}:time_s"], str(table.at[i, f"{solver}:status"])
    if time_s is None or time_s != time_s:  # no run of this solver on the instance
        return "-"
    text = f"{time_s:.3g}"
    if bool(table.at[i, f"{solver}:best"]):
        text = f"**{text}**"
    gap = table.at[i, f"{solver}:gap"]
    if status == "wrong":
        return f"{text} WRONG"
    if status != "solved" and not (is_heuristic(solver) and status == "unsolved"):
        text += f" {status}"
    if (status != "solved" or is_heuristic(solver)) and gap == gap and 0 < gap < 1:
        text += f" (gap {100 * gap:.2g}%)"
    return text


def per_instance_markdown(table: Any) -> str:
    """The per-instance table in Markdown: instances as rows, a cell per solver, then the virtual best."""
    if table.empty:
        return "no runs"
    solvers = [c.removesuffix(":status") for c in table.columns if c.endswith(":status")]
    head = ["instance", *solvers, VIRTUAL_BEST]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i in table.index:
        vb_time, vb_solver = table.at[i, f"{VIRTUAL_BEST}:time_s"], table.at[i, f"{VIRTUAL_BEST}:solver"]
        vb = f"{vb_time:.3g} {vb_solver}" if vb_solver else (f"{vb_time:.3g} none solved" if vb_time else "-")
        cells = [str(table.at[i, "instance"]), *(_instance_cell(table, i, s) for s in solvers), vb]
        lines.append("| " + " | ".join(_cell_text(c) for c in cells) + " |")
    return "\n".join(lines)


def per_instance_csv(table: Any) -> str:
    """The per-instance table as CSV (:func:`planner.bench.comparison.per_instance_frame`'s columns)."""
    records = table.to_dict("records") if not table.empty else []
    clean = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in records]
    return csv_text(clean, [str(c) for c in table.columns] if not table.empty else ["instance"])


def profile_taus(tau_max: float) -> list[float]:
    """The ``tau`` at which report.md tabulates the profile: 1, 2, 4, ... up to the first power of 2 >= ``tau_max``."""
    taus, tau = [1.0], 1.0
    while tau < tau_max:
        tau *= 2
        taus.append(tau)
    return taus


def profile_markdown(rows: Sequence[Record]) -> str:
    """``rho_s(tau)`` of each exact solver at :func:`profile_taus` and at the largest ratio, as a Markdown table."""
    ratios = performance_ratios(rows)
    if not ratios:
        return "no exact solver ran"
    tau_max = profile_tau_max(ratios)
    taus = sorted({*profile_taus(tau_max), tau_max})
    head = ["solver", *(f"tau={t:.3g}" for t in taus)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for solver, by in ratios.items():
        lines.append("| " + " | ".join([solver, *(f"{profile_fraction(by, t):.2f}" for t in taus)]) + " |")
    return "\n".join(lines)


def seeds_sentence(config: BenchConfig) -> str:
    """How report.md states the seeds' interval (:func:`planner.bench.comparison.seed_interval`)."""
    if config.seeds < 2:
        return "One seed per run: no interval over seeds (`sgm_ci_low`, `sgm_ci_high` blank; ask `--seeds K`)."
    return (
        f"`sgm_ci_low`..`sgm_ci_high`: 95% confidence interval of the mean over the {config.seeds} seeds of each\n"
        f"seed's shifted geometric mean time over the instances (Student's t, {config.seeds - 1} degrees of freedom)."
    )


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
    """``report.md``: command, machine, settings, summary, per-instance table, profile, heuristics, effort, wrong."""
    runs, instances = len(rows), len({r["instance"] for r in rows})
    heuristics = heuristic_summary(rows)
    heuristic_text = markdown_table(heuristics, HEURISTIC_COLUMNS) if heuristics else "none ran"
    effort = effort_summary(rows)
    effort_text = markdown_table(effort, EFFORT_COLUMNS) if effort else "no solver reported any"
    where = f"Ray at `{config.ray_address}`" if config.ray_address else f"{config.workers or 1} local worker(s)"
    memory = "none" if config.memory_limit_mb is None else f"{config.memory_limit_mb} MiB"
    return f"""# wattplan bench

Command: `{command}`

Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; commit {_commit()}.

Settings: {runs} runs ({instances} instance(s) x {len(config.solvers)} solver(s) x {config.seeds} seed(s)),
time limit {config.time_limit_s:g} s (killed after {config.time_limit_s + config.grace:g} s), gap {config.rel_gap:g},
{config.threads} thread(s) per run, memory limit {memory}, {where}.

{markdown_table(summary)}

`solved`: not wrong, and status optimal or within the gap of the best bound known for the instance over
the runs that are not wrong (`gap_ref`). `wrong`: runs the wrong-result check flags (below).
`wins`: problems (instance x seed) a solver solved in the virtual best's time. `virtual best`: per problem
the fastest solver that solved it correctly (the limit when none did); its `runs` are problems.
`sgm_time_s`: shifted geometric mean (shift 1 s) of the planning time, unsolved runs at the limit; blank
for a heuristic (greedy: see Heuristics), which is not timed against the solvers.
{seeds_sentence(config)}
`mean_gap_ref`: failures count 1. `mean_primal_integral`: Berthold's primal integral over the limit,
to the best objective known (incumbent times approximated from the solve report, see
`planner/bench/incumbents.py`). Failure columns count runs: `timeout` answered past the limit, `hang` killed
at the deadline, `crash`, `oom` out of memory, `error` reported by the worker. Every run: `runs.csv`,
`runs.jsonl`.

## Per instance

Time (s; over seeds their shifted geometric mean, unsolved runs at the limit), **bold** the fastest solver
that solved every seed; the outcome when not solved: `unsolved` (a plan, not within the gap), `timeout`,
`hang`, `crash`, `oom`, `error`, or `WRONG`; with seeds that differ, `solved i/K`. The gap is to the best
bound known. Objectives, gaps and nodes of every cell: `per_instance.csv`.

{per_instance_markdown(per_instance_frame(rows))}

## Performance profile

![performance profile](profile.png)

Dolan and More: `rho_s(tau)`, the share of problems (instance x seed) a solver solved within `tau` times
the fastest solver's time, up to the largest ratio observed; a problem a solver did not solve counts in
the share's denominator only. Heuristics are left out.

{profile_markdown(rows)}

## Heuristics

Plans without proof, reported on their own: `mean_gap_best`, `max_gap_best` the relative gap to the best
valid plan of any run (`gamma(v, v*)`) over the runs with a valid plan; `within_gap` the runs within the gap
of the best bound known; `sgm_time_s` (shift 1 s) and `max_time_s` their own planning time.

{heuristic_text}

## Search effort

Shifted geometric mean (shift 100) over the runs that report it: branch-and-bound `nodes` and simplex
`lp_iterations` (HiGHS, SCIP, CBC from its log), CP-SAT's `branches` and `conflicts`; blank where a solver
does not tell. Per run: `runs.csv`.

{effort_text}

## Wrong results

A run is wrong when its plan fails the independent re-check (validator and evaluator, no solver), misses its
own progress target (energy, efficiency) or reports a value other than its evaluated one; when a valid plan of
any run beats its bound by more than 1e-6 relative; or when it says optimal and a valid plan is better by more
than its gap (`wrong_reasons` in `planner/bench/summary.py`). A wrong run is not solved and its bound is not
the reference.

{wrong_section(rows)}
"""


TERMINAL_COLUMNS = (
    ("solver", "solver"),
    ("runs", "runs"),
    ("solved", "solved"),
    ("wrong", "wrong"),
    ("wins", "wins"),
    ("sgm_time_s", "sgm s"),
    ("mean_gap_ref", "gap"),
)
"""The summary's columns the terminal shows, with their headings (all of them: ``summary.csv``, ``report.md``)."""


def summary_table(summary: Sequence[Record]) -> Any:
    """The per-solver summary as a rich table, for the terminal (:data:`TERMINAL_COLUMNS`)."""
    from rich.table import Table

    from wattplan.planner.console.terminal import shown

    table = Table(title="Benchmark")
    for column, heading in TERMINAL_COLUMNS:
        table.add_column(heading, justify="left" if column == "solver" else "right")
    for s in summary:
        name = f"{s['solver']} (heuristic)" if s.get("kind") == "heuristic" else str(s["solver"])
        table.add_row(shown(name), *(shown(_fmt(s.get(c), ".3g")) for c, _ in TERMINAL_COLUMNS[1:]))
    return table


def _save_figure(fig: Any, path: Path, dpi: int = FIGURE_DPI) -> None:
    """Save ``fig`` atomically, in the format of ``path``'s suffix (png, pdf, svg): a temporary file renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, format=path.suffix.lstrip("."), dpi=dpi, bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


GAP_FLOOR = 1e-6
"""The gap profile's left edge: gaps below it (zero included) are drawn there."""
LINE_STYLES = ("-", "--", "-.", ":")
"""Solvers that draw the same line (all solved everything) stay visible by their dashes."""


def profile_plot(rows: Sequence[Record], path: Path, title: str = "", dpi: int = FIGURE_DPI) -> None:
    """Two panels to ``path``: the Dolan-More time profile (log2 tau) and the share of runs within each gap.

    The format is ``path``'s suffix (png at ``dpi``, pdf, svg).

    Left: ``rho_s(tau)``, the share of problems (instance x seed) that solver ``s`` solved within
    ``tau`` times the fastest solver's time, ``tau`` up to the largest ratio observed; heuristics left
    out (:func:`planner.bench.summary.performance_ratios`). Right: the share of a solver's runs with
    ``gap_ref <= g`` against ``g`` (log axis, failures at 1).
    """
    from matplotlib.figure import Figure

    ratios = performance_ratios(rows)
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2)
    top = profile_tau_max(ratios)
    right_edge = top * 1.1 if top > 1.0 else 2.0  # up to the largest ratio observed, never clipped
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
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="lower right")
        else:  # no exact solver (left) or no run (right): say so rather than draw an empty legend
            ax.text(0.5, 0.5, "no runs to show", ha="center", va="center", transform=ax.transAxes)
    _save_figure(fig, path, dpi)


def write_report(
    config: BenchConfig,
    tasks: Sequence[BenchTask],
    records: Sequence[Record | None],
    command: str | None = None,
    plot_format: str = "png",
    dpi: int = FIGURE_DPI,
) -> BenchReport:
    """Write every file of :data:`FILES` in ``config.out`` from the records; return the rows and the summary.

    ``profile.png`` (at ``dpi``) is always written, report.md shows it; ``plot_format`` pdf or svg adds
    ``profile.pdf`` or ``profile.svg``.
    """
    out = Path(config.out)
    rows = write_runs(out, tasks, records)
    summary = bench_summary(rows)
    command = command or command_line(config)
    write_text_atomic(out / "summary.csv", csv_text(summary, SUMMARY_COLUMNS))
    write_text_atomic(out / "per_instance.csv", per_instance_csv(per_instance_frame(rows)))
    write_text_atomic(out / "report.md", report_markdown(config, summary, rows, command))
    profile_plot(rows, out / "profile.png", dpi=dpi)
    paths = [out / name for name in FILES]
    if plot_format != "png":
        profile_plot(rows, out / f"profile.{plot_format}", dpi=dpi)
        paths.append(out / f"profile.{plot_format}")
    return BenchReport(rows, summary, paths)


__all__ = [
    "FILES",
    "RUN_COLUMNS",
    "BenchReport",
    "csv_text",
    "per_instance_csv",
    "per_instance_markdown",
    "profile_markdown",
    "profile_plot",
    "run_rows",
    "summary_table",
    "write_report",
    "write_runs",
]
