"""``wattplan.simulate``, ``wattplan.frontier`` and ``wattplan.bench``: the commands from Python, results as DataFrames.

Each is a library call with typed keywords (:mod:`planner.sim.session`, :mod:`planner.bench.session`: the code the
command line calls too; no click is imported): a keyword is the option of that name (``max_jobs=20`` is
``--max-jobs 20``, ``power_cap_w=8000`` is ``--power-cap-w 8000``, ``learn=True`` is ``--learn``,
``replan="events"`` is ``--replan events``; a list option takes a sequence or the command line's comma-separated
string). Output goes to ``out`` (a new temporary folder when None)
and is read back with :func:`wattplan.results.read_results`, so the frames are exactly what the files hold and a
result can be read again later from its folder. Bad input raises :class:`~planner.contracts.problems.InputError`
with every problem, as the command line reports them; an unknown keyword ``TypeError`` naming the options there are.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wattplan.keywords import check_keywords
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.results import Results, read_results

if TYPE_CHECKING:
    from wattplan.planner.sim.session import ReplayHooks


@contextmanager
def _out(out: str | Path | None, prefix: str) -> Iterator[Path]:
    """The output folder: ``out``, or ``out`` in a new temporary folder when None, removed again if the run fails.

    A failed call with no ``out`` left an empty ``wattplan-simulate-*`` folder in the temporary folder each time;
    only the folder made here is removed, never a folder the caller named.
    """
    if out is not None:
        yield Path(out)
        return
    made = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield made / "out"
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise


def _option_name(keyword: str) -> str:
    """The command line's name of ``keyword`` (``max_jobs``: ``--max-jobs``; ``policies``: ``--policy``)."""
    return {"policies": "--policy", "trace": "TRACE", "instances": "SET"}.get(keyword, f"--{keyword.replace('_', '-')}")


def _checked_keywords(function: Callable[..., Any], given: dict[str, Any]) -> None:
    """:func:`wattplan.keywords.check_keywords` naming each keyword as the command line names its option."""
    check_keywords(function, given, _option_name)


def _unknown(function: str, unknown: dict[str, Any], known: Sequence[str]) -> None:
    """``TypeError`` naming the first keyword ``function`` has not, and every one it has."""
    if unknown:
        first = next(iter(unknown))
        raise TypeError(f"{function}() got an unexpected option {first!r} (options: {', '.join(sorted(known))})")


def _keywords_of(entry: Callable[..., Any], given: dict[str, Any]) -> dict[str, Any]:
    """The values in ``given`` (a function's ``locals()``) of ``entry``'s keyword-only parameters.

    The API's functions spell out every option for the reader and the type checker, then hand them on by name, so
    the library entry's list is the one that counts (``tests/test_replay_api.py`` checks the API lacks none).
    """
    names = [p.name for p in inspect.signature(entry).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return {name: given[name] for name in names}


def simulate(
    trace: str | Path,
    *,
    cluster: str,
    policies: Sequence[str] = ("fifo-max", "wattplan"),
    out: str | Path | None = None,
    plots: bool = False,
    plot_format: str = "png",
    dpi: int = defaults.FIGURE_DPI,
    fresh: bool = False,
    workers: int = 1,
    ray: str | None = None,
    quiet: bool = True,
    power_cap_w: float | None = None,
    energy_budget_kwh: float | None = None,
    round_s: float = defaults.ROUND_S,
    objective: str | None = None,
    solver: str = REPLAY_REQUEST.solver,
    time_limit: float = REPLAY_REQUEST.time_limit_s,
    threads: int = REPLAY_REQUEST.threads,
    seed: int = REPLAY_REQUEST.seed,
    node_limit: int | None = REPLAY_REQUEST.node_limit,
    max_jobs: int | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    trace_format: str = "auto",
    vc: str | None = None,
    zeus_eta: float = defaults.ZEUS_ETA,
    noise: float = 0.0,
    restart_s: float = defaults.RESTART_S,
    min_pair_rate: float = defaults.MIN_PAIR_RATE,
    delta: float = defaults.DELTA,
    max_jct_increase: float | None = None,
    governor: str = "accrued",
    delta_max: float = defaults.DELTA_MAX,
    tail_bound: float | None = None,
    tail_pace: str = "steady",
    carbon: str | Path | None = None,
    price: str | Path | None = None,
    signal_start: str | None = None,
    signal_aware: bool = True,
    max_rounds: int = defaults.MAX_ROUNDS,
    gpus_per_node: int = defaults.GPUS_PER_NODE,
    node_power_w: float = defaults.NODE_POWER_W,
    profiles: str | Path | None = None,
    truth: str | Path | None = None,
    learn: bool = False,
    replan: str = "rounds",
    horizon: int = 1,
    **unknown: Any,
) -> Results:
    """Replay ``trace`` on ``cluster`` (``v100:32,p100:16``) with each of ``policies``; no command line involved.

    Every keyword is the ``wattplan simulate`` option of that name, with its default and unit (``max_jobs`` is
    ``--max-jobs``, ``power_cap_w`` W, ``max_jct_increase`` and ``tail_bound`` percent); ``quiet=False`` draws the
    progress bar on stderr. The replay runs :func:`planner.sim.session.run_simulate`, the command's own code, and
    writes ``out`` (a new temporary folder when None) as the command does: ``out/<policy>/`` per policy and
    ``out/comparison.csv``. Returns its :class:`~wattplan.results.Results`: ``summary`` (one row per policy),
    ``rounds`` and ``jobs`` (one row per round or job and policy). Bad options raise
    :class:`~planner.contracts.problems.InputError` naming them, an unknown keyword ``TypeError``.
    """
    from wattplan.planner.contracts.provenance import written_by
    from wattplan.planner.sim.plots import FigureOptions, check_figure_options
    from wattplan.planner.sim.session import replay_spec

    _unknown("simulate", unknown, [k for k in inspect.signature(simulate).parameters if k not in ("trace", "unknown")])
    _checked_keywords(simulate, locals())
    given = {**locals(), "policies": [policies] if isinstance(policies, str) else list(policies)}
    spec = replay_spec(trace, **_keywords_of(replay_spec, given))
    figures = FigureOptions(plot_format, dpi)  # type: ignore[arg-type]  # checked on the next line
    check_figure_options(figures)
    stamp = written_by(["wattplan.simulate", str(trace)])
    with _out(out, "wattplan-simulate-") as folder:
        _replay(spec, folder, quiet, plots=plots, figures=figures, fresh=fresh, workers=workers, ray=ray, stamp=stamp)
        return read_results(folder)


def _replay(spec: Any, folder: Path, quiet: bool, *, stamp: dict[str, Any], **options: Any) -> None:
    """:func:`planner.sim.session.run_simulate` into ``folder``, with a progress bar on stderr unless ``quiet``."""
    from wattplan.planner.sim.session import run_simulate

    if quiet:
        run_simulate(spec, folder, written_by=stamp, hooks=_python_hooks(), **options)
        return
    from rich.console import Console

    from wattplan.planner.sim.render import progress_callback, progress_display

    with progress_display(Console(stderr=True)) as bar:
        hooks = _python_hooks()
        hooks.round_progress = lambda name, jobs: progress_callback(bar, name, jobs)
        run_simulate(spec, folder, written_by=stamp, hooks=hooks, **options)


def _python_hooks() -> ReplayHooks:
    """A replay's warnings as Python warnings, its notes to the ``wattplan`` logger."""
    import logging
    import warnings

    from wattplan.planner.sim.session import ReplayHooks

    return ReplayHooks(
        warn=lambda text: warnings.warn(text, UserWarning, stacklevel=3),
        note=logging.getLogger("wattplan").info,
    )


def frontier(
    trace: str | Path,
    *,
    cluster: str,
    out: str | Path | None = None,
    plots: bool = False,
    plot_format: str = "png",
    dpi: int = defaults.FIGURE_DPI,
    workers: int = 2,
    ray: str | None = None,
    deltas: str | Sequence[float] = "0.03,0.1,0.2,0.3",
    max_jct_increase: str | Sequence[float] = "0,5,10,20",
    baselines: str | Sequence[str] = "all",
    objective: str = "efficiency",
    power_cap_w: float | None = None,
    energy_budget_kwh: float | None = None,
    round_s: float = defaults.ROUND_S,
    solver: str = REPLAY_REQUEST.solver,
    time_limit: float = REPLAY_REQUEST.time_limit_s,
    threads: int = REPLAY_REQUEST.threads,
    seed: int = REPLAY_REQUEST.seed,
    node_limit: int | None = REPLAY_REQUEST.node_limit,
    max_jobs: int | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    trace_format: str = "auto",
    vc: str | None = None,
    zeus_eta: float = defaults.ZEUS_ETA,
    noise: float = 0.0,
    restart_s: float = defaults.RESTART_S,
    min_pair_rate: float = defaults.MIN_PAIR_RATE,
    governor: str = "accrued",
    delta_max: float = defaults.DELTA_MAX,
    tail_bound: float | None = None,
    tail_pace: str = "steady",
    carbon: str | Path | None = None,
    price: str | Path | None = None,
    signal_start: str | None = None,
    signal_aware: bool = True,
    max_rounds: int = defaults.MAX_ROUNDS,
    gpus_per_node: int = defaults.GPUS_PER_NODE,
    node_power_w: float = defaults.NODE_POWER_W,
    profiles: str | Path | None = None,
    truth: str | Path | None = None,
    learn: bool = False,
    replan: str = "rounds",
    horizon: int = 1,
    **unknown: Any,
) -> Results:
    """Sweep wattplan's energy knob on ``trace``; no command line involved.

    Every keyword is the ``wattplan frontier`` option of that name (``deltas=[0.03, 0.2]``,
    ``max_jct_increase=[0, 10]`` percent, ``baselines="fifo-max"``; a list may also be a comma-separated string).
    It runs :func:`planner.sim.session.run_frontier`, the command's own code. ``frontier`` holds the sweep's rows;
    ``summary``, ``rounds`` and ``jobs`` every point's replay (``label`` names the point).

    ``workers=1`` replays the points here, one after another; more start that many processes, which run the calling
    script again from its top: a script must then call this under ``if __name__ == "__main__":`` (else an
    :class:`~planner.contracts.problems.InputError` naming ``workers`` says so before anything runs). A replay that
    fails raises :class:`~planner.sim.frontier.ReplayFailed` naming each failed point, after the others.
    """
    from wattplan.planner.sim.frontier import ReplayFailed
    from wattplan.planner.sim.plots import FigureOptions, check_figure_options
    from wattplan.planner.sim.session import frontier_sweep, run_frontier

    _unknown("frontier", unknown, [k for k in inspect.signature(frontier).parameters if k not in ("trace", "unknown")])
    _checked_keywords(frontier, locals())
    sweep = frontier_sweep(trace, **_keywords_of(frontier_sweep, locals()))
    figures = FigureOptions(plot_format, dpi)  # type: ignore[arg-type]  # checked on the next line
    check_figure_options(figures)
    with _out(out, "wattplan-frontier-") as folder:
        try:
            run_frontier(sweep, folder, workers=workers, ray=ray, figures=figures if plots else None)
        except ReplayFailed as exc:  # the temporary folder goes: nothing is saved for a second run
            if out is None:
                raise ReplayFailed(exc.failed, exc.total, None) from None
            raise
        return read_results(folder)


def bench(
    instances: str | Path,
    *,
    out: str | Path | None = None,
    solvers: str | Sequence[str] = "cbc,highs,cpsat,greedy",
    time_limit: float = 10.0,
    seeds: int = 1,
    workers: int | None = None,
    ray: str | None = None,
    gap: float | None = None,
    threads: int = 1,
    memory_limit_mb: int | None = None,
    grace: float | None = None,
    node_limit: int | None = None,
    plot_format: str = "png",
    dpi: int = defaults.FIGURE_DPI,
    **unknown: Any,
) -> Results:
    """Benchmark solvers on a folder of instances (or one instance file); no command line involved.

    Every keyword is the ``wattplan bench`` option of that name (``solvers=["highs", "greedy"]``, ``time_limit=5``
    s per run, ``gap`` relative, None: the planner's default). It runs :func:`planner.bench.session.run_bench_session`,
    the command's own code. ``runs`` has one row per run, ``bench`` one per solver, ``per_instance`` one per instance.
    """
    from wattplan.planner.bench.session import bench_config, run_bench_session
    from wattplan.planner.contracts.request import DEFAULT_REQUEST

    _unknown("bench", unknown, [k for k in inspect.signature(bench).parameters if k not in ("instances", "unknown")])
    _checked_keywords(bench, locals())
    with _out(out, "wattplan-bench-") as folder:
        session = bench_config(
            instances,
            out=folder,
            solvers=solvers,
            time_limit=time_limit,
            seeds=seeds,
            workers=workers,
            ray=ray,
            gap=DEFAULT_REQUEST.rel_gap if gap is None else gap,
            threads=threads,
            memory_limit_mb=memory_limit_mb,
            grace=grace,
            node_limit=node_limit,
            plot_format=plot_format,
            dpi=dpi,
        )
        run_bench_session(session)
        return read_results(folder)
