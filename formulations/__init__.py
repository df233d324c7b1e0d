"""The round model, written once, the solve strategy, and the solver backends that compile it (docs/design.md §3-§5).

Layer 5 of docs/design.md §8: imports only :mod:`planner.contracts` and :mod:`planner.core`; reached from the rest of
the planner only through the front door, :mod:`planner.planning`.

- The model: ``options`` (options and safe pruning), ``round_model`` (the compact pair form), ``ir`` (the
  backend-neutral linear model), ``scaling`` (CP-SAT's integer relaxation), ``conditioning`` (rows and objective
  scaled for floating-point solvers).
- The strategy: ``solve`` (the entry, :func:`~formulations.solve.solve_round`), ``objectives`` (one strategy per
  objective), ``stages`` (the stages under one clock), ``relaxation`` (the LP bound and the core),
  ``column_generation``, ``lp_rounding`` (the LP-guided plan), ``lagrangian`` and ``verdict`` (proven bounds and
  the ``optimal`` verdict), ``watchdog`` (each solve in a child process under a deadline).
- Beside planning: ``energy_floor`` (the floor LP), ``mps`` (the one MPS writer), ``stage_export`` (both stages
  exported), ``solution_io`` and ``external_plan`` (an outside solver's solution read back as a plan),
  ``solution_bound`` (its gap to wattplan's LP bound).
- ``backends``: the registry and one module per solver library.
"""

if __name__.partition(".")[0] != "wattplan":  # imported as a top-level name from a checkout: a second copy of it
    raise ImportError(f"import wattplan.{__name__}, not {__name__} (docs/design.md §8.2)")
