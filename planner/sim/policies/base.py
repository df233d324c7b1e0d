"""The interface every replay policy implements.

A policy sees only the round instance (:func:`planner.sim.round_instance.round_instance`):
the queued jobs with their remaining steps and current configuration, the cluster, the
profiles, the round's budget; and beside it the :class:`~planner.sim.round_instance.ReplayRound`:
the round's start and each job's requested GPU count and arrival time. It returns
:class:`~planner.core.assemble.Allocation` s; the engine places them with
:func:`planner.core.assemble.assemble_plan` (the same buddy placement and fewest powered
nodes for every policy) and rejects any plan the validator does not accept.

With a budget, every policy must keep the round's predicted energy
(:mod:`planner.core.economics`: dynamic energy plus node and idle energy of the nodes it powers)
within ``instance.round.budget_j``; the validator enforces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from planner.contracts.domain import Instance
from planner.contracts.plan import PlanStatus
from planner.core.assemble import Allocation
from planner.sim.round_instance import ReplayRound


@dataclass(frozen=True)
class Decision:
    """A policy's answer for one round.

    ``status`` is the plan status the engine records (``optimal``/``feasible``/``fallback``;
    heuristics report ``feasible``); ``solver`` names what made the decision; ``detail`` is
    anything worth logging (e.g. the solver's stages).
    """

    allocations: tuple[Allocation, ...]
    solver: str
    status: PlanStatus = "feasible"
    detail: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    """Why the plan is not the solver's plan for its objective (see ``PlanRound.notes``)."""


@runtime_checkable
class Policy(Protocol):
    """``name`` identifies the policy in outputs; ``decide`` plans one round."""

    name: str

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        """The allocations of the round ``instance`` describes (``context``: what the instance does not carry)."""
        ...
