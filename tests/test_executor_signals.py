"""SIGTERM of a command running a process pool: the workers die with it, nothing of its session is left.

Issue 22: ``simulate --workers N`` and ``frontier`` killed by SIGTERM left their pool's workers
and the resource tracker re-parented to init, computing, then blocked forever on a pipe that
held the caller's stdout open.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sim_helpers import write_gavel_trace
from wattplan.planner.executor import descendants

pytestmark = pytest.mark.serial  # a local Ray instance: run alone (test_executor_ray_tmpdir counts /tmp's folders)
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"
ROOT = Path(__file__).resolve().parents[1]


def _session_of(pid: int) -> tuple[int, str] | None:
    """``(session id, state)`` of process ``pid`` from ``/proc``; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[3]), fields[0]


def live_in_session(sid: int) -> list[int]:
    """Every process of session ``sid`` that is not a zombie."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            got = _session_of(int(entry))
            if got is not None and got[0] == sid and got[1] != "Z":
                out.append(int(entry))
    return out


def _pool_workers(pid: int) -> list[int]:
    """The spawned pool workers below ``pid`` (their command line runs ``multiprocessing``'s spawn)."""
    found = []
    for p in descendants(pid):
        try:
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            found.append(p)
    return found


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
    extra = {
        "simulate": ["--policy", "fifo-max", "--policy", "wattplan", "--no-plots", "-q"],
        "frontier": ["--baselines", "fifo-max", "--deltas", "0.1", "--max-jct-increase", ""],
        "simulate-ray": ["--policy", "fifo-max", "--policy", "wattplan", "--no-plots", "-q", "--ray", "local"],
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
        while len(_pool_workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_pool_workers(proc.pid)) == 2, (tmp_path / "stderr").read_text()
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
