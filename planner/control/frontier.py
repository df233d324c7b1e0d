"""``wattplan frontier``: every point of the sweep one policy's replay on the simulated Slurm.

The points, their resume, their rows and the frontier's files are :mod:`planner.sim.frontier`'s; what this module
adds is how each point is replayed, the reference and the floor (docs/design.md §10.8, §14):

* each point is :func:`planner.control.slurm_replay.replay_on_slurm`, the replay ``simulate`` runs for one policy,
  with the simulated Slurm's constants of the sweep (``--time-scale``, ``--power-save``, ...: the point's ``setup``,
  compared on resume with its spec), saved as ``runs/<label>/{summary.json, jobs.csv, power.csv, agent.log}``;
* the baselines are the registered policies and Slurm's own (:data:`~planner.control.slurm_replay.
  SLURM_BASELINES`: ``slurm``, ``slurm-powersave``, ``maxq``, first in ``all``);
* the reference is Slurm alone (the sweep's ``slurm`` row, else a replay of it here), and the floor the one
  ``simulate`` gives (:func:`planner.control.session.workload_powered_floor`): the powered floor
  while every point keeps every node on, the floor that lets idle nodes draw nothing once a point powered nodes
  down. Energies are compared over the common window (:mod:`planner.control.common_window`): a row's
  ``energy_kwh`` is its energy to the longest makespan of the sweep and the reference (``energy_own_kwh`` its
  own), and the floor is over that window. Every row gets ``captured_share = (E_ref - E) / (E_ref - E_floor)`` and
  ``jct_increase = J / J_ref - 1`` against them (:func:`planner.sim.frontier.compared_rows`).

A slurm summary names its job counts ``jobs`` and ``completed``; a frontier row also carries them as the frontier's
columns and its front read them (``jobs_total``, ``jobs_completed``, ``jobs_unfinished``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.control.common_window import common_window_s, on_common_window
from wattplan.planner.control.session import (
    COMMON_WINDOW_CAPTION,
    SIGNAL_KEYS,
    TABLE_ROWS,
    setup_of,
    with_restart_cost,
    workload_powered_floor,
)
from wattplan.planner.control.slurm_replay import (
    SLURM_ALONE,
    SLURM_BASELINES,
    SimulatedCluster,
    SlurmReplayResult,
    replay_on_slurm,
    write_result,
)
from wattplan.planner.sim.frontier import (
    FrontierFigure,
    FrontierPoint,
    FrontierResult,
    PointEngine,
    compared_rows,
    frontier_points,
    frontier_title,
    point_fields,
    point_spec_json,
    raise_failed,
    replay_points,
    write_frontier,
)
from wattplan.planner.sim.options import FrontierOptions
from wattplan.planner.sim.plots import DEFAULT_FIGURES, FigureOptions
from wattplan.planner.sim.session import FrontierSweep, frontier_sweep

SLURM_RUN_FILES = ("summary.json", "jobs.csv", "power.csv", "agent.log")
"""The files of one point in ``runs/<label>/``, as ``simulate`` writes one policy's."""
REFERENCE_LABEL = "reference (Slurm alone)"
POWERED_FLOOR_LABEL = "powered floor, every node on"
IDLE_OFF_FLOOR_LABEL = "energy floor, idle nodes off"


@dataclass(frozen=True)
class SlurmFrontier:
    """A checked ``frontier``: the sweep, its base with Slurm's restart cost, and the cluster."""

    sweep: FrontierSweep
    setup: SimulatedCluster

    def points(self) -> list[FrontierPoint]:
        """The sweep's points (:func:`planner.sim.frontier.frontier_points`), each with the simulated Slurm's setup."""
        s = self.sweep
        points = frontier_points(s.base, s.deltas, s.jct_increases, s.baselines, SLURM_BASELINES)
        return [replace(p, setup=self.setup) for p in points]

    @property
    def total(self) -> int:
        """How many replays the sweep runs."""
        return len(self.points())


def slurm_frontier_sweep(trace: str | Path, cluster: str, options: FrontierOptions) -> SlurmFrontier:
    """The sweep of ``frontier``: ``frontier_sweep``'s, priced and run as ``simulate`` does.

    The restart cost tau is what a requeue costs on the simulated Slurm unless ``--restart-s`` is given
    (:func:`planner.control.session.with_restart_cost`); the cluster's constants are
    :func:`planner.control.session.setup_of` the options.
    """
    sweep = frontier_sweep(trace, cluster, options)
    setup = setup_of(options)
    return SlurmFrontier(replace(sweep, base=with_restart_cost(sweep.base, options, setup)), setup)


def frontier_fields(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A slurm summary with its job counts also under the frontier's names (module docstring)."""
    jobs, completed = int(summary["jobs"]), int(summary["completed"])
    return {**summary, "jobs_total": jobs, "jobs_completed": completed, "jobs_unfinished": jobs - completed}


SlurmPayload = tuple[SlurmReplayResult, list[str]]
"""What a point's files are made of: the replay and the agent's log lines."""


def replay_slurm_point(point: FrontierPoint) -> tuple[dict[str, Any], SlurmPayload]:
    """Replay one point on the simulated Slurm (module level: it pickles into a worker); its row and its payload.

    The row is the summary ``simulate`` writes for that policy, with the jobs dropped (``workload``).
    """
    from wattplan.planner.sim.replay import prepare

    lines: list[str] = []
    workload, ctx = prepare(point.spec)
    result = replay_on_slurm(point.spec, point.policy, point.setup, log=lines.append, prepared=(workload, ctx))
    dropped = {t: list(ids) for t, ids in workload.dropped_by_type.items()}
    row = {
        **point_fields(point),
        **frontier_fields(result.summary),
        "workload": {"dropped_by_type": dropped},
        "frontier_spec": point_spec_json(point),
    }
    return row, (result, lines)


def write_slurm_point(payload: SlurmPayload, row: dict[str, Any], folder: Path) -> None:
    """``summary.json`` (``row``), ``jobs.csv`` and ``agent.log`` of one point in ``folder``."""
    result, lines = payload
    write_result(folder, replace(result, summary=row), lines)


SLURM_ENGINE = PointEngine(replay_slurm_point, write_slurm_point, SLURM_RUN_FILES)
"""The frontier's points replayed on the simulated Slurm."""


def slurm_reference(frontier: SlurmFrontier, rows: Sequence[dict[str, Any]], prepared: Any) -> dict[str, Any]:
    """Slurm alone: the sweep's own ``slurm`` row, else a replay of it here (not saved; it takes no solve).

    ``prepared`` is ``prepare(base)``. The Slurm baselines know no cap, so this is the reference under one too.
    """
    for r in rows:
        if r.get("knob") == "baseline" and r.get("policy") == SLURM_ALONE:
            return r
    spec = replace(frontier.sweep.base, policies=(SLURM_ALONE,), max_jct_increase=None)
    return frontier_fields(replay_on_slurm(spec, SLURM_ALONE, frontier.setup, prepared=prepared).summary)


def run_slurm_frontier(
    frontier: SlurmFrontier,
    out: str | Path,
    *,
    workers: int = 2,
    ray: str | None = None,
    figures: FigureOptions | None = DEFAULT_FIGURES,
    point_done: Callable[[], None] | None = None,
) -> FrontierResult:
    """Replay every point of ``frontier`` on the simulated Slurm; write the frontier's files to ``out``.

    Saved points with the same spec and inputs are read back (:func:`planner.sim.frontier.replay_points`), failed
    ones raised as :class:`~planner.sim.frontier.ReplayFailed` after the others; the reference and the floor are
    the module docstring's. ``figures`` None writes no figure;
    ``point_done`` is called as each point ends; ``ray`` runs the replays as Ray tasks. An ``out`` that names an
    input file raises :class:`InputError`.
    """
    from wattplan.planner.files.paths import refuse_overwriting_inputs
    from wattplan.planner.sim.output import write_dropped
    from wattplan.planner.sim.replay import prepare

    out = Path(out)
    base = frontier.sweep.base
    inputs = [base.trace, base.carbon, base.price, base.profiles, base.truth]
    refuse_overwriting_inputs({"--out": out}, inputs, folders={"--out"})
    points = frontier.points()
    workload, ctx = prepare(base)  # a missing trace, a bad cluster, an empty selection: raised here, before the pool
    stale: list[str] = []

    def advance(point: FrontierPoint, row: dict[str, Any]) -> None:
        if point_done is not None:
            point_done()

    rows = replay_points(points, out, workers, SLURM_ENGINE, advance, ray, stale)
    raise_failed(rows, out)
    reference = slurm_reference(frontier, rows, (workload, ctx))
    stay_on = all(r.get("power_saving") is None for r in rows)
    window = common_window_s([r for r in [*rows, reference] if not r.get("error")])
    floor = workload_powered_floor(base, (workload, ctx), stay_on, window)
    reference = on_common_window(reference, window)
    full = compared_rows([on_common_window(r, window) for r in rows], reference, floor)
    floor_label = POWERED_FLOOR_LABEL if stay_on else IDLE_OFF_FLOOR_LABEL
    figure = FrontierFigure(frontier_title(base, "simulated Slurm"), reference, REFERENCE_LABEL, floor_label)
    paths = write_frontier(out, full, figure, floor, figures)
    if dropped_path := write_dropped(out, workload.dropped_by_type):
        paths.append(dropped_path)
    return FrontierResult(full, floor, reference, paths, stale, workload.dropped_by_type, tuple(ctx.type_names))


def frontier_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One row per figure (``simulate``'s and the JCT against Slurm alone), one column per point."""
    table = Table(title="Frontier on a simulated Slurm", title_justify="left")
    table.add_column("", justify="left", no_wrap=True)
    for r in rows:
        table.add_column(shown(str(r["label"])), justify="right", overflow="fold")
    for label, key, fmt in (*TABLE_ROWS, ("JCT vs Slurm", "jct_increase", "{:+.1%}")):
        if key in SIGNAL_KEYS and all(r.get(key) is None for r in rows):
            continue  # no signal given
        table.add_row(label, *("-" if r.get(key) is None else fmt.format(r[key]) for r in rows))
    if any(r.get("error") for r in rows):  # a failed point's column has no numbers: say why
        table.add_row("failed", *(shown(str(r["error"])) if r.get("error") else "" for r in rows))
    table.caption = COMMON_WINDOW_CAPTION
    return table
