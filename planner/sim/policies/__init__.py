"""Replay policies behind one interface (:class:`~planner.sim.policies.base.Policy`).

========== ====================================================================================
name       what it does (module docstrings give the rule and the paper it follows)
========== ====================================================================================
fifo-max   FCFS, exclusive, requested GPU count, highest setting: the production default
zeus       as fifo-max, each job at Zeus's least ``eta*E + (1-eta)*Pmax*T`` setting (NSDI'23)
eaco       FCFS exclusive at the highest setting, then waiting jobs paired onto running ones
           when both keep ``min_pair_rate`` (EaCO, arXiv:2412.08294)
powerflow  GPU type, count and setting by marginal progress per joule within the round
           budget (PowerFlow, arXiv:2304.06381)
wattplan   the round model, planned by the front door (one :class:`planner.planning.Planner` per replay)
========== ====================================================================================

Modules: ``base`` (the interface and the helpers every policy shares), ``fcfs`` (the first-come first-served
walk the baselines share), ``ledger`` (GPUs and energy a policy has handed out this round), and one module per
policy: ``fifo_max``, ``zeus``, ``eaco``, ``powerflow``, ``wattplan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.contracts.defaults import ZEUS_ETA
from planner.contracts.request import REPLAY_REQUEST, PlanRequest
from planner.sim.policies.base import Decision, Policy
from planner.sim.policies.eaco import Eaco
from planner.sim.policies.fifo_max import FifoMax
from planner.sim.policies.powerflow import PowerFlow
from planner.sim.policies.wattplan import Wattplan
from planner.sim.policies.zeus import Zeus

POLICY_NAMES = ("fifo-max", "zeus", "eaco", "powerflow", "wattplan")


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    """Knobs of the policies that have any: ``zeus_eta``, and wattplan's planning request."""

    zeus_eta: float = ZEUS_ETA
    request: PlanRequest = field(default_factory=lambda: REPLAY_REQUEST)


def make_policy(name: str, opts: PolicyOptions | None = None) -> Policy:
    """A fresh policy by name (one of :data:`POLICY_NAMES`)."""
    o = opts or PolicyOptions()
    if name == "fifo-max":
        return FifoMax()
    if name == "zeus":
        return Zeus(eta=o.zeus_eta)
    if name == "eaco":
        return Eaco()
    if name == "powerflow":
        return PowerFlow()
    if name == "wattplan":
        return Wattplan(o.request)
    raise ValueError(f"unknown policy {name!r}; choose from {', '.join(POLICY_NAMES)}")


__all__ = ["POLICY_NAMES", "Decision", "Policy", "PolicyOptions", "make_policy"]
