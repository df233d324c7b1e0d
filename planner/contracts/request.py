"""What a user asks of one planning call: :class:`PlanRequest`, with every solve default.

The command line, the replay and the benchmarks build a ``PlanRequest`` and hand it to the
one front door, :func:`planner.planning.plan`; nothing else holds a solver default. The
replay's own defaults (a shorter limit per round, one thread, no LP bound) are
:data:`REPLAY_REQUEST`, derived from the same class.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from wattplan.planner.contracts.domain import Objective

GREEDY: Final = "greedy"
"""The solver name of the greedy plan (no optimisation model, no solver library)."""
EXPORT_SUFFIXES: Final = (".mps", ".lp")


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """Solve options; ``objective=None`` keeps the instance's own objective.

    * ``solver``: ``highs`` (default), any other backend of the registry (:data:`planner.planning.SOLVER_NAMES`),
      ``pulp:NAME`` or ``greedy``.
      HiGHS is the default because its own dual bound certified every plan of the bound audit within the gap
      (24 of 24 rounds of three families, 30-2,000 jobs; CBC, which reports no bound, 11 of 24:
      benchmarks/RESULTS.md, "Honest bounds");
    * ``time_limit_s``: wall seconds for the whole call (> 0), reading nothing, planning,
      placing and validating included;
    * ``rel_gap``: relative gap at which a solve may stop, in ``[0, 1)``;
    * ``threads`` (>= 1) and ``seed`` (>= 0) are passed to the solver;
    * ``node_limit``: branch-and-bound nodes per MIP stage (>= 1; None: none), for solvers that take one
      (``features.node_limit``). With one thread and a time limit that is never reached, every stage then stops on
      work, not on the clock, and the same round gives the same plan on any machine and under any load (a replay
      the same figures run after run; docs/design.md §5.15);
    * ``lp_bound``: solve the LP relaxation first with ``lp_solver`` (the reported bound and
      the LP-rounded start plan);
    * ``warm_start``: offer the running jobs' current configurations as a start;
    * ``export_model``: also write the stage models: stage 1 to this ``.mps`` or ``.lp`` file,
      stage 2 beside it (``x.stage2.mps``; docs/design.md §5.12). The solver must be able to export;
    * ``horizon``: rounds the model looks ahead (>= 1; 1 plans the round alone, docs/design.md §5.14).
    """

    solver: str = "highs"
    objective: Objective | None = None
    delta: float | None = None
    """Progress the ``energy`` objective gives up, in [0, 1); None keeps the instance's ``round.delta``."""
    time_limit_s: float = 30.0
    rel_gap: float = 1e-4
    threads: int = 2
    seed: int = 0
    node_limit: int | None = None
    lp_bound: bool = True
    lp_solver: str = "highs"
    warm_start: bool = True
    export_model: Path | None = None
    horizon: int = 1
    """Rounds planned as one model, the first executed (receding horizon, docs/design.md §5.14); 1: today's model."""


DEFAULT_REQUEST: Final = PlanRequest()
REPLAY_REQUEST: Final = PlanRequest(solver="cbc", time_limit_s=5.0, threads=1, lp_bound=False)
"""A replay plans hundreds of rounds: 5 s each, one thread, no LP bound (nobody reads it there), and CBC,
which reaches its plan fastest (mean 0.9-2.3 s at 30-500 jobs against HiGHS's 5-19 s in the bound audit,
benchmarks/RESULTS.md) and whose plans the bench counts solved as often; a replay reads no bound."""
