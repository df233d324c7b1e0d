"""``wattplan agent --power-save`` on the emulated cluster with Slurm's power saving, end to end (issue 44, item 1).

Every node of the cluster is powered down before the first job arrives; the agent, which reads a powered-down
node as one Slurm boots for a job, plans the jobs onto it, Slurm boots it through the cluster's resume program,
and every job runs to completion. Without ``--power-save`` the agent would leave every node out of the round (a
powered-down node is no usable one to it) and run nothing.

With ``--power-down`` the agent powers an idle node down itself (``scontrol update NodeName=N State=POWER_DOWN``)
long before Slurm's ``SuspendTime`` would, and leaves the node that runs the job on.

Waits are for events (a node's state, the agent's exit) up to generous deadlines; nothing waits for something to be
fast. Needs root, Slurm, munge and Prometheus; skips without them, fails under ``WATTPLAN_REQUIRE_SLURM=1`` (CI).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.traces import write_minutes_trace
from tests.slurm_cluster import SLURMS, need_emulated_cluster, up_args
from wattplan.planner.agent.commands import slurm_env
from wattplan.planner.agent.slurm_actions import power_up_call

pytestmark = pytest.mark.slow

WATTPLAN = [sys.executable, "-m", "wattplan"]
DEADLINE_S = 600.0
"""The longest wait for the cluster to power down, or for the agent to finish: generous for a loaded machine."""
JOBS = (("ResNet-50 (batch size 64)", 1, 8.0, 0.0), ("ResNet-18 (batch size 64)", 2, 6.0, 60.0))
"""(job type, GPUs, minutes alone at the top setting, arrival s)."""


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"wattplan {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _power_save_cluster(slurm: str, suspend_s: str) -> Iterator[Path]:
    """An emulated ``v100:16`` cluster with power saving (time scale 60, 120 s boot) on ``slurm``, removed after."""
    need_emulated_cluster()
    extra = up_args(slurm)
    base = Path(tempfile.mkdtemp(prefix="wpa-", dir="/tmp"))
    base.chmod(0o755)
    root = base / "c"
    try:
        _cli("cluster", "up", "--dir", str(root), "--gpus", "v100:16", "--time-scale", "60", "--power-save",
             "--suspend-s", suspend_s, "--resume-s", "120", *extra)  # fmt: skip
        yield root
    finally:
        subprocess.run([*WATTPLAN, "cluster", "down", "--dir", str(root)], capture_output=True, timeout=300)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=SLURMS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Path]:
    """An emulated cluster with power saving on the host's Slurm (22.05) and the root filesystem's (24.11 in CI)."""
    yield from _power_save_cluster(request.param, "120")


SLOW_SUSPEND_S = DEADLINE_S * 60
"""A ``SuspendTime`` (emulated s at time scale 60) as long as the test's deadline in real seconds: whatever powers
a node down before it, on however busy a machine, is the agent, not Slurm."""


@pytest.fixture(params=SLURMS)
def slow_suspend_cluster(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Power saving whose ``SuspendTime`` (:data:`SLOW_SUSPEND_S`) outlasts the test: the agent powers down."""
    yield from _power_save_cluster(request.param, f"{SLOW_SUSPEND_S:.0f}")


def _node_states(root: Path) -> dict[str, str]:
    env = slurm_env(json.loads((root / "cluster.json").read_text()))
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env, capture_output=True, text=True, timeout=60)
    return dict(line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)


def test_the_agent_plans_onto_powered_down_nodes_and_slurm_boots_them(cluster: Path, tmp_path: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not (states := _node_states(cluster)) or any(s != "idle~" for s in states.values()):
        assert time.monotonic() < deadline, f"the idle nodes never powered down: {states}"
        time.sleep(0.5)
    trace = tmp_path / "jobs.trace"
    write_minutes_trace(trace, JOBS)
    _cli("cluster", "submit", str(trace), "--dir", str(cluster), "--wait")
    agent = _cli(
        "agent", "--cluster", str(cluster), "--until-idle", "--power-save", "--solver", "greedy",
        "--restart-s", "120", "--start-s", "30", timeout=int(DEADLINE_S),
    )  # fmt: skip
    assert "every managed job has ended: done" in agent.stdout + agent.stderr
    _cli("cluster", "report", "--dir", str(cluster), "--json", str(tmp_path / "report.json"))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["jobs_completed"] == report["jobs_total"] == len(JOBS)
    booted = (cluster / "log" / "power.log").read_text()
    assert "resume v100-" in booted and "slurmd" in booted and "started; on" in booted
    # --power-up's call: Slurm boots a powered-down node with no job for it, through the same resume program
    while not (states := _node_states(cluster)) or any(s != "idle~" for s in states.values()):
        assert time.monotonic() < deadline + DEADLINE_S, f"the idle nodes never powered down again: {states}"
        time.sleep(0.5)
    resumed = booted.count("resume v100-1")
    env = slurm_env(json.loads((cluster / "cluster.json").read_text()))
    done = subprocess.run(power_up_call("v100-1").argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    while (state := _node_states(cluster).get("v100-1")) != "idle":  # idle# while it boots, idle once up
        assert time.monotonic() < deadline + 2 * DEADLINE_S, f"v100-1 never came up: {state}"
        time.sleep(0.5)
    assert (cluster / "log" / "power.log").read_text().count("resume v100-1") == resumed + 1


def test_the_agent_powers_down_the_idle_node_and_keeps_the_busy_one(slow_suspend_cluster: Path, tmp_path: Path) -> None:
    """One 1-GPU job of 8 minutes on two nodes: the idle node goes down, the busy one stays on while it runs.

    With ``--learn`` the agent also learns the idle power of the powered GPUs no job holds (its log says it), and
    an agent started again on the same state with another job takes back what it learned.

    The agent starts after the job's submission; its periodic round a round later has watched more than a cycle
    (120 s boot, 120 s shutdown) since the submission and expects less than a GPU in it against 7 free. Once the
    job has ended nothing is expected and the last round powers the other node down too. Under the 10% slowdown
    limit the job's boot may wait is ``q = 0.1 x 8 min / 120 s = 0.4`` of the GPUs asked for, far above what a GPU
    less than one expected leaves unserved by 7 free; with ``--max-slowdown 0`` no boot is within the limit and
    the agent powers nothing down (``tests/test_node_power.py``).
    """
    cluster = slow_suspend_cluster
    trace = tmp_path / "jobs.trace"
    write_minutes_trace(trace, JOBS[:1])
    started = time.monotonic()
    _cli("cluster", "submit", str(trace), "--dir", str(cluster), "--wait")
    agent = _cli(
        "agent", "--cluster", str(cluster), "--until-idle", "--power-save", "--power-down", "--solver", "greedy",
        "--max-slowdown", "10",  # the by-job mode's default: a 120 s boot is within 10% of an 8-minute job
        "--restart-s", "120", "--start-s", "30", "--learn", timeout=int(DEADLINE_S),
    )  # fmt: skip
    said = agent.stdout + agent.stderr
    assert "every managed job has ended: done" in said
    # The learner's idle power, from DCGM's counters in Prometheus: the GPUs no job held while their node was on.
    # The emulated GPUs run by the shipped library, so it is the prior's; v100-1's GPUs, off, must not drag it down.
    learned = re.findall(r"learned: v100 idle power ([0-9.]+) W per GPU \(prior ([0-9.]+) W\)", said)
    assert learned, said
    assert all(float(w) == pytest.approx(float(prior), rel=0.05) for w, prior in learned), learned
    rounds = re.findall(r"round \d+ t=\d+s: (\d+) queued, (\d+) running[^\n]*\n((?:  [^\n]*\n)*)", said)
    downs = {n: int(queued) for queued, _, notes in rounds for n in re.findall(r"idle node\(s\) (v100-\d):", notes)}
    # while the job was in the queue (running on v100-0, or released to it in that round: on a busy machine the
    # agent's first round may come after a cycle was watched, and it releases the job and powers v100-1 down at once)
    assert downs.get("v100-1") == 1, said
    assert downs.get("v100-0", 0) == 0, said  # only once nothing ran
    expected = re.search(r"idle node\(s\) v100-1: ([0-9.]+) GPUs expected within 240 s, 7 free", said)
    assert expected is not None and 0.0 < float(expected.group(1)) < 1.0, said  # the arrival before the agent counts
    log = (cluster / "log" / "power.log").read_text()
    assert "suspend v100-1" in log, log
    assert _node_states(cluster)["v100-1"] in ("idle~", "idle%")
    assert time.monotonic() - started < SLOW_SUSPEND_S / 60  # within Slurm's SuspendTime: the agent's doing
    # Restarted on the same state with another job to plan, the agent takes back what its learner was shown
    # (planner/agent/learned_state.py) before it observes anything new, and says the idle power it had learned.
    _cli("cluster", "submit", str(trace), "--dir", str(cluster), "--wait")
    again = _cli(
        "agent", "--cluster", str(cluster), "--until-idle", "--power-save", "--power-down", "--solver", "greedy",
        "--max-slowdown", "10", "--restart-s", "120", "--start-s", "30", "--learn", timeout=int(DEADLINE_S),
    )  # fmt: skip
    said = again.stdout + again.stderr
    assert "every managed job has ended: done" in said
    took = re.search(r"learner: took back what it was shown in (\d+) earlier round\(s\)\n(.*)", said)
    assert took is not None and int(took.group(1)) >= 1, said
    relearned = re.match(r"\s*learned: v100 idle power ([0-9.]+) W per GPU", took.group(2))
    assert relearned is not None and float(relearned.group(1)) == pytest.approx(float(learned[-1][0]), rel=0.05), said
