"""``wattplan agent check`` on a real emulated cluster: exit 0 with everything in place, then a piece removed.

One piece at a time is removed and named (issue 45): Prometheus gone, the settings folder gone, power saving asked
of a Slurm without it.

Needs root, Slurm, munge and Prometheus; skips without them, fails under ``WATTPLAN_REQUIRE_SLURM=1`` (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slurm_cluster import need_emulated_cluster
from wattplan.planner.cluster.layout import ClusterLayout

pytestmark = pytest.mark.slow
WATTPLAN = [sys.executable, "-m", "wattplan"]


def _wattplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WATTPLAN, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"}
    )


@pytest.fixture
def cluster() -> Iterator[Path]:
    need_emulated_cluster()
    root = Path(tempfile.mkdtemp(prefix="wp-check-"))
    try:
        up = _wattplan("cluster", "up", "--dir", str(root), "--gpus", "v100:8")
        assert up.returncode == 0, up.stdout + up.stderr
        yield root
    finally:
        _wattplan("cluster", "down", "--dir", str(root))
        shutil.rmtree(root, ignore_errors=True)


def _missing(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The checks the table marks missing (its first column)."""
    return [line.split("│")[1].strip() for line in result.stdout.splitlines() if "│ missing" in line]


def test_check_passes_on_the_emulated_cluster_and_names_each_piece_removed(cluster: Path) -> None:
    # a Prometheus just started has scraped nothing: the check says so until its first scrape (every second)
    deadline = time.monotonic() + 120
    while (ok := _wattplan("agent", "check", "--cluster", str(cluster))).returncode != 0:
        assert _missing(ok) == ["Prometheus"] and "scraped no target yet" in ok.stdout, ok.stdout + ok.stderr
        assert time.monotonic() < deadline, f"Prometheus scraped nothing in 120 s\n{ok.stdout}"
        time.sleep(1)
    assert "0 missing" in ok.stdout and "Slurm 22.05" in ok.stdout and "the agent can run here" in ok.stdout
    # 1. Prometheus gone (a port nothing listens on)
    gone = _wattplan("agent", "check", "--cluster", str(cluster), "--prometheus", "http://127.0.0.1:9")
    assert gone.returncode == 1 and _missing(gone) == ["Prometheus"], gone.stdout
    assert "cannot reach Prometheus" in gone.stdout
    # 2. the settings folder gone
    settings = ClusterLayout(cluster).settings_dir
    settings.rename(settings.with_name("settings.away"))
    try:
        no_dir = _wattplan("agent", "check", "--cluster", str(cluster))
    finally:
        settings.with_name("settings.away").rename(settings)
    assert no_dir.returncode == 1 and _missing(no_dir) == ["settings folder"], no_dir.stdout
    assert "does not exist" in no_dir.stdout
    # 3. --power-save on a Slurm that powers nothing down
    saving = _wattplan("agent", "check", "--cluster", str(cluster), "--power-save")
    assert saving.returncode == 1 and _missing(saving) == ["power saving"], saving.stdout
    assert "Slurm powers no node down" in saving.stdout
    # nothing was touched: the settings folder holds no file the check wrote
    assert not any(settings.iterdir())
