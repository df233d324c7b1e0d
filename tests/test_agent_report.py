"""``wattplan agent report``: a period's summary from the agent's state, by hand on a state the agent wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from tests.helpers.commands import run
from wattplan.planner.agent.node_settings import Clock
from wattplan.planner.agent.report import ReferenceTally, agent_report, release_waits, report_rows
from wattplan.planner.agent.store import AgentStore


def _state(tmp_path: Path) -> Path:
    """A state the agent wrote in one round (three held jobs released), then three jobs ended by hand."""
    agent, _ = fake_agent(tmp_path, FakeSlurm())
    agent.round()
    agent.store.close()
    store = AgentStore(tmp_path / "agent.db")
    first = store.db.execute("SELECT started_s FROM rounds WHERE round = 0").fetchone()[0]
    store.add_job("9", "A3C", 100.0, 1, first + 7200.0, 1)  # arrives two hours after the first round
    arrived = {j: k.arrival_s for j, k in store.known_jobs().items()}
    for job, state, jct_s in (("1", "COMPLETED", 1000.0), ("2", "COMPLETED", 3000.0), ("3", "CANCELLED", 50.0)):
        store.end_job(job, state, "by hand", 1, arrived[job] + jct_s)
    store.count_restarts(["2"])
    store.add_observations(0, [("1", None, 3.6e6, 360.0), ("2", 10.0, 7.2e6, 360.0)])
    store.close()
    return tmp_path / "agent.db"


def test_the_report_counts_what_the_state_holds(tmp_path: Path) -> None:
    path = _state(tmp_path)
    found = agent_report(path)
    assert found.rounds == {"done": 1} and found.solve_s_max is not None
    assert found.calls["release"] == {"ok": 1} and sum(found.calls["update"].values()) == 3
    assert found.jobs_seen == 4 and found.jobs_ended == {"COMPLETED": 2, "CANCELLED": 1} and found.jobs_active == 1
    assert found.restarts == 1
    assert found.avg_jct_s == pytest.approx(2000.0) and found.p95_jct_s == pytest.approx(2900.0)  # linear, as numpy
    assert found.measured_kwh == pytest.approx(3.0)  # 3.6 MJ + 7.2 MJ
    rows = dict(report_rows(found))
    assert rows["GPU energy of the managed jobs (DCGM)"] == "3.000 kWh"
    assert rows["managed jobs seen"].startswith("4 (1 cancelled, 2 completed; 1 waiting or running)")
    # a period: the job that arrived two hours in, and no round
    later = agent_report(path, since_s=3600.0)
    assert later.jobs_seen == 1 and later.rounds == {} and later.measured_kwh == 0.0


def test_the_command_prints_the_table_and_writes_json_and_a_plot(tmp_path: Path) -> None:
    path = _state(tmp_path)
    result = run("agent", "report", "--state", path, "--json", tmp_path / "r.json", "--plot", tmp_path / "r.png")
    assert result.exit_code == 0, result.output
    assert "Slurm calls: release" in result.output and "3.000 kWh" in result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["jobs_ended"] == {"COMPLETED": 2, "CANCELLED": 1} and len(doc["points"]) == 1
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    before = path.read_bytes()
    run("agent", "report", "--state", path)
    assert path.read_bytes() == before  # read-only


def test_bad_input_is_named(tmp_path: Path) -> None:
    missing = run("agent", "report", "--state", tmp_path / "none.db")
    assert missing.exit_code == 2 and "no agent state file" in missing.output
    (tmp_path / "junk.db").write_text("not sqlite")
    junk = run("agent", "report", "--state", tmp_path / "junk.db")
    assert junk.exit_code == 2 and "not an agent state file" in junk.output and "Traceback" not in junk.output
    both = run("agent", "report", "--state", tmp_path / "a", "--cluster", tmp_path)
    assert both.exit_code == 2 and "not both" in both.output


def test_the_completed_jobs_are_compared_with_the_reference(tmp_path: Path) -> None:
    """The agent keeps each job's reference run; the report sets the completed jobs' own figures against it."""
    path = _state(tmp_path)
    store = AgentStore(path)
    kept = dict(store.db.execute("SELECT job_id, ref_energy_j FROM jobs WHERE ref_finish_s IS NOT NULL").fetchall())
    assert {"1", "2", "3"} <= set(kept) and all(e > 0 for e in kept.values()), "the round wrote the reference"
    arrived = {j: k.arrival_s for j, k in store.known_jobs().items()}
    store.set_reference({"1": (arrived["1"] + 800.0, 5.4e6), "2": (arrived["2"] + 2000.0, 3.6e6), "3": None})
    store.close()
    a = agent_report(path).against
    assert a.jobs == 2  # the cancelled job and the one still waiting are not compared
    assert (a.measured_j, a.reference_j) == (pytest.approx(10.8e6), pytest.approx(9.0e6))
    assert a.saved_fraction == pytest.approx(1 - 10.8 / 9.0)
    assert (a.avg_jct_s, a.reference_avg_jct_s) == (pytest.approx(2000.0), pytest.approx(1400.0))
    rows = dict(report_rows(agent_report(path)))
    said = rows["against Slurm alone at full power (2 completed jobs): GPU energy"]
    assert said == "3.000 kWh measured, 2.500 kWh modelled (-20.0% saved)"
    assert rows["against Slurm alone: JCT (avg / p95)"].startswith("2,000.0 s / 2,900.0 s, modelled 1,400.0 s")


def test_the_metrics_tally_follows_a_late_window_and_is_not_recomputed_while_nothing_ends(tmp_path: Path) -> None:
    """The agent's metrics read the tally each round.

    A job's last window, recorded the round after its end is seen, is counted; with nothing ended since, the
    figures stand without the query over the observations.
    """
    path = _state(tmp_path)
    store = AgentStore(path)
    tally = ReferenceTally()
    first = tally.update(store.db)
    assert (first.jobs, first.measured_j) == (2, pytest.approx(10.8e6))
    store.add_observations(1, [("2", 12.0, 1.8e6, 360.0)])  # job 2's last window, a round later
    assert tally.update(store.db).measured_j == pytest.approx(12.6e6)
    store.add_observations(2, [("1", None, 9.9e6, 360.0)])  # two rounds on, nothing ended: not recomputed
    assert tally.update(store.db).measured_j == pytest.approx(12.6e6)
    store.end_job("9", "COMPLETED", "by hand", 1, 9e9)  # a job ends: recomputed (job 9 has no reference yet)
    assert tally.update(store.db).measured_j == pytest.approx(22.5e6)
    store.close()


def test_the_agents_latency_is_from_a_jobs_arrival_to_its_release_by_the_first_round_that_saw_it(
    tmp_path: Path,
) -> None:
    """The agent's latency by hand, at time scale 30 (two rounds 10 real s and 300 agent-clock s apart).

    Job 1 arrived at 290 s and was released 0.4 real s into round 1 (at 300 + 12 s): 22 s; job 2 arrived at 280 s,
    released 1 real s in: 50 s.
    Job 3 was seen in round 0 and released only in round 1 (it waited for GPUs, not for the agent); job 4 is held;
    job 5, released by round 0, was submitted before it (it waited for the agent to start).
    """
    store = AgentStore(tmp_path / "agent.db")
    store.begin_round(0, 1000.0, 0.0)
    store.add_job("3", "A3C", 100.0, 1, 0.0, 0)
    store.add_job("5", "A3C", 100.0, 1, -50.0, 0)  # submitted before the agent started: not its latency
    (early,) = store.commit_intent(0, [], [(("scontrol", "release", "5"), (5,))])
    store.action_outcome(early, "ok", "")
    store.finish_round(0, "done")
    store.begin_round(1, 1010.0, 300.0)
    for job, arrival in (("1", 290.0), ("2", 280.0), ("4", 295.0)):
        store.add_job(job, "A3C", 100.0, 1, arrival, 1)
    ids = store.commit_intent(1, [], [(("scontrol", "release", "1,3"), (1, 3)), (("scontrol", "release", "2"), (2,))])
    for action, sent in zip(ids, (1010.4, 1011.0), strict=True):
        store.action_outcome(action, "ok", "")
        store.db.execute("UPDATE actions SET sent_unix = ? WHERE id = ?", (sent, action))
    store.finish_round(1, "done")
    store.close()
    found = agent_report(tmp_path / "agent.db").latency
    assert (found.jobs, found.time_scale) == (2, pytest.approx(30.0))
    assert (found.median_s, found.p90_s, found.max_s) == (pytest.approx(36.0), pytest.approx(47.2), pytest.approx(50.0))
    rows = dict(report_rows(agent_report(tmp_path / "agent.db")))
    said = rows["submission to release, 2 jobs released by their first round (median / p90)"]
    assert said == "36.0 s / 47.2 s (real: 1.2 s / 1.6 s at time scale 30)"
    # the loop's per-round figures (its Prometheus histogram), on the emulated clock it knows
    db = sqlite3.connect(tmp_path / "agent.db")
    at_s = Clock(1010.0 - 300.0 / 30.0, 30.0).at
    assert release_waits(db, at_s, rounds=(1,)) == pytest.approx([22.0, 50.0])
    assert release_waits(db, at_s, rounds=(0,)) == [] and release_waits(db, at_s, rounds=()) == []
    db.close()


def test_what_the_learner_was_shown_by_hand(tmp_path: Path) -> None:
    """Round 0's feed by hand: two windows of A alone on 1 GPU at 250 W, a pair's side, two idle readings.

    A ran 5 steps/s at 241 W over a whole round, then 6 steps/s over half a round with no power; the pair's side is
    left out; idle GPUs showed 41 W over 10 GPU-rounds and 44 W over 5. Rate (5 x 1 + 6 x 0.5) / 1.5 = 5.3333
    steps/s over 2 windows, 1.5 rounds; power 241 W (the one window with it); idle (41 x 10 + 44 x 5) / 15 = 42.0 W.
    """
    from wattplan.planner.agent.learned_state import save_feed
    from wattplan.planner.sim.telemetry import GpuObservation, JobObservation

    path = _state(tmp_path)
    store = AgentStore(path)
    jobs = [
        JobObservation("1", "A3C", "v100", 1, 250, None, 5.0, 241.0, None, 1.0),
        JobObservation("2", "A3C", "v100", 1, 250, None, 6.0, None, None, 0.5),
        JobObservation("3", "A3C", "v100", 1, 250, "A3C", 2.0, None, None, 1.0),
    ]
    save_feed(
        store, 0, jobs, [GpuObservation("v100", 41.0, 10.0, 0.0, 0.0), GpuObservation("v100", 44.0, 5.0, 0.0, 0.0)]
    )
    store.close()
    found = agent_report(path)
    assert found.learned_rounds == 1 and found.learned_idle_w == {"v100": pytest.approx(42.0)}
    (rate,) = found.learned_rates
    assert (rate.job_type, rate.gpus, rate.setting, rate.windows) == ("A3C", 1, 250, 2)
    assert rate.rounds == pytest.approx(1.5) and rate.steps_per_s == pytest.approx(16.0 / 3.0)
    assert rate.power_w == pytest.approx(241.0)
    rows = dict(report_rows(found))
    assert rows["what the learner was shown (--learn)"].startswith("1 round(s): 2 whole job windows over 1")
    assert rows["idle power seen, v100"] == "42.0 W per GPU"
    assert agent_report(path, since_s=3600.0).learned_rounds == 0  # round 0 is not in that period
    result = run("agent", "report", "--state", path, "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    said = json.loads((tmp_path / "r.json").read_text())
    assert said["learned_rates"][0]["steps_per_s"] == pytest.approx(16.0 / 3.0)


def test_a_state_without_a_feed_and_a_damaged_feed(tmp_path: Path) -> None:
    path = _state(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE learner_feed")  # a state written before the table existed
    assert agent_report(path).learned_rounds == 0
    store = AgentStore(path)  # opening it for writing adds the table again
    store.db.execute("INSERT INTO learner_feed VALUES (0, '[{\"job_id\": 1}]', '[]')")
    store.close()
    result = run("agent", "report", "--state", path)
    assert result.exit_code == 2 and "learner_feed round 0" in result.output and "Traceback" not in result.output
