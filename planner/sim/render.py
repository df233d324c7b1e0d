"""Rich rendering for ``wattplan simulate``: a progress bar per policy (or, quiet, a log line), a summary table."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.sim.engine import ProgressCallback, ReplayState

WORK_STEPS = 1000
"""A progress task's total: the bar advances by thousandths of the workload's reference work."""


def progress_display(console: Any) -> Progress:
    """Per policy: rounds and jobs done, a bar of the reference work done, elapsed time and the ETA.

    The bar follows :attr:`planner.sim.engine.ReplayState.work_done` (GPU-seconds at reference speed, so a
    long job counts for what it costs) and rich estimates the time left from its recent speed.
    """
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=16),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _describe(policy: str, rounds: int, done: int, total: int) -> str:
    return shown(f"{policy:<9} round {rounds:<6} jobs {done}/{total}")


def progress_callback(progress: Progress, policy: str, jobs_total: int) -> ProgressCallback:
    """A callback for :func:`planner.sim.engine.simulate` that advances one task of ``progress``.

    The first round seen (the first of a resumed replay too) restarts the task's clock and speed samples, so the
    ETA measures only the work done here, not the jump to where a checkpoint left off.
    """
    task = progress.add_task(_describe(policy, 0, 0, jobs_total), total=WORK_STEPS)
    first = True

    def update(state: ReplayState) -> None:
        nonlocal first
        completed = round(state.work_done * WORK_STEPS)
        description = _describe(policy, len(state.rounds), state.jobs_done, len(state.states))
        if first:
            progress.reset(task, completed=completed, description=description)
            first = False
        else:
            progress.update(task, completed=completed, description=description)

    return update


def progress_log(write: Callable[[str], None], policy: str, every_s: float = 30.0) -> ProgressCallback:
    """A callback that writes one line every ``every_s`` seconds of wall time (``simulate -q``).

    The line: rounds done, jobs done, the share ``f`` of reference work done, the elapsed time ``t`` and a linear
    ETA ``t (1 - f) / (f - f0)``, with ``f0`` the share at the first round seen (a resumed replay starts above 0):
    the first round starts the clock and writes nothing.
    """
    begin = last = 0.0
    start: float | None = None

    def update(state: ReplayState) -> None:
        nonlocal begin, last, start
        now, f = time.monotonic(), state.work_done
        if start is None:
            begin = last = now
            start = f
            return
        if now - last < every_s:
            return
        last = now
        elapsed = now - begin
        eta = f"{elapsed * (1 - f) / (f - start):.0f} s" if f > start else "unknown"
        write(
            f"{policy}: {len(state.rounds):,} rounds, {state.jobs_done}/{len(state.states)} jobs, "
            f"{f:.1%} of the work, {elapsed:.0f} s elapsed, ETA {eta}"
        )

    return update


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


METRICS = (
    "stop",
    "energy kWh",
    "  node kWh",
    "  idle kWh",
    "  dynamic kWh",
    "avg JCT h",
    "p95 JCT h",
    "makespan h",
    "done",
    "GPU util",
    "captured",
    "JCT vs ref",
    "kgCO2",
    "solver s mean",
    "solver s max",
)
"""The rows of :func:`summary_table`, one per metric."""


def _cells(s: dict[str, Any]) -> list[str]:
    """The :data:`METRICS` of one replay's summary, as text; a failed replay says so in the first cell."""
    if s.get("error") or "stop_reason" not in s:  # a failed replay of frontier: it has no numbers
        return [shown(f"failed: {s.get('error') or 'no result'}"), *["-"] * (len(METRICS) - 1)]
    h = 1 / 3600
    return [
        shown(s["stop_reason"]),
        _fmt(s["energy_kwh"], ".2f"),
        f"{s['energy_node_kwh']:.1f}",
        f"{s['energy_idle_kwh']:.1f}",
        f"{s['energy_dynamic_kwh']:.1f}",
        _fmt(None if s["avg_jct_s"] is None else s["avg_jct_s"] * h, ".2f"),
        _fmt(None if s["p95_jct_s"] is None else s["p95_jct_s"] * h, ".2f"),
        _fmt(None if s["makespan_s"] is None else s["makespan_s"] * h, ".2f"),
        f"{s['jobs_completed']}/{s['jobs_total']}",
        _fmt(s["gpu_utilisation"], ".1%"),
        _fmt(s.get("captured_share"), ".0%"),
        _fmt(s.get("jct_increase"), "+.1%"),
        _fmt(s.get("carbon_kg"), ".1f"),
        _fmt(s["solver_s_mean"], ".3f"),
        _fmt(s["solver_s_max"], ".3f"),
    ]


def summary_table(summaries: Sequence[dict[str, Any]]) -> Table:
    """The main numbers of each replay: one row per metric, one column per policy (reads at 80 columns).

    A frontier's column is headed by its point's label (``wattplan-delta-0.1``: the knob and its value), not its
    policy, which is ``wattplan`` for every point of the sweep.

    A failed replay (a frontier row with an ``error``) is a column saying so: it has no numbers (reading them
    was a KeyError, an internal error after the sweep had written its files).
    """
    table = Table(title="Trace replay", title_justify="left")
    table.add_column("", justify="left", no_wrap=True)
    for s in summaries:
        heading = s.get("label") or s.get("policy") or "?"  # a frontier point by its label: the knob and value
        table.add_column(shown(heading), justify="right", overflow="fold")
    columns = [_cells(s) for s in summaries]
    for k, metric in enumerate(METRICS):
        table.add_row(metric, *(cells[k] for cells in columns))
    floors = [f for s in summaries if (f := s.get("energy_floor_kwh")) is not None]
    if floors:
        table.caption = (
            f"energy floor {min(floors):.2f} kWh; captured = share of the saving from fifo-max to the floor; "
            "JCT vs ref = average JCT against fifo-max's"
        )
    return table
