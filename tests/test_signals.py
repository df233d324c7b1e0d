"""SIGTERM during a solve: the solver's process group dies and its scratch folder goes, as on Ctrl-C.

The watchdog wraps every backend's solve, so a stand-in solver that starts a subprocess and a
scratch file, then hangs, stands for all of them (CBC through PuLP is the one that starts a
subprocess of its own).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.processes import pid_alive

SCRIPT = """
import sys
from tests.helpers.processes import spawn_and_hang
from wattplan.formulations.watchdog import run_with_deadline

run_with_deadline(spawn_and_hang, (sys.argv[1],), 120.0)
print("not reached")
"""


def test_sigterm_kills_the_solver_group_and_removes_its_scratch_folder(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch_root)}
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(marker)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the stand-in solver never started"
    assert list(scratch_root.glob("wattplan-solve-*")), "no scratch folder while solving"
    proc.send_signal(signal.SIGTERM)
    # Exit status 143 and no "not reached": the signal ended it, not the 120 s watchdog nor the 300 s sleep, however
    # long a loaded machine takes to deliver it (60 s is a deadline, not a speed requirement).
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err.decode()
    assert b"not reached" not in out
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 60  # the loop ends as soon as the grandchild is gone
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild), "the solver's subprocess outlived SIGTERM"
    assert list(scratch_root.glob("wattplan-solve-*")) == []
