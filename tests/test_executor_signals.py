"""SIGTERM of a command running a process pool: the workers die with it, nothing of its session is left.

Issue 22: ``simulate --workers N`` and ``frontier`` killed by SIGTERM left their pool's workers
and the resource tracker re-parented to init, computing, then blocked forever on a pipe that
held the caller's stdout open.

Issue 42: Ctrl-C of ``simulate`` exited 130 without a word; it now says whether the same command run again
resumes (from the last checkpoint) or starts over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import live_in_session, pool_workers
from tests.sim_helpers import A3C, R50, write_gavel_trace
from wattplan.planner.sim.journal import CHECKPOINT_FILE
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.session import interrupted_note

pytestmark = pytest.mark.serial  # a local Ray instance: run alone (test_executor_ray_tmpdir counts /tmp's folders)
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["simulate", "frontier", "simulate-ray"])
def test_sigterm_cancels_the_pool_and_leaves_nothing_running(tmp_path: Path, command: str) -> None:
    """Exit 143 within 5 s of SIGTERM; 5 s later no process of the command's session is alive.

    ``simulate-ray`` runs the policies as tasks of a local Ray instance (whose processes are the
    command's children, each task's replay in a spawned process of its own).
    """
    if command.endswith("-ray"):
        pytest.importorskip("ray")
    rows = [(A3C if k % 2 else R50, 2_000_000 + 1000 * k, 60 * k, 1 + k % 4) for k in range(300)]
    trace = write_gavel_trace(tmp_path / "long.trace", rows)  # minutes of replay: still running when signalled
    common = [str(trace), "--cluster", "v100:8", "--solver", "greedy", "--workers", "2", "-o", str(tmp_path / "o")]
    simulate = ["--engine", "rounds", "--policy", "fifo-max", "--policy", "wattplan", "--no-plots", "-q"]
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
        begin = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        assert code == 143, (tmp_path / "stderr").read_text()
        assert time.monotonic() - begin < 5
        deadline = time.monotonic() + 5
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


@pytest.mark.slow
def test_ctrl_c_of_a_replay_says_whether_running_it_again_resumes(tmp_path: Path) -> None:
    """Issue 42: Ctrl-C of ``simulate`` exited 130 without a word; it now says what the same command run again does."""
    rows = [(A3C if k % 2 else R50, 2_000_000 + 1000 * k, 60 * k, 1 + k % 4) for k in range(300)]
    trace = write_gavel_trace(tmp_path / "long.trace", rows)  # minutes of replay: still running when interrupted
    out = tmp_path / "o"
    command = [sys.executable, "-m", "wattplan", "simulate", str(trace), "--engine", "rounds", "--cluster", "v100:8"]
    command += ["--policy", "fifo-max"]
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen(
            [*command, "--no-plots", "-q", "-o", str(out)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=_sigint_default,
        )
    rounds = out / "fifo-max" / "rounds.csv"
    try:
        deadline = time.monotonic() + 300  # generous: the replay's first rounds on a loaded machine
        while proc.poll() is None and time.monotonic() < deadline:
            if rounds.is_file() and len(rounds.read_text().splitlines()) > 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"waited for the replay's first rounds: {(tmp_path / 'stderr').read_text()}"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = (tmp_path / "stderr").read_text()
    assert code == 130 and "Traceback" not in stderr, stderr
    [note] = [line for line in stderr.splitlines() if line.startswith("interrupted")]
    if (out / "fifo-max" / CHECKPOINT_FILE).is_file():
        assert f"run the same command again to resume from the last checkpoint in {out}" in note
    else:
        assert "interrupted before the first checkpoint" in note and "starts over" in note


def test_the_interrupted_note_follows_the_checkpoints(tmp_path: Path) -> None:
    """Resumable only where a checkpoint is: serial with one saved; a parallel replay keeps none."""
    spec = ReplaySpec(trace=tmp_path / "t.trace", cluster="v100:8", policies=("fifo-max", "wattplan"))
    assert "before the first checkpoint" in interrupted_note(spec, tmp_path)
    (tmp_path / "wattplan").mkdir()
    (tmp_path / "wattplan" / CHECKPOINT_FILE).write_bytes(b"")
    assert "resume from the last checkpoint" in interrupted_note(spec, tmp_path)
    assert "keep no checkpoint" in interrupted_note(spec, tmp_path, workers=2)
    assert "keep no checkpoint" in interrupted_note(spec, tmp_path, ray="local")
