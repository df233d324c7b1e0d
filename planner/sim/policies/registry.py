"""Replay policies by name: the built-ins as data, a registration call, and plug-ins from entry points.

A policy is made by a *factory*: a callable taking the replay's :class:`PolicyOptions` and returning a fresh
:class:`~planner.sim.policies.base.Policy` whose ``name`` is the name it was asked for. Names are looked up in
this order:

1. the built-ins (:data:`BUILTIN_POLICIES`: ``fifo-max``, ``fifo-maxq``, ``zeus``, ``eaco``, ``powerflow``,
   ``wattplan``);
2. policies registered in this process with :func:`register_policy` (a script or a notebook that drives the
   replay from Python);
3. entry points of the group :data:`ENTRY_POINT_GROUP` (``wattplan.policies``) of any installed distribution:
   the entry point's name is the policy's name and its object the factory. An entry point is imported only
   when its policy is made (listing names reads the package metadata alone), so a broken plug-in fails the
   replay that names it and nothing else.

``all`` (``--policy all``) means the built-ins only: a comparison's set of policies must not change because some
package is installed. A plug-in runs when it is named (``--policy mine``, or ``-p all -p mine``).

``simulate`` with several policies and ``frontier`` run each replay in a fresh spawned process: there a policy
registered by :func:`register_policy` in the parent process is unknown, while an entry point is found again. The
command line therefore reaches plug-ins through entry points; :func:`register_policy` serves in-process use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from wattplan.planner.contracts.defaults import ZEUS_ETA
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.request import REPLAY_REQUEST, PlanRequest
from wattplan.planner.sim.policies.base import Policy
from wattplan.planner.sim.policies.eaco import Eaco
from wattplan.planner.sim.policies.fifo_max import FifoMax
from wattplan.planner.sim.policies.fifo_maxq import FifoMaxq
from wattplan.planner.sim.policies.powerflow import PowerFlow
from wattplan.planner.sim.policies.wattplan import Wattplan
from wattplan.planner.sim.policies.zeus import Zeus

ENTRY_POINT_GROUP = "wattplan.policies"
"""The entry-point group plug-in policies are published under (``[project.entry-points."wattplan.policies"]``)."""
ALL = "all"
"""The ``--policy`` value that means every built-in policy."""


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    """Knobs of the policies that have any: ``zeus_eta``, and wattplan's planning request; plug-ins may read both."""

    zeus_eta: float = ZEUS_ETA
    request: PlanRequest = field(default_factory=lambda: REPLAY_REQUEST)


PolicyFactory = Callable[[PolicyOptions], Policy]
"""Makes a fresh policy from the replay's options (one call per replay)."""

BUILTIN_POLICIES: Mapping[str, PolicyFactory] = {
    "fifo-max": lambda o: FifoMax(),
    "fifo-maxq": lambda o: FifoMaxq(),
    "zeus": lambda o: Zeus(eta=o.zeus_eta),
    "eaco": lambda o: Eaco(),
    "powerflow": lambda o: PowerFlow(),
    "wattplan": lambda o: Wattplan(o.request),
}
"""The built-in policies in the order lists and ``all`` give them."""
BUILTIN_NAMES: tuple[str, ...] = tuple(BUILTIN_POLICIES)

_registered: dict[str, PolicyFactory] = {}


def plugin_error(name: str, where: str, message: str) -> InputError:
    """The error of a plug-in policy that cannot be loaded or made, naming the policy and where it came from."""
    return InputError(where, [Problem("bad-policy-plugin", f"policy {name!r} ({where})", message)])


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a policy, or None: it must be one word, not ``all``, not a built-in's."""
    if not isinstance(name, str) or not name or name != name.strip() or any(c in name for c in ", \t\n"):
        return f"a policy name is one word without commas or blanks, got {name!r}"
    if name == ALL:
        return f"{ALL!r} is reserved: it means every built-in policy"
    if name in BUILTIN_POLICIES:
        return f"{name!r} is a built-in policy"
    return None


def register_policy(name: str, factory: PolicyFactory, *, replace: bool = False) -> None:
    """Make ``factory`` the policy called ``name`` in this process (``--policy name``; see the module docstring).

    ``factory(options)`` returns a fresh :class:`~planner.sim.policies.base.Policy` whose ``name`` is ``name``.
    Raises ``ValueError`` for a bad name, a built-in's name, a name already registered (unless ``replace``)
    or a factory that is not callable.
    """
    problem = _name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    if not callable(factory):
        raise ValueError(f"the factory of policy {name!r} is not callable: {factory!r}")
    if name in _registered and not replace:
        raise ValueError(f"policy {name!r} is registered already (replace=True replaces it)")
    _registered[name] = factory


def unregister_policy(name: str) -> None:
    """Forget the policy ``name`` registered by :func:`register_policy` (nothing if it is not registered)."""
    _registered.pop(name, None)


def _entry_points() -> dict[str, EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP` by name (the first of a repeated name; not loaded)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def policy_names() -> tuple[str, ...]:
    """Every policy a replay may name: built-ins, then registered ones, then entry points (sorted); none loaded."""
    names = [*BUILTIN_NAMES, *_registered]
    names += sorted(n for n in _entry_points() if n not in names and _name_problem(n) is None)
    return tuple(names)


def _factory(name: str) -> tuple[PolicyFactory, str] | None:
    """The factory of ``name`` and where it comes from, loading an entry point if that is where it is."""
    if name in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[name], "built-in"
    if name in _registered:
        return _registered[name], "register_policy"
    ep = _entry_points().get(name)
    if ep is None or _name_problem(name) is not None:
        return None
    where = f"entry point {ep.value} in {ENTRY_POINT_GROUP}"
    try:
        loaded = ep.load()
    except Exception as exc:  # a broken plug-in: say which and why, never a traceback
        raise plugin_error(name, where, f"cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not callable(loaded):
        raise plugin_error(name, where, f"is not a factory (a callable): {loaded!r}")
    return loaded, where


def unknown_policy_message(name: str) -> str:
    """``'x'; choose from all, fifo-max, ...``: the names a replay may give, plug-ins included."""
    return f"{name!r}; choose from {ALL}, {', '.join(policy_names())}"


def make_policy(name: str, opts: PolicyOptions | None = None) -> Policy:
    """A fresh policy by name (:func:`policy_names`); ``ValueError`` for an unknown name.

    A plug-in that cannot be loaded, raises while made, or makes something that is not a policy called
    ``name`` is an :class:`InputError` saying so (:func:`plugin_error`).
    """
    found = _factory(name)
    if found is None:
        raise ValueError(f"unknown policy {unknown_policy_message(name)}")
    factory, where = found
    if where == "built-in":
        return factory(opts or PolicyOptions())
    try:
        policy = factory(opts or PolicyOptions())
    except Exception as exc:
        raise plugin_error(name, where, f"raised while making the policy: {type(exc).__name__}: {exc}") from None
    if not isinstance(policy, Policy):
        raise plugin_error(name, where, f"made {policy!r}, which has no 'name' and 'decide(instance, context)'")
    if policy.name != name:
        raise plugin_error(name, where, f"made a policy whose name is {policy.name!r}; it must be {name!r}")
    return policy


def expand_policy_names(names: Sequence[str], option: str = "--policy") -> tuple[str, ...]:
    """Policy names in the given order, ``all`` meaning every built-in; repeats kept once; unknown names raise.

    Raises an :class:`InputError` naming ``option[k]`` for each unknown name (and the names one may give),
    or ``option`` when no policy is named.
    """
    out: list[str] = []
    bad = []
    known = set(policy_names())
    for k, name in enumerate(names):
        for n in BUILTIN_NAMES if name == ALL else (name,):
            if n not in known:
                bad.append(Problem("unknown-policy", f"{option}[{k}]", unknown_policy_message(n)))
            elif n not in out:
                out.append(n)
    if bad or not out:
        raise InputError(option, bad or [Problem("no-policy", option, "name at least one policy")])
    return tuple(out)
