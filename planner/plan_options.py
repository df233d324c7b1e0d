"""``wattplan plan``'s options, declared once: :class:`PlanOptions`, the solve options and the plan's own.

``wattplan plan`` generates its options from :class:`PlanOptions` (``planner.cli.faces``) and ``wattplan.plan``
takes the same keywords and checks them with :meth:`PlanOptions.checked`. The solve options are
:class:`planner.planning.SolveOptions`, whose ranges :func:`planner.planning.request_problems` checks too. A range,
a default or a help text is written once (``tests/test_option_records.py`` walks every face).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from wattplan.planner import planning
from wattplan.planner.contracts.options import Rule, excludes, option, requires

MAX_BUDGET_J = 1e15
"""The largest ``--budget-j`` (J): any real round's budget, and no product of it overflows (a 1e308 budget made
a plan of ``inf`` J that no JSON file can hold)."""
MAX_POWER_CAP_W = 1e10
"""The largest ``--power-cap-w`` (W), for the same reason."""


@dataclass(frozen=True, kw_only=True)
class PlanOptions(planning.SolveOptions):
    """``wattplan plan`` and ``wattplan.plan``: the solve options, a budget override and the model export."""

    budget_j: float | None = option(
        None, "Energy budget of the round; overrides the instance's.", unit="J", low=0.0, high=MAX_BUDGET_J
    )
    power_cap_w: float | None = option(
        None, "Power cap: a round's budget is cap x T; overrides the instance's.", unit="W", low=0.0,
        high=MAX_POWER_CAP_W,
    )  # fmt: skip
    export_model: Path | None = option(
        None,
        "Also write the model for outside solvers: stage 1 to FILE.mps (or .lp), stage 2 to FILE.stage2.mps with "
        "the progress floor the planner used (solvers " + ", ".join(planning.solvers_with("export")) + ").",
    )
    stage2_progress: float | None = option(
        None,
        "With --export-model: write both stage models and no plan; stage 2's progress floor (row progress_floor) "
        "taken from this stage-1 optimum P of your own solver.",
        low=0.0,
    )
    from_solution: Path | None = option(
        None,
        "Make the plan from an outside solver's solution of an exported model (CBC -solution, HiGHS "
        "writeSolution or SCIP writeSol file) instead of solving; status feasible.",
    )

    RULES: ClassVar[tuple[Rule, ...]] = (
        excludes("budget_j", "power_cap_w"),
        excludes("from_solution", "export_model"),
        excludes("from_solution", "stage2_progress"),
        requires("stage2_progress", "export_model"),
    )
