"""Processes for the tests of solver workers, signals and process pools: stand-in solvers and liveness checks.

The stand-in solvers are module-level so that :func:`formulations.watchdog.run_with_deadline` can hand them to a
worker by reference (a test module's own classes are imported in a subprocess script by this module's name).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from wattplan.formulations.backends import SolverResult
from wattplan.planner.executor import descendants


def spawn_and_hang(marker: str) -> SolverResult:
    """A 'solver' that starts a subprocess and a temporary file, then never answers."""
    proc = subprocess.Popen(["sleep", "300"])
    Path(marker).write_text(str(proc.pid))
    (Path(os.environ["TMPDIR"]) / "model.mps").write_text("scratch")
    time.sleep(300)
    return SolverResult("error")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is alive; a zombie (killed, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped by its (dead) parent is a zombie: count it as gone.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


class QuickBackend:
    """A stand-in backend whose ``solve`` answers at once with its worker's pid."""

    name = "quick"

    def solve(self) -> SolverResult:
        """``optimal``, the message the worker's pid."""
        return SolverResult("optimal", message=str(os.getpid()))


def quick_solve_backend() -> QuickBackend:
    """A fresh :class:`QuickBackend` (what a subprocess script calls to get one)."""
    return QuickBackend()


def session_of(pid: int) -> tuple[int, str] | None:
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
            got = session_of(int(entry))
            if got is not None and got[0] == sid and got[1] != "Z":
                out.append(int(entry))
    return out


def pool_workers(pid: int) -> list[int]:
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
