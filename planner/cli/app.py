"""The ``wattplan`` typer app and what every command shares.

The app, its sub-command groups (``instance``, ``profiles``, ``cluster``) and ``--version``; the words of the
command line for the provenance of written files; the consoles; the error handling and the exit codes; the
printers of an answer; and :func:`main`, the console script. It imports no command module: those import it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import typer
from rich.console import RenderableType

from wattplan.planner.console.formats import OutputFormat, Section, sections_text
from wattplan.planner.console.terminal import shown, terminal_console
from wattplan.planner.contracts.problems import InputError, Problem, RunFailed

HELP_SETTINGS: dict[str, Any] = {"max_content_width": 80}
"""Help text at most 80 columns wide, whatever the terminal (plain click help, no rich panels)."""

app = typer.Typer(
    name="wattplan",
    help="Energy-aware batch planner for GPU clusters: plan a round of training jobs under an energy budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: it wraps at the terminal's width and never truncates an option
    context_settings=HELP_SETTINGS,
)
instance_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="Build and check round instances (wattplan.instance/1).",
    no_args_is_help=True,
)
profiles_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="Job profiles: build from the shipped Gavel and Zeus data, ingest measurements, fit, check, make a truth.",
    no_args_is_help=True,
)
cluster_app = typer.Typer(
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
    help="An emulated GPU cluster on this host (real Slurm, munge and Prometheus; emulated GPUs) for tests, "
    "benchmarks and demos of `wattplan agent`.",
    no_args_is_help=True,
)


def _print_version(value: bool) -> None:
    """``--version``: print ``wattplan X.Y.Z`` and stop."""
    if value:
        from wattplan.planner.contracts.provenance import wattplan_version

        typer.echo(f"wattplan {wattplan_version()}")
        raise typer.Exit()


@app.callback()
def wattplan_options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print wattplan's version and exit."),
    ] = False,
) -> None:
    """Energy-aware batch planner for GPU clusters: plan a round of training jobs under an energy budget."""
    if not COMMAND_LINE:  # called from Python (tests): the words click has left to parse are the whole command
        words = list(ctx.args)
        if ctx.invoked_subcommand and words[:1] != [ctx.invoked_subcommand]:
            words.insert(0, ctx.invoked_subcommand)
        COMMAND_LINE[:] = words
        ctx.call_on_close(COMMAND_LINE.clear)


COMMAND_LINE: list[str] = []
"""The words of this run's command line after ``wattplan``: set by :func:`main`, or, when the app is called from
Python (tests), by the app's callback from the words click has yet to parse (cleared when the command ends)."""


def output_provenance() -> dict[str, Any]:
    """The ``written_by`` record of every JSON file this run writes (planner.contracts.provenance)."""
    from wattplan.planner.contracts.provenance import written_by

    return written_by(["wattplan", *COMMAND_LINE])


app.add_typer(instance_app, name="instance")
app.add_typer(profiles_app, name="profiles")
app.add_typer(cluster_app, name="cluster")

out = terminal_console()  # no control character of user text reaches the terminal; ":name:" stays text
err = terminal_console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


class ExitCode:
    """The command line's exit codes (see the module docstring)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2


def report_problems(source: str, problems: list[Problem], title: str) -> None:
    """Print a heading naming ``source`` and a table of problems (path, message, code) to standard error.

    The heading is a line of its own that is never wrapped (``soft_wrap``): as a table title it was wrapped to the
    table's width, cutting the file's name in two (a path longer than the table was named nowhere whole).
    """
    from wattplan.planner.console.tables import problems_heading, problems_table

    err.print(problems_heading(title, source, len(problems)), soft_wrap=True)
    err.print(problems_table(problems))


def handles_errors(fn: F) -> F:
    """Turn expected failures into a message and an exit code, in one place."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            report_problems(exc.source, exc.problems, "bad input")
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except FileNotFoundError as exc:
            err.print(f"[bold red]error:[/] no such file: {shown(exc.filename)}")
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except (ValueError, OSError, RunFailed) as exc:
            err.print(f"[bold red]error:[/] {shown(exc)}")
            raise typer.Exit(ExitCode.FAILED) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("WATTPLAN_DEBUG"):
                raise
            err.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {shown(exc)}\n"
                "this is a wattplan bug; run again with WATTPLAN_DEBUG=1 for the traceback and report it"
            )
            raise typer.Exit(ExitCode.FAILED) from None

    return wrapper  # type: ignore[return-value]


def print_answer(
    fmt: OutputFormat, tables: Callable[[], Sequence[RenderableType]], sections: Callable[[], Sequence[Section]]
) -> None:
    """Print a command's answer: its rich ``tables`` for ``table``, else its ``sections`` as JSON or CSV."""
    if fmt == OutputFormat.table:
        from wattplan.planner.console.tables import folded

        for t in tables():
            out.print(folded(t))
    else:
        typer.echo(sections_text(sections(), fmt), nl=False)


def say(fmt: OutputFormat, markup: str) -> None:
    """A line beside the answer: on standard output with tables, on standard error with JSON or CSV."""
    (out if fmt == OutputFormat.table else err).print(markup)


def _prior_notes(added: Sequence[str]) -> None:
    """A note for each GPU type planned from its prior (design §9.8), with the prior's expected error."""
    from wattplan.planner.profile_library.priors import load_gpu_specs

    if not added:
        return
    specs = load_gpu_specs()
    told = specs.error.summary() if specs.error else "expected error not measured"
    for name in added:
        err.print(
            f"[yellow]note:[/] {shown(name)} has no profiles: planned from a prior scaled from the V100 by its "
            f"specs; {told}"
        )


def left_out_lines(left_out: Mapping[str, str] | None) -> list[str]:
    """``not planned: HOST (why)`` for each host a job list's cluster file left out of planning, by host name."""
    return [f"  not planned: {shown(host)} ({shown(why)})" for host, why in sorted((left_out or {}).items())]


def main() -> None:
    """Console-script entry point."""
    import sys

    COMMAND_LINE[:] = sys.argv[1:]
    app()
