"""Solver backends by name, from one table: :data:`~formulations.backends.registry.REGISTRY`.

The built-in backends and the ``pulp:NAME`` pattern, with their features, install hints and
descriptions, are data in :mod:`formulations.backends.registry`; everything here reads it. Which
names a user may ask for (``greedy`` included) is decided by the front door, :mod:`planner.planning`.
Importing this package loads no solver library.

Modules: ``base`` (the backend protocol, :class:`Features`, the LP-with-duals session, results), ``registry``
(the table), and one module per backend: ``highs`` (highspy), ``cpsat`` (OR-Tools CP-SAT), ``scip``
(PySCIPOpt), ``ortools_mip`` (OR-Tools' CBC), ``cbc`` (PuLP's bundled CBC binary on wattplan's MPS file),
``pulp_backend`` (``pulp:NAME``, any solver through PuLP's objects) and
``command`` (``cmd:COMMAND``, a command-line solver on an MPS file). Plug-in solvers: :func:`register_solver`
and the ``wattplan.solvers`` entry points (:mod:`formulations.backends.registry`, docs/design.md §5.7.1).
"""

from __future__ import annotations

from wattplan.formulations.backends.base import (
    Backend,
    BackendUnavailable,
    DualLpSession,
    Features,
    FeatureUnsupported,
    LpMethod,
    LpSolution,
    NewColumns,
    ObjectiveName,
    SolveParams,
    SolverResult,
    Solvers,
)
from wattplan.formulations.backends.registry import (
    BUILTIN,
    ENTRY_POINT_GROUP,
    FEATURE_NAMES,
    PATTERNS,
    REGISTRY,
    BackendEntry,
    BackendPattern,
    available_backends,
    backend_features,
    backend_with,
    get_backend,
    is_available,
    known_names,
    one_of,
    plugin_names,
    register_solver,
    solvers_with,
    unregister_solver,
)


def resolve_solvers(solver: str, lp_solver: str, lp_bound: bool) -> Solvers:
    """The backends of a request, loaded once; :class:`BackendUnavailable` if ``solver`` cannot be had.

    The LP backend is None when ``lp_bound`` is off, or when ``lp_solver`` cannot load (``lp_missing`` says why:
    the plan then reports its LP bound as not computed, and is planned all the same).
    """
    mip = get_backend(solver)
    if not lp_bound:
        return Solvers(mip)
    try:
        return Solvers(mip, get_backend(lp_solver))
    except BackendUnavailable as exc:
        return Solvers(mip, None, str(exc))


__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "FEATURE_NAMES",
    "PATTERNS",
    "REGISTRY",
    "Backend",
    "BackendEntry",
    "BackendPattern",
    "BackendUnavailable",
    "DualLpSession",
    "FeatureUnsupported",
    "Features",
    "LpMethod",
    "LpSolution",
    "NewColumns",
    "ObjectiveName",
    "SolveParams",
    "SolverResult",
    "Solvers",
    "available_backends",
    "backend_features",
    "backend_with",
    "get_backend",
    "is_available",
    "known_names",
    "one_of",
    "plugin_names",
    "register_solver",
    "resolve_solvers",
    "solvers_with",
    "unregister_solver",
]
