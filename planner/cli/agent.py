"""``wattplan agent``: the control loop on a live Slurm cluster.

Its options are :class:`planner.agent.options.AgentOptions`, generated here (``planner.cli.faces``); the loop reads
the same record (:func:`planner.agent.run.start_agent`). ``--config FILE`` reads them from a TOML file
(:mod:`planner.contracts.option_files`), the flags given on the command line over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.cli.app import app, handles_errors
from wattplan.planner.cli.faces import options_of, record_values, typed_on_command_line

CONFIG_HEADER = "wattplan agent --config FILE: one key per option, named as its flag (docs/deploy-slurm.md)"
"""The first line of the file ``--print-config`` writes."""


@app.command()
@handles_errors
@options_of(AgentOptions)
def agent(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="A TOML file of the options (keys named as the flags: max-jct-increase = 5); flags given here "
            "override it; relative paths are read from its folder.",
            metavar="FILE",
        ),
    ] = None,
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

    Install the node scripts (planner/agent/node_files) so that power limits reach the GPUs.
    """
    from wattplan.planner.agent.run import start_agent
    from wattplan.planner.contracts.option_files import config_text, config_values

    values = record_values(AgentOptions, given)
    if config is not None:
        typed = record_values(AgentOptions, typed_on_command_line(ctx, given))
        values = {**values, **config_values(AgentOptions, config), **typed}
    options = AgentOptions.checked(values)
    if print_config:
        typer.echo(config_text(options, CONFIG_HEADER), nl=False)
        return
    raise typer.Exit(start_agent(options))
