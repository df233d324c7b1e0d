"""``wattplan agent check`` on a real emulated cluster: exit 0 with everything in place, then a piece removed.

One piece at a time is removed and named (issue 45): Prometheus gone, the settings folder gone, power saving asked
of a Slurm without it.

Needs root, Slurm, munge and Prometheus; skips without them, fails under ``WATTPLAN_REQUIRE_SLURM=1`` (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slurm_cluster import SLURMS, need_emulated_cluster, up_args
from wattplan.planner.agent.prometheus import PrometheusClient
from wattplan.planner.cluster.layout import ClusterLayout

pytestmark = pytest.mark.slow
WATTPLAN = [sys.executable, "-m", "wattplan"]
ROOT = Path(__file__).resolve().parent.parent


def _wattplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WATTPLAN, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"}
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


AGENT_PORT = _free_port()


@pytest.fixture(params=SLURMS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Path]:
    """An emulated cluster on the host's Slurm (22.05) and on the root filesystem's (24.11 in CI)."""
    need_emulated_cluster()
    extra = up_args(request.param)
    root = Path(tempfile.mkdtemp(prefix="wp-check-"))
    try:
        args = ("--gpus", "v100:8", "--time-scale", "60", "--agent-metrics-port", str(AGENT_PORT), *extra)
        up = _wattplan("cluster", "up", "--dir", str(root), *args)
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
        assert _missing(ok) == ["Prometheus"] and "scrape targets is up" in ok.stdout, ok.stdout + ok.stderr
        assert time.monotonic() < deadline, f"Prometheus scraped nothing in 120 s\n{ok.stdout}"
        time.sleep(1)
    release = "24.11" if json.loads((cluster / "cluster.json").read_text())["slurm_root"] else "22.05"
    assert "0 missing" in ok.stdout and f"Slurm {release}" in ok.stdout and "the agent can run here" in ok.stdout
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


def test_an_agent_run_from_its_config_file_serves_metrics_that_prometheus_scrapes(
    cluster: Path, tmp_path: Path
) -> None:
    """docs/deploy-slurm.md on the emulated cluster: the agent from a config file, its metrics in Prometheus."""
    conf = tmp_path / "agent.toml"
    conf.write_text(
        f'cluster = "{cluster}"\nmetrics-port = {AGENT_PORT}\nround-s = 60\nrestart-s = 10\n'
        'mode = "by-job"\nmax-slowdown = 10\n'
    )
    log = (tmp_path / "agent.log").open("w")
    agent = subprocess.Popen([*WATTPLAN, "agent", "--config", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        prometheus = PrometheusClient(json.loads((cluster / "cluster.json").read_text())["prometheus_url"])
        deadline = time.monotonic() + 180
        rounds = 0.0
        while rounds < 2:
            assert agent.poll() is None, (tmp_path / "agent.log").read_text()
            assert time.monotonic() < deadline, (
                f"Prometheus saw {rounds} rounds\n{(tmp_path / 'agent.log').read_text()}"
            )
            time.sleep(1)
            found = prometheus.instant('sum(wattplan_agent_rounds_total{job="wattplan-agent"})')
            rounds = found[0].value if found else 0.0
        assert prometheus.instant('wattplan_agent_managed_jobs{job="wattplan-agent",state="waiting"}')
        # every query of the shipped Grafana dashboard is one this Prometheus evaluates (a bad one raises)
        dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                prometheus.instant(target["expr"])
    finally:
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=300)
        log.close()
    assert code == 0, (tmp_path / "agent.log").read_text()
    assert f"metrics: http://127.0.0.1:{AGENT_PORT}/metrics" in (tmp_path / "agent.log").read_text()
