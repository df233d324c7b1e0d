"""Solver backends by name: ``cpsat``, ``highs``, ``cbc`` (PuLP's CBC) and ``pulp:NAME``."""

from __future__ import annotations

from formulations.backends.base import Backend, BackendUnavailable, Features, SolveParams, SolverResult
from formulations.backends.cpsat import CpSatBackend
from formulations.backends.highs import HighsBackend
from formulations.backends.pulp_backend import PulpBackend

BUILTIN = ("cpsat", "highs", "cbc")


def get_backend(name: str) -> Backend:
    """The backend called ``name``; raises :class:`BackendUnavailable` with a clear reason."""
    if name == "cpsat":
        backend: Backend = CpSatBackend()
    elif name == "highs":
        backend = HighsBackend()
    elif name == "cbc":
        backend = PulpBackend("PULP_CBC_CMD", label="cbc")
    elif name.startswith("pulp:") and len(name) > 5:
        backend = PulpBackend(name[5:])
    else:
        raise BackendUnavailable(f"unknown solver {name!r}: use cpsat, highs, cbc or pulp:NAME (a PuLP solver name)")
    if not backend.is_available():
        raise BackendUnavailable(f"solver {name!r} is not available on this machine")
    return backend


def available_backends() -> list[str]:
    names = []
    for name in BUILTIN:
        try:
            get_backend(name)
        except BackendUnavailable:
            continue
        names.append(name)
    return names


__all__ = [
    "Backend",
    "BackendUnavailable",
    "Features",
    "SolveParams",
    "SolverResult",
    "available_backends",
    "get_backend",
]
