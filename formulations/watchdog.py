"""Run one solve in a child process and stop waiting at a deadline.

Solvers can overrun their own time limits (HiGHS by minutes, seen on 500-job rounds), and
a solver call in the planner's own process cannot be interrupted. Each solve therefore runs
in a forked child that leads its own process group; the parent waits at most ``deadline_s``
for its answer and then kills the whole group, so a solver the child started as a
subprocess (CBC through PuLP) dies with it. The child's temporary files go to a directory
of its own, removed afterwards whatever happened. A side effect is that CP-SAT and HiGHS
never share one process (docs/design.md §12: symbol clashes between some versions).

Interruptions clean up too: Ctrl-C (``KeyboardInterrupt``) and, while a solve is under way,
SIGTERM (turned into ``SystemExit(143)``, the shell's code for a terminated process) leave
through the same ``finally``, which kills the solver's process group and removes its scratch
folder before the caller exits.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from formulations.backends.base import SolverResult

TERMINATED_EXIT = 128 + signal.SIGTERM
"""Exit status of a run ended by SIGTERM (143), as a shell reports it."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM handler while a solve runs: leave through ``finally`` blocks instead of dying on the spot."""
    raise SystemExit(TERMINATED_EXIT)


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(143)`` (main thread only; others cannot set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _child(conn: Connection, scratch: str, fn: Callable[..., SolverResult], args: tuple[Any, ...]) -> None:
    """Run ``fn(*args)`` in the forked child and send its result (or the error) back."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler is not the child's
    os.setsid()  # a process group of its own: the parent can kill the solver's subprocesses too
    for var in ("TMPDIR", "TMP", "TEMP"):
        os.environ[var] = scratch
    tempfile.tempdir = scratch
    try:
        result = fn(*args)
    except Exception as exc:  # reported to the parent as an error result, never swallowed
        result = SolverResult("error", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
    try:
        conn.send(result)
    finally:
        conn.close()


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (gone already, or not ours: nothing to do)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_with_deadline(fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float) -> SolverResult:
    """``fn(*args)`` in a forked child; a ``no_solution`` result if it has not answered by the deadline."""
    with _sigterm_exits():
        return _run_in_child(fn, args, deadline_s)


def _run_in_child(fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float) -> SolverResult:
    """The body of :func:`run_with_deadline`: fork, wait, and always clean up."""
    ctx = mp.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    scratch = tempfile.mkdtemp(prefix="wattplan-solve-")
    begin = time.perf_counter()
    proc = ctx.Process(target=_child, args=(sender, scratch, fn, args), daemon=True)
    try:
        proc.start()
        sender.close()
        if receiver.poll(max(0.0, deadline_s)):
            try:
                return receiver.recv()
            except EOFError:
                return SolverResult("error", solve_s=time.perf_counter() - begin, message="solver process died")
        return SolverResult(
            "no_solution",
            solve_s=time.perf_counter() - begin,
            message=f"watchdog: no answer within {deadline_s:.1f} s, solver process killed",
        )
    finally:
        if proc.pid is not None:
            _kill_group(proc.pid)  # the child has answered or run out of time: nothing of it may linger
            if proc.is_alive():  # killed before it could call setsid
                proc.kill()
            proc.join(timeout=5)
        sender.close()
        receiver.close()
        shutil.rmtree(scratch, ignore_errors=True)
