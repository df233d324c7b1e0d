"""``wattplan``: the round model, solved every round exactly as ``wattplan plan`` solves it.

Calls :func:`formulations.solve.plan_round` on the round instance (objective, budget and
rules from the instance; solver, time limit, threads and seed from the replay's options)
and takes its plan's allocations as they are. ``plan_round`` always returns a validated
plan: the solver's, or the greedy fallback when no solver plan arrived in time (status
``fallback``, counted in the replay's summary). The LP relaxation bound is not computed
(``lp_bound=False``): the replay does not report it and it would cost solver time.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.assemble import Allocation
from planner.domain import Instance
from planner.plan import Plan
from planner.sim.policies.base import Decision
from planner.sim.policies.ledger import instance_order


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

    solver: str = "highs"
    time_limit_s: float = 5.0
    threads: int = 1
    seed: int = 0
    rel_gap: float = 1e-4
    name = "wattplan"

    def decide(self, instance: Instance) -> Decision:
        from formulations.solve import PlanRequest, plan_round

        request = PlanRequest(
            solver=self.solver,
            objective=None,
            time_limit_s=self.time_limit_s,
            rel_gap=self.rel_gap,
            threads=self.threads,
            seed=self.seed,
            lp_bound=False,
        )
        plan = plan_round(instance, request)
        r = plan.round
        note = "; ".join(r.notes().values())
        detail = {"solver": r.solver, "gap": r.gap}
        return Decision(plan_allocations(instance, plan), solver=r.solver, status=r.status, detail=detail, note=note)
