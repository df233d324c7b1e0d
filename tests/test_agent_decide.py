"""The agent's round decisions (planner.agent.decide) and its SQLite state (planner.agent.store), without Slurm.

Each rule of :mod:`planner.agent.decide` on a hand-made round: a pending held job planned to run is updated and
released; a pending job nobody holds is only updated; a running job planned with the same GPUs keeps running
(only its setting file changes); a running job planned with other GPUs is requeued, updated and released; a
running job planned to wait is requeued and held; a pending job planned to wait is held unless it is; a pair's
host is the partner that already runs, its guest gets ``gpu:0`` on the host's nodes and is released only once
the host runs. And the store: committed intent survives a crash (a new connection sees it), the calls without an
outcome are reported once as interrupted, progress never goes down.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wattplan.planner.agent.decide import SlurmJobNow, decide
from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.agent.slurm_actions import Hold, Release, RequeueHold, Update, calls
from wattplan.planner.agent.store import AgentStore, Desired, StoreError
from wattplan.planner.contracts.domain import CurrentConfig, GpuType, Instance, Job, NodeGpus, RoundSpec
from wattplan.planner.contracts.plan import Plan, PlannedJob, PlanRound
from wattplan.planner.contracts.rules import RoundRules

V100 = GpuType("v100", 2, 8, 34.0, 300.0, "power_limit_w", (150, 200, 250))
HOSTS = {"v100-0": "gpu-a", "v100-1": "gpu-b"}


def _instance(*jobs: Job) -> Instance:
    return Instance(RoundSpec.from_rules(3, RoundRules(), None, 1.0), (V100,), jobs, (), (), {})


def _plan(*entries: PlannedJob) -> Plan:
    r = PlanRound(3, 360.0, None, 0.0, 0.0, "progress", None, None, None, {}, {}, "test", "optimal", 0.0)
    return Plan(r, entries)


def _run(
    job: str, gpus: int, node: str, idx: tuple[int, ...], setting: int = 250, partner: str | None = None
) -> PlannedJob:
    return PlannedJob(job, "run", "v100", gpus, setting, "power_limit_w", partner, (NodeGpus(node, idx),))


def _cur(gpus: int, node: str, idx: tuple[int, ...], setting: int = 250, partner: str | None = None) -> CurrentConfig:
    return CurrentConfig("v100", gpus, setting, partner, (NodeGpus(node, idx),))


def test_each_job_gets_the_calls_its_plan_needs() -> None:
    jobs = (
        Job("11", "a", 100.0, (1, 2)),  # pending, held, planned to run
        Job("12", "a", 100.0, (1, 2)),  # pending, not held, planned to run elsewhere than it asks
        Job("13", "a", 100.0, (1, 2), current=_cur(1, "v100-0", (2,))),  # runs, same GPUs, new setting
        Job("14", "a", 100.0, (1, 2), current=_cur(1, "v100-0", (3,))),  # runs, planned on 2 GPUs
        Job("15", "a", 100.0, (1, 2), current=_cur(1, "v100-0", (4,))),  # runs, planned to wait
        Job("16", "a", 100.0, (1, 2)),  # pending, not held, planned to wait
        Job("17", "a", 100.0, (1, 2)),  # pending, held, planned to wait
    )
    plan = _plan(
        _run("11", 1, "v100-1", (0,)),
        _run("12", 1, "v100-1", (1,)),
        _run("13", 1, "v100-0", (2,), setting=150),
        _run("14", 2, "v100-1", (2, 3)),
        PlannedJob("15", "wait"),
        PlannedJob("16", "wait"),
        PlannedJob("17", "wait"),
    )
    now = {
        "11": SlurmJobNow("11", False, True),
        "12": SlurmJobNow("12", False, False),
        "13": SlurmJobNow("13", True, False, ("gpu-a",), 1),
        "14": SlurmJobNow("14", True, False, ("gpu-a",), 1),
        "15": SlurmJobNow("15", True, False, ("gpu-a",), 1),
        "16": SlurmJobNow("16", False, False),
        "17": SlurmJobNow("17", False, True),
    }
    d = decide(_instance(*jobs), plan, now, HOSTS, 3)
    assert set(d.actions) == {
        Update(11, gres="gpu:1", nodelist="gpu-b", numnodes=1),
        Release(11),
        Hold(12),  # released earlier: Slurm may start it any moment, and an update of a running job resizes it
        Update(12, gres="gpu:1", nodelist="gpu-b", numnodes=1),
        Release(12),
        RequeueHold(14),
        Update(14, gres="gpu:2", nodelist="gpu-b", numnodes=1),
        Release(14),
        RequeueHold(15),
        Hold(16),
    }
    assert d.kept == ["13"] and sorted(d.requeued) == ["14", "15"]
    assert d.why == {"14": "1 -> 2 GPUs", "15": "waits"}
    assert JobSetting("13", 3, "v100", 1, 150, "power_limit_w") in d.settings  # the node agent re-applies it
    assert {x.job_id: x.state for x in d.desired} == {
        "11": "run",
        "12": "run",
        "13": "run",
        "14": "run",
        "15": "wait",
        "16": "wait",
        "17": "wait",
    }
    # the order Slurm gets them in: requeue and hold before update, update before release
    argv = [c.argv[:2] for c in calls(d.actions)]
    assert argv.index(("scontrol", "requeuehold")) < argv.index(("scontrol", "update"))
    assert argv.index(("scontrol", "uhold")) < argv.index(("scontrol", "update"))
    assert argv[-1] == ("scontrol", "release")


def test_a_released_job_that_asks_for_the_plans_nodes_gets_no_call() -> None:
    """A pending job nobody holds that already asks for the planned hosts and GPUs per node is left to Slurm.

    An update could reach it just after Slurm started it, and Slurm takes ``NodeList=`` on a running job as a shrink.
    """
    jobs = (Job("51", "a", 100.0, (1, 2)), Job("52", "a", 100.0, (1, 2)), Job("53", "a", 100.0, (1, 2)))
    plan = _plan(_run("51", 1, "v100-1", (0,)), _run("52", 2, "v100-1", (2, 3)), _run("53", 1, "v100-0", (1,)))
    now = {
        "51": SlurmJobNow("51", False, False, gpus_per_node=1, requested_hosts=("gpu-b",)),  # as planned
        "52": SlurmJobNow("52", False, False, gpus_per_node=1, requested_hosts=("gpu-b",)),  # 1 GPU, planned 2
        "53": SlurmJobNow("53", False, False, gpus_per_node=1, typed=True, gpu_type="p100", requested_hosts=("gpu-a",)),
    }
    d = decide(_instance(*jobs), plan, now, HOSTS, 2)
    assert set(d.actions) == {
        Hold(52),
        Update(52, gres="gpu:2", nodelist="gpu-b", numnodes=1),
        Release(52),
        Hold(53),  # its GRES names another GPU type
        Update(53, gres="gpu:v100:1", nodelist="gpu-a", numnodes=1),
        Release(53),
    }
    assert {x.job_id for x in d.desired} == {"51", "52", "53"}  # planned to run all the same


def test_typed_jobs_keep_typed_gres() -> None:
    jobs = (Job("21", "a", 100.0, (1, 2)),)
    d = decide(
        _instance(*jobs),
        _plan(_run("21", 2, "v100-0", (0, 1))),
        {"21": SlurmJobNow("21", False, True, typed=True)},
        HOSTS,
        0,
    )
    assert Update(21, gres="gpu:v100:2", nodelist="gpu-a", numnodes=1) in d.actions


def test_a_pair_runs_on_its_running_hosts_gpus() -> None:
    jobs = (
        Job("31", "a", 100.0, (1, 2)),  # new: the guest
        Job("32", "b", 100.0, (1, 2), current=_cur(2, "v100-1", (4, 5))),  # runs alone: stays, becomes the host
    )
    plan = _plan(_run("31", 2, "v100-1", (4, 5), partner="32"), _run("32", 2, "v100-1", (4, 5), partner="31"))
    now = {"31": SlurmJobNow("31", False, True), "32": SlurmJobNow("32", True, False, ("gpu-b",), 2)}
    d = decide(_instance(*jobs), plan, now, HOSTS, 5)
    assert d.kept == ["32"]
    assert set(d.actions) == {Update(31, gres="gpu:0", nodelist="gpu-b", numnodes=1), Release(31)}
    assert JobSetting("31", 5, "v100", 2, 250, "power_limit_w", host_job="32") in d.settings
    assert d.guest_releases == {}


def test_a_new_pairs_guest_waits_for_its_host() -> None:
    jobs = (Job("41", "a", 100.0, (1,)), Job("42", "b", 100.0, (1,)))
    plan = _plan(_run("41", 1, "v100-0", (0,), partner="42"), _run("42", 1, "v100-0", (0,), partner="41"))
    now = {"41": SlurmJobNow("41", False, True), "42": SlurmJobNow("42", False, True)}
    d = decide(_instance(*jobs), plan, now, HOSTS, 1)
    assert set(d.actions) == {
        Update(41, gres="gpu:1", nodelist="gpu-a", numnodes=1),
        Release(41),
        Update(42, gres="gpu:0", nodelist="gpu-a", numnodes=1),
    }
    assert d.guest_releases == {"42": "41"}


def test_of_two_new_partners_the_one_that_runs_longer_hosts() -> None:
    """A guest restarts when its host ends first: 44 (900 steps left at 2 steps/s) hosts 43 (100 steps at 1)."""
    jobs = (Job("43", "a", 100.0, (1,)), Job("44", "b", 900.0, (1,)))
    guest = PlannedJob("43", "run", "v100", 1, 250, "power_limit_w", "44", (NodeGpus("v100-0", (0,)),), 1.0)
    host = PlannedJob("44", "run", "v100", 1, 250, "power_limit_w", "43", (NodeGpus("v100-0", (0,)),), 2.0)
    now = {"43": SlurmJobNow("43", False, True), "44": SlurmJobNow("44", False, True)}
    d = decide(_instance(*jobs), _plan(guest, host), now, HOSTS, 1)
    assert set(d.actions) == {
        Update(44, gres="gpu:1", nodelist="gpu-a", numnodes=1),
        Release(44),
        Update(43, gres="gpu:0", nodelist="gpu-a", numnodes=1),
    }
    assert d.guest_releases == {"43": "44"}


def test_a_guest_restarts_when_its_host_does() -> None:
    jobs = (
        Job("51", "a", 100.0, (1, 2), current=_cur(1, "v100-0", (0,), partner="52")),
        Job("52", "b", 100.0, (1, 2), current=_cur(1, "v100-0", (0,), partner="51")),
    )
    plan = _plan(_run("51", 2, "v100-0", (0, 1), partner="52"), _run("52", 2, "v100-0", (0, 1), partner="51"))
    now = {
        "51": SlurmJobNow("51", True, False, ("gpu-a",), 1),
        "52": SlurmJobNow("52", True, False, ("gpu-a",), 0, host_job="51"),
    }
    d = decide(_instance(*jobs), plan, now, HOSTS, 2)
    assert sorted(d.requeued) == ["51", "52"] and d.kept == []
    assert d.guest_releases == {"52": "51"}


def test_store_survives_a_crash_and_reports_what_was_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    store = AgentStore(path)
    store.add_job("7", "a", 100.0, 1, 0.0, 0)
    store.begin_round(0, 1.0, 0.0)
    ids = store.commit_intent(
        0, [Desired("7", 0, "run", "v100", 1, 200, "power_limit_w")], [(("scontrol", "release", "7"), (7,))]
    )
    store.action_outcome(ids[0], "ok", "")
    store.begin_round(1, 2.0, 360.0)
    store.commit_intent(1, [Desired("7", 1, "wait")], [(("scontrol", "requeuehold", "7"), (7,))])
    # a crash here: nothing more is written; a new process opens the same file (the dead one's lock is gone)
    store.close()
    again = AgentStore(path)
    assert again.desired()["7"].state == "wait"
    assert again.interrupted() == [(1, ["scontrol", "requeuehold", "7"])]
    assert again.interrupted() == []  # reported once
    assert again.action_counts() == {"ok": 1, "unknown": 1}
    again.set_progress({"7": 50.0}, 10.0)
    again.set_progress({"7": 40.0}, 20.0)  # a stale reading never lowers it
    assert again.known_jobs()["7"].steps_done == 50.0
    again.end_job("7", "COMPLETED", "completed", 2, 30.0)
    assert again.known_jobs()["7"].ended and "7" not in again.desired()
    # a state belongs to one cluster: a new Slurm numbers its jobs from 1 again
    again.bind("cluster", "cluster A")
    again.bind("cluster", "cluster A")
    with pytest.raises(StoreError, match="is the state of cluster A, not of cluster B"):
        again.bind("cluster", "cluster B")


def test_a_stalled_job_restarts_where_the_plan_would_keep_it() -> None:
    jobs = (Job("21", "a", 100.0, (1, 2), current=_cur(1, "v100-0", (0,))),)
    now = {"21": SlurmJobNow("21", True, False, ("gpu-a",), 1, stalled="no progress for 700 s")}
    d = decide(_instance(*jobs), _plan(_run("21", 1, "v100-0", (0,))), now, HOSTS, 3)
    assert d.kept == [] and d.requeued == ["21"] and d.why == {"21": "no progress for 700 s"}
    assert d.actions == [RequeueHold(21), Update(21, gres="gpu:1", nodelist="gpu-a", numnodes=1), Release(21)]
    healthy = {"21": SlurmJobNow("21", True, False, ("gpu-a",), 1)}
    assert decide(_instance(*jobs), _plan(_run("21", 1, "v100-0", (0,))), healthy, HOSTS, 3).kept == ["21"]
