"""``wattplan.plan``: plan one round from Python, with the plan's jobs as a DataFrame.

The same front door as ``wattplan plan`` (:func:`planner.planning.plan`, docs/design.md §5.9): the returned plan
is validated, its figures recomputed from the instance, its bound proven where it claims one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from wattplan.planner import planning
from wattplan.planner.console.tables import running_rows
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance, write_instance
from wattplan.planner.contracts.plan import Plan, plan_to_doc, write_plan
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.waiting import waiting_reasons
from wattplan.planner.files.resources import default_instance


@dataclass
class PlanResult:
    """A validated plan, the instance it is for, and its jobs as a DataFrame.

    ``jobs``: one row per job of the instance, in instance order: ``state`` (``run`` or ``wait``), type, requested and
    given GPUs, GPU type, setting, partner, throughput (steps/s), power (W per GPU and kW for the job), energy (J),
    placement; a waiting job has its ``reason`` code and ``detail`` sentence (docs/design.md §6.5).
    """

    plan: Plan
    instance: Instance

    @property
    def jobs(self) -> pd.DataFrame:
        """The plan's jobs (class docstring)."""
        running = {r["job"]: {**r, "state": "run"} for r in running_rows(self.plan, self.instance)}
        for w in waiting_reasons(self.instance, self.plan):
            running[w.job_id] = {
                "job": w.job_id,
                "state": "wait",
                "type": w.job_type,
                "requested_gpus": w.requested_gpus,
                "reason": w.code,
                "detail": w.message,
            }
        rows = [running[j.job_id] for j in self.plan.jobs if j.job_id in running]
        columns = ["job", "state", "type", "requested_gpus", "gpus", "gpu_type", "setting", "setting_unit", "partner"]
        columns += ["steps_per_s", "power_w_per_gpu", "power_kw", "energy_j", "placement", "reason", "detail"]
        return pd.DataFrame(rows).reindex(columns=columns)

    @property
    def summary(self) -> dict[str, Any]:
        """The plan's round summary (energy J, progress, objective, bound, gap, status, solver...)."""
        return dict(plan_to_doc(self.plan)["round"])

    def write(self, plan_path: str | Path, instance_path: str | Path | None = None) -> None:
        """Write the plan (and, if a path is given, the instance) atomically, as ``wattplan plan`` does."""
        write_plan(self.plan, Path(plan_path))
        if instance_path is not None:
            write_instance(self.instance, Path(instance_path))


def _instance(instance: Instance | str | Path | None, jobs: str | Path | None, cluster: str | Path | None,
              profiles: str | Path | None) -> Instance:  # fmt: skip
    if jobs is not None:
        from wattplan.planner.rounds.from_jobs import read_operator_instance

        if instance is not None or cluster is None:
            raise ValueError("give an instance, or jobs= with cluster= (and optionally profiles=)")
        made, _ = read_operator_instance(Path(jobs), Path(cluster), None if profiles is None else Path(profiles))
        return made
    if isinstance(instance, Instance):
        return instance
    return load_instance(Path(instance) if instance is not None else default_instance())


def plan(
    instance: Instance | str | Path | None = None,
    *,
    jobs: str | Path | None = None,
    cluster: str | Path | None = None,
    profiles: str | Path | None = None,
    solver: str = "highs",
    objective: str | None = None,
    delta: float | None = None,
    budget_j: float | None = None,
    power_cap_w: float | None = None,
    time_limit_s: float = 30.0,
    rel_gap: float = 1e-4,
    threads: int = 2,
    seed: int = 0,
) -> PlanResult:
    """Plan one round of an instance, or of an operator's job list ``jobs`` on the cluster file ``cluster``.

    The instance is an :class:`Instance`, a path, or None for the shipped default round (docs/operators.md for job
    lists).

    ``budget_j`` (J) or ``power_cap_w`` (W, times the round length) replaces the instance's budget, as
    ``wattplan plan --budget-j`` / ``--power-cap-w`` do: the plan declares the override
    (``plan.round.budget_override``) and is validated against the instance as given. Other options are
    :class:`~planner.contracts.request.PlanRequest`'s (``time_limit_s`` s for the whole call). Bad input raises
    :class:`~planner.contracts.problems.InputError` with every problem; the plan is validated before it is returned.
    """
    inst = _instance(instance, jobs, cluster, profiles)
    if budget_j is not None and power_cap_w is not None:
        raise InputError("options", [Problem("conflicting-options", "budget_j", "give budget_j or power_cap_w")])
    override = planning.budget_override(
        inst.round.budget_j, inst.round.duration_s, None if budget_j is None else float(budget_j), power_cap_w
    )
    request = PlanRequest(
        solver=solver,
        objective=objective,  # type: ignore[arg-type]
        delta=delta,
        time_limit_s=time_limit_s,
        rel_gap=rel_gap,
        threads=threads,
        seed=seed,
    )
    result = planning.plan(planning.with_overridden_budget(inst, override), request)
    if override is not None:
        result = planning.declare_budget_override(result, override, inst)
    return PlanResult(result, inst)
