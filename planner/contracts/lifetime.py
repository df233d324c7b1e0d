"""A helper process's lifetime is its parent's: it ends when the process that started it ends, kill -9 included.

wattplan starts helpers that serve one parent (the watchdog's solver workers, a process pool's workers, a
benchmark run). A helper left behind by a parent that died without cleaning up (SIGKILL, the out-of-memory
killer, a crash) would run, or wait for work, forever. Two ties, used together (docs/design.md §12):

- :func:`die_with_parent`: Linux's ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, made in the helper at its start, so the
  kernel kills it when its parent goes; then the race check: a parent already gone before the tie was made
  (``os.getppid()`` is no longer the parent's pid) ends the helper at once. The kernel's "parent" is the *thread*
  that forked the helper, so the signal is only asked for where that thread outlives the helper (the main thread,
  or a thread that waits for the helper): elsewhere a thread's end would kill a helper its process still uses.
- :func:`watch_parent`: a thread in the helper that polls ``os.getppid()`` and ends the helper once it changes, for
  platforms without ``prctl`` and helpers forked from other threads.

Imports nothing else of wattplan (a contract between processes, usable from every layer).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when its parent (thread) ends (``<linux/prctl.h>``)."""
ORPHANED_EXIT = 128 + signal.SIGKILL
"""Exit status of a helper that found its parent gone (137, as if the parent-death SIGKILL had come)."""
PARENT_POLL_S = 0.5
"""Seconds between two looks at ``os.getppid()`` in :func:`watch_parent`."""


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``signum`` to this process when the thread that forked it ends (Linux only).

    True when the kernel took it; False elsewhere (no ``prctl``) or when it refused, so the caller can rely on
    :func:`watch_parent` instead. Cleared in this process's own children at fork: each asks for itself.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return False
    prctl.restype = ctypes.c_int
    return bool(prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signum), 0, 0, 0) == 0)


def orphaned(parent: int) -> bool:
    """True when ``parent`` is no longer this process's parent: it died and this process was handed on."""
    return os.getppid() != parent


def die_with_parent(parent: int, deathsig: bool = True) -> None:
    """Tie this freshly started helper to ``parent`` (its parent's pid, read by the parent before starting it).

    ``deathsig``: also ask for SIGKILL at the parent's death (:func:`set_parent_death_signal`; give False where
    the forking thread may end before the helper). Then the race check: a parent already gone (it died between
    the fork and this call, before the tie held) ends this process at once with :data:`ORPHANED_EXIT`.
    """
    if deathsig:
        set_parent_death_signal(signal.SIGKILL)
    if orphaned(parent):
        os._exit(ORPHANED_EXIT)


def _kill_self() -> None:
    """End this process now, as the parent-death signal would (no clean-up: the parent that wanted it is gone)."""
    os.kill(os.getpid(), signal.SIGKILL)


def watch_parent(
    parent: int, poll_s: float = PARENT_POLL_S, on_orphaned: Callable[[], None] = _kill_self
) -> threading.Thread:
    """Start a daemon thread that calls ``on_orphaned`` (default: SIGKILL this process) once ``parent`` is gone.

    For helpers where the parent-death signal is not available or not safe (module docstring); it costs one
    ``getppid`` every ``poll_s`` seconds.
    """

    def watch() -> None:
        while not orphaned(parent):
            time.sleep(poll_s)
        on_orphaned()

    thread = threading.Thread(target=watch, name="wattplan-parent-watch", daemon=True)
    thread.start()
    return thread


__all__ = [
    "ORPHANED_EXIT",
    "die_with_parent",
    "orphaned",
    "process_table",
    "set_parent_death_signal",
    "start_ticks",
    "watch_parent",
]


@dataclass(frozen=True, slots=True)
class ProcessEntry:
    """One process as ``/proc/PID/stat`` shows it: its state letter (``Z`` a zombie), parent, session and start time.

    ``start_ticks`` is the start time in clock ticks since boot: a pid the kernel reused names a process with another
    start time, so ``(pid, start_ticks)`` names one process for the machine's uptime.
    """

    pid: int
    state: str
    ppid: int
    sid: int
    start_ticks: int


def process_table() -> list[ProcessEntry]:
    """Every process of ``/proc`` (empty where there is none); one that ends while it is read is left out.

    The fields after the command name's closing parenthesis are state, ppid, pgrp, session, ... and, 20th, the
    start time (proc(5)), so a command name holding spaces or parentheses cannot shift them.
    """
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    table = []
    for entry in entries:
        try:
            table.append(_entry(int(entry)))
        except (OSError, ValueError, IndexError):
            continue
    return table


def _entry(pid: int) -> ProcessEntry:
    """``pid``'s line of :func:`process_table` (OSError when there is no such process)."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return ProcessEntry(pid, fields[0], int(fields[1]), int(fields[3]), int(fields[19]))


def start_ticks(pid: int) -> int | None:
    """``pid``'s start time in clock ticks since boot, or None where there is no such process (or no ``/proc``)."""
    try:
        return _entry(pid).start_ticks
    except (OSError, ValueError, IndexError):
        return None
