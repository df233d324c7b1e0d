"""A follow-on round on a real Slurm (docs/design.md §11.1): round 7 with ``submit.sh``, round 8 with ``apply.sh``.

Rounds of :mod:`tests.followon_rounds`; every job sleeps. Checked after ``apply.sh``: the kept job still runs, with
its time limit one round longer (7 + 5 min); the stopped job left the queue; the resized and the new job run.
Needs root and Slurm (see ``tests/slurm_cluster.py``), else skips.
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
from tests.followon_rounds import two_rounds
from tests.launch_helpers import install_fake_nvidia
from tests.slurm_cluster import SlurmCluster, running_cluster
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import write_plan

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    yield from running_cluster("wattplan-followon-")


def _queue(slurm: SlurmCluster) -> dict[str, tuple[str, str, str]]:
    """``{job id: (name, state, time limit)}`` of every queued job."""
    done = subprocess.run(
        ["squeue", "-h", "-o", "%i|%j|%T|%l"], env=slurm.env, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines() if line.strip()]
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _wait_running(slurm: SlurmCluster, names: set[str], timeout_s: float = 60) -> dict[str, str]:
    """``{name: job id}`` once a job of each name runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = {n: i for i, (n, state, _) in _queue(slurm).items() if state == "RUNNING"}
        if names <= running.keys():
            return running
        time.sleep(0.5)
    raise AssertionError(f"not all of {sorted(names)} run: {_queue(slurm)}\n{slurm.logs()}")


def test_second_round_changes_only_what_changes(slurm: SlurmCluster, tmp_path: Path) -> None:
    inst7, plan7, inst8, plan8 = two_rounds(command=["sh", "-c", "sleep 600"])
    paths = {}
    for name, obj in (("plan7", plan7), ("plan8", plan8)):
        write_plan(obj, tmp_path / f"{name}.json")
        paths[name] = tmp_path / f"{name}.json"
    for name, inst in (("inst7", inst7), ("inst8", inst8)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(instance_to_doc(inst)))
    r7, r8 = tmp_path / "r7", tmp_path / "r8"
    runner = CliRunner()
    first = runner.invoke(app, ["launch", str(paths["plan7"]), "--instance", str(paths["inst7"]), "--to", "slurm",
                                "--out", str(r7)])  # fmt: skip
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["launch", str(paths["plan8"]), "--instance", str(paths["inst8"]), "--to", "slurm",
                                 "--from", str(paths["plan7"]), "--from-dir", str(r7), "--out", str(r8)])  # fmt: skip
    assert second.exit_code == 0, second.output

    install_fake_nvidia(tmp_path / "bin", tmp_path / "smi.log")
    env = {**slurm.env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_CHECKPOINT_WAIT_S": "2"}
    env["WATTPLAN_ROOT_JOBS"] = "allow"  # the jobs name no user and the scripts run as root
    try:
        done = subprocess.run(["bash", str(r7 / "submit.sh")], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        names7 = {n for n, _, _ in _queue(slurm).values() if not n.startswith("wattplan-r7-")}
        assert len(names7) == 4
        before = _wait_running(slurm, names7)
        keep_name = next(n for n in names7 if n.startswith("wattplan-keep-"))
        assert _queue(slurm)[before[keep_name]][2] == "7:00"

        done = subprocess.run(["bash", str(r8 / "apply.sh")], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr + slurm.logs()
        again = subprocess.run(["bash", str(r8 / "apply.sh")], env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr  # a second run changes nothing

        queue = _queue(slurm)
        jobs = {n: (i, state, limit) for i, (n, state, limit) in queue.items() if not n.startswith("wattplan-r")}
        assert jobs[keep_name] == (before[keep_name], "RUNNING", "12:00")  # the same job, one round longer
        reset_name = next(n for n in names7 if n.startswith("wattplan-a-re-set-"))
        assert jobs[reset_name][:2] == (before[reset_name], "RUNNING")
        assert not any(n.startswith("wattplan-done-") for n in jobs)  # stopped
        after = _wait_running(slurm, {n for n in jobs})
        grow = next(n for n in jobs if n.startswith("wattplan-grow-"))
        assert after[grow] != before[grow]  # resized: a new job
        assert any(n.startswith("wattplan-new-") for n in after)
        assert len(jobs) == 4
        rows = (r8 / "submitted.tsv").read_text().splitlines()
        assert sorted(r.split("\t")[1] for r in rows) == ["job", "job", "reset", "reset", "setup", "setup"]
        smi = (tmp_path / "smi.log").read_text()
        assert "v100-0: -i 4,5 -pl 250" in smi and "v100-1: -i 0 -pl 150" in smi  # one call per setting
    finally:
        slurm.cancel_all()
