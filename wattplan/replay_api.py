"""``wattplan.simulate``, ``wattplan.frontier`` and ``wattplan.bench``: the commands from Python, results as DataFrames.

Each function runs the command's own code, in this process, with the options given as keyword arguments (a Python
name is the option's: ``max_jobs=20`` is ``--max-jobs 20``, ``power_cap_w=8000`` is ``--power-cap-w 8000``,
``learn=True`` is ``--learn``, ``learn=False`` is ``--no-learn`` where the command has it; a list repeats the option
or is joined by commas, as the command reads it). Output goes to ``out`` (a new temporary folder when None) and is read
back with :func:`wattplan.results.read_results`, so the frames are exactly what the files hold and a result can be
read again later from its folder. Bad input raises :class:`~planner.contracts.problems.InputError` with every problem,
as the command line reports them.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.contracts.problems import InputError, Problem
from wattplan.results import Results, read_results

REPEATED = {"policy", "variant"}
"""Options a command takes once per value (``-p fifo-max -p wattplan``); other lists are joined with commas."""


def _command(name: str) -> Any:
    """The click command of ``wattplan NAME`` (typer's own click: typed loosely)."""
    import typer

    from planner.cli import app

    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def _flag_names(command: Any) -> dict[str, Any]:
    """Keyword -> click option of ``command``: ``--max-jobs`` is ``max_jobs`` (its arguments left out)."""
    out: dict[str, Any] = {}
    for p in command.params:
        if p.param_type_name != "option":
            continue
        for opt in p.opts:
            if opt.startswith("--"):
                out[opt[2:].replace("-", "_")] = p
    return out


def command_args(command: Any, positional: Sequence[str], options: dict[str, Any]) -> list[str]:
    """The command-line words of ``options`` (module docstring); ``TypeError`` naming an option the command lacks."""
    known = _flag_names(command)
    args = list(positional)
    for key, value in options.items():
        if value is None:
            continue
        param = known.get(key)
        if param is None:
            raise TypeError(f"{command.name}() got an unexpected option {key!r} (options: {', '.join(sorted(known))})")
        long = f"--{key.replace('_', '-')}"
        if param.is_flag:
            if value:
                args.append(long)
            elif param.secondary_opts:
                args.append(max(param.secondary_opts, key=len))
            continue
        if isinstance(value, list | tuple):
            if key in REPEATED:
                for item in value:
                    args += [long, str(item)]
            else:
                args += [long, ",".join(str(v) for v in value)]
        else:
            args += [long, str(value)]
    return args


def run_command(name: str, positional: Sequence[str], options: dict[str, Any]) -> str:
    """Run command ``name`` in this process; its printed output. ``InputError`` when it exits with a problem."""
    command = _command(name)
    args = command_args(command, positional, options)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = command.main(args=args, prog_name=f"wattplan {name}", standalone_mode=False)
    except Exception as exc:  # click's usage errors (typer vendors click: matched by their method)
        if not hasattr(exc, "format_message"):
            raise
        raise InputError(name, [Problem("bad-option", "(options)", exc.format_message())]) from None
    except SystemExit as exc:
        code = exc.code
    if code not in (0, None):  # the command printed its problems: they are the error's message
        text = printed.getvalue().strip() or f"exit code {code}"
        raise InputError(f"wattplan {name}", [Problem("failed", "(command)", text)])
    return printed.getvalue()


def _out(out: str | Path | None, prefix: str) -> Path:
    return Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=prefix)) / "out"


def simulate(
    trace: str | Path,
    *,
    cluster: str,
    policies: Sequence[str] = ("fifo-max", "wattplan"),
    out: str | Path | None = None,
    plots: bool = False,
    **options: Any,
) -> Results:
    """Replay ``trace`` on ``cluster`` (``v100:32,p100:16``) with each of ``policies``.

    Every other option of ``wattplan simulate`` is a keyword (module docstring). Returns the replay's
    :class:`~wattplan.results.Results`: ``summary`` (one row per policy), ``rounds`` and ``jobs`` (one row per round
    or job and policy).
    """
    folder = _out(out, "wattplan-simulate-")
    opts = {"cluster": cluster, "policy": list(policies), "out": str(folder), "plots": plots, "quiet": True}
    run_command("simulate", [str(trace)], opts | options)
    return read_results(folder)


def frontier(
    trace: str | Path, *, cluster: str, out: str | Path | None = None, plots: bool = False, **options: Any
) -> Results:
    """Sweep wattplan's energy knob on ``trace``.

    ``wattplan frontier``'s options are keywords (``deltas=[0.03, 0.2]``, ``baselines="fifo-max"``). ``frontier``
    holds the sweep's rows; ``summary``, ``rounds`` and ``jobs`` every point's replay (``label`` names the point).
    """
    folder = _out(out, "wattplan-frontier-")
    run_command("frontier", [str(trace)], {"cluster": cluster, "out": str(folder), "plots": plots} | options)
    return read_results(folder)


def bench(instances: str | Path, *, out: str | Path | None = None, **options: Any) -> Results:
    """Benchmark solvers on a folder of instances.

    ``wattplan bench``'s options are keywords (``solvers=["highs", "greedy"]``, ``time_limit=5``). ``runs`` has one
    row per run, ``bench`` one per solver, ``per_instance`` one per instance.
    """
    folder = _out(out, "wattplan-bench-")
    run_command("bench", [str(instances)], {"out": str(folder), "quiet": True} | options)
    return read_results(folder)
