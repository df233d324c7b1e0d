"""The one front door: :func:`plan` an instance as a :class:`~planner.contracts.request.PlanRequest` asks.

Every caller (the command line, the replay's ``wattplan`` policy, the benchmarks) plans a
round here, and this is the only place that interprets a solver name: ``greedy`` is the
greedy plan (:mod:`planner.core.greedy`, no model, no solver library); any other name is a
backend of :mod:`formulations.backends` solved by the strategy of :mod:`formulations.solve`.
A request is checked before anything is built (:func:`request_problems`): a bad value, an
unknown or missing solver, or an export the solver cannot write is an
:class:`~planner.contracts.problems.InputError` naming the option. Whatever the path, the returned plan
has passed the validator.

Model exchange (docs/design.md §5.12) goes through here too, and solves nothing:
:func:`plan_from_solution` makes the plan of an outside solver's solution of an exported model,
:func:`export_stage_models` writes the two stage models for an outside stage-1 optimum.

The solver names come from one table, :data:`formulations.backends.REGISTRY`: the lists in help
texts and messages here (:data:`SOLVER_CHOICES`, :func:`solver_help`, :func:`solvers_with`) are
read from it, so the command line names no solver of its own. Plug-in solvers (``register_solver``, the
``wattplan.solvers`` entry points) are named in messages too (:func:`solver_choices`).

A command-line solver (``cmd:COMMAND``, :mod:`formulations.backends.command`) is never trusted: its plan's status
is at most ``feasible`` (wattplan's own LP bound is kept, but does not make it ``optimal``), and a stage the command
did not deliver (it failed, timed out, wrote no solution or a rejected one) is an error, never a silent greedy
fallback (:func:`command_solver_checked`).

Layering (docs/design.md §8): at import this module loads only the backend registry
(:mod:`formulations.backends`, which imports no solver library); the model, the strategy and
the solvers load inside :func:`plan`, so the validator, the evaluator and everything that only
reads plans never load a solver.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from wattplan.formulations.backends import (
    BUILTIN,
    PATTERNS,
    REGISTRY,
    BackendUnavailable,
    Solvers,
    backend_features,
    one_of,
    plugin_names,
    register_solver,  # noqa: F401 (re-exported: wattplan.register_solver, docs/design.md §5.7.1)
    resolve_solvers,
    solvers_with,
    unregister_solver,  # noqa: F401 (re-exported beside it)
)
from wattplan.formulations.backends.command import CWD_ENV, command_problems
from wattplan.formulations.backends.command import PREFIX as COMMAND_PREFIX
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.floor import DeadlineFloor, EnergyFloor
from wattplan.planner.contracts.options import OptionRecord, option
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.request import DEFAULT_REQUEST, EXPORT_SUFFIXES, GREEDY, PlanRequest
from wattplan.planner.contracts.rules import DELTA_RANGE, Objective, RoundRules, rules_problems

if TYPE_CHECKING:
    from wattplan.planner.contracts.plan import BudgetOverride, Plan

SOLVER_NAMES: tuple[str, ...] = (*BUILTIN, GREEDY)
"""The solver names a user may give besides the patterns (``pulp:NAME``): the registry's and ``greedy``."""
SOLVER_PATTERNS: tuple[str, ...] = tuple(p.placeholder for p in PATTERNS)
"""How help texts write the backends named by a pattern: ``pulp:NAME``."""
SOLVER_CHOICES = one_of([", ".join(BUILTIN), *(f"{p.placeholder} ({p.description})" for p in PATTERNS), GREEDY])
"""The built-in solver names a user may give, for help texts."""


COMMAND_CWD_ENV = CWD_ENV
"""The environment variable naming a command-line solver's working directory (``bench`` sets it for its runs)."""


def solver_choices() -> str:
    """The solver names a user may give, plug-ins included, for errors."""
    patterns = [f"{p.placeholder} ({p.description})" for p in PATTERNS]
    return one_of([", ".join([*BUILTIN, *plugin_names()]), *patterns, GREEDY])


def is_command_solver(name: str) -> bool:
    """True for a command-line solver's name, ``cmd:COMMAND``."""
    return name.startswith(COMMAND_PREFIX)


def solver_help() -> str:
    """Every solver a user may name with its one-line description, for help texts."""
    return one_of(
        [
            *(f"{entry.name} ({entry.description})" for entry in REGISTRY),
            *(f"{p.placeholder} ({p.description})" for p in PATTERNS),
            f"{GREEDY} (no solver)",
        ]
    )


def _solver_name_problems(request: PlanRequest) -> list[Problem]:
    """An unknown solver, an LP solver without LP relaxations, an export nobody can write (nothing is loaded)."""
    problems: list[Problem] = []
    if is_command_solver(request.solver):
        bad = command_problems(request.solver[len(COMMAND_PREFIX) :])
        if bad:
            return [Problem("bad-option", "solver (--solver)", f"{request.solver!r}: {'; '.join(bad)}")]
    try:
        features = None if request.solver == GREEDY else backend_features(request.solver)
    except BackendUnavailable as exc:
        return [Problem("solver-unavailable", "solver (--solver)", str(exc))]
    if request.solver != GREEDY and features is None:
        return [
            Problem(
                "solver-unavailable",
                "solver (--solver)",
                f"unknown solver {request.solver!r}; choose from {solver_choices()}",
            )
        ]
    if request.lp_bound and request.solver != GREEDY:
        lp = backend_features(request.lp_solver)
        if lp is None or not lp.lp_relaxation:
            problems.append(
                Problem(
                    "bad-option",
                    "lp_solver",
                    f"{request.lp_solver!r} solves no LP relaxation; use {one_of(solvers_with('lp_relaxation'))}",
                )
            )
    if request.node_limit is not None and (features is None or not features.node_limit):
        problems.append(
            Problem(
                "bad-option",
                "node_limit (--node-limit)",
                f"the {request.solver} solver takes no node limit; use --solver {one_of(solvers_with('node_limit'))}",
            )
        )
    if request.export_model is not None:
        features = None if request.solver == GREEDY else backend_features(request.solver)
        if features is None or not features.export:
            problems.append(
                Problem(
                    "cannot-export",
                    "export_model (--export-model)",
                    f"the {request.solver} solver cannot export a model; use --solver {one_of(solvers_with('export'))}",
                )
            )
    return problems


def _resolved(request: PlanRequest) -> tuple[Solvers | None, list[Problem]]:
    """The request's backends, loaded once (None for ``greedy``), or the problem of a solver that cannot load."""
    if request.solver == GREEDY:
        return None, []
    try:
        return resolve_solvers(request.solver, request.lp_solver, request.lp_bound), []
    except BackendUnavailable as exc:
        return None, [Problem("solver-unavailable", "solver (--solver)", f"{exc}; choose from {solver_choices()}")]


def _round_problems(request: PlanRequest) -> list[Problem]:
    """Problems with what the request changes in the round: its objective and ``delta`` (:func:`rules_problems`)."""
    rules = RoundRules()
    named: dict[str, str] = {}
    if request.delta is not None:
        rules = replace(rules, delta=request.delta)
        named["delta"] = "delta (--delta)"
    if request.objective is not None:
        rules = replace(rules, objective=request.objective)
        named["objective"] = "objective"
    return rules_problems(rules, named)


MAX_TIME_LIMIT_S = 1e6
"""Longest time limit (s, about 11.6 days): the solver process is waited on with poll(), whose timeout in ms must
fit 32 bits (1e7 s failed with `timeout is too large`), and the solvers convert it; 1e308 overflowed
HiGHS, CBC and CP-SAT (``cannot convert float infinity to integer``, an internal error)."""
MAX_SEED = 2**31 - 1
"""Largest solver seed: the solvers take a 32-bit signed seed; a larger one was an internal error."""
MAX_HORIZON = 8
"""The most rounds a horizon model plans at once (``--horizon``); the model grows with jobs x H."""
MAX_THREADS = 1024
"""The most solver threads one call may ask for."""

SOLVER_HELP = (
    f"{solver_help()}. Default {DEFAULT_REQUEST.solver}: its own bound proves every plan of the bound "
    "audit within the gap (benchmarks/RESULTS.md)."
)


@dataclass(frozen=True, kw_only=True)
class SolveOptions(OptionRecord):
    """How one round is solved: the fields of :class:`~planner.contracts.request.PlanRequest` a user sets."""

    solver: str = option(DEFAULT_REQUEST.solver, SOLVER_HELP)
    objective: str | None = option(
        None,
        "progress: most weighted progress, then least energy; energy: least energy within delta of the best "
        "progress; efficiency: least energy above each job's best energy per step, within delta of the best "
        "progress. Default: the instance's.",
        choices=get_args(Objective),
    )
    delta: float | None = option(
        None,
        "Progress the energy objective gives up: target (1 - delta) x best; default: the instance's.",
        low=DELTA_RANGE[0],
        high=DELTA_RANGE[1],
        high_open=True,
    )
    time_limit_s: float = option(
        DEFAULT_REQUEST.time_limit_s,
        "Seconds for the whole run, from reading the instance to the written plan.",
        unit="s",
        low=0.0,
        low_open=True,
        high=MAX_TIME_LIMIT_S,
        flag="--time-limit",
    )
    rel_gap: float = option(
        DEFAULT_REQUEST.rel_gap,
        "Relative optimality gap at which a solve stops.",
        low=0.0,
        high=1.0,
        high_open=True,
        flag="--gap",
    )
    threads: int = option(DEFAULT_REQUEST.threads, "Solver threads.", low=1, high=MAX_THREADS)
    seed: int = option(DEFAULT_REQUEST.seed, "Solver random seed.", low=0, high=MAX_SEED)
    node_limit: int | None = option(
        DEFAULT_REQUEST.node_limit,
        "Branch-and-bound nodes per MIP stage (cbc, highs, scip). With --threads 1 and a time limit never "
        "reached, the same inputs give the same plans on any machine and load.",
        unit="nodes",
        low=1,
    )
    lp_bound: bool = option(
        DEFAULT_REQUEST.lp_bound,
        "Solve the LP relaxation first (HiGHS): the reported LP bound and an LP-rounded start plan.",
    )
    horizon: int = option(
        DEFAULT_REQUEST.horizon,
        "Rounds planned as one model, the first one run (1: this round alone; design §5.14).",
        unit="rounds",
        low=1,
        high=MAX_HORIZON,
    )

    def request(self, **more: object) -> PlanRequest:
        """The :class:`PlanRequest` of these options (``more``: other fields of it, or values replacing these)."""
        fields = {name: value for name, value in self.values().items() if name in _REQUEST_NAMES} | more
        return PlanRequest(**fields)


_REQUEST_NAMES = frozenset(PlanRequest.__dataclass_fields__)


_OTHER_REQUEST_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("lp_solver", "text", "lp_solver"),
    ("warm_start", "flag", "warm_start"),
)
"""The fields of :class:`PlanRequest` no face sets as an option: their kind and their name in problems (the others
are :class:`SolveOptions`' options, checked with their records' ranges)."""

_KIND_WORDS = {"text": "text", "flag": "True or False", "path": "a Path"}


def _is_kind(value: object, kind: str) -> bool:
    """Whether ``value`` is of ``kind``: text, flag or path."""
    return isinstance(value, {"text": str, "flag": bool, "path": Path}[kind])


def _value_problems(request: PlanRequest) -> list[Problem]:
    """Every value of ``request`` of the wrong kind or outside its range (:class:`SolveOptions`).

    From Python any object reaches a field: ``time_limit_s="2"`` or ``threads=None`` ended in ``TypeError: '<' not
    supported`` inside the range checks, naming no keyword; the record checks each kind before its range.
    """
    given = {opt.name: getattr(request, opt.name) for opt in SolveOptions.options()}
    problems = SolveOptions.problems(given)
    for name, kind, label in _OTHER_REQUEST_FIELDS:
        value = getattr(request, name)
        if not _is_kind(value, kind):
            problems.append(Problem("bad-option", label, f"must be {_KIND_WORDS[kind]}, got {value!r:.60}"))
    path = request.export_model
    if path is not None and not _is_kind(path, "path"):
        problems.append(Problem("bad-option", "export_model (--export-model)", f"must be a Path, got {path!r:.60}"))
    if problems:
        return problems  # the checks below need the kinds right
    problems += _round_problems(request)
    path = request.export_model
    if path is not None and path.suffix not in EXPORT_SUFFIXES:
        problems.append(Problem("bad-option", "export_model (--export-model)", "the file must end in .mps or .lp"))
    return problems + _solver_name_problems(request)


def request_problems(request: PlanRequest) -> list[Problem]:
    """Every value of ``request`` outside its range, and a solver that cannot load on this machine."""
    problems = _value_problems(request)
    return problems or _resolved(request)[1]


def greedy_plan(instance: Instance) -> Plan:
    """The greedy plan (see :mod:`planner.core.greedy`), placed, totalled and validated."""
    from wattplan.planner.contracts.solve_report import HeuristicRecord, SolveReport
    from wattplan.planner.core.assemble import SolveInfo, assemble_plan
    from wattplan.planner.core.greedy import greedy_allocations
    from wattplan.planner.core.validate import checked

    begin = time.perf_counter()
    allocations = greedy_allocations(instance)
    seconds = time.perf_counter() - begin
    report = SolveReport()
    result = assemble_plan(
        instance, allocations, SolveInfo(solver=GREEDY, status="feasible", solve_s=seconds, report=report)
    )
    report.heuristics[GREEDY] = HeuristicRecord(result.round.progress, round(seconds, 4))
    return checked(instance, result)


def _as_requested(instance: Instance, request: PlanRequest) -> Instance:
    """``instance`` with the request's objective and ``delta`` when it sets them."""
    if request.objective is not None and request.objective != instance.round.objective:
        instance = replace(instance, round=replace(instance.round, objective=request.objective))
    if request.delta is not None and request.delta != instance.round.delta:
        instance = replace(instance, round=replace(instance.round, delta=request.delta))
    return instance


class Planner:
    """A request checked once and its solvers loaded once, then any number of rounds planned with them.

    The command line makes one per ``plan`` call, the replay's ``wattplan`` policy one per replay. Raises
    :class:`~planner.contracts.problems.InputError` (every problem naming its option) for a bad request or a
    solver that cannot load.
    """

    def __init__(self, request: PlanRequest = DEFAULT_REQUEST) -> None:
        problems = _value_problems(request)
        solvers, unavailable = (None, []) if problems else _resolved(request)
        if problems or unavailable:
            raise InputError("options", problems + unavailable)
        self.request = request
        self._solvers = solvers

    def plan(self, instance: Instance, started_at: float | None = None) -> Plan:
        """Plan one round of ``instance`` as the request asks; the plan has passed the validator.

        ``started_at`` (a ``time.perf_counter()`` reading) is when the caller's clock started, e.g.
        before it read the instance, so that ``request.time_limit_s`` covers the whole call.
        Raises :class:`~planner.core.validate.InvalidPlanError` if a planner bug produced an invalid plan.
        """
        from wattplan.planner.contracts.instance_io import instance_sha256
        from wattplan.planner.contracts.plan import with_instance_sha256

        started_at = time.perf_counter() if started_at is None else started_at
        digest = instance_sha256(instance)  # the instance as given, before the request's objective and delta
        instance = _as_requested(instance, self.request)
        if self._solvers is None:
            return with_instance_sha256(greedy_plan(instance), digest)
        from wattplan.formulations.solve import solve_round

        result = solve_round(instance, self.request, started_at, self._solvers)
        if is_command_solver(self.request.solver):
            result = command_solver_checked(result)
        return with_instance_sha256(result, digest)


def command_solver_checked(result: Plan) -> Plan:
    """A command-line solver's plan: an error where it fell back to a heuristic, else ``feasible`` at most.

    Raises :class:`~planner.contracts.problems.InputError` (``solver-failed``, at ``solver (--solver)``) with the
    fallback's reason: the stage's message says whether the command failed, timed out, wrote no solution or a
    rejected one. An ``optimal`` plan (wattplan's own LP bound closed the gap) becomes ``feasible`` with a note.
    """
    r = result.round
    if r.status == "fallback":
        why = r.notes().get("fallback_reason", "no plan from the command")
        failed = [s.message for s in r.report.stages if s.status not in ("optimal", "feasible") and s.message]
        detail = "; ".join([why, *failed])
        raise InputError("solver", [Problem("solver-failed", "solver (--solver)", detail)])
    if r.status != "optimal":
        return result
    note = "a command-line solver's plan is at most feasible (its solver's word is not a proof)"
    old = r.report.notes.get("bound_note")
    r.report.notes["bound_note"] = f"{old}; {note}" if old else note
    return replace(result, round=replace(r, status="feasible"))


def plan(instance: Instance, request: PlanRequest = DEFAULT_REQUEST, started_at: float | None = None) -> Plan:
    """Plan one round of ``instance`` as ``request`` asks: :meth:`Planner.plan` of a :class:`Planner` made for it.

    Raises :class:`~planner.contracts.problems.InputError` for a bad request and
    :class:`~planner.core.validate.InvalidPlanError` if a planner bug produced an invalid plan.
    """
    started_at = time.perf_counter() if started_at is None else started_at
    return Planner(request).plan(instance, started_at)


def plan_from_solution(instance: Instance, solution: Path, request: PlanRequest = DEFAULT_REQUEST) -> Plan:
    """The validated plan of an outside solver's solution of a model exported for ``instance`` (``--from-solution``).

    ``solution``: a CBC, HiGHS or SCIP solution file of either stage's export (the format is
    read from the content). The request's objective and ``delta`` give the plan's objective value;
    no MIP is solved, only, with ``lp_bound``, the LP relaxation by ``lp_solver`` within ``time_limit_s``: the
    plan's ``bound`` and ``gap`` (``formulations/solution_bound.py``). The plan's status is ``feasible`` and its
    solver ``external:<format>``. Raises :class:`~planner.contracts.problems.SolutionRejected` for a file that
    gives no usable plan (each problem names the file, line and column or row), ``InputError``
    for a bad request and ``FileNotFoundError`` for a missing file.
    """
    problems = _round_problems(request)
    if problems:
        raise InputError("options", problems)
    import functools

    from wattplan.formulations.external_plan import external_plan
    from wattplan.formulations.solution_bound import judged
    from wattplan.planner.contracts.instance_io import instance_sha256
    from wattplan.planner.contracts.plan import with_instance_sha256

    lp_solver = request.lp_solver if request.lp_bound else None  # the plan's bound and gap (solution_bound)
    judge = functools.partial(judged, lp_solver=lp_solver, limit_s=request.time_limit_s)
    result = external_plan(_as_requested(instance, request), solution, judge)
    return with_instance_sha256(result, instance_sha256(instance))


def export_stage_models(instance: Instance, request: PlanRequest, stage1_progress: float) -> list[Path]:
    """Write both stage models to ``request.export_model`` and its ``.stage2`` sibling, without solving.

    Stage 2's progress floor is the planner's share of ``stage1_progress``, the stage-1 optimum an
    outside solver found (``--stage2-progress``): ``(1 - 1e-6) P1`` for ``progress``,
    ``(1 - delta) P*`` otherwise. Returns the files written.
    """
    problems = _value_problems(request)
    solvers, unavailable = (None, []) if problems else _resolved(request)
    problems += unavailable
    if request.export_model is None:
        problems.append(Problem("bad-option", "stage2_progress (--stage2-progress)", "needs --export-model FILE"))
    if not (math.isfinite(stage1_progress) and stage1_progress >= 0):
        problems.append(
            Problem("bad-option", "stage2_progress (--stage2-progress)", f"must be >= 0, got {stage1_progress}")
        )
    if problems or request.export_model is None or solvers is None:
        raise InputError("options", problems)
    from wattplan.formulations.round_model import build_round_model
    from wattplan.formulations.stage_export import export_stages

    model = build_round_model(_as_requested(instance, request))
    return export_stages(solvers.mip, model, request.export_model, stage1_progress)


def model_export_paths(path: Path) -> tuple[Path, Path]:
    """Where an export to ``path`` writes stage 1 and stage 2: ``x.mps`` and ``x.stage2.mps``."""
    from wattplan.formulations.stage_export import stage2_path

    return Path(path), stage2_path(path)


def exported_model_files(path: Path) -> list[Path]:
    """The stage files an export to ``path`` leaves, stage 1 first: ``x.mps`` and ``x.stage2.mps`` where present."""
    from wattplan.formulations.stage_export import stage2_path

    return [p for p in (path, stage2_path(path)) if p.exists()]


def energy_floor(instance: Instance, time_limit_s: float | None = None) -> EnergyFloor:
    """The energy floor of ``instance``'s jobs, whole (J; budget and capacity ignored): docs/design.md §14.

    A linear program solved with a certified dual bound (:mod:`formulations.energy_floor`), within ``time_limit_s``
    seconds (its default when None).
    """
    from wattplan.formulations.energy_floor import FLOOR_TIME_LIMIT_S
    from wattplan.formulations.energy_floor import energy_floor as solve_floor

    return solve_floor(instance, FLOOR_TIME_LIMIT_S if time_limit_s is None else time_limit_s)


def powered_floor(
    instance: Instance,
    arrivals_s: Mapping[str, float],
    time_limit_s: float | None = None,
    min_window_s: float | None = None,
) -> EnergyFloor:
    """The energy floor of ``instance``'s jobs on a cluster whose every node stays powered (J): docs/design.md §14.

    From the first arrival to the last completion every node draws ``Pnode + K Pidle`` whatever runs; the window
    ``W`` holds all the work (the cluster's GPU-seconds) and is at least ``W_min = max_j (a_j + S_j / Xmax_j) -
    min_j a_j`` (``S_j`` the job's steps, ``Xmax_j`` :func:`~planner.core.economics.fastest_steps_per_s`, ``a_j``
    its arrival in ``arrivals_s``). The LP (:func:`formulations.energy_floor.energy_floor` with
    :class:`~formulations.energy_floor.PoweredCluster`) bounds the simulated Slurm's and a live run's energy
    window. A job without any option that makes progress adds nothing to ``W_min`` (the floor says it covers the
    others only). ``min_window_s``: the window is at least this long too (s from the first arrival): the floor over a
    common window of runs that all ended within it (:mod:`planner.control.common_window`).
    """
    from wattplan.formulations.energy_floor import FLOOR_TIME_LIMIT_S, PoweredCluster
    from wattplan.formulations.energy_floor import energy_floor as solve_floor
    from wattplan.planner.core.economics import fastest_steps_per_s

    ends = []
    for job in instance.jobs:
        rate = fastest_steps_per_s(instance, job.type, job.gpus)
        if rate > 0 and job.remaining_steps > 0:
            ends.append(arrivals_s[job.id] + job.remaining_steps / rate)
    first = min((arrivals_s[j.id] for j in instance.jobs), default=0.0)
    window = PoweredCluster(max(max(ends, default=first) - first, min_window_s or 0.0, 0.0))
    return solve_floor(instance, FLOOR_TIME_LIMIT_S if time_limit_s is None else time_limit_s, window)


def deadline_floor(
    instance: Instance,
    windows_s: Mapping[str, float],
    free_jobs: int = 0,
    processing_sum_s: float | None = None,
    time_limit_s: float | None = None,
    arrivals_s: Mapping[str, float] | None = None,
    slot_s: float | None = None,
    whole_nodes: bool = False,
    outer_windows_s: Mapping[str, float] | None = None,
    outer_late: int = 0,
    hard: Collection[str] = (),
) -> DeadlineFloor:
    """A lower bound on the energy (J) of every schedule finishing each job of ``windows_s`` within its window.

    ``windows_s``: job id -> seconds from arrival to deadline; any ``free_jobs`` may ignore theirs (with
    ``outer_windows_s``, later windows of the same jobs, of which at most ``outer_late`` may be missed; the jobs
    of ``hard`` keep theirs whatever ``free_jobs`` says);
    ``processing_sum_s`` bounds the sum of JCTs (s). Capacity is relaxed unless ``arrivals_s`` (every job's arrival,
    s) and ``slot_s`` are given: then each slot's GPU-seconds per type are bounded (:mod:`formulations.deadline_floor`),
    and ``whole_nodes`` charges static power by the node kept on (a job alone pays its whole node).
    """
    from wattplan.formulations.deadline_floor import DEADLINE_FLOOR_TIME_LIMIT_S, OuterWindows, Timeline
    from wattplan.formulations.deadline_floor import deadline_floor as solve_deadline_floor

    limit = DEADLINE_FLOOR_TIME_LIMIT_S if time_limit_s is None else time_limit_s
    timeline = None if arrivals_s is None or slot_s is None else Timeline(arrivals_s, slot_s, whole_nodes)
    outer = None if outer_windows_s is None else OuterWindows(outer_windows_s, outer_late)
    return solve_deadline_floor(
        instance, windows_s, free_jobs, processing_sum_s, limit, timeline, outer, frozenset(hard)
    )


def deadline_floor_rates(instance: Instance) -> dict[str, float]:
    """Each job's fastest rate (steps/s) over the deadline floor's columns: ``R_j / X_j`` is its least JCT there."""
    from wattplan.formulations.deadline_floor import fastest_rates

    return fastest_rates(instance)


def horizon_model_size(instance: Instance, horizon: int) -> tuple[int, int]:
    """Columns and rows of ``instance``'s ``horizon``-round model (docs/design.md §5.14); nothing is solved."""
    from wattplan.formulations.horizon_model import build_horizon_model

    lm = build_horizon_model(instance, horizon).lm
    return lm.num_cols, lm.num_rows


def is_one_round_fallback(result: Plan) -> bool:
    """Whether a horizon request's plan came from the one-round model (the horizon model was not solved, §5.14)."""
    from wattplan.formulations.horizon_solve import ONE_ROUND

    return result.round.solver.endswith("+" + ONE_ROUND)


def write_round_mps(instance: Instance, path: Path) -> None:
    """Write the round's first-stage model (most progress under the budget) to ``path`` with the one MPS writer.

    The file is a minimisation of ``-progress`` (:mod:`formulations.mps`), like every export; nothing is solved.
    """
    from wattplan.formulations.mps import write_mps
    from wattplan.formulations.round_model import build_round_model

    comment = "stage 1 (progress objective): most weighted progress under the energy budget"
    write_mps(build_round_model(instance).lm, "progress", True, path, [comment])


@dataclass(frozen=True, slots=True)
class LpReference:
    """The stage-1 model's size and its proven LP bound: what solver benchmarks compare plans with.

    ``build_s`` and ``lp_s`` in s; ``bound`` the Lagrangian bound of the LP's duals (weighted progress), None when
    the LP was not solved in time or was skipped (``lp_s`` None) because the build took longer than asked.
    """

    columns: int
    rows: int
    build_s: float
    bound: float | None
    lp_s: float | None


def lp_reference(
    instance: Instance, lp_solver: str = "highs", time_limit_s: float = 120.0, max_build_s: float = math.inf
) -> LpReference:
    """Build ``instance``'s stage-1 model and solve its LP relaxation with ``lp_solver`` (no plan is made).

    The LP is skipped when the build took more than ``max_build_s`` seconds.
    """
    from wattplan.formulations.backends import get_backend
    from wattplan.formulations.round_model import build_round_model
    from wattplan.formulations.solve import lp_relaxation

    begin = time.perf_counter()
    rm = build_round_model(instance)
    build_s = time.perf_counter() - begin
    columns, rows = rm.lm.num_cols, rm.lm.num_rows
    if build_s > max_build_s:
        return LpReference(columns, rows, build_s, None, None)
    begin = time.perf_counter()
    bound = lp_relaxation(get_backend(lp_solver), rm.lm, "progress", True, time_limit_s).value
    return LpReference(columns, rows, build_s, bound, time.perf_counter() - begin)


def budget_override(
    instance_budget_j: float | None, duration_s: float, budget_j: float | None, power_cap_w: float | None
) -> BudgetOverride | None:
    """The override ``--budget-j`` (J) or ``--power-cap-w`` (W, times the round length ``duration_s``) asks for.

    None when neither option is given; the instance's own budget (J, None: none) is recorded beside it.
    ``wattplan plan`` and :func:`wattplan.plan` both use it.
    """
    from wattplan.planner.contracts.plan import BudgetOverride
    from wattplan.planner.core.economics import round_budget_j

    if power_cap_w is not None:
        return BudgetOverride(
            round_budget_j(duration_s, power_cap_w=power_cap_w), "--power-cap-w", power_cap_w, instance_budget_j
        )
    if budget_j is not None:
        return BudgetOverride(budget_j, "--budget-j", budget_j, instance_budget_j)
    return None


def with_overridden_budget(instance: Instance, override: BudgetOverride | None) -> Instance:
    """``instance`` with the round budget (J) of ``override``; unchanged when there is none."""
    if override is None:
        return instance
    return replace(instance, round=replace(instance.round, budget_j=override.budget_j))


def declare_budget_override(result: Plan, override: BudgetOverride, instance: Instance) -> Plan:
    """``result`` (planned under the override) declaring it and the SHA-256 of the original ``instance``.

    The plan is then checked against that instance itself (:func:`planner.core.validate.checked`: an invalid plan
    raises), as a plan file is later validated against the instance file it names.
    """
    from wattplan.planner.contracts.instance_io import instance_sha256
    from wattplan.planner.contracts.plan import with_budget_override, with_instance_sha256
    from wattplan.planner.core.validate import checked

    declared = with_instance_sha256(with_budget_override(result, override), instance_sha256(instance))
    checked(instance, declared)
    return declared


def retire_solver_workers() -> None:
    """End this process's long-lived solver workers now; the next solve forks new ones.

    A worker's CPU seconds count in ``resource.getrusage(RUSAGE_CHILDREN)`` only once it has ended and been
    reaped: a run that reports its CPU time beside its wall time retires them first.
    """
    from wattplan.formulations.watchdog import shutdown_workers

    shutdown_workers()
