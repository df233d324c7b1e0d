"""Slurm target without a cluster: directives, node steps, submit order, quoting, the GPU check.

The end-to-end run on a real Slurm is in ``tests/test_slurm_real.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.launch_helpers import (
    HOSTILE_IDS,
    hand_plan,
    install_fake_nvidia,
    launch_instance,
    launch_instance_doc,
    multi_node_instance,
    multi_node_plan,
    shellcheck,
)
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.launcher import LaunchOptions, launch_plan
from wattplan.planner.launch.render import build_model
from wattplan.planner.launch.slurm import SlurmOptions, render_slurm


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    inst = launch_instance()
    out = tmp_path / "slurm"
    launch_plan(hand_plan(inst), inst, "slurm", out)
    return out


def _directives(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", text, flags=re.M))


def _script(out: Path, job_id: str) -> str:
    name = next(p for p in (out / "jobs").iterdir() if f"export WATTPLAN_JOB_ID={_q(job_id)}" in p.read_text())
    return name.read_text()


def _q(text: str) -> str:
    from wattplan.planner.launch.quoting import sh_quote

    return sh_quote(text)


def test_directives_follow_the_plan(rendered: Path) -> None:
    train = _directives(_script(rendered, "train-4"))
    assert train["gres"] == "gpu:v100:4" and train["nodelist"] == "v100-0" and train["nodes"] == "1"
    assert "gpu-freq" not in train  # power limits come from the node step
    assert re.fullmatch(r"wattplan-train-4-[0-9a-f]{8}", train["job-name"])  # no round: later rounds find it
    clocked = _directives(_script(rendered, "clocked"))
    assert clocked["gpu-freq"] == "1410" and clocked["gres"] == "gpu:a100:2"
    pair = _script(rendered, "clock-pair-a")
    assert "gpu-freq" not in _directives(pair)  # a shared GPU's clock comes from the node step
    assert "export WATTPLAN_JOB_ID=clock-pair-b" in pair  # both jobs of a pair in one allocation
    assert _directives(pair)["gres"] == "gpu:a100:1"
    setup = (rendered / "nodes" / "a100-0.setup.sh").read_text()
    assert "\nsmi 2 -pm 1\nsmi 2 -lgc 1005,1005\n" in setup
    assert not re.search(r"smi [0-9,]*0[0-9,]* -lgc", setup)  # the exclusive job's clock is --gpu-freq's
    reset = (rendered / "nodes" / "a100-0.reset.sh").read_text()
    assert "\nsmi 2 -rgc\n" in reset
    v100 = (rendered / "nodes" / "v100-0.setup.sh").read_text()
    assert v100.endswith("\nsmi 0,1,2,3,4,5,6,7 -pm 1\nsmi 0,1,2,3,4,5 -pl 250\nsmi 6,7 -pl 150\n")  # one per setting
    assert _directives(v100)["gres"] == "gpu:v100:8" and _directives(v100)["nodelist"] == "v100-0"


def test_every_sbatch_line_is_plain_tokens(rendered: Path) -> None:
    for path in rendered.rglob("*.s*"):
        for line in path.read_text().splitlines():
            if line.startswith("#SBATCH"):
                assert re.fullmatch(r"#SBATCH --[a-z-]+=[A-Za-z0-9._,:=/%+@-]+", line), line


def test_scripts_are_shellcheck_clean(rendered: Path) -> None:
    scripts = [rendered / "submit.sh", *(rendered / "jobs").iterdir(), *(rendered / "nodes").iterdir()]
    assert all(os.access(p, os.X_OK) for p in scripts)
    shellcheck(scripts)


def test_options_partition_and_untyped_gres(tmp_path: Path) -> None:
    inst = launch_instance(v100_only=True)
    model = build_model(hand_plan(inst, v100_only=True), inst, HostMap())
    files = render_slurm(model, SlurmOptions(partition="gpu-long", gres_type=False))
    job = next(f for f in files if f.path.startswith("jobs/"))
    assert _directives(job.text)["partition"] == "gpu-long"
    assert re.fullmatch(r"gpu:\d+", _directives(job.text)["gres"])
    with pytest.raises(ValueError):
        render_slurm(model, SlurmOptions(partition="gpu; rm -rf /"))


def test_multi_node_job_asks_for_every_node(tmp_path: Path) -> None:
    inst = multi_node_instance()
    files = render_slurm(build_model(multi_node_plan(inst), inst, HostMap()))
    job = _directives(next(f for f in files if f.path.startswith("jobs/")).text)
    assert (job["nodes"], job["nodelist"], job["gres"]) == ("2", "v100-0,v100-1", "gpu:v100:8")


def _fake_sbatch(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(
        "#!/bin/bash\n"
        f'n=$(( $(wc -l < "{log}" 2>/dev/null || echo 0) + 1 ))\n'
        f'printf \'%s\\n\' "$*" >> "{log}"\n'
        'echo "$((100 + n));cluster"\n'
    )
    sbatch.chmod(0o755)


def test_submit_orders_steps_jobs_and_resets(tmp_path: Path) -> None:
    doc = launch_instance_doc()
    doc["jobs"][0]["user"] = "alice"
    from wattplan.planner.contracts.instance_io import parse_instance

    inst = parse_instance(doc)
    out = tmp_path / "slurm"
    launch_plan(hand_plan(inst), inst, "slurm", out)
    log = tmp_path / "sbatch.log"
    _fake_sbatch(tmp_path / "bin", log)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_ROOT_JOBS": "allow"}
    run = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    calls = log.read_text().splitlines()
    rows = [line.split("\t") for line in (out / "submitted.tsv").read_text().splitlines()]
    assert [r[1] for r in rows] == ["setup"] * 3 + ["job"] * 9 + ["reset"] * 3
    setup_id = {r[2]: r[0] for r in rows if r[1] == "setup"}
    assert calls[0] == "--parsable nodes/v100-0.setup.sh"
    job_calls = calls[3:12]
    # Node by node, each node's jobs by first GPU index: Slurm hands out the lowest free GPUs.
    assert [c.split()[-1].split("-r7-")[1][:8] for c in job_calls[:3]] == ["train-4-", "two-more", "x-rm-rf-"]
    assert job_calls[0] == (
        f"--parsable --dependency=afterok:{setup_id['v100-0']} --uid=alice jobs/{rows[3][2]}.sbatch"
    )
    v100_0_jobs = ":".join(r[0] for r in rows[3:6])
    assert calls[12] == f"--parsable --dependency=afterany:{v100_0_jobs} nodes/v100-0.reset.sh"

    jobs = [line.split("\t") for line in (out / "jobs.tsv").read_text().splitlines()]
    assert [r[0] for r in jobs] == [r[0] for r in rows]  # the id, Slurm job name and user a later round reads
    assert jobs[3][1:] == [_directives((out / "jobs" / f"{rows[3][2]}.sbatch").read_text())["job-name"], "alice"]

    log.unlink()
    again = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and not log.exists(), "a second run submitted again"

    (out / "submitted.tsv").unlink()  # how to submit again on purpose
    env["WATTPLAN_NODE_STEPS"] = "skip"
    run = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == 9 and not any("dependency" in c or "nodes/" in c for c in calls)


def test_pair_with_two_users_is_refused() -> None:
    doc = launch_instance_doc()
    doc["jobs"][2]["user"] = "alice"
    doc["jobs"][3]["user"] = "bob"
    from wattplan.planner.contracts.instance_io import parse_instance

    inst = parse_instance(doc)
    with pytest.raises(ValueError, match="two users"):
        render_slurm(build_model(hand_plan(inst), inst, HostMap()))


def _run_job_script(script: Path, cwd: Path, gpus: str, node: str, extra: dict[str, str] | None = None):
    env = {
        "PATH": os.environ["PATH"],
        "SLURMD_NODENAME": node,
        "SLURM_JOB_GPUS": gpus,
        "SLURM_JOB_ID": "42",
        "SLURM_SUBMIT_DIR": str(cwd),
        **(extra or {}),
    }
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=cwd, timeout=30)


@pytest.mark.parametrize("job_id", [HOSTILE_IDS[0], HOSTILE_IDS[3], HOSTILE_IDS[4], HOSTILE_IDS[5]])
def test_hostile_ids_are_inert_when_a_job_script_runs(tmp_path: Path, job_id: str) -> None:
    inst = launch_instance(command=["env"])
    out = tmp_path / "slurm"
    launch_plan(hand_plan(inst), inst, "slurm", out)
    unit = next(u for u in build_model(hand_plan(inst), inst, HostMap()).units if u.job_ids == (job_id,))
    part = unit.parts[0]
    work = tmp_path / "work"
    work.mkdir()
    run = _run_job_script(out / "jobs" / f"{unit.name}.sbatch", work, part.indices_text, part.host)
    assert run.returncode == 0, run.stderr
    assert f"WATTPLAN_JOB_ID={job_id}\n" in run.stdout
    assert "EVIL=$(touch /tmp/wattplan-pwned) `id` ; exit 9\n" in run.stdout
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID\n" in run.stdout
    assert not list(work.iterdir()) and not Path("/tmp/wattplan-pwned").exists()


def test_pair_script_runs_both_jobs_with_their_own_logs(tmp_path: Path) -> None:
    inst = launch_instance(command=["env"])
    out = tmp_path / "slurm"
    launch_plan(hand_plan(inst), inst, "slurm", out)
    unit = next(u for u in build_model(hand_plan(inst), inst, HostMap()).units if u.shared and "v100" in u.gpu_type)
    run = _run_job_script(out / "jobs" / f"{unit.name}.sbatch", tmp_path, "0", "v100-1")
    assert run.returncode == 0, run.stderr
    for member in unit.members:
        text = (tmp_path / "logs" / f"{member.name}.42.out").read_text()
        assert f"WATTPLAN_JOB_ID={member.job_id}\n" in text
        assert f"WATTPLAN_SHARES_WITH={member.partner}\n" in text


def test_job_stops_when_slurm_gives_other_gpus(tmp_path: Path) -> None:
    inst = launch_instance(command=["echo", "ran"])
    out = tmp_path / "slurm"
    launch_plan(hand_plan(inst), inst, "slurm", out)
    script = next((out / "jobs").glob("wattplan-r7-train-4-*.sbatch"))
    run = _run_job_script(script, tmp_path, "4,5,6,7", "v100-0")
    assert run.returncode == 3 and "ran" not in run.stdout
    assert "the plan puts this job on GPUs 0,1,2,3 of v100-0; Slurm gave 4,5,6,7" in run.stderr
    run = _run_job_script(script, tmp_path, "4,5,6,7", "v100-0", {"WATTPLAN_GPU_CHECK": "warn"})
    assert run.returncode == 0 and run.stdout == "ran\n" and "Slurm gave" in run.stderr
    run = _run_job_script(script, tmp_path, "0,1,2,3", "v100-0")
    assert run.returncode == 0 and run.stdout == "ran\n" and run.stderr == ""


def _node_steps(tmp_path: Path, rendered: Path, **env: str) -> list[str]:
    """Run v100-1's setup then reset step with the fake ``nvidia-smi`` (both must exit 0); its calls' arguments."""
    log = tmp_path / "smi.log"
    install_fake_nvidia(tmp_path / "bin", log)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env}
    for step in ("setup", "reset"):
        run = subprocess.run(["bash", str(rendered / "nodes" / f"v100-1.{step}.sh")], env=env, capture_output=True)
        assert run.returncode == 0, run.stderr
    return [c.split(": ", 1)[1] for c in log.read_text().splitlines()]


def test_node_steps_run_with_a_fake_nvidia_smi(tmp_path: Path, rendered: Path) -> None:
    calls = _node_steps(tmp_path, rendered, SLURMD_NODENAME="v100-1")
    assert calls == [  # one call per setting: persistence mode, each power limit, the defaults' query, the reset
        "-i 0,1,2,3 -pm 1", "-i 0,1 -pl 150", "-i 2,3 -pl 250",
        "-i 0,1,2,3 --query-gpu=index,power.default_limit --format=csv,noheader,nounits", "-i 0,1,2,3 -pl 300",
    ]  # fmt: skip
    missing = subprocess.run(
        ["bash", str(rendered / "nodes" / "v100-1.setup.sh")], env={"PATH": "/usr/bin:/bin"}, capture_output=True
    )
    assert missing.returncode == 1 and b"nvidia-smi is not on PATH" in missing.stderr


def test_node_steps_fall_back_to_one_call_per_gpu(tmp_path: Path, rendered: Path) -> None:
    """An nvidia-smi that refuses lists still sets every GPU; a GPU that refuses is named and fails the step."""
    calls = _node_steps(tmp_path, rendered, FAKE_SMI_NO_LISTS="1")
    done = [c for c in calls if "," not in c.split()[1]]  # the calls for one GPU each
    assert len(calls) - len(done) == 5  # each list call was tried once first
    assert done == [
        *(f"-i {i} -pm 1" for i in range(4)), "-i 0 -pl 150", "-i 1 -pl 150", "-i 2 -pl 250", "-i 3 -pl 250",
        *(f"-i {i} --query-gpu=index,power.default_limit --format=csv,noheader,nounits" for i in range(4)),
        *(f"-i {i} -pl 300" for i in range(4)),
    ]  # fmt: skip
    log = tmp_path / "smi.log"
    log.unlink()
    refused = subprocess.run(
        ["bash", str(rendered / "nodes" / "v100-1.setup.sh")],
        env={"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "FAKE_SMI_REFUSE": "2"},
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "GPU 2 refused nvidia-smi -pm 1" in refused.stderr
    calls = [c.split(": ", 1)[1] for c in log.read_text().splitlines()]
    assert calls == ["-i 0,1,2,3 -pm 1", *(f"-i {i} -pm 1" for i in range(4))]  # the others still set


def test_render_via_launcher_options(tmp_path: Path) -> None:
    inst = launch_instance(v100_only=True)
    opts = LaunchOptions(hosts=HostMap({"v100-0": "gpu-a", "v100-1": "gpu-b"}))
    result = launch_plan(hand_plan(inst, v100_only=True), inst, "slurm", tmp_path / "o", opts)
    assert (tmp_path / "o" / "nodes" / "gpu-a.setup.sh").exists()
    assert result.model.hosts() == ["gpu-a", "gpu-b"]
    text = (tmp_path / "o" / "submit.sh").read_text()
    assert "nodes/gpu-b.reset.sh" in text and "v100-1" not in text
