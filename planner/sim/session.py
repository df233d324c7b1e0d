"""One ``simulate`` or ``frontier`` run without a command line: options to a checked spec, the replays, the folder.

``wattplan simulate`` and :func:`wattplan.simulate` both check their options with one record,
:class:`~planner.sim.options.SimulateOptions`, and call :func:`replay_spec` with it and :func:`run_simulate`
(forecast, replays with their journals, the floor and reference, the files); ``wattplan frontier`` and
:func:`wattplan.frontier` check :class:`~planner.sim.options.FrontierOptions` and call :func:`frontier_sweep` and
:func:`run_frontier` the same way. Neither prints: what a user should see goes through :class:`ReplayHooks` (the command
line draws a progress bar and prints; Python passes nothing or its own callbacks).

The output folder (docs/design.md §10.2): ``out/<policy>/{summary.json, rounds.csv, jobs.csv}`` for every policy
(one as several), ``out/comparison.{csv,json}``, ``out/dropped.csv`` when a job was dropped, and the figures.
Units are those of the files (:mod:`planner.sim.output`); percent options (``max_jct_increase``, ``tail_bound``)
are fractions in the spec.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import Objective, RoundRules
from wattplan.planner.sim.engine import ProgressCallback, SimResult
from wattplan.planner.sim.frontier import FrontierResult
from wattplan.planner.sim.governor import GovernorRule
from wattplan.planner.sim.options import LIVE_GOVERNOR, FrontierOptions, ReplayOptions, SimulateOptions
from wattplan.planner.sim.plots import DEFAULT_FIGURES, FigureOptions
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.workload import Workload

Runs = list[tuple[SimResult, dict[str, Any]]]
"""Each policy's result and summary, in policy order."""


def resolve_trace(path: str | Path) -> Path:
    """The trace a user named: a file, or a shipped trace by name (``6c71a0.trace``).

    Neither: :class:`InputError` naming ``path`` (from Python a bare ``FileNotFoundError`` came out of
    ``wattplan.simulate``; the command line said the same in its own words).
    """
    from wattplan.planner.files.resources import resolve_trace as resolve

    try:
        return resolve(Path(path))
    except FileNotFoundError:
        raise InputError(str(path), [Problem("no-such-file", "(file)", "no such file or shipped trace")]) from None


def cluster_option(text: str) -> str:
    """``--cluster`` as given, once its items passed the list rules: no empty item, no GPU type twice.

    The counts are :func:`planner.rounds.cluster_spec.parse_cluster_spec`'s to check (whole nodes).
    """
    from wattplan.planner.console.list_options import split_list

    split_list(text, "--cluster", key=lambda item: item.partition(":")[0].strip().lower())
    return text


def _replay_spec(
    trace: str | Path,
    cluster: str,
    policies: Sequence[str] | None,
    options: ReplayOptions,
    rules: RoundRules,
    max_jct_increase: float | None,
) -> ReplaySpec:
    """The replay spec of ``simulate`` and ``frontier`` from their checked options.

    ``trace`` resolved (or a shipped name), ``cluster`` through the list rules and ``policies`` (the ``--policy``
    values; None: the spec's default) expanded, in that order; wattplan's request is
    :meth:`ReplayOptions.request`. ``max_jct_increase`` and ``tail_bound`` are percent here, fractions in the spec.
    """
    from wattplan.planner.console.list_options import repeated_list
    from wattplan.planner.sim.policies import PolicyOptions
    from wattplan.planner.sim.replay import expand_policies

    resolved, cluster = resolve_trace(trace), cluster_option(cluster)
    chosen = None if policies is None else expand_policies(repeated_list(list(policies), "--policy"))
    spec = ReplaySpec(
        trace=resolved,
        cluster=cluster,
        fmt=options.trace_format,  # type: ignore[arg-type]  # one of TRACE_FORMATS (the record's choices)
        virtual_cluster=options.vc,
        start_s=options.start_s,
        end_s=options.end_s,
        max_jobs=options.max_jobs,
        rules=rules,
        power_cap_w=options.power_cap_w,
        energy_budget_kwh=options.energy_budget_kwh,
        policy_options=PolicyOptions(options.zeus_eta, options.request()),
        seed=options.seed,
        profiles=options.profiles,
        carbon=options.carbon,
        price=options.price,
        signal_start=options.signal_start,
        signal_aware=options.signal_aware,
        noise=options.noise,
        max_rounds=options.max_rounds,
        gpus_per_node=options.gpus_per_node,
        node_power_w=options.node_power_w,
        max_jct_increase=None if max_jct_increase is None else max_jct_increase / 100.0,
        tail_bound=None if options.tail_bound is None else options.tail_bound / 100.0,
        governor=governor_rule(options),
        tail_pace=options.tail_pace,  # type: ignore[arg-type]  # one of TAIL_PACES
        delta_max=options.delta_max,
        truth=options.truth,
        learn=options.learn,
        replan=options.replan,  # type: ignore[arg-type]  # one of REPLANS
    )
    return spec if chosen is None else dataclasses.replace(spec, policies=chosen)


def _restart_s(options: ReplayOptions) -> float:
    """``--restart-s``, else :data:`~planner.contracts.defaults.RESTART_S`.

    Without ``--restart-s`` the slurm engine sets what a restart costs there
    (:func:`planner.control.session.with_restart_cost`).
    """
    return options.restart_s if options.restart_s is not None else defaults.RESTART_S


def replay_rules(options: ReplayOptions, objective: Objective, delta: float) -> RoundRules:
    """The rules a replay plays by, from its options and the ``objective`` and ``delta`` its command sets.

    ``--round-s``, the restart cost, ``--min-pair-rate``, ``--max-slowdown`` (percent here, a fraction in the rules)
    and ``--slurm-starts``; ``simulate`` and ``frontier`` set the objective and ``delta`` differently.
    """
    slowdown = None if options.max_slowdown is None else options.max_slowdown / 100.0
    return RoundRules(
        options.round_s,
        _restart_s(options),
        options.min_pair_rate,
        objective,
        delta,
        slowdown,
        options.slurm_starts,
    )


def replay_spec(
    trace: str | Path, cluster: str, options: SimulateOptions, policies: Sequence[str] = ("wattplan",)
) -> ReplaySpec:
    """The spec of ``wattplan simulate``: ``trace`` on ``cluster`` with ``policies`` (``--policy``) and ``options``.

    ``options`` is the checked record (:meth:`SimulateOptions.checked`); its ``objective`` None is ``progress``.
    A trace that is no file or shipped trace, a bad ``--cluster`` list or an unknown policy raises
    :class:`InputError`; what no option's range says (the signal hour, the solver on this machine) is checked by
    :func:`planner.sim.replay.check_spec` when the replay is prepared.
    """
    objective: Objective = options.objective or "progress"  # type: ignore[assignment]  # one of OBJECTIVES
    rules = replay_rules(options, objective, options.delta)
    return _replay_spec(trace, cluster, list(policies), options, rules, options.max_jct_increase)


def _silent(_: str) -> None:
    """A hook that says nothing."""


@dataclass
class ReplayHooks:
    """What a run tells its caller; every hook is optional.

    ``warn``: a warning (the long-replay forecast); ``note``: a remark (a checkpoint resumed or discarded);
    ``round_progress(policy, jobs_total)``: a per-round callback for one policy's serial replay (None: none);
    ``policy_done()``: one policy finished in a parallel run.
    """

    warn: Callable[[str], None] = _silent
    note: Callable[[str], None] = _silent
    round_progress: Callable[[str, int], ProgressCallback | None] | None = None
    policy_done: Callable[[], None] | None = None


@dataclass
class SimulateOutcome:
    """A finished ``simulate``: the runs (floor and reference added), the workload and cluster, the files."""

    runs: Runs
    workload: Workload
    ctx: ClusterContext
    out: Path
    written: list[Path] = field(default_factory=list)

    @property
    def summaries(self) -> list[dict[str, Any]]:
        """Each policy's ``summary.json``, in policy order."""
        return [s for _, s in self.runs]


def adopt_legacy_checkpoint(out: Path, spec: ReplaySpec) -> str | None:
    """Move a one-policy checkpoint an older version left at the top of ``out`` into ``out/<policy>/``.

    Returns a note saying so (None: nothing moved). The journal then resumes it when it is this replay's, and
    rewrites ``rounds.csv`` and ``jobs.csv`` from it in the current columns; another replay's is discarded as
    any other.
    """
    from wattplan.planner.sim.journal import CHECKPOINT_FILE

    old = Path(out) / CHECKPOINT_FILE
    if len(spec.policies) != 1 or not old.is_file():
        return None
    folder = Path(out) / spec.policies[0]
    if (folder / CHECKPOINT_FILE).exists():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(old, folder / CHECKPOINT_FILE)
    return f"moved the checkpoint {old} of the older layout to {folder / CHECKPOINT_FILE}"


def _replay_policy(spec: ReplaySpec, name: str) -> tuple[SimResult, dict[str, Any]]:
    """One policy in a worker (module level, so it pickles): ``run_policy`` on its own ``prepare``."""
    from wattplan.planner.sim.replay import prepare, run_policy

    workload, ctx = prepare(spec)
    return run_policy(spec, workload, ctx, name)


def parallel_replays(
    spec: ReplaySpec, workers: int, ray: str | None, policy_done: Callable[[], None] | None = None
) -> Runs:
    """Every policy of ``spec`` through :func:`planner.executor.run_tasks`, in policy order; a failure raises."""
    from wattplan.planner.executor import run_tasks

    done: dict[int, tuple[SimResult, dict[str, Any]]] = {}
    tasks = [(spec, name) for name in spec.policies]
    for index, outcome in run_tasks(_replay_policy, tasks, workers=workers, ray_address=ray):
        if outcome.error is not None:
            raise outcome.error
        assert outcome.value is not None
        done[index] = outcome.value
        if policy_done is not None:
            policy_done()
    return [done[k] for k in range(len(spec.policies))]


def serial_replays(
    spec: ReplaySpec, workload: Workload, ctx: ClusterContext, out: Path, fresh: bool, hooks: ReplayHooks
) -> Runs:
    """Every policy of ``spec`` in turn, each written as it goes to ``out/<policy>/`` and resumable there."""
    from wattplan.planner.sim.journal import ReplayJournal, remove_checkpoint
    from wattplan.planner.sim.replay import journal_folder, replay_sha256, run_policy

    runs = []
    digest = replay_sha256(spec)
    if not fresh and (moved := adopt_legacy_checkpoint(out, spec)) is not None:
        hooks.note(moved)
    for name in spec.policies:
        folder = journal_folder(out, spec, name)
        if fresh:
            remove_checkpoint(folder)
        journal = ReplayJournal(folder, digest, name, ctx.rules.duration_s, ctx.type_names)
        progress = None if hooks.round_progress is None else hooks.round_progress(name, len(workload.jobs))
        runs.append(run_policy(spec, workload, ctx, name, progress, journal=journal))
        if journal.discarded is not None:
            hooks.note(f"{name}: {journal.discarded}: replayed from the start")
        if journal.resumed_at is not None:
            hooks.note(f"{name}: resumed from the checkpoint after round {journal.resumed_at}")
    return runs


def run_simulate(
    spec: ReplaySpec,
    out: str | Path,
    *,
    plots: bool = True,
    figures: FigureOptions = DEFAULT_FIGURES,
    fresh: bool = False,
    workers: int = 1,
    ray: str | None = None,
    written_by: Mapping[str, Any] | None = None,
    hooks: ReplayHooks | None = None,
) -> SimulateOutcome:
    """Replay every policy of ``spec`` and write ``out`` (module docstring); the runs and what was written.

    Serial (``workers == 1`` and no ``ray``): each policy streams its files and checkpoints (``fresh`` forgets a
    checkpoint first). Otherwise the policies run through the executor (which refuses ``workers < 1``).
    ``written_by`` is stamped into every ``summary.json`` (the caller's provenance record).
    Bad options raise :class:`InputError` naming them.
    """
    from wattplan.planner.files.paths import refuse_overwriting_inputs
    from wattplan.planner.sim.forecast import forecast, long_replay_warning
    from wattplan.planner.sim.replay import prepare, with_floor_and_reference, write_outputs

    hooks = hooks or ReplayHooks()
    out = Path(out)
    inputs = [spec.trace, spec.carbon, spec.price, spec.profiles, spec.truth]
    refuse_overwriting_inputs({"--out": out}, inputs, folders={"--out"})  # an input in --out is refused too
    workload, ctx = prepare(spec)
    outlook = forecast(workload.jobs, ctx.total_gpus, ctx.rules.duration_s, spec.policies, spec.start_s)
    if (warning := long_replay_warning(outlook)) is not None:
        hooks.warn(warning)
    if workers == 1 and ray is None:
        runs = serial_replays(spec, workload, ctx, out, fresh, hooks)
    else:
        runs = parallel_replays(spec, workers, ray, hooks.policy_done)
    runs = with_floor_and_reference(spec, workload, ctx, runs)
    stamped = [(r, {**s, "written_by": dict(written_by)}) for r, s in runs] if written_by is not None else runs
    written = write_outputs(out, stamped, plots=plots, dropped=workload.dropped_by_type, figures=figures)
    return SimulateOutcome(stamped, workload, ctx, out, written)


def interrupted_note(spec: ReplaySpec, out: str | Path, workers: int = 1, ray: str | None = None) -> str:
    """What an interrupted ``simulate`` tells its user: whether the same command run again resumes, and from where.

    A serial replay (``workers == 1``, no ``ray``: :func:`run_simulate`) checkpoints each policy in ``out/<policy>/``
    (:mod:`planner.sim.journal`) and a rerun resumes from the last checkpoint; before the first one, or replayed in
    parallel (no checkpoints), a rerun starts over.
    """
    from wattplan.planner.sim.journal import CHECKPOINT_FILE, EVERY_ROUNDS, EVERY_S
    from wattplan.planner.sim.replay import journal_folder

    if workers != 1 or ray is not None:
        return (
            "interrupted: policies replayed in parallel (--workers, --ray) keep no checkpoint, so the same command "
            "run again starts over; with --workers 1 they replay one after another and a rerun resumes"
        )
    every = f"one every {EVERY_ROUNDS:,} rounds or {EVERY_S:g} s"
    if not any((journal_folder(Path(out), spec, name) / CHECKPOINT_FILE).is_file() for name in spec.policies):
        return f"interrupted before the first checkpoint ({every}): the same command run again starts over"
    return (
        f"interrupted: run the same command again to resume from the last checkpoint in {out} ({every}); "
        "--fresh starts over"
    )


@dataclass(frozen=True)
class FrontierSweep:
    """A checked ``frontier``: the base spec, the swept deltas and JCT increases (fractions), the baselines."""

    base: ReplaySpec
    deltas: tuple[float, ...]
    jct_increases: tuple[float, ...]
    baselines: tuple[str, ...]

    @property
    def total(self) -> int:
        """How many replays the sweep runs (:func:`planner.sim.frontier.frontier_points`)."""
        from wattplan.planner.sim.frontier import frontier_points

        return len(frontier_points(self.base, self.deltas, self.jct_increases, self.baselines))


def frontier_sweep(trace: str | Path, cluster: str, options: FrontierOptions) -> FrontierSweep:
    """The sweep of ``wattplan frontier``: ``trace`` on ``cluster`` with the checked ``options``.

    ``options.deltas`` (each in [0, 1)), ``options.max_jct_increase`` (percent) and ``options.baselines`` are the
    command line's comma-separated lists (:meth:`FrontierOptions.checked` joins a Python list); each bad item raises
    :class:`InputError` naming the option and the item (``--deltas[1]``). ``options.objective`` is that of the
    swept points; every point sets its own JCT increase.
    """
    from wattplan.planner.console.list_options import number_list, split_list
    from wattplan.planner.sim.replay import DELTA_BOUNDS, JCT_INCREASE_BOUNDS

    objective: Objective = options.objective  # type: ignore[assignment]  # one of OBJECTIVES
    rules = replay_rules(options, objective, defaults.DELTA)
    base = _replay_spec(trace, cluster, None, options, rules, None)
    knob_deltas = number_list(options.deltas, "--deltas", DELTA_BOUNDS)
    increases = number_list(options.max_jct_increase, "--max-jct-increase", JCT_INCREASE_BOUNDS)
    names = split_list(options.baselines, "--baselines")
    return FrontierSweep(base, tuple(knob_deltas), tuple(x / 100.0 for x in increases), tuple(names))


def run_frontier(
    sweep: FrontierSweep,
    out: str | Path,
    *,
    workers: int = 2,
    ray: str | None = None,
    figures: FigureOptions | None = DEFAULT_FIGURES,
    point_done: Callable[[], None] | None = None,
) -> FrontierResult:
    """Replay every point of ``sweep``; write the frontier's files to ``out`` (:func:`planner.sim.frontier.frontier`).

    ``figures`` None writes no figure; ``point_done`` is called as each replay ends. An ``out`` that names an input
    file raises :class:`InputError`.
    """
    from wattplan.planner.files.paths import refuse_overwriting_inputs
    from wattplan.planner.sim import frontier as fr

    base = sweep.base
    inputs = [base.trace, base.carbon, base.price, base.profiles, base.truth]
    refuse_overwriting_inputs({"--out": Path(out)}, inputs, folders={"--out"})  # an input in --out is refused too

    def advance(point: Any, row: Any) -> None:
        if point_done is not None:
            point_done()

    return fr.frontier(
        base,
        sweep.deltas,
        sweep.jct_increases,
        sweep.baselines,
        Path(out),
        workers,
        advance,
        ray_address=ray,
        figures=figures,
    )


def governor_rule(options: ReplayOptions) -> GovernorRule:
    """``--governor``, or the engine's default: the live loop's (:data:`LIVE_GOVERNOR`) on ``--engine slurm``."""
    given = options.governor or (LIVE_GOVERNOR if getattr(options, "engine", "rounds") == "slurm" else "accrued")
    rule: GovernorRule = "projected" if given == "projected" else "accrued"
    return rule
