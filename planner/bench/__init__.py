"""``wattplan bench``: every solver on every instance of a set, each run in a fresh process, MIPLIB-style summary.

* :mod:`planner.bench.runner`: the sweep. Instances (a folder, its ``manifest.csv``, or one
  file) times solvers times seeds; each run is ``python -m wattplan.planner.bench.worker`` in a new
  process group under a hard wall deadline; failures (crash, hang, out of memory, error) are
  results, never fatal; finished runs are saved one file each and skipped on a rerun.
* :mod:`planner.bench.worker`: the child process, which plans through the front door
  :func:`planner.planning.plan` and writes one JSON result.
* :mod:`planner.bench.check`: the wrong-result check: each run's plan re-read, validated and re-evaluated,
  its bound held against every valid plan.
* :mod:`planner.bench.incumbents`: the incumbent timeline of a plan (from its solve report).
* :mod:`planner.bench.summary`: pure maths: gaps, shifted geometric means, the primal
  integral, Dolan-More performance profiles, the per-solver table.
* :mod:`planner.bench.comparison`: solvers side by side (pandas): the per-instance table, the virtual
  best, wins, the interval over seeds, heuristics on their own, the search effort.
* :mod:`planner.bench.report`: ``runs.csv``, ``runs.jsonl``, ``summary.csv``, ``per_instance.csv``,
  ``report.md`` and ``profile.png``.
* :mod:`planner.bench.options`: ``BenchOptions``, every option of ``wattplan bench`` and :func:`wattplan.bench`
  declared once (default, unit, range, help).
* :mod:`planner.bench.session`: one bench from its checked options to its report, shared by ``wattplan bench`` and
  :func:`wattplan.bench`.

Benchmark instances (``wattplan instance sweep``):

* :mod:`planner.bench.round_families`: rounds of N jobs of three families, ``trace``, ``sampled`` and ``long``.
* :mod:`planner.bench.instance_sets`: reproducible sets of them, one file per (size, budget, seed), and a manifest.

Parallel runs go through :func:`planner.executor.run_tasks` (threads that each drive one
worker process, or Ray tasks that run the worker on their node).
"""
