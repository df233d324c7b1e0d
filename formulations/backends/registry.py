"""The backends as data: one :class:`BackendEntry` per built-in backend, and the ``pulp:NAME`` pattern.

Everything that names solvers reads this table: :func:`get_backend`, :func:`backend_features`,
:func:`available_backends`, :func:`solvers_with`, the front door's checks and messages
(:mod:`planner.planning`), the command line's help, the tests parametrised over backends and
``benchmarks/bound_audit.sh``. Adding a backend is its own module plus one entry of :data:`REGISTRY`
(docs/design.md §5.7).

Solvers from outside the package (docs/design.md §5.7.1), looked up after the built-ins:

* :func:`register_solver` in this process (a script driving the planner from Python);
* the patterns: ``pulp:NAME`` and ``cmd:COMMAND``, a command-line solver on an MPS file
  (:mod:`formulations.backends.command`);
* entry points of the group :data:`ENTRY_POINT_GROUP` (``wattplan.solvers``): the entry point's name is the
  solver's, its object a factory ``() -> Backend`` (a backend class) with a ``features`` attribute. An entry point is
  imported only when its solver is asked for; lists read the package metadata alone. ``bench`` runs every solve in
  a fresh process, where a solver registered by :func:`register_solver` in the parent is unknown: there a plug-in
  is an entry point or a ``cmd:`` command.

Plug-in backends are planned by the same strategy as the built-ins and their plans pass the same validator;
lists of built-ins (:data:`BUILTIN`, :func:`available_backends`, :func:`solvers_with`) leave them out.

Importing this module loads no solver library: a backend module imports its library only when it
solves, and :func:`is_available` (which may import it) runs once per process and name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from importlib.metadata import EntryPoint, entry_points

from wattplan.formulations.backends import cbc, command, cpsat, highs, ortools_mip, pulp_backend, scip
from wattplan.formulations.backends.base import Backend, BackendUnavailable, Features


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
    word: str = "NAME"
    """What follows the prefix, in help texts."""

    @property
    def placeholder(self) -> str:
        """How help texts write the pattern: ``pulp:NAME``, ``cmd:COMMAND``."""
        return f"{self.prefix}{self.word}"

    def matches(self, name: str) -> bool:
        """True for ``prefix`` followed by a non-empty name."""
        return name.startswith(self.prefix) and len(name) > len(self.prefix)


REGISTRY: tuple[BackendEntry, ...] = (
    BackendEntry(
        "cbc",
        cbc.CbcBackend,
        cbc.CbcBackend.features,
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
    BackendPattern(
        command.PREFIX,
        command.CommandBackend,
        command.CommandBackend.features,
        'a command on an MPS file, e.g. cmd:"mysolver {mps} -o {sol} -t {time_limit}"',
        "COMMAND",
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


ENTRY_POINT_GROUP = "wattplan.solvers"
"""The entry-point group plug-in solvers are published under (``[project.entry-points."wattplan.solvers"]``)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
"""A plug-in solver's name: one word of letters, digits and ``_.+-`` (no ``:``, which the patterns use)."""
_registered: dict[str, BackendEntry] = {}


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a plug-in solver, or None."""
    if not isinstance(name, str) or not _NAME.match(name):
        return f"a solver name is one word of letters, digits and _.+- (no ':'), got {name!r}"
    if name in _BY_NAME or name == "greedy":
        return f"{name!r} is a built-in solver"
    return None


def register_solver(
    name: str,
    factory: Callable[[], Backend],
    *,
    features: Features | None = None,
    description: str = "",
    install_hint: str = "",
    replace: bool = False,
) -> None:
    """Make ``factory`` the solver called ``name`` in this process (``--solver name``; module docstring).

    ``factory()`` returns a fresh :class:`~formulations.backends.base.Backend`; ``features`` default to the
    factory's own ``features`` attribute (a backend class has one). Raises ``ValueError`` for a bad or built-in
    name, a name registered already (unless ``replace``), a factory that is not callable or no features.
    """
    problem = _name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    if not callable(factory):
        raise ValueError(f"the factory of solver {name!r} is not callable: {factory!r}")
    if name in _registered and not replace:
        raise ValueError(f"solver {name!r} is registered already (replace=True replaces it)")
    found = features if features is not None else getattr(factory, "features", None)
    if not isinstance(found, Features):
        raise ValueError(f"solver {name!r}: give features=Features(...) or a factory with a 'features' attribute")
    _registered[name] = BackendEntry(name, factory, found, install_hint, description or "registered in Python")


def unregister_solver(name: str) -> None:
    """Forget the solver ``name`` registered by :func:`register_solver` (nothing if it is not registered)."""
    _registered.pop(name, None)
    is_available.cache_clear()


def _entry_points() -> dict[str, EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP` with usable names (the first of a repeat; not loaded)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if _name_problem(ep.name) is None:
            found.setdefault(ep.name, ep)
    return found


def plugin_names() -> tuple[str, ...]:
    """The plug-in solvers: registered ones, then entry points (sorted); nothing is loaded."""
    return (*_registered, *sorted(n for n in _entry_points() if n not in _registered))


def _entry_point_entry(name: str) -> BackendEntry | None:
    """The entry point ``name`` loaded as a :class:`BackendEntry`; :class:`BackendUnavailable` when it is broken."""
    ep = _entry_points().get(name)
    if ep is None:
        return None
    where = f"entry point {ep.value} in {ENTRY_POINT_GROUP}"
    try:
        factory = ep.load()
    except Exception as exc:  # a broken plug-in: say which and why
        raise BackendUnavailable(f"solver {name!r} ({where}) cannot be loaded: {type(exc).__name__}: {exc}") from None
    features = getattr(factory, "features", None)
    if not callable(factory) or not isinstance(features, Features):
        raise BackendUnavailable(f"solver {name!r} ({where}) is not a backend factory with a 'features' attribute")
    return BackendEntry(name, factory, features, "", f"plug-in ({ep.value})")


def known_names() -> str:
    """Every name :func:`get_backend` knows (plug-ins included), for error messages."""
    return one_of([*BUILTIN, *plugin_names(), *(f"{p.placeholder} ({p.description})" for p in PATTERNS)])


def _lookup(name: str) -> tuple[Callable[[], Backend], Features, str] | None:
    """How to make the backend called ``name``, its features and install hint; None for an unknown name.

    Built-ins, registered solvers, the patterns, then entry points (loaded here: a broken one raises
    :class:`BackendUnavailable`).
    """
    entry = _BY_NAME.get(name) or _registered.get(name)
    if entry is not None:
        return entry.factory, entry.features, entry.install_hint
    for pattern in PATTERNS:
        if pattern.matches(name):
            rest = name[len(pattern.prefix) :]
            return functools.partial(pattern.factory, rest), pattern.features, ""
    entry = _entry_point_entry(name) if _name_problem(name) is None else None
    if entry is not None:
        return entry.factory, entry.features, entry.install_hint
    return None


def backend_features(name: str) -> Features | None:
    """The features the backend called ``name`` declares, or None for an unknown name.

    Nothing is loaded but a plug-in's entry point (a broken one raises :class:`BackendUnavailable`).
    """
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


def backend_with(*features: str) -> Backend:
    """The first available built-in backend with every one of ``features``; :class:`BackendUnavailable` when none."""
    names = [name for name in solvers_with(features[0]) if all(name in solvers_with(f) for f in features[1:])]
    for name in names:
        if is_available(name):
            return get_backend(name)
    wanted = " and ".join(features)
    among = f"one of {one_of(names)}" if names else "no built-in backend has them all"
    raise BackendUnavailable(f"no backend with {wanted} is available on this machine ({among})")
