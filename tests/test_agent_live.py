"""``wattplan agent`` end to end on a real Slurm with emulated GPUs and a real Prometheus (issue 24).

One emulated cluster (``wattplan cluster up``: munged, slurmctld, two slurmd of 8 emulated V100, the GPU
emulator, node agents, Prometheus) runs a small workload managed by the agent, through every fault the loop must
survive: SIGTERM (a clean exit), a job whose trainer fails, the agent killed with SIGKILL mid-run and restarted
on the same state, a node drained mid-run, a job cancelled by its user, and Prometheus stopped (SIGSTOP) for a
round. The run must end with every job ended, none
lost, none started more often than the agent decided (no action applied twice), and the energy and JCTs
reported from Prometheus.

Nothing here waits on the wall clock for something to be fast: every step waits for the event it needs (a round
in the agent's state, a line in its log, the process's exit) up to a generous deadline, and a deadline that passes
names what was awaited and shows the agent's log. The cancelled job is far too long to end on its own, so the
cancel cannot race its completion on a slow machine, and it keeps the agent running until the drain and the
Prometheus stop have been seen.

Needs root, Slurm, munge and Prometheus; skips without them, fails under ``WATTPLAN_REQUIRE_SLURM=1`` (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.traces import write_minutes_trace
from tests.slurm_cluster import SLURMS, need_emulated_cluster, up_args
from wattplan.planner.cluster.layout import ClusterLayout, slurm_env
from wattplan.planner.executor import descendants

pytestmark = pytest.mark.slow

TIME_SCALE = 60.0
ROUND_S = 180.0
STEP_DEADLINE_S = 300.0
"""The longest wait for one step (a few agent rounds of 3 s, an agent start): generous for a loaded machine."""
FINISH_DEADLINE_S = 1200.0
"""The longest wait for the whole workload to end once the faults are over (about a minute on an idle machine)."""
NEVER_ENDS_MIN = 100_000.0
"""Minutes alone of the job the test cancels: it cannot end on its own while the test runs (days of real time)."""
WATTPLAN = [sys.executable, "-m", "wattplan"]


def _cli(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"wattplan {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(params=SLURMS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Path]:
    """An emulated cluster on the host's Slurm (22.05) and on the root filesystem's (24.11 in CI)."""
    need_emulated_cluster()
    extra = up_args(request.param)
    root = Path(tempfile.mkdtemp(prefix="wp-live-"))
    try:
        _cli(
            "cluster", "up", "--dir", str(root), "--gpus", "v100:16", "--time-scale", f"{TIME_SCALE:g}", *extra,
            timeout=180,
        )  # fmt: skip
        yield root
    finally:
        _cli("cluster", "down", "--dir", str(root), check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def agents() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The agents a test starts; any still running when it ends (a failed wait) is killed before the cluster goes."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _slurm(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = slurm_env(ClusterLayout(root).read_manifest())
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=120)


def _agent(root: Path, log: Path, started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                *WATTPLAN,
                "agent",
                "--cluster",
                str(root),
                "--until-idle",
                "--mode",
                "steered",  # the mode that restarts jobs: the faults below meet requeues too
                "--round-s",
                f"{ROUND_S:g}",
                "--time-limit",
                "2",
                "--solver",
                "highs",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started.append(proc)
    return proc


def _submitted(root: Path) -> dict[str, str]:
    """``{trace job id: slurm job id}`` submitted so far."""
    path = ClusterLayout(root).submit_dir / "submitted.csv"
    if not path.exists():
        return {}
    rows = [line.split(",") for line in path.read_text().splitlines()[1:] if line]
    return {r[1]: r[0] for r in rows}


def _wait(what: str, ready: Callable[[], bool], timeout_s: float, log: Path) -> None:
    """Poll ``ready`` until it holds; past ``timeout_s`` fail naming ``what`` was awaited, with the agent's log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise AssertionError(f"waited {timeout_s:g} s for {what}, in vain\n--- agent log\n{log.read_text()[-4000:]}")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _exit_code(agent: subprocess.Popen[bytes], what: str, log: Path) -> int:
    """The agent's exit status once it has exited after ``what``; fails naming it past :data:`STEP_DEADLINE_S`."""
    _wait(f"the agent to exit after {what}", lambda: agent.poll() is not None, STEP_DEADLINE_S, log)
    return int(agent.returncode)


def _logged_since(log: Path, offset: int, *needles: str) -> bool:
    """Whether the agent's log, from byte ``offset`` on, holds every one of ``needles``."""
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return all(n in text for n in needles)


def _starts(root: Path, job: str) -> int:
    """How many times the stand-in trainer of a Slurm job started (``trainer ID: TYPE from step S of N``)."""
    out = ClusterLayout(root).work_dir / f"slurm-{job}.out"
    return out.read_text().count(" from step ") if out.exists() else 0


def test_agent_runs_a_workload_through_faults(
    cluster: Path, agents: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    root = cluster
    trace = tmp_path / "small.trace"
    write_minutes_trace(
        trace,
        [
            ("ResNet-50 (batch size 64)", 1, NEVER_ENDS_MIN, 0),  # j0: ends only when the test cancels it
            ("LM (batch size 20)", 1, 15, 0),  # the others: 15-20 minutes alone, still running through the faults
            ("Transformer (batch size 128)", 2, 20, 60),
            ("CycleGAN", 1, 15, 120),
            ("A3C", 1, 15, 240),
            ("ResNet-50 (batch size 32)", 4, 15, 300),
            ("ResNet-18 (batch size 64)", 1, 20, 360),
        ],
    )
    _cli("cluster", "submit", str(trace), "--dir", str(root))
    log = tmp_path / "agent.log"
    agent = _agent(root, log, agents)
    db = root / "agent.db"

    def rounds() -> int:
        if not db.exists():
            return 0
        with sqlite3.connect(db) as c:
            try:
                return int(c.execute("SELECT COUNT(*) FROM rounds WHERE status = 'done'").fetchone()[0])
            except sqlite3.OperationalError:  # the agent made the file and has not made its tables yet
                return 0

    _wait("two planned rounds", lambda: rounds() >= 2, STEP_DEADLINE_S, log)
    # 1. SIGTERM: the loop stops between two steps and exits 0
    agent.send_signal(signal.SIGTERM)
    assert _exit_code(agent, "SIGTERM", log) == 0
    assert "signal SIGTERM: stopping" in log.read_text()
    # 2. a job that fails: a managed job whose trainer exits 1 after 100 steps
    env = slurm_env(ClusterLayout(root).read_manifest())
    failing = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--hold",
            "--gres=gpu:1",
            "--ntasks=1",
            "--comment=wattplan:type=A3C;steps=5000",
            f"--output={root}/work/slurm-%j.out",
            "--wrap",
            f"exec {sys.executable} -m wattplan.planner.cluster.trainer --dir {root} --job-type A3C --steps 5000 "
            "--fail-at-step 100",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # 3. kill -9 mid-run, restart on the same state
    agent = _agent(root, log, agents)
    _wait("a round after the restart", lambda: rounds() >= 3, STEP_DEADLINE_S, log)
    below = descendants(agent.pid)  # its solver worker (forked at the first solve) and the worker's sentinel
    agent.send_signal(signal.SIGKILL)
    _exit_code(agent, "SIGKILL", log)
    _wait(f"the killed agent's processes {sorted(below)} to die with it (issue 41)",
          lambda: not any(_alive(p) for p in below), STEP_DEADLINE_S, log)  # fmt: skip
    agent = _agent(root, log, agents)
    _wait("a round after the second restart", lambda: rounds() >= 5, STEP_DEADLINE_S, log)
    # 4. a node drained mid-run and 5. Prometheus stopped, both until a round has said so (j0 keeps the agent busy)
    offset = log.stat().st_size
    assert _slurm(root, "scontrol", "update", "nodename=v100-1", "state=drain", "reason=wattplan-test").returncode == 0
    prom = int(json.loads((root / "cluster.json").read_text())["processes"]["prometheus"]["pid"])
    os.kill(prom, signal.SIGSTOP)
    try:
        seen = ("node v100-1 is", "planning from the last known progress")
        _wait(f"a round that logs {seen}", lambda: _logged_since(log, offset, *seen), STEP_DEADLINE_S, log)
    finally:
        os.kill(prom, signal.SIGCONT)
    # 6. a job cancelled by its user
    ids = _submitted(root)
    victim = ids["j0"]
    assert _slurm(root, "squeue", "--noheader", "--jobs", victim).stdout.strip(), f"job {victim} left the queue"
    assert _slurm(root, "scancel", victim).returncode == 0
    _wait("the agent to finish (--until-idle)", lambda: agent.poll() is not None, FINISH_DEADLINE_S, log)
    text = log.read_text()
    assert agent.returncode == 0, text[-4000:]
    assert "node v100-1 is" in text and "drain: left out" in text, text[-3000:]
    assert "Prometheus" in text, text[-3000:]
    assert f"job {victim}" in text and "cancelled" in text
    assert f"job {failing} (A3C) ended: failed" in text
    ids = _submitted(root)
    assert len(ids) == 7
    with sqlite3.connect(db) as c:
        ended = dict(c.execute("SELECT job_id, end_state FROM jobs").fetchall())
        restarts = dict(c.execute("SELECT job_id, restarts FROM jobs").fetchall())
    assert set(ended) == {*ids.values(), failing}, "every submitted job is known to the agent"
    assert ended.pop(victim) == "CANCELLED"
    assert ended.pop(failing) == "FAILED"
    assert set(ended.values()) == {"COMPLETED"}, ended
    for job in ids.values():
        if job != victim:
            # started once, plus at most once per requeue Slurm accepted: nothing applied twice (a job requeued
            # while its prolog ran had not started its trainer yet)
            assert 1 <= _starts(root, job) <= 1 + restarts[job], (job, _starts(root, job), restarts[job])
    report = tmp_path / "report.json"
    _cli("cluster", "report", "--dir", str(root), "--json", str(report))
    doc = json.loads(report.read_text())
    assert doc["jobs_total"] == 7 and doc["jobs_completed"] == 6
    assert doc["energy_kwh"] > 0 and doc["avg_jct_s"] > 0
    # the agent's own report of the run, from its state (read-only)
    mine = tmp_path / "agent-report.json"
    shown = _cli("agent", "report", "--cluster", str(root), "--json", str(mine))
    assert "Slurm calls: release" in shown.stdout
    said = json.loads(mine.read_text())
    assert said["jobs_ended"] == {"COMPLETED": 6, "CANCELLED": 1, "FAILED": 1}, said["jobs_ended"]
    assert said["rounds"].get("done", 0) >= 5 and said["measured_kwh"] > 0 and said["avg_jct_s"] > 0
    # each completed job against the reference the agent kept for it (Slurm alone at full power, modelled)
    against = said["against"]
    assert against["jobs"] == 6 and against["reference_j"] > 0 and against["measured_j"] > 0, against
    assert "against Slurm alone at full power (6 completed jobs)" in " ".join(shown.stdout.split())
