"""Every backend does what its :class:`~formulations.backends.Features` declare, and only that.

Parametrised by (backend, feature), both read from the registry: a new backend (SCIP, a newer CBC)
joins by its entry in ``formulations.backends.REGISTRY`` and the features its class declares; these
tests then hold it to them.
The model is a hand-checked two-job round (:func:`tests.helpers.instances.sharing_model`, its optimum
worked out at :data:`~tests.helpers.instances.SHARING_OPTIMUM`), small enough that every backend proves it at
once. Every solve runs in the watchdog's child process, as the planner runs it: HiGHS run once in a process
leaves a thread pool that a later fork inherits without its threads, and HiGHS then hangs in the child
(docs/design.md §12).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.instances import SHARING_OPTIMUM, sharing_model
from wattplan.formulations.backends import (
    BUILTIN,
    FEATURE_NAMES,
    REGISTRY,
    FeatureUnsupported,
    LpMethod,
    SolveParams,
    available_backends,
    backend_features,
    backend_with,
    get_backend,
    solvers_with,
)
from wattplan.formulations.backends.base import NewColumns, ObjectiveName, SolverResult
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import reduced_costs
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.planning import plan, request_problems

CASES = [(name, feature) for name in available_backends() for feature in FEATURE_NAMES]
LP_METHODS: tuple[LpMethod, ...] = ("primal-simplex", "simplex-no-presolve", "pdlp")
PARAMS = SolveParams(time_limit_s=30, rel_gap=1e-9, threads=1, seed=0)
MIXED_OPTIMUM = 1.25
"""``max x + y`` s.t. ``2 x + y <= 1.5``, ``x`` continuous in [0, 1], ``y`` binary: y = 1, x = 0.25."""


def _mixed_model() -> LinearModel:
    """The model of :data:`MIXED_OPTIMUM`: one continuous column, one binary column, one row."""
    return LinearModel(
        lb=np.zeros(2),
        ub=np.ones(2),
        is_int=np.array([False, True]),
        col_names=["x", "y"],
        a_rows=np.array([0, 0]),
        a_cols=np.array([0, 1]),
        a_vals=np.array([2.0, 1.0]),
        row_lo=np.array([-np.inf]),
        row_hi=np.array([1.5]),
        row_names=("r",),
        row_kind=("count",),
        objectives={"progress": np.array([1.0, 1.0])},
    )


def _knapsack(n: int = 30, m: int = 5) -> LinearModel:
    """A random 0-1 knapsack with ``m`` rows and ``n`` items, profits near the mean weight (seed 1).

    Hard enough that no backend closes it at the root: unlimited, CBC needs 1,892 nodes, HiGHS 5,791, SCIP 3,154.
    """
    rng = np.random.default_rng(1)
    weights = rng.integers(10, 100, size=(m, n)).astype(float)
    profits = weights.mean(axis=0) + rng.integers(0, 10, size=n)
    rows, cols = np.nonzero(weights)
    return LinearModel(
        lb=np.zeros(n),
        ub=np.ones(n),
        is_int=np.ones(n, dtype=bool),
        col_names=[f"x{i}" for i in range(n)],
        a_rows=rows,
        a_cols=cols,
        a_vals=weights[rows, cols],
        row_lo=np.full(m, -np.inf),
        row_hi=weights.sum(axis=1) / 2,
        row_names=tuple(f"r{i}" for i in range(m)),
        row_kind=("count",) * m,
        objectives={"progress": profits},
    )


def _solve(
    name: str,
    lm: LinearModel,
    objective: ObjectiveName,
    start: np.ndarray | None = None,
    relax: bool = False,
    params: SolveParams = PARAMS,
) -> SolverResult:
    """``get_backend(name).solve(...)`` in a child process (the planner's way); errors come back as results."""
    return run_with_deadline(get_backend(name).solve, (lm, objective, True, params, start, relax), 60.0)


def _highs_reads_back(path: Path) -> SolverResult:
    """HiGHS reads an exported model and solves it; the objective value it finds."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    return SolverResult("optimal", objective=float(h.getInfo().objective_function_value))


def _lp_duals(name: str, lm: LinearModel) -> SolverResult:
    """Every :data:`LP_METHODS` once (``solve_lp``), then a ``dual_lp`` session grown column by column to the full LP.

    Runs in a child process (module docstring); what it found comes back in ``stats``.
    """
    backend = get_backend(name)
    c = lm.objectives["progress"]
    stats: dict[str, float] = {}
    for method in LP_METHODS:
        lp = backend.solve_lp(lm, c, True, method, 30.0)
        assert lp.primal_valid and lp.dual_valid, (method, lp.status)
        assert lp.optimal or method == "pdlp", (method, lp.status)  # PDLP may stop short of its status, not its values
        assert lp.values.shape == (lm.num_cols,) and lp.row_duals.shape == (lm.num_rows,)
        # the column duals are c - A^T y for the row duals y, whichever sign convention the solver keeps
        mismatch = min(np.abs(reduced_costs(lm, c, s * lp.row_duals) - lp.col_duals).max() for s in (1.0, -1.0))
        stats[f"{method} objective"] = lp.objective
        stats[f"{method} primal"] = float(c @ lp.values)
        stats[f"{method} mismatch"] = float(mismatch)
    half = lm.num_cols // 2
    session = backend.dual_lp(lm.restricted(np.arange(half)), c[:half], True, "primal-simplex", threads=1)
    first = session.solve(30.0)
    rest = np.arange(half, lm.num_cols)
    order = np.lexsort((lm.a_rows, lm.a_cols))
    keep = order[lm.a_cols[order] >= half]
    starts = np.searchsorted(lm.a_cols[keep], rest).astype(np.int32)
    index = lm.a_rows[keep].astype(np.int32)
    session.add_columns(NewColumns(c[rest], lm.lb[rest], lm.ub[rest], starts, index, lm.a_vals[keep]))
    second = session.solve(30.0)
    assert first.optimal and second.optimal and second.values.shape == (lm.num_cols,)
    stats["session first"] = first.objective
    stats["session grown"] = second.objective
    stats["session grown primal"] = float(c @ second.values)
    return SolverResult("optimal", stats=stats)


def test_every_builtin_backend_declares_its_features() -> None:
    for name in available_backends():
        assert backend_features(name) is get_backend(name).features
    assert set(available_backends()) <= set(BUILTIN)
    assert backend_features("pulp:GUROBI_CMD") is not None and backend_features("nonsense") is None


def test_the_registry_is_the_one_table_of_backends() -> None:
    """Each entry carries its class's own features; solvers_with and the name lists are read from the entries."""
    assert BUILTIN == tuple(entry.name for entry in REGISTRY) and len(set(BUILTIN)) == len(BUILTIN)
    for entry in REGISTRY:
        assert backend_features(entry.name) is entry.features and entry.install_hint and entry.description
        if entry.name in available_backends():
            backend = get_backend(entry.name)
            assert backend.name == entry.name and type(backend).features is entry.features
    for feature in FEATURE_NAMES:
        assert solvers_with(feature) == [e.name for e in REGISTRY if getattr(e.features, feature)]
    with pytest.raises(ValueError, match="unknown feature"):
        solvers_with("nonsense")
    if any(name in available_backends() for name in solvers_with("lp_duals")):
        assert backend_with("lp_duals").features.lp_duals
    if "highs" in available_backends():  # the deadline floor's MILP: a bound of its own, columns as given
        assert backend_with("bound", "continuous").name == "highs"
    assert "cpsat" not in solvers_with("continuous")


def test_the_registry_loads_no_solver_library() -> None:
    """Importing the registry (as the front door and the command line do) imports no solver library."""
    code = (
        "import sys, wattplan.formulations.backends, wattplan.planner.cli; "
        "print([m for m in ('highspy', 'ortools', 'pulp', 'pyscipopt') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("name", "feature"), CASES)
def test_backend_keeps_what_its_features_say(name: str, feature: str, tmp_path: Path) -> None:
    backend = get_backend(name)
    declared = getattr(backend.features, feature)
    rm = sharing_model()
    lm = rm.lm
    if feature == "mip_start":
        start = rm.encode(greedy_allocations(rm.instance))
        r = _solve(name, lm, "progress", start if declared else None)
        assert r.status == "optimal" and r.objective == pytest.approx(SHARING_OPTIMUM)
    elif feature == "lp_relaxation":
        if not declared:
            r = _solve(name, lm, "progress", relax=True)
            assert r.status == "error" and FeatureUnsupported.__name__ in r.message
            return
        r = _solve(name, lm, "progress", relax=True)
        assert r.status == "optimal" and r.objective is not None
        assert r.objective >= SHARING_OPTIMUM - 1e-9  # a relaxation bounds the MIP optimum from above
        assert r.values is not None
        assert np.all(lm.row_activity(r.values) <= lm.row_hi + 1e-6)
    elif feature == "bound":
        r = _solve(name, lm, "progress")
        assert r.status == "optimal" and r.objective is not None
        if declared:
            assert r.bound is not None and r.bound >= r.objective - 1e-9 and r.bound <= SHARING_OPTIMUM * (1 + 1e-6)
        else:
            assert r.bound is None  # no bound of its own: never one derived from the gap
    elif feature == "lp_duals":
        if not declared:
            with pytest.raises(FeatureUnsupported):
                backend.solve_lp(lm, lm.objectives["progress"], True, "primal-simplex", 10.0)
            with pytest.raises(FeatureUnsupported):
                backend.dual_lp(lm, lm.objectives["progress"], True)
            return
        r = run_with_deadline(_lp_duals, (name, lm), 120.0)
        assert r.status == "optimal", r.message
        for method in LP_METHODS:  # this LP's optimum is integral: the MIP optimum
            assert r.stats[f"{method} objective"] == pytest.approx(SHARING_OPTIMUM, rel=1e-4)
            assert r.stats[f"{method} primal"] == pytest.approx(SHARING_OPTIMUM, rel=1e-4)
        for method in ("primal-simplex", "simplex-no-presolve"):  # a first-order method's duals are looser
            assert r.stats[f"{method} mismatch"] <= 1e-6
        assert r.stats["session first"] <= SHARING_OPTIMUM + 1e-9  # half the columns: a restriction of the LP
        assert r.stats["session grown"] == pytest.approx(SHARING_OPTIMUM, rel=1e-9)
        assert r.stats["session grown primal"] == pytest.approx(SHARING_OPTIMUM, rel=1e-9)
    elif feature == "node_limit":
        if not declared:  # the backend would ignore it: the front door refuses the request
            problems = request_problems(PlanRequest(solver=name, node_limit=1))
            assert [p.path for p in problems] == ["node_limit (--node-limit)"]
            return
        r = _solve(name, _knapsack(), "progress", params=replace(PARAMS, node_limit=1))
        assert r.status == "feasible" and r.objective is not None  # stopped on nodes, not proven
        assert 1 <= r.stats["nodes"] <= 2  # unlimited: thousands (_knapsack)
        assert r.on_clock is False  # a work limit: the answer does not hang on the machine's speed
        timed = _solve(name, _knapsack(40, 6), "progress", params=replace(PARAMS, time_limit_s=0.3))
        assert timed.status in ("feasible", "no_solution") and timed.on_clock is True, (timed.message, timed.stats)
    elif feature == "continuous":
        if not declared:
            return  # no claim: CP-SAT restricts every column to integers (its optimum here is 1.0, not 1.25)
        r = _solve(name, _mixed_model(), "progress")
        assert r.status == "optimal" and r.objective == pytest.approx(MIXED_OPTIMUM)
        assert r.values is not None and r.values[0] == pytest.approx(0.25)
        assert r.bound is None or r.bound >= MIXED_OPTIMUM - 1e-9
    else:
        path = tmp_path / "model.mps"
        if not declared:
            with pytest.raises(FeatureUnsupported):
                backend.export(lm, "progress", True, path)
            return
        backend.export(lm, "progress", True, path)
        text = path.read_text()
        assert "ROWS" in text and "COLUMNS" in text and "job_a" in text  # readable row names
        assert not list(tmp_path.glob(".*tmp*")), "the export left its temporary file"
        if "highs" in available_backends():
            read_back = run_with_deadline(_highs_reads_back, (path,), 60.0)
            # The file minimises -progress (formulations/mps.py): every reader agrees without OBJSENSE.
            assert read_back.objective == pytest.approx(-SHARING_OPTIMUM)


def test_the_front_door_refuses_an_export_the_solver_cannot_write(tmp_path: Path) -> None:
    inst = sharing_model().instance
    for solver in ("greedy", *(n for n in available_backends() if not get_backend(n).features.export)):
        with pytest.raises(InputError) as err:
            plan(inst, PlanRequest(solver=solver, export_model=tmp_path / "m.mps"))
        assert [p.code for p in err.value.problems] == ["cannot-export"]
    assert not (tmp_path / "m.mps").exists()


def test_the_lp_solver_must_solve_relaxations() -> None:
    with pytest.raises(InputError) as err:
        plan(sharing_model().instance, PlanRequest(solver="highs", lp_solver="cpsat"))
    assert err.value.problems[0].path == "lp_solver"


@pytest.mark.parametrize("solver", available_backends())
def test_a_backend_without_lp_relaxation_still_gets_the_lp_bound(solver: str) -> None:
    """The LP bound comes from ``lp_solver`` (HiGHS by default), whatever the MIP backend."""
    p = plan(sharing_model().instance, PlanRequest(solver=solver, time_limit_s=20, rel_gap=1e-9, threads=1))
    assert p.round.report.lp_bound is not None and p.round.report.lp_bound >= SHARING_OPTIMUM - 1e-9
    assert p.round.progress == pytest.approx(SHARING_OPTIMUM)
