"""``wattplan.simulate``, ``wattplan.frontier`` and ``wattplan.bench``: the commands from Python, results as DataFrames.

Each is a library call with typed keywords (:mod:`planner.sim.session`, :mod:`planner.bench.session`: the code the
command line calls too; no click is imported): a keyword is the option of that name (``max_jobs=20`` is
``--max-jobs 20``, ``power_cap_w=8000`` is ``--power-cap-w 8000``, ``learn=True`` is ``--learn``,
``power_save=True`` is ``--power-save``; a list option takes a sequence or the command line's comma-separated
string). ``simulate`` and ``frontier`` take the options of their records (:mod:`planner.sim.options`), their
signatures generated from them and each value checked by them as the command line's. Output goes to ``out`` (a new
temporary folder when None)
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
from typing import Any

from wattplan.keywords import check_keywords
from wattplan.planner.bench.options import BenchOptions
from wattplan.planner.contracts.options import keyword_signature
from wattplan.planner.sim.options import FrontierOptions, SimulateOptions
from wattplan.results import Results, read_results


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


def _keywords(function: Callable[..., Any]) -> list[str]:
    """The keywords ``function`` takes: its signature's (generated from its record), its first argument aside."""
    return list(inspect.signature(function).parameters)[1:]


def _unknown(function: str, unknown: dict[str, Any], known: Sequence[str]) -> None:
    """``TypeError`` naming the first keyword of ``unknown`` that ``function`` has not, and every one it has."""
    if unknown := {k: v for k, v in unknown.items() if k not in known}:
        first = next(iter(unknown))
        raise TypeError(f"{function}() got an unexpected option {first!r} (options: {', '.join(sorted(known))})")


def simulate(
    trace: str | Path,
    *,
    cluster: str,
    policies: Sequence[str] | None = None,
    out: str | Path | None = None,
    plots: bool = False,
    quiet: bool = True,
    **options: Any,
) -> Results:
    """Replay ``trace`` on ``cluster`` (``v100:32,p100:16``) with each of ``policies``; no command line involved.

    ``options`` are ``wattplan simulate``'s, by the fields of :class:`~planner.sim.options.SimulateOptions`
    (``max_jobs`` is ``--max-jobs``, ``power_cap_w`` W, ``max_jct_increase`` and ``tail_bound`` percent;
    ``help(wattplan.simulate)`` lists them all), each with its default and checked by the same record as the
    command line's option, with the same message; a path may be a text. ``plots`` (the command line writes
    figures unless ``--no-plots``) and ``policies`` (it replays wattplan alone; here Slurm alone and wattplan) have
    defaults of their own; ``quiet=False`` draws the progress bar on stderr. Each policy runs the agent's loop on a
    simulated Slurm, the command's own code (:func:`planner.control.session.slurm_replays`), and ``out`` (a new
    temporary folder when None) is written as the command does: ``out/<policy>/`` per policy and
    ``out/comparison.csv``. Returns its :class:`~wattplan.results.Results`: ``summary`` (one row per policy) and
    ``jobs`` (one row per job and policy). Bad options raise
    :class:`~planner.contracts.problems.InputError` naming them, an unknown keyword ``TypeError``.
    """
    from wattplan.planner.contracts.provenance import written_by

    _unknown("simulate", options, _keywords(simulate))
    _checked_keywords(simulate, locals())
    opts = SimulateOptions.checked(options)
    if policies is None:
        policies = ("slurm", "wattplan")
    names = [policies] if isinstance(policies, str) else list(policies)
    stamp = written_by(["wattplan.simulate", str(trace)])
    with _out(out, "wattplan-simulate-") as folder:
        _replay_on_slurm(trace, cluster, opts, names, folder, quiet, plots=plots, stamp=stamp)
        return read_results(folder)


simulate.__signature__ = keyword_signature(simulate, SimulateOptions)  # type: ignore[attr-defined]


def _replay_on_slurm(
    trace: str | Path,
    cluster: str,
    opts: SimulateOptions,
    names: Sequence[str],
    folder: Path,
    quiet: bool,
    *,
    plots: bool,
    stamp: dict[str, Any],
) -> None:
    """:func:`planner.control.session.slurm_replays` into ``folder``, with a progress bar on stderr unless ``quiet``."""
    from wattplan.planner.control.session import SlurmHooks, progress_bar_hook, slurm_replays

    if quiet:
        slurm_replays(trace, cluster, opts, names, folder, plots=plots, written_by=stamp)
        return
    from rich.console import Console

    from wattplan.planner.sim.render import progress_display

    with progress_display(Console(stderr=True)) as bar:
        hooks = SlurmHooks(progress=lambda name, jobs: progress_bar_hook(bar, name, jobs))
        slurm_replays(trace, cluster, opts, names, folder, hooks, plots=plots, written_by=stamp)


def frontier(
    trace: str | Path,
    *,
    cluster: str,
    out: str | Path | None = None,
    plots: bool = False,
    **options: Any,
) -> Results:
    """Sweep wattplan's energy knob on ``trace``; no command line involved.

    ``options`` are ``wattplan frontier``'s, by the fields of :class:`~planner.sim.options.FrontierOptions`
    (``deltas=[0.03, 0.2]``, ``max_jct_increase=[0, 10]`` percent, ``baselines="fifo-max"``; a list may also be a
    comma-separated string, a path a text), each with its default and checked by the same record as the command
    line's option; ``plots`` (the command line plots unless ``--no-plots``) has a default of its own. It runs
    :func:`planner.control.frontier.run_slurm_frontier`, the command's own code: every point the agent's loop on a
    simulated Slurm. ``frontier`` holds the sweep's rows; ``summary`` and ``jobs`` every point's replay (``label``
    names the point).

    ``workers=1`` replays the points here, one after another; more start that many processes, which run the calling
    script again from its top: a script must then call this under ``if __name__ == "__main__":`` (else an
    :class:`~planner.contracts.problems.InputError` naming ``workers`` says so before anything runs). A replay that
    fails raises :class:`~planner.sim.frontier.ReplayFailed` naming each failed point, after the others.
    """
    from wattplan.planner.control.frontier import run_slurm_frontier, slurm_frontier_sweep
    from wattplan.planner.sim.frontier import ReplayFailed

    _unknown("frontier", options, _keywords(frontier))
    _checked_keywords(frontier, locals())
    opts = FrontierOptions.checked(options)
    sweep = slurm_frontier_sweep(trace, cluster, opts)
    figures = opts.figures() if plots else None
    with _out(out, "wattplan-frontier-") as folder:
        try:
            run_slurm_frontier(sweep, folder, workers=opts.workers, ray=opts.ray, figures=figures)
        except ReplayFailed as exc:  # the temporary folder goes: nothing is saved for a second run
            if out is None:
                raise ReplayFailed(exc.failed, exc.total, None) from None
            raise
        return read_results(folder)


frontier.__signature__ = keyword_signature(frontier, FrontierOptions)  # type: ignore[attr-defined]


def bench(instances: str | Path, *, out: str | Path | None = None, **options: Any) -> Results:
    """Benchmark solvers on a folder of instances (or one instance file); no command line involved.

    ``options`` are ``wattplan bench``'s, by the fields of :class:`~planner.bench.options.BenchOptions` (``solvers``
    a list or the command line's comma-separated text, ``time_limit=5`` s per run, ``gap`` relative, ``seeds``,
    ``workers``, ``memory_limit_mb`` MiB...; ``help(wattplan.bench)`` lists them all), each with its default and
    checked by the same record as the command line's option, with the same message (``seeds (--seeds): must be in
    [1, 1000], got 0``). It runs :func:`planner.bench.session.run_bench_session`, the command's own code. ``runs`` has
    one row per run, ``bench`` one per solver, ``per_instance`` one per instance. An unknown keyword is a
    ``TypeError``.
    """
    from wattplan.planner.bench.session import bench_config, run_bench_session

    _unknown("bench", options, _keywords(bench))
    _checked_keywords(bench, {"instances": instances, "out": out})
    opts = BenchOptions.checked(options)
    with _out(out, "wattplan-bench-") as folder:
        run_bench_session(bench_config(instances, out=folder, options=opts))
        return read_results(folder)


bench.__signature__ = keyword_signature(bench, BenchOptions)  # type: ignore[attr-defined]
