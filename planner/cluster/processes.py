"""The emulated cluster's processes by PID: what a PID runs, whether it runs, stopping it safely.

A PID written to ``cluster.json`` may be reused by the system once its process has ended, so every check
compares the process's command line with what was started (``match``, a substring) and, when it was recorded,
the process's start time; a PID that now runs something else is left alone. A zombie (ended, not yet reaped)
does not run.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def command_line(pid: int) -> str | None:
    """The command line ``pid`` runs (arguments joined by spaces); None when no such process or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return None
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return None
    return " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p) or None


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22); None when no such process.

    A PID and its start time name one process for the machine's uptime: a reused PID starts later.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[-1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int, match: str | None = None, started: int | None = None) -> bool:
    """Whether ``pid`` runs (its command line containing ``match`` and its start time ``started``, when given)."""
    line = command_line(pid)
    if line is None or (match is not None and match not in line):
        return False
    return started is None or start_ticks(pid) == started


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop_pid(pid: int, match: str | None = None, timeout_s: float = 15.0, started: int | None = None) -> bool:
    """SIGTERM ``pid``, wait up to ``timeout_s``, then SIGKILL; True if it was running (and matched, :func:`alive`)."""
    if not alive(pid, match, started):
        return False
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            _reap(pid)
            if command_line(pid) is None:
                return True
            time.sleep(0.05)
    return True
