"""``wattplan.plan``: plan one round from Python, with the plan's jobs as a DataFrame.

The same front door as ``wattplan plan`` (:func:`planner.planning.plan`, docs/design.md §5.9): the returned plan
is validated, its figures recomputed from the instance, its bound proven where it claims one. The same checks
too: an instance file, a job list or an :class:`Instance` built in Python is checked as ``wattplan instance
check`` checks a file, the options as the command line checks them, and :meth:`PlanResult.write` refuses to
write over the files the plan was made from. Every such refusal is an
:class:`~planner.contracts.problems.InputError` naming the file or the keyword and each
problem, as the command line prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from wattplan.keywords import check_keywords
from wattplan.planner import planning
from wattplan.planner.console.tables import running_rows
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import instance_to_doc, load_instance, parse_instance, write_instance
from wattplan.planner.contracts.options import keyword_signature
from wattplan.planner.contracts.plan import Plan, plan_to_doc, write_plan
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.core.waiting import waiting_reasons
from wattplan.planner.files.paths import refuse_overwriting_inputs
from wattplan.planner.files.resources import default_instance
from wattplan.planner.plan_options import PlanOptions

GPU_COUNTS = ("requested_gpus", "gpus")
"""The GPU-count columns of :attr:`PlanResult.jobs`: whole numbers, empty (``<NA>``) where a job has none."""


@dataclass
class PlanResult:
    """A validated plan, the instance it is for, and its jobs as a DataFrame.

    ``jobs``: one row per job of the instance, in instance order: ``state`` (``run`` or ``wait``), type, requested and
    given GPUs (integers, pandas' nullable ``Int64``: a waiting job's ``gpus`` is ``<NA>``), GPU type, setting,
    partner, throughput (steps/s), power (W per GPU and kW for the job), energy (J), placement; a waiting job has its
    ``reason`` code and ``detail`` sentence (docs/design.md §6.5).
    """

    plan: Plan
    instance: Instance
    inputs: tuple[Path, ...] = field(default=(), repr=False)
    """The files the plan was made from (instance, job list, cluster file, profiles): :meth:`write` never
    writes over them."""

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
        frame = pd.DataFrame(rows).reindex(columns=columns)
        return frame.astype({name: "Int64" for name in GPU_COUNTS})  # a waiting job's gpus: <NA>, not NaN

    @property
    def summary(self) -> pd.Series:
        """The plan's round summary as a pandas Series, like the other results' frames.

        Energy J, progress, objective, bound, gap, status, solver... (``summary["energy_j"]``; nested fields such as
        ``stages`` stay objects).
        """
        return pd.Series(plan_to_doc(self.plan)["round"], name="round", dtype=object)

    def write(self, plan_path: str | Path, instance_path: str | Path | None = None) -> None:
        """Write the plan (and, if a path is given, the instance) atomically, as ``wattplan plan`` does.

        Refused before anything is written (:class:`InputError` naming ``plan_path`` or ``instance_path``): a path
        that is one of the files the plan was made from (:attr:`inputs`), both paths one file, a path that cannot
        be written (a folder, under a file). A refused or failed write leaves every file as it was.
        """
        outputs = {
            "plan_path": Path(plan_path),
            "instance_path": None if instance_path is None else Path(instance_path),
        }
        refuse_overwriting_inputs(outputs, self.inputs)
        if instance_path is not None:
            write_instance(self.instance, Path(instance_path))
        write_plan(self.plan, Path(plan_path))


def checked_instance(instance: Instance, source: str = "instance") -> Instance:
    """``instance`` if ``wattplan instance check`` would accept it as a file; else :class:`InputError` on ``source``.

    An :class:`Instance` built or changed in Python skips the file's checks (a job asking for -3 GPUs was planned,
    a field of the wrong type ended in an ``AttributeError`` deep in a solver): it is written to its document and
    read back through the same checks as a file (schema, finite numbers, meaning: docs/design.md §7.3).
    """
    try:
        doc = instance_to_doc(instance)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        what = f"not a complete Instance ({type(exc).__name__}: {exc}); build it with load_instance or its fields"
        raise InputError(source, [Problem("bad-instance", "(instance)", what)]) from None
    parse_instance(doc, source)
    return instance


def _instance(instance: Instance | str | Path | None, jobs: str | Path | None, cluster: str | Path | None,
              profiles: str | Path | None) -> tuple[Instance, tuple[Path, ...]]:  # fmt: skip
    """The checked instance to plan and the files it was read from."""
    if jobs is not None or cluster is not None or profiles is not None:
        from wattplan.planner.rounds.from_jobs import read_operator_instance

        if instance is not None:
            message = "give an instance, or jobs= with cluster= (and optionally profiles=), not both"
            raise InputError("options", [Problem("conflicting-options", "instance", message)])
        if jobs is None or cluster is None:
            missing = "jobs" if jobs is None else "cluster"
            message = "a job list needs jobs= (the job list) and cluster= (the cluster file)"
            raise InputError("options", [Problem("bad-option", missing, message)])
        inputs = tuple(Path(p) for p in (jobs, cluster, profiles) if p is not None)
        made, _ = read_operator_instance(Path(jobs), Path(cluster), None if profiles is None else Path(profiles))
        return checked_instance(made, str(jobs)), inputs
    if isinstance(instance, Instance):
        return checked_instance(instance), ()
    if instance is not None and not isinstance(instance, str | Path):
        what = f"must be an Instance, a path or None, got {instance!r:.60}"
        raise InputError("options", [Problem("bad-option", "instance", what)])
    path = Path(instance) if instance is not None else default_instance()
    return load_instance(path), (path,)


def plan(
    instance: Instance | str | Path | None = None,
    *,
    jobs: str | Path | None = None,
    cluster: str | Path | None = None,
    profiles: str | Path | None = None,
    **options: Any,
) -> PlanResult:
    """Plan one round of an instance, or of an operator's job list ``jobs`` on the cluster file ``cluster``.

    The instance is an :class:`Instance`, a path, or None for the shipped default round (docs/operators.md for job
    lists). ``options`` are ``wattplan plan``'s, by the fields of
    :class:`~planner.plan_options.PlanOptions` (``time_limit_s`` for ``--time-limit``, ``rel_gap`` for ``--gap``,
    ``power_cap_w`` W, ``budget_j`` J, ``node_limit``, ``horizon``...; ``help(wattplan.plan)`` lists them all), each
    with its default and checked by the same record as the command line's option, with the same message.

    ``budget_j`` (J) or ``power_cap_w`` (W, times the round length) replaces the instance's budget, as
    ``wattplan plan --budget-j`` / ``--power-cap-w`` do: the plan declares the override
    (``plan.round.budget_override``) and is validated against the instance as given. Bad input (a file
    missing or wrong, an :class:`Instance` that ``wattplan instance check`` would refuse, a bad option) raises
    :class:`~planner.contracts.problems.InputError` with every problem, each naming its field or keyword; an unknown
    keyword is a ``TypeError`` naming it, as from ``wattplan.simulate`` and ``bench``. The plan is validated before
    it is returned (a plan the validator rejects is a planner bug: :class:`~planner.core.validate.InvalidPlanError`).
    """
    check_keywords(plan, locals())
    known = [opt.name for opt in PlanOptions.options()]
    if unknown := [name for name in options if name not in known]:  # as wattplan.simulate and bench answer one
        keywords = ", ".join(sorted(["jobs", "cluster", "profiles", *known]))
        raise TypeError(f"plan() got an unexpected option {unknown[0]!r} (options: {keywords})")
    opts = PlanOptions.checked(options)
    if opts.stage2_progress is not None:
        message = "writes stage models and no plan: use `wattplan plan --export-model F --stage2-progress P`"
        raise InputError("options", [Problem("bad-option", PlanOptions.label("stage2_progress"), message)])
    inst, inputs = _instance(instance, jobs, cluster, profiles)
    override = planning.budget_override(inst.round.budget_j, inst.round.duration_s, opts.budget_j, opts.power_cap_w)
    planned = planning.with_overridden_budget(inst, override)
    request = opts.request()
    if opts.from_solution is not None:
        result = planning.plan_from_solution(planned, opts.from_solution, request)
    else:
        result = planning.plan(planned, request)
    if override is not None:
        result = planning.declare_budget_override(result, override, inst)
    return PlanResult(result, inst, inputs)


plan.__signature__ = keyword_signature(plan, PlanOptions)  # type: ignore[attr-defined]
