"""The agent's own Prometheus metrics (``--metrics-port``): counted per round and served over HTTP."""

from __future__ import annotations

import socket
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from wattplan.planner.agent.loop import RoundReport
from wattplan.planner.agent.metrics import AgentMetrics
from wattplan.planner.agent.report import AgainstReference
from wattplan.planner.agent.run import serve_metrics
from wattplan.planner.contracts.problems import InputError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _samples(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_rounds_of_an_agent_are_served_as_prometheus_metrics(tmp_path: Path) -> None:
    agent, _ = fake_agent(tmp_path, FakeSlurm(), max_rounds=1)
    port = _free_port()
    agent.metrics = serve_metrics(port, "127.0.0.1")
    agent.run_loop()
    seen = _samples(port)
    assert seen[("wattplan_agent_rounds_total", (("status", "done"),))] == 1.0
    # the recorded queue: three held jobs, each updated to its plan, then released together in one call
    assert seen[("wattplan_agent_slurm_calls_total", (("outcome", "ok"), ("verb", "update")))] == 3.0
    assert seen[("wattplan_agent_slurm_calls_total", (("outcome", "ok"), ("verb", "release")))] == 1.0
    assert seen[("wattplan_agent_managed_jobs", (("state", "waiting"),))] == 3.0
    assert seen[("wattplan_agent_planned_gpu_power_watts", ())] > 0.0
    assert seen[("wattplan_agent_round_seconds", (("part", "solve"),))] >= 0.0
    # the three jobs were submitted before the agent's first round: they waited for the agent to start, not for it
    assert seen[("wattplan_agent_release_wait_seconds_count", ())] == 0.0
    # a second port taken: a clear error naming the option
    with pytest.raises(InputError) as err:
        serve_metrics(port, "127.0.0.1")
    assert "--metrics-port" in str(err.value.problems[0])


def test_each_round_adds_to_the_counters_and_sets_the_gauges() -> None:
    metrics = AgentMetrics()
    metrics.observe(RoundReport(0, 0.0, queued=5, running=2, status="done", delta=0.2, planned_power_w=900.0).figures())
    kept = RoundReport(
        1, 60.0, queued=1, running=1, status="feasible", outcome="kept", measured_j=3.6e6, notes=["a", "b"]
    )
    metrics.observe(kept.figures())
    get = metrics.registry.get_sample_value
    assert get("wattplan_agent_rounds_total", {"status": "done"}) == 1.0
    assert get("wattplan_agent_rounds_total", {"status": "kept"}) == 1.0
    assert get("wattplan_agent_managed_jobs", {"state": "waiting"}) == 0.0  # the last round's
    assert get("wattplan_agent_delta") == 0.2 and get("wattplan_agent_planned_gpu_power_watts") == 900.0
    assert get("wattplan_agent_measured_gpu_energy_joules_total") == 3.6e6
    assert get("wattplan_agent_notes_total") == 2.0
    # the completed jobs against the reference: both sources, set when there are completed jobs
    against = AgainstReference(2, 10.8e6, 9.0e6, 2000.0, 2900.0, 1400.0, 1900.0)
    metrics.observe(replace(kept.figures(), against=against))
    assert get("wattplan_agent_completed_jobs_gpu_energy_joules", {"source": "measured"}) == 10.8e6
    assert get("wattplan_agent_completed_jobs_gpu_energy_joules", {"source": "reference"}) == 9.0e6
    assert get("wattplan_agent_completed_jobs_avg_jct_seconds", {"source": "reference"}) == 1400.0


def test_the_release_waits_of_a_round_fill_the_histogram() -> None:
    """Each job's wait from its submission to its release (real s) is one observation, in Prometheus' buckets."""
    metrics = AgentMetrics()
    metrics.observe(replace(RoundReport(0, 0.0, status="done").figures(), release_waits_s=(0.4, 1.2)))
    get = metrics.registry.get_sample_value
    assert get("wattplan_agent_release_wait_seconds_count") == 2.0
    assert get("wattplan_agent_release_wait_seconds_sum") == pytest.approx(1.6)
    assert get("wattplan_agent_release_wait_seconds_bucket", {"le": "0.5"}) == 1.0
    assert get("wattplan_agent_release_wait_seconds_bucket", {"le": "2.0"}) == 2.0
