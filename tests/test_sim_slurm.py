"""The simulated Slurm (planner.control.sim_slurm): scheduling, requeues, settings, pairs, energy and its answers.

Expectations are computed by hand from the shipped library's profiles (``X`` steps/s and ``P`` W per GPU at a
setting, ``Pidle`` = 34 W on a V100): a job alone finishes at ``start + load + steps / X``; a GPU draws ``P``
while its job computes and ``Pidle`` otherwise; a node draws its ``node_power_w`` always.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from tests.helpers.sim_slurm import CLOCK, DELAY, IDLE, LOAD, NODE_W, R18, p, simulated, x
from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.agent.reference import slurm_reference
from wattplan.planner.agent.slurm_actions import ActionOutcome, SlurmCall
from wattplan.planner.agent.slurm_detail import expand_hostlist, query_job_gpus
from wattplan.planner.agent.slurm_queue import query_nodes, query_queue
from wattplan.planner.agent.slurm_version import require_supported
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.sim_slurm import JobRecord, SimJob, SimulatedSlurm
from wattplan.planner.control.sim_slurm_text import compress_hostlist, natural_key
from wattplan.planner.files.resources import shipped
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.replay import ReplaySpec, prepare

LIB = load_profile_library(None)
R50 = "ResNet-50 (batch size 64)"


def cluster(
    jobs: list[SimJob], gpus: tuple[int, ...] = (8,), settings: Path | None = None, min_age: float = 300.0
) -> SimulatedSlurm:
    return simulated(jobs, gpus, settings_dir=settings, min_job_age_s=min_age)


def unix(t_s: float) -> float:
    return CLOCK.unix_at(t_s)


def ok(sim: SimulatedSlurm, *argv: str) -> None:
    result = sim(argv)
    assert result.ok, result


def write_setting(folder: Path, job: int, setting: int, host: int | None = None) -> None:
    text = JobSetting(str(job), 0, "v100", 1, setting, "power_limit_w", str(host) if host else None).to_text()
    (folder / f"{job}.conf").write_text(text)


def jobs_now(sim: SimulatedSlurm) -> dict[int, str]:
    return {j.job_id: j.state for j in query_queue(sim).jobs}


def records(sim: SimulatedSlurm) -> dict[int, JobRecord]:
    return {r.job_id: r for r in sim.job_records()}


# ---------------------------------------------------------------------------------------------- one job


def test_one_job_alone_finishes_and_spends_by_hand() -> None:
    steps = 5000.0
    sim = cluster([SimJob(1, R18, 100.0, 1, steps, managed=False)])
    assert sim.now_s == 100.0  # the cluster's life starts at the first arrival
    sim.advance_to(100.0)
    assert sim.next_event_s() == pytest.approx(100.0 + LOAD)  # started at once: its load ends
    finish = 100.0 + LOAD + steps / x(R18)
    sim.advance_to(sim.next_event_s())
    assert sim.next_event_s() == pytest.approx(finish)
    sim.advance_to(finish)
    (rec,) = sim.job_records()
    assert (rec.state, rec.first_start_s, rec.requeues, rec.steps_done) == ("COMPLETED", 100.0, 0, steps)
    assert rec.finish_s == pytest.approx(finish)
    compute_s = steps / x(R18)
    assert rec.dynamic_energy_j == pytest.approx((p(R18) - IDLE) * compute_s)
    assert rec.gpu_energy_j == pytest.approx(IDLE * LOAD + p(R18) * compute_s)  # its GPU, idle power included
    energy = sim.energy()
    assert energy.node_j == pytest.approx(NODE_W * (finish - 100.0))  # from the first arrival, not from 0
    assert energy.idle_j == pytest.approx(8 * IDLE * (finish - 100.0))  # every GPU, busy or not
    assert energy.dynamic_j == pytest.approx((p(R18) - IDLE) * compute_s)
    assert energy.total_j == pytest.approx(energy.node_j + energy.idle_j + energy.dynamic_j)
    # listed as COMPLETED for MinJobAge, then gone
    assert sim.next_event_s() == pytest.approx(finish + 300.0)
    assert query_queue(sim).unmanaged == 1 and sim.done()
    sim.advance_to(finish + 299.0)
    assert query_queue(sim).unmanaged == 1
    sim.advance_to(finish + 300.0)
    assert query_queue(sim).unmanaged == 0 and sim.next_event_s() == math.inf
    assert sim(("scontrol", "show", "job", "-d")).stdout == "No jobs in the system\n"


def test_the_second_job_starts_when_the_first_completes() -> None:
    sim = cluster([SimJob(1, R18, 0.0, 1, 3000.0, managed=False), SimJob(2, R50, 10.0, 1, 2000.0, managed=False)], (1,))
    sim.advance_to(20.0)
    assert [j.reason for j in query_queue(sim).jobs] == []  # nothing managed
    assert _reasons(sim) == {1: "None", 2: "Resources"}
    first = LOAD + 3000.0 / x(R18)
    sim.advance_to(1e6)
    rec = records(sim)
    assert rec[1].finish_s == pytest.approx(first)
    assert rec[2].first_start_s == pytest.approx(first)
    assert rec[2].finish_s == pytest.approx(first + LOAD + 2000.0 / x(R50))


def _reasons(sim: SimulatedSlurm) -> dict[int, str]:
    return {j["job_id"]: j["state_reason"] for j in json.loads(sim(("squeue", "--json")).stdout)["jobs"]}


def test_a_job_that_does_not_fit_is_skipped_and_later_ones_start() -> None:
    """Backfill without time limits: a 2-GPU job waits for both GPUs, the 1-GPU job behind it starts at once."""
    jobs = [
        SimJob(1, R18, 0.0, 1, 2000.0, managed=False),
        SimJob(2, R18, 1.0, 2, 2000.0, managed=False),
        SimJob(3, R50, 2.0, 1, 1000.0, managed=False),
    ]
    sim = cluster(jobs, (2,))
    sim.advance_to(2.0)
    assert _reasons(sim) == {1: "None", 2: "Resources", 3: "None"}
    sim.advance_to(1e6)
    rec = records(sim)
    end1, end3 = LOAD + 2000.0 / x(R18), 2.0 + LOAD + 1000.0 / x(R50)
    assert rec[3].first_start_s == 2.0
    assert rec[2].first_start_s == pytest.approx(max(end1, end3))
    assert rec[2].finish_s == pytest.approx(max(end1, end3) + LOAD + 2000.0 / x(R18, 2))


# ---------------------------------------------------------------------------------------------- the agent's calls


def test_requeuehold_then_an_early_release_starts_it_after_the_delay(tmp_path: Path) -> None:
    steps = 10_000.0
    sim = cluster([SimJob(1, R18, 0.0, 1, steps), SimJob(2, R18, 0.0, 1, steps)], settings=tmp_path)
    assert {j.job_id: (j.state, j.held, j.reason) for j in query_queue(sim).jobs} == {
        1: ("PENDING", True, "JobHeldUser"),
        2: ("PENDING", True, "JobHeldUser"),
    }
    ok(sim, "scontrol", "release", "1")
    assert jobs_now(sim) == {1: "RUNNING", 2: "PENDING"}
    sim.advance_to(100.0)
    done = (100.0 - LOAD) * x(R18)
    # grouped: the running job is requeued, the pending one refused by id
    result = sim(("scontrol", "requeuehold", "1,2"))
    outcome = ActionOutcome(SlurmCall(result.argv, (1, 2)), True, result.returncode, result.stdout, result.stderr)
    assert result.returncode == 1 and outcome.refused == {2: "Job is pending execution"}
    queue = {j.job_id: j for j in query_queue(sim).jobs}
    assert (queue[1].state, queue[1].held, queue[1].reason, queue[1].node_list) == ("PENDING", True, "JobHeldUser", "")
    assert all(n.state == "idle" for n in query_nodes(sim).nodes)  # its GPU is free at once
    sim.advance_to(101.0)
    ok(sim, "scontrol", "release", "1")
    assert _reasons(sim)[1] == "BeginTime" and sim.next_event_s() == pytest.approx(100.0 + DELAY)
    sim.advance_to(100.0 + DELAY)
    assert jobs_now(sim)[1] == "RUNNING"
    sim.advance_to(1e6)
    rec = records(sim)[1]
    assert rec.requeues == 1 and rec.first_start_s == 0.0
    restart = 100.0 + DELAY
    assert rec.finish_s == pytest.approx(restart + LOAD + (steps - done) / x(R18))
    # the load is paid again, and no step is lost
    assert sim.window(unix(100.0), unix(restart + LOAD)).steps_done["1"] == pytest.approx(done)


def test_refusals_are_slurms(tmp_path: Path) -> None:
    sim = cluster([SimJob(1, R18, 0.0, 1, 1e5), SimJob(2, R18, 0.0, 1, 1e5, gres_type="v100")])
    ok(sim, "scontrol", "release", "1")
    assert jobs_now(sim)[1] == "RUNNING"
    refused = sim(("scontrol", "update", "JobId=1", "Gres=gpu:2"))
    assert (refused.returncode, refused.stderr) == (1, "Job is no longer pending execution for job 1\n")
    assert sim(("scontrol", "uhold", "1")).stderr == "Job is no longer pending execution for job 1\n"
    multi = sim(("scontrol", "update", "JobId=1,2", "NodeList=v100-0"))
    assert multi.returncode == 1 and "Invalid job ID 1,2" in multi.stderr
    typed = sim(("scontrol", "update", "JobId=2", "Gres=gpu:1"))
    assert typed.stderr == "Invalid GRES specification (with and without type identification) for job 2\n"
    assert sim(("scontrol", "update", "JobId=2", "NodeList=v100-9")).stderr.startswith("Invalid node name")
    assert sim(("scontrol", "release", "9")).stderr == "Invalid job id specified for job 9\n"
    assert sim(("scontrol", "frobnicate", "1")).returncode == 1
    ok(sim, "scontrol", "hold", "2")
    assert _reasons(sim)[2] == "JobHeldAdmin"
    ok(sim, "scancel", "1")
    assert jobs_now(sim)[1] == "CANCELLED"
    again = sim(("scancel", "1"))
    assert again.returncode == 1 and "already completing or completed" in again.stderr
    assert sim(("scontrol", "requeuehold", "1")).stderr == "Job has already finished for job 1\n"


def test_a_nodelist_is_honoured(tmp_path: Path) -> None:
    sim = cluster([SimJob(1, R18, 0.0, 1, 1e5), SimJob(2, R18, 0.0, 2, 1e5)], (4, 4))
    ok(sim, "scontrol", "update", "JobId=1", "Gres=gpu:2", "NodeList=v100-1", "NumNodes=1")
    ok(sim, "scontrol", "release", "1")
    assert query_job_gpus(sim) == {1: (("v100-1", (0, 1)),)}
    # job 2 may only use v100-1, which has 2 GPUs left of the 3 per node it asks: it waits, v100-0 stays idle
    ok(sim, "scontrol", "update", "JobId=2", "Gres=gpu:3", "NodeList=v100-1", "NumNodes=1")
    ok(sim, "scontrol", "release", "2")
    assert jobs_now(sim)[2] == "PENDING" and _reasons(sim)[2] == "Resources"
    assert {n.name: n.state for n in query_nodes(sim).nodes} == {"v100-0": "idle", "v100-1": "mixed"}
    ok(sim, "scontrol", "uhold", "2")
    ok(sim, "scontrol", "update", "JobId=2", "Gres=gpu:2", "NodeList=v100-[0-1]", "NumNodes=2")
    ok(sim, "scontrol", "release", "2")
    assert query_job_gpus(sim)[2] == (("v100-0", (0, 1)), ("v100-1", (2, 3)))
    assert {j.job_id: (j.node_list, j.node_count, j.gpus_per_node) for j in query_queue(sim).jobs}[2] == (
        "v100-[0-1]",
        2,
        2,
    )


def test_a_guest_made_by_an_update_waits_for_a_gpu_of_its_own_as_slurm_does(tmp_path: Path) -> None:
    """Slurm 22.05 and 24.11 keep a job's GPUs through ``Gres=gpu:0`` (``benchmarks/guest_gres.sh``).

    On a one-GPU node its host holds, the guest waits (``Resources``) though ``squeue`` shows it asking for none,
    while a job submitted with ``gpu:0`` would start; once the host ends, the guest takes the GPU and runs on it
    alone, as ``prolog.sh`` maps a job Slurm gave GPUs.
    """
    sim = cluster([SimJob(1, R18, 0.0, 1, x(R18) * 100.0), SimJob(2, R50, 0.0, 1, 1e6)], (1,), settings=tmp_path)
    write_setting(tmp_path, 1, 250)
    write_setting(tmp_path, 2, 150, host=1)
    ok(sim, "scontrol", "release", "1")
    ok(sim, "scontrol", "update", "JobId=2", "Gres=gpu:0", "NodeList=v100-0", "NumNodes=1")
    ok(sim, "scontrol", "release", "2")
    sim.advance_to(50.0)
    queue = {j.job_id: j for j in query_queue(sim).jobs}
    assert (queue[2].state, queue[2].reason, queue[2].gpus_per_node) == ("PENDING", "Resources", 0)
    sim.advance_to(200.0)  # the host ran its 100 s of steps after its 30 s load
    assert jobs_now(sim)[2] == "RUNNING" and query_job_gpus(sim)[2] == (("v100-0", (0,)),)
    # the prolog runs it on the GPU Slurm gave it, alone, at its file's 150 W: no pair
    start = records(sim)[2].first_start_s
    assert start is not None
    sim.advance_to(start + LOAD + 50.0)
    seen = sim.window(unix(start + LOAD), unix(start + LOAD + 50.0))
    assert seen.steps_done["2"] == pytest.approx(50.0 * x(R50, setting=150))


def test_a_setting_change_mid_run_changes_speed_and_power_without_a_restart(tmp_path: Path) -> None:
    sim = cluster([SimJob(1, R50, 0.0, 1, 1e6)], settings=tmp_path)
    write_setting(tmp_path, 1, 250)
    ok(sim, "scontrol", "release", "1")
    sim.advance_to(100.0)
    write_setting(tmp_path, 1, 150)  # the agent rewrites the file; the node agent re-applies it
    sim.advance_to(200.0)
    steps = (100.0 - LOAD) * x(R50) + 100.0 * x(R50, setting=150)
    rec = records(sim)[1]
    assert rec.steps_done == pytest.approx(steps) and rec.requeues == 0
    dyn = (100.0 - LOAD) * (p(R50) - IDLE) + 100.0 * (p(R50, setting=150) - IDLE)
    assert rec.dynamic_energy_j == pytest.approx(dyn)
    assert sim.window(unix(150.0), unix(200.0)).job_energy_j["1"] == pytest.approx(50.0 * p(R50, setting=150))


def test_window_steps_and_energy(tmp_path: Path) -> None:
    sim = cluster([SimJob(1, R18, 0.0, 1, 1e6), SimJob(2, R18, 0.0, 1, 1e6)])
    ok(sim, "scontrol", "release", "1")
    sim.advance_to(50.0)
    seen = sim.window(unix(20.0), unix(50.0))  # 10 s loading (idle power), 20 s computing
    assert set(seen.steps_done) == {"1"}  # job 2 never ran
    assert seen.steps_done["1"] == pytest.approx(20.0 * x(R18))
    assert seen.job_energy_j["1"] == pytest.approx(10.0 * IDLE + 20.0 * p(R18))
    assert sim.window(unix(25.0), unix(25.0)).job_energy_j["1"] == 0.0
    assert sim.window(unix(0.0), unix(40.0)).steps_done["1"] == pytest.approx(10.0 * x(R18))  # between breakpoints
    with pytest.raises(ValueError):
        sim.window(unix(0.0), unix(60.0))  # not simulated yet


# ---------------------------------------------------------------------------------------------- what it prints


def test_the_agents_readers_read_every_answer(tmp_path: Path) -> None:
    jobs = [
        SimJob(1, R18, 0.0, 1, 1e6),
        SimJob(2, R50, 3.5, 16, 1e6),  # two nodes of 8
        SimJob(3, R18, 5.0, 1, 1e6, gres_type="v100"),
        SimJob(4, R18, 5.0, 1, 100.0, managed=False),
        SimJob(5, R50, 5.0, 1, 1e6),
    ]
    sim = cluster(jobs, (8, 8, 8), settings=tmp_path)
    assert require_supported(sim)[0] == (22, 5, 8)
    sim.advance_to(10.0)
    write_setting(tmp_path, 5, 250, host=1)
    for call in (
        ("scontrol", "release", "1,2"),
        ("scontrol", "update", "JobId=5", "Gres=gpu:0", "NodeList=v100-0", "NumNodes=1"),
        ("scontrol", "release", "5"),
    ):
        ok(sim, *call)
    sim.advance_to(100.0)
    ok(sim, "scontrol", "requeuehold", "2")
    queue = query_queue(sim)
    assert queue.problems == () and queue.unmanaged == 1 and queue.listed == frozenset({1, 2, 3, 4, 5})
    got = {j.job_id: (j.state, j.held, j.gpus_per_node, j.gpu_type, j.node_count, j.job_type) for j in queue.jobs}
    assert got == {
        1: ("RUNNING", False, 1, None, 1, R18),
        2: ("PENDING", True, 8, None, 2, R50),
        3: ("PENDING", True, 1, "v100", 1, R18),
        5: ("RUNNING", False, 0, None, 1, R50),
    }
    by_id = {j.job_id: j for j in queue.jobs}
    assert by_id[2].submit_time_s == math.floor(unix(3.5)) and by_id[2].total_steps == 1_000_000
    assert by_id[1].start_time_s == math.floor(unix(10.0)) and by_id[2].start_time_s is None
    nodes = query_nodes(sim)
    assert nodes.problems == () and [(n.name, n.gpus, n.gpu_type) for n in nodes.nodes] == [
        (f"v100-{i}", 8, "v100") for i in range(3)
    ]
    # job 4 (unmanaged) took GPU 0 at its arrival and has finished since: job 1 runs on the GPU left to it; job 4
    # still lists its node with no GPU until it leaves the list, as 22.05 prints a job that ended
    assert query_job_gpus(sim) == {1: (("v100-0", (1,)),), 4: (("v100-0", ()),), 5: (("v100-0", (2,)),)}


def test_host_lists_and_names_sort_as_slurm_does() -> None:
    assert sorted(["v100-10", "v100-2", "p100-1"], key=natural_key) == ["p100-1", "v100-2", "v100-10"]
    assert compress_hostlist(["v100-3", "v100-0", "v100-1", "p100-0"]) == "p100-0,v100-[0-1,3]"
    assert compress_hostlist([]) == ""
    for names in (["n01", "n02", "n3"], ["v100-9", "v100-10", "v100-11", "a", "b7c"]):
        assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(names)  # the agent reads them back


# ---------------------------------------------------------------------------------------------- Slurm alone


def test_unmanaged_jobs_finish_as_the_slurm_reference_says() -> None:
    """Slurm alone on one node of 8 V100: the agent's continuous-time reference gives the same finish times."""
    trace = shipped("sources/gavel/traces/2869ce.trace")  # 1-, 4- and 8-GPU jobs
    spec = ReplaySpec(trace=trace, cluster="v100:8", max_jobs=30, rules=RoundRules())
    workload, ctx = prepare(spec)
    specs = workload.jobs
    assert len({s.requested_gpus for s in specs}) > 1  # several sizes, so a job can be skipped
    jobs = [
        SimJob(i + 1, s.type, s.arrival_s, s.requested_gpus, s.total_steps, managed=False) for i, s in enumerate(specs)
    ]
    sim = cluster(jobs)
    while not sim.done():
        sim.advance_to(sim.next_event_s())
    expected = slurm_reference(specs, ctx, start_s=LOAD)
    rec = records(sim)
    for i, s in enumerate(specs):
        assert rec[i + 1].finish_s == pytest.approx(expected[s.id], rel=1e-9), s.id
    starts = [rec[i + 1].first_start_s or 0.0 for i in range(len(specs))]  # in arrival order
    assert any(start > s.arrival_s for start, s in zip(starts, specs, strict=True))  # the node was full at times
    assert any(later < max(starts[:k]) for k, later in enumerate(starts) if k)  # and a job was skipped


def test_a_busy_workload_simulates_fast(tmp_path: Path) -> None:
    """150 managed jobs, a crude agent that releases every held job and requeues two every 100 s: 300+ requeues.

    Only the simulation's own CPU counts (its answers included, the agent's reading of them not).
    """
    types = [R18, R50, "Transformer (batch size 64)", "A3C"]
    jobs = [SimJob(i + 1, types[i % 4], 60.0 * i, 1, 20_000.0 + 500.0 * (i % 7)) for i in range(150)]
    sim = cluster(jobs, (8, 8, 8, 8), settings=tmp_path)
    cpu = 0.0

    def timed(argv: tuple[str, ...]) -> str:
        nonlocal cpu
        started = time.process_time()
        out = sim(argv).stdout
        cpu += time.process_time() - started
        return out

    t = 0.0
    while not sim.done():
        queue = json.loads(timed(("squeue", "--json")))["jobs"]  # read_queue would double the test's time
        held = [j["job_id"] for j in queue if j["state_reason"] == "JobHeldUser"]
        running = [j["job_id"] for j in queue if j["job_state"] == "RUNNING"]
        if running and t % 100.0 == 0.0:
            timed(("scontrol", "requeuehold", ",".join(str(j) for j in running[:2])))
        if held:
            timed(("scontrol", "release", ",".join(str(j) for j in held)))
        started = time.process_time()
        t = min(sim.next_event_s(), (t // 100.0 + 1) * 100.0)
        sim.advance_to(t)
        cpu += time.process_time() - started
    rec = sim.job_records()
    assert all(r.state == "COMPLETED" and r.steps_done == r.total_steps for r in rec)
    assert sum(r.requeues for r in rec) >= 300
    assert cpu < 2.0, f"{cpu:.2f} s of CPU"  # about 0.9 s on the machine this was written on
