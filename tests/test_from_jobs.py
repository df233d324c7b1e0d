"""The operator's own queue: job list + cluster file -> instance, and a round that follows the last one (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.contracts.domain import CurrentConfig, NodeGpus
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.plan import PlannedJob, load_plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.cluster_file import parse_cluster_file
from wattplan.planner.rounds.from_jobs import instance_from_jobs
from wattplan.planner.rounds.job_list import read_job_list
from wattplan.planner.rounds.next_round import follow_plan, next_instance

LIB = load_profile_library()
RESNET = "ResNet-50 (batch size 64)"
LM = "LM (batch size 20)"

JOBS_CSV = f"""id,type,gpus,remaining_s,remaining_steps,allowed_gpus,command,workdir,user
big,{RESNET},4,3600,,,python train.py --lr '0.1 0.2',/home/ana,ana
small,{LM},1,,5000,1 2,,,
"""

CLUSTER = {
    "round_s": 300,
    "power_cap_kw": 5,
    "gpu_types": [
        {"name": "v100", "nodes": ["v-a", "v-b", "v-c"], "down": ["v-b"]},
        {"name": "p100", "gpus_per_node": 4, "nodes": 2},
    ],
    "unmanaged": [{"node": "p100-1", "gpus": [2]}],
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _instance(tmp_path: Path):
    jobs = read_job_list(_write(tmp_path, "jobs.csv", JOBS_CSV))
    return instance_from_jobs(jobs, parse_cluster_file(CLUSTER, "cluster.yaml"), LIB)


def _problems(exc: pytest.ExceptionInfo[InputError]) -> dict[str, str]:
    return {p.path: p.code for p in exc.value.problems}


def test_instance_from_jobs_by_hand(tmp_path: Path) -> None:
    inst = _instance(tmp_path)
    v100, p100 = inst.gpu_types
    assert (v100.name, v100.nodes, v100.gpus_per_node) == ("v100", 2, 8)  # v-b is down
    assert (p100.name, p100.nodes, p100.gpus_per_node) == ("p100", 1, 4)  # p100-1 holds an unmanaged GPU
    assert inst.extra["hosts"] == {"v100-0": "v-a", "v100-1": "v-c", "p100-0": "p100-0"}
    assert set(inst.extra["left_out"]) == {"v-b", "p100-1"}
    assert inst.round.duration_s == 300
    assert inst.round.budget_j == 5 * 1000 * 300  # cap (kW) x T
    big, small = inst.jobs
    # remaining_s x the top-setting throughput on 4 GPUs of the cluster's first type (v100)
    assert big.remaining_steps == pytest.approx(3600 * LIB.top_throughput(RESNET, "v100", 4))
    assert big.gpus == (4,) and big.requested_gpus == 4  # a 4-GPU request gets 4 GPUs, not 1 to 8
    assert big.command == ("python", "train.py", "--lr", "0.1 0.2") and big.user == "ana"
    assert small.remaining_steps == 5000 and small.gpus == (1, 2) and small.requested_gpus == 1
    assert all(j.current is None for j in inst.jobs)


def test_yaml_job_list_with_env_and_words(tmp_path: Path) -> None:
    text = f"""jobs:
  - id: a
    type: {RESNET}
    gpus: 2
    remaining_steps: 100
    command: [python, "x y.py"]
    env: {{NCCL_DEBUG: INFO}}
"""
    (job,) = read_job_list(_write(tmp_path, "jobs.yaml", text))
    assert job.command == ("python", "x y.py") and job.env == (("NCCL_DEBUG", "INFO"),)


@pytest.mark.parametrize(
    ("text", "path", "code"),
    [
        ("id,type,gpus,remaining_step\na,T,1,5\n", "line 2.remaining_step", "unknown-field"),
        ("id,type,gpus,remaining_steps\na,T,1,5\na,T,1,5\n", "line 3.id", "duplicate-id"),
        ("id,type,gpus,remaining_steps\na,T,0,5\n", "line 2.gpus", "bad-field"),
        ("id,type,gpus,remaining_steps\na,T,1,-5\n", "line 2.remaining_steps", "bad-field"),
        ("id,type,gpus,remaining_steps,remaining_s\na,T,1,5,5\n", "line 2.remaining_steps", "remaining"),
        ("id,type,gpus\na,T,1\n", "line 2.remaining_steps", "remaining"),
        ("id,type,remaining_steps\na,T,5\n", "line 2.gpus", "missing-field"),
        ("id,type,gpus,remaining_steps,allowed_gpus\na,T,1,5,1 x\n", "line 2.allowed_gpus[1]", "bad-field"),
        ("id,type,gpus,remaining_steps\n", "(file)", "empty"),
    ],
)
def test_job_list_errors_name_the_row_and_field(tmp_path: Path, text: str, path: str, code: str) -> None:
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.csv", text))
    assert exc.value.source.endswith("jobs.csv")
    assert _problems(exc).get(path) == code


def test_job_list_unknown_column_reported_once(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.csv", "id,type,gpus,remaining_steps,colour\na,T,1,5,r\nb,T,1,5,g\n"))
    assert [p.code for p in exc.value.problems] == ["unknown-field"]


def test_jobs_the_library_cannot_plan(tmp_path: Path) -> None:
    text = f"id,type,gpus,remaining_steps\na,Nope,1,5\nb,{RESNET},3,5\n"
    jobs = read_job_list(_write(tmp_path, "jobs.csv", text))
    with pytest.raises(InputError) as exc:
        instance_from_jobs(jobs, parse_cluster_file(CLUSTER, "cluster.yaml"), LIB, sources=("jobs.csv", "c"))
    assert exc.value.source == "jobs.csv"
    assert _problems(exc) == {"line 2.type": "unknown-job-type", "line 3.gpus": "no-profile"}


def test_unknown_gpu_type_says_what_to_do(tmp_path: Path) -> None:
    jobs = read_job_list(_write(tmp_path, "jobs.csv", JOBS_CSV))
    cluster = parse_cluster_file({"gpu_types": [{"name": "b300", "nodes": 1}]}, "cluster.yaml")
    with pytest.raises(InputError) as exc:
        instance_from_jobs(jobs, cluster, LIB, sources=("jobs.csv", "cluster.yaml"))
    (problem,) = exc.value.problems
    assert exc.value.source == "cluster.yaml" and problem.path == "gpu_types[0].name"
    assert "profiles prior" in problem.message and "profiles ingest" in problem.message


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"gpu_types": [{"name": "v100", "nodes": ["a"], "down": ["b"]}]}, "gpu_types[0].down[0]"),
        ({"gpu_types": [{"name": "v100", "nodes": 1, "gpus_per_node": 6}]}, "gpu_types[0].gpus_per_node"),
        ({"gpu_types": [{"name": "v100", "nodes": ["a b"]}]}, "gpu_types[0].nodes[0]"),
        ({"gpu_types": [{"name": "v100", "nodes": 1}], "unmanaged": [{"node": "x", "gpus": [0]}]}, "unmanaged[0].node"),
        (
            {"gpu_types": [{"name": "v100", "nodes": 1}], "unmanaged": [{"node": "v100-0", "gpus": [8]}]},
            "unmanaged[0].gpus",
        ),
        ({"gpu_types": [{"name": "v100", "nodes": 1}], "round_s": 0}, "round_s"),
        ({"gpu_types": [{"name": "v100", "nodes": 1}], "powercap_kw": 3}, "powercap_kw"),
        ({"gpu_types": []}, "gpu_types"),
    ],
)
def test_cluster_file_errors_name_the_key(doc: dict, path: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_cluster_file(doc, "cluster.yaml")
    assert path in _problems(exc)


def _plan_line(job_id: str, steps: float, **kw) -> PlannedJob:
    base = dict(
        gpu_type="v100", gpus=1, setting=250, setting_unit="power_limit_w", placement=(NodeGpus("v100-0", (0,)),)
    )
    return PlannedJob(job_id=job_id, state="run", steps=steps, **(base | kw))


def test_next_instance_carries_the_plan(tmp_path: Path) -> None:
    inst = _instance(tmp_path)
    big, small = inst.jobs
    from wattplan.planner.contracts.plan import Plan, PlanRound

    rnd = PlanRound(0, 300, None, 0.0, 0.0, "progress", None, None, None, {}, {}, "x", "feasible", 0.0)
    plan = Plan(
        rnd,
        (
            _plan_line(
                "big", big.remaining_steps, gpus=4, placement=(NodeGpus("v100-0", (0, 1, 2, 3)),), shares_with="small"
            ),
            _plan_line("small", 1000.0, shares_with="big"),
        ),
    )
    nxt = next_instance(inst, plan)
    assert nxt.round.index == 1
    (left,) = nxt.jobs  # big finished by the prediction; its partner runs alone from now on
    assert left.id == "small" and left.remaining_steps == pytest.approx(4000.0)
    assert left.current == CurrentConfig("v100", 1, 250, None, (NodeGpus("v100-0", (0,)),))


def test_follow_plan_renames_nodes_through_hosts(tmp_path: Path) -> None:
    inst = _instance(tmp_path)
    from wattplan.planner.contracts.plan import Plan, PlanRound

    rnd = PlanRound(0, 300, None, 0.0, 0.0, "progress", None, None, None, {}, {}, "x", "feasible", 0.0)
    plan = Plan(
        rnd,
        (
            _plan_line("big", 10.0, gpus=4, placement=(NodeGpus("v100-1", (0, 1, 2, 3)),)),  # host v-c
            _plan_line("small", 10.0, placement=(NodeGpus("v100-0", (5,)),)),  # host v-a
        ),
    )
    # next round: v-b is back up and v-a is down: v-c becomes plan node v100-1 still, v-a is gone
    cluster = parse_cluster_file(
        CLUSTER | {"gpu_types": [{"name": "v100", "nodes": ["v-a", "v-b", "v-c"], "down": ["v-a"]}], "unmanaged": []},
        "c",
    )
    jobs = read_job_list(_write(tmp_path, "jobs.csv", JOBS_CSV))
    fresh = instance_from_jobs(jobs, cluster, LIB)
    nxt = follow_plan(inst, plan, fresh)
    big, small = nxt.jobs
    assert fresh.extra["hosts"] == {"v100-0": "v-b", "v100-1": "v-c"}
    assert big.current is not None and big.current.placement == (NodeGpus("v100-1", (0, 1, 2, 3)),)
    assert small.current is None  # its host went down: it restarts
    assert nxt.round.index == 1


def test_cli_first_hour(tmp_path: Path) -> None:
    """Job list -> plan (instance written beside it) -> validate -> next round -> plan again."""
    jobs = _write(tmp_path, "jobs.csv", JOBS_CSV)
    cluster = _write(tmp_path, "cluster.yaml", json.dumps(CLUSTER))  # JSON is YAML
    runner = CliRunner()
    plan1 = tmp_path / "plan1.json"
    r = runner.invoke(app, ["plan", str(jobs), "--cluster", str(cluster), "--time-limit", "5", "-q", "-o", str(plan1)])
    assert r.exit_code == 0, r.output
    assert "not planned: p100-1" in r.output and "not planned: v-b" in r.output  # as instance from-jobs says
    inst1 = tmp_path / "plan1.instance.json"
    assert load_instance(inst1).extra["hosts"]["v100-1"] == "v-c"
    r = runner.invoke(app, ["validate", str(inst1), str(plan1)])
    assert r.exit_code == 0, r.output
    used = {p.node for j in load_plan(plan1).running() for p in j.placement}
    assert used <= {"v100-0", "v100-1", "p100-0"}  # never the down host nor the one with an unmanaged GPU
    launch = tmp_path / "launch0"
    r = runner.invoke(app, ["launch", str(plan1), "--instance", str(inst1), "--to", "slurm", "-o", str(launch)])
    assert r.exit_code == 0, r.output
    lists = {
        line for f in (launch / "jobs").glob("*.sbatch") for line in f.read_text().splitlines() if "nodelist" in line
    }
    hosts = {line.partition("=")[2] for line in lists}
    assert hosts and hosts <= {"v-a", "v-c", "p100-0"}  # the instance's host map, not plan node names
    inst2 = tmp_path / "round2.json"
    r = runner.invoke(app, ["instance", "next", str(plan1), "--instance", str(inst1), "-o", str(inst2)])
    assert r.exit_code == 0, r.output
    nxt = load_instance(inst2)
    assert nxt.round.index == 1 and any(j.current is not None for j in nxt.jobs)
    r = runner.invoke(app, ["plan", str(inst2), "--time-limit", "5", "-q", "-o", str(tmp_path / "plan2.json")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["instance", "next", str(plan1), "--instance", str(inst2), "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "wrong-instance" in r.output


def test_cli_job_list_needs_cluster(tmp_path: Path) -> None:
    jobs = _write(tmp_path, "jobs.csv", JOBS_CSV)
    r = CliRunner().invoke(app, ["plan", str(jobs), "-o", str(tmp_path / "p.json")])
    assert r.exit_code == 2 and "--cluster" in r.output and "Traceback" not in r.output
