"""A cluster whose nodes stay powered: the round sees marginal power, and plans keep jobs where they run.

- :func:`planner.sim.round_instance.nodes_stay_on`: node and idle power become 0, each profile's power drops by
  its GPU type's idle power, so a job's dynamic energy ``n (P - Pidle) t`` is unchanged and the node term is 0;
- :func:`planner.core.assemble.with_every_node_on`: the same allocations placed with every node allowed keep a
  running job's GPUs where packing onto the fewest nodes would move it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from wattplan.planner.contracts.domain import CurrentConfig, GpuType, Instance, Job, NodeGpus, Profile, RoundSpec
from wattplan.planner.contracts.plan import Plan, PlannedJob
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.core.assemble import Allocation, SolveInfo, allocations_of, assemble_plan, with_every_node_on
from wattplan.planner.core.economics import job_outcome
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import nodes_stay_on

V100 = GpuType("v100", 2, 8, 34.0, 300.0, "power_limit_w", (150, 250))


def test_nodes_stay_on_keeps_each_jobs_dynamic_energy() -> None:
    _, ctx = prepare(ReplaySpec(trace=shipped("live/gavel_mix.trace"), cluster="v100:16", max_jobs=5))
    seen = nodes_stay_on(ctx)
    g, g2 = ctx.gpu_types[0], seen.gpu_types[0]
    assert (g2.idle_power_w, g2.node_power_w, g2.powered_node_w) == (0.0, 0.0, 0.0)
    assert g.idle_power_w > 0 and g.node_power_w > 0
    for t, profs in ctx.profiles_by_type.items():
        for p, q in zip(profs, seen.profiles_by_type[t], strict=True):
            assert q.steps_per_s == p.steps_per_s and q.power_w == pytest.approx(p.power_w - g.idle_power_w)
            job = Job("1", t, 1000.0, (p.gpus,))
            before = job_outcome(_inst(g, p), job, g, p.gpus, p.setting, 1.0)
            after = job_outcome(_inst(g2, q), job, g2, q.gpus, q.setting, 1.0)
            assert before is not None and after is not None
            assert after.energy_j == pytest.approx(before.energy_j) and after.steps == pytest.approx(before.steps)
    assert seen.pairs == ctx.pairs


def _job(plan: Plan, job_id: str) -> PlannedJob:
    return next(j for j in plan.jobs if j.job_id == job_id)


def _inst(g: GpuType, p: Profile, *jobs: Job) -> Instance:
    return Instance(RoundSpec.from_rules(0, RoundRules(), None, 1.0), (g,), jobs, (p,), (), {})


def test_every_node_on_keeps_a_running_job_on_its_node() -> None:
    prof = Profile("a", "v100", 1, 250, 1.0, 200.0)
    # jobs 1 and 2 run on GPU 0 of nodes 0 and 1. Packed onto the fewest nodes (one), one of them must move.
    j1 = Job("1", "a", 1e6, (1,), current=CurrentConfig("v100", 1, 250, None, (NodeGpus("v100-0", (0,)),)))
    j2 = Job("2", "a", 1e6, (1,), current=CurrentConfig("v100", 1, 250, None, (NodeGpus("v100-1", (0,)),)))
    inst = _inst(V100, prof, j1, j2)
    allocs = [Allocation(("1",), "v100", 1, 250), Allocation(("2",), "v100", 1, 250)]
    packed = assemble_plan(inst, allocs, SolveInfo("test", "optimal"))
    assert packed.round.nodes_on == {"v100": 1}
    assert {ng.node for ng in _job(packed, "2").placement} == {"v100-0"}  # moved: a restart on Slurm
    spread = with_every_node_on(inst, packed)
    assert spread.round.nodes_on == {"v100": 2}
    assert _job(spread, "1").placement == (NodeGpus("v100-0", (0,)),)  # both kept where they run
    assert _job(spread, "2").placement == (NodeGpus("v100-1", (0,)),)
    assert sorted(a.job_ids for a in allocations_of(inst, spread)) == [("1",), ("2",)]
    assert replace(_job(spread, "2"), placement=()) == replace(_job(packed, "2"), placement=())
    assert spread.round.energy_j > packed.round.energy_j  # the second node's power is now counted
