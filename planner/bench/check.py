"""The independent re-check of a benchmark run's plan: whether it is valid, and what it is worth.

No solver is imported here: the validator and the evaluator (:mod:`planner.core.validate`,
:mod:`planner.core.evaluate`) import none, so a wrong solver cannot vouch for its own plan.

The front door :func:`planner.planning.plan` already returns only plans that passed
:func:`planner.core.validate.checked` (the greedy plan in ``greedy_plan``, a solver's plan or the
fallback in the strategy's ``finish`` and ``fallback``). The worker checks again, from the plan's
*document*: the plan is written with :func:`planner.contracts.plan.plan_to_doc`, read back with
:func:`planner.contracts.plan.parse_plan` (the plan schema included) and validated against the instance,
so what is judged is what ``wattplan validate`` would see in the plan file.

The *evaluated objective* of a plan, for the instance's objective, recomputed from the instance
by :func:`planner.core.evaluate.evaluate_plan`:

* ``progress``: ``P = sum_j w_j pi_j`` (dimensionless, maximised). Any valid plan is feasible for
  ``max P`` under the budget, so every valid plan has a value.
* ``energy``: ``E = sum_j e_j + sum_g u_g T (Pnode_g + K_g Pidle_g)`` (J, minimised).
* ``efficiency``: ``E - c sum_j e*_j sigma_j`` (J, minimised): ``e*_j`` the job's best exclusive
  energy per step (:func:`planner.core.economics.step_credit_j`, J/step), ``sigma_j`` its steps
  this round, ``c`` the round's ``credit_weight``; jobs of weight 0 earn no credit (as in the
  round model).

``energy`` and ``efficiency`` minimise subject to ``P >= target``, a target the planning call sets
itself (``(1 - delta) P*``, ``P*`` from its own solve, recorded as ``progress_target``). Only a
plan the planner made for that problem has a value for it: one that reports a value for the
instance's objective. A plan made for another objective (the call fell back to planning for
progress) or without a reported value (greedy, which ignores the target) may miss every target
and certifies no value: None.
"""

from __future__ import annotations

from typing import Any

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan, parse_plan, plan_to_doc
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.core.economics import step_credits_j
from wattplan.planner.core.evaluate import Evaluation, evaluate_plan
from wattplan.planner.core.validate import validate_plan

MAX_PROBLEMS = 5
"""Problems of a failed re-check quoted in its message."""


def credit_j(instance: Instance, ev: Evaluation) -> float:
    """``c sum_j e*_j sigma_j`` (J): the round's steps priced at each job's best exclusive energy per step."""
    total = 0.0
    credits = step_credits_j(instance)
    for job in instance.jobs:
        outcome = ev.outcomes.get(job.id)
        if outcome is not None and job.weight > 0:
            total += credits[job.id] * outcome.steps
    return instance.round.credit_weight * total


def evaluated_objective(instance: Instance, plan: Plan, objective: str, ev: Evaluation) -> float | None:
    """The plan's value for ``objective`` recomputed from ``instance`` (module docstring); None when it has none."""
    if objective == "progress":
        return ev.progress
    if claimed_objective(plan, objective) is None:
        return None
    if objective == "energy":
        return ev.energy_j
    if objective == "efficiency":
        return ev.energy_j - credit_j(instance, ev)
    raise ValueError(f"unknown objective {objective!r}")


def claimed_objective(plan: Plan, objective: str) -> float | None:
    """The value the planner reported for ``objective`` (``round.objective_value``), if the plan is for it."""
    r = plan.round
    if r.objective != objective or r.objective_value is None:
        return None
    return float(r.objective_value)


def reread(plan: Plan) -> Plan:
    """``plan`` written as its ``wattplan.plan/1`` document and read back (raises :class:`InputError`)."""
    return parse_plan(plan_to_doc(plan), "plan")


def recheck(instance: Instance, plan: Plan) -> tuple[Plan | None, list[Problem]]:
    """``(the plan as read back, every violation)``: the document's problems when it does not read back."""
    try:
        again = reread(plan)
    except InputError as exc:
        return None, list(exc.problems)
    return again, validate_plan(instance, again)


def describe(problems: list[Problem]) -> str:
    """The first :data:`MAX_PROBLEMS` problems on one line, and how many more."""
    text = "; ".join(str(p) for p in problems[:MAX_PROBLEMS])
    more = len(problems) - MAX_PROBLEMS
    return text + (f"; and {more} more" if more > 0 else "")


def plan_check(instance: Instance, plan: Plan, objective: str) -> dict[str, Any]:
    """What the benchmark records about ``plan`` (module docstring).

    ``valid``: the re-check passed; ``recheck``: its problems (empty when valid); ``objective``:
    the evaluated value (None without one); ``claimed_objective``: the planner's own;
    ``progress``: the evaluated ``P``; ``progress_target``: the target ``P >= target`` the plan was
    made under (``energy``/``efficiency``), else None.
    """
    again, problems = recheck(instance, plan)
    judged = again if again is not None else plan
    ev = evaluate_plan(instance, judged)
    target = judged.round.report.progress_target
    return {
        "valid": not problems,
        "recheck": describe(problems),
        "objective": evaluated_objective(instance, judged, objective, ev),
        "claimed_objective": claimed_objective(plan, objective),
        "progress": ev.progress,
        "progress_target": None if target is None or objective == "progress" else target.target,
    }


__all__ = ["claimed_objective", "credit_j", "evaluated_objective", "plan_check", "recheck", "reread"]
