"""One planning round: choose allocations, place them, validate, return the plan.

A plan that fails the validator is a bug and is never returned (:class:`InvalidPlanError`).
"""

from __future__ import annotations

import time

from planner.assemble import SolveInfo, assemble_plan
from planner.domain import Instance
from planner.greedy import greedy_allocations
from planner.plan import Plan
from planner.problems import Problem
from planner.validate import validate_plan

SOLVERS = ("greedy",)


class InvalidPlanError(RuntimeError):
    """A planner produced a plan the validator rejects (a bug, reported, never written)."""

    def __init__(self, solver: str, problems: list[Problem]):
        self.problems = problems
        super().__init__(f"{solver} produced an invalid plan: " + "; ".join(map(str, problems[:5])))


def greedy_plan(instance: Instance, status: str = "feasible") -> Plan:
    """The greedy plan (see :mod:`planner.greedy`), placed and totalled."""
    start = time.perf_counter()
    allocations = greedy_allocations(instance)
    info = SolveInfo(solver="greedy", status=status, solve_s=time.perf_counter() - start)  # type: ignore[arg-type]
    plan = assemble_plan(instance, allocations, info)
    return plan


def checked(instance: Instance, plan: Plan) -> Plan:
    """Return ``plan`` if the validator accepts it, else raise :class:`InvalidPlanError`."""
    problems = validate_plan(instance, plan)
    if problems:
        raise InvalidPlanError(plan.round.solver, problems)
    return plan


def make_plan(instance: Instance, solver: str = "greedy") -> Plan:
    """Plan one round with ``solver`` and validate the result."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    return checked(instance, greedy_plan(instance))
