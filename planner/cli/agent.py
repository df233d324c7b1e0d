"""``wattplan agent``: the control loop on a live Slurm cluster.

Its options are :class:`planner.agent.options.AgentOptions`, generated here (``planner.cli.faces``); the loop reads
the same record (:func:`planner.agent.run.start_agent`).
"""

from __future__ import annotations

from typing import Any

import typer

from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.cli.app import app, handles_errors
from wattplan.planner.cli.faces import options_of, record_values


@app.command()
@handles_errors
@options_of(AgentOptions)
def agent(**given: Any) -> None:
    """Run the control loop on a Slurm cluster: read the queue, observe, plan, apply; every --round-s.

    A job opts in with sbatch --hold --comment='wattplan:type=TYPE;steps=STEPS' and is managed only if its user
    or account is allowed (--allow-user, --allow-account); no other job is touched, and no administrator's hold
    is ever released.

    Install the node scripts (planner/agent/node_files) so that power limits reach the GPUs.
    """
    from wattplan.planner.agent.run import start_agent

    options = AgentOptions.checked(record_values(AgentOptions, given))
    raise typer.Exit(start_agent(options))
