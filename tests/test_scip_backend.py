"""SCIP through PySCIPOpt: the whole call keeps its time limit, starts are used, it shares a process.

The hand-checked optima are in ``tests/test_golden.py`` and ``tests/test_backend_features.py``,
which hold ``scip`` to them with the other backends; this file checks what is SCIP's own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.helpers.instances import SHARING_OPTIMUM, sharing_model
from wattplan.formulations.backends import (
    PATTERNS,
    REGISTRY,
    BackendUnavailable,
    SolveParams,
    available_backends,
    get_backend,
)
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.planning import plan

pytestmark = pytest.mark.skipif(find_spec("pyscipopt") is None, reason="pyscipopt is not installed")


def test_the_registry_knows_scip_and_ortools_cbc() -> None:
    assert {"scip", "ortools-cbc"} <= set(available_backends())
    with pytest.raises(BackendUnavailable) as err:
        get_backend("nonsense")
    for name in (*(entry.name for entry in REGISTRY), *(pattern.placeholder for pattern in PATTERNS)):
        assert name in str(err.value)


def test_scip_plans_through_the_front_door_in_a_forked_child() -> None:
    """The strategy runs every solve (the LP bound by SCIP too) in the watchdog's forked child."""
    req = PlanRequest(solver="scip", lp_solver="scip", time_limit_s=20, rel_gap=1e-9, threads=1)
    p = plan(sharing_model().instance, req)
    assert p.round.status == "optimal" and p.round.solver == "scip"
    assert p.round.progress == pytest.approx(SHARING_OPTIMUM)
    assert p.round.report.lp_bound == pytest.approx(SHARING_OPTIMUM)  # this LP's optimum is integral
    assert all(s.status == "optimal" for s in p.round.report.stages)


def test_the_whole_call_keeps_the_time_limit_and_passes_gap_and_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """SCIP's own limit is what the build leaves, less the read-back estimate; the start or better comes back.

    The build's duration comes from a stand-in clock (0.4 s), so the limit SCIP is given does not hang on the
    machine's load; a node limit, not the clock, ends the search (before, a 1.5 s limit on the 137-job replay
    round left SCIP 0.1 s on a loaded machine, too little to take the start: no solution). The tiny round keeps
    the test quick: the arithmetic is the same for any model.
    """
    from wattplan.formulations.backends import scip

    models: list[Any] = []

    def keep(*args: Any, **kwargs: Any) -> Any:
        built = build(*args, **kwargs)
        models.append(built[0])
        return built

    build = scip.scip_model
    monkeypatch.setattr(scip, "scip_model", keep)
    ticks = iter([100.0, 100.4, 100.4, 101.0])  # entered, after the build, before and after the solve
    monkeypatch.setattr(scip, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    rm = sharing_model()
    start = rm.encode(greedy_allocations(rm.instance))
    params = SolveParams(time_limit_s=300.0, rel_gap=1e-4, threads=1, seed=7, node_limit=1)
    r = get_backend("scip").solve(rm.lm, "progress", True, params, start)
    assert r.has_solution and r.objective is not None and r.on_clock is False, r.message
    assert r.objective >= float(rm.lm.objectives["progress"] @ start) - 1e-9  # the start was taken
    [model] = models
    assert model.getParam("limits/time") == pytest.approx(300.0 - 0.4 - scip.READBACK_S_PER_COL * rm.lm.num_cols)
    assert model.getParam("limits/gap") == 1e-4
    assert model.getParam("randomization/randomseedshift") == 7


def test_the_time_limit_never_goes_below_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    from wattplan.formulations.backends import scip

    monkeypatch.setattr(scip, "READBACK_S_PER_COL", 1.0)  # the read-back estimate eats the whole limit
    lm = sharing_model().lm
    r = get_backend("scip").solve(lm, "progress", True, SolveParams(time_limit_s=5.0))
    assert r.status == "optimal" and r.objective == pytest.approx(SHARING_OPTIMUM)  # 0.1 s is plenty here


def test_an_infeasible_model_is_reported_infeasible() -> None:
    lm = sharing_model().lm
    impossible = lm.with_row(
        lm.objectives["progress"], SHARING_OPTIMUM + 0.1, float("inf"), "more_than_best", "progress"
    )
    for name in ("scip", "ortools-cbc"):
        params = (impossible, "energy", False, SolveParams(time_limit_s=20), None)
        assert run_with_deadline(get_backend(name).solve, params, 60.0).status == "infeasible", name


SHARED_PROCESS = textwrap.dedent(
    """
    import sys

    def scip():
        import pyscipopt
        m = pyscipopt.Model()
        m.hideOutput()
        x, y = m.addVar("x", "I", 0, 3), m.addVar("y", "I", 0, 3)
        m.addCons(x + 2 * y <= 4)
        m.setObjective(x + y, "maximize")
        m.optimize()
        return m.getObjVal()

    def cpsat():
        from ortools.sat.python import cp_model
        m = cp_model.CpModel()
        x, y = m.new_int_var(0, 3, "x"), m.new_int_var(0, 3, "y")
        m.add(x + 2 * y <= 4)
        m.maximize(x + y)
        s = cp_model.CpSolver()
        s.solve(m)
        return s.objective_value

    def pywraplp(kind):
        from ortools.linear_solver import pywraplp
        s = pywraplp.Solver.CreateSolver(kind)
        x, y = s.IntVar(0, 3, "x"), s.IntVar(0, 3, "y")
        s.Add(x + 2 * y <= 4)
        s.Maximize(x + y)
        s.Solve()
        return s.Objective().Value()

    def highs():
        import highspy
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        x, y = h.addIntegral(lb=0, ub=3), h.addIntegral(lb=0, ub=3)
        h.addConstr(x + 2 * y <= 4)
        h.maximize(x + y)
        return h.getInfo().objective_function_value

    solvers = {"scip": scip, "cpsat": cpsat, "cbc": lambda: pywraplp("CBC"),
               "ortools-scip": lambda: pywraplp("SCIP"), "highs": highs}
    for name in sys.argv[1].split(","):
        print(name, solvers[name]())
    """
)


@pytest.mark.parametrize("order", ["scip,cpsat,cbc,ortools-scip,highs", "highs,ortools-scip,cbc,cpsat,scip"])
def test_pyscipopt_ortools_and_highspy_share_one_process(order: str, tmp_path: Path) -> None:
    """PySCIPOpt's SCIP 10, OR-Tools' own SCIP 10, CBC and CP-SAT, and highspy load and solve side by side.

    A fresh interpreter per import order (this test process may have loaded some already); the
    trivial model's optimum is 3 (x = 2, y = 1 or x = 3, y = 0, ...).
    """
    script = tmp_path / "shared.py"
    script.write_text(SHARED_PROCESS)
    done = subprocess.run([sys.executable, str(script), order], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results = dict(line.split() for line in done.stdout.splitlines())
    assert list(results) == order.split(",")
    assert all(float(v) == pytest.approx(3.0) for v in results.values()), results
