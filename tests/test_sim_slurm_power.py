"""Slurm's power saving on the simulated Slurm (planner.control.sim_slurm.PowerSaving), computed by hand.

A node that has held no job for ``SUSPEND`` s is powered down: it draws its idle power for ``TIMEOUT`` more seconds
(``POWERING_DOWN``, taking no job), then nothing (``POWERED_DOWN``). A job given a powered-down node waits ``RESUME`` s
for it to boot (``CONFIGURING``, the node drawing its idle power), then loads its checkpoint and runs. Slurm tries
the powered nodes first. Figures from the shipped library's V100 profiles (``Pidle`` = 34 W).
"""

from __future__ import annotations

import json
import math

import pytest

from tests.helpers.sim_slurm import CLOCK, DELAY, IDLE, LOAD, NODE_W, R18, TRUTH, p, simulated, x
from wattplan.planner.agent.slurm_queue import QUEUE_COMMAND, query_nodes
from wattplan.planner.control.sim_slurm import PowerSaving, SimJob, SimNode, SimulatedSlurm

SUSPEND, RESUME, TIMEOUT = 600.0, 300.0, 30.0
NODE_IDLE_W = NODE_W + 8 * IDLE  # one powered node with every GPU idle


def cluster(jobs: list[SimJob], nodes: int = 2, saving: PowerSaving | None = None) -> SimulatedSlurm:
    return simulated(jobs, (8,) * nodes, power_saving=saving or PowerSaving(SUSPEND, RESUME, TIMEOUT))


def job_states(sim: SimulatedSlurm) -> dict[int, tuple[str, str]]:
    """``{job id: (job_state, nodes)}`` as ``squeue --json`` prints them."""
    return {j["job_id"]: (j["job_state"], j["nodes"]) for j in json.loads(sim(QUEUE_COMMAND).stdout)["jobs"]}


def start_time_s(sim: SimulatedSlurm, job_id: int) -> float:
    """A job's ``start_time`` in ``squeue --json``, as emulated seconds."""
    (job,) = (j for j in json.loads(sim(QUEUE_COMMAND).stdout)["jobs"] if j["job_id"] == job_id)
    return CLOCK.at(job["start_time"])


def node_states(sim: SimulatedSlurm) -> dict[str, str]:
    return {n.name: n.slurm_state for n in query_nodes(sim).nodes}


def test_an_idle_node_powers_down_and_a_job_resumes_it() -> None:
    steps_a, steps_b = 50_000.0, 100_000.0
    a = SimJob(1, R18, 0.0, 1, steps_a, managed=False)  # on v100-0, which never idles
    b = SimJob(2, R18, 1000.0, 8, steps_b, managed=False)  # v100-0 has 7 GPUs free: it needs v100-1
    sim = cluster([a, b])
    sim.advance_to(610.0)
    assert node_states(sim)["v100-1"] == "idle+POWERING_DOWN"
    assert node_states(sim)["v100-0"] == "mixed"
    sim.advance_to(700.0)
    assert node_states(sim)["v100-1"] == "idle+POWERED_DOWN"
    assert sim.node_power()["v100-1"] == "off"
    # The idle meter: powered GPUs no job holds. v100-0's 7 beside a; v100-1's 8 while it powers down, none once off.
    down = sim.window(CLOCK.unix_at(600.0), CLOCK.unix_at(620.0)).idle_gpus
    assert down["v100-0"] == pytest.approx((7 * IDLE * 20.0, 7.0))
    assert down["v100-1"] == pytest.approx((8 * IDLE * 20.0, 8.0))
    across = sim.window(CLOCK.unix_at(620.0), CLOCK.unix_at(700.0)).idle_gpus  # off from 630 on
    assert across["v100-1"] == pytest.approx((8 * IDLE * 10.0, 8.0 * 10.0 / 80.0))
    sim.advance_to(1100.0)  # b got v100-1 at 1000: it boots until 1300
    assert sim.window(CLOCK.unix_at(1050.0), CLOCK.unix_at(1100.0)).idle_gpus["v100-1"] == (0.0, 0.0)  # b holds all 8
    assert job_states(sim)[2] == ("CONFIGURING", "v100-1")
    assert node_states(sim)["v100-1"] == "allocated+NOT_RESPONDING+POWERING_UP"
    assert start_time_s(sim, 2) == pytest.approx(1000.0, abs=1.0)  # the allocation, while it boots
    booting = sim.window(CLOCK.unix_at(1000.0), CLOCK.unix_at(1100.0))
    assert booting.job_energy_j["2"] == 0.0 and booting.job_energy_j["1"] > 0  # no prolog, no DCGM mapping yet
    sim.advance_to(1300.0)
    assert job_states(sim)[2] == ("RUNNING", "v100-1")
    assert start_time_s(sim, 2) == pytest.approx(1300.0, abs=1.0)  # reset when the node is up, as Slurm does
    sim.advance_to(1310.0)
    assert sim.window(CLOCK.unix_at(1300.0), CLOCK.unix_at(1310.0)).job_energy_j["2"] == pytest.approx(
        8 * IDLE * 10.0
    )  # loading its checkpoint: its GPUs' idle power, now mapped to it
    finish_a = LOAD + steps_a / x(R18)
    finish_b = 1000.0 + RESUME + LOAD + steps_b / x(R18, 8)
    assert finish_a > finish_b  # v100-0 stays busy the whole time
    sim.advance_to(finish_a)
    recs = {r.job_id: r for r in sim.job_records()}
    assert recs[2].first_start_s == 1000.0
    assert recs[2].finish_s == pytest.approx(finish_b)
    assert recs[1].finish_s == pytest.approx(finish_a)
    energy = sim.energy(finish_a)
    # v100-0 powered throughout; v100-1 powered [0, 630) and [1000, finish_a) (after b, it idles < SUSPEND)
    assert finish_a - finish_b < SUSPEND
    powered_1 = (SUSPEND + TIMEOUT) + (finish_a - 1000.0)
    assert energy.node_j == pytest.approx(NODE_W * (finish_a + powered_1))
    assert energy.idle_j == pytest.approx(8 * IDLE * (finish_a + powered_1))
    compute_a, compute_b = steps_a / x(R18), steps_b / x(R18, 8)
    assert energy.dynamic_j == pytest.approx((p(R18) - IDLE) * compute_a + 8 * (p(R18, 8) - IDLE) * compute_b)
    steps = sim.power_steps(finish_a)
    assert sum(w * (t1 - t0) for t0, t1, w in steps) == pytest.approx(energy.total_j)
    assert min(w for _, _, w in steps) == pytest.approx(NODE_IDLE_W + p(R18) - IDLE)  # v100-1 off, a computing


def test_slurm_tries_the_powered_nodes_first() -> None:
    a = SimJob(1, R18, 0.0, 8, 2_000.0, managed=False)  # v100-0, finishes early
    b = SimJob(2, R18, 10.0, 4, 2_000_000.0, managed=False)  # v100-1, all along
    c = SimJob(3, R18, 5_000.0, 1, 1_000.0, managed=False)  # v100-0 is off by then: c goes beside b
    sim = cluster([a, b, c])
    sim.advance_to(5_001.0)
    assert sim.node_power() == {"v100-0": "off", "v100-1": "on"}
    assert job_states(sim)[3] == job_states(sim)[2] == ("RUNNING", "v100-1")


def test_without_power_saving_nothing_changes_and_no_event_is_added() -> None:
    job = SimJob(1, R18, 0.0, 1, 5_000.0, managed=False)
    sim = SimulatedSlurm(
        [SimNode("v100-0", "v100", 8), SimNode("v100-1", "v100", 8)],
        TRUTH,
        {"v100": NODE_W},
        [job],
        clock=CLOCK,
        load_s=LOAD,
        requeue_delay_s=DELAY,
        settings_dir=None,
    )
    finish = LOAD + 5_000.0 / x(R18)
    sim.advance_to(sim.next_event_s())
    assert sim.next_event_s() == pytest.approx(finish)
    sim.advance_to(finish)
    assert sim.next_event_s() == pytest.approx(finish + 300.0)  # MinJobAge only: no node powers down
    assert set(sim.node_power().values()) == {"on"}
    assert sim.energy().node_j == pytest.approx(2 * NODE_W * finish)


def test_power_saving_values_are_checked() -> None:
    with pytest.raises(ValueError, match="resume_s"):
        PowerSaving(600.0, -1.0)
    with pytest.raises(ValueError, match="suspend_s"):
        PowerSaving(math.inf, 300.0)


def test_a_cluster_up_before_the_first_arrival_counts_idle_time_and_energy_from_then() -> None:
    """``up_before_s``, a live run's time from ``cluster up`` to its first submission: every node on and idle from then.

    v100-1, never used, powers down at ``SUSPEND - UP`` after the first arrival, not at ``SUSPEND``, and the idle
    lead's energy counts. A job arriving between the two meets a powered-down node and waits for its boot.
    """
    up = 250.0
    a = SimJob(1, R18, 0.0, 8, 10_000_000.0, managed=False)  # fills v100-0 from the first arrival on
    b = SimJob(2, R18, 500.0, 1, 1_000_000.0, managed=False)  # needs v100-1: off since 380 with the lead
    late = cluster([a, b], saving=PowerSaving(SUSPEND, RESUME, TIMEOUT))
    early = simulated([a, b], (8, 8), power_saving=PowerSaving(SUSPEND, RESUME, TIMEOUT), up_before_s=up)
    assert early.now_s == -up and late.now_s == 0.0
    early.advance_to(0.0)
    assert early.energy(0.0).node_j == pytest.approx(2 * NODE_W * up)  # the idle lead: both nodes on
    assert early.energy(0.0).idle_j == pytest.approx(2 * 8 * IDLE * up)
    for sim in (early, late):
        sim.advance_to(SUSPEND - up + 1.0)
    assert node_states(early)["v100-1"] == "idle+POWERING_DOWN" and node_states(late)["v100-1"] == "idle"
    for sim in (early, late):
        sim.advance_to(600.0)
    assert job_states(early)[2] == ("CONFIGURING", "v100-1")  # booting until 500 + RESUME
    assert job_states(late)[2] == ("RUNNING", "v100-1")
    with pytest.raises(ValueError, match="up_before_s"):
        simulated([a], (8,), up_before_s=-1.0)
