"""The emulated GPUs (issue 24), without Slurm.

The truth model against the round model's arithmetic; the emulator's ticks, counters and ``/metrics``; the stand-in
trainer as a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tiny_instance_doc
from wattplan.planner.cluster import emulator as emulator_module
from wattplan.planner.cluster.emulator import Emulator, gpu_uuid, serve
from wattplan.planner.cluster.layout import Clock, ClusterLayout, write_json_atomic, write_text_atomic
from wattplan.planner.cluster.trainer import checkpoint_path, done_path, progress_path
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.plan import PlannedJob
from wattplan.planner.control.truth_model import GpuState, RunningJob, evaluate, setting_for
from wattplan.planner.core.economics import JobOutcome, job_outcome
from wattplan.planner.core.evaluate import rho_of
from wattplan.planner.profile_library.index import GpuTypeInfo, index_library
from wattplan.planner.profile_library.library import ProfileLibrary, library_from_doc

ROOT = Path(__file__).resolve().parents[1]
IDLE, NODE_W = 30.0, 100.0
DEADLINE_S = 60.0
"""How long a subprocess may take to do what a test waits for (start, tick, exit): generous for a loaded machine.
A deadline, not a pause: every wait ends as soon as its event has happened."""


def truth_doc() -> dict[str, Any]:
    """The tiny instance's profiles, pairs and GPU type as a ``wattplan.profiles/1`` library (A, B on v100)."""
    d = tiny_instance_doc()
    g = {k: v for k, v in d["gpu_types"][0].items() if k not in ("nodes", "gpus_per_node")}
    return {"schema": "wattplan.profiles/1", "gpu_types": [g], "profiles": d["profiles"], "pairs": d["pairs"]}


def truth_library() -> ProfileLibrary:
    return library_from_doc(truth_doc(), "truth")


# -- truth model ----------------------------------------------------------------------------------------------


def _modelled(inst: Any, entry: PlannedJob, partner: PlannedJob | None) -> JobOutcome:
    """The round model's outcome of one running plan entry (:func:`planner.core.economics.job_outcome`)."""
    rho = rho_of(inst, entry, partner)
    outcome = job_outcome(
        inst,
        inst.job(entry.job_id),
        inst.gpu_type(entry.gpu_type or ""),
        entry.gpus or 0,
        entry.setting or 0,
        1.0 if rho is None else rho,
    )
    assert outcome is not None
    return outcome


def test_truth_model_agrees_with_the_round_model_for_a_pair_and_an_exclusive_job() -> None:
    doc = tiny_instance_doc()
    current = {"gpu_type": "v100", "shares_with": None}
    doc["jobs"] = [
        {
            "id": "a",
            "type": "A",
            "remaining_steps": 1e9,
            "gpus": [1],
            "current": {**current, "gpus": 1, "setting": 150},
        },
        {
            "id": "b",
            "type": "B",
            "remaining_steps": 1e9,
            "gpus": [1],
            "current": {**current, "gpus": 1, "setting": 150},
        },
        {
            "id": "c",
            "type": "A",
            "remaining_steps": 1e9,
            "gpus": [2],
            "current": {**current, "gpus": 2, "setting": 250},
        },
    ]
    inst = parse_instance(doc)
    T = inst.round.duration_s
    a = PlannedJob("a", "run", "v100", gpus=1, setting=150, setting_unit="power_limit_w", shares_with="b")
    b = PlannedJob("b", "run", "v100", gpus=1, setting=150, setting_unit="power_limit_w", shares_with="a")
    c = PlannedJob("c", "run", "v100", gpus=2, setting=250, setting_unit="power_limit_w")
    sim = {e.job_id: _modelled(inst, e, partner) for e, partner in ((a, b), (b, a), (c, None))}

    gpus = {("n", 0): GpuState("v100", 150.0), ("n", 1): GpuState("v100", 250.0), ("n", 2): GpuState("v100")}
    jobs = [
        RunningJob("a", "A", "running", (("n", 0),)),
        RunningJob("b", "B", "running", (("n", 0),)),
        RunningJob("c", "A", "running", (("n", 1), ("n", 2))),
    ]
    snap = evaluate(index_library(truth_library()), jobs, gpus)
    for jid in "abc":
        assert snap.jobs[jid].steps_per_s == pytest.approx(sim[jid].steps / T, rel=1e-12)
        assert snap.jobs[jid].reason is None
    # the pair's GPU: idle plus both jobs' dynamic energy over the round; the exclusive job's: its share per GPU
    pair_w = IDLE + (sim["a"].energy_j + sim["b"].energy_j) / T
    assert snap.gpus[("n", 0)].power_w == pytest.approx(pair_w, rel=1e-12)
    assert snap.gpus[("n", 0)].power_w == pytest.approx(30 + 0.8 * 100 + 0.6 * 80)
    for g in (("n", 1), ("n", 2)):
        assert snap.gpus[g].power_w == pytest.approx(IDLE + sim["c"].energy_j / (2 * T), rel=1e-12)
    assert snap.gpus[("n", 0)].jobs == ("a", "b") and snap.gpus[("n", 0)].computing


def test_settings_map_exact_else_largest_below_else_smallest_and_default_is_the_largest() -> None:
    info = index_library(truth_library()).gpu_types["v100"]
    assert [setting_for(info, GpuState("v100", w)) for w in (150, 249.9, 250, 400, 100)] == [150, 150, 250, 250, 150]
    assert setting_for(info, GpuState("v100")) == 250
    clocked = GpuTypeInfo("a100", 40.0, "sm_clock_mhz", (1000, 1400), None, None)
    assert setting_for(clocked, GpuState("a100", 150.0, 1200.0)) == 1000  # the lock counts, not the power limit
    assert setting_for(clocked, GpuState("a100", 150.0)) == 1400


def test_missing_profile_and_faults_give_speed_zero_and_a_reason() -> None:
    index = index_library(truth_library())
    gpus = {("n", i): GpuState("v100") for i in range(4)}
    snap = evaluate(index, [RunningJob("1", "A", "running", (("n", 0), ("n", 1), ("n", 2)))], gpus)
    assert snap.jobs["1"].steps_per_s == 0 and snap.jobs["1"].reason == "no truth profile for A on 3 v100 at 250"
    assert snap.gpus[("n", 0)].power_w == IDLE and not snap.gpus[("n", 0)].computing
    three = [RunningJob(str(i), "A", "running", (("n", 0),)) for i in range(3)]
    assert all("3 jobs on GPU n:0" in (r.reason or "") for r in evaluate(index, three, gpus).jobs.values())
    some = [RunningJob("1", "A", "running", (("n", 0), ("n", 1))), RunningJob("2", "B", "running", (("n", 0),))]
    reasons = {j: r.reason for j, r in evaluate(index, some, gpus).jobs.items()}
    assert "shares only some" in (reasons["1"] or "") and "shares only some" in (reasons["2"] or "")
    nopair = [RunningJob("1", "B", "running", (("n", 0),)), RunningJob("2", "B", "running", (("n", 0),))]
    assert evaluate(index, nopair, gpus).jobs["1"].reason == "no truth pair for B with B on 1 v100"
    assert evaluate(index, [RunningJob("1", "A", "running", ())], gpus).jobs["1"].reason == "job 1 holds no GPU"


def test_a_loading_job_draws_no_dynamic_power_but_still_slows_its_partner() -> None:
    index = index_library(truth_library())
    jobs = [RunningJob("1", "A", "loading", (("n", 0),)), RunningJob("2", "B", "running", (("n", 0),))]
    snap = evaluate(index, jobs, {("n", 0): GpuState("v100", 250.0)})
    assert snap.jobs["2"].steps_per_s == pytest.approx(0.6 * 2.5) and not snap.jobs["1"].computing
    assert snap.gpus[("n", 0)].power_w == pytest.approx(IDLE + 0.6 * (180 - IDLE))


# -- emulator -------------------------------------------------------------------------------------------------


def make_cluster(root: Path, time_scale: float = 10.0, t0_unix: float | None = None) -> ClusterLayout:
    """A folder with one 4-GPU v100 node, the tiny truth library and no jobs."""
    layout = ClusterLayout(root)
    write_json_atomic(root / "truth.json", truth_doc())
    nodes = [{"name": "v100-0", "gpu_type": "v100", "gpus": 4}]
    t0 = time.time() if t0_unix is None else t0_unix
    write_json_atomic(layout.manifest, {"t0_unix": t0, "time_scale": time_scale, "nodes": nodes, "truth": "truth.json"})
    return layout


def add_job(layout: ClusterLayout, job_id: str, job_type: str, gpus: list[int], phase: str = "running") -> None:
    """Register a trainer and map it to ``gpus`` of ``v100-0`` (as the prolog and the trainer would)."""
    for i in gpus:
        f = layout.jobmap_file("v100-0", i)
        write_text_atomic(f, (f.read_text() if f.exists() else "") + f"{job_id}\n")
    reg = {"job_id": job_id, "job_type": job_type, "total_steps": 1000, "phase": phase, "pid": 1, "node": "v100-0"}
    write_json_atomic(layout.trainer_file(job_id), reg)
    write_text_atomic(progress_path(layout, job_id), "12.5\n")


@pytest.fixture
def cluster(tmp_path: Path) -> ClusterLayout:
    layout = make_cluster(tmp_path, time_scale=10.0, t0_unix=1000.0)
    add_job(layout, "7", "A", [0])
    add_job(layout, "12", "B", [0])
    add_job(layout, "3", "A", [1])
    write_json_atomic(layout.gpu_state_file("v100-0", 0), {"power_limit_w": 150, "sm_clock_lock_mhz": None})
    return layout


def test_emulator_tick_writes_rates_and_integrates_energy_in_emulated_time(cluster: ClusterLayout) -> None:
    emu = Emulator(cluster)
    emu.tick(2000.0)
    rates = json.loads(cluster.rates_file.read_text())
    assert rates["emulated_s"] == pytest.approx(10_000.0)
    assert rates["jobs"] == pytest.approx({"7": 0.8 * 4.0, "12": 0.6 * 2.0, "3": 5.0}) and rates["reasons"] == {}
    powers = {g: gp.power_w for g, gp in emu.view.snapshot.gpus.items()}
    expected = [30 + 0.8 * 100 + 0.6 * 80, 230.0, IDLE, IDLE]
    assert [powers[("v100-0", i)] for i in range(4)] == pytest.approx(expected)
    assert all(v == 0 for v in emu.energy_mj.values())
    emu.tick(2000.5)  # half a real second: 5 emulated seconds
    for i, p in enumerate(expected):
        assert emu.energy_mj[("v100-0", i)] == pytest.approx(p * 5.0 * 1000)
    assert emu.node_j["v100-0"] == pytest.approx(NODE_W * 5.0)


def test_a_restarted_emulator_continues_its_counters(cluster: ClusterLayout) -> None:
    emu = Emulator(cluster)
    emu.tick(2000.0)
    emu.tick(2001.0)
    emu.persist()
    before = dict(emu.energy_mj)
    again = Emulator(cluster)
    assert again.energy_mj == before and again.node_j == emu.node_j
    again.tick(2010.0)  # the time it was down is not counted
    assert again.energy_mj == before
    again.tick(2011.0)
    assert all(again.energy_mj[g] > before[g] for g in before)


def test_a_new_t0_does_not_make_the_counters_jump_and_the_nvidia_smi_state_format_is_read(
    cluster: ClusterLayout,
) -> None:
    emu = Emulator(cluster)
    emu.tick(2000.0)
    manifest = cluster.read_manifest()
    write_json_atomic(cluster.manifest, {**manifest, "t0_unix": 1900.0})  # as ``cluster up`` does once all runs
    lock = {"power_limit_w": 250.0, "sm_clock_lock_mhz": [1000, 1200], "default_limit_w": 250.0}
    write_json_atomic(cluster.gpu_state_file("v100-0", 1), lock)  # the stand-in's full state file
    emu.tick(2001.0)
    assert emu.view.emulated_s == pytest.approx(1010.0)
    assert emu.energy_mj[("v100-0", 3)] == pytest.approx(IDLE * 10 * 1000)
    assert emu.view.snapshot.jobs["3"].setting == 250


def parse_metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """A tiny Prometheus text parser: samples by metric name; checks every family has HELP and TYPE first."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#") or not line:
            continue
        m = re.fullmatch(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})? (\S+)", line)
        assert m, line
        name, labels = m.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        assert name in typed, f"{name} before its TYPE line"
        samples.setdefault(name, []).append((labels, float(m.group(4))))
    return samples


def by_gpu(samples: list[tuple[dict[str, str], float]]) -> dict[str, tuple[dict[str, str], float]]:
    return {labels["gpu"]: (labels, v) for labels, v in samples}


def test_metrics_over_http_carry_dcgm_names_and_labels(cluster: ClusterLayout) -> None:
    emu = Emulator(cluster)
    emu.tick(2000.0)
    emu.tick(2001.0)
    server = serve(emu, 0)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/healthz", timeout=DEADLINE_S) as r:
            assert r.status == 200 and r.read().decode().strip() == "ok"
        with urllib.request.urlopen(f"{base}/metrics", timeout=DEADLINE_S) as r:
            m = parse_metrics(r.read().decode())
    finally:
        server.shutdown()
    power = by_gpu(m["DCGM_FI_DEV_POWER_USAGE"])
    labels0, p0 = power["0"]
    assert labels0 == {
        "gpu": "0",
        "UUID": gpu_uuid("v100-0", 0),
        "device": "nvidia0",
        "modelName": "v100",
        "Hostname": "v100-0",
        "hpc_job": "7,12",
    }
    assert p0 == pytest.approx(158.0) and power["1"][0]["hpc_job"] == "3" and "hpc_job" not in power["2"][0]
    energy = by_gpu(m["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])
    assert energy["0"][1] == pytest.approx(158.0 * 10 * 1000) and energy["3"][1] == pytest.approx(IDLE * 10 * 1000)
    assert [by_gpu(m["DCGM_FI_DEV_GPU_UTIL"])[i][1] for i in "0123"] == [100, 100, 0, 0]
    assert [by_gpu(m["DCGM_FI_DEV_POWER_MGMT_LIMIT"])[i][1] for i in "0123"] == [150, 250, 250, 250]
    assert by_gpu(m["DCGM_FI_PROF_SM_ACTIVE"])["0"][1] == 1.0
    done = {labels["hpc_job"]: (labels["job_type"], v) for labels, v in m["wattplan_job_steps_done"]}
    assert done == {"3": ("A", 12.5), "7": ("A", 12.5), "12": ("B", 12.5)}
    assert [v for _, v in m["wattplan_job_steps_total"]] == [1000, 1000, 1000]
    assert m["wattplan_node_power_watts"] == [({"Hostname": "v100-0"}, NODE_W)]
    assert m["wattplan_node_energy_joules_total"] == [({"Hostname": "v100-0"}, pytest.approx(NODE_W * 10))]
    assert m["wattplan_emulated_time_seconds"] == [({}, pytest.approx(10_010.0))]


def test_emulator_daemon_serves_and_saves_its_counters_on_sigterm(cluster: ClusterLayout) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "wattplan.planner.cluster.emulator", "--dir", str(cluster.root), "--port", "0"]
    proc = subprocess.Popen([*cmd, "--tick-s", "0.05"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        # The first tick writes the rates and logs the job's start; a later one (another emulated time) has
        # integrated energy since: wait for that event, not for a fixed 0.3 s that a loaded machine may not give.
        wait_for(cluster.rates_file.exists)
        first = json.loads(cluster.rates_file.read_text())["emulated_s"]
        wait_for(lambda: json.loads(cluster.rates_file.read_text())["emulated_s"] > first)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    log = proc.stderr.read() if proc.stderr else ""
    assert "job 12 (B) started running on 1 v100 at 150 with 7" in log and "counters saved" in log
    counters = json.loads((cluster.emu_dir / "counters.json").read_text())
    assert counters["gpus_mj"]["v100-0/0"] > 0 and counters["nodes_j"]["v100-0"] > 0


def test_a_tick_with_64_gpus_and_60_jobs_is_cheap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In steady state a tick rereads no file (the cache answers from ``stat``); each tick took 3-5 ms here."""
    layout = ClusterLayout(tmp_path)
    write_json_atomic(tmp_path / "truth.json", truth_doc())
    nodes: list[dict[str, Any]] = [{"name": f"v100-{i}", "gpu_type": "v100", "gpus": 8} for i in range(8)]
    write_json_atomic(layout.manifest, {"t0_unix": 0, "time_scale": 1, "nodes": nodes, "truth": "truth.json"})
    gpus = [(str(n["name"]), i) for n in nodes for i in range(8)]
    for j in range(60):
        node, i = gpus[j % 56]
        f = layout.jobmap_file(node, i)
        write_text_atomic(f, (f.read_text() if f.exists() else "") + f"{j}\n")
        reg = {"job_id": str(j), "job_type": "AB"[j // 56], "total_steps": 9, "phase": "running", "pid": 1}
        write_json_atomic(layout.trainer_file(str(j)), reg)
    emu = Emulator(layout)
    now = time.time()
    emu.tick(now)
    opened: list[str] = []

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(emulator_module, "open", counting_open, raising=False)
    start = time.perf_counter()
    for k in range(20):
        emu.tick(now + 5 + k)  # files older than RECENT_S: the cached path, as in steady state
    assert opened == [], sorted(set(opened))[:5]
    assert (time.perf_counter() - start) / 20 < 0.050  # a guard against a slow path, not a speed target


# -- trainer --------------------------------------------------------------------------------------------------


class RatesWriter:
    """Plays the emulator for the trainer: rewrites ``emu/rates.json`` every 50 ms with the given speeds."""

    def __init__(self, layout: ClusterLayout, speeds: dict[str, float]) -> None:
        self.layout, self.speeds, self.clock = layout, speeds, layout.clock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            write_json_atomic(self.layout.rates_file, {"emulated_s": self.clock.now_s(), "jobs": dict(self.speeds)})
            self.stop.wait(0.05)

    def __enter__(self) -> RatesWriter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def trainer(layout: ClusterLayout, job_id: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SLURM_JOB_ID": job_id, "SLURMD_NODENAME": "v100-0"}
    cmd = [
        sys.executable,
        "-m",
        "wattplan.planner.cluster.trainer",
        "--dir",
        str(layout.root),
        "--job-type",
        "A",
        *args,
    ]
    return subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)


def wait_for(pred: Any, timeout_s: float = DEADLINE_S) -> None:
    """Poll ``pred`` until it holds; fail naming it once ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, f"waited {timeout_s:g} s in vain for {getattr(pred, '__name__', pred)}"
        time.sleep(0.02)


def steps_of(layout: ClusterLayout, job_id: str) -> float:
    return float(json.loads(checkpoint_path(layout, job_id).read_text())["steps"])


@pytest.fixture
def fast_cluster(tmp_path: Path) -> Iterator[ClusterLayout]:
    """Time scale 100: the trainers' 10 emulated seconds of restart loss take 0.1 s."""
    layout = make_cluster(tmp_path, time_scale=100.0)
    speeds = {"5": 100.0, "6": 100.0}  # steps per emulated s: 10,000 per real s
    with RatesWriter(layout, speeds):
        yield layout


def test_trainer_advances_checkpoints_resumes_after_sigterm_and_completes(fast_cluster: ClusterLayout) -> None:
    layout = fast_cluster
    proc = trainer(layout, "5", "--steps", "1e9", "--restart-s", "10")
    try:
        wait_for(lambda: layout.trainer_file("5").exists())
        reg = json.loads(layout.trainer_file("5").read_text())
        assert reg["job_type"] == "A" and reg["pid"] == proc.pid and reg["node"] == "v100-0"
        wait_for(lambda: checkpoint_path(layout, "5").exists() and steps_of(layout, "5") > 1000)
        # The progress file is rewritten just after the checkpoint: wait for that write, not one tick of luck.
        wait_for(lambda: float(progress_path(layout, "5").read_text()) > 1000)
        proc.send_signal(signal.SIGTERM)
        # 1e9 steps at 10,000 per s: the trainer can only have exited on the signal (within a tick when idle; how
        # long a loaded machine takes to run that tick is not this test's business)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not layout.trainer_file("5").exists()
    resumed_from = steps_of(layout, "5")
    proc = trainer(layout, "5", "--steps", str(resumed_from + 3000), "--restart-s", "10")
    assert proc.wait(timeout=DEADLINE_S) == 0, proc.stderr.read() if proc.stderr else ""
    assert f"from step {resumed_from:.0f}" in (proc.stderr.read() if proc.stderr else "")
    done = json.loads(done_path(layout, "5").read_text())
    assert done["steps"] == resumed_from + 3000 == steps_of(layout, "5") and done["end_unix"] <= time.time()
    assert not layout.trainer_file("5").exists() and not progress_path(layout, "5").exists()


def test_trainer_fail_at_step_exits_1_and_unregisters(fast_cluster: ClusterLayout) -> None:
    proc = trainer(fast_cluster, "6", "--steps", "1e9", "--restart-s", "0", "--fail-at-step", "2000")
    assert proc.wait(timeout=DEADLINE_S) == 1
    assert "failing at step" in (proc.stderr.read() if proc.stderr else "")
    assert not fast_cluster.trainer_file("6").exists() and steps_of(fast_cluster, "6") < 2000


def test_trainer_waits_at_speed_zero_without_rates(tmp_path: Path) -> None:
    layout = make_cluster(tmp_path, time_scale=100.0)
    proc = trainer(layout, "8", "--steps", "10", "--restart-s", "0")
    try:
        wait_for(lambda: layout.trainer_file("8").exists() and '"running"' in layout.trainer_file("8").read_text())
        time.sleep(0.5)  # a negative check: a slow machine only makes a wrong advance less likely to show
        assert steps_of(layout, "8") == 0 and proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0


def test_the_clock_and_trainer_paths_are_the_layout_contract(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path)
    assert checkpoint_path(layout, "9") == layout.work_dir / "9" / "checkpoint.json"
    assert progress_path(layout, "9") == layout.emu_dir / "progress" / "9"
    assert done_path(layout, "9") == layout.emu_dir / "done" / "9.json"
    assert Clock(10.0, 2.0).at(15.0) == 10.0
