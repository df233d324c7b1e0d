"""Run one solve in a child process and stop waiting at a deadline.

Solvers can overrun their own time limits (HiGHS by minutes, seen on 500-job rounds), and
a solver call in the planner's own process cannot be interrupted. Each solve therefore runs
in a child process that leads its own process group; the parent waits at most ``deadline_s``
for its answer and then kills the whole group, so a solver the child started as a
subprocess (CBC through PuLP) dies with it. The child's temporary files go to a directory
of its own, removed afterwards whatever happened. A side effect is that CP-SAT and HiGHS
never share one process (docs/design.md §12: symbol clashes between some versions).

A backend's ``solve`` runs in a long-lived worker, one per backend class, forked at the first such call and fed
one pickled call at a time over a pipe: a replay solves thousands of small rounds, and forking a child (which then
imports the solver library again) cost more than the solve itself (~35 ms of a ~45 ms HiGHS stage on a 40-job
round). A worker that overruns its deadline, dies, or is interrupted is killed with its group, exactly as a child
would be, and the next call forks a new one; a worker is also replaced after :data:`WORKER_SOLVES` solves. A call
that cannot be pickled, or that finds its worker busy with another thread's solve, gets a child of its own, as
every call did before. The worker's answer is the one a child would give: the same function on the same arguments.

Interruptions clean up too: Ctrl-C (``KeyboardInterrupt``) and, while a solve is under way,
SIGTERM (turned into ``SystemExit(143)``, the shell's code for a terminated process) leave
through the same ``finally``, which kills the solver's process group and removes its scratch
folder before the caller exits.

A parent that dies without cleaning up (kill -9, the out-of-memory killer) takes its solver processes with it
(:func:`_tie_to_parent`): each worker or child holds no end of the pipes its parent talks through (the parent's end
of its own pipe, the other workers' ends and the parent's lifeline are closed in every forked child, an at-fork
hook), so an idle worker reads EOF and leaves; the kernel kills it when its parent goes
(``PR_SET_PDEATHSIG``, :mod:`planner.contracts.lifetime`); and a *sentinel*, a small process forked by the worker into
the worker's session, waits on the parent's lifeline (a pipe whose write end only the parent holds) and, at its
EOF, kills the whole session: the worker, a solver it started (CBC) and a command solver's process group, which
the parent-death signal alone would leave behind.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any, NoReturn

from wattplan.formulations.backends.base import SolverResult
from wattplan.formulations.ir import LinearModel
from wattplan.planner.contracts.lifetime import die_with_parent, process_table, start_ticks

WORKER_MAX_COLUMNS = 200_000
"""Models with more columns go to a forked child, which shares the parent's memory instead of receiving a pickled
copy (a 10,000-job round has over a million columns; its solve takes far longer than a fork)."""

WORKER_SOLVES = 1000
"""Solves a worker serves before it is replaced by a fresh fork (a leak in a solver library cannot grow for long)."""

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


@dataclass(frozen=True)
class _Tie:
    """What a forked solver process needs to die with its parent (:func:`_tie_to_parent`).

    The parent's pid and lifeline, whether to ask for the parent-death signal, and the parent's ends of the pipe
    to this child, which the child must not hold (else it never reads EOF).
    """

    parent: int
    lifeline: int
    deathsig: bool
    parent_ends: tuple[Connection, ...]


def _tie_to_parent(tie: _Tie) -> None:
    """In a freshly forked solver process that leads its own session: die with the parent (module docstring).

    Closes the parent's ends of this child's pipe, asks for SIGKILL at the parent's death and checks the parent is
    still there (:func:`~planner.contracts.lifetime.die_with_parent`), then forks the sentinel.
    """
    for end in tie.parent_ends:
        end.close()
    die_with_parent(tie.parent, tie.deathsig)
    try:
        sentinel = os.fork()
    except OSError:  # no process to spare: the pipe's EOF and the parent-death signal still hold
        return
    if sentinel == 0:
        _sentinel(tie.lifeline)


def _sentinel(lifeline: int) -> NoReturn:
    """Wait for EOF on the parent's ``lifeline``, then kill this session (the solver process and all it started).

    Holds nothing else open (the parent's ends, lock files, the worker's pipe: their holders must see them close),
    and exits without Python's clean-up: it is a fork of a solver process.
    """
    try:
        _only_fd(lifeline)
        while os.read(lifeline, 1):
            pass
        _kill_session(os.getsid(0))
    finally:
        os._exit(0)


def _only_fd(keep: int) -> None:
    """Close every file descriptor but ``keep``; 0, 1 and 2 go to ``/dev/null``."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every possible descriptor
        open_fds = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in open_fds:
        if fd > 2 and fd != keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _session_members(sid: int) -> list[int]:
    """The pids of the live processes of session ``sid`` (from ``/proc``; empty where there is none)."""
    return [p.pid for p in process_table() if p.sid == sid and p.state != "Z"]


SESSION_SWEEPS = 5
"""Times the session is searched again for processes started while it was being killed."""


def _kill_session(sid: int) -> None:
    """SIGKILL the process group ``sid`` leads and every process of session ``sid`` (never this process's own).

    ``sid`` is a solver's session, led by its worker or child (which called ``setsid``): CBC runs in the worker's
    group, a command solver in a group of its own in the same session. The caller is spared when it is a member
    (the sentinel): it ends itself.
    """
    me = os.getpid()
    for _ in range(SESSION_SWEEPS):
        members = [p for p in _session_members(sid) if p != me]
        if not members:
            break
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    _kill_group(sid)  # last: the sentinel is in it (and anything /proc did not show)


def _child(conn: Connection, scratch: str, fn: Callable[..., SolverResult], args: tuple[Any, ...], tie: _Tie) -> None:
    """Run ``fn(*args)`` in the forked child and send its result (or the error) back."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler is not the child's
    os.setsid()  # a process group of its own: the parent can kill the solver's subprocesses too
    _tie_to_parent(tie)
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


_LIFELINE: tuple[int, int, int] | None = None
"""``(owner pid, read end, write end)`` of this process's lifeline: a pipe nothing is ever written to, whose write
end only the owner holds (closed in forked children, non-inheritable across ``exec``), so its read end gives EOF
exactly when the owner has died."""


def _lifeline() -> int:
    """The read end of this process's lifeline, made at the first call (call with ``_WORKERS_LOCK`` held)."""
    global _LIFELINE
    if _LIFELINE is None or _LIFELINE[0] != os.getpid():
        read, write = os.pipe()  # O_CLOEXEC: a program a solver runs never holds the write end
        _LIFELINE = (os.getpid(), read, write)
    return _LIFELINE[1]


def _tie(*parent_ends: Connection, deathsig: bool = True) -> _Tie:
    """The :class:`_Tie` of a child this thread forks now; ``deathsig`` only where this thread outlives it."""
    with _WORKERS_LOCK:
        lifeline = _lifeline()
    return _Tie(os.getpid(), lifeline, deathsig, parent_ends)


def run_with_deadline(fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float) -> SolverResult:
    """``fn(*args)`` in a child process; a ``no_solution`` result if it has not answered by the deadline.

    A backend's ``solve`` goes to that backend's long-lived worker (module docstring); anything else, or a call the
    worker cannot take, to a child forked for it alone.
    """
    with _sigterm_exits():
        family = _solver_family(fn)
        if family is not None and _columns(args) <= WORKER_MAX_COLUMNS:
            result = _run_in_worker(family, fn, args, deadline_s)
            if result is not None:
                return result
        return _run_in_child(fn, args, deadline_s)


def _solver_family(fn: Callable[..., SolverResult]) -> str | None:
    """The worker a call may go to: a backend's bound ``solve`` is served by that backend's worker, else None.

    One worker per backend class, so two solver libraries never load into one process (design §12).
    """
    owner = getattr(fn, "__self__", None)
    if owner is None or getattr(fn, "__name__", "") != "solve" or not isinstance(getattr(owner, "name", None), str):
        return None
    cls = type(owner)
    return f"{cls.__module__}.{cls.__qualname__}"


def _columns(args: tuple[Any, ...]) -> int:
    """The most columns of a model among ``args`` (0 when none is a model)."""
    return max((a.num_cols for a in args if isinstance(a, LinearModel)), default=0)


@dataclass
class _Worker:
    """A forked process that serves one backend's solves, one at a time, until it is retired."""

    proc: BaseProcess
    conn: Connection
    owner_pid: int  # the process that forked it: a worker is never used from a forked copy of its parent
    started: int | None  # its start time (:func:`start_ticks`): a reaped worker's reused pid is not it
    served: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_WORKERS: dict[str, _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _serve(conn: Connection, tie: _Tie) -> None:
    """The worker's loop: read ``(fn, args, scratch)``, answer ``fn(*args)`` (or the error), until the pipe closes.

    The pipe closes when the parent retires the worker or dies (the worker holds no other end of it: ``tie``).
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()  # a process group of its own: the parent can kill the solver's subprocesses with it
    _tie_to_parent(tie)
    while True:
        try:
            fn, args, scratch = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            conn.send(_call_in(scratch, fn, args))
        except OSError:  # the parent is gone (BrokenPipeError): nobody to answer
            return


def _call_in(scratch: str, fn: Callable[..., SolverResult], args: tuple[Any, ...]) -> SolverResult:
    """``fn(*args)`` with ``scratch`` as the temporary directory; an exception becomes an ``error`` result."""
    for var in ("TMPDIR", "TMP", "TEMP"):
        os.environ[var] = scratch
    tempfile.tempdir = scratch
    try:
        return fn(*args)
    except Exception as exc:  # reported to the parent as an error result, never swallowed
        return SolverResult("error", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")


def _worker(family: str) -> _Worker:
    """The live worker of ``family`` owned by this process, forked now if there is none (or it is spent)."""
    with _WORKERS_LOCK:
        w = _WORKERS.get(family)
        if w is not None and (w.owner_pid != os.getpid() or not w.proc.is_alive() or w.served >= WORKER_SOLVES):
            if w.owner_pid == os.getpid():
                _retire(w)
            del _WORKERS[family]
            w = None
        if w is None:
            ctx = mp.get_context("fork")
            mine, theirs = ctx.Pipe(duplex=True)
            # The parent-death signal comes when the forking *thread* ends: only the main thread lives as long as
            # the process (a worker forked elsewhere relies on EOF and its sentinel).
            tie = _Tie(os.getpid(), _lifeline(), threading.current_thread() is threading.main_thread(), (mine,))
            proc = ctx.Process(target=_serve, args=(theirs, tie), daemon=True, name=f"wattplan-solver {family}")
            try:
                proc.start()
            except BaseException:
                mine.close()
                raise
            finally:
                theirs.close()
            w = _Worker(proc, mine, os.getpid(), start_ticks(proc.pid) if proc.pid is not None else None)
            _WORKERS[family] = w
        return w


def _still_ours(pid: int, started: int | None) -> bool:
    """Whether killing session ``pid`` can only reach what the process started at ``started`` left.

    Once a dead child is reaped (``is_alive``, ``join``, or multiprocessing's reaping at any later ``start``), the
    kernel may give its pid to another process, which may lead a session of its own: killing session ``pid`` then
    would kill a stranger's session. The kernel does not reuse a pid while a session or group of that id has a
    member, so: no process ``pid`` (the child is gone, only its session's leftovers carry the id), or the process
    ``pid`` started when the child did (it is the child), is ours; a process ``pid`` started at another time is not,
    and then the child's session has no member left to kill.
    """
    now = start_ticks(pid)
    return now is None or started is None or now == started


def _retire(w: _Worker) -> None:
    """Kill ``w``'s session (the worker, its sentinel and any solver it started) and reap it."""
    if w.proc.pid is not None and _still_ours(w.proc.pid, w.started):
        _kill_session(w.proc.pid)
        if w.proc.is_alive():  # killed before it could call setsid
            w.proc.kill()
        w.proc.join(timeout=5)
    w.conn.close()


def _drop(family: str, w: _Worker) -> None:
    """Retire ``w`` and forget it: the next call of ``family`` forks a new worker."""
    with _WORKERS_LOCK:
        if _WORKERS.get(family) is w:
            del _WORKERS[family]
    _retire(w)


def shutdown_workers() -> None:
    """Retire every solver worker this process forked (also run at exit)."""
    with _WORKERS_LOCK:
        mine = [w for w in _WORKERS.values() if w.owner_pid == os.getpid()]
        _WORKERS.clear()
    for w in mine:
        _retire(w)


atexit.register(shutdown_workers)


def _forget_in_child() -> None:
    """In every process forked from this one: close this process's ends of its workers' pipes and its lifeline.

    A forked process (another worker, a child, a process the agent forks) holding them would keep the workers from
    reading EOF, and the lifeline from closing, when this process dies. The workers stay this process's to retire.
    """
    global _WORKERS_LOCK, _LIFELINE
    for w in _WORKERS.values():
        with contextlib.suppress(OSError):
            w.conn.close()
    _WORKERS.clear()
    _WORKERS_LOCK = threading.Lock()  # another thread may have held it at the fork: it never releases it here
    if _LIFELINE is not None:
        with contextlib.suppress(OSError):
            os.close(_LIFELINE[2])
        _LIFELINE = None


os.register_at_fork(after_in_child=_forget_in_child)


def _run_in_worker(
    family: str, fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float
) -> SolverResult | None:
    """``fn(*args)`` on ``family``'s worker; None (nothing run) when the call cannot be pickled or the worker is busy.

    As :func:`_run_in_child`: an answer by the deadline is returned; past it, or if the worker dies, the worker's
    whole process group is killed, and the next call forks a new one. The scratch folder is removed either way.
    """
    begin = time.perf_counter()
    scratch = tempfile.mkdtemp(prefix="wattplan-solve-")
    try:
        return _call_worker(family, fn, args, deadline_s, scratch, begin)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # whatever happened (a failed fork too): no empty folder left


def _call_worker(
    family: str, fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float, scratch: str, begin: float
) -> SolverResult | None:
    """The body of :func:`_run_in_worker`, ``scratch`` made (and removed) by the caller."""
    try:
        payload = pickle.dumps((fn, args, scratch), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # e.g. a backend holding a lock: fork as before
        return None
    w = _worker(family)
    if not w.lock.acquire(blocking=False):  # another thread is solving on it: that call forks its own child
        return None
    answered = False
    try:
        try:
            w.conn.send_bytes(payload)
        except OSError:  # the worker died while idle
            return SolverResult("error", solve_s=time.perf_counter() - begin, message="solver process died")
        w.served += 1
        if w.conn.poll(max(0.0, deadline_s)):
            try:
                result: SolverResult = w.conn.recv()
            except (EOFError, OSError):
                return SolverResult("error", solve_s=time.perf_counter() - begin, message="solver process died")
            answered = True
            return result
        return SolverResult(
            "no_solution",
            solve_s=time.perf_counter() - begin,
            message=f"watchdog: no answer within {deadline_s:.1f} s, solver process killed",
            on_clock=True,
        )
    finally:
        w.lock.release()
        if not answered:  # out of time, dead, or interrupted (Ctrl-C, SIGTERM): nothing of it may linger
            _drop(family, w)


def _run_in_child(fn: Callable[..., SolverResult], args: tuple[Any, ...], deadline_s: float) -> SolverResult:
    """The body of :func:`run_with_deadline`: fork, wait, and always clean up (also when the fork fails)."""
    begin = time.perf_counter()
    scratch = tempfile.mkdtemp(prefix="wattplan-solve-")
    ends: list[Connection] = []
    proc: BaseProcess | None = None
    started: int | None = None
    answered = False
    try:
        ctx = mp.get_context("fork")
        receiver, sender = ctx.Pipe(duplex=False)
        ends += [receiver, sender]
        # This thread waits for the child to the end: the parent-death signal is safe from any thread here.
        proc = ctx.Process(target=_child, args=(sender, scratch, fn, args, _tie(receiver)), daemon=True)
        proc.start()
        started = start_ticks(proc.pid) if proc.pid is not None else None
        sender.close()
        if receiver.poll(max(0.0, deadline_s)):
            try:
                result: SolverResult = receiver.recv()
            except EOFError:
                return SolverResult("error", solve_s=time.perf_counter() - begin, message="solver process died")
            answered = True
            return result
        return SolverResult(
            "no_solution",
            solve_s=time.perf_counter() - begin,
            message=f"watchdog: no answer within {deadline_s:.1f} s, solver process killed",
            on_clock=True,
        )
    finally:
        if proc is not None and proc.pid is not None and _still_ours(proc.pid, started):
            # The child has answered or run out of time: nothing of it may linger. An answer means its solver
            # has ended, so its group (the child and its sentinel) is all there is; else the whole session goes.
            if answered:
                _kill_group(proc.pid)
            else:
                _kill_session(proc.pid)
            if proc.is_alive():  # killed before it could call setsid
                proc.kill()
            proc.join(timeout=5)
        for end in ends:
            end.close()
        shutil.rmtree(scratch, ignore_errors=True)
