"""What every solver backend declares and returns (docs/design.md §5.5).

A backend compiles a :class:`~formulations.ir.LinearModel` for one solver library. It
declares what it can do as data (:class:`Features`); the solve strategy asks before it uses
a start, an LP relaxation or an export, so a new backend only states its features and the
tests parametrised by feature cover it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn, Protocol

import numpy as np

from wattplan.formulations.ir import LinearModel
from wattplan.planner.contracts.problems import InputError, Problem

SolveStatus = Literal["optimal", "feasible", "infeasible", "no_solution", "error"]
ObjectiveName = Literal["progress", "energy", "excess_energy"]
"""The model's objective vectors by name: ``progress`` (weighted, maximised) and ``energy`` (J, minimised)."""


@dataclass(frozen=True, slots=True)
class SolveParams:
    """Solver options.

    ``time_limit_s``: wall seconds for the whole ``solve`` call, handing the model over and
    reading the answer back included (None: no limit); ``rel_gap`` None: the solver's default;
    ``node_limit``: branch-and-bound nodes, as the solver counts them, after which a MIP stops with its
    incumbent (None: no limit; only backends with ``features.node_limit``). A solve that stops on nodes
    rather than on time returns the same plan on any machine and under any load, given one thread and
    the same seed: a work limit, where a time limit is not.
    """

    time_limit_s: float | None = None
    rel_gap: float | None = None
    threads: int = 1
    seed: int = 0
    node_limit: int | None = None


SEARCH_STATS = ("nodes", "lp_iterations", "branches", "conflicts")
"""Keys of :attr:`SolverResult.stats` that count a solver's search effort, where it tells them: branch-and-bound
``nodes`` (HiGHS, SCIP, CBC), simplex ``lp_iterations`` (HiGHS, SCIP, CBC), CP-SAT's ``branches`` and
``conflicts``. A key the solver does not give is absent (unknown, not zero)."""


@dataclass(slots=True)
class SolverResult:
    """A solver's answer: status, the column values, objective and best bound (model units)."""

    status: SolveStatus
    values: np.ndarray | None = None
    objective: float | None = None  # in the model's units (unscaled)
    bound: float | None = None  # best proven bound on the objective, when the solver gives one
    solve_s: float = 0.0
    message: str = ""
    stats: dict[str, float] = field(default_factory=dict)  # search effort, keys in SEARCH_STATS
    on_clock: bool | None = None
    """True when the solve stopped at its time limit (the answer then depends on the machine's speed and load);
    False when it stopped on its own (a proof, the gap, a node limit); None when the backend does not say."""
    columns: np.ndarray | None = None  # column generation: the restricted master's columns

    @property
    def has_solution(self) -> bool:
        """True when the result carries a usable (optimal or feasible) solution."""
        return self.values is not None and self.status in ("optimal", "feasible")


@dataclass(frozen=True, slots=True)
class Features:
    """What a backend can do; the strategy asks before it uses a feature.

    * ``mip_start``: accepts a start solution (a hint for CP-SAT);
    * ``lp_relaxation``: solves the model with integrality dropped (``relax=True``);
    * ``bound``: reports the solver's own proven dual bound of a MIP (else none: the strategy
      proves one from the LP relaxation, and never derives one from the gap tolerance);
    * ``export``: writes the model as MPS or LP (:meth:`Backend.export`);
    * ``lp_duals``: solves LPs given as objective vectors with their primal and dual values
      (:meth:`Backend.solve_lp` once, :meth:`Backend.dual_lp` incrementally), for column generation
      and the energy floor;
    * ``continuous``: solves a column not marked integer as continuous, so a model mixing both (the deadline
      floor's MILP) gets its own optimum and bound. Without it the backend may restrict every column to integers
      (CP-SAT), and its bound is then no bound of the mixed model. False by default: no claim;
    * ``node_limit``: stops a MIP after :attr:`SolveParams.node_limit` branch-and-bound nodes (CBC, HiGHS, SCIP).
      False by default: the backend would ignore the limit, so the front door refuses it.
    """

    mip_start: bool
    lp_relaxation: bool
    bound: bool
    export: bool
    lp_duals: bool
    continuous: bool = False
    node_limit: bool = False


LpMethod = Literal["primal-simplex", "simplex-no-presolve", "pdlp"]
"""How :meth:`Backend.solve_lp` and :meth:`Backend.dual_lp` solve, in neutral words the backend maps to its options:
the primal simplex, the simplex without presolve, or PDLP (a first-order method)."""


@dataclass(frozen=True, slots=True)
class LpSolution:
    """An LP's answer with its duals, in the LP's own units (no conditioning, no sign convention imposed).

    ``optimal``: the solver's status is optimal; ``status``: the solver's words for it. ``values``, ``row_duals``
    and ``col_duals`` are what the solver holds (possibly empty), ``primal_valid`` and ``dual_valid`` the solver's
    word that they are a primal and a dual solution; ``objective`` the solver's objective value.
    """

    optimal: bool
    status: str
    values: np.ndarray
    row_duals: np.ndarray
    col_duals: np.ndarray
    objective: float
    primal_valid: bool
    dual_valid: bool


@dataclass(frozen=True, slots=True)
class NewColumns:
    """Columns to append to a loaded LP: costs, bounds, and their entries in compressed sparse column form."""

    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    starts: np.ndarray
    index: np.ndarray
    values: np.ndarray


class DualLpSession(Protocol):
    """An LP kept loaded between solves (:meth:`Backend.dual_lp`): solve, add columns, re-solve from the last basis."""

    def solve(self, time_limit_s: float) -> LpSolution:
        """Solve (warm after the first call) within ``time_limit_s`` seconds of this call."""
        ...

    def add_columns(self, columns: NewColumns) -> None:
        """Append ``columns`` (their cost, bounds and matrix entries)."""
        ...


class Backend(Protocol):
    """A solver backend: a name, its features, and the two calls the strategy makes."""

    name: str
    features: ClassVar[Features]

    def is_available(self) -> bool:
        """True when the solver library can be loaded on this machine."""
        ...

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Optimise ``lm.objectives[objective]``; ``relax`` drops integrality (``features.lp_relaxation``)."""
        ...

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model to ``path`` as MPS or LP by its suffix, atomically (``features.export``)."""
        ...

    def solve_lp(
        self, lm: LinearModel, objective: np.ndarray, maximize: bool, method: LpMethod, time_limit_s: float
    ) -> LpSolution:
        """``lm`` relaxed, with the cost vector ``objective``, solved once by ``method`` (``features.lp_duals``)."""
        ...

    def dual_lp(
        self,
        lm: LinearModel,
        objective: np.ndarray,
        maximize: bool,
        method: LpMethod = "primal-simplex",
        threads: int | None = None,
    ) -> DualLpSession:
        """``lm`` relaxed with the cost vector ``objective``, loaded for repeated solves (``features.lp_duals``).

        ``threads`` None: the solver's default.
        """
        ...


class BackendUnavailable(RuntimeError):
    """The backend's solver library is not installed or cannot load."""


@dataclass(frozen=True, slots=True)
class Solvers:
    """The backends of one request, resolved once (by the front door) and used for every stage.

    ``mip``: the backend of ``PlanRequest.solver``; ``lp``: the backend of ``PlanRequest.lp_solver`` for the LP
    relaxation, or None when no LP bound is asked for or that backend cannot load, ``lp_missing`` then saying why.
    """

    mip: Backend
    lp: Backend | None = None
    lp_missing: str = ""


class FeatureUnsupported(RuntimeError):
    """A backend was asked for something its :class:`Features` say it cannot do."""


class WithoutLpDuals:
    """The LP-with-duals calls of a backend without ``features.lp_duals``: both raise :class:`FeatureUnsupported`."""

    name: str

    def _no_lp_duals(self) -> NoReturn:
        raise FeatureUnsupported(f"the {self.name} backend solves no LP with duals (features.lp_duals is False)")

    def solve_lp(self, *args: Any, **kwargs: Any) -> LpSolution:
        """Not supported: raises :class:`FeatureUnsupported` (the signature is :meth:`Backend.solve_lp`'s)."""
        self._no_lp_duals()

    def dual_lp(self, *args: Any, **kwargs: Any) -> DualLpSession:
        """Not supported: raises :class:`FeatureUnsupported` (the signature is :meth:`Backend.dual_lp`'s)."""
        self._no_lp_duals()


@contextmanager
def atomic_target(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, which exporters read) renamed onto it on success.

    Readers see the old file or the new one, never half of one; on failure the temporary file
    is removed, ``path`` is untouched, and an unwritable ``path`` is an
    :class:`~planner.contracts.problems.InputError` naming it (never the temporary file).
    """
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        problem = Problem("unwritable-output", "export_model (--export-model)", f"cannot write {path}: {reason}")
        raise InputError(str(path), [problem]) from None
    finally:
        with suppress(OSError):  # gone already, or its folder cannot exist (a file in the way)
            tmp.unlink(missing_ok=True)
