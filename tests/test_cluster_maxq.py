"""``wattplan cluster submit --unmanaged --maxq``: Slurm's own scheduling with MaxQ's power limits set by the prolog.

The live ``maxq`` baseline (issue 44): each job is submitted held, its settings file written, then released, and
the nodes' prolog sets its GPUs to the ``maxq`` table's limit when Slurm starts it. On a real Slurm with emulated
GPUs (slow); needs root, Slurm, munge and Prometheus, skips without them, fails under ``WATTPLAN_REQUIRE_SLURM=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.traces import write_minutes_trace
from tests.slurm_cluster import need_emulated_cluster
from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.cluster.layout import ClusterLayout
from wattplan.planner.core.maxq import maxq_settings
from wattplan.planner.profile_library.library import load_profile_library

WATTPLAN = [sys.executable, "-m", "wattplan"]
DEADLINE_S = 300.0
"""The longest wait for a job to start and its prolog to run: generous for a loaded machine."""
LONG_MIN = 100_000.0
"""Minutes alone of each job: none ends on its own while the test runs."""


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"wattplan {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def test_maxq_needs_unmanaged(tmp_path: Path) -> None:
    done = _cli("cluster", "submit", "6c71a0.trace", "--dir", str(tmp_path), "--maxq", check=False)
    assert done.returncode == 2 and "--maxq" in done.stderr and "--unmanaged" in done.stderr


@pytest.fixture
def cluster() -> Iterator[Path]:
    need_emulated_cluster()
    root = Path(tempfile.mkdtemp(prefix="wp-maxq-"))
    try:
        _cli("cluster", "up", "--dir", str(root), "--gpus", "v100:8", "--time-scale", "60")
        yield root
    finally:
        _cli("cluster", "down", "--dir", str(root), check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_unmanaged_jobs_start_at_maxqs_power_limit(cluster: Path, tmp_path: Path) -> None:
    """Two jobs of types whose MaxQ limits differ (A3C 100 W, ResNet-50 225 W): each job's GPU runs at its own."""
    table = maxq_settings(load_profile_library(None).profiles)
    types = {"A3C": table[("A3C", "v100")], "ResNet-50 (batch size 64)": table[("ResNet-50 (batch size 64)", "v100")]}
    assert len(set(types.values())) == 2 and max(types.values()) < 250  # below the V100's default 250 W
    trace = tmp_path / "two.trace"
    write_minutes_trace(trace, [(t, 1, LONG_MIN, 0) for t in types])
    _cli("cluster", "submit", str(trace), "--dir", str(cluster), "--unmanaged", "--maxq", "--wait")
    layout = ClusterLayout(cluster)
    env = {**os.environ, "SLURM_CONF": str(layout.slurm_conf)}
    rows = [line.split(",") for line in (layout.submit_dir / "submitted.csv").read_text().splitlines()[1:]]
    assert [r[-1] for r in rows] == ["0", "0"]  # unmanaged: the agent leaves them alone
    limits: dict[str, float] = {}
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and len(limits) < len(rows):
        for slurm_id, _, job_type, *_ in rows:
            gpus = layout.node_dir / "v100-0" / "gpus" / slurm_id  # written by the prolog at the job's start
            if job_type not in limits and gpus.exists():
                index = int(gpus.read_text().splitlines()[0].split(",")[0])
                state = layout.gpu_state_file("v100-0", index)
                if state.exists():
                    limits[job_type] = float(json.loads(state.read_text())["power_limit_w"])
        time.sleep(0.5)
    try:
        assert limits == {t: float(w) for t, w in types.items()}
        for slurm_id, _, job_type, *_ in rows:
            setting = JobSetting.from_text(layout.setting_file(slurm_id).read_text())
            assert (setting.job_id, setting.setting, setting.unit) == (slurm_id, types[job_type], "power_limit_w")
    finally:
        subprocess.run(["scancel", *(r[0] for r in rows)], env=env, capture_output=True, timeout=60)
