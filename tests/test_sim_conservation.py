"""Conservation in replays of the scheduler loop on the simulated Slurm.

All the work asked is done; the energy split adds up, to the cluster's draw step by step and to the jobs' own
dynamic energy; with every node on, the node and idle energies are the powered cluster's draw over the whole window;
every round instance the agent builds is well formed and every plan it applies is valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.sim_slurm import IDLE, p, x
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.agent.loop import Agent
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_checks import instance_problems
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.control import slurm_replay
from wattplan.planner.control.sim_slurm import SimulatedSlurm
from wattplan.planner.control.slurm_replay import SimulatedCluster, SlurmReplayResult, replay_on_slurm
from wattplan.planner.core.assemble import with_every_node_on
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
BURST = ROOT / "instances" / "sources" / "gavel" / "traces" / "6214e9.trace"
BASELINES = ("fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow")
TYPES = ("ResNet-18 (batch size 32)", "ResNet-50 (batch size 128)", "Transformer (batch size 128)")
J_PER_KWH = 3.6e6
SETUP = SimulatedCluster(load_s=30.0)
_PARTS = ("energy_node_kwh", "energy_idle_kwh", "energy_dynamic_kwh")


@dataclass
class LoopSpy:
    """What a replay on the simulated Slurm did: its cluster, and each round's instance and plan.

    ``rounds`` holds ``(instance, plan)`` for every round the agent's policy planned, or ``(instance, error)`` for one
    whose plan was refused (the loop then keeps what runs).
    """

    slurms: list[SimulatedSlurm] = field(default_factory=list)
    rounds: list[tuple[Instance, Plan | Exception]] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> LoopSpy:
        """Record through ``monkeypatch``: the replay's simulated Slurm as it is built, the agent's plans as made."""
        build, plan = slurm_replay.simulated_slurm, Agent._plan

        def built(*args: Any, **kwargs: Any) -> SimulatedSlurm:
            slurm = build(*args, **kwargs)
            self.slurms.append(slurm)
            return slurm

        def planned(agent: Agent, instance: Instance, queued: Sequence[JobState], now_s: float) -> Plan:
            try:
                out = plan(agent, instance, queued, now_s)
            except Exception as e:
                self.rounds.append((instance, e))
                raise
            self.rounds.append((instance, out))
            return out

        monkeypatch.setattr(slurm_replay, "simulated_slurm", built)
        monkeypatch.setattr(Agent, "_plan", planned)
        return self

    @property
    def slurm(self) -> SimulatedSlurm:
        """The simulated Slurm of the last replay."""
        assert self.slurms, "no replay ran"
        return self.slurms[-1]


def check_conservation(
    result: SlurmReplayResult, slurm: SimulatedSlurm, asked: Mapping[str, float], ctx: ClusterContext
) -> None:
    """The invariants every completed replay with every node on satisfies; ``asked``: each job's steps (trace id).

    Energy (J): ``E = E_node + E_idle + E_dyn`` is the sum of the cluster's power steps ``W (t1 - t0)``, which tile
    the window from the first arrival to the last completion (``M`` s long); ``E_node = sum_g N_g Pnode_g M`` and
    ``E_idle = sum_g N_g K_g Pidle_g M``; ``E_dyn`` is the sum of the jobs' own dynamic energy, and the jobs' GPU
    energy (their GPUs' whole draw while they hold them) lies between ``E_dyn`` and ``E_idle + E_dyn``.
    """
    s = result.summary
    assert (s["stop_reason"], s["completed"], s["jobs"]) == ("completed", len(asked), len(asked))
    assert {r["job_id"]: r["steps"] for r in result.jobs} == pytest.approx(dict(asked), rel=1e-9)
    for r in result.jobs:
        assert r["arrival_s"] <= r["start_s"] < r["finish_s"], r
        assert r["jct_s"] == pytest.approx(r["finish_s"] - r["arrival_s"])
    first, last = min(r["arrival_s"] for r in result.jobs), max(r["finish_s"] for r in result.jobs)
    window_s = last - first
    assert s["makespan_s"] == pytest.approx(window_s)
    total_j, node_j, idle_j, dyn_j = (s[k] * J_PER_KWH for k in ("energy_kwh", *_PARTS))
    assert total_j == pytest.approx(node_j + idle_j + dyn_j, rel=1e-12)
    steps = result.power_steps
    assert steps[0][0] == pytest.approx(first) and steps[-1][1] == pytest.approx(last)
    assert all(a[1] == b[0] for a, b in zip(steps, steps[1:], strict=False))  # no gap, no overlap
    assert sum(w * (t1 - t0) for t0, t1, w in steps) == pytest.approx(total_j, rel=1e-9)
    gpus = ctx.real.gpu_types
    assert node_j == pytest.approx(sum(g.nodes * g.node_power_w for g in gpus) * window_s, rel=1e-9)
    assert idle_j == pytest.approx(sum(g.total_gpus * g.idle_power_w for g in gpus) * window_s, rel=1e-9)
    records = slurm.job_records()
    assert all(r.dynamic_energy_j >= 0.0 for r in records)
    assert sum(r.dynamic_energy_j for r in records) == pytest.approx(dyn_j, rel=1e-9)
    gpu_j = sum(r.gpu_energy_j for r in records)
    assert dyn_j * (1 - 1e-9) <= gpu_j <= (idle_j + dyn_j) * (1 + 1e-9)


def check_rounds(spy: LoopSpy) -> None:
    """Every round instance passes the instance checks; every plan, as placed and as applied, the validator."""
    for instance, plan in spy.rounds:
        assert not isinstance(plan, Exception), plan
        assert instance_problems(instance_to_doc(instance)) == []
        assert validate_plan(instance, plan) == []
        assert validate_plan(instance, with_every_node_on(instance, plan)) == []


def top_dynamic_j(rows: list[tuple[str, float, float, int]]) -> float:
    """Each job's steps at its requested count and the top setting: ``sum_j n_j (P_j - Pidle) S_j / X_j`` (J)."""
    return sum(gpus * (p(kind, gpus) - IDLE) * steps / x(kind, gpus) for kind, steps, _, gpus in rows)


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(TYPES),
        st.integers(200, 4000),  # steps
        st.integers(0, 600),  # arrival (s)
        st.sampled_from([1, 2, 4, 8]),  # requested GPUs
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, policy=st.sampled_from(("slurm", *BASELINES)), nodes=st.integers(1, 2))
def test_baselines_conserve_work_and_energy(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int, int, int]], policy: str, nodes: int
) -> None:
    """Slurm alone and every baseline through the agent do every step asked, and their energy adds up.

    Slurm alone and fifo-max run every job on its requested GPUs at the top setting, whatever the order: their dynamic
    energy is the workload's at full power (a load draws idle power only, a requeue keeps the steps done).
    """
    trace = write_gavel_trace(tmp_path_factory.mktemp("c") / "jobs.trace", rows)
    spec = ReplaySpec(trace=trace, cluster=f"v100:{8 * nodes}", policies=(policy,))
    workload, ctx = prepare(spec)
    with pytest.MonkeyPatch.context() as mp:
        spy = LoopSpy().install(mp)
        result = replay_on_slurm(spec, policy, SETUP, prepared=(workload, ctx))
    check_conservation(result, spy.slurm, {j.id: j.total_steps for j in workload.jobs}, ctx)
    check_rounds(spy)
    assert bool(spy.rounds) == (policy != "slurm")
    if policy in ("slurm", "fifo-max"):
        full = [(t, float(s), float(a), g) for t, s, a, g in rows]
        assert result.summary["energy_dynamic_kwh"] * J_PER_KWH == pytest.approx(top_dynamic_j(full), rel=1e-9)


@pytest.fixture(scope="module")
def burst() -> tuple[ReplaySpec, tuple[Workload, ClusterContext]]:
    """Six jobs of a shipped Gavel trace on ``v100:8,p100:8``, with the workload and cluster they prepare."""
    spec = ReplaySpec(
        trace=BURST,
        cluster="v100:8,p100:8",
        start_s=4178073,
        max_jobs=6,
        policy_options=PolicyOptions(request=replace(REPLAY_REQUEST, solver="cbc", time_limit_s=2.0)),
    )
    return spec, prepare(spec)


@pytest.mark.parametrize("policy", ["slurm", *BASELINES, "wattplan"])
def test_every_policy_on_a_trace_slice(
    burst: tuple[ReplaySpec, tuple[Workload, ClusterContext]], policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six jobs of a shipped Gavel trace on one V100 and one P100 node: every policy finishes them all.

    Each conserves work and energy, and every round plan the agent applies validates (wattplan's included, each
    made by a solver).
    """
    spec, prepared = burst
    workload, ctx = prepared
    spy = LoopSpy().install(monkeypatch)
    result = replay_on_slurm(spec, policy, SETUP, prepared=prepared)
    assert len(result.jobs) == 6
    check_conservation(result, spy.slurm, {j.id: j.total_steps for j in workload.jobs}, ctx)
    check_rounds(spy)
    if policy == "wattplan":
        assert spy.rounds and all(isinstance(plan, Plan) and plan.round.solver for _, plan in spy.rounds)
