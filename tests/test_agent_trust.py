"""The agent's privilege boundary and its state file under faults (issue 41; docs/design.md §11.6).

The agent runs as root, so a call it sends carries more privilege than the job's owner has. These tests pin:

- an administrator's hold (``JobHeldAdmin``) is never released, and a user hold the agent did not place (the
  owner pausing a job it already saw) is left alone too; the agent's own holds are user holds (``uhold``);
- only opted-in jobs of the allowed users and accounts are acted on (default: the agent's own user);
- the stalled-job restart cap is kept in the state file, so a restarted agent does not count from 0 again;
- one agent per state file (a lock for the process's life, dropped by ``kill -9``), a busy state skips a round
  instead of killing the agent, a damaged one is an operator-facing error (exit 2), never "a wattplan bug";
- ``--dry-run`` reads a consistent snapshot (what is still in the write-ahead log included);
- a Prometheus that accepts connections and never answers costs a round its budget, not 31.5 s;
- text from Slurm reaches the operator's terminal without its control characters.

Needs no Slurm except the slow test at the end (skips without it, fails under ``WATTPLAN_REQUIRE_SLURM=1``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.agent.commands import CommandResult, SlurmError, runner
from wattplan.planner.agent.decide import SlurmJobNow
from wattplan.planner.agent.loop import MAX_STALL_RESTARTS, Agent, AgentConfig, RoundReport
from wattplan.planner.agent.prometheus import PrometheusClient, PrometheusError
from wattplan.planner.agent.run import PrometheusObserver, open_state, stderr_log
from wattplan.planner.agent.slurm_queue import read_nodes, read_queue
from wattplan.planner.agent.store import AgentStore, StoreBusy, StoreError
from wattplan.planner.agent.trust import Allowed
from wattplan.planner.cluster.owned import agent_using
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.profile_library.library import load_profile_library

DATA = Path(__file__).resolve().parent / "data" / "agent"
TYPES = {"resnet18": "ResNet-18 (batch size 64)", "bert": "Transformer (batch size 64)"}
ROOT_ONLY = Allowed(frozenset({"root"}))


class FakeSlurm:
    """Answers from ``squeue_held.json``, each job's fields changed by ``edits`` (job id -> fields).

    Jobs 1-3 opted in and are held since their submission, 4 has a malformed opt-in, 5 is not managed; a test
    may change ``edits`` between rounds.
    """

    def __init__(self) -> None:
        self.edits: dict[int, dict[str, Any]] = {}
        self.seen: list[tuple[str, ...]] = []

    def queue(self) -> str:
        doc = json.loads((DATA / "squeue_held.json").read_text())
        for job in doc["jobs"]:
            for old, new in TYPES.items():
                job["comment"] = job["comment"].replace(f"type={old};", f"type={new};")
            job.update(self.edits.get(job["job_id"], {}))
        return json.dumps(doc)

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        args = tuple(argv)
        self.seen.append(args)
        if args == ("squeue", "--json"):
            return CommandResult(args, 0, self.queue(), "")
        if args == ("sinfo", "--json"):
            return CommandResult(args, 0, (DATA / "sinfo_mixed.json").read_text(), "")
        if args[:3] == ("scontrol", "show", "job"):
            return CommandResult(
                args, 0, "JobId=5 JobName=x\n     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)\n", ""
            )
        return CommandResult(args, 0, "", "")

    def touched(self) -> set[str]:
        """Every job id a call that changes a job named."""
        out: set[str] = set()
        for argv in self.seen:
            if argv[0] == "scontrol" and argv[1] in ("release", "hold", "uhold", "requeuehold"):
                out.update(argv[2].split(","))
            elif argv[:2] == ("scontrol", "update"):
                out.add(argv[2].split("=")[1])
            elif argv[0] == "scancel":
                out.update(argv[1:])
        return out


def _config(tmp_path: Path, allowed: Allowed = ROOT_ONLY, **extra: Any) -> AgentConfig:
    return AgentConfig(
        load_profile_library(None),
        RoundRules(objective="efficiency"),
        PlanRequest(solver="greedy", time_limit_s=5.0, threads=1, lp_bound=False),
        settings_dir=tmp_path / "settings",
        retry_s=(0.0, 0.0, 0.0),
        allowed=allowed,
        **extra,
    )


def _agent(tmp_path: Path, slurm: FakeSlurm, allowed: Allowed = ROOT_ONLY, **extra: Any) -> Agent:
    store = AgentStore(tmp_path / "agent.db")
    return Agent(_config(tmp_path, allowed, **extra), store, slurm, None, lambda _line: None)


# ---------------------------------------------------------------------------------------------- holds


def test_an_administrators_hold_is_never_released(tmp_path: Path) -> None:
    """High 2: a user refused ``scontrol release`` adds the opt-in comment; root's agent must not release it."""
    slurm = FakeSlurm()
    slurm.edits[2] = {"state_reason": "JobHeldAdmin"}
    agent = _agent(tmp_path, slurm)
    report = agent.round()
    assert "2" not in slurm.touched(), slurm.seen  # no release, no update (no more GPUs) for job 2
    assert slurm.touched() == {"1", "3"}
    assert "job 2 is held by an administrator (JobHeldAdmin): left alone until it is released" in report.notes
    assert not (tmp_path / "settings" / "2.conf").exists()
    agent.round()  # said once, still never touched
    assert "2" not in slurm.touched()


def test_a_hold_placed_after_the_agent_saw_the_job_is_its_owners(tmp_path: Path) -> None:
    """Only the job's own submission hold is adopted; a user hold placed later is the user's.

    Seen unheld, each job is held by the agent for its update and released in the same round (an update must reach
    only a held job); a release the agent made ends its hold record, so the owner's later hold is the owner's.
    """
    slurm = FakeSlurm()
    for j in (1, 2, 3):
        slurm.edits[j] = {"state_reason": "Resources", "priority": 100}  # pending, not held: seen unheld
    agent = _agent(tmp_path, slurm)
    agent.round()
    sent = [a[1] for a in slurm.seen if a[0] == "scontrol" and a[1] in ("uhold", "update", "release")]
    assert sent[0] == "uhold" and sent[-1] == "release" and "update" in sent, slurm.seen
    assert agent.store.agent_holds() == set()
    slurm.seen.clear()
    slurm.edits[2] = {"state_reason": "JobHeldUser", "priority": 0}  # its owner pauses it
    report = agent.round()
    assert "2" not in slurm.touched(), slurm.seen
    assert any("job 2 is held by its user, not by wattplan" in n for n in report.notes), report.notes


def test_the_agents_own_holds_are_recorded_before_they_are_sent(tmp_path: Path) -> None:
    store = AgentStore(tmp_path / "agent.db")
    store.begin_round(0, 0.0, 0.0)
    store.commit_intent(0, [], [(("scontrol", "uhold", "7,8"), (7, 8)), (("scontrol", "requeuehold", "9"), (9,))])
    assert store.agent_holds() == {"7", "8", "9"}
    store.drop_holds(["8"])  # Slurm showed it not held: a later hold is not the agent's
    assert store.agent_holds() == {"7", "9"}


# ---------------------------------------------------------------------------------------------- whose jobs


def test_jobs_of_users_not_allowed_are_left_alone(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    slurm.edits[3] = {"user_name": "mallory", "user_id": 1666}
    agent = _agent(tmp_path, slurm)
    report = agent.round()
    assert slurm.touched() == {"1", "2"}, slurm.seen
    assert any("job 3 opted in but belongs to user 'mallory'" in n for n in report.notes), report.notes
    assert "3" not in agent.store.known_jobs()


def test_an_allowed_account_admits_its_jobs(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    for j in (1, 2, 3):
        slurm.edits[j] = {"user_name": "alice", "account": "ml" if j != 2 else "physics"}
    agent = _agent(tmp_path, slurm, Allowed(frozenset(), frozenset({"ml"})))
    agent.round()
    assert slurm.touched() == {"1", "3"}, slurm.seen


def test_the_default_is_the_agents_own_user_only() -> None:
    import pwd

    assert Allowed.of([], []).users == {pwd.getpwuid(os.geteuid()).pw_name}
    assert Allowed.of(["alice"], []).users == {"alice"}


def test_bad_allow_options_are_refused_by_name() -> None:
    result = CliRunner().invoke(app, ["agent", "--allow-user", "bob;rm", "--allow-account", ""])
    assert result.exit_code == 2, result.output
    assert "--allow-user" in result.output and "--allow-account" in result.output


# ---------------------------------------------------------------------------------------------- restart cap


def test_the_stall_restart_cap_survives_an_agent_restart(tmp_path: Path) -> None:
    def stalled_at(agent: Agent, t: float, report: RoundReport) -> str | None:
        now = {"7": SlurmJobNow("7", True, False, ("v100-1",), 1)}
        agent._observed, agent._advanced_at = True, {"7": 0.0}
        agent._mark_stalled(now, 0.0, report)  # seen running from t=0
        return agent._mark_stalled(now, t, report)["7"].stalled

    limit = RoundRules().restart_s + RoundRules().duration_s
    for run in range(MAX_STALL_RESTARTS):  # each agent process restarts the stuck job once and dies
        agent = _agent(tmp_path, FakeSlurm())
        agent.store.add_job("7", "A3C", 100.0, 1, 0.0, 0)
        assert stalled_at(agent, limit + 1, RoundReport(run, 0.0)) is not None, run
        agent.store.close()
    agent = _agent(tmp_path, FakeSlurm())
    report = RoundReport(9, 0.0)
    assert stalled_at(agent, limit + 1, report) is None  # the cap was reached by the earlier processes
    assert report.notes == [f"job 7 has made no progress for {limit + 1:.0f} s after 3 restarts: left running"]


# ---------------------------------------------------------------------------------------------- the state file


def test_a_second_agent_on_the_same_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    first = AgentStore(path)
    with pytest.raises(StoreError, match=f"in use by another wattplan agent \\(pid {os.getpid()}") as err:
        AgentStore(path)
    assert isinstance(err.value, InputError) and err.value.problems[0].code == "state-in-use"
    first.close()
    AgentStore(path).close()  # free again


def test_the_lock_dies_with_its_agent_even_if_its_forked_worker_lives(tmp_path: Path) -> None:
    """``kill -9`` of the agent frees its state for the next one, though a forked solver worker still runs.

    Seen live with ``flock``: the worker inherited the lock and kept the restarted agent out.
    """
    path = tmp_path / "agent.db"
    code = (
        "import os, time; from pathlib import Path; from wattplan.planner.agent.store import AgentStore\n"
        f"s = AgentStore(Path({str(path)!r}))\n"
        "worker = os.fork()\n"
        "if worker == 0:\n    print(os.getpid(), flush=True)\n    time.sleep(600)\n    os._exit(0)\n"
        "time.sleep(600)\n"
    )
    # The worker itself says it runs: os.fork() returns in it only after the at-fork hooks that drop the lock ran.
    # (Its parent printing the pid raced them on a loaded machine: the agent was killed before the worker ran.)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    worker = 0
    try:
        assert child.stdout is not None
        worker = int(child.stdout.readline().strip())
        with pytest.raises(StoreError, match=f"pid {child.pid}"):
            AgentStore(path)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        os.kill(worker, 0)  # the worker still runs
        AgentStore(path).close()  # and the state is free
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        if worker:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)


def test_a_busy_state_skips_the_round_and_the_agent_goes_on(tmp_path: Path) -> None:
    """A 45 s lock by someone else killed a running agent with a traceback; now the round is skipped."""
    path = tmp_path / "agent.db"
    slurm = FakeSlurm()
    store = AgentStore(path, busy_timeout_s=0.2)
    lines: list[str] = []
    agent = Agent(_config(tmp_path, max_rounds=1), store, slurm, None, lines.append)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # an operator's sqlite3 shell in a transaction
    try:
        assert agent.run_loop() == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert any(line.startswith("round skipped, what runs is kept") and "is locked" in line for line in lines), lines
    assert slurm.touched() == set()  # nothing sent that could not be recorded
    assert agent.round().planned_run == 3  # the lock is gone: the next round plays


def test_a_busy_state_at_start_is_an_operator_error(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    AgentStore(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    store = AgentStore(path, busy_timeout_s=0.2)  # reading needs no lock in WAL mode; the first write does
    try:
        with pytest.raises(StoreBusy, match="locked by another process") as err:
            Agent(_config(tmp_path), store, FakeSlurm(), None, lambda _line: None)
        assert err.value.problems[0].code == "state-busy" and "try again" in str(err.value)
    finally:
        store.close()
        other.execute("ROLLBACK")
        other.close()
    AgentStore(path).close()  # a failed open left no lock behind


def test_a_damaged_state_is_an_operator_error(tmp_path: Path) -> None:
    state = tmp_path / "agent.db"
    state.write_bytes(b"this is not a database\n" * 100)
    result = CliRunner().invoke(
        app, ["agent", "--state", str(state), "--settings-dir", str(tmp_path / "s"), "--max-rounds", "1"]
    )
    assert result.exit_code == 2, result.output
    assert "damaged or not an agent state file" in result.output and "fresh --state" in result.output
    assert "wattplan bug" not in result.output


def test_dry_run_reads_what_is_still_in_the_write_ahead_log(tmp_path: Path) -> None:
    state = tmp_path / "agent.db"
    live = AgentStore(state)  # a running agent: its last commits sit in agent.db-wal until a checkpoint
    live.add_job("7", "A3C", 100.0, 1, 0.0, 0)
    live.set_progress({"7": 42.0}, 10.0)
    assert (tmp_path / "agent.db-wal").stat().st_size > 0
    copy, scratch = open_state(state, dry_run=True)  # no lock taken: it runs next to the live agent
    try:
        assert copy.known_jobs()["7"].steps_done == 42.0
    finally:
        copy.close()
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch)
    live.close()


# ---------------------------------------------------------------------------------------------- Prometheus


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server on 127.0.0.1 that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for s in held:
            s.close()
        server.close()


def test_a_prometheus_that_never_answers_costs_the_round_its_budget(silent_server: str) -> None:
    observer = PrometheusObserver(silent_server, budget_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(PrometheusError, match="did not answer within|is spent"):
        observer.window(time.time() - 60, time.time())
    took = time.monotonic() - t0
    assert took < 4.0, f"{took:.1f} s against a 1 s budget (it was 31.5 s against 5 s)"


def test_a_spent_budget_sends_nothing() -> None:
    from wattplan.planner.agent.prometheus import PrometheusClient

    client = PrometheusClient("http://127.0.0.1:9", timeout_s=10).bounded(time.monotonic() - 1)
    with pytest.raises(PrometheusError, match="not sent, the time allowed for Prometheus this round is spent"):
        client.instant("up")


# ---------------------------------------------------------------------------------------------- the terminal


def test_the_log_shows_no_control_characters() -> None:
    err = io.StringIO()
    with redirect_stderr(err):
        stderr_log(False)("Slurm refused: \x1b]0;owned\x07\x1b[2J job 7\r\n  next line")
    text = err.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "job 7" in text and "\n  next line" in text


# ---------------------------------------------------------------------------------------------- real Slurm


@pytest.fixture(scope="module")
def slurm() -> Iterator[Any]:
    from tests.slurm_cluster import running_cluster

    yield from running_cluster("wattplan-agent-trust-")


def _wait(what: str, ready: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.slow
def test_on_real_slurm_an_admin_hold_stays_and_the_agents_holds_are_user_holds(slurm: Any, tmp_path: Path) -> None:
    from wattplan.planner.agent.slurm_actions import Hold, apply

    run = runner(slurm.env, timeout_s=30)

    def submit(*extra: str) -> str:
        argv = ["sbatch", "--parsable", "-o", f"{tmp_path}/%j.out", "--gres=gpu:1", "--ntasks=1", *extra]
        result = run([*argv, "--comment=wattplan:type=ResNet-18 (batch size 64);steps=1000", "--wrap", "sleep 60"])
        assert result.ok, result.stderr
        return result.stdout.strip().split(";")[0]

    # the agent's hold of two pending jobs in one call is a user hold (root's plain `hold` would be an admin's)
    a, b = submit("--begin=now+1hour"), submit("--begin=now+1hour")
    (held,) = apply([Hold(int(a)), Hold(int(b))], dry_run=False, run=run)
    assert held.ok and held.call.argv == ("scontrol", "uhold", f"{a},{b}"), str(held)
    assert {slurm.job_field(j, "Reason") for j in (a, b)} == {"JobHeldUser"}
    # an administrator holds an opted-in job: a round of the agent (root) never releases it
    victim = submit("--hold")
    assert run(["scontrol", "hold", victim]).ok
    assert slurm.job_field(victim, "Reason") == "JobHeldAdmin"
    config = _config(tmp_path, max_rounds=1)
    agent = Agent(config, AgentStore(tmp_path / "agent.db"), run, None, lambda _line: None)
    report = agent.round()
    assert f"job {victim} is held by an administrator (JobHeldAdmin): left alone until it is released" in (
        report.notes
    ), report.line()
    assert all(victim not in c.call.argv[-1].split(",") for c in report.calls), [str(c) for c in report.calls]
    assert slurm.job_field(victim, "Reason") == "JobHeldAdmin"
    assert run(["scancel", a, b, victim]).ok


def test_an_admin_hold_is_never_the_agents_even_if_recorded() -> None:
    """The agent holds with ``uhold``: a ``JobHeldAdmin`` on a job it once held is an administrator's since."""
    from wattplan.planner.agent.slurm_queue import read_queue
    from wattplan.planner.agent.trust import foreign_hold

    slurm = FakeSlurm()
    slurm.edits[2] = {"state_reason": "JobHeldAdmin"}
    jobs = {j.job_id: j for j in read_queue(slurm.queue()).jobs}
    assert foreign_hold(jobs[2], {"1", "2"}) == "held by an administrator (JobHeldAdmin)"
    assert foreign_hold(jobs[1], {"1", "2"}) is None
    assert foreign_hold(jobs[1], set()) == "held by its user, not by wattplan (JobHeldUser)"


def test_the_timeout_sent_to_prometheus_is_a_duration_it_reads() -> None:
    """A bounded client's ``timeout`` parameter was ``3.000s``, which Prometheus refuses (HTTP 400; seen live)."""
    import re

    from wattplan.planner.agent.prometheus import PrometheusClient

    client = PrometheusClient("http://127.0.0.1:9", timeout_s=10).bounded(time.monotonic() + 3.5)
    assert re.fullmatch(r"[0-9]+ms", client._params("up")["timeout"])
    assert PrometheusClient("http://127.0.0.1:9", timeout_s=10)._params("up")["timeout"] == "10000ms"


def test_cluster_tools_see_a_running_agent(tmp_path: Path) -> None:
    """``wattplan cluster up``/``down`` must not delete the state of a running agent: they see its lock."""
    check = (
        "import sys; from pathlib import Path; from wattplan.planner.cluster.owned import agent_using; "
        "print(agent_using(Path(sys.argv[1])))"
    )

    def seen() -> str:
        done = subprocess.run([sys.executable, "-c", check, str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    store = AgentStore(tmp_path / "agent.db")
    try:
        assert seen() == f"pid {os.getpid()}"
    finally:
        store.close()
    assert seen() == "None"


def test_a_forked_worker_does_not_keep_a_killed_agents_lock(tmp_path: Path) -> None:
    """A kill -9 of an agent whose forked child lives on leaves the lock free (the child closed it)."""
    script = (
        "import os, sys, time; from pathlib import Path; from wattplan.planner.agent.store import AgentStore; "
        "store = AgentStore(Path(sys.argv[1]) / 'agent.db'); pid = os.fork()\n"
        "if pid == 0:\n    print(os.getpid(), flush=True); time.sleep(600); os._exit(0)\n"  # after the fork hooks
        "time.sleep(600)"
    )
    agent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert agent.stdout is not None
    child = int(agent.stdout.readline())
    try:
        agent.kill()
        agent.wait(timeout=60)
        os.kill(child, 0)  # the forked child still runs
        assert agent_using(tmp_path) is None  # cluster up/down see no agent
        store = AgentStore(tmp_path / "agent.db")  # the next agent takes the state
        store.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def _captured(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def test_hostile_slurm_documents_are_problems_or_clear_errors_never_tracebacks() -> None:
    """Slurm's documents as the generated audit bent them: each a located problem or a SlurmError.

    Before: a node name that is no host name reached ``scontrol update`` and raised in the round; a 400-digit count
    failed in SQLite mid-round; deeply nested JSON raised RecursionError.
    """
    nodes = _captured("sinfo_mixed.json")
    nodes["nodes"][0]["name"] = "\u202eevil\x1b]0;t\x07"
    read = read_nodes(json.dumps(nodes))
    assert all(n.name != nodes["nodes"][0]["name"] for n in read.nodes)
    assert any(p.path == "nodes[0].name" and "\\x1b" in p.message for p in read.problems), read.problems
    queue = _captured("squeue_running.json")
    queue["jobs"][0]["node_count"] = 10**400
    assert any("64-bit" in p.message for p in read_queue(json.dumps(queue)).problems)
    with pytest.raises(SlurmError, match="nested too deeply"):
        read_queue('{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_prometheus_errors_quote_the_server_plainly_and_a_malformed_answer_is_a_prometheus_error() -> None:
    assert "\x00" not in str(PrometheusError("HTTP 500: a\x00b\x1b[2J")) and "\\x1b" in str(PrometheusError("\x1b"))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 200_000 + b"\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client = PrometheusClient(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=30)
        with pytest.raises(PrometheusError, match="cannot reach Prometheus"):
            client.instant("up")
    finally:
        thread.join(timeout=30)
        listener.close()
