"""Slurm's power saving on the emulated cluster: ``wattplan cluster up --power-save`` (issue 44, item 1).

The options are checked by their record (bad values named both ways); Slurm is given real seconds and the
cluster's programs; the emulator counts no energy for a node that is off and a booting server's idle power for one
that resumes; the power programs stop only the slurmds the cluster started and record what they start. End to end
on a real Slurm (``slow``): idle nodes power down and draw nothing, a job boots one and runs, the resumed slurmd
stops at the next power down, and ``cluster down`` leaves no process behind, a boot under way included.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import wattplan.planner.cluster.power as power
import wattplan.planner.cluster.up as up
from tests.conftest import tiny_instance_doc
from tests.slurm_cluster import need_emulated_cluster
from wattplan.planner.cli import app
from wattplan.planner.cluster.emulator import Emulator
from wattplan.planner.cluster.layout import (
    POWER_STOPPING,
    ClusterLayout,
    parse_power_state,
    power_off_since,
    write_json_atomic,
    write_text_atomic,
)
from wattplan.planner.cluster.processes import command_line, start_ticks
from wattplan.planner.cluster.slurm_daemons import PowerSave
from wattplan.planner.cluster.trainer import progress_path
from wattplan.planner.profile_library.library import load_profile_library

DEADLINE_S = 120.0
"""How long a test waits for an event (a daemon's start, a power down, a boot): generous for a loaded machine. A
deadline, not a pause: every wait ends as soon as its event has happened."""


def wait_for(what: str, ready: Callable[[], Any], timeout_s: float = DEADLINE_S) -> Any:
    """Poll ``ready`` until it returns something true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (found := ready()):
        assert time.monotonic() < deadline, f"never saw {what} within {timeout_s:g} s"
        time.sleep(0.1)
    return found


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short scratch folder (munge's socket path under it must stay short, as in test_cluster_trust)."""
    folder = Path(tempfile.mkdtemp(prefix="wpp-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# -- options --------------------------------------------------------------------------------------------------


def test_bad_power_save_values_are_named_both_ways_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(self: up.SlurmCluster, timeout_s: float = 60.0) -> None:
        raise AssertionError("a bad option reached Slurm's start")

    monkeypatch.setattr(up.SlurmCluster, "start", never)
    folder = tmp_path / "c"
    runner = CliRunner()
    for args, named, says in (
        (["--suspend-s", "0"], "suspend_s (--suspend-s)", "must be > 0 s, got 0"),
        (["--suspend-s", "nan"], "suspend_s (--suspend-s)", "finite"),
        (["--resume-s", "-5"], "resume_s (--resume-s)", "must be in [0, 3600] s, got -5"),
        (["--resume-s", "4000"], "resume_s (--resume-s)", "must be in [0, 3600] s, got 4000"),
        (["--power-save", "--time-scale", "0.001"], "resume_s (--resume-s)", "ResumeTimeout would be 300060 real s"),
    ):
        result = runner.invoke(app, ["cluster", "up", "--dir", str(folder), "--gpus", "v100:8", *args])
        printed = " ".join(result.output.split())
        assert result.exit_code == 2 and named in printed and says in printed, (args, result.output)
        assert "Traceback" not in result.output
    assert not folder.exists()


def test_slurm_is_given_real_seconds() -> None:
    """SuspendTime rounded (at least 1 s), SuspendTimeout an emulated minute (at least 2 s), ResumeTimeout + 60 s."""
    assert PowerSave.real_times(60.0, 600.0, 300.0) == (10, 2, 65)
    assert PowerSave.real_times(600.0, 600.0, 1200.0) == (1, 2, 62)
    assert PowerSave.real_times(60.0, 100.0, 0.0) == (2, 2, 60)
    assert PowerSave.real_times(600.0, 1.0, 1.0) == (1, 2, 61)
    assert PowerSave.real_times(1.0, 600.0, 300.0) == (600, 60, 360)


class _NoStart(RuntimeError):
    pass


def _up_without_daemons(
    monkeypatch: pytest.MonkeyPatch, root: Path, **power_options: Any
) -> tuple[dict[str, Any], str]:
    """``cluster_up`` in-process up to Slurm's start, which writes its files and stops; the manifest, slurm.conf."""
    monkeypatch.setattr(os, "mknod", lambda path, *args: Path(path).touch())  # the fake GPU devices need root

    def files_only(self: up.SlurmCluster, timeout_s: float = 60.0) -> None:
        self._write_files()
        raise _NoStart("no daemons in this test")

    monkeypatch.setattr(up.SlurmCluster, "start", files_only)
    library = load_profile_library(None)
    with pytest.raises(_NoStart):
        up.cluster_up(root, [("v100", 16)], 8, library, None, 60.0, log=lambda _m: None, **power_options)
    layout = ClusterLayout(root)
    return layout.read_manifest(), layout.slurm_conf.read_text()


def test_power_save_gives_slurm_its_programs_and_the_manifest_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    manifest, conf = _up_without_daemons(monkeypatch, root, power_save=True, suspend_s=600.0, resume_s=300.0)
    assert manifest["power_save"] == {
        "suspend_s": 600.0,
        "resume_s": 300.0,
        "slurm_suspend_time_s": 10,
        "slurm_suspend_timeout_s": 2,
        "slurm_resume_timeout_s": 65,
    }
    layout = ClusterLayout(root)
    lines = conf.splitlines()
    for line in (
        f"SuspendProgram={layout.bin_dir / 'suspend'}",
        f"ResumeProgram={layout.bin_dir / 'resume'}",
        f"PrologSlurmctld={layout.bin_dir / 'power_ready'}",
        "SuspendTime=10",
        "SuspendTimeout=2",
        "ResumeTimeout=65",
        "SuspendRate=0",
        "ResumeRate=0",
        "SlurmctldParameters=power_save_interval=1,power_save_min_interval=0",
        "DebugFlags=Power",
    ):
        assert line in lines, line
    for name in ("suspend", "resume", "power_ready"):
        assert (layout.bin_dir / name).stat().st_mode & 0o755 == 0o755, name
    wrapper = (layout.bin_dir / "resume").read_text()
    assert f"exec </dev/null >>{layout.log_dir / 'power.log'} 2>&1" in wrapper  # slurmctld closes all three
    assert f"wattplan.planner.cluster.power --dir {root} resume" in wrapper and "SLURM_CONF=" in wrapper

    plain, conf = _up_without_daemons(monkeypatch, tmp_path / "plain")
    assert plain["power_save"] is None
    assert "Suspend" not in conf and "Resume" not in conf and "PrologSlurmctld" not in conf
    assert not (tmp_path / "plain" / "bin" / "suspend").exists()


def test_the_power_programs_carry_a_hostile_path_as_one_literal_word(tmp_path: Path) -> None:
    """Slurm runs bin/suspend, bin/resume and bin/power_ready as root: the folder's path is never shell syntax."""
    root = tmp_path / "a b'c\"$(touch PWNED1)`touch PWNED2`;touch PWNED3\nz"
    layout = ClusterLayout(root)
    env = up._write_bin(layout)
    up._write_power_bin(layout, env, (1, 2, 3))
    layout.log_dir.mkdir()
    show = 'printf "%s\\0" "$WATTPLAN_CLUSTER_DIR" "$SLURM_CONF" "$@"'
    for name in ("suspend", "resume"):
        done = subprocess.run(
            ["bash", "-c", f'exec() {{ {show}; }}; . "$1" v100-0', "sh", str(layout.bin_dir / name)],
            cwd=tmp_path,
            capture_output=True,
            timeout=DEADLINE_S,
        )
        assert done.returncode == 0, (name, done.stderr)
        words = done.stdout.decode().split("\0")[:-1]
        module = ["-m", "wattplan.planner.cluster.power", "--dir", str(root), name, "v100-0"]
        assert words == [str(root), str(layout.slurm_conf), sys.executable, *module], name
    assert power.ready_script(layout, 5).count(str(layout.slurm_conf)) == 0  # quoted, never bare
    (layout.bin_dir / "sinfo").write_text("#!/bin/sh\nexit 1\n")  # the script's PATH starts with bin/
    (layout.bin_dir / "sinfo").chmod(0o755)
    ready = subprocess.run(
        [str(layout.bin_dir / "power_ready")], cwd=tmp_path, env={"SLURM_JOB_NODELIST": "v100-0"}, timeout=DEADLINE_S
    )
    assert ready.returncode == 0  # sinfo failed: it does not hold the job
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))


# -- the emulator ---------------------------------------------------------------------------------------------


def _emulated(root: Path) -> ClusterLayout:
    """Two 4-GPU v100 nodes of the tiny library; job 7 (type A) runs on GPU 0 of v100-0, job 8 on GPU 0 of v100-1."""
    layout = ClusterLayout(root)
    d = tiny_instance_doc()
    g = {k: v for k, v in d["gpu_types"][0].items() if k not in ("nodes", "gpus_per_node")}
    truth = {"schema": "wattplan.profiles/1", "gpu_types": [g], "profiles": d["profiles"], "pairs": d["pairs"]}
    write_json_atomic(root / "truth.json", truth)
    nodes = [{"name": f"v100-{i}", "gpu_type": "v100", "gpus": 4} for i in range(2)]
    write_json_atomic(layout.manifest, {"t0_unix": 1000.0, "time_scale": 10.0, "nodes": nodes, "truth": "truth.json"})
    for job, node in (("7", "v100-0"), ("8", "v100-1")):
        write_text_atomic(layout.jobmap_file(node, 0), f"{job}\n")
        reg = {"job_id": job, "job_type": "A", "total_steps": 1000, "phase": "running", "pid": 1, "node": node}
        write_json_atomic(layout.trainer_file(job), reg)
        write_text_atomic(progress_path(layout, job), "1\n")
    return layout


def _metric(emu: Emulator, name: str, node: str) -> list[float]:
    pattern = re.compile(rf'^{name}\{{[^}}]*Hostname="{node}"[^}}]*\}} (\S+)$', re.M)
    return [float(v) for v in pattern.findall(emu.metrics_text())]


def test_a_node_that_is_off_draws_nothing_and_a_booting_one_its_idle_power(tmp_path: Path) -> None:
    layout = _emulated(tmp_path)
    emu = Emulator(layout)
    node_w, idle_w = emu.node_power_w["v100-1"], emu.idle_w[("v100-1", 1)]
    gpus1 = [("v100-1", i) for i in range(4)]
    emu.tick(2000.0)
    busy_w = emu.power_w[("v100-1", 0)]
    assert busy_w > idle_w > 0 and node_w > 0
    power.write_state(layout, "v100-1", power.OFF)
    emu.tick(2000.5)  # the half second before counts at the powers seen before: still on
    assert emu.node_j["v100-1"] == pytest.approx(node_w * 5.0)
    assert emu.energy_mj[("v100-1", 0)] == pytest.approx(busy_w * 5.0 * 1000)
    assert all(emu.power_w[g] == 0.0 for g in gpus1) and emu.view.node_power_w["v100-1"] == 0.0
    before = (dict(emu.energy_mj), dict(emu.node_j))
    emu.tick(2001.5)  # off: no energy for v100-1, v100-0 as before
    assert [emu.energy_mj[g] for g in gpus1] == [before[0][g] for g in gpus1]
    assert emu.node_j["v100-1"] == before[1]["v100-1"] and emu.node_j["v100-0"] > before[1]["v100-0"]
    rate = emu.view.snapshot.jobs["8"]
    assert rate.steps_per_s == 0.0 and rate.reason == "node v100-1 is powered off"
    assert json.loads(layout.rates_file.read_text())["reasons"] == {"8": "node v100-1 is powered off"}
    assert emu.view.snapshot.jobs["7"].steps_per_s > 0
    assert _metric(emu, "wattplan_node_powered", "v100-1") == [0.0]
    assert _metric(emu, "wattplan_node_powered", "v100-0") == [1.0]
    assert _metric(emu, "wattplan_node_power_watts", "v100-1") == [0.0]
    assert _metric(emu, "DCGM_FI_DEV_POWER_USAGE", "v100-1") == [0.0] * 4
    assert _metric(emu, "DCGM_FI_DEV_GPU_UTIL", "v100-1") == [0.0] * 4
    power.write_state(layout, "v100-1", power.RESUMING)
    emu.tick(2002.5)  # the second before: off
    assert emu.node_j["v100-1"] == before[1]["v100-1"]
    resumed = (dict(emu.energy_mj), dict(emu.node_j))
    emu.tick(2003.5)  # booting: Pnode and idle GPUs, whatever is mapped there
    assert emu.node_j["v100-1"] - resumed[1]["v100-1"] == pytest.approx(node_w * 10.0)
    for g in gpus1:
        assert emu.energy_mj[g] - resumed[0][g] == pytest.approx(idle_w * 10.0 * 1000)
    assert emu.view.snapshot.jobs["8"].reason == "node v100-1 is booting"
    assert _metric(emu, "wattplan_node_powered", "v100-1") == [1.0]
    assert _metric(emu, "wattplan_node_power_watts", "v100-1") == [node_w]
    power.write_state(layout, "v100-1", power.ON)
    assert not layout.power_file("v100-1").exists()
    emu.tick(2004.5)
    assert emu.view.snapshot.jobs["8"].steps_per_s > 0 and emu.power_w[("v100-1", 0)] == pytest.approx(busy_w)
    write_text_atomic(layout.power_file("v100-1"), "whatever\n")  # anything but off or resuming reads as on
    emu.tick(2005.5)
    assert emu.view.power_states["v100-1"] == power.ON


def test_a_node_shutting_down_draws_its_idle_power_for_the_shutdown_then_nothing(tmp_path: Path) -> None:
    """``off`` since T (the suspend program's file): a server shuts down for ``SHUTDOWN_S`` emulated s, then is off.

    For 60 emulated s (6 real s at time scale 10) it draws ``Pnode`` and its GPUs' idle power and runs nothing, as
    the replay charges a shutdown.
    """
    layout = _emulated(tmp_path)
    emu = Emulator(layout)
    node_w, idle_w = emu.node_power_w["v100-1"], emu.idle_w[("v100-1", 1)]
    gpus1 = [("v100-1", i) for i in range(4)]
    emu.tick(2000.0)
    power.write_state(layout, "v100-1", power.OFF, since_unix=2000.0)
    assert power.read_state(layout, "v100-1") == power.OFF
    emu.tick(2001.0)  # 10 emulated s since: shutting down
    assert emu.view.power_states["v100-1"] == POWER_STOPPING
    assert emu.view.snapshot.jobs["8"].reason == "node v100-1 is shutting down"
    assert _metric(emu, "wattplan_node_powered", "v100-1") == [1.0]
    assert _metric(emu, "wattplan_node_power_watts", "v100-1") == [node_w]
    before = (dict(emu.energy_mj), dict(emu.node_j))
    emu.tick(2005.0)  # 40 emulated s at the shutdown's draw
    assert emu.node_j["v100-1"] - before[1]["v100-1"] == pytest.approx(node_w * 40.0)
    for g in gpus1:
        assert emu.energy_mj[g] - before[0][g] == pytest.approx(idle_w * 40.0 * 1000)
    assert emu.view.power_states["v100-1"] == POWER_STOPPING
    emu.tick(2006.5)  # 65 emulated s since: off (the 15 s before at the shutdown's draw)
    assert emu.view.power_states["v100-1"] == power.OFF and _metric(emu, "wattplan_node_powered", "v100-1") == [0.0]
    assert emu.node_j["v100-1"] - before[1]["v100-1"] == pytest.approx(node_w * 55.0)
    off = (dict(emu.energy_mj), dict(emu.node_j))
    emu.tick(2010.0)
    assert emu.node_j["v100-1"] == off[1]["v100-1"] and all(emu.energy_mj[g] == off[0][g] for g in gpus1)


@pytest.mark.parametrize(
    ("text", "state", "since"),
    [
        ("off\n", "off", None),
        ("off\nsince=1700000000.250\n", "off", 1700000000.25),
        ("off\nsince=nan\n", "off", None),
        ("off\nsince=soon\n", "off", None),
        ("resuming\n", "resuming", None),
        ("since=5\noff\n", "on", None),  # the state is the first line
        (None, "on", None),
    ],
)
def test_a_power_file_says_its_state_on_its_first_line_and_when_it_went_off(
    text: str | None, state: str, since: float | None
) -> None:
    assert parse_power_state(text) == state and power_off_since(text) == since


# -- the power programs, without Slurm ------------------------------------------------------------------------


def _fake_slurmd(conf: Path, node: str, rebooted: bool = False) -> list[str]:
    """A stand-in for slurmd's command line: a sleeping Python that names the node (``slurmd_argv``'s shape)."""
    return [sys.executable, "-c", "import time; time.sleep(300)", "slurmd", "-f", str(conf), "-N", node, str(rebooted)]


@pytest.fixture
def powered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClusterLayout]:
    """A cluster folder with one node, power saving on and a boot of no time; slurmd and slurmctld stand-ins."""
    layout = ClusterLayout(tmp_path / "c")
    (layout.slurm_dir / "run").mkdir(parents=True)
    (layout.slurm_dir / "log").mkdir()
    layout.log_dir.mkdir()
    manifest = {
        "t0_unix": time.time(),
        "time_scale": 60.0,
        "nodes": [{"name": "v100-0", "gpu_type": "v100", "gpus": 8}],
        "power_save": {"suspend_s": 600.0, "resume_s": 0.0},
        "processes": {},
    }
    write_json_atomic(layout.manifest, manifest)
    monkeypatch.setattr(power, "slurmd_argv", _fake_slurmd)
    monkeypatch.setattr(power, "slurmctld_running", lambda _layout: True)
    yield layout
    for doc in power.recorded(layout, ["v100-0"]).values():  # what a failed test left running
        if command_line(doc["pid"]) and start_ticks(doc["pid"]) == doc["started"]:
            os.kill(doc["pid"], 9)


def test_a_boot_starts_the_nodes_slurmd_and_a_suspend_stops_it(powered: ClusterLayout) -> None:
    layout = powered
    power.write_state(layout, "v100-0", power.RESUMING)
    power._record(layout, "v100-0", "boot", os.getpid(), "pytest")  # this process plays the boot helper
    assert power.boot(layout, "v100-0") == 0
    assert power.read_state(layout, "v100-0") == power.ON
    assert not power.record_file(layout, "v100-0", "boot").exists()
    (slurmd,) = power.running_slurmds(layout, "v100-0")
    assert command_line(slurmd) == " ".join(_fake_slurmd(layout.slurm_conf, "v100-0", rebooted=True))
    assert power.recorded(layout, ["v100-0"])["slurmd-v100-0-resumed"]["pid"] == slurmd
    suspended = time.time()
    power.suspend(layout, "v100-[0]")
    assert power.read_state(layout, "v100-0") == power.OFF and command_line(slurmd) is None
    since = power_off_since(layout.power_file("v100-0").read_text())  # the emulator counts its shutdown from it
    assert since is not None and suspended <= since <= time.time()
    assert power.recorded(layout, ["v100-0"]) == {}
    assert power.boot(layout, "v100-0") == 1  # a boot that finds its node off again gives up: no slurmd


def test_suspend_leaves_alone_a_pid_that_is_not_the_nodes_slurmd(powered: ClusterLayout) -> None:
    """Slurm's pid file, the manifest and the records name a PID; only the node's own slurmd is ever stopped."""
    layout = powered
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "slurmd", "-N", "v100-0"])
    try:
        (layout.slurm_dir / "run" / "slurmd-v100-0.pid").write_text(f"{other.pid}\n")
        manifest = layout.read_manifest()
        manifest["processes"]["slurmd-v100-0"] = {"pid": other.pid, "match": "slurmd", "started": None}
        write_json_atomic(layout.manifest, manifest)
        stale = {"pid": other.pid, "match": "slurmd", "started": (start_ticks(other.pid) or 0) + 1}
        write_json_atomic(power.record_file(layout, "v100-0", "slurmd"), stale)
        power.write_state(layout, "v100-0", power.RESUMING)
        write_json_atomic(power.record_file(layout, "v100-0", "boot"), stale)
        assert power.running_slurmds(layout, "v100-0") == {}
        power.suspend(layout, "v100-0,nosuch-1")
        assert other.poll() is None, "suspend stopped a process the cluster did not start"
        assert power.stop_recorded(layout, ["v100-0"]) == [] and other.poll() is None
        assert power.read_state(layout, "v100-0") == power.OFF
    finally:
        other.kill()
        other.wait()


def test_power_ready_waits_while_a_node_of_the_job_boots(tmp_path: Path) -> None:
    """The PrologSlurmctld returns once no node of the job is powered down or powering up (a down one ends it)."""
    layout = ClusterLayout(tmp_path / "c")
    layout.bin_dir.mkdir(parents=True)
    states = tmp_path / "states"
    sinfo = layout.bin_dir / "sinfo"  # the script's PATH starts with the cluster's bin/
    sinfo.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/asked\ncat {states}\n')
    sinfo.chmod(0o755)
    ready = tmp_path / "power_ready"
    ready.write_text(power.ready_script(layout, 600))
    ready.chmod(0o755)
    env = {"SLURM_JOB_NODELIST": "v100-[0-1]", "PATH": "/usr/bin:/bin"}
    for final in ("mix\nidle\n", "down~\nidle\n"):  # booted; or failed to boot (Slurm marks it DOWN)
        states.write_text("idle\nmix#\n")
        proc = subprocess.Popen([str(ready)], env=env)
        try:
            wait_for("power_ready asking sinfo", lambda: (tmp_path / "asked").exists())
            assert (tmp_path / "asked").read_text().split() == ["-h", "-N", "-n", "v100-[0-1]", "-o", "%t"]
            states.write_text("idle~\nidle\n")  # still waiting: a node powered down, not yet booting
            time.sleep(0.5)
            assert proc.poll() is None, "power_ready returned while a node of its job was down"
            states.write_text(final)
            assert proc.wait(timeout=DEADLINE_S) == 0
        finally:
            proc.kill()
            proc.wait()
            (tmp_path / "asked").unlink(missing_ok=True)
    assert subprocess.run([str(ready)], env={"PATH": "/usr/bin:/bin"}, timeout=DEADLINE_S).returncode == 0


# -- end to end on a real Slurm -------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wattplan", *args], capture_output=True, text=True, timeout=timeout)


def _ours(root: Path) -> list[str]:
    """Command lines of running processes that name ``root`` (what the cluster started holds its folder's path)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (line := command_line(int(entry.name))) and str(root) in line:
            out.append(f"{entry.name}: {line}")
    return out


def _metrics(port: int) -> dict[str, dict[str, float]]:
    """``{metric: {Hostname/gpu: value}}`` of the emulator's ``/metrics``, for the metrics this test reads."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=DEADLINE_S) as r:
        text = r.read().decode()
    out: dict[str, dict[str, float]] = {}
    for name, labels, value in re.findall(r"^(\w+)\{([^}]*)\} (\S+)$", text, re.M):
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        key = found.get("Hostname", "") + ("/" + found["gpu"] if "gpu" in found else "")
        out.setdefault(name, {})[key] = float(value)
    return out


@pytest.fixture
def base() -> Iterator[Path]:
    need_emulated_cluster()
    folder = Path(tempfile.mkdtemp(prefix="wp-ps-", dir="/tmp"))
    folder.chmod(0o755)  # munge's clients must reach its socket below this folder
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_power_programs_import_no_planner() -> None:
    """The power programs' module loads no data or solver library and no agent (0.8 s through the agent's loop).

    The suspend program must stop a node's slurmd within Slurm's ``SuspendTimeout`` (2 real s at the least) on a
    loaded host.
    """
    code = (
        "import sys, wattplan.planner.cluster.power; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy', 'ortools', 'highspy', 'pulp') "
        "or m.startswith(('wattplan.planner.agent.loop', 'wattplan.planner.control', 'wattplan.planner.sim'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_idle_nodes_power_down_a_job_boots_one_and_down_leaves_nothing(base: Path) -> None:
    """At time scale 600: idle 600 emulated s (1 real s) before a power down, a boot of 3,000 (5 real s)."""
    root = base / "c"
    started = _cli(
        "cluster", "up", "--dir", str(root), "--gpus", "v100:16", "--time-scale", "600",
        "--power-save", "--suspend-s", "600", "--resume-s", "3000",
    )  # fmt: skip
    layout = ClusterLayout(root)
    env = {**os.environ, "SLURM_CONF": str(layout.slurm_conf)}

    def states() -> dict[str, str]:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env, capture_output=True, text=True)
        return dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)

    def job_state(job: str) -> str:
        done = subprocess.run(["scontrol", "show", "job", job], env=env, capture_output=True, text=True)
        return m.group(1) if (m := re.search(r"JobState=(\S+)", done.stdout)) else ""

    try:
        assert started.returncode == 0, started.stdout + started.stderr
        manifest = layout.read_manifest()
        port, nodes = manifest["exporter_port"], [n["name"] for n in manifest["nodes"]]
        assert manifest["power_save"]["slurm_suspend_time_s"] == 1 and nodes == ["v100-0", "v100-1"]

        wait_for("both nodes powered down", lambda: set(states().values()) == {"idle~"})
        # Slurm marks a node powered down once SuspendTimeout has passed, not when its program returns
        wait_for("the suspend program done", lambda: all(power.read_state(layout, n) == power.OFF for n in nodes))
        wait_for("the emulator seeing them off", lambda: set(_metrics(port)["wattplan_node_powered"].values()) == {0})
        first = _metrics(port)
        clock = first["wattplan_emulated_time_seconds"][""]
        later = wait_for(
            "the emulated clock advancing",
            lambda: m if (m := _metrics(port))["wattplan_emulated_time_seconds"][""] > clock + 60 else None,
        )
        assert set(later["wattplan_node_power_watts"].values()) == {0.0}
        assert set(later["DCGM_FI_DEV_POWER_USAGE"].values()) == {0.0}
        for counter in ("wattplan_node_energy_joules_total", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
            assert later[counter] == first[counter], f"{counter} grew while every node was off"

        job = subprocess.run(
            ["sbatch", "--parsable", "-o", "/dev/null", "--chdir", "/tmp", "--gres=gpu:1", "--wrap", "sleep 2"],
            env=env, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        assert job.isdigit()
        wait_for("the job completing on a booted node", lambda: job_state(job) == "COMPLETED")
        booted = [n for n in nodes if f"boot {n}: slurmd" in (layout.log_dir / "power.log").read_text()]
        assert len(booted) == 1, (layout.log_dir / "power.log").read_text()
        (node,) = booted
        resumed = power.recorded(layout, nodes)[f"slurmd-{node}-resumed"]["pid"]

        # the resumed slurmd stops at the next power down (it was started with slurmctld's signals unblocked)
        wait_for("the booted node powered down again", lambda: states().get(node) == "idle~")
        wait_for("its slurmd gone", lambda: command_line(resumed) is None)
        wait_for("the suspend program done", lambda: power.read_state(layout, node) == power.OFF)
        assert power.recorded(layout, nodes) == {}

        # a boot under way when the cluster goes down
        again = subprocess.run(
            ["sbatch", "--parsable", "-o", "/dev/null", "--chdir", "/tmp", "--gres=gpu:1", "--wrap", "sleep 60"],
            env=env, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        assert again.isdigit()
        wait_for("a boot helper", lambda: any(k.startswith("power-boot-") for k in power.recorded(layout, nodes)))
    finally:
        stopped = _cli("cluster", "down", "--dir", str(root))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "power-boot-" in stopped.stdout or "-resumed" in stopped.stdout, stopped.stdout  # the boot, or its slurmd
    deadline = time.monotonic() + 30.0
    while left := _ours(root):
        assert time.monotonic() < deadline, f"left running after cluster down: {left}"
        time.sleep(0.2)


# -- what Slurm 22.05 prints (tests/data/agent/capture_power.py) ----------------------------------------------

AGENT_DATA = Path(__file__).resolve().parent / "data" / "agent"


def test_the_captured_documents_show_slurms_power_states() -> None:
    """The fixtures the agent's readers may use: node states and flags, and a job CONFIGURING on a booting node."""

    def nodes(name: str) -> dict[str, tuple[str, list[str]]]:
        doc = json.loads((AGENT_DATA / name).read_text())
        return {n["name"]: (n["state"], n["state_flags"]) for n in doc["nodes"]}

    assert nodes("sinfo_powering_down.json")["v100-0"] == ("idle", ["POWERING_DOWN"])
    assert list(nodes("sinfo_powered_down.json").values()) == [("idle", ["POWERED_DOWN"])] * 2
    booting = nodes("sinfo_powering_up.json")
    assert booting == {"v100-0": ("mixed", ["NOT_RESPONDING", "POWERING_UP"]), "v100-1": ("idle", ["POWERED_DOWN"])}
    (job,) = json.loads((AGENT_DATA / "squeue_configuring.json").read_text())["jobs"]
    assert (job["job_state"], job["state_reason"], job["nodes"]) == ("CONFIGURING", "None", "v100-0")
    assert job["start_time"] >= job["submit_time"] > 0  # the allocation's time; reset when the node is up
