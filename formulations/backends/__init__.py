"""Solver backends by name: ``cpsat``, ``highs``, ``cbc``, ``scip``, ``ortools-cbc`` and ``pulp:NAME``.

``cbc`` is PuLP's bundled CBC (through an MPS file), ``ortools-cbc`` OR-Tools' CBC (in memory),
``scip`` SCIP through PySCIPOpt.

This registry maps a backend name to its class; which names a user may ask for (``greedy``
included) is decided by the front door, :func:`planner.planning.plan`.
"""

from __future__ import annotations

from formulations.backends.base import (
    Backend,
    BackendUnavailable,
    Features,
    FeatureUnsupported,
    ObjectiveName,
    SolveParams,
    SolverResult,
    Solvers,
)
from formulations.backends.cpsat import CpSatBackend
from formulations.backends.highs import HighsBackend
from formulations.backends.ortools_mip import OrtoolsCbcBackend
from formulations.backends.pulp_backend import CBC, PulpBackend
from formulations.backends.scip import INSTALL_HINT as SCIP_INSTALL_HINT
from formulations.backends.scip import ScipBackend

BUILTIN = ("cbc", "highs", "cpsat", "scip", "ortools-cbc")
PULP_PREFIX = "pulp:"
NAMES = "cbc, highs, cpsat, scip, ortools-cbc or pulp:NAME (a PuLP solver name)"
"""Every name :func:`get_backend` knows, for error messages."""
INSTALL_HINTS = {"scip": SCIP_INSTALL_HINT}
"""How to install the library of a backend that is not available."""


def backend_features(name: str) -> Features | None:
    """The features the backend called ``name`` declares, or None for an unknown name (nothing loaded)."""
    if name == "cpsat":
        return CpSatBackend.features
    if name == "highs":
        return HighsBackend.features
    if name == "scip":
        return ScipBackend.features
    if name == "ortools-cbc":
        return OrtoolsCbcBackend.features
    if name == "cbc" or (name.startswith(PULP_PREFIX) and len(name) > len(PULP_PREFIX)):
        return PulpBackend.features
    return None


def get_backend(name: str) -> Backend:
    """The backend called ``name``; raises :class:`BackendUnavailable` with a clear reason."""
    backend: Backend
    if name == "cpsat":
        backend = CpSatBackend()
    elif name == "highs":
        backend = HighsBackend()
    elif name == "scip":
        backend = ScipBackend()
    elif name == "ortools-cbc":
        backend = OrtoolsCbcBackend()
    elif name == "cbc":
        backend = PulpBackend(CBC, label="cbc")
    elif name.startswith(PULP_PREFIX) and len(name) > len(PULP_PREFIX):
        backend = PulpBackend(name[len(PULP_PREFIX) :])
    else:
        raise BackendUnavailable(f"unknown solver {name!r}: use {NAMES}")
    if not backend.is_available():
        hint = INSTALL_HINTS.get(name)
        raise BackendUnavailable(f"solver {name!r} is not available on this machine" + (f" ({hint})" if hint else ""))
    return backend


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


def available_backends() -> list[str]:
    """The built-in backends that load on this machine."""
    names = []
    for name in BUILTIN:
        try:
            get_backend(name)
        except BackendUnavailable:
            continue
        names.append(name)
    return names


__all__ = [
    "BUILTIN",
    "Backend",
    "BackendUnavailable",
    "FeatureUnsupported",
    "Features",
    "ObjectiveName",
    "SolveParams",
    "SolverResult",
    "Solvers",
    "available_backends",
    "backend_features",
    "get_backend",
    "resolve_solvers",
]
