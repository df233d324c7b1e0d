"""``benchmarks/slurm_latency.py``: the agent's part of a completion's latency, read from a real state file."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.slurm_latency import agent_latencies, row
from wattplan.planner.agent.store import AgentStore


def test_the_agent_rows_time_each_completion_to_the_next_round_and_each_round_to_its_release(tmp_path: Path) -> None:
    store = AgentStore(tmp_path / "agent.db")
    t0 = 1_700_000_000.0
    for rnd, started in enumerate((t0 + 10.0, t0 + 12.5, t0 + 20.0)):
        store.begin_round(rnd, started, 30.0 * rnd)
    store.add_job("7", "A3C", 100.0, 1, 40.0, 1)  # first seen by round 1, which releases it
    store.add_job("8", "A3C", 100.0, 1, 20.0, 0)  # seen by round 0, released by round 1: it waited, not the agent
    # round 1 updates then releases jobs 7 and 8 (0.4 s after its start); round 2 releases nothing
    (update, release) = store.commit_intent(
        1, [], [(("scontrol", "update", "JobId=7", "NumNodes=1"), (7,)), (("scontrol", "release", "7,8"), (7, 8))]
    )
    for action, sent in ((update, t0 + 12.7), (release, t0 + 12.9)):
        store.action_outcome(action, "ok", "")
        store.db.execute("UPDATE actions SET sent_unix = ? WHERE id = ?", (sent, action))
    store.close()
    # completions at 9.0 (next round 10.0), 11.0 (12.5), 12.5 (the round starting then: 0) and 25.0 (none after);
    # submissions and releases as slurmctld's log has them, to the millisecond
    submitted, released = {7: t0 + 11.9, 8: t0 + 10.3}, {7: t0 + 12.95, 8: t0 + 12.95}
    found = agent_latencies(tmp_path / "agent.db", [t0 + 9.0, t0 + 11.0, t0 + 12.5, t0 + 25.0], submitted, released)
    assert found["completion -> round"] == pytest.approx([1.0, 1.5, 0.0])
    assert found["round -> release"] == pytest.approx([0.4])
    assert found["submission -> release"] == pytest.approx([1.05])


def test_a_row_reads_the_percentile_as_the_agents_report_does() -> None:
    """p90 by linear interpolation (numpy's, as ``wattplan agent report``): 9.1 of 1..10, not the nearest rank's 9."""
    assert row("x", [float(v) for v in range(10, 0, -1)]) == "| x | 5.50 | 9.10 | 10.00 | 10 |"
    assert row("none", []) == "| none | - | - | - | 0 |"
