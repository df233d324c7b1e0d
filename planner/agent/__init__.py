"""The Slurm side of ``wattplan agent`` (issue 24): read the queue and the nodes, send the fewest Slurm calls.

The control loop itself is not built yet (docs/design.md §11.6). Modules:

- :mod:`planner.agent.commands`: one external command run as an argv list, its result, and the error for a
  command that could not give an answer
- :mod:`planner.agent.slurm_version`: the Slurm version (``sinfo --version``) and whether the agent supports it
  (22.05.x, whose JSON is OpenAPI v0.0.38)
- :mod:`planner.agent.slurm_queue`: strict readers of ``squeue --json`` and ``sinfo --json``: the jobs that
  opted in (``--comment=wattplan:type=...;steps=...``) and the nodes
- :mod:`planner.agent.slurm_actions`: hold, update, release, requeue-hold and cancel as data, grouped into the
  fewest ``scontrol``/``scancel`` calls, and applied (or only listed, in a dry run)
"""
