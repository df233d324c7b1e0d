"""The interface every replay policy implements.

A policy sees only the round instance (:func:`planner.sim.round_instance.round_instance`):
the queued jobs with their remaining steps and current configuration, the cluster, the
profiles, the round's budget; and beside it the :class:`~planner.sim.round_instance.ReplayRound`:
the round's start and each job's requested GPU count and arrival time. It returns
:class:`~planner.core.assemble.Allocation` s; the loop places them with
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

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import PlanStatus
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.sim.round_instance import ReplayRound


@dataclass(frozen=True)
class Decision:
    """A policy's answer for one round.

    ``status`` is the plan status the loop records (``optimal``/``feasible``/``fallback``;
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
    """What a replay policy is: a ``name`` and a ``decide`` that plans one round.

    **Each round** the loop calls ``decide(instance, context)`` once, with

    * ``instance`` (:class:`~planner.contracts.domain.Instance`): the queued jobs (``instance.jobs``, arrival
      order; ``remaining_steps``, the allowed GPU counts ``gpus``, ``weight`` and the ``current``
      configuration of a job that ran last round), the GPU types (``instance.gpu_types``: ``total_gpus``,
      ``gpus_per_node``, ``settings``, powers in W), the profiles (``instance.profile(job_type, gpu_type, gpus,
      setting)``: ``steps_per_s`` and ``power_w`` per GPU), the pair slowdowns and the round
      (``instance.round``: ``duration_s``, ``budget_j`` in J or None, ``objective``);
    * ``context`` (:class:`~planner.sim.round_instance.ReplayRound`): the round's start ``now_s`` (s),
      ``context.requested(job)`` (the GPUs the job asked for) and ``arrival_s`` by job id.

    **It returns** a :class:`Decision`: ``allocations``, each an :class:`~planner.core.assemble.Allocation`
    ``(job_ids, gpu_type, gpus, setting)`` (one job, or two that share the GPUs), jobs left out wait;
    ``solver`` (what decided, for the logs) and ``status`` (``feasible`` for a heuristic). The loop places
    the allocations (:func:`planner.core.assemble.assemble_plan`) and validates the plan: a GPU count or
    setting without a profile, more GPUs than the cluster has, or a plan over ``budget_j`` stops the replay
    with the validator's problems. A policy keeps no promise to the loop beyond that; it may keep state
    between rounds (a fresh policy is made per replay).

    A minimal policy, every job alone on its requested count of the first GPU type at its highest setting,
    while GPUs last (a budget is not checked: replay it without one)::

        from wattplan.planner.core.assemble import Allocation
        from wattplan.planner.sim.policies import Decision

        class Greedy:
            name = "mine"

            def decide(self, instance, context):
                g = instance.gpu_types[0]
                free, out = g.total_gpus, []
                for job in instance.jobs:
                    n, s = context.requested(job), max(g.settings)
                    ok = n in job.gpus and instance.profile(job.type, g.name, n, s) is not None
                    if ok and n <= free:
                        out.append(Allocation((job.id,), g.name, n, s))
                        free -= n
                return Decision(tuple(out), solver="mine")

        def make(options):  # the factory: options is a PolicyOptions
            return Greedy()

    Published as an entry point (``[project.entry-points."wattplan.policies"] mine = "my_pkg.policy:make"``)
    it replays with ``wattplan simulate TRACE --policy mine``; in one process,
    ``planner.sim.policies.register_policy("mine", make)`` does the same (docs/design.md §10.4).
    """

    name: str

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        """The allocations of the round ``instance`` describes (``context``: what the instance does not carry)."""
        ...
