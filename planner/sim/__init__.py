"""What a replay and the loop share: the workload, the round instance, the policies and the steering (design §10).

The scheduler is one loop (:mod:`planner.agent.loop`) that runs live on Slurm and, in ``wattplan simulate``, on a
simulated Slurm (:mod:`planner.control`). This package holds what that loop and its replays are built from:

- ``workload``: from a trace file to the jobs a replay runs; ``state``: one job's record between rounds.
- ``round_instance``: the round instance every policy sees, and the round's rules.
- ``policies``: the policies behind one interface (fifo-max, fifo-maxq, zeus, eaco, powerflow, wattplan).
- ``accounting``: energy split by where it goes; ``telemetry``: what the learner is shown of a window;
  ``forecast``: how long a replay will take, said before it starts.
- ``budget``: an energy budget per period, paced round by round; ``signals``: hourly carbon and price signals;
  ``governor``: each round's ``delta`` steered by the JCT (the runtime-bounded energy mode);
  ``tail_bound``: each job's deadline from the reference, as the round's ``min_steps``;
  ``slurm_starts``: the Slurm start rule, the jobs Slurm would run now as the round's ``min_steps``;
  ``pinned``: under that rule, running jobs kept where they run (no round restarts one);
  ``p95_cases``: a p95 JCT limit as finitely many cases of per-job windows (the aim by intervals).
- ``learning``: online profile learning from observed windows.
- ``metrics``: JCT statistics, the captured share, the Pareto front; ``output``, ``plots``, ``render``: the
  comparison and dropped-job files, figures and the progress display.
- ``replay``: a replay specified and prepared (the workload and the cluster context).
- ``options``: the replay's options declared once (``ReplayOptions``, ``SimulateOptions``, ``FrontierOptions``):
  the commands are generated from them and the Python API checks its keywords with them.
- ``session``: ``simulate``'s and ``frontier``'s options to a checked spec, shared by the commands and
  :func:`wattplan.simulate`.
- ``frontier``: the energy-JCT frontier's points, their resume, rows, front and files.

(The round-based replay that once lived here, ``engine``, ``journal`` and ``decision_memo``, was removed: its figures
in benchmarks/RESULTS.md are labelled.)
"""
