"""The backends as data: one :class:`BackendEntry` per built-in backend, and the ``pulp:NAME`` pattern.

Everything that names solvers reads this table: :func:`get_backend`, :func:`backend_features`,
:func:`available_backends`, :func:`solvers_with`, the front door's checks and messages
(:mod:`planner.planning`), the command line's help, the tests parametrised over backends and
``benchmarks/bound_audit.sh``. Adding a backend is its own module plus one entry of :data:`REGISTRY`
(docs/design.md §5.7).

Importing this module loads no solver library: a backend module imports its library only when it
solves, and :func:`is_available` (which may import it) runs once per process and name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields

from formulations.backends import cpsat, highs, ortools_mip, pulp_backend, scip
from formulations.backends.base import Backend, BackendUnavailable, Features


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """A built-in backend: its name, how to make it, what it can do, how to install it, what it is.

    ``features`` is the backend class's own ``features`` (the same object, never a copy);
    ``description``: one line for help texts.
    """

    name: str
    factory: Callable[[], Backend]
    features: Features
    install_hint: str
    description: str


@dataclass(frozen=True, slots=True)
class BackendPattern:
    """A family of backends named ``prefix + NAME`` (``pulp:GUROBI_CMD``): ``factory(NAME)`` makes one."""

    prefix: str
    factory: Callable[[str], Backend]
    features: Features
    description: str

    @property
    def placeholder(self) -> str:
        """How help texts write the pattern: ``pulp:NAME``."""
        return f"{self.prefix}NAME"

    def matches(self, name: str) -> bool:
        """True for ``prefix`` followed by a non-empty name."""
        return name.startswith(self.prefix) and len(name) > len(self.prefix)


REGISTRY: tuple[BackendEntry, ...] = (
    BackendEntry(
        "cbc",
        lambda: pulp_backend.PulpBackend(pulp_backend.CBC, label="cbc"),
        pulp_backend.PulpBackend.features,
        pulp_backend.INSTALL_HINT,
        "PuLP's bundled CBC through an MPS file; fast, no bound of its own",
    ),
    BackendEntry(
        highs.HighsBackend.name,
        highs.HighsBackend,
        highs.HighsBackend.features,
        highs.INSTALL_HINT,
        "HiGHS through highspy; proves its own bound",
    ),
    BackendEntry(
        cpsat.CpSatBackend.name,
        cpsat.CpSatBackend,
        cpsat.CpSatBackend.features,
        cpsat.INSTALL_HINT,
        "OR-Tools CP-SAT on the integer-scaled model; no LP relaxation",
    ),
    BackendEntry(
        scip.ScipBackend.name,
        scip.ScipBackend,
        scip.ScipBackend.features,
        scip.INSTALL_HINT,
        "SCIP through PySCIPOpt, in memory; proves its own bound",
    ),
    BackendEntry(
        ortools_mip.OrtoolsCbcBackend.name,
        ortools_mip.OrtoolsCbcBackend,
        ortools_mip.OrtoolsCbcBackend.features,
        ortools_mip.INSTALL_HINT,
        "OR-Tools' CBC in memory; no start, no bound of its own",
    ),
)
"""Every built-in backend, in the order lists and messages show them."""

PATTERNS: tuple[BackendPattern, ...] = (
    BackendPattern(
        "pulp:",
        pulp_backend.PulpBackend,
        pulp_backend.PulpBackend.features,
        "any PuLP solver, e.g. pulp:GUROBI_CMD",
    ),
)
"""Backends named by a pattern."""

BUILTIN: tuple[str, ...] = tuple(entry.name for entry in REGISTRY)
"""The names of the built-in backends, registry order."""
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Features))
"""Every flag of :class:`Features`."""
_BY_NAME = {entry.name: entry for entry in REGISTRY}


def one_of(names: list[str] | tuple[str, ...]) -> str:
    """``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def known_names() -> str:
    """Every name :func:`get_backend` knows, for error messages."""
    return one_of([*BUILTIN, *(f"{p.placeholder} ({p.description})" for p in PATTERNS)])


def _lookup(name: str) -> tuple[Callable[[], Backend], Features, str] | None:
    """How to make the backend called ``name``, its features and install hint; None for an unknown name."""
    entry = _BY_NAME.get(name)
    if entry is not None:
        return entry.factory, entry.features, entry.install_hint
    for pattern in PATTERNS:
        if pattern.matches(name):
            rest = name[len(pattern.prefix) :]
            return functools.partial(pattern.factory, rest), pattern.features, ""
    return None


def backend_features(name: str) -> Features | None:
    """The features the backend called ``name`` declares, or None for an unknown name (nothing loaded)."""
    found = _lookup(name)
    return None if found is None else found[1]


@functools.cache
def is_available(name: str) -> bool:
    """True when the backend called ``name`` loads on this machine; asked once per process and name."""
    found = _lookup(name)
    return found is not None and found[0]().is_available()


def get_backend(name: str) -> Backend:
    """The backend called ``name``; raises :class:`BackendUnavailable` with a clear reason."""
    found = _lookup(name)
    if found is None:
        raise BackendUnavailable(f"unknown solver {name!r}: use {known_names()}")
    factory, _, hint = found
    if not is_available(name):
        raise BackendUnavailable(f"solver {name!r} is not available on this machine" + (f" ({hint})" if hint else ""))
    return factory()


def available_backends() -> list[str]:
    """The built-in backends that load on this machine, registry order."""
    return [name for name in BUILTIN if is_available(name)]


def solvers_with(feature: str) -> list[str]:
    """The built-in backends whose :class:`Features` have ``feature`` true, registry order (loaded or not)."""
    if feature not in FEATURE_NAMES:
        raise ValueError(f"unknown feature {feature!r}; one of {', '.join(FEATURE_NAMES)}")
    return [entry.name for entry in REGISTRY if getattr(entry.features, feature)]


def backend_with(feature: str) -> Backend:
    """The first available built-in backend with ``feature``; :class:`BackendUnavailable` when none loads."""
    names = solvers_with(feature)
    for name in names:
        if is_available(name):
            return get_backend(name)
    raise BackendUnavailable(f"no backend with {feature} is available on this machine (one of {one_of(names)})")
