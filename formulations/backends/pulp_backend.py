"""PuLP: any solver PuLP knows (``pulp:GUROBI_CMD``, ``pulp:CPLEX_CMD``, ...); ``cbc`` runs its CBC (:mod:`.cbc`)."""

from __future__ import annotations

import re
import tempfile
import time
import warnings
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    Features,
    ObjectiveName,
    SolveParams,
    SolverResult,
    SolveStatus,
    WithoutLpDuals,
    atomic_target,
)
from wattplan.formulations.conditioning import absolute_gap, condition
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import dual_bound
from wattplan.formulations.mps import write_mps

CBC = "PULP_CBC_CMD"
"""PuLP's name of its bundled CBC binary (the ``cbc`` backend)."""
INSTALL_HINT = "pip install pulp==3.3.2"
"""How to install PuLP, with its bundled CBC."""


CBC_PREPROCESS = "off"
"""CBC's ``-preprocess`` setting. PuLP 3.3 bundles CBC 2.10.3, whose default preprocessing (``sos``)
misbehaves on our round models under short limits: on a 137-job replay round (27,455 columns) it
reported the model infeasible at a 1 s limit and, at 2-5 s, returned progress 5.53 although the
MIP start it was given has 7.73; with preprocessing off it proves the optimum (9.82) in 1.1-1.5 s
at every limit from 1 s (``tests/test_cbc_backend.py``; CBC issues #449 and #740 describe the
same preprocessing failures). The price, on the 100-job scaling rounds: proofs take longer, and
CBC may stop at its limit 0.3% short of proving the optimum (benchmarks/RESULTS.md)."""


HANDOVER_FACTOR = 3.0
"""A command-line solver spends about this many times the PuLP model's build time outside its own
clock: writing the MPS file, the solver reading it, and PuLP reading the solution back (measured
on 137-job replay rounds: build 0.33-0.36 s, MPS write 0.26-0.33 s, CBC at ``-sec 0.01`` 0.61-0.63 s
wall). The solver's own limit is what is left of ``time_limit_s`` after that."""
MIN_SOLVER_S = 0.1


def solver_seconds(time_limit_s: float, build_s: float) -> float:
    """The solver's own limit: ``max(MIN_SOLVER_S, time_limit_s - HANDOVER_FACTOR * build_s)`` (s)."""
    return max(MIN_SOLVER_S, time_limit_s - HANDOVER_FACTOR * build_s)


CBC_LOG_STATS = (
    ("nodes", re.compile(r"^Enumerated nodes:\s+(\d+)", re.M)),
    ("lp_iterations", re.compile(r"^Total iterations:\s+(\d+)", re.M)),
)
"""CBC's closing lines and the :data:`~formulations.backends.base.SEARCH_STATS` key each one gives."""


CBC_CLOCK_STOP = re.compile(r"^Result - Stopped on time", re.M)
"""CBC's closing line when its time limit stopped it (``Result - Stopped on time limit``); a node limit,
a proof or the gap give other lines (``Stopped on node limit``, ``Optimal solution found``)."""


def cbc_on_clock(log: str) -> bool | None:
    """True when CBC's log says its time limit stopped it, False when it closed otherwise, None without a log."""
    if "Result - " not in log:
        return None
    return CBC_CLOCK_STOP.search(log) is not None


def cbc_log_stats(log: str) -> dict[str, float]:
    """Branch-and-bound nodes and simplex iterations from CBC's log (``Enumerated nodes:``, ``Total iterations:``).

    The last such line counts (CBC prints its summary once, at the end); a line it did not print is left out.
    """
    stats: dict[str, float] = {}
    for key, pattern in CBC_LOG_STATS:
        found = pattern.findall(log)
        if found:
            stats[key] = float(found[-1])
    return stats


def _row_duals(prob: Any, lm: LinearModel) -> np.ndarray | None:
    """Per row of ``lm``, the dual PuLP read back (a two-sided row's ``_lo`` and ``_hi`` summed), or None."""
    constraints = prob.constraints
    duals = np.zeros(lm.num_rows)
    for r in range(lm.num_rows):
        parts = [constraints.get(f"r{r}"), constraints.get(f"r{r}_lo"), constraints.get(f"r{r}_hi")]
        pis = [c.pi for c in parts if c is not None]
        if not pis or any(pi is None for pi in pis):
            return None
        duals[r] = float(sum(pis))
    return duals


class PulpBackend(WithoutLpDuals):
    """A model handed to PuLP and solved by ``solver_name`` (PuLP's name, e.g. ``PULP_CBC_CMD``)."""

    features: ClassVar[Features] = Features(
        mip_start=True, lp_relaxation=True, bound=False, export=True, lp_duals=False, continuous=True
    )

    def __init__(self, solver_name: str = CBC, label: str | None = None) -> None:
        self.solver_name = solver_name
        self.name = label or f"pulp:{solver_name}"

    def is_available(self) -> bool:
        """True when PuLP is installed and finds ``solver_name`` on this machine."""
        if find_spec("pulp") is None:
            return False
        import pulp

        return self.solver_name in pulp.listSolvers(onlyAvailable=True)

    def _problem(
        self, lm: LinearModel, objective: ObjectiveName, maximize: bool, relax: bool, readable: bool = False
    ) -> tuple[Any, list[Any]]:
        """The PuLP problem of ``lm`` and its variables (column names ``c<k>``, or readable ones for export)."""
        import pulp

        coefs = lm.objectives[objective]
        if readable:
            names, row_names = lm.export_names()
        else:
            names, row_names = [f"c{k}" for k in range(lm.num_cols)], [f"r{r}" for r in range(lm.num_rows)]
        prob = pulp.LpProblem("wattplan_round", pulp.LpMaximize if maximize else pulp.LpMinimize)
        cat = [pulp.LpContinuous if relax or not i else pulp.LpInteger for i in lm.is_int]
        xs = [
            pulp.LpVariable(names[k], lowBound=float(lo), upBound=float(hi), cat=cat[k])
            for k, (lo, hi) in enumerate(zip(lm.lb, lm.ub, strict=True))
        ]
        nz = np.flatnonzero(coefs)
        prob += pulp.LpAffineExpression([(xs[k], float(coefs[k])) for k in nz])
        for row in lm.rows():
            expr = pulp.LpAffineExpression([(xs[k], float(v)) for k, v in zip(row.cols, row.vals, strict=True)])
            name, lo, hi = row_names[row.row], row.lo, row.hi
            if np.isfinite(lo) and np.isfinite(hi) and lo == hi:
                prob += expr == lo, name
                continue
            if np.isfinite(lo):
                prob += expr >= lo, f"{name}_lo" if np.isfinite(hi) else name
            if np.isfinite(hi):
                prob += expr <= hi, f"{name}_hi" if np.isfinite(lo) else name
        return prob, xs

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Hand the conditioned ``lm`` to PuLP and its solver.

        No MIP bound is reported: PuLP passes no dual bound on (CBC prints one to three
        significant digits), and a bound derived from the gap tolerance would be no proof; the
        strategy proves one (docs/design.md §5.13). An LP relaxation's bound is the Lagrangian
        bound of the solver's row duals when PuLP reads them back.
        """
        if not self.is_available():
            raise BackendUnavailable(f"PuLP cannot find the solver {self.solver_name!r} on this machine")
        import pulp

        entered = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # PuLP 3.3 announces its 4.0 API
            cond = condition(lm, objective)
            prob, xs = self._problem(cond.lm, objective, maximize, relax)
        build_s = time.perf_counter() - entered
        if start is not None and not relax:
            for x, v in zip(xs, start, strict=True):
                x.setInitialValue(float(v))
        options: dict[str, Any] = {"msg": False}
        if params.time_limit_s is not None:
            options["timeLimit"] = solver_seconds(float(params.time_limit_s), build_s)
        if params.rel_gap is not None:
            options["gapRel"] = float(params.rel_gap)
        options["gapAbs"] = absolute_gap(params.rel_gap)
        if self.solver_name == CBC:
            if params.node_limit is not None and not relax:
                options["maxNodes"] = int(params.node_limit)
            options["threads"] = params.threads if params.threads > 1 else None  # 1: serial (cbc.py's docstring)
            options["warmStart"] = start is not None and not relax
            options["options"] = [
                f"randomSeed {params.seed + 1}",
                f"randomCbcSeed {params.seed + 1}",
                f"preprocess {CBC_PREPROCESS}",
            ]
        with tempfile.TemporaryDirectory(prefix="wattplan-cbc-") as scratch:
            log_path = Path(scratch) / "cbc.log"
            if self.solver_name == CBC:
                options["logPath"] = str(log_path)  # for its node and iteration counts (cbc_log_stats)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # PULP_CBC_CMD: still PuLP 3.3's bundled CBC
                solver = pulp.getSolver(self.solver_name, **options)
            begin = time.perf_counter()
            prob.solve(solver)
            elapsed = time.perf_counter() - begin
            log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
        stats = cbc_log_stats(log)
        on_clock = cbc_on_clock(log) if self.solver_name == CBC else None
        status = pulp.LpStatus.get(prob.status, "Undefined")
        if status == "Infeasible":
            return SolverResult("infeasible", solve_s=elapsed, message=status, on_clock=on_clock)
        values = np.array([x.value() if x.value() is not None else np.nan for x in xs], dtype=float)
        if not relax:
            values = np.where(lm.is_int, np.round(values), values)
        checked_lm = replace(lm, is_int=np.zeros(lm.num_cols, dtype=bool)) if relax else lm
        if np.isnan(values).any() or not checked_lm.is_feasible(values):
            return SolverResult("no_solution", solve_s=elapsed, message=status, on_clock=on_clock)
        proven = status == "Optimal" and getattr(prob, "sol_status", 1) == 1
        value = float(lm.objectives[objective] @ values)
        bound = None
        if relax and proven:
            duals = _row_duals(prob, cond.lm)
            if duals is not None:
                model_duals = duals * cond.row_scale / cond.objective_scale
                bound = dual_bound(lm, lm.objectives[objective], maximize, model_duals)
        status_name: SolveStatus = "optimal" if proven else "feasible"
        return SolverResult(
            status_name,
            values=values,
            objective=value,
            bound=bound,
            solve_s=elapsed,
            message=status,
            stats=stats,
            on_clock=on_clock,
        )

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model as MPS (:mod:`formulations.mps`) or LP (PuLP's writer) by the suffix, atomically."""
        if Path(path).suffix == ".mps":
            write_mps(lm, objective, maximize, Path(path))  # the one MPS format of every backend
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            prob, _ = self._problem(lm, objective, maximize, relax=False, readable=True)
        with atomic_target(Path(path)) as tmp:
            prob.writeLP(str(tmp))
