"""``wattplan``: the round model, planned every round exactly as ``wattplan plan`` plans it.

Plans the round instance through the front door (one :class:`planner.planning.Planner` per replay) (objective, budget
and rules from the instance; solver, time limit, threads and seed from the replay's
:class:`~planner.contracts.request.PlanRequest`, :data:`~planner.contracts.request.REPLAY_REQUEST` by default)
and takes its plan's allocations as they are. The front door always returns a validated
plan: the solver's, or the greedy fallback when no solver plan arrived in time (status
``fallback``, counted in the replay's summary). The replay's request computes no LP bound:
the replay does not report it and it would cost solver time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.request import REPLAY_REQUEST, PlanRequest
from wattplan.planner.core.assemble import Allocation
from wattplan.planner.sim.policies.base import Decision
from wattplan.planner.sim.policies.ledger import instance_order
from wattplan.planner.sim.round_instance import ReplayRound


def plan_allocations(instance: Instance, plan: Plan) -> tuple[Allocation, ...]:
    """The allocations a placed plan runs: one per exclusive job, one per pair (instance order)."""
    out: list[Allocation] = []
    seen: set[str] = set()
    for e in plan.running():
        if e.job_id in seen:
            continue
        ids = instance_order(instance, e.job_id, e.shares_with) if e.shares_with else (e.job_id,)
        seen.update(ids)
        out.append(Allocation(ids, e.gpu_type or "", e.gpus or 0, e.setting or 0))
    order = {j.id: i for i, j in enumerate(instance.jobs)}
    return tuple(sorted(out, key=lambda a: order[a.job_ids[0]]))


@dataclass
class Wattplan:
    """The planner's own round model (see the module docstring)."""

    request: PlanRequest = field(default_factory=lambda: REPLAY_REQUEST)
    name = "wattplan"
    _planner: planning.Planner | None = field(default=None, init=False, repr=False, compare=False)

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        """Plan the round through the front door (its solvers resolved once per replay) and run its allocations.

        ``context`` is not read: the round model plans from the instance alone.
        """
        if self._planner is None:
            self._planner = planning.Planner(self.request)
        plan = self._planner.plan(instance)
        r = plan.round
        note = "; ".join(r.notes().values())
        detail = {"solver": r.solver, "gap": r.gap, "clock_stops": r.report.clock_stops}
        return Decision(plan_allocations(instance, plan), solver=r.solver, status=r.status, detail=detail, note=note)
