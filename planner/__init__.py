"""wattplan's planner, one sub-package per layer; a module imports its own layer or lower ones (docs/design.md §8).

Layers, lowest first (the rank in brackets; layers of one rank never import each other):

- ``contracts`` [0]: the vocabulary and the file contracts: types, defaults, problems, the instance, plan and
  profile files and their checks, the plan request and the round's rules.
- ``files`` [1]: where the shipped data lives, output paths that must not overwrite inputs, strict CSV reading.
- ``console`` [1]: what the command line reads and prints: list options, safe text, tables.
- ``core`` [2]: the arithmetic of an allocation and every plan made or checked without a solver: economics,
  greedy, placement, assembly, evaluation, validation.
- ``profile_library`` [3]: the profile library's type and loader, the shipped library's builder and mapping.
- ``rounds`` [4]: trace readers and the round instance cut from a trace's queue.
- ``profiling`` [4]: profiles from measurements: ingest, fit, check, truth.
- ``formulations`` [5] (a package of its own): the round model, its backends and the solve strategy; the only
  code that loads a solver library.
- ``planning`` [6]: the front door, the only module that imports ``formulations``: plan a round, the energy
  floor, model exports.
- ``executor`` [6]: one function over many tasks in processes, threads or Ray.
- ``launch`` [7]: plans rendered for Slurm, Kubernetes and node scripts (reads plans, never plans).
- ``sim`` [7]: what the loop and its replays are built from: the workload, the round instance, the policies, the
  steering (governor, tail bound, budget, signals, learner), the replay's options and the frontier's points.
- ``bench`` [7]: solver benchmarks and the benchmark instance families and sets.
- ``agent`` [8]: ``wattplan agent``, the control loop on a live Slurm: the version probe, readers of
  ``squeue``/``sinfo --json``, the grouped ``scontrol``/``scancel`` actions, Prometheus, the state in SQLite. It
  ranks above ``sim`` because it reuses the replay's round instance, governor and learner.
- ``control`` [9]: the GPUs' truth model and a simulated Slurm on a virtual clock, on which the agent's loop runs
  as a replay (``wattplan simulate``): one scheduler, two clusters.
- ``cluster`` [10]: an emulated GPU cluster on one host (real Slurm, munge and Prometheus, emulated GPUs) for tests,
  benchmarks and the demo.
- ``cli`` [11] and ``__main__``: the ``wattplan`` command, a thin layer over the above.

``tests/test_layering.py`` checks these rules from the imports.
"""

if __name__.partition(".")[0] != "wattplan":  # imported as a top-level name from a checkout: a second copy of it
    raise ImportError(f"import wattplan.{__name__}, not {__name__} (docs/design.md §8.2)")
