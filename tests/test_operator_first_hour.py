"""The operator's first hour on a real Slurm (issue 26): their job list and cluster file, two rounds.

The test writes a job list and a cluster file, starts a throwaway Slurm (slurmctld + one slurmd per node + munge on
this host, 8 fake GPUs a node), marks one node down in Slurm and holds one GPU with a job wattplan does not
manage, then walks the CLI as an operator would:

1. ``plan JOBS --cluster FILE`` under the file's power cap (the instance is written beside the plan);
2. ``validate``, ``launch --to slurm`` (host names from the cluster file), ``submit.sh``: every planned allocation
   runs on its planned host, none on the down node or the node with the unmanaged GPU;
3. ``instance next`` from the first plan, ``plan`` and ``validate`` round 2, ``launch --from`` the first plan,
   ``apply.sh``: the kept allocations are the same Slurm jobs, one round longer; the ended ones are gone; every
   allocation of round 2 runs where round 2 put it.

Two clusters: A100 and V100 nodes (the A100 from its prior, the V100 measured), and H100 nodes alone, planned from
the shipped prior with no measurement at all. Needs root and Slurm (``tests/slurm_cluster.py``), else skips (fails in
CI, where ``WATTPLAN_REQUIRE_SLURM=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.launch_helpers import install_fake_nvidia
from tests.slurm_cluster import SlurmCluster, running_cluster
from wattplan.planner.cluster.slurm_daemons import SlurmNode
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.plan import load_plan
from wattplan.planner.launch.slurm import slurm_name

pytestmark = pytest.mark.slow

SLEEP = "sh -c 'sleep 600'"
JOBS = f"""id,type,gpus,remaining_s,command
bert,Transformer (batch size 64),4,7200,{SLEEP}
r50,ResNet-50 (batch size 64),2,3600,{SLEEP}
lm,LM (batch size 20),1,1800,{SLEEP}
rec,Recommendation (batch size 2048),1,540,{SLEEP}
cgan,CycleGAN,1,200,{SLEEP}
"""

CASES = {
    "a100+v100": (
        (SlurmNode("gpu-a1", "a100", 8), SlurmNode("gpu-a2", "a100", 8))
        + (SlurmNode("gpu-v1", "v100", 8), SlurmNode("gpu-v2", "v100", 8)),
        """round_s: 180
power_cap_kw: 3
gpu_types:
  - {name: a100, nodes: [gpu-a1, gpu-a2], down: [gpu-a2]}
  - {name: v100, nodes: [gpu-v1, gpu-v2]}
unmanaged: [{node: gpu-v2, gpus: [0]}]
""",
        "gpu-a2",
        "gpu-v2",
    ),
    "h100 from the prior alone": (
        (SlurmNode("h1", "h100", 8), SlurmNode("h2", "h100", 8), SlurmNode("h3", "h100", 8)),
        """round_s: 180
power_cap_kw: 4
gpu_types:
  - {name: h100, nodes: [h1, h2, h3], down: [h2]}
unmanaged: [{node: h3, gpus: [5]}]
""",
        "h2",
        "h3",
    ),
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> Iterator[tuple[SlurmCluster, str, str, str]]:
    """A started cluster of the case's nodes, its cluster file, the down host and the host with an unmanaged GPU."""
    nodes, cluster_file, down, held = CASES[request.param]
    for slurm in running_cluster("wattplan-operator-", nodes):
        yield slurm, cluster_file, down, held


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _sh(slurm: SlurmCluster, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
    done = subprocess.run(list(args), env=env or slurm.env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def _queue(slurm: SlurmCluster) -> dict[str, tuple[str, str, str, str]]:
    """``{job name: (id, state, time limit, node list)}`` of every queued job."""
    out = _sh(slurm, "squeue", "-h", "-o", "%j|%i|%T|%l|%N")
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def _wait_running(slurm: SlurmCluster, names: set[str], timeout_s: float = 60) -> dict[str, tuple[str, str, str, str]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        queue = _queue(slurm)
        if all(queue.get(n, ("", ""))[1] == "RUNNING" for n in names):
            return queue
        time.sleep(0.5)
    raise AssertionError(f"not all of {sorted(names)} run: {_queue(slurm)}\n{slurm.logs()}")


def _planned_hosts(launch_dir: Path) -> dict[str, set[str]]:
    """``{Slurm job name: hosts}`` of every allocation the launch folder holds (MANIFEST.json)."""
    units = json.loads((launch_dir / "MANIFEST.json").read_text())["units"]
    return {slurm_name(tuple(j["job_id"] for j in u["jobs"])): {p["host"] for p in u["placement"]} for u in units}


def _minutes(limit: str) -> int:
    """Whole minutes of a Slurm time limit ``M:SS`` or ``H:MM:SS``."""
    parts = [int(p) for p in limit.split(":")]
    return parts[-2] + 60 * (parts[-3] if len(parts) == 3 else 0)


def test_operators_first_hour(case: tuple[SlurmCluster, str, str, str], tmp_path: Path) -> None:
    slurm, cluster_text, down, held = case
    jobs, cluster = tmp_path / "jobs.csv", tmp_path / "cluster.yaml"
    jobs.write_text(JOBS)
    cluster.write_text(cluster_text)
    _sh(slurm, "scontrol", "update", f"NodeName={down}", "State=DOWN", "Reason=maintenance")
    gpu_type = next(n.gpu_type for n in slurm.nodes if n.name == held)
    blocker = _sh(slurm, "sbatch", "--parsable", f"--nodelist={held}", f"--gres=gpu:{gpu_type}:1",
                  "--job-name=not-wattplan", f"--output={tmp_path}/blocker.out", "--wrap", "sleep 600")  # fmt: skip
    install_fake_nvidia(tmp_path / "bin", tmp_path / "smi.log")
    env = {**slurm.env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_CHECKPOINT_WAIT_S": "1"}
    env["WATTPLAN_ROOT_JOBS"] = "allow"  # the job list names no users and submit.sh runs as root
    try:
        # Round 0: plan the job list under the cap, validate, launch, submit.
        plan0, inst0 = tmp_path / "r0.json", tmp_path / "r0.instance.json"
        _cli("plan", str(jobs), "--cluster", str(cluster), "--time-limit", "10", "-q", "-o", str(plan0))
        instance = load_instance(inst0)
        assert instance.round.budget_j is not None  # the cap holds
        assert load_plan(plan0).round.energy_j <= instance.round.budget_j * (1 + 1e-9)
        _cli("validate", str(inst0), str(plan0))
        l0 = tmp_path / "launch0"
        _cli("launch", str(plan0), "--instance", str(inst0), "--to", "slurm", "-o", str(l0))
        _sh(slurm, "bash", str(l0 / "submit.sh"), env=env)
        hosts0 = _planned_hosts(l0)
        assert hosts0, "round 0 runs nothing"
        queue0 = _wait_running(slurm, set(hosts0))
        for name, hosts in hosts0.items():
            assert set(queue0[name][3].split(",")) == hosts, (name, queue0[name])
            assert not hosts & {down, held}  # never the down node, never the node with the unmanaged GPU
        assert queue0["not-wattplan"][1] == "RUNNING"

        # Round 1: carry the plan over, plan, validate, launch only the changes, apply.
        inst1, plan1 = tmp_path / "r1.instance.json", tmp_path / "r1.json"
        _cli("instance", "next", str(plan0), "--instance", str(inst0), "-o", str(inst1))
        _cli("plan", str(inst1), "--time-limit", "10", "-q", "-o", str(plan1))
        _cli("validate", str(inst1), str(plan1))
        l1 = tmp_path / "launch1"
        _cli("launch", str(plan1), "--instance", str(inst1), "--to", "slurm", "--from", str(plan0), "-o", str(l1))
        changes = json.loads((l1 / "changes.json").read_text())["slurm"]
        _sh(slurm, "bash", str(l1 / "apply.sh"), str(l0), env=env, timeout=180)  # round 0's folder: its job ids

        kept = {k["slurm_name"]: k["extend_min"] for k in changes["keep"]}
        submitted = {s["slurm_name"] for s in changes["submit"]}
        ended = {e["slurm_name"] for e in changes["end"]} - submitted
        hosts1 = _planned_hosts(l1)
        rendered = {f"jobs/{f.name}" for f in (l1 / "jobs").glob("*.sbatch")}
        assert rendered == {s["file"] for s in changes["submit"]}  # sbatch files only for what changes
        assert set(hosts1) == set(kept) | submitted
        queue1 = _wait_running(slurm, set(kept) | submitted)
        for name, extend_min in kept.items():  # the same Slurm job, one round longer
            assert queue1[name][0] == queue0[name][0]
            assert _minutes(queue1[name][2]) == _minutes(queue0[name][2]) + extend_min, (queue0[name], queue1[name])
            assert set(queue1[name][3].split(",")) == hosts0[name]
        for name in submitted:  # a new or restarted allocation runs where round 1 put it
            assert set(queue1[name][3].split(",")) == hosts1[name]
            assert not hosts1[name] & {down, held}
        assert not ended & set(queue1), "an ended allocation still runs"
        running1 = load_plan(plan1).running()
        allocations1 = len(running1) - sum(1 for j in running1 if j.shares_with is not None) // 2
        assert len(kept) + len(submitted) == allocations1  # every allocation of round 1 runs, once
        assert queue1["not-wattplan"][0] == blocker.strip().split(";")[0]  # the unmanaged job is left alone
    finally:
        slurm.cancel_all()
