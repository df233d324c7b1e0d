"""Shell target: node scripts are shellcheck-clean and, run with a fake nvidia-smi, do what the plan says.

The hostile-id test runs the rendered scripts for real: settings, MPS, every job started with its
GPUs, PID and log files written, and nothing from a job id or value executed.
"""

from __future__ import annotations

import os
import subprocess
import time
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
from wattplan.planner.launch.launcher import launch_plan
from wattplan.planner.launch.render import build_model


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    inst = launch_instance(command=["env"])
    out = tmp_path / "shell"
    launch_plan(hand_plan(inst), inst, "shell", out)
    return out


def _start(script: Path, tmp_path: Path, run_dir: Path, extra: dict[str, str] | None = None) -> str:
    log = tmp_path / "smi.log"
    install_fake_nvidia(tmp_path / "bin", log)
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "WATTPLAN_RUN_DIR": str(run_dir),
        "HOME": str(tmp_path),
        "WATTPLAN_ROOT_JOBS": "allow",  # these jobs name no user; the tests may run as root
        **(extra or {}),
    }
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert run.returncode == 0, run.stderr
    for pid_file in run_dir.glob("*.pid"):  # the jobs run in the background: wait for them
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 60  # ends as soon as the job has; generous for a loaded machine
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    return log.read_text()


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (an exited child nobody reaped yet is a zombie, state ``Z``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _env(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(" "))


def test_scripts_are_executable_and_shellcheck_clean(rendered: Path) -> None:
    scripts = sorted(rendered.glob("*.sh"))
    assert [p.name for p in scripts] == ["a100-0.sh", "v100-0.sh", "v100-1.sh"]
    assert all(os.access(p, os.X_OK) for p in scripts)
    shellcheck(scripts)


def test_node_script_runs_the_plan_and_ids_stay_inert(tmp_path: Path, rendered: Path) -> None:
    for p in (Path("/tmp/wattplan-pwned"), Path("/tmp/pwned")):
        p.unlink(missing_ok=True)
    run_dir = tmp_path / "run"
    calls = _start(rendered / "v100-1.sh", tmp_path, run_dir).splitlines()
    smi = [c.split(": ", 1)[1] for c in calls if not c.startswith("mps ")]
    assert smi[:3] == [
        "-i 0,1,2,3 -pm 1", "-i 0,1 -pl 150", "-i 2,3 -pl 250",
    ]  # fmt: skip
    mps = [c for c in calls if c.startswith("mps ")]
    assert len(mps) == 1 and mps[0].startswith("mps -d CUDA_VISIBLE_DEVICES=GPU-fake-0 pipe=")

    model = build_model(hand_plan(launch_instance(command=["env"])), launch_instance(command=["env"]), HostMap())
    members = {m.job_id: (u, m) for u in model.units if "v100-1" in u.hosts for m in u.members}
    assert set(members) == {HOSTILE_IDS[1], HOSTILE_IDS[2], HOSTILE_IDS[3], HOSTILE_IDS[4], HOSTILE_IDS[5]}
    for job_id, (unit, m) in members.items():
        assert (run_dir / f"{m.name}.pid").read_text().strip().isdigit()
        text = (run_dir / f"{m.name}.log").read_text()
        assert f"WATTPLAN_JOB_ID={job_id}\n" in text
        env = _env(text)
        assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["PWD"] == "/tmp"
        assert env["EVIL"] == "$(touch /tmp/wattplan-pwned) `id` ; exit 9"
        assert env["WATTPLAN_GPUS"] == unit.parts[0].indices_text
        if unit.shared:  # MPS clients get the GPUs' UUIDs (MPS renumbers the indices)
            assert env["CUDA_VISIBLE_DEVICES"] == "GPU-fake-0"
            assert env["CUDA_MPS_PIPE_DIRECTORY"].endswith(f"mps-{unit.name}/pipe")
        else:
            assert env["CUDA_VISIBLE_DEVICES"] == unit.parts[0].indices_text
            assert "CUDA_MPS_PIPE_DIRECTORY" not in env
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "run", "shell", "smi.log"]
    assert not Path("/tmp/wattplan-pwned").exists() and not Path("/tmp/pwned").exists()

    log = tmp_path / "smi.log"
    log.unlink()
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_RUN_DIR": str(run_dir)}
    stop = subprocess.run(["bash", str(rendered / "v100-1.sh"), "stop"], env=env, capture_output=True, text=True)
    assert stop.returncode == 0, stop.stderr
    calls = log.read_text().splitlines()
    assert calls[0].startswith("mps  CUDA_VISIBLE_DEVICES=")  # "quit" goes to the control daemon's stdin
    assert "local: -i 0,1,2,3 -pl 300" in calls  # the defaults back in one call
    assert not list(run_dir.glob("*.pid"))


def test_without_mps_a_pair_time_slices_on_plain_indices(tmp_path: Path, rendered: Path) -> None:
    run_dir = tmp_path / "run"
    calls = _start(rendered / "v100-1.sh", tmp_path, run_dir, {"WATTPLAN_MPS": "0"})
    assert "mps " not in calls
    name = next(p for p in run_dir.glob("*.log") if "reboot" in p.name)
    assert _env(name.read_text())["CUDA_VISIBLE_DEVICES"] == "0"


def test_clock_settings_and_usage(tmp_path: Path, rendered: Path) -> None:
    calls = _start(rendered / "a100-0.sh", tmp_path, tmp_path / "run")
    assert "local: -i 0,1 -lgc 1410,1410" in calls and "local: -i 2 -lgc 1005,1005" in calls
    bad = subprocess.run(["bash", str(rendered / "a100-0.sh"), "restart"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_user_field_runs_as_that_user(tmp_path: Path) -> None:
    me = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    doc = launch_instance_doc(command=["id", "-un"])
    doc["jobs"][0]["user"] = me
    from wattplan.planner.contracts.instance_io import parse_instance

    inst = parse_instance(doc)
    launch_plan(hand_plan(inst), inst, "shell", tmp_path / "shell")
    run_dir = tmp_path / "run"
    _start(tmp_path / "shell" / "v100-0.sh", tmp_path, run_dir)
    log = next(run_dir.glob("wattplan-r7-train-4-*.log"))
    assert log.read_text() == f"{me}\n"


def test_multi_node_job_starts_on_each_node_with_its_rank(tmp_path: Path) -> None:
    inst = multi_node_instance()
    launch_plan(multi_node_plan(inst), inst, "shell", tmp_path / "shell")
    for rank, host in enumerate(["v100-0", "v100-1"]):
        text = (tmp_path / "shell" / f"{host}.sh").read_text()
        assert f"export WATTPLAN_NODE_RANK={rank} WATTPLAN_NUM_NODES=2" in text
        assert "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in text
        assert "# PLACEHOLDER" in text
