"""``wattplan agent``: the control loop on a live Slurm cluster, and ``wattplan agent check``.

Its options are :class:`planner.agent.options.AgentOptions`, generated here (``planner.cli.faces``); the loop reads
the same record (:func:`planner.agent.run.start_agent`). ``--config FILE`` reads them from a TOML file
(:mod:`planner.contracts.option_files`), the flags given on the command line over it. ``agent check`` takes the
same options and says, before the agent touches anything, what of the cluster it would use is missing
(:mod:`planner.agent.check`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.cli.app import HELP_SETTINGS, app, handles_errors, out
from wattplan.planner.cli.faces import options_of, record_values, typed_on_command_line
from wattplan.planner.contracts.problems import InputError, Problem

CONFIG_HEADER = "wattplan agent --config FILE: one key per option, named as its flag (docs/deploy-slurm.md)"
"""The first line of the file ``--print-config`` writes."""
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="A TOML file of the options (keys named as the flags: max-jct-increase = 5); flags given here "
        "override it; relative paths are read from its folder.",
        metavar="FILE",
    ),
]

agent_app = typer.Typer(rich_markup_mode=None, context_settings=HELP_SETTINGS)
app.add_typer(agent_app, name="agent")


def _options(ctx: typer.Context, config: Path | None, given: dict[str, Any]) -> AgentOptions:
    """The checked options: ``--config``'s, then the flags given on the command line over them."""
    from wattplan.planner.contracts.option_files import config_values

    values = record_values(AgentOptions, given)
    if config is not None:
        typed = record_values(AgentOptions, typed_on_command_line(ctx, given))
        values = {**values, **config_values(AgentOptions, config), **typed}
    return AgentOptions.checked(values)


@agent_app.callback(invoke_without_command=True)
@handles_errors
@options_of(AgentOptions)
def agent(
    ctx: typer.Context,
    config: ConfigFile = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config", help="Print the options (--config's, then the flags') as such a file; run nothing."
        ),
    ] = False,
    **given: Any,
) -> None:
    """Run the control loop on a Slurm cluster: read the queue, observe, plan, apply; every --round-s.

    A job opts in with sbatch --hold --comment='wattplan:type=TYPE;steps=STEPS' and is managed only if its user
    or account is allowed (--allow-user, --allow-account); no other job is touched, and no administrator's hold
    is ever released.

    Install the node scripts (planner/agent/node_files) so that power limits reach the GPUs. Before the first
    run: wattplan agent check, with the same options, says what is missing (docs/deploy-slurm.md).
    """
    if ctx.invoked_subcommand is not None:
        if typed := typed_on_command_line(ctx, {**given, "config": config, "print_config": print_config}):
            where = f"give them after `agent {ctx.invoked_subcommand}`"
            flags = ", ".join(sorted("--" + name.replace("_", "-") for name in typed))
            raise InputError("options", [Problem("misplaced-option", flags, where)])
        return
    from wattplan.planner.agent.run import start_agent
    from wattplan.planner.contracts.option_files import config_text

    options = _options(ctx, config, given)
    if print_config:
        typer.echo(config_text(options, CONFIG_HEADER), nl=False)
        return
    raise typer.Exit(start_agent(options))


@agent_app.command("check")
@handles_errors
@options_of(AgentOptions)
def check(ctx: typer.Context, config: ConfigFile = None, **given: Any) -> None:
    """Check, touching nothing, that the agent can work on this cluster; exit 0 when nothing is missing.

    Takes the agent's options (and --config): Slurm's version and JSON, scontrol's permissions, power saving
    against --power-save, the node scripts in slurm.conf, the settings folder, Prometheus and DCGM's metrics
    with their job labels. Each finding is ok, warn (the agent runs without something it would use) or missing
    (exit 1), in the operator's words.
    """
    from rich.table import Table

    from wattplan.planner.agent.check import exit_code, run_checks
    from wattplan.planner.agent.run import check_target

    options = _options(ctx, config, given)
    found = run_checks(check_target(options))
    table = Table(title="wattplan agent check", title_justify="left")
    for column in ("check", "verdict", "what was found"):
        table.add_column(column, overflow="fold")
    style = {"ok": "green", "warn": "yellow", "missing": "bold red"}
    for f in found:
        table.add_row(f.check, f"[{style[f.verdict]}]{f.verdict}[/]", f.detail)
    out.print(table)
    missing = sum(f.verdict == "missing" for f in found)
    warned = sum(f.verdict == "warn" for f in found)
    out.print(f"{missing} missing, {warned} warning(s)" + ("" if missing else ": the agent can run here"))
    raise typer.Exit(exit_code(found))


@agent_app.command("report")
@handles_errors
def report(
    state: Annotated[
        Path | None, typer.Option("--state", help="The agent's SQLite state file.", metavar="FILE")
    ] = None,
    cluster: Annotated[
        Path | None,
        typer.Option("--cluster", help="An emulated cluster's folder: its agent.db.", metavar="DIR"),
    ] = None,
    since_h: Annotated[
        float | None,
        typer.Option("--since-h", help="Only rounds and job arrivals this many hours after the first round, or later."),
    ] = None,
    until_h: Annotated[
        float | None,
        typer.Option("--until-h", help="Only rounds and job arrivals up to this many hours after the first round."),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the report as JSON here.", metavar="FILE")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Also draw jobs and GPU power over the period here (PNG).", metavar="FILE"),
    ] = None,
) -> None:
    """Summarise what the agent did, from its state (read-only: safe while it runs).

    Rounds and the time they took, Slurm calls by outcome, managed jobs by how they ended, restarts, completed
    jobs' average and p95 JCT, the GPU energy DCGM measured for the managed jobs, and with --learn the idle power
    and rates the learner was shown. Without --state or --cluster: ./wattplan-agent.db, the agent's default.
    """
    from rich.table import Table

    from wattplan.planner.agent.report import agent_report, report_figure, report_rows
    from wattplan.planner.contracts.jsonio import write_json_atomic

    if state is not None and cluster is not None:
        raise InputError("options", [Problem("conflicting-options", "--state", "give --state or --cluster, not both")])
    path = AgentOptions(state=state, cluster=cluster).state_path()
    for name, hours in (("--since-h", since_h), ("--until-h", until_h)):
        if hours is not None and not (0 <= hours < float("inf")):
            raise InputError("options", [Problem("bad-option", name, f"must be a number of hours >= 0, got {hours}")])
    found = agent_report(
        path, None if since_h is None else since_h * 3600.0, None if until_h is None else until_h * 3600.0
    )
    table = Table(title=f"wattplan agent report: {path}", title_justify="left")
    table.add_column("what")
    table.add_column("value", overflow="fold")
    for what, value in report_rows(found):
        table.add_row(what, value)
    out.print(table)
    if json_out is not None:
        write_json_atomic(json_out, found.to_json())
    if plot is not None:
        from wattplan.planner.sim.plots import save_figure

        save_figure(report_figure(found), plot)
