"""Rich renderings of plans and problems for the terminal (no math here)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, Protocol

from rich import box
from rich.console import JustifyMethod, RenderableType
from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.problems import Problem
from wattplan.planner.contracts.solve_report import StageRecord


def folded(renderable: RenderableType) -> RenderableType:
    """A table with every column folding long cells onto more lines (never cut with an ellipsis); else as is."""
    if isinstance(renderable, Table):
        for column in renderable.columns:
            column.overflow = "fold"
            column.no_wrap = False
    return renderable


def problems_table(problems: Sequence[Problem], title: str | None = None) -> Table:
    """A table of ``problems``, one row each: path, message and code; ``title`` is plain text (printed literally).

    A title is wrapped to the table's width (which may cut a file name in two): where the title names a file,
    print it as its own line with :func:`problems_heading` and give no title here.
    """
    table = Table(title=None if title is None else shown(title), title_justify="left", show_lines=False)
    table.add_column("path", style="bold", overflow="fold")
    table.add_column("problem", overflow="fold")
    table.add_column("code", style="dim", overflow="fold")
    for p in problems:
        table.add_row(shown(p.path), shown(p.message), shown(p.code))
    return table


def problems_heading(title: str, source: str, count: int) -> str:
    """``TITLE: SOURCE (N problem(s))`` as console markup: the source (a file, an option) printed literally."""
    return f"[bold red]{shown(title)}:[/] {shown(source)} ({count} problem(s))"


def _share_used(energy_j: float, budget_j: float) -> str:
    """``"42.0% used"``; a budget of 0 J (nothing may run) gives ``"0 J used"``, not a division by zero."""
    return f"{energy_j / budget_j:.1%} used" if budget_j > 0 else f"{energy_j:g} J used"


def _fmt(x: float | None, spec: str = ".4g") -> str:
    return "-" if x is None else format(x, spec)


class WaitingRow(Protocol):
    """What the waiting table shows of a job the plan leaves waiting (``planner.core.waiting.WaitingReason``)."""

    @property
    def job_id(self) -> str:
        """The job's id."""
        ...

    @property
    def job_type(self) -> str:
        """The job's type."""
        ...

    @property
    def requested_gpus(self) -> int | None:
        """The GPUs the user asked for (None: not given)."""
        ...

    @property
    def allowed_gpus(self) -> tuple[int, ...]:
        """The counts the planner may give."""
        ...

    @property
    def code(self) -> str:
        """The reason code."""
        ...

    @property
    def message(self) -> str:
        """The reason as a sentence."""
        ...


def job_kw(job: PlannedJob) -> float:
    """A running job's draw while it computes: ``n * P / 1000`` (kW; ``P`` its profiled power per GPU, W)."""
    return (job.gpus or 0) * job.power_w / 1e3


def average_kw(energy_j: float, duration_s: float) -> float:
    """Energy over a round as an average power: ``E / T / 1000`` (kW); 0 for a round of no length."""
    return energy_j / duration_s / 1e3 if duration_s > 0 else 0.0


def _requested(instance: Instance | None, job_id: str) -> int | None:
    """The job's ``requested_gpus`` in the instance (None: not given, or no instance)."""
    if instance is None or not instance.has_job(job_id):
        return None
    return instance.job(job_id).requested_gpus


def _job_type(instance: Instance | None, job_id: str) -> str | None:
    return instance.job(job_id).type if instance is not None and instance.has_job(job_id) else None


def running_rows(plan: Plan, instance: Instance | None = None) -> list[dict[str, Any]]:
    """One row per running job, numbers as numbers: the ``running`` section of ``plan --format json|csv``."""
    rows = []
    for j in plan.running():
        rows.append(
            {
                "job": j.job_id,
                "type": _job_type(instance, j.job_id),
                "requested_gpus": _requested(instance, j.job_id),
                "gpus": j.gpus,
                "gpu_type": j.gpu_type,
                "setting": j.setting,
                "setting_unit": j.setting_unit,
                "partner": j.shares_with,
                "steps_per_s": j.steps_per_s,
                "power_w_per_gpu": j.power_w,
                "power_kw": job_kw(j),
                "energy_j": j.energy_j,
                "placement": [f"{p.node}:{','.join(map(str, p.gpu_indices))}" for p in j.placement],
            }
        )
    return rows


def waiting_rows(waiting: Sequence[WaitingRow]) -> list[dict[str, Any]]:
    """One row per waiting job: the ``waiting`` section of ``plan --format json|csv``."""
    return [
        {
            "job": w.job_id,
            "type": w.job_type,
            "requested_gpus": w.requested_gpus,
            "allowed_gpus": list(w.allowed_gpus),
            "reason": w.code,
            "detail": w.message,
        }
        for w in waiting
    ]


def _gpus_given(requested: int | None, gpus: int | None, gpu_type: str | None) -> str:
    """``2 v100`` when given what was asked (or nothing was asked), else ``4 -> 2 v100`` (asked 4, given 2)."""
    given = f"{gpus} {gpu_type}"
    return given if requested is None or requested == gpus else f"{requested} -> {given}"


def _longest_word(column: str, rows: Sequence[dict[str, Any]]) -> int | None:
    """A column's least width, so that no word breaks: ``type``'s longest word, ``placement``'s heading.

    None (rich decides) for the other columns.
    """
    if column == "placement":
        return len(column)
    if column != "type":
        return None
    return max((len(word) for row in rows for word in str(row["type"] or "").split()), default=None)


def solver_name(solver: str) -> str:
    """A solver as a table names it: a ``cmd:`` solver by its program (``cmd:mysolver``), not its command line.

    The whole command line stays in the plan file (``round.solver``) and in ``--format json``.
    """
    if not solver.startswith("cmd:"):
        return solver
    try:
        words = shlex.split(solver[len("cmd:") :])
    except ValueError:
        words = solver[len("cmd:") :].split()
    return f"cmd:{PurePath(words[0]).name} (command in the plan file)" if words else solver


def plan_table(plan: Plan, instance: Instance | None = None, max_rows: int = 60) -> Table:
    """The plan's running jobs, at most ``max_rows`` rows, laid out to read at 80 columns.

    Columns: job, type, GPUs (``requested -> given`` where they differ), setting, partner, draw kW (``n * P``, the
    GPUs' whole draw while the job runs), kJ above idle (``n * (P - P_idle) * steps / rate``, the dynamic energy the
    round's budget counts beside its idle and node energy), placement; the caption says so. Type and requested
    count come from ``instance`` (blank without one). Throughput and W per GPU are in ``--format json|csv``
    (:func:`running_rows`).
    """
    running = plan.running()
    table = Table(
        title=f"round {plan.round.index}: {len(running)} running, {len(plan.jobs) - len(running)} waiting",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        caption="draw kW: the job's GPUs while it runs (n x P); kJ>idle: its energy above idle power this round, "
        "which the summary's energy adds to idle and node energy",
        caption_justify="left",
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("job", "left"),
        ("type", "left"),
        ("GPUs", "right"),
        ("setting", "right"),
        ("partner", "left"),
        ("draw\nkW", "right"),
        ("kJ\n>idle", "right"),
        ("placement", "left"),
    )
    rows = running_rows(plan, instance)[:max_rows]
    for col, justify in columns:
        short = col in ("GPUs", "setting", "draw\nkW", "kJ\n>idle")
        table.add_column(col, justify=justify, overflow="fold", no_wrap=short, min_width=_longest_word(col, rows))
    for j, row in zip(running[:max_rows], rows, strict=False):
        unit = "W" if j.setting_unit == "power_limit_w" else "MHz"
        table.add_row(
            shown(j.job_id),
            shown(row["type"] or ""),
            shown(_gpus_given(row["requested_gpus"], j.gpus, j.gpu_type)),
            f"{j.setting} {unit}",
            shown(j.shares_with or ""),
            f"{row['power_kw']:.2f}",
            f"{j.energy_j / 1e3:.1f}",
            shown(" ".join(row["placement"])),
        )
    if len(running) > max_rows:
        table.add_row(f"+{len(running) - max_rows}", "more (all: --format json)", *[""] * (len(columns) - 2))
    if running:
        total_kw = sum(job_kw(j) for j in running)
        table.add_row("total", *[""] * 4, f"{total_kw:.2f}", f"{sum(j.energy_j for j in running) / 1e3:.1f}", "")
    return table


def waiting_table(waiting: Sequence[WaitingRow], max_rows: int = 60) -> Table:
    """The plan's waiting jobs, at most ``max_rows`` rows: job, type, requested GPUs, reason (code and sentence).

    Requested GPUs is the instance's ``requested_gpus``, or the allowed counts (``1|2|4``) when not given.
    """
    table = Table(title=f"waiting: {len(waiting)}", title_justify="left")
    for col in ("job", "type", "requested", "reason"):
        table.add_column(col, overflow="fold", justify="right" if col == "requested" else "left")
    for w in waiting[:max_rows]:
        requested = str(w.requested_gpus) if w.requested_gpus is not None else "|".join(map(str, w.allowed_gpus))
        table.add_row(shown(w.job_id), shown(w.job_type), requested, f"[bold]{shown(w.code)}[/]: {shown(w.message)}")
    if len(waiting) > max_rows:
        table.add_row(f"... {len(waiting) - max_rows} more", "", "", "")
    return table


def _stage_summary(stage: StageRecord) -> str:
    """``name: status, gap G`` with the gap to the stage's own bound, or ``no bound of its own``."""
    if stage.status == "skipped":
        return f"{stage.stage}: skipped"
    if stage.objective is None or stage.bound is None:
        return f"{stage.stage}: {stage.status} (the solver's word, no bound of its own)"
    gap = abs(stage.bound - stage.objective) / max(abs(stage.objective), 1e-9)
    return f"{stage.stage}: {stage.status}, gap {gap:.3%}"


def summary_record(plan: Plan, waiting: Sequence[WaitingRow] = ()) -> dict[str, Any]:
    """The round's summary as one record, numbers as numbers: the ``summary`` section of ``plan --format json|csv``.

    ``average_kw`` is ``energy_j / duration_s / 1000`` and ``budget_kw`` the budget the same way (kW).
    """
    r = plan.round
    return {
        "round": r.index,
        "duration_s": r.duration_s,
        "energy_j": r.energy_j,
        "budget_j": r.budget_j,
        "average_kw": average_kw(r.energy_j, r.duration_s),
        "budget_kw": None if r.budget_j is None else average_kw(r.budget_j, r.duration_s),
        "progress": r.progress,
        "objective": r.objective,
        "objective_value": r.objective_value,
        "bound": r.bound,
        "gap": r.gap,
        "solver": r.solver,
        "status": r.status,
        "solve_s": r.solve_s,
        "running": len(plan.running()),
        "waiting": sum(j.state == "wait" for j in plan.jobs),
        "gpus_used": dict(sorted(r.gpus_used.items())),
        "nodes_on": dict(sorted(r.nodes_on.items())),
        "waiting_reasons": {code: sum(w.code == code for w in waiting) for code in sorted({w.code for w in waiting})},
    }


def summary_table(plan: Plan) -> Table:
    """The round's summary: energy (MJ) and average power (kW) against the budget, GPUs, nodes, progress, solver.

    The budget is shown in MJ and as an average power over the round, ``B / T / 1000`` (kW).
    """
    r = plan.round
    table = Table(show_header=False, title="summary", title_justify="left")
    table.add_column(style="bold", overflow="fold")
    table.add_column(overflow="fold")
    budget = "none" if r.budget_j is None else f"{r.budget_j / 1e6:.3f} MJ ({_share_used(r.energy_j, r.budget_j)})"
    table.add_row("energy", f"{r.energy_j / 1e6:.3f} MJ of budget {budget}")
    power = f"{average_kw(r.energy_j, r.duration_s):.2f} kW average over the round of {r.duration_s:g} s"
    if r.budget_j is not None:
        power += f"; budget {average_kw(r.budget_j, r.duration_s):.2f} kW"
    table.add_row("power", power)
    table.add_row("GPUs used", shown(", ".join(f"{g}: {n}" for g, n in sorted(r.gpus_used.items())) or "none"))
    table.add_row("nodes on", shown(", ".join(f"{g}: {n}" for g, n in sorted(r.nodes_on.items())) or "none"))
    table.add_row("progress", f"{r.progress:.4f} (sum over jobs of weight x share of its remaining work done)")
    table.add_row(
        "objective",
        f"{r.objective} = {_fmt(r.objective_value)}, bound {_fmt(r.bound)}, gap {_fmt(r.gap, '.2%')}",
    )
    table.add_row("solver", shown(f"{solver_name(r.solver)} ({r.status}) in {r.solve_s:.2f} s"))
    report = r.report
    if report.stages:
        table.add_row("stages", shown("; ".join(_stage_summary(s) for s in report.stages)))
    if report.lp_bound is not None:
        table.add_row("LP bound", f"{report.lp_bound:.6g} (relaxation of the same model, proven from its duals)")
    if report.heuristics:
        parts = [f"{name} {_fmt(h.progress)}" for name, h in report.heuristics.items()]
        start = f"; solver started from {report.start}" if report.start else ""
        table.add_row("heuristic plans", shown("progress " + ", ".join(parts) + start))
    model = report.model
    if model is not None:
        pruned = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in model.pruned.items())
        table.add_row(
            "model",
            f"{model.columns} columns, {model.rows} rows, built in {model.build_s:.2f} s; pruned: {pruned}",
        )
    for key, note in r.notes().items():
        table.add_row(key.replace("_", " "), f"[yellow]{shown(note)}[/]")
    return table
