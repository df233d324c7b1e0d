"""Run one solve in a child process and stop waiting at a deadline.

Solvers can overrun their own time limits (HiGHS by minutes, seen on 500-job rounds), and
a solver call in the planner's own process cannot be interrupted. Each solve therefore runs
in a forked child; the parent waits at most ``deadline_s`` for its answer and kills it
afterwards. A side effect is that CP-SAT and HiGHS never share one process (DESIGN.md
section 4 reports symbol clashes between some versions).
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from formulations.backends.base import SolverResult


def _child(conn: Connection, fn: Callable[..., SolverResult], args: tuple[Any, ...]) -> None:
    try:
        result = fn(*args)
    except Exception as exc:  # reported to the parent as an error result, never swallowed
        result = SolverResult("error", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
    try:
        conn.send(result)
    finally:
        conn.close()


def run_with_deadline(fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float) -> SolverResult:
    """``fn(*args)`` in a forked child; a ``no_solution`` result if it has not answered by the deadline."""
    ctx = mp.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    begin = time.perf_counter()
    proc = ctx.Process(target=_child, args=(sender, fn, args), daemon=True)
    proc.start()
    sender.close()
    try:
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
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=5)
        receiver.close()
