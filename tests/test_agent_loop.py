"""One agent round against recorded Slurm answers (no daemons): faults never stop the loop.

The queue is ``squeue --json`` captured from Slurm 22.05.8 (``tests/data/agent/squeue_held.json``: jobs 1-3 held
and opted in, job 4 with a malformed opt-in, job 5 not managed and running) with the job types renamed to
profiled ones; the nodes are ``sinfo_mixed.json`` (two V100 nodes). Each test changes one answer:

- slurmctld does not answer: the round retries (backoff), then keeps what runs and says so; no exception;
- a call is refused: recorded as ``refused`` with Slurm's words, the round ends (a job that ended meanwhile: logged as
  the race it is);
- the round cannot be planned (a solver that does not exist): what runs is kept;
- a dry run sends nothing and lists the calls;
- the unmanaged job 5 and the malformed job 4 are never named in any call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tests.helpers.agent_fakes import FakeSlurm, fake_agent, recorded_queue
from wattplan.planner.agent.commands import CommandResult

DATA = Path(__file__).resolve().parent / "data" / "agent"


def _touched(slurm: FakeSlurm) -> set[str]:
    out: set[str] = set()
    for argv in slurm.seen:
        if argv[:2] in (("scontrol", "release"), ("scontrol", "uhold"), ("scontrol", "requeuehold")):
            out.update(argv[2].split(","))
        elif argv[:2] == ("scontrol", "update"):
            out.add(argv[2].split("=")[1])
    return out


def test_a_round_starts_the_managed_jobs_only(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    agent, _ = fake_agent(tmp_path, slurm)
    report = agent.round()
    assert report.queued == 3 and report.planned_run == 3, report.line()
    assert _touched(slurm) == {"1", "2", "3"}  # never 4 (malformed opt-in) nor 5 (not managed)
    assert all(c.ok for c in report.calls)
    assert sorted(p.name for p in (tmp_path / "settings").iterdir()) == ["1.conf", "2.conf", "3.conf"]
    assert "node v100-0 runs jobs wattplan does not manage: left out" in report.notes


def test_slurm_unreachable_keeps_what_runs(tmp_path: Path) -> None:
    slurm = FakeSlurm(down=True)
    agent, _ = fake_agent(tmp_path, slurm)
    report = agent.round()
    assert report.status == "slurm-unreachable"
    assert slurm.seen == [("squeue", "--json")] * 4  # one try and three retries, then the round gives up
    assert "Slurm did not answer" in report.notes[0] and "what runs is kept" in report.notes[0]
    slurm.down = False
    assert agent.round().planned_run == 3  # the next round works again


def test_a_refused_call_is_recorded_and_the_loop_goes_on(tmp_path: Path) -> None:
    slurm = FakeSlurm(refuse={"release": "Requested operation is presently disabled"})
    agent, _ = fake_agent(tmp_path, slurm)
    report = agent.round()
    assert any("Slurm refused" in n and "presently disabled" in n for n in report.notes)
    assert agent.store.action_counts().get("refused") == 1
    assert agent.round().index == 1


def test_a_call_on_a_job_that_ended_meanwhile_is_a_race_not_an_error(tmp_path: Path) -> None:
    """``Job has already finished``: the job completed between the round's reading and its call."""
    slurm = FakeSlurm(refuse={"release": "Job has already finished"})
    agent, _ = fake_agent(tmp_path, slurm)
    report = agent.round()
    assert not any("Slurm refused" in n for n in report.notes)
    raced = [n for n in report.notes if "ended before its call reached Slurm: nothing to do" in n]
    assert len(raced) == 1 and raced[0].startswith("job 1, 2, 3 ended") and "scontrol release" in raced[0]
    assert agent.store.action_counts().get("refused") == 1  # the state still says what Slurm answered


class _Released(FakeSlurm):
    """The recorded queue with every job released (pending for resources, not held) and asking for no node."""

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        result = super().__call__(argv)
        if tuple(argv) != ("squeue", "--json"):
            return result
        doc = json.loads(result.stdout)
        for job in doc["jobs"]:
            job.update(state_reason="Resources", priority=100, required_nodes="")
        return replace(result, stdout=json.dumps(doc))


def test_a_released_job_is_held_before_its_update_and_one_that_started_meanwhile_gets_none(tmp_path: Path) -> None:
    """An update must reach only a held job.

    Slurm 22.05 takes ``NodeList=`` on a job it has just started as a shrink and leaves the job without a database
    index, so that every later update of it waits 5 s in slurmctld and is refused. A released job whose request
    changes is held first; a hold Slurm refuses because the job started is a race, logged as one, and that job's
    update and release are not sent.
    """
    slurm = _Released(refuse={"uhold": "Job is no longer pending execution"})
    agent, _ = fake_agent(tmp_path, slurm)
    report = agent.round()
    sent = [argv[1] for argv in slurm.seen if argv[0] == "scontrol" and argv[1] in ("uhold", "update", "release")]
    assert sent == ["uhold"], slurm.seen
    assert not any("Slurm refused" in n for n in report.notes), report.notes
    assert any("started before its hold reached Slurm" in n for n in report.notes), report.notes
    slurm = _Released()
    agent, _ = fake_agent(tmp_path / "accepted", slurm)
    agent.round()
    sent = [argv[1] for argv in slurm.seen if argv[0] == "scontrol" and argv[1] in ("uhold", "update", "release")]
    assert sent[0] == "uhold" and sent[-1] == "release" and sent.count("update") == 3, slurm.seen


def test_a_round_that_cannot_be_planned_keeps_what_runs(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    agent, _ = fake_agent(tmp_path, slurm, solver="no-such-solver")
    report = agent.round()
    assert report.status == "kept" and "could not be planned" in report.notes[-1]
    assert _touched(slurm) == set()


def test_dry_run_sends_nothing(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    agent, _ = fake_agent(tmp_path, slurm, dry_run=True)
    report = agent.round()
    assert _touched(slurm) == set() and not (tmp_path / "settings").exists()
    assert report.calls and all(not c.ran and str(c).startswith("would run: scontrol") for c in report.calls)
    # and it says what it would set on the GPUs: every job it releases, at a power limit the library has
    shown = [n for n in report.notes if n.startswith("dry run, would set job ")]
    released = {j for c in report.calls if c.call.argv[1:2] == ("release",) for j in c.call.jobs}
    assert released and {int(n.split()[5].rstrip(":")) for n in shown} >= released, report.notes
    assert all(" W power limit" in n or "MHz" in n for n in shown)


def test_a_job_without_progress_is_restarted_at_most_three_times(tmp_path: Path) -> None:
    from wattplan.planner.agent.decide import SlurmJobNow
    from wattplan.planner.agent.loop import MAX_STALL_RESTARTS, RoundReport

    agent, _ = fake_agent(tmp_path, FakeSlurm())
    limit = agent.cfg.rules.restart_s + agent.cfg.rules.duration_s
    now = {j: SlurmJobNow(j, True, False, ("v100-1",), 1) for j in ("7", "8")}
    for j in now:
        agent.store.add_job(j, "A3C", 100.0, 1, 0.0, 0)
    agent._observed = True
    agent._advanced_at = {"7": 0.0}  # job 8 never showed progress: it is never judged
    report = RoundReport(0, 0.0)
    assert all(s.stalled is None for s in agent._mark_stalled(now, 0.0, report).values())
    assert agent._mark_stalled(now, limit, report)["7"].stalled is None  # not longer than the limit yet
    agent._observed = False  # Prometheus did not answer this round: nobody is judged
    assert agent._mark_stalled(now, limit + 1, report)["7"].stalled is None
    agent._observed = True
    assert agent._mark_stalled(now, limit + 1, report)["7"].stalled == f"no progress for {limit + 1:.0f} s"
    assert agent._mark_stalled(now, limit + 1, report)["8"].stalled is None
    t = limit + 1
    for _ in range(MAX_STALL_RESTARTS - 1):  # each restart counts its time from the run it starts
        agent._mark_stalled({j: replace(s, running=False) for j, s in now.items()}, t, report)
        assert agent._mark_stalled(now, t + 1, report)["7"].stalled is None
        t += limit + 2
        assert agent._mark_stalled(now, t, report)["7"].stalled is not None
    agent._mark_stalled(now, t + 1, report)  # its fourth run
    for late in (t + limit + 2, t + 5 * limit):  # given up: left running, said once
        assert agent._mark_stalled(now, late, report)["7"].stalled is None
    assert report.notes == [f"job 7 has made no progress for {limit + 1:.0f} s after 3 restarts: left running"]


def test_a_job_that_draws_no_gpu_energy_for_a_whole_window_is_restarted(tmp_path: Path) -> None:
    """Not in DCGM's job mapping (its prolog did not run): requeued so that the prolog runs, if others are metered."""
    from wattplan.planner.agent.decide import SlurmJobNow
    from wattplan.planner.agent.loop import RoundReport

    agent, _ = fake_agent(tmp_path, FakeSlurm())
    now = {j: SlurmJobNow(j, True, False, ("v100-1",), 1) for j in ("7", "8")}
    report = RoundReport(0, 0.0)
    agent._observed, agent._window_start_s, agent._metered = True, 0.0, frozenset({"8"})
    first = agent._mark_stalled(now, 0.0, report)  # both seen running from t=0, the start of the next window
    assert first["7"].stalled is None and first["8"].stalled is None
    agent._window_start_s = 0.0  # the next round's window [0, 360]: job 7 ran all of it and drew nothing
    out = agent._mark_stalled(now, 360.0, report)
    assert out["7"].stalled == "no GPU energy for 360 s: not in DCGM's job mapping" and out["8"].stalled is None
    fresh = {"9": SlurmJobNow("9", True, False, ("v100-1",), 1)}
    agent._window_start_s = 360.0  # job 9 started during the window ending at 720: not judged yet
    agent._mark_stalled(fresh, 400.0, report)
    assert agent._mark_stalled(fresh, 720.0, report)["9"].stalled is None
    agent._metered = frozenset()  # nobody metered (the exporter is down): nobody judged
    agent._window_start_s = 720.0
    assert agent._mark_stalled(fresh, 1080.0, report)["9"].stalled is None


def test_a_job_the_agent_requeued_is_not_judged_by_the_window_it_waited_through(tmp_path: Path) -> None:
    """Requeued at 360, started again at 540 just as the next round reads [360, 540]: it drew nothing, and waited."""
    from wattplan.planner.agent.decide import SlurmJobNow
    from wattplan.planner.agent.loop import RoundReport

    agent, _ = fake_agent(tmp_path, FakeSlurm())
    now = {j: SlurmJobNow(j, True, False, ("v100-1",), 1) for j in ("7", "8")}
    report = RoundReport(0, 0.0)
    agent._observed, agent._window_start_s, agent._metered = True, 0.0, frozenset({"7", "8"})
    agent._mark_stalled(now, 0.0, report)
    assert agent._mark_stalled(now, 360.0, report)["7"].stalled is None  # metered: it ran
    agent._runs_end(["7"])  # the round at 360 requeues it
    agent._window_start_s, agent._metered = 360.0, frozenset({"8"})
    assert agent._mark_stalled(now, 540.0, report)["7"].stalled is None
    agent._window_start_s = 540.0  # a whole window of its new run without energy: now it is judged
    assert agent._mark_stalled(now, 900.0, report)["7"].stalled is not None


class ShiftingSlurm(FakeSlurm):
    """:class:`FakeSlurm` whose queue shows each job's fields changed by ``edits`` (job id -> fields)."""

    def __init__(self) -> None:
        super().__init__()
        self.edits: dict[int, dict[str, object]] = {}

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        if tuple(argv) != ("squeue", "--json"):
            return super().__call__(argv)
        self.seen.append(tuple(argv))
        doc = json.loads(recorded_queue())
        for job in doc["jobs"]:
            job.update(self.edits.get(job["job_id"], {}))
        return CommandResult(tuple(argv), 0, json.dumps(doc), "")


def test_a_requeuehold_still_completing_keeps_the_agents_hold(tmp_path: Path) -> None:
    """A job shown ``COMPLETING`` (not held) after the agent's ``requeuehold`` keeps its hold record.

    Seen live on a loaded machine: Slurm took 15 s to requeue a job after ``requeuehold``, showing it
    ``COMPLETING`` meanwhile. The agent forgot its hold then, and once the job was back, pending and held, took the
    hold for its owner's and left the job out for good (the live workload never ended).
    """
    slurm = ShiftingSlurm()
    agent, _ = fake_agent(tmp_path, slurm)
    agent.round()  # jobs 1-3: submission holds adopted, released
    assert {"1", "2", "3"} <= _touched(slurm)
    slurm.edits[1] = {"job_state": "COMPLETING", "state_reason": "None", "priority": 0}  # requeuehold under way
    agent.round()
    slurm.edits[1] = {"job_state": "PENDING", "state_reason": "JobHeldUser", "priority": 0}  # requeued, held
    slurm.seen.clear()
    report = agent.round()
    assert not [n for n in report.notes if "job 1 is held by its user" in n], report.notes
    assert "1" in _touched(slurm), slurm.seen  # planned and called again, as its hold is still the agent's


def test_a_job_slurm_is_settling_is_left_to_the_next_round(tmp_path: Path) -> None:
    """``COMPLETING`` (a job that just ended, or a requeue under way): no call on it until Slurm has settled it.

    Planned, a job that had just ended drew an update Slurm refused (``Job has already finished``), seen on the
    emulated cluster three rounds in a row.
    """
    slurm = ShiftingSlurm()
    agent, _ = fake_agent(tmp_path, slurm)
    agent.round()
    slurm.edits[2] = {"job_state": "COMPLETING", "state_reason": "None", "priority": 0}
    slurm.seen.clear()
    report = agent.round()
    assert "2" not in _touched(slurm) and report.queued == 2
    slurm.edits[2] = {"job_state": "PENDING", "state_reason": "JobHeldUser", "priority": 0}  # requeued, held
    slurm.seen.clear()
    assert agent.round().queued == 3 and "2" in _touched(slurm)


class SlowIndexSlurm(FakeSlurm):
    """:class:`FakeSlurm` that refuses job 2's update (``try again in a bit``) its first ``times`` tries."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        args = tuple(argv)
        if args[:3] == ("scontrol", "update", "JobId=2") and self.times > 0:
            self.times -= 1
            self.seen.append(args)
            why = "Job update not available right now, the DB index is being set, try again in a bit for job 2"
            return CommandResult(args, 1, "", why)
        return super().__call__(args)


def test_an_update_refused_for_now_holds_up_neither_the_other_calls_nor_its_own_release(tmp_path: Path) -> None:
    """The other jobs are released at once; job 2 is released only after its update goes through.

    Waiting in place (the agent before) held up every later call of the round for up to 15 s real: seen live, 450
    emulated seconds of an idle cluster at a time scale of 30.
    """
    slurm = SlowIndexSlurm(times=2)
    agent, _ = fake_agent(tmp_path, slurm)
    sleeps: list[float] = []
    agent.timer.sleep = sleeps.append  # type: ignore[method-assign]  # no real waiting
    report = agent.round()
    calls = [a for a in slurm.seen if a[0] == "scontrol"]
    updates_2 = [k for k, a in enumerate(calls) if a[:3] == ("scontrol", "update", "JobId=2")]
    releases = [(k, set(a[2].split(","))) for k, a in enumerate(calls) if a[1] == "release"]
    first_release = releases[0]
    assert first_release[0] < updates_2[1] and "2" not in first_release[1] and {"1", "3"} <= first_release[1]
    assert len(updates_2) == 3 and releases[-1] == (releases[-1][0], {"2"}) and releases[-1][0] > updates_2[-1]
    assert sleeps == [0.3, 0.3]
    assert all(c.ok for c in report.calls), [str(c) for c in report.calls]


def test_an_update_that_stays_refused_is_recorded_and_its_job_not_released(tmp_path: Path) -> None:
    slurm = SlowIndexSlurm(times=10**6)
    agent, _ = fake_agent(tmp_path, slurm)
    clock = [0.0]
    agent.timer.monotonic = lambda: clock[0]  # type: ignore[method-assign]
    agent.timer.sleep = lambda s: clock.__setitem__(0, clock[0] + s)  # type: ignore[method-assign]
    report = agent.round()
    assert not [a for a in slurm.seen if a[1:2] == ("release",) and "2" in a[2].split(",")]
    assert any("try again in a bit" in n for n in report.notes), report.notes
    assert clock[0] <= agent.cfg.requeue_wait_s + 0.3 + 1e-9 and agent._retry_soon  # the next round, a poll later


def test_a_setting_file_is_written_when_its_setting_changes_not_when_only_the_round_does(tmp_path: Path) -> None:
    """Node scripts and the simulated Slurm read a changed file again: the round alone is no change."""
    from wattplan.planner.agent.node_settings import JobSetting

    agent, _ = fake_agent(tmp_path, FakeSlurm())
    (tmp_path / "settings").mkdir()
    path = tmp_path / "settings" / "5.conf"
    first = JobSetting("5", 1, "v100", 1, 250, "power_limit_w")
    agent._write_settings([first])
    assert JobSetting.from_text(path.read_text()) == first
    inode = path.stat().st_ino  # an atomic write replaces the file: a new inode
    agent._write_settings([replace(first, round=2)])
    assert path.stat().st_ino == inode and JobSetting.from_text(path.read_text()) == first
    agent._write_settings([replace(first, round=3, setting=200)])
    assert JobSetting.from_text(path.read_text()) == replace(first, round=3, setting=200)
    path.write_text("damaged\n")
    agent._write_settings([replace(first, round=4)])
    assert JobSetting.from_text(path.read_text()) == replace(first, round=4)


def test_a_job_whose_nodes_boot_is_not_judged_until_it_runs(tmp_path: Path) -> None:
    """``CONFIGURING`` (power saving boots its node): no prolog yet, so no DCGM mapping and no progress."""
    from wattplan.planner.agent.decide import SlurmJobNow
    from wattplan.planner.agent.loop import RoundReport

    agent, _ = fake_agent(tmp_path, FakeSlurm())
    now = {j: SlurmJobNow(j, True, False, ("v100-1",), 1) for j in ("7", "8")}
    report = RoundReport(0, 0.0)
    agent._observed, agent._window_start_s, agent._metered = True, 0.0, frozenset({"8"})
    booting = frozenset({"7"})
    agent._mark_stalled(now, 0.0, report, booting)
    agent._window_start_s = 0.0
    assert agent._mark_stalled(now, 360.0, report, booting)["7"].stalled is None  # booted the whole window
    agent._mark_stalled(now, 400.0, report)  # up: its run starts here
    agent._window_start_s = 400.0
    assert agent._mark_stalled(now, 760.0, report)["7"].stalled is not None  # a whole window of its run, unmetered


def test_a_short_window_without_energy_is_not_enough_to_judge_a_job_unmetered(tmp_path: Path) -> None:
    """Two rounds 44 s apart at a time scale of 30 (1.5 real s, less than a scrape): not judged; 30 real s are."""
    from wattplan.planner.agent.decide import SlurmJobNow
    from wattplan.planner.agent.loop import UNMETERED_REAL_S, RoundReport
    from wattplan.planner.agent.node_settings import Clock

    agent, _ = fake_agent(tmp_path, FakeSlurm(), clock=Clock(0.0, 30.0))
    now = {j: SlurmJobNow(j, True, False, ("v100-1",), 1) for j in ("7", "8")}
    report = RoundReport(0, 0.0)
    agent._observed, agent._window_start_s, agent._metered = True, 1000.0, frozenset({"8"})
    agent._mark_stalled(now, 1000.0, report)  # first seen running at 1000
    assert agent._mark_stalled(now, 1044.0, report)["7"].stalled is None  # a whole window, but 1.5 real s
    agent._window_start_s = 1044.0
    late = 1000.0 + UNMETERED_REAL_S * 30.0
    assert agent._mark_stalled(now, late, report)["7"].stalled is not None


def test_a_job_that_stopped_running_since_the_read_is_not_requeued(tmp_path: Path) -> None:
    """Slurm requeues a finished job too: a requeue sent after the user's scancel revived it (seen live)."""
    from wattplan.planner.agent.commands import CommandResult
    from wattplan.planner.agent.loop import RoundReport
    from wattplan.planner.agent.slurm_actions import Release, RequeueHold

    running = (Path(__file__).resolve().parent / "data" / "agent" / "squeue_running.json").read_text()
    slurm = FakeSlurm()
    agent, _ = fake_agent(tmp_path, slurm)
    # the queue as read just before the requeues: jobs 1 and 5 run, job 2 waits (it was cancelled, say)
    agent.run = lambda argv: (
        CommandResult(tuple(argv), 0, running, "") if tuple(argv) == ("squeue", "--json") else slurm(argv)
    )
    report = RoundReport(0, 0.0)
    actions = [RequeueHold(1), RequeueHold(2), Release(2)]
    assert agent._still_running_for_requeue(actions, report) == [RequeueHold(1), Release(2)]
    assert "job 2 stopped running before its requeue" in report.notes[-1]
    # Slurm does not answer: the requeues go as planned
    down, _ = fake_agent(tmp_path / "down", FakeSlurm(down=True))
    assert down._still_running_for_requeue(actions, RoundReport(0, 0.0)) == actions
