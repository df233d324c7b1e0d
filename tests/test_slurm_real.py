"""End to end against a real Slurm (slurmctld + 2 slurmd + munge on this host, 8 fake GPUs per node).

A plan with hostile job ids, a pair and jobs on both nodes is rendered with ``wattplan launch --to
slurm``, submitted with the rendered ``submit.sh`` (node setup steps, jobs, node resets), and every
job runs ``sleep; env``. Checked: every Slurm job completes; ``scontrol show job -d`` shows the plan's
nodes, GPU counts and GPU indices while the jobs run; each job's output shows its GPUs
(``SLURM_JOB_GPUS``, ``CUDA_VISIBLE_DEVICES``), its node and its id as inert text; the pair's two
jobs ran on the same GPU; the node steps set (and reset) exactly the plan's power limits.

The cluster needs root and Debian's ``slurmctld slurmd slurm-client munge``; without them the tests
skip, unless ``WATTPLAN_REQUIRE_SLURM=1`` (set by ``.ci/run``), which makes them fail instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.launch_helpers import hand_plan, install_fake_nvidia, launch_instance
from tests.slurm_cluster import SlurmCluster, running_cluster
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import write_plan

pytestmark = pytest.mark.slow

PWNED = (Path("/tmp/wattplan-pwned"), Path("/tmp/pwned"))


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    """A running two-node cluster for this module; stopped (by PID) and deleted afterwards."""
    yield from running_cluster("wattplan-slurm-")


def _render_with_cli(inst, plan, tmp_path: Path) -> Path:
    """Write the plan and instance, run ``wattplan launch --to slurm``; the rendered folder."""
    plan_path, inst_path, out = tmp_path / "plan.json", tmp_path / "instance.json", tmp_path / "slurm"
    write_plan(plan, plan_path)
    inst_path.write_text(json.dumps(instance_to_doc(inst)))
    result = CliRunner().invoke(
        app, ["launch", str(plan_path), "--instance", str(inst_path), "--to", "slurm", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def _expand(idx: str) -> list[int]:
    """``"0-1,4"`` -> ``[0, 1, 4]`` (Slurm's GRES index lists)."""
    out: list[int] = []
    for part in idx.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _gres_by_node(show: str) -> dict[str, tuple[str, list[int]]]:
    """``{node: (gres, indices)}`` from the per-node lines of ``scontrol show job -d``."""
    out = {}
    for m in re.finditer(r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=(gpu:[^(\s]*)\(IDX:([0-9,-]+)\)", show):
        out[m.group(1)] = (m.group(2), _expand(m.group(3)))
    return out


def _env_of(text: str) -> dict[str, str]:
    """The ``NAME=value`` lines of ``env`` output (a value with a newline keeps only its first line)."""
    out = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            out.setdefault(name, value)
    return out


def test_rendered_plan_runs_on_real_slurm(slurm: SlurmCluster, tmp_path: Path) -> None:
    for p in PWNED:
        p.unlink(missing_ok=True)
    inst = launch_instance(v100_only=True, command=["sh", "-c", "sleep 3; env"])
    plan = hand_plan(inst, v100_only=True)
    out = _render_with_cli(inst, plan, tmp_path)

    smi_log = tmp_path / "nvidia-smi.log"
    install_fake_nvidia(tmp_path / "bin", smi_log)
    env = {**slurm.env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_ROOT_JOBS": "allow"}
    started = time.monotonic()
    submit = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert submit.returncode == 0, submit.stderr + submit.stdout + slurm.logs()

    rows = [line.split("\t") for line in (out / "submitted.tsv").read_text().splitlines()]
    ids = {(kind, name): job for job, kind, name in rows}
    manifest = json.loads((out / "MANIFEST.json").read_text())
    units = manifest["units"]
    assert {name for kind, name in ids if kind == "job"} == {u["name"] for u in units}
    assert {name for kind, name in ids if kind in ("setup", "reset")} == {"v100-0", "v100-1"}

    # While the jobs run, scontrol -d shows each one's node, GPU count and GPU indices.
    seen: dict[str, dict[str, tuple[str, list[int]]]] = {}
    deadline = time.monotonic() + 60
    while len(seen) < len(units) and time.monotonic() < deadline:
        for u in units:
            job = ids[("job", u["name"])]
            if u["name"] not in seen:
                gres = _gres_by_node(slurm.show_job(job))
                if gres:
                    seen[u["name"]] = gres
        time.sleep(0.2)
    states = slurm.wait_for_jobs([job for job, _, _ in rows])
    elapsed = time.monotonic() - started
    assert set(states.values()) == {"COMPLETED"}, (states, slurm.logs())
    for job, _, _ in rows:
        assert slurm.job_field(job, "ExitCode") == "0:0"

    for u in units:
        expected = {p["host"]: (f"gpu:v100:{len(p['gpu_indices'])}", p["gpu_indices"]) for p in u["placement"]}
        assert seen.get(u["name"]) == expected, (u["name"], seen.get(u["name"]))
        job = ids[("job", u["name"])]
        assert slurm.job_field(job, "NodeList") == ",".join(expected)
        assert slurm.job_field(job, "NumNodes") == str(len(expected))

    # Job output: GPUs, node and the job's own (hostile) id, all as the plan says, nothing executed.
    logs = out / "logs"
    pair_gpus = []
    for u in units:
        job = ids[("job", u["name"])]
        (place,) = u["placement"]
        gpus = ",".join(map(str, place["gpu_indices"]))
        for member in u["jobs"]:
            log_name = member["name"] if len(u["jobs"]) == 2 else u["name"]
            text = (logs / f"{log_name}.{job}.out").read_text()
            env_seen = _env_of(text)
            assert env_seen["SLURM_JOB_GPUS"] == gpus
            assert env_seen["CUDA_VISIBLE_DEVICES"] == gpus
            assert env_seen["SLURMD_NODENAME"] == place["host"]
            assert env_seen["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
            assert f"WATTPLAN_JOB_ID={member['job_id']}\n" in text
            assert "EVIL=$(touch /tmp/wattplan-pwned) `id` ; exit 9" in text
            if len(u["jobs"]) == 2:
                pair_gpus.append((place["host"], env_seen["SLURM_JOB_GPUS"]))
    assert len(pair_gpus) == 2 and pair_gpus[0] == pair_gpus[1], "the pair must share the same GPU"
    assert not any(p.exists() for p in PWNED), "a job id or value was executed"

    # Node steps: each planned GPU got its power limit on its node, then its default back.
    # One nvidia-smi call acts on every GPU of a node that gets the same thing (-i 0,3,4).
    calls = []
    for line in smi_log.read_text().splitlines():
        node, rest = line.split(": ", 1)
        _, indices, *args = rest.split()
        calls.append((node, {int(i) for i in indices.split(",")}, " ".join(args)))

    def first(node: str, gpu: int, args: str) -> int:
        """The position of the first call on ``node`` with ``args`` that acts on ``gpu``; fails when none does."""
        found = [k for k, (n, gpus, a) in enumerate(calls) if n == node and gpu in gpus and a == args]
        assert found, (node, gpu, args, calls)
        return found[0]

    for u in units:
        for p in u["placement"]:
            for i in p["gpu_indices"]:
                node = p["host"]
                first(node, i, "-pm 1")
                first(node, i, "--query-gpu=index,power.default_limit --format=csv,noheader,nounits")
                assert first(node, i, f"-pl {u['setting']}") < first(node, i, "-pl 300")
    planned = {(p["host"], i) for u in units for p in u["placement"] for i in p["gpu_indices"]}
    touched = {(node, i) for node, gpus, _ in calls for i in gpus}
    assert touched == planned, "the node steps touched GPUs the plan does not use"
    assert elapsed < 90, f"the Slurm round took {elapsed:.0f} s"


def test_job_refuses_gpus_other_than_the_plans(slurm: SlurmCluster, tmp_path: Path) -> None:
    """A GPU held by someone else makes Slurm hand out other indices: the job stops (exit 3), says why."""
    from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan

    inst = launch_instance(v100_only=True, command=["sh", "-c", "env"])
    plan = assemble_plan(inst, [Allocation(("train-4",), "v100", 4, 250)], SolveInfo("hand", "feasible"))
    assert plan.running()[0].placement[0].gpu_indices == (0, 1, 2, 3)
    out = _render_with_cli(inst, plan, tmp_path)
    blocker = subprocess.run(
        ["sbatch", "--parsable", "--nodelist=v100-0", "--gres=gpu:v100:1", f"--output={tmp_path}/blocker.out"]
        + ["--wrap", "sleep 60"],
        env=slurm.env,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert blocker.returncode == 0, blocker.stderr
    blocker_id = blocker.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 20
        while slurm.job_field(blocker_id, "JobState") != "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.2)
        env = {**slurm.env, "WATTPLAN_NODE_STEPS": "skip", "WATTPLAN_ROOT_JOBS": "allow"}
        submit = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True, timeout=60)
        assert submit.returncode == 0, submit.stderr
        ((job, kind, name),) = [line.split("\t") for line in (out / "submitted.tsv").read_text().splitlines()]
        assert kind == "job"
        assert slurm.wait_for_jobs([job]) == {job: "FAILED"}
        assert slurm.job_field(job, "ExitCode") == "3:0"
        text = (out / "logs" / f"{name}.{job}.out").read_text()
        assert "the plan puts this job on GPUs 0,1,2,3 of v100-0; Slurm gave 1,2,3,4" in text
    finally:
        subprocess.run(["scancel", blocker_id], env=slurm.env, capture_output=True, timeout=20)
