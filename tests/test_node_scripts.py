"""The node scripts (``planner/agent/node_files``) run for real against the ``nvidia-smi`` stand-in.

Each test builds an emulated cluster folder with one node (``v100-0``, 8 GPUs, 100-300 W, default 300 W),
puts a ``nvidia-smi`` wrapper on PATH that logs its arguments and execs :mod:`planner.cluster.nvidia_smi`,
and runs the scripts with bash and the environment Slurm gives them. The stand-in's own unit tests are at
the end.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.launch_helpers import shellcheck
from wattplan.planner.cluster.layout import ClusterLayout, JobSetting
from wattplan.planner.cluster.nvidia_smi import SmiError, node_gpu_limits, run
from wattplan.planner.contracts.domain import SettingUnit

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "planner" / "agent" / "node_files"
NODE = "v100-0"
NODE_ENTRY = {
    "name": NODE,
    "gpu_type": "v100",
    "gpus": 8,
    "default_limit_w": 300,
    "min_limit_w": 100,
    "max_limit_w": 300,
}


@dataclass
class Cluster:
    """One emulated cluster folder, its fake ``nvidia-smi`` and a way to run the node scripts in it."""

    layout: ClusterLayout
    smi_log: Path
    env: dict[str, str]

    def script(
        self, name: str, job: str | None = None, gpus: str | None = None, *args: str, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if job is not None:
            env["SLURM_JOB_ID"] = job
        if gpus is not None:
            env["SLURM_JOB_GPUS"] = gpus
        env.update(extra)
        return subprocess.run(["bash", str(SCRIPTS / name), *args], env=env, capture_output=True, text=True, timeout=30)

    def ok(self, name: str, job: str | None = None, gpus: str | None = None, *args: str) -> str:
        result = self.script(name, job, gpus, *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def setting(self, job: str, value: int, unit: SettingUnit = "power_limit_w", host: str | None = None) -> None:
        js = JobSetting(job, 3, "v100", 2, value, unit, host)
        self.layout.settings_dir.mkdir(parents=True, exist_ok=True)
        self.layout.setting_file(job).write_text(js.to_text())

    def gpu(self, index: int) -> dict[str, object]:
        path = self.layout.gpu_state_file(NODE, index)
        return json.loads(path.read_text()) if path.exists() else {"power_limit_w": 300.0, "sm_clock_lock_mhz": None}

    def jobmap(self, index: int) -> list[str] | None:
        path = self.layout.jobmap_file(NODE, index)
        return path.read_text().splitlines() if path.exists() else None

    def mapped(self) -> list[str]:
        """The GPU indices that have a jobmap file."""
        folder = self.layout.node_dir / NODE / "jobmap"
        return sorted(p.name for p in folder.iterdir()) if folder.exists() else []

    def job_gpus(self, job: str) -> str | None:
        path = self.layout.job_gpus_file(NODE, job)
        return path.read_text() if path.exists() else None

    def calls(self) -> list[str]:
        """The nvidia-smi calls since the last call of this method."""
        text = self.smi_log.read_text() if self.smi_log.exists() else ""
        self.smi_log.unlink(missing_ok=True)
        return text.splitlines()


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    layout = ClusterLayout(tmp_path / "cluster")
    layout.root.mkdir()
    layout.manifest.write_text(json.dumps({"t0_unix": 0, "time_scale": 1, "nodes": [NODE_ENTRY]}))
    layout.bin_dir.mkdir()
    log = tmp_path / "smi.log"
    wrapper = layout.bin_dir / "nvidia-smi"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> {shlex.quote(str(log))}\n"
        f"PYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} "
        '-m wattplan.planner.cluster.nvidia_smi "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {
        "PATH": f"{layout.bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "WATTPLAN_CLUSTER_DIR": str(layout.root),
        "WATTPLAN_SETTINGS_DIR": str(layout.settings_dir),
        "WATTPLAN_NODE_DIR": str(layout.node_dir),
        "SLURMD_NODENAME": NODE,
    }
    return Cluster(layout, log, env)


def test_managed_job_gets_its_power_limit_and_mapping(cluster: Cluster) -> None:
    cluster.setting("101", 200)
    cluster.ok("prolog.sh", "101", "0,1")
    assert cluster.job_gpus("101") == "0,1\nrun=0\n"
    assert cluster.jobmap(0) == ["101"] and cluster.jobmap(1) == ["101"] and cluster.jobmap(2) is None
    assert cluster.gpu(0)["power_limit_w"] == 200.0 and cluster.gpu(1)["power_limit_w"] == 200.0
    assert cluster.gpu(2)["power_limit_w"] == 300.0
    assert cluster.calls() == ["-i 0,1 -pl 200"]  # one call for all of the job's GPUs
    assert cluster.ok("task_prolog.sh", "101") == ""

    cluster.ok("epilog.sh", "101")
    assert cluster.gpu(0)["power_limit_w"] == 300.0 and cluster.gpu(1)["power_limit_w"] == 300.0
    assert cluster.jobmap(0) is None and cluster.job_gpus("101") is None
    assert cluster.calls() == [  # three calls however many GPUs the job leaves
        "-i 0,1 --query-gpu=index,power.default_limit,power.limit --format=csv,noheader,nounits",
        "-i 0,1 -pl 300",
        "-i 0,1 -rgc",
    ]


def test_a_gpu_that_refuses_leaves_the_others_set_and_is_named(cluster: Cluster) -> None:
    """When the call for all of a job's GPUs fails, each GPU gets a call of its own.

    The refusal is logged by its index and the job's other GPUs get their setting (prolog) or are reset (epilog).
    """
    cluster.setting("101", 200)
    result = cluster.script("prolog.sh", "101", "0,9")  # the node has 8 GPUs: nvidia-smi knows no GPU 9
    assert result.returncode == 0, result.stderr
    assert cluster.gpu(0)["power_limit_w"] == 200.0 and "GPU 9: nvidia-smi -pl 200 failed" in result.stderr
    assert cluster.calls() == ["-i 0,9 -pl 200", "-i 0 -pl 200", "-i 9 -pl 200"]
    result = cluster.script("epilog.sh", "101")
    assert result.returncode == 0, result.stderr
    assert cluster.gpu(0)["power_limit_w"] == 300.0 and "GPU 9: cannot read its power limits" in result.stderr
    assert "GPU 0" not in result.stderr and cluster.jobmap(0) is None


def test_clock_setting_is_locked_and_released(cluster: Cluster) -> None:
    cluster.setting("7", 1200, "sm_clock_mhz")
    cluster.ok("prolog.sh", "7", "5")
    assert cluster.gpu(5)["sm_clock_lock_mhz"] == [1200, 1200]
    assert cluster.calls() == ["-i 5 -lgc 1200,1200"]
    cluster.ok("epilog.sh", "7")
    assert cluster.gpu(5)["sm_clock_lock_mhz"] is None and cluster.gpu(5)["power_limit_w"] == 300.0
    assert cluster.calls() == [
        "-i 5 --query-gpu=index,power.default_limit,power.limit --format=csv,noheader,nounits",
        "-i 5 -rgc",
    ]


def test_unmanaged_job_gets_only_its_mapping(cluster: Cluster) -> None:
    cluster.ok("prolog.sh", "301", "4,6")
    assert cluster.job_gpus("301") == "4,6\nrun=0\n" and cluster.jobmap(4) == ["301"] and cluster.jobmap(6) == ["301"]
    assert cluster.calls() == [] and not cluster.layout.gpu_state_file(NODE, 4).exists()
    assert cluster.ok("task_prolog.sh", "301") == ""
    no_gpus = cluster.script("prolog.sh", "302", "")
    assert no_gpus.returncode == 0 and cluster.job_gpus("302") is None


def test_guest_shares_the_hosts_gpus_and_leaves_them_to_the_host(cluster: Cluster) -> None:
    cluster.setting("201", 250)
    cluster.setting("202", 250, host="201")
    cluster.ok("prolog.sh", "201", "2,3")
    cluster.calls()
    cluster.ok("prolog.sh", "202", "")  # Slurm ran the guest with --gres=gpu:0
    assert cluster.job_gpus("202") == "2,3\nrun=0\n"
    assert cluster.jobmap(2) == ["201", "202"] and cluster.jobmap(3) == ["201", "202"]
    assert cluster.calls() == []  # the pair runs at the host's setting
    assert (
        cluster.ok("task_prolog.sh", "202") == "export CUDA_VISIBLE_DEVICES=2,3\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
    )
    assert cluster.ok("task_prolog.sh", "201") == ""

    cluster.ok("epilog.sh", "202")
    assert cluster.jobmap(2) == ["201"] and cluster.jobmap(3) == ["201"] and cluster.job_gpus("202") is None
    assert cluster.gpu(2)["power_limit_w"] == 250.0 and cluster.calls() == []
    assert cluster.job_gpus("201") == "2,3\nrun=0\n"

    cluster.ok("epilog.sh", "201")
    assert cluster.jobmap(2) is None and cluster.jobmap(3) is None and cluster.job_gpus("201") is None
    assert cluster.gpu(2)["power_limit_w"] == 300.0 and cluster.gpu(3)["power_limit_w"] == 300.0


def test_host_that_ends_first_leaves_the_reset_to_its_guest(cluster: Cluster) -> None:
    cluster.setting("201", 150)
    cluster.setting("202", 150, host="201")
    cluster.ok("prolog.sh", "201", "0")
    cluster.ok("prolog.sh", "202", "")
    cluster.ok("epilog.sh", "201")
    assert cluster.jobmap(0) == ["202"] and cluster.gpu(0)["power_limit_w"] == 150.0
    cluster.ok("epilog.sh", "202")
    assert cluster.jobmap(0) is None and cluster.gpu(0)["power_limit_w"] == 300.0


def test_a_guest_that_slurm_gave_gpus_runs_on_its_own(cluster: Cluster) -> None:
    """The agent's update to gpu:0 did not go through (the plan changed, or Slurm refused): its own GPUs win."""
    cluster.setting("201", 250)
    cluster.setting("203", 150, host="201")
    cluster.ok("prolog.sh", "201", "2,3")
    cluster.ok("prolog.sh", "203", "7")
    assert cluster.job_gpus("203") == "7\nrun=0\n" and cluster.jobmap(7) == ["203"] and cluster.jobmap(2) == ["201"]
    assert cluster.gpu(7)["power_limit_w"] == 150.0
    assert cluster.ok("task_prolog.sh", "203", "7") == ""  # Slurm's CUDA_VISIBLE_DEVICES stands


def test_guest_whose_host_is_unknown_is_not_mapped(cluster: Cluster) -> None:
    cluster.setting("202", 150, host="999")
    result = cluster.script("prolog.sh", "202", "")
    assert result.returncode == 0 and "host job 999" in result.stderr
    assert cluster.job_gpus("202") is None and cluster.mapped() == []
    assert cluster.ok("task_prolog.sh", "202") == ""


@pytest.mark.slow
def test_concurrent_prologs_and_epilogs_keep_the_mapping_consistent(cluster: Cluster) -> None:
    jobs = [str(500 + k) for k in range(8)]
    for k, job in enumerate(jobs):
        cluster.setting(job, 110 + 10 * k)
    with ThreadPoolExecutor(8) as pool:  # each on its own GPU, and all of them on GPU 7 besides
        results = list(pool.map(lambda kj: cluster.script("prolog.sh", kj[1], f"{kj[0]},7"), enumerate(jobs)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert sorted(cluster.jobmap(7) or []) == jobs
    for k, job in enumerate(jobs[:7]):
        assert cluster.jobmap(k) == [job] and cluster.job_gpus(job) == f"{k},7\nrun=0\n"
        assert cluster.gpu(k)["power_limit_w"] == 110 + 10 * k

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda j: cluster.script("epilog.sh", j), jobs))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    node = cluster.layout.node_dir / NODE
    assert list((node / "jobmap").iterdir()) == [] and list((node / "gpus").iterdir()) == []
    assert list((node / "runs").iterdir()) == []
    assert all(cluster.gpu(i)["power_limit_w"] == 300.0 for i in range(8))


def test_the_epilog_of_a_requeued_run_leaves_the_new_run_alone(cluster: Cluster) -> None:
    """Seen live: Slurm started a requeued job's new run on the same node before the epilog of its previous run.

    That epilog (which already sees the requeue counted) undoes its own run only: the new run keeps its mapping
    and its setting, GPUs only the old run held are unmapped and reset, and the new run's epilog cleans up.
    """
    cluster.setting("101", 150)
    cluster.ok("prolog.sh", "101", "0,1")  # run 0 on GPUs 0 and 1
    new_run = cluster.script("prolog.sh", "101", "1,2", SLURM_JOB_RESTART_COUNT="1")  # run 1 comes first ...
    assert new_run.returncode == 0, new_run.stderr
    old_epilog = cluster.script("epilog.sh", "101", "0,1", SLURM_JOB_RESTART_COUNT="1")  # ... then run 0's epilog
    assert old_epilog.returncode == 0, old_epilog.stderr
    assert cluster.job_gpus("101") == "1,2\nrun=1\n"
    assert cluster.jobmap(0) is None and cluster.jobmap(1) == ["101"] and cluster.jobmap(2) == ["101"]
    assert cluster.gpu(0)["power_limit_w"] == 300.0  # only run 0 held it: reset
    assert cluster.gpu(1)["power_limit_w"] == cluster.gpu(2)["power_limit_w"] == 150
    runs = cluster.layout.node_dir / NODE / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["101.1"]
    done = cluster.script("epilog.sh", "101", "1,2", SLURM_JOB_RESTART_COUNT="1")  # run 1 ends for good
    assert done.returncode == 0, done.stderr
    assert cluster.mapped() == [] and cluster.job_gpus("101") is None and list(runs.iterdir()) == []
    assert all(cluster.gpu(i)["power_limit_w"] == 300.0 for i in range(3))


def test_the_epilog_of_a_requeued_run_before_the_new_run(cluster: Cluster) -> None:
    """The usual order: run 0's epilog (restart count already 1) before run 1's prolog."""
    cluster.ok("prolog.sh", "102", "3")
    old_epilog = cluster.script("epilog.sh", "102", "3", SLURM_JOB_RESTART_COUNT="1")
    assert old_epilog.returncode == 0 and cluster.mapped() == [] and cluster.job_gpus("102") is None
    new_run = cluster.script("prolog.sh", "102", "3", SLURM_JOB_RESTART_COUNT="1")
    assert new_run.returncode == 0 and cluster.jobmap(3) == ["102"] and cluster.job_gpus("102") == "3\nrun=1\n"


def test_apply_settings_changes_a_running_jobs_limit(cluster: Cluster) -> None:
    cluster.setting("101", 200)
    cluster.setting("102", 1100, "sm_clock_mhz")
    cluster.ok("prolog.sh", "101", "0,1")
    cluster.ok("prolog.sh", "102", "2")
    cluster.calls()
    cluster.ok("apply_settings.sh", None, None, "--node", NODE)
    calls = cluster.calls()
    assert [c for c in calls if "--query-gpu" not in c] == []  # everything already at its setting
    # one query of every GPU per pass: a call per GPU held the node's lock for seconds on a busy node
    assert [c for c in calls if "--query-gpu" in c] == [
        "--query-gpu=index,power.limit,clocks.sm --format=csv,noheader,nounits"
    ]

    cluster.setting("101", 150)
    cluster.setting("102", 1300, "sm_clock_mhz")
    result = cluster.script("apply_settings.sh")  # the node from SLURMD_NODENAME
    assert result.returncode == 0, result.stderr
    assert "job 101 GPU 0: power_limit_w 200 -> 150" in result.stderr
    assert "job 101 GPU 1: power_limit_w 200 -> 150" in result.stderr
    assert cluster.gpu(0)["power_limit_w"] == 150.0 and cluster.gpu(1)["power_limit_w"] == 150.0
    assert cluster.gpu(2)["sm_clock_lock_mhz"] == [1300, 1300]
    assert [c for c in cluster.calls() if "--query-gpu" not in c] == ["-i 0,1 -pl 150", "-i 2 -lgc 1300,1300"]


def test_apply_settings_every_loops_until_sigterm(cluster: Cluster) -> None:
    cluster.setting("101", 200)
    cluster.ok("prolog.sh", "101", "3")
    proc = subprocess.Popen(
        ["bash", str(SCRIPTS / "apply_settings.sh"), "--every", "1"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.3)
        cluster.setting("101", 120)
        deadline = time.monotonic() + 60  # the node agent's pass every 1 s; generous for a loaded machine
        while cluster.gpu(3)["power_limit_w"] != 120.0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cluster.gpu(3)["power_limit_w"] == 120.0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.communicate()


def test_apply_settings_usage(cluster: Cluster) -> None:
    assert cluster.script("apply_settings.sh", None, None, "--every", "0").returncode == 2
    assert cluster.script("apply_settings.sh", None, None, "--node", "../etc").returncode == 2
    assert cluster.script("apply_settings.sh", None, None, "--bogus").returncode == 2


@pytest.mark.parametrize(
    "line",
    [
        "setting=200;touch {canary}",
        "setting=$(touch {canary})",
        "setting=`touch {canary}`",
        "setting=200 250",
        "unit=power_limit_w;touch {canary}",
        "host_job=../../../tmp",
        "gpu_type=v100$(touch {canary})",
        "evil=$(touch {canary})",
    ],
)
def test_bad_settings_values_are_refused_and_nothing_runs(cluster: Cluster, tmp_path: Path, line: str) -> None:
    canary = tmp_path / "pwned"
    good = JobSetting("101", 3, "v100", 1, 200, "power_limit_w").to_text().splitlines()
    key = line.split("=", 1)[0]
    lines = [x for x in good if not x.startswith(f"{key}=")] + [line.format(canary=canary)]
    cluster.layout.settings_dir.mkdir(parents=True, exist_ok=True)
    cluster.layout.setting_file("101").write_text("\n".join(lines) + "\n")
    result = cluster.script("prolog.sh", "101", "0")
    assert result.returncode == 0 and "ignoring" in result.stderr
    assert cluster.jobmap(0) == ["101"] and cluster.calls() == []  # mapped, never set
    assert cluster.ok("task_prolog.sh", "101") == ""
    assert cluster.ok("apply_settings.sh") == "" and [c for c in cluster.calls() if "-pl" in c] == []
    assert not canary.exists()


@pytest.mark.parametrize(
    ("job", "gpus"),
    [("../x", "0"), ("$(touch {canary})", "0"), ("101", "0;touch {canary}"), ("101", "0,../1"), ("", "0")],
)
def test_bad_slurm_variables_change_nothing(cluster: Cluster, tmp_path: Path, job: str, gpus: str) -> None:
    canary = tmp_path / "pwned"
    cluster.setting("101", 200)
    result = cluster.script("prolog.sh", job.format(canary=canary), gpus.format(canary=canary))
    assert result.returncode == 0
    assert cluster.mapped() == []
    assert cluster.calls() == [] and not canary.exists()


def test_missing_nvidia_smi_fails_only_a_managed_job(cluster: Cluster) -> None:
    if any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("this machine has a real nvidia-smi")
    bare = "/usr/bin:/bin"
    assert cluster.script("prolog.sh", "301", "0", PATH=bare).returncode == 0  # unmanaged: mapping only
    assert cluster.jobmap(0) == ["301"]
    cluster.setting("101", 200)
    failed = cluster.script("prolog.sh", "101", "1", PATH=bare)
    assert failed.returncode == 1 and "nvidia-smi is not on PATH" in failed.stderr
    assert cluster.jobmap(1) == ["101"]  # mapped before the failure


def _functions(text: str) -> list[tuple[str, str]]:
    """Each shell function of a script: its name and its text (``name() { ... }`` on one line or up to ``}``)."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\w+)\(\) \{", line)
        if m:
            end = i if line.rstrip().endswith("}") else lines.index("}", i)
            found.append((m.group(1), "\n".join(lines[i : end + 1])))
    return found


SCRIPT_NAMES = ["apply_settings.sh", "epilog.sh", "prolog.sh", "task_prolog.sh"]
SOURCE_COMMON = '. "${self%/*}/common.sh"'


def test_scripts_source_common_sh_and_are_shellcheck_clean() -> None:
    assert sorted(p.name for p in SCRIPTS.glob("*.sh")) == sorted(["common.sh", *SCRIPT_NAMES])
    common = SCRIPTS / "common.sh"
    library = common.read_text()
    shared = {name for name, _ in _functions(library)}
    helpers = {"log", "is_id", "is_indices", "read_setting", "read_indices", "write_atomic", "lock_node"}
    assert shared >= helpers | {"apply_setting"}
    # sourced, never run; and it evaluates or sources nothing itself (settings are read with IFS='=' read)
    assert not os.access(common, os.X_OK) and not library.startswith("#!")
    assert not re.search(r"^\s*(eval|source|\.)\s", library, re.M) and "IFS='=' read -r k v" in library
    scripts = [SCRIPTS / name for name in SCRIPT_NAMES]
    for p in scripts:
        text = p.read_text()
        assert os.access(p, os.X_OK), p.name
        # common.sh is the one file a script sources (from its own folder), after set -euo pipefail
        assert re.findall(r"^\s*(?:eval|source|\.)\s.*$", text, re.M) == [SOURCE_COMMON], p.name
        assert text.index("set -euo pipefail") < text.index(SOURCE_COMMON), p.name
        own = {name for name, _ in _functions(text)}
        assert not own & shared, f"{p.name} defines {sorted(own & shared)} itself"
    shellcheck([*scripts, common])


def test_scripts_find_common_sh_through_a_symlink_and_stop_without_it(cluster: Cluster, tmp_path: Path) -> None:
    cluster.setting("101", 200)
    links = tmp_path / "links"
    links.mkdir()
    (links / "prolog.sh").symlink_to(SCRIPTS / "prolog.sh")  # slurm.conf may name a link to the installed file
    env = {**cluster.env, "SLURM_JOB_ID": "101", "SLURM_JOB_GPUS": "0"}
    ok = subprocess.run(["bash", str(links / "prolog.sh")], env=env, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert cluster.jobmap(0) == ["101"] and cluster.gpu(0)["power_limit_w"] == 200.0

    alone = tmp_path / "alone"  # a script copied without its folder
    alone.mkdir()
    for name in SCRIPT_NAMES:
        (alone / name).write_text((SCRIPTS / name).read_text())
    cluster.calls()
    for name, code in [("prolog.sh", 1), ("epilog.sh", 1), ("apply_settings.sh", 1), ("task_prolog.sh", 0)]:
        run_alone = subprocess.run(["bash", str(alone / name)], env=env, capture_output=True, text=True, timeout=30)
        assert run_alone.returncode == code, (name, run_alone.stderr)
        assert f"wattplan {name}: no common.sh beside" in run_alone.stderr and run_alone.stdout == ""
    assert cluster.calls() == [] and cluster.jobmap(0) == ["101"]


def test_node_files_are_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = pyproject["tool"]["setuptools"]
    assert "wattplan.planner.agent.node_files" in setuptools["packages"]  # a data package of its own (no warning)
    assert setuptools["package-data"]["wattplan.planner.agent.node_files"] == ["*"]
    shipped = {p.name for p in SCRIPTS.parent.glob("node_files/*")}
    assert shipped >= {"README.md", "common.sh", *SCRIPT_NAMES} and not (SCRIPTS / "__init__.py").exists()


# --- the nvidia-smi stand-in ---


def _env(cluster: Cluster) -> dict[str, str]:
    return {"WATTPLAN_CLUSTER_DIR": str(cluster.layout.root), "SLURMD_NODENAME": NODE}


def _refused(cluster: Cluster, argv: list[str], env: dict[str, str] | None = None) -> SmiError:
    with pytest.raises(SmiError) as caught:
        run(argv, _env(cluster) if env is None else env)
    return caught.value


def test_stand_in_queries_defaults_and_sets(cluster: Cluster) -> None:
    fmt = "--format=csv,noheader,nounits"
    env = _env(cluster)
    assert run(["-i", "0", "--query-gpu=power.default_limit", fmt], env) == "300.00"
    q = "--query-gpu=power.limit,power.min_limit,power.max_limit,clocks.sm"
    assert run(["-i", "2", q, fmt], env) == "300.00, 100.00, 300.00, 1530"
    assert "set to 175.50 W from 300.00 W" in run(["-i", "2", "-pl", "175.5"], env)
    assert "gpcclkMin 900, gpcclkMax 1200" in run(["-i", "2", "-lgc", "900,1200"], env)
    assert run(["-i", "2", q, fmt], env) == "175.50, 100.00, 300.00, 1200"
    state = json.loads(cluster.layout.gpu_state_file(NODE, 2).read_text())
    assert state == {
        "power_limit_w": 175.5,
        "default_limit_w": 300.0,
        "min_limit_w": 100.0,
        "max_limit_w": 300.0,
        "sm_clock_lock_mhz": [900, 1200],
    }
    run(["-i", "2", "-rgc"], env)
    assert json.loads(cluster.layout.gpu_state_file(NODE, 2).read_text())["sm_clock_lock_mhz"] is None
    assert "Enabled persistence mode" in run(["-i", "2", "-pm", "1"], env)
    lines = run(["--query-gpu=index,power.limit", fmt], env).splitlines()
    assert len(lines) == 8 and lines[2] == "2, 175.50" and lines[0] == "0, 300.00"
    listing = run(["-L"], env).splitlines()
    assert len(listing) == 8 and listing[7].startswith("GPU 7: ")


def test_stand_in_takes_a_list_of_gpus_as_nvidia_smi_does(cluster: Cluster) -> None:
    """``-i 0,1`` (real nvidia-smi's list form): each GPU listed, once, in index order; the others untouched."""
    fmt = "--format=csv,noheader,nounits"
    env = _env(cluster)
    out = run(["-i", "3,1,3", "-pl", "200"], env)
    assert out.count("was set to 200.00 W") == 2 and out.index("00000000:02:00.0") < out.index("00000000:04:00.0")
    assert [cluster.gpu(i)["power_limit_w"] for i in range(5)] == [300.0, 200.0, 300.0, 200.0, 300.0]
    assert run(["-i", "3,1", "--query-gpu=index,power.limit", fmt], env) == "1, 200.00\n3, 200.00"
    run(["-i", "1,3", "-lgc", "1100,1100"], env)
    run(["-i", "3,1", "-rgc"], env)
    assert cluster.gpu(1)["sm_clock_lock_mhz"] is None and cluster.gpu(3)["sm_clock_lock_mhz"] is None


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["-i", "0", "-pl", "301"], 2, "not a valid power limit which should be between 100.00 W and 300.00 W"),
        (["-i", "0", "-pl", "99"], 2, "not a valid power limit"),
        (["-i", "0", "-pl", "abc"], 2, "Invalid power limit"),
        (["-i", "0", "-pl", "nan"], 2, "Invalid power limit"),
        (["-i", "0", "-pl"], 2, "requires a value"),
        (["-pl", "200"], 2, "-i IDS"),
        (["-i", "0", "-lgc", "1200,900"], 2, "MIN <= MAX"),
        (["-i", "0", "-lgc", "a,b"], 2, "Invalid clock"),
        (["-i", "0", "--query-gpu=power.draw", "--format=csv,noheader,nounits"], 2, "not a valid field"),
        (["-i", "0", "--query-gpu=power.limit", "--format=csv"], 2, "--format=csv,noheader,nounits"),
        (["-i", "0", "-pl", "200", "-rgc"], 2, "one operation"),
        (["-q"], 2, "Invalid combination"),
        ([], 2, "needs an operation"),
        (["-i", "8", "-pl", "200"], 6, "No devices"),
        (["-i", "x", "-rgc"], 6, "No devices"),
        (["-i", "0,8", "-pl", "200"], 6, "index '8'"),  # a list with one unknown GPU changes none
        (["-i", "0,,1", "-pl", "200"], 6, "index ''"),
    ],
)
def test_stand_in_refuses_like_nvidia_smi(cluster: Cluster, argv: list[str], code: int, words: str) -> None:
    error = _refused(cluster, argv)
    assert error.code == code and words in str(error)
    assert not cluster.layout.gpu_state_file(NODE, 0).exists()


def test_stand_in_needs_a_cluster_and_a_known_node(cluster: Cluster, tmp_path: Path) -> None:
    assert _refused(cluster, ["-L"], {"SLURMD_NODENAME": NODE}).code == 9
    assert (
        _refused(cluster, ["-L"], {"WATTPLAN_CLUSTER_DIR": str(tmp_path / "none"), "SLURMD_NODENAME": NODE}).code == 9
    )
    assert _refused(cluster, ["-L"], {**_env(cluster), "SLURMD_NODENAME": "a100-0"}).code == 6


def test_stand_in_command_line(cluster: Cluster) -> None:
    env = {**cluster.env, "PYTHONPATH": str(ROOT)}
    smi = [sys.executable, "-m", "wattplan.planner.cluster.nvidia_smi"]
    ok = subprocess.run([*smi, "-i", "1", "-pl", "250"], env=env, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and ok.stdout.endswith("All done.\n") and ok.stderr == ""
    bad = subprocess.run([*smi, "-i", "1", "-pl", "400"], env=env, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and bad.stdout == "" and "400.00 W is not a valid power limit" in bad.stderr


def test_node_gpu_limits_reads_the_manifest() -> None:
    limits = node_gpu_limits({"nodes": [NODE_ENTRY]}, NODE)
    assert (limits.gpu_type, limits.gpus, limits.default_limit_w, limits.min_limit_w, limits.max_limit_w) == (
        "v100",
        8,
        300.0,
        100.0,
        300.0,
    )
    with pytest.raises(KeyError):
        node_gpu_limits({"nodes": [NODE_ENTRY]}, "a100-0")
    with pytest.raises(ValueError, match="out of order"):
        node_gpu_limits({"nodes": [{**NODE_ENTRY, "default_limit_w": 350}]}, NODE)
