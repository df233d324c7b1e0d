"""Conservation in replays.

All work done, energy = its parts = the planner's prediction, no GPU
over-used, every round instance well formed and every plan valid; budgets respected.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim_helpers import B, hand_context, hand_job, jobs_strategy, workload
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_checks import instance_problems
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.budget import EnergyBudget, PowerCap
from wattplan.planner.sim.energy_levers import LEVERS, PHASES
from wattplan.planner.sim.engine import SimResult, simulate
from wattplan.planner.sim.metrics import J_PER_KWH, summarise
from wattplan.planner.sim.policies import Decision, PolicyOptions, make_policy
from wattplan.planner.sim.policies.base import Policy
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import ReplayRound

ROOT = Path(__file__).resolve().parents[1]
BURST = ROOT / "instances" / "sources" / "gavel" / "traces" / "6214e9.trace"
BASELINES = ("fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow")


@dataclass
class Recorder:
    """Wraps a policy and keeps every round instance and decision."""

    inner: Policy
    seen: list[tuple[Instance, Decision]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    def decide(self, instance: Instance, context: ReplayRound) -> Decision:
        d = self.inner.decide(instance, context)
        self.seen.append((instance, d))
        return d


def check_conservation(result: SimResult, cluster_gpus: int, noise: bool = False) -> None:
    """The invariants every replay must satisfy."""
    rounds = result.rounds
    total_steps = sum(s.spec.total_steps for s in result.jobs)
    for s in result.jobs:
        if s.done:
            assert s.remaining_steps == 0 and s.steps_done == s.spec.total_steps
            assert s.finish_s >= s.spec.arrival_s
        assert s.dynamic_energy_j >= 0
    if result.stop_reason == "completed":
        assert all(s.done for s in result.jobs)
        assert sum(r.steps for r in rounds) == pytest.approx(total_steps, rel=1e-9)
    for r in rounds:
        assert r.gpus_used <= r.powered_gpus <= cluster_gpus
        assert r.busy_gpu_s <= r.powered_gpu_s + 1e-9
        assert r.energy_j == pytest.approx(r.node_j + r.idle_j + r.dynamic_j)
        if not noise:  # the simulator draws exactly what the planner's economics predicts
            assert r.energy_j == pytest.approx(r.predicted_j, rel=1e-9)
        # The energy by lever adds up to the round's energy, and no lever is negative.
        assert r.levers.total_j == pytest.approx(r.energy_j, rel=1e-9, abs=1e-6)
        assert r.phase in PHASES
        levers = [getattr(r.levers, name) for name in LEVERS if not (noise and name == "setting")]
        assert min(levers, default=0.0) >= -1e-6 * max(r.energy_j, 1.0)
    s = summarise(result)
    parts = s["energy_node_kwh"] + s["energy_idle_kwh"] + s["energy_dynamic_kwh"]
    assert s["energy_kwh"] == pytest.approx(parts)
    assert s["energy_kwh"] * J_PER_KWH == pytest.approx(sum(r.energy_j for r in rounds))
    assert s["energy_dynamic_kwh"] * J_PER_KWH == pytest.approx(sum(j.dynamic_energy_j for j in result.jobs))


def check_recorded(rec: Recorder) -> None:
    """Every round instance passes the instance checks and every plan the validator."""
    for inst, decision in rec.seen:
        assert instance_problems(instance_to_doc(inst)) == []
        plan = assemble_plan(inst, decision.allocations, SolveInfo(decision.solver, decision.status))
        assert validate_plan(inst, plan) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(BASELINES), nodes=st.integers(1, 2))
def test_baselines_conserve_work_and_energy(rows, policy: str, nodes: int) -> None:
    jobs = [hand_job(f"j{i}", t, a, s, 1 if t == B else g) for i, (t, a, s, g) in enumerate(rows)]
    ctx = hand_context(nodes=nodes)
    rec = Recorder(make_policy(policy))
    result = simulate(workload(jobs), ctx, rec)
    assert result.stop_reason == "completed"
    check_conservation(result, ctx.total_gpus)
    check_recorded(rec)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=jobs_strategy,
    policy=st.sampled_from(BASELINES),
    budget_kj=st.floats(10, 400),
    cap_w=st.floats(200, 1000),
)
def test_budgets_are_respected(rows, policy: str, budget_kj: float, cap_w: float) -> None:
    """An energy budget bounds the replay's energy; a power cap bounds every round's."""
    jobs = [hand_job(f"j{i}", t, a, s, 1 if t == B else g) for i, (t, a, s, g) in enumerate(rows)]
    ctx = hand_context(nodes=2)
    energy = simulate(workload(jobs), ctx, make_policy(policy), EnergyBudget(budget_kj * 1e3, floor_j=1e4))
    assert sum(r.energy_j for r in energy.rounds) <= budget_kj * 1e3 * (1 + 1e-9)
    assert energy.stop_reason in ("completed", "budget-exhausted")
    check_conservation(energy, ctx.total_gpus)
    capped = simulate(workload(jobs), ctx, make_policy(policy), PowerCap(cap_w))
    assert all(r.energy_j <= cap_w * ctx.rules.duration_s * (1 + 1e-9) for r in capped.rounds)
    assert capped.stop_reason in ("completed", "stalled")
    check_conservation(capped, ctx.total_gpus)


@pytest.fixture(scope="module")
def burst():
    spec = ReplaySpec(
        trace=BURST,
        cluster="v100:8,p100:8",
        start_s=4178073,
        max_jobs=10,
        policy_options=PolicyOptions(request=replace(REPLAY_REQUEST, solver="cbc", time_limit_s=2.0)),
    )
    return spec, *prepare(spec)


@pytest.mark.parametrize("policy", [*BASELINES, "wattplan"])
def test_every_policy_on_a_trace_slice(burst, policy: str) -> None:
    """Every policy finishes ten jobs of a shipped Gavel trace, conserving work and energy.

    Ten jobs of a shipped Gavel trace on one V100 and one P100 node: every policy finishes them all,
    conserves work and energy, and every round plan validates (the wattplan plans included).
    """
    spec, wl, ctx = burst
    rec = Recorder(make_policy(policy, spec.policy_options))
    result = simulate(wl, ctx, rec)
    assert result.stop_reason == "completed" and len(result.jobs) == 10
    check_conservation(result, ctx.total_gpus)
    check_recorded(rec)
    if policy == "wattplan":
        assert all(d.solver for _, d in rec.seen)
