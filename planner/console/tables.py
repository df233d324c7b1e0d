"""Rich renderings of plans and problems for the terminal (no math here)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import JustifyMethod
from rich.table import Table

from planner.console.terminal import shown
from planner.contracts.plan import Plan
from planner.contracts.problems import Problem
from planner.contracts.solve_report import StageRecord


def problems_table(problems: Sequence[Problem], title: str | None = None) -> Table:
    """A table of ``problems``, one row each: path, message and code; ``title`` is plain text (printed literally).

    A title is wrapped to the table's width (which may cut a file name in two): where the title names a file,
    print it as its own line with :func:`problems_heading` and give no title here.
    """
    table = Table(title=None if title is None else shown(title), title_justify="left", show_lines=False)
    table.add_column("path", style="bold")
    table.add_column("problem")
    table.add_column("code", style="dim")
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


def plan_table(plan: Plan, max_rows: int = 60) -> Table:
    """The plan's running jobs, at most ``max_rows`` rows: GPUs, setting, partner, steps/s, W per GPU, kJ, placement."""
    running = plan.running()
    table = Table(
        title=f"round {plan.round.index}: {len(running)} running, {len(plan.jobs) - len(running)} waiting",
        title_justify="left",
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("job", "left"),
        ("GPUs", "right"),
        ("setting", "right"),
        ("partner", "left"),
        ("steps/s", "right"),
        ("W/GPU", "right"),
        ("energy kJ", "right"),
        ("placement", "left"),
    )
    for col, justify in columns:
        table.add_column(col, justify=justify)
    for j in running[:max_rows]:
        unit = "W" if j.setting_unit == "power_limit_w" else "MHz"
        where = " ".join(f"{p.node}:{','.join(map(str, p.gpu_indices))}" for p in j.placement)
        table.add_row(
            shown(j.job_id),
            shown(f"{j.gpus} {j.gpu_type}"),
            f"{j.setting} {unit}",
            shown(j.shares_with or ""),
            f"{j.steps_per_s:.3g}",
            f"{j.power_w:.0f}",
            f"{j.energy_j / 1e3:.1f}",
            shown(where),
        )
    if len(running) > max_rows:
        table.add_row(f"... {len(running) - max_rows} more", *[""] * 7)
    return table


def _stage_summary(stage: StageRecord) -> str:
    """``name: status, gap G`` with the gap to the stage's own bound, or ``no bound of its own``."""
    if stage.status == "skipped":
        return f"{stage.stage}: skipped"
    if stage.objective is None or stage.bound is None:
        return f"{stage.stage}: {stage.status} (the solver's word, no bound of its own)"
    gap = abs(stage.bound - stage.objective) / max(abs(stage.objective), 1e-9)
    return f"{stage.stage}: {stage.status}, gap {gap:.3%}"


def summary_table(plan: Plan) -> Table:
    """The round's summary: energy (MJ) against the budget, GPUs and nodes used, progress, objective, solver, model."""
    r = plan.round
    table = Table(show_header=False, title="summary", title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    budget = "none" if r.budget_j is None else f"{r.budget_j / 1e6:.3f} MJ ({_share_used(r.energy_j, r.budget_j)})"
    table.add_row("energy", f"{r.energy_j / 1e6:.3f} MJ of budget {budget}")
    table.add_row("GPUs used", shown(", ".join(f"{g}: {n}" for g, n in sorted(r.gpus_used.items())) or "none"))
    table.add_row("nodes on", shown(", ".join(f"{g}: {n}" for g, n in sorted(r.nodes_on.items())) or "none"))
    table.add_row("progress", f"{r.progress:.4f} (weighted fraction of remaining work)")
    table.add_row(
        "objective",
        f"{r.objective} = {_fmt(r.objective_value)}, bound {_fmt(r.bound)}, gap {_fmt(r.gap, '.2%')}",
    )
    table.add_row("solver", shown(f"{r.solver} ({r.status}) in {r.solve_s:.2f} s"))
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
