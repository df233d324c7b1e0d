"""Map one function over many tasks in parallel: local processes, local threads, or Ray tasks.

:func:`run_tasks` is the one interface the sweeps use (``wattplan bench``, ``frontier``,
``simulate`` with several policies). It calls a picklable module-level function ``fn(*args)``
for every ``args`` of a list and yields ``(index, Outcome)`` as the tasks finish, in the order
they finish; the caller puts the results back in task order by ``index``. A task that raises
is an :class:`Outcome` with its ``error``; the iteration goes on.

==========  ==============================================================================
where       how
==========  ==============================================================================
inline      one local worker (``workers`` 1, or a single task) in ``process`` mode: each
            call runs here, in this process and thread, one after another, and no pool is
            started (a spawned pool costs an interpreter and re-runs the caller's script:
            see below; a solve still runs in a forked child, :mod:`formulations.watchdog`,
            as in a serial ``simulate``). A task's exception is its outcome, as itself;
            Ctrl-C is the caller's ``KeyboardInterrupt``.
process     a ``spawn`` process pool of ``workers`` (a fresh interpreter per worker: the
            planner's solves fork, and a process that forks must not have run a solver
            first). A worker that dies (killed for memory, crashed) breaks the pool: the
            tasks it lost are retried one at a time, each in a pool of its own, so the
            death is charged to the task that caused it (``BrokenProcessPool``).
thread      ``workers`` threads in this process, for tasks that only drive a subprocess
            (each ``wattplan bench`` run is a ``python -m wattplan.planner.bench.worker`` child).
Ray         ``ray_address`` given: one Ray task per item (``ray.init(address=...)``;
            ``local`` starts a local Ray instance, stopped again afterwards, its files in a
            fresh private folder removed afterwards: :func:`ray_temp_dir`), at most
            ``workers`` in flight (None: all), each asking for ``cpus_per_task`` CPUs. In
            ``process`` mode the Ray task runs the call in a fresh spawned process of its
            own, exactly as a local worker would; in ``thread`` mode it calls it directly.
==========  ==============================================================================

A spawned worker imports the caller's ``__main__`` again (multiprocessing's spawn), and a script of a Python user
runs from its first line there: a script whose call of wattplan is not under ``if __name__ == "__main__":``
would run itself again in every worker, and each worker would fail starting a pool of its own. Before it starts a
pool, :func:`refuse_unguarded_main` finds the statement of ``__main__`` now running and refuses, with an
:class:`~planner.contracts.problems.InputError` naming ``workers`` and the script, when it is not under that guard.

A process pool's workers end with the process that started the pool, also when it is killed with SIGKILL
(:func:`_tied_to_parent`: the parent-death signal and a thread watching the parent, :mod:`planner.contracts.lifetime`),
and a solve's processes below a worker end with the worker (:mod:`formulations.watchdog`).

Interrupted (SIGINT, SIGTERM) while a process pool or Ray tasks run, the command leaves nothing
running: the handler :func:`cancel_on_signals` installs for the pool's lifetime (main thread
only; the previous handlers come back afterwards) kills every worker process and everything
below it (a solver in a session of its own included), the pool is shut down without waiting
(pending Ray tasks are cancelled, a local Ray instance is stopped), and ``SystemExit`` with
130 or 143 (``128 + signal``, as a shell reports it) leaves through every ``finally``. Thread
pools are the caller's to cancel (``wattplan bench`` kills its worker subprocesses itself).

Ray is optional (the ``ray`` extra): :func:`require_ray` turns its absence into an
:class:`~planner.contracts.problems.InputError` naming ``--ray``. Functions and arguments travel to Ray
nodes pickled, so ``wattplan`` must be installed there; anything a task reads from disk must
be readable on the node that runs it (``wattplan bench`` passes each instance's bytes along).
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import pickle
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from wattplan.planner.contracts.lifetime import die_with_parent, process_table, watch_parent
from wattplan.planner.contracts.problems import InputError, Problem

R = TypeVar("R")
Mode = Literal["process", "thread"]
RAY_LOCAL = "local"
"""The ``--ray`` address that starts a local Ray instance for the run."""
RAY_AUTO = "auto"
"""The ``--ray`` address that joins the Ray instance this machine already runs (Ray finds it)."""
RAY_HINT = "install it with: pip install 'wattplan[ray]'"
RAY_PROBE_S = 5.0
"""Seconds a ``--ray HOST:PORT`` address has to accept a TCP connection before the run is refused."""
RAY_HELP = (
    f"Run on Ray: a cluster address ({RAY_AUTO}, HOST:6379, ray://HOST:10001) or {RAY_LOCAL} (a Ray instance "
    f"started for this run); an address is refused when nothing answers there within {RAY_PROBE_S:g} s; needs the "
    f"ray extra ({RAY_HINT.removeprefix('install it with: ')})."
)
"""The help of every ``--ray`` option (``simulate``, ``frontier``, ``bench``)."""
RAY_TEMP_DIR_MAX = 40
"""Longest folder (bytes) a local Ray instance is given for its files. Its Unix sockets lie about 62 bytes
below it (``session_<date>_<time>_<microseconds>_<pid>/sockets/plasma_store``) and a socket path holds at
most 107 bytes (``sun_path``), so a longer ``TMPDIR`` makes Ray fail to start."""
RAY_TEMP_PREFIX = "wpray-"


class TaskFailed(RuntimeError):
    """A task's exception that cannot travel between processes as itself: its type name and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple[type[TaskFailed], tuple[str, str]]:
        return (TaskFailed, (self.kind, self.message))


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """What one task gave: its ``value``, or the ``error`` it raised (then ``value`` is None)."""

    value: R | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        """True when the task returned (``error`` is None)."""
        return self.error is None


def require_ray() -> ModuleType:
    """The ``ray`` module; an :class:`InputError` naming ``--ray`` (exit 2) when it is not installed."""
    try:
        import ray
    except ImportError as exc:
        why = f"Ray is not installed ({exc}); {RAY_HINT}"
        raise InputError("--ray", [Problem("ray-unavailable", "--ray", why)]) from None
    return ray


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling (as it must to reach the parent), else a :class:`TaskFailed` copy.

    An exception whose arguments do not rebuild it (such as :class:`InputError`) would be
    unpicklable in the parent and break a whole process pool.
    """
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return TaskFailed(type(exc).__name__, str(exc).strip() or "(no message)")
    return exc


def call_portably(fn: Callable[..., R], args: Sequence[Any]) -> R:
    """``fn(*args)``, re-raising a failure as an exception that pickles (see :func:`_portable`)."""
    try:
        return fn(*args)
    except Exception as exc:
        raise _portable(exc) from None


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """The ``(host, port)`` of a ``HOST:PORT`` or ``ray://HOST:PORT`` address; None for ``auto`` and ``local``.

    Any other form is an :class:`InputError` naming ``--ray``.
    """
    if address in (RAY_LOCAL, RAY_AUTO):
        return None
    url = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = url.hostname, url.port
    except ValueError:
        host, port = None, None
    if url.scheme not in ("", "ray") or not host or port is None or url.path not in ("", "/"):
        why = f"{address!r} is not an address; give HOST:PORT, ray://HOST:PORT, {RAY_AUTO} or {RAY_LOCAL}"
        raise InputError("--ray", [Problem("bad-option", "--ray", why)])
    return host, port


def probe_ray(address: str, timeout_s: float = RAY_PROBE_S) -> None:
    """Refuse (an :class:`InputError` naming the address) a ``--ray`` address nothing answers within ``timeout_s``.

    ``ray.init`` waits forever on an address where no Ray listens; a TCP connection to its
    host and port, with a deadline, tells first. ``auto`` and ``local`` are not probed.
    """
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    host, port = endpoint
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        why = (
            f"nothing answers at {address} (TCP {host}:{port}) within {timeout_s:g} s: {exc}; is the Ray head running?"
        )
        raise InputError("--ray", [Problem("ray-unreachable", "--ray", why)]) from None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first), from ``/proc``; empty where there is none."""
    children: dict[int, list[int]] = {}
    for p in process_table():
        children.setdefault(p.ppid, []).append(p.pid)
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _kill_group_led_by(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads, if it leads one and it is not this process's own."""
    try:
        if os.getpgid(pid) == pid and pid != os.getpgrp():
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid``, every process below it and the groups any of them lead (never this process's group).

    The processes below are read from their parent links before anything dies (a solve runs
    in a session of its own, out of its worker's group, and would be re-parented to init).
    """
    below = descendants(pid)
    for p in (pid, *below):
        _kill_group_led_by(p)
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@contextmanager
def cancel_on_signals(cancel: Callable[[int], None]) -> Iterator[None]:
    """Within the block SIGINT and SIGTERM call ``cancel(signal number)``, then raise ``SystemExit(128 + signal)``.

    Installed in the main thread only (elsewhere the block runs unguarded); a signal the caller
    ignores stays ignored; the previous handlers are restored on leaving.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: FrameType | None) -> None:
        cancel(signum)
        raise SystemExit(128 + signum)

    chosen = [sig for sig in (signal.SIGTERM, signal.SIGINT) if signal.getsignal(sig) is not signal.SIG_IGN]
    previous = {sig: signal.signal(sig, interrupted) for sig in chosen}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            try:
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            except ValueError:  # the generator was closed from another thread: no handler can be set there
                pass


MANAGER_JOIN_S = 5.0
"""Seconds to wait for a killed process pool's manager thread to end (it ends as soon as it sees its workers dead)."""


def _kill_workers(pool: Executor) -> None:
    """SIGKILL every worker process of ``pool`` and whatever they started (a thread pool has none)."""
    processes = getattr(pool, "_processes", None) or {}
    for pid in list(processes):
        kill_tree(int(pid))


def ray_temp_dir() -> Path:
    """A fresh private folder (mode 0700, ``wpray-XXXXXXXX``) for a local Ray instance's sessions, logs and sockets.

    Under the ``TMPDIR`` (:func:`tempfile.gettempdir`) when the folder's path is at most
    :data:`RAY_TEMP_DIR_MAX` bytes long, else under ``/tmp``; the caller removes it after ``ray.shutdown()``
    (:func:`remove_ray_temp_dir`). Without it Ray writes to ``$TMPDIR/ray`` (``/tmp/ray``) and keeps every
    session there.
    """
    parent = tempfile.gettempdir()
    if len(os.fsencode(os.path.join(parent, RAY_TEMP_PREFIX + "x" * 8))) > RAY_TEMP_DIR_MAX:
        parent = "/tmp"
    return Path(tempfile.mkdtemp(prefix=RAY_TEMP_PREFIX, dir=parent))


RAY_CLEANUP_S = 5.0
"""Seconds to retry removing a local Ray's folder: its log monitor may still write for a moment after shutdown."""


def remove_ray_temp_dir(path: Path, timeout_s: float = RAY_CLEANUP_S) -> None:
    """Remove ``path`` and everything below it, retrying while files still appear in it (up to ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _check(workers: int | None, ray_address: str | None) -> None:
    if workers is not None and workers < 1:
        raise InputError("--workers", [Problem("bad-option", "--workers", f"must be >= 1, got {workers}")])
    if ray_address is not None and not ray_address.strip():
        raise InputError("--ray", [Problem("bad-option", "--ray", "give a Ray address, or local")])


def run_tasks(
    fn: Callable[..., R],
    tasks: Sequence[Sequence[Any]],
    *,
    workers: int | None = 1,
    ray_address: str | None = None,
    mode: Mode = "process",
    cpus_per_task: float = 1.0,
) -> Iterator[tuple[int, Outcome[R]]]:
    """Call ``fn(*tasks[i])`` for every ``i``; yield ``(i, Outcome)`` as each finishes (see the module docstring).

    ``workers``: processes or threads at once (None: one locally), or Ray tasks in flight (None:
    all of them). One local process worker runs the tasks here, without a pool. Bad values raise
    :class:`InputError` before anything runs, as does a missing Ray or an address nothing answers
    (:func:`probe_ray`) when ``ray_address`` is given, and a pool that would run the caller's
    unguarded script again (:func:`refuse_unguarded_main`).
    """
    _check(workers, ray_address)
    if ray_address is not None:
        ray = require_ray()
        if not tasks:
            return iter(())
        if not ray.is_initialized():
            probe_ray(ray_address.strip())
        return _ray_map(ray, fn, tasks, workers, ray_address.strip(), mode, cpus_per_task)
    if not tasks:
        return iter(())
    if mode == "process" and min(workers or 1, len(tasks)) == 1:
        return _inline_map(fn, tasks)
    if mode == "process":
        refuse_unguarded_main(workers or 1)
    return _local_map(fn, tasks, list(range(len(tasks))), workers or 1, mode, retry_lost=True)


def _inline_map(fn: Callable[..., R], tasks: Sequence[Sequence[Any]]) -> Iterator[tuple[int, Outcome[R]]]:
    """Call ``fn(*tasks[i])`` here, one task after another: one worker needs no pool (module docstring)."""
    for i, args in enumerate(tasks):
        try:
            value = fn(*args)
        except Exception as exc:  # the task's own failure is its outcome, as in a pool
            yield i, Outcome(error=exc)
        else:
            yield i, Outcome(value=value)


MAIN_GUARD = 'if __name__ == "__main__":'


def _reruns_main(main: ModuleType) -> bool:
    """Whether a spawned worker runs ``main`` again (what :mod:`multiprocessing.spawn` prepares a child with).

    A script (``python x.py``) and a module run with ``python -m`` are run again, as ``__mp_main__``; a package's
    ``__main__`` module, an interactive session, ``python -c`` and standard input are not.
    """
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return name != "__main__" and not name.endswith(".__main__")
    return getattr(main, "__file__", None) is not None


def _main_frame(main: ModuleType) -> FrameType | None:
    """The frame of ``main``'s module code now running in the main thread; None when it has finished."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is vars(main):
            return frame
        frame = frame.f_back
    return None


def _names_main(test: ast.AST) -> bool:
    """Whether the condition ``test`` holds ``__name__ == "__main__"`` (either side of the ``==``).

    Alone or within a larger condition (``... and __name__ == "__main__"``): nothing is refused on a guess.
    """
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            sides = [node.left, node.comparators[0]]
            names = [s.id for s in sides if isinstance(s, ast.Name)]
            texts = [s.value for s in sides if isinstance(s, ast.Constant)]
            if names == ["__name__"] and texts == ["__main__"]:
                return True
    return False


def _guarded(source: str, line: int) -> bool:
    """Whether ``line`` of the module ``source`` lies in the body of an ``if __name__ == "__main__":``.

    A source that does not parse is taken as guarded: nothing is refused on a guess.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _names_main(node.test) and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno):
                return True
    return False


def unguarded_main_script() -> str | None:
    """The script a spawned worker would run again up to this very call (module docstring); None when none would.

    The script runs wattplan from a statement of its module code that is not under ``if __name__ ==
    "__main__":``. Its source unreadable, or its module code finished (a call from another thread), nothing is
    known and None is returned.
    """
    main = sys.modules.get("__main__")
    if main is None or not _reruns_main(main):
        return None
    frame = _main_frame(main)
    if frame is None:
        return None
    path = frame.f_code.co_filename
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if _guarded(source, frame.f_lineno or 0) else path


def refuse_unguarded_main(workers: int) -> None:
    """Raise :class:`InputError` naming ``workers`` when a pool of spawned workers would re-run the caller's script.

    Each worker would run the script from its first line, call wattplan again there and fail starting a pool of its
    own: seven tracebacks and no result, where this says what to change.
    """
    script = unguarded_main_script()
    if script is None:
        return
    why = (
        f"workers={workers} runs the work in up to {workers} new Python processes, and each would run your script "
        f"{script} again from its first line (multiprocessing's spawn start method); put the code that calls "
        f"wattplan under `{MAIN_GUARD}`, or pass workers=1 to run it in this process"
    )
    raise InputError("workers", [Problem("unguarded-main", "workers", why)])


def _tied_to_parent(parent: int, deathsig: bool) -> None:
    """The initializer of every pool worker: it ends when ``parent`` (the process that made the pool) ends.

    A worker waits for its next task on a queue whose write end it holds itself, so it never reads EOF: a parent
    killed with SIGKILL would leave it waiting (or running its task) forever. The parent-death signal where the
    pool was made in the main thread (the kernel's "parent" is the forking thread), and a thread watching the
    parent's pid everywhere.
    """
    die_with_parent(parent, deathsig)
    watch_parent(parent)


def _process_pool(workers: int) -> ProcessPoolExecutor:
    """A ``spawn`` pool of ``workers`` processes that end with this one (:func:`_tied_to_parent`)."""
    main = threading.current_thread() is threading.main_thread()
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_tied_to_parent,
        initargs=(os.getpid(), main),
    )


def _local_pool(mode: Mode, workers: int) -> Executor:
    if mode == "thread":
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wattplan-task")
    return _process_pool(workers)


def _local_map(
    fn: Callable[..., R], tasks: Sequence[Sequence[Any]], indices: list[int], workers: int, mode: Mode, retry_lost: bool
) -> Iterator[tuple[int, Outcome[R]]]:
    """Run ``tasks[i]`` for ``i`` in ``indices`` in one local pool; retry the tasks a broken pool lost, alone."""
    lost: list[int] = []
    pool = _local_pool(mode, min(workers, len(indices)))
    guard: AbstractContextManager[None] = nullcontext()
    if mode == "process":  # a thread pool's tasks are cancelled by the caller (module docstring)
        guard = cancel_on_signals(lambda signum: _kill_workers(pool))
    try:
        with guard:
            futures: dict[Future[R], int] = {pool.submit(call_portably, fn, tasks[i]): i for i in indices}
            for future in as_completed(futures):
                i = futures[future]
                try:
                    value = future.result()
                except BrokenProcessPool as exc:
                    if retry_lost:
                        lost.append(i)
                        continue
                    yield i, Outcome(error=exc)
                except Exception as exc:  # the task's own failure is its outcome
                    yield i, Outcome(error=exc)
                else:
                    yield i, Outcome(value=value)
    except BaseException:  # interrupted, or the caller stopped iterating: no worker process may go on
        manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it
        _kill_workers(pool)
        pool.shutdown(wait=mode == "thread", cancel_futures=True)
        if manager is not None:
            # Its workers are dead, so it ends at once; joining it closes its wake-up pipe before the
            # interpreter's exit hook writes to it (Python 3.11 races there: "Bad file descriptor").
            manager.join(timeout=MANAGER_JOIN_S)
        raise
    pool.shutdown(wait=True)
    for i in sorted(lost):  # alone, so a dying worker takes only its own task down
        yield from _local_map(fn, tasks, [i], 1, mode, retry_lost=False)


def _isolated(fn: Callable[..., R], args: Sequence[Any]) -> R:
    """``fn(*args)`` in a fresh spawned process (a Ray task in ``process`` mode)."""
    with _process_pool(1) as pool:
        return pool.submit(call_portably, fn, args).result()


def _ray_task(fn: Callable[..., R], args: Sequence[Any], mode: Mode) -> R:
    """The body of every Ray task: the call, isolated in its own process in ``process`` mode."""
    if mode == "process":
        return _isolated(fn, args)
    return call_portably(fn, args)


def _ray_error(exc: BaseException) -> BaseException:
    """The task's own exception inside Ray's wrapper (``RayTaskError.cause``), else Ray's error itself."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _ray_map(
    ray: Any,
    fn: Callable[..., R],
    tasks: Sequence[Sequence[Any]],
    workers: int | None,
    address: str,
    mode: Mode,
    cpus_per_task: float,
) -> Iterator[tuple[int, Outcome[R]]]:
    """Ray tasks, at most ``workers`` in flight; a local instance started here is shut down at the end.

    A local instance keeps its files in :func:`ray_temp_dir`'s folder, removed after its shutdown.
    Left early (the caller stopped iterating, SIGINT, SIGTERM: :func:`cancel_on_signals`), the
    tasks still pending are cancelled, their processes killed, the local instance stopped and its
    folder removed.
    """
    started = not ray.is_initialized()
    temp_dir: Path | None = None
    if started:
        if address == RAY_LOCAL:
            temp_dir = ray_temp_dir()
            try:
                ray.init(include_dashboard=False, logging_level="warning", _temp_dir=str(temp_dir))
            except BaseException:
                ray.shutdown()
                remove_ray_temp_dir(temp_dir)
                raise
        else:
            ray.init(address=address, logging_level="warning")
    pending: dict[Any, int] = {}
    received: list[int] = []
    try:
        # after ray.init, which sets a SIGTERM handler of its own; SystemExit leaves through the finally
        with cancel_on_signals(received.append):
            remote = ray.remote(num_cpus=cpus_per_task, max_retries=0)(_ray_task)
            queue = deque(range(len(tasks)))
            limit = workers or len(tasks)
            while queue or pending:
                while queue and len(pending) < limit:
                    i = queue.popleft()
                    pending[remote.remote(fn, list(tasks[i]), mode)] = i
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        value = ray.get(ref)
                    except Exception as exc:  # the task's failure, or Ray's (a node lost): its outcome
                        yield i, Outcome(error=_ray_error(exc))
                    else:
                        yield i, Outcome(value=value)
    except BaseException:
        if received:  # ray.wait turns the handler's SystemExit into SystemExit(1): the signal's code instead
            raise SystemExit(128 + received[0]) from None
        raise
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)  # the task's process is killed, not asked
        if started:
            ray.shutdown()
        if temp_dir is not None:
            remove_ray_temp_dir(temp_dir)


__all__ = [
    "Outcome",
    "RAY_LOCAL",
    "TaskFailed",
    "call_portably",
    "cancel_on_signals",
    "descendants",
    "kill_tree",
    "probe_ray",
    "ray_temp_dir",
    "refuse_unguarded_main",
    "remove_ray_temp_dir",
    "require_ray",
    "run_tasks",
    "unguarded_main_script",
]
