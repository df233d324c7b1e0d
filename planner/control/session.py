"""``wattplan simulate`` and ``wattplan.simulate``: every policy of the replay on the simulated Slurm.

Each policy of ``--policy`` is replayed by :func:`planner.control.slurm_replay.replay_on_slurm` (the agent's loop
on the simulated Slurm), one after another or ``--workers`` at once; ``slurm`` is Slurm alone and ``all`` means Slurm
alone and the six built-in policies. ``out/POLICY/`` gets each policy's ``summary.json``, ``jobs.csv`` and
``agent.log``, ``out/comparison.csv`` and ``comparison.json`` one row per policy, ``out/dropped.csv`` the jobs not
replayed, and the figures unless they are turned off.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.control.cap_schedule import read_cap_schedule
from wattplan.planner.control.common_window import common_window_s, energy_over
from wattplan.planner.control.saved_replay import replay_key, saved_result
from wattplan.planner.control.slurm_replay import (
    SLURM_ALONE,
    SLURM_BASELINES,
    ProgressHook,
    ReplayProgress,
    SimulatedCluster,
    SlurmReplayResult,
    replay_on_slurm,
)
from wattplan.planner.sim.options import FrontierOptions, ReplayOptions, SimulateOptions
from wattplan.planner.sim.policies.registry import ALL
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.session import replay_spec

if TYPE_CHECKING:
    from rich.progress import Progress

    from wattplan.planner.sim.plots import FigureOptions
    from wattplan.planner.sim.round_instance import ClusterContext
    from wattplan.planner.sim.workload import Workload

COMPARISON_COLUMNS = (
    "policy",
    "jobs",
    "completed",
    "energy_kwh",
    "energy_common_kwh",
    "energy_dynamic_kwh",
    "energy_floor_kwh",
    "captured_share",
    "carbon_kg",
    "energy_cost_usd",
    "avg_jct_s",
    "p95_jct_s",
    "makespan_s",
    "requeues",
    "rounds",
    "wall_s",
    "cpu_s",
)
"""The columns of ``comparison.csv`` (and of the table ``simulate`` prints), in order."""


def setup_of(options: SimulateOptions | FrontierOptions) -> SimulatedCluster:
    """The simulated Slurm's constants from ``simulate``'s or ``frontier``'s options."""
    return SimulatedCluster(
        options.time_scale,
        options.load_s,
        options.requeue_delay_s,
        options.event_rounds,
        options.periodic_rounds,
        pass_delay_s=options.pass_delay_s,
        completing_s=options.completing_s,
        power_save=options.power_save,
        power_down=options.power_down,
        power_up=options.power_up,
        pairs=options.pairs,
        poll_s=options.poll_s,
        suspend_s=options.suspend_s,
        resume_s=options.resume_s,
        progress_metric=options.progress_metric,
        up_before_s=options.up_before_s,
        budget_period_s=options.budget_period_s,
        cap_schedule=() if options.power_cap_schedule is None else read_cap_schedule(options.power_cap_schedule),
    )


def with_restart_cost(spec: ReplaySpec, options: ReplayOptions, setup: SimulatedCluster) -> ReplaySpec:
    """``spec`` whose restart cost tau is what a restart costs on the simulated Slurm, unless ``--restart-s`` is given.

    A requeued job waits the requeue delay, then its launch and checkpoint load (:attr:`SimulatedCluster.
    restart_cost_s`); a round model that prices a restart lower changes jobs more often than pays (issue 44: at a
    time scale of 30, 240 s against the 30 s default). InputError naming ``--restart-s`` when that is not shorter
    than the round.
    """
    if options.restart_s is not None:
        return spec
    cost = setup.restart_cost_s
    if not cost < spec.rules.duration_s:
        why = (
            f"a restart costs {cost:g} s on the simulated Slurm (requeue delay, launch and load), not shorter than "
            f"the round ({spec.rules.duration_s:g} s): give --restart-s, a longer --round-s or a smaller --time-scale"
        )
        raise InputError("--restart-s", [Problem("bad-option", "--restart-s", why)])
    return replace(spec, rules=replace(spec.rules, restart_s=cost))


def split_policies(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The Slurm baselines asked for and the other names, each in order (``all``: Slurm alone and the built-ins)."""
    baselines = [n for n in SLURM_BASELINES if n in names or (n == SLURM_ALONE and ALL in names)]
    return baselines, [n for n in names if n not in SLURM_BASELINES]


@dataclass
class SlurmHooks:
    """What a caller hears from :func:`slurm_replays`; every hook may be left out.

    ``note``: one line per policy replayed; ``warn``: a warning before the replays (a long replay); ``progress``:
    given a policy and its job count, a hook for that replay's :class:`ReplayProgress` (serial replays only);
    ``start``: called once with the number of replays, before the first; ``policy_done``: called as each policy of
    a parallel run ends; ``dropped``: the line naming the jobs dropped (no profile on the cluster), when any.
    """

    note: Callable[[str], None] | None = None
    dropped: Callable[[str], None] | None = None
    start: Callable[[int], None] | None = None
    warn: Callable[[str], None] | None = None
    progress: Callable[[str, int], ProgressHook | None] | None = None
    policy_done: Callable[[], None] | None = None


def slurm_replays(
    trace: str | Path,
    cluster: str,
    options: SimulateOptions,
    policies: Sequence[str],
    out: Path,
    hooks: SlurmHooks | None = None,
    *,
    plots: bool = False,
    written_by: Mapping[str, Any] | None = None,
) -> list[SlurmReplayResult]:
    """Replay ``trace`` on ``cluster`` with each policy on the simulated Slurm (module docstring), in order.

    ``options`` is the checked record: ``--workers N`` replays N policies at once, each in its own process
    (:func:`planner.executor.run_tasks`). A policy whose files in ``out`` came from the same replay is read back, not
    replayed (:mod:`planner.control.saved_replay`), unless ``--fresh``. Each summary gets the powered floor and the
    captured share (:func:`with_floor`) and ``written_by`` (the caller's provenance record) when given; ``out`` gets
    ``dropped.csv`` when jobs were dropped and, with ``plots``, the figures of :func:`write_slurm_plots`.
    """
    from wattplan.planner.files.paths import refuse_overwriting_inputs
    from wattplan.planner.sim.forecast import forecast, long_replay_warning
    from wattplan.planner.sim.output import write_dropped
    from wattplan.planner.sim.replay import prepare
    from wattplan.planner.sim.workload import dropped_text

    hooks = hooks or SlurmHooks()
    if not policies:
        raise InputError("--policy", [Problem("no-policy", "--policy", "name at least one policy")])
    baselines, others = split_policies(policies)
    setup = setup_of(options)
    spec = with_restart_cost(replay_spec(trace, cluster, options, others or ["wattplan"]), options, setup)
    refuse_overwriting_inputs({"--out": out}, [spec.trace, spec.profiles, spec.truth], folders={"--out"})
    names = baselines + (list(spec.policies) if others else [])
    workload, ctx = prepare(spec)
    outlook = forecast(workload.jobs, ctx.total_gpus, ctx.rules.duration_s, names, spec.start_s)
    if hooks.warn is not None and (warning := long_replay_warning(outlook)) is not None:
        hooks.warn(warning)
    if hooks.start is not None:
        hooks.start(len(names))
    keys = {name: replay_key(spec, name, setup) for name in names}
    saved = {} if options.fresh else {n: r for n in names if (r := saved_result(Path(out) / n, n, keys[n])) is not None}
    for name in saved:
        _noted(saved[name], hooks.note, f"read back from {shown(Path(out) / name)} (the same replay)")
    todo = [n for n in names if n not in saved]
    if options.workers == 1 and options.ray is None:
        done = {}
        for name in todo:
            progress = hooks.progress(name, len(workload.jobs)) if hooks.progress is not None else None
            done[name] = replay_on_slurm(
                spec, name, setup, Path(out), progress=progress, prepared=(workload, ctx), key=keys[name]
            )
            _noted(done[name], hooks.note)
    else:
        done = _parallel(spec, todo, keys, setup, Path(out), options.workers, hooks, options.ray)
    results = with_floor(spec, [saved[n] if n in saved else done[n] for n in names], (workload, ctx))
    dropped = {t: list(ids) for t, ids in workload.dropped_by_type.items()}
    results = [replace(r, summary={**r.summary, "workload": {"dropped_by_type": dropped}}) for r in results]
    if written_by is not None:
        results = [replace(r, summary={**r.summary, "written_by": dict(written_by)}) for r in results]
    for result in results:
        write_text_atomic(Path(out) / result.policy / "summary.json", json.dumps(result.summary, indent=2) + "\n")
    write_comparison(out, results)
    write_dropped(Path(out), workload.dropped_by_type)
    if hooks.dropped is not None and (text := dropped_text(workload.dropped_by_type, ctx.type_names)):
        hooks.dropped(text)
    if plots:
        write_slurm_plots(Path(out), results, options.figures())
    return results


def _noted(result: SlurmReplayResult, note: Callable[[str], None] | None, how: str | None = None) -> None:
    """One line on ``result`` to ``note``: jobs done, energy, rounds, and the wall seconds or ``how`` it was had."""
    if note is not None:
        s = result.summary
        note(
            f"{result.policy}: {s['completed']} of {s['jobs']} jobs, {s['energy_kwh']:.3f} kWh, {s['rounds']} rounds, "
            + (how or f"{s['wall_s']:.1f} s")
        )


def _parallel(
    spec: ReplaySpec,
    names: Sequence[str],
    keys: Mapping[str, Mapping[str, Any]],
    setup: SimulatedCluster,
    out: Path,
    workers: int,
    hooks: SlurmHooks,
    ray: str | None = None,
) -> dict[str, SlurmReplayResult]:
    """Every policy of ``names`` through :func:`planner.executor.run_tasks`, by name; a failure raises.

    ``workers`` processes at once, or with ``ray`` (``--ray``, a Ray address) ``workers`` Ray tasks in flight there;
    each policy's files are written as it ends, with its ``keys`` entry (:func:`~.saved_replay.replay_key`).
    """
    from wattplan.planner.executor import run_tasks

    done: dict[str, SlurmReplayResult] = {}
    tasks = [(spec, n, setup, out, None, None, None, keys[n]) for n in names]
    for index, outcome in run_tasks(replay_on_slurm, tasks, workers=workers, ray_address=ray):
        if outcome.error is not None:
            raise outcome.error
        assert outcome.value is not None
        done[names[index]] = outcome.value
        _noted(outcome.value, hooks.note)
        if hooks.policy_done is not None:
            hooks.policy_done()
    return done


def write_slurm_plots(out: Path, results: Sequence[SlurmReplayResult], options: FigureOptions) -> list[Path]:
    """``power``, ``jct_cdf`` and ``energy_jct`` figures of a replay on the simulated Slurm in ``out``; the paths.

    The cluster's power step by step (kW over hours since the first arrival), each policy's JCT CDF, and energy over
    the common window (:func:`with_floor`) against average JCT with the powered floor over it as a line.
    """
    from wattplan.planner.sim.plots import (
        energy_jct_plot,
        floor_of,
        jct_cdf_series_plot,
        power_steps_plot,
        summary_points,
    )

    paths = [options.path(out, stem) for stem in ("power", "jct_cdf", "energy_jct")]
    t0 = min((row["arrival_s"] for r in results for row in r.jobs), default=0.0)
    power = {r.policy: _step_points(r.power_steps, t0) for r in results}
    saving = [r.policy for r in results if r.summary.get("power_saving") is not None]
    nodes = f"{', '.join(saving)}: idle nodes powered down" if saving else "every node on"
    power_steps_plot(power, paths[0], f"Cluster power ({nodes})", options=options)
    jcts = {r.policy: ([row["jct_s"] for row in r.jobs if row["jct_s"] is not None], len(r.jobs)) for r in results}
    jct_cdf_series_plot(jcts, paths[1], options=options)
    # energies over the common window, as the floor and the captured share (module common_window); own without one
    summaries = [
        {**r.summary, "energy_kwh": r.summary.get("energy_common_kwh") or r.summary["energy_kwh"]} for r in results
    ]
    title = "Energy over the common window" if results and results[0].summary.get("common_window_s") else ""
    energy_jct_plot(summary_points(summaries), paths[2], title, floor_kwh=floor_of(summaries), options=options)
    return paths


def _step_points(steps: Sequence[tuple[float, float, float]], t0: float) -> tuple[list[float], list[float]]:
    """``(t0, t1, W)`` steps as step-plot points: hours since ``t0`` and kW, the last held to its end."""
    xs = [(a - t0) / 3600 for a, _, _ in steps]
    ys = [w / 1000 for _, _, w in steps]
    if steps:
        xs.append((steps[-1][1] - t0) / 3600)
        ys.append(steps[-1][2] / 1000)
    return xs, ys


def workload_powered_floor(
    spec: ReplaySpec,
    prepared: tuple[Workload, ClusterContext] | None = None,
    nodes_stay_on: bool = True,
    window_s: float | None = None,
) -> EnergyFloor:
    """The floor of every job of ``spec``'s workload under the truth.

    ``nodes_stay_on``: every node powered from the first arrival to the last completion, and at least ``window_s``
    after the first arrival (:func:`planner.planning.powered_floor`; the common window), as on the simulated Slurm
    without power saving; else idle nodes draw nothing (:func:`planner.planning.energy_floor`), a bound for a
    cluster that powers them down over any window.
    """
    from wattplan.planner.planning import energy_floor, powered_floor
    from wattplan.planner.sim.replay import prepare
    from wattplan.planner.sim.round_instance import workload_instance
    from wattplan.planner.sim.state import JobState

    workload, ctx = prepared if prepared is not None else prepare(spec)
    instance = workload_instance(ctx.real, [JobState.new(j) for j in workload.jobs])
    if not nodes_stay_on:
        return energy_floor(instance)
    return powered_floor(instance, {j.id: j.arrival_s for j in workload.jobs}, min_window_s=window_s)


def with_floor(
    spec: ReplaySpec, results: Sequence[SlurmReplayResult], prepared: tuple[Workload, ClusterContext] | None = None
) -> list[SlurmReplayResult]:
    """Each result with the energy over the common window, the floor and the share of the reference's saving captured.

    The common window (:mod:`planner.control.common_window`) runs ``W`` from the first arrival, ``W`` the longest
    makespan: ``energy_common_kwh`` is a run's energy and then its idle tail to ``W``. ``energy_floor_kwh``:
    :func:`workload_powered_floor` over at least ``W``, with every node on unless a result ran with power saving (then
    the floor without idle nodes, which bounds every result). The reference is Slurm alone when it was replayed, else
    ``fifo-max``; ``captured_share = (E_ref - E) / (E_ref - E_floor)`` over the common window (1: at the floor, 0: no
    better than the reference, < 0: worse). Without a common window (a job left unfinished) the runs' own energies
    are compared. No floor when the LP is not solved; no share without a reference.
    """
    stay_on = all(r.summary.get("power_saving") is None for r in results)
    window = common_window_s([r.summary for r in results])
    floor = workload_powered_floor(spec, prepared, stay_on, window)
    by_name = {r.policy: r for r in results}
    ref = by_name.get(SLURM_ALONE) or by_name.get("fifo-max")

    def energy(r: SlurmReplayResult) -> float:
        return r.summary["energy_kwh"] if window is None else energy_over(r.summary, window)

    out = []
    for r in results:
        extra: dict[str, Any] = {"energy_floor_kwh": floor.energy_kwh, "energy_floor_note": floor.note}
        extra |= {"common_window_s": window, "energy_common_kwh": energy(r)}
        if ref is not None and floor.energy_kwh is not None:
            saving = energy(ref) - floor.energy_kwh
            extra["reference_policy"] = ref.policy
            extra["captured_share"] = (energy(ref) - energy(r)) / saving if saving > 0 else None
        out.append(replace(r, summary={**r.summary, **extra}))
    return out


def comparison_rows(results: Sequence[SlurmReplayResult]) -> list[dict[str, Any]]:
    """One row per policy with :data:`COMPARISON_COLUMNS`."""
    return [{c: r.summary.get(c) for c in COMPARISON_COLUMNS} for r in results]


def write_comparison(out: Path, results: Sequence[SlurmReplayResult]) -> None:
    """``out/comparison.csv`` and ``out/comparison.json`` (atomic)."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    rows = comparison_rows(results)
    write_text_atomic(out / "comparison.csv", pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS)).to_csv(index=False))
    write_text_atomic(out / "comparison.json", json.dumps(rows, indent=2) + "\n")


TABLE_ROWS = (
    ("jobs done", "completed", "{:.0f}"),
    ("energy kWh", "energy_kwh", "{:.3f}"),
    ("  GPUs' dynamic", "energy_dynamic_kwh", "{:.3f}"),
    ("common window kWh", "energy_common_kwh", "{:.3f}"),
    ("  floor", "energy_floor_kwh", "{:.3f}"),
    ("saving captured", "captured_share", "{:.1%}"),
    ("kgCO2", "carbon_kg", "{:.2f}"),
    ("energy cost $", "energy_cost_usd", "{:.2f}"),
    ("avg JCT s", "avg_jct_s", "{:,.0f}"),
    ("p95 JCT s", "p95_jct_s", "{:,.0f}"),
    ("makespan s", "makespan_s", "{:,.0f}"),
    ("requeues", "requeues", "{:.0f}"),
    ("rounds", "rounds", "{:.0f}"),
    ("wall s", "wall_s", "{:.1f}"),
    ("CPU s", "cpu_s", "{:.1f}"),
)
"""The rows of :func:`comparison_table`: label, summary key, format."""
SIGNAL_KEYS = frozenset({"carbon_kg", "energy_cost_usd"})
"""Rows shown only when the replay was given the signal (``--carbon``, ``--price``)."""


def comparison_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One row per figure, one column per policy (reads at 80 columns for up to six policies)."""
    table = Table(title="Replay on a simulated Slurm", title_justify="left")
    table.add_column("", justify="left", no_wrap=True)
    for r in rows:
        table.add_column(shown(str(r["policy"])), justify="right", overflow="fold")
    for label, key, fmt in TABLE_ROWS:
        if key in SIGNAL_KEYS and all(r.get(key) is None for r in rows):
            continue  # no signal given
        table.add_row(label, *("-" if r.get(key) is None else fmt.format(r[key]) for r in rows))
    table.caption = COMMON_WINDOW_CAPTION
    return table


COMMON_WINDOW_CAPTION = "common window: to the last job of any run, idle after its own; the floor and share over it"
"""What the replays' tables say under them: which energy the floor and the captured share compare."""


def progress_bar_hook(progress: Progress, policy: str, jobs_total: int) -> ProgressHook:
    """A :class:`ReplayProgress` hook advancing one task of ``progress`` (:func:`planner.sim.render.progress_display`).

    The bar is the share of the reference work done; the description the emulated hours and the jobs ended.
    """
    from wattplan.planner.sim.render import WORK_STEPS

    task = progress.add_task(_described(policy, 0.0, 0, jobs_total), total=WORK_STEPS)

    def update(p: ReplayProgress) -> None:
        progress.update(
            task,
            completed=round(p.work_done * WORK_STEPS),
            description=_described(policy, p.hours, p.jobs_done, p.jobs_total),
        )

    return update


def _described(policy: str, hours: float, done: int, total: int) -> str:
    return shown(f"{policy:<9} {hours:>7.1f} h  jobs {done}/{total}")


def progress_log_hook(write: Callable[[str], None], policy: str, every_s: float = 30.0) -> ProgressHook:
    """A :class:`ReplayProgress` hook that writes one line every ``every_s`` wall seconds (``simulate -q``).

    The line: emulated hours, jobs ended, the share ``f`` of the reference work done, the elapsed time ``t`` and a
    linear ETA ``t (1 - f) / f``.
    """
    begin = time.monotonic()
    last = begin

    def update(p: ReplayProgress) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < every_s:
            return
        last = now
        elapsed = now - begin
        eta = f"{elapsed * (1 - p.work_done) / p.work_done:.0f} s" if p.work_done > 0 else "unknown"
        write(
            f"{policy}: {p.hours:,.1f} h emulated, {p.jobs_done}/{p.jobs_total} jobs, {p.work_done:.1%} of the work, "
            f"{elapsed:.0f} s elapsed, ETA {eta}"
        )

    return update
