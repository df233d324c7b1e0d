"""What every solver backend declares and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from formulations.ir import LinearModel

SolveStatus = Literal["optimal", "feasible", "infeasible", "no_solution", "error"]


@dataclass(frozen=True, slots=True)
class SolveParams:
    """Solver options. ``time_limit_s``: wall seconds for the whole ``solve`` call, handing the
    model over and reading the answer back included (None: no limit); ``rel_gap`` None: the
    solver's default."""

    time_limit_s: float | None = None
    rel_gap: float | None = None
    threads: int = 1
    seed: int = 0


@dataclass(slots=True)
class SolverResult:
    status: SolveStatus
    values: np.ndarray | None = None
    objective: float | None = None  # in the model's units (unscaled)
    bound: float | None = None  # best proven bound on the objective, when the solver gives one
    solve_s: float = 0.0
    message: str = ""
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def has_solution(self) -> bool:
        return self.values is not None and self.status in ("optimal", "feasible")


@dataclass(frozen=True, slots=True)
class Features:
    """What a backend can do; the planner asks before it uses a feature."""

    mip_start: bool
    lp_relaxation: bool
    bound: bool
    export: bool


class Backend(Protocol):
    name: str
    features: Features

    def is_available(self) -> bool: ...

    def solve(
        self,
        lm: LinearModel,
        objective: np.ndarray,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult: ...


class BackendUnavailable(RuntimeError):
    """The backend's solver library is not installed or cannot load."""
