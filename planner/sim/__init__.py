"""Trace replay: a round-by-round simulator and the policies it compares (docs/design.md §10).

The simulator replays a job trace on a cluster one round of ``T`` seconds at a time. Every round each policy
sees the same kind of round instance, returns allocations, and the engine places them, checks the plan with
the validator, advances the jobs exactly as :func:`planner.core.economics.job_outcome` predicts and charges
the round's energy.

- ``workload``: from a trace file to the jobs a replay runs; ``state``: one replayed job between rounds.
- ``round_instance``: the round instance every policy sees, and the round's rules.
- ``policies``: the policies behind one interface (fifo-max, fifo-maxq, zeus, eaco, powerflow, wattplan).
- ``engine``: the round loop; ``accounting``: a round's energy; ``telemetry``: what a round shows.
- ``decision_memo``: the last decision reused while the round stays the same; ``journal``: a replay streamed
  to its folder, checkpointed and resumed; ``forecast``: how long a replay will take, said before it starts.
- ``budget``: none, a power cap, or a paced energy budget; ``signals``: hourly carbon and price signals;
  ``governor``: each round's ``delta`` steered by the JCT (the runtime-bounded energy mode);
  ``tail_bound``: each job's deadline from the reference, as the round's ``min_steps``;
  ``slurm_starts``: the Slurm start rule, the jobs Slurm would run now as the round's ``min_steps``;
  ``p95_cases``: a p95 JCT limit as finitely many cases of per-job windows (the aim by intervals).
- ``energy_levers``: a round's energy split by lever (setting, GPU count and type, pairing, idle GPUs, restarts).
- ``learning``: online profile learning from each round's observations.
- ``metrics``: a replay's summary; ``output``, ``plots``, ``render``: its files, figures and console tables.
- ``replay``: a replay specified, prepared and run for the command line and the benchmarks.
- ``options``: the replay's options declared once (``ReplayOptions``, ``SimulateOptions``, ``FrontierOptions``):
  the commands are generated from them and the Python API checks its keywords with them.
- ``session``: one ``simulate`` run from its checked options to its output folder, shared by ``wattplan simulate``
  and :func:`wattplan.simulate`.
- ``frontier``: the energy-JCT frontier: the knob swept in parallel, every baseline beside it.
"""
