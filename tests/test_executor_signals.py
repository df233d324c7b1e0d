"""SIGTERM of a command running a process pool: the workers die with it, nothing of its session is left.

Issue 22: ``simulate --workers N`` and ``frontier`` killed by SIGTERM left their pool's workers
and the resource tracker re-parented to init, computing, then blocked forever on a pipe that
held the caller's stdout open.

Issue 42: Ctrl-C of ``simulate`` exited 130 without a word; it now says what the same command run again does: on
the simulated Slurm it reads back every policy that finished and replays the others from their start. A serial
replay once took the signal as the live agent's stop and saved the cut-short policy as finished, exiting 0; the
replay now leaves with ``SystemExit(128 + signal)`` and saves nothing of that policy.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.helpers.processes import live_in_session, pool_workers
from tests.sim_helpers import A3C, R50, write_gavel_trace
from wattplan.planner.cli.replay import SLURM_INTERRUPTED

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["simulate", "frontier", "simulate-ray"])
def test_sigterm_cancels_the_pool_and_leaves_nothing_running(tmp_path: Path, command: str) -> None:
    """Exit 143 on SIGTERM, minutes before the replays would end; then no process of the command's session lives.

    The deadlines (60 s for the exit, 30 s more for the processes) are far above what this takes on an idle machine
    (well under a second) and far below the replays' minutes: a busy machine does not fail it, a pool that waits
    for its replays does.

    ``simulate-ray`` runs the policies as tasks of a local Ray instance (whose processes are the
    command's children, each task's replay in a spawned process of its own).
    """
    if command.endswith("-ray"):
        pytest.importorskip("ray")
    rows = [(A3C if k % 2 else R50, 2_000_000 + 1000 * k, 60 * k, 1 + k % 4) for k in range(300)]
    trace = write_gavel_trace(tmp_path / "long.trace", rows)  # minutes of replay: still running when signalled
    common = [str(trace), "--cluster", "v100:8", "--solver", "greedy", "--workers", "2", "-o", str(tmp_path / "o")]
    simulate = ["--policy", "fifo-max", "--policy", "wattplan", "--no-plots", "-q"]
    extra = {
        "simulate": simulate,
        "frontier": ["--baselines", "fifo-max", "--deltas", "0.1", "--max-jct-increase", ""],
        "simulate-ray": [*simulate, "--ray", "local"],
    }[command]
    with open(tmp_path / "stdout", "wb") as out, open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wattplan", command.removesuffix("-ray"), *common, *extra],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while len(pool_workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(pool_workers(proc.pid)) == 2, (tmp_path / "stderr").read_text()
        time.sleep(1.0)  # the workers are replaying now
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        assert code == 143, (tmp_path / "stderr").read_text()
        deadline = time.monotonic() + 30
        while live_in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_in_session(proc.pid) == [], "processes of the command outlived it"
        assert "Traceback" not in (tmp_path / "stderr").read_text()
    finally:
        for pid in live_in_session(proc.pid):  # a failed run must not leave its processes behind either
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _sigint_default() -> None:
    """In the child before exec: SIGINT as at a terminal (a shell's background job would have it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rounds_recorded(scratch: Path) -> int:
    """The rounds a replay's agent has recorded in its state (``agent.db`` under ``scratch``); 0 before it has one."""
    for db in scratch.glob("wattplan-slurm-replay-*/agent.db"):
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)) as con:
                return int(con.execute("SELECT count(*) FROM rounds").fetchone()[0])
        except sqlite3.Error:  # not created yet, or busy: look again
            return 0
    return 0


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_serial_replay_says_a_rerun_reads_back_what_finished(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    """Ctrl-C (or SIGTERM) mid-replay: exit 130 (143) with the note; the policy that finished is saved, not the other.

    Serial replays: Slurm alone first (no agent: seconds for 300 jobs), then ``wattplan`` on the agent's loop, whose
    replay of 300 jobs running for days each takes minutes. The signal comes once that replay's agent has recorded
    two rounds in its state (``agent.db`` in the replay's scratch folder under ``TMPDIR``): its loop is running.
    """
    rows = [(A3C if k % 2 else R50, 2_000_000 + 1000 * k, 60 * k, 1 + k % 4) for k in range(300)]
    trace = write_gavel_trace(tmp_path / "long.trace", rows)
    out, scratch = tmp_path / "o", tmp_path / "tmp"
    scratch.mkdir()
    command = [sys.executable, "-m", "wattplan", "simulate", str(trace), "--cluster", "v100:8", "-p", "slurm"]
    command += ["-p", "wattplan", "--solver", "greedy", "--no-plots", "-q", "-o", str(out)]
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(scratch)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=_sigint_default,
        )
    try:
        deadline = time.monotonic() + 180  # generous: imports and Slurm alone's replay on a loaded machine
        while proc.poll() is None and time.monotonic() < deadline:
            if _rounds_recorded(scratch) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"waited for wattplan's replay: {(tmp_path / 'stderr').read_text()}"
        proc.send_signal(signum)
        exit_code = proc.wait(timeout=60)
    finally:
        for pid in live_in_session(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = (tmp_path / "stderr").read_text()
    assert (out / "slurm" / "summary.json").is_file()  # what the same command run again reads back
    assert exit_code == code and "Traceback" not in stderr, stderr
    assert " ".join(SLURM_INTERRUPTED.split()) in " ".join(stderr.split())
    assert not (out / "wattplan" / "summary.json").exists()  # what it replays from its start
