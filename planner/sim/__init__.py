"""Trace replay: a round-by-round simulator and the policies it compares (docs/design.md §10).

The simulator replays a job trace on a cluster one round of ``T`` seconds at a time.
Every round each policy sees the same kind of round instance (:mod:`.round_instance`),
returns allocations (:mod:`.policies`), and the engine (:mod:`.engine`) places them with
:func:`planner.core.assemble.assemble_plan`, checks the plan with :func:`planner.core.validate.validate_plan`,
advances the jobs exactly as :func:`planner.core.economics.job_outcome` predicts and charges the
round's energy (:mod:`.accounting`). :mod:`.metrics` summarises a replay, :mod:`.output` and
:mod:`.plots` write it, :mod:`.replay` ties it together for the CLI and the benchmark.
"""
