"""Replay policies behind one interface (:class:`~planner.sim.policies.base.Policy`).

========== ====================================================================================
name       what it does (module docstrings give the rule and the paper it follows)
========== ====================================================================================
fifo-max   FCFS, exclusive, requested GPU count, highest setting: the production default
fifo-maxq  as fifo-max, each job at MaxQ's setting (the lowest keeping 97% of full speed): the ``maxq`` baseline
zeus       as fifo-max, each job at Zeus's least ``eta*E + (1-eta)*Pmax*T`` setting (NSDI'23)
eaco       FCFS exclusive at the highest setting, then waiting jobs paired onto running ones
           when both keep ``min_pair_rate`` (EaCO, arXiv:2412.08294)
powerflow  GPU type, count and setting by marginal progress per joule within the round
           budget (PowerFlow, arXiv:2304.06381)
wattplan   the round model, planned by the front door (one :class:`planner.planning.Planner` per replay)
========== ====================================================================================

Modules: ``base`` (the interface and the helpers every policy shares), ``fcfs`` (the first-come first-served
walk the baselines share), ``ledger`` (GPUs and energy a policy has handed out this round), and one module per
policy: ``fifo_max``, ``fifo_maxq``, ``zeus``, ``eaco``, ``powerflow``, ``wattplan``; ``registry`` (policies by
name: the built-ins, :func:`register_policy` and the ``wattplan.policies`` entry points; docs/design.md §10.4).

Your own policy: a class with a ``name`` and ``decide(instance, context) -> Decision`` (see
:class:`~planner.sim.policies.base.Policy` for what it gets and returns, with an example), published as an entry
point of the group ``wattplan.policies`` whose object is a factory ``factory(options) -> policy``.
"""

from __future__ import annotations

from wattplan.planner.sim.policies.base import Decision, Policy
from wattplan.planner.sim.policies.registry import (
    ALL,
    BUILTIN_NAMES,
    ENTRY_POINT_GROUP,
    PolicyFactory,
    PolicyOptions,
    expand_policy_names,
    make_policy,
    plugin_error,
    policy_names,
    register_policy,
    unregister_policy,
)

POLICY_NAMES = BUILTIN_NAMES
"""The built-in policies (what ``--policy all`` replays); :func:`policy_names` adds the plug-ins."""

__all__ = [
    "ALL",
    "BUILTIN_NAMES",
    "ENTRY_POINT_GROUP",
    "POLICY_NAMES",
    "Decision",
    "Policy",
    "PolicyFactory",
    "PolicyOptions",
    "expand_policy_names",
    "make_policy",
    "plugin_error",
    "policy_names",
    "register_policy",
    "unregister_policy",
]
