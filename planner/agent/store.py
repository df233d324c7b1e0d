"""The agent's state in SQLite: what it knows of each managed job, what it wants, what it sent, what it saw.

Tables (one file, ``--state``; WAL journal, ``synchronous=FULL``, so a committed row survives ``kill -9``):

- ``jobs``: every managed job the agent has seen: type, total steps, requested GPUs, arrival (the first
  ``submit_time`` Slurm showed, on the agent's clock: Slurm resets it on a requeue), the last observed steps
  done, and how it ended (``COMPLETED``, ``CANCELLED``, ``FAILED``..., the round it was noticed).
- ``desired``: per job, the configuration the agent last decided (GPU type, count, setting, host job of a pair,
  hosts); rewritten in the same transaction as the round's intended actions.
- ``rounds``: one row per round: start (Unix and agent clock), status (``applying`` until every call has an
  outcome, then ``done``, ``kept`` when the round could not be planned and what runs was kept), the plan's
  objective, energy and solver, a note.
- ``actions``: every Slurm call of a round: ``intended`` when written (before it is sent), then ``ok``,
  ``refused`` or ``failed`` with Slurm's message; ``dry-run`` in a dry run.
- ``observations``: per round and job, the steps done and the energy (J) Prometheus showed over the window.
- ``holds``: the holds the agent owns, by job id: those it placed (``uhold``, ``requeuehold``; recorded in the
  same transaction as the call, before it is sent) and a job's own submission hold (``sbatch --hold``) adopted
  when the agent first sees the job. Only these are ever released (docs/design.md §11.6, trust); a row is
  dropped as soon as Slurm shows the job not held.
- ``learner_feed``: with ``--learn``, per round what the learner was shown (the jobs' and the idle GPUs'
  observations, JSON lists), so a restarted agent believes what it had learned (:mod:`planner.agent.learned_state`);
  the latest :data:`LEARNER_FEED_ROUNDS` rounds.
- ``energy_windows``: with an energy budget (:mod:`planner.agent.energy_budget`), the whole cluster's energy (J)
  over each window ``[start_s, end_s]`` (agent clock) the budget charged, back to back from the budget's origin
  (``meta`` ``budget_origin_s``: the first round's time; ``budget_period_s`` and ``budget_energy_j``: the budget).
  A window is keyed by its end and written once (``INSERT OR IGNORE``), and the next one starts where the last
  ends, so a crash loses nothing and a restarted agent counts nothing twice.

One agent per state file: :class:`AgentStore` takes an exclusive lock on ``STATE.lock`` (its pid written in
it) for as long as it is open, so a second agent on the same file is refused by name and pid; the kernel drops
the lock when the process dies, ``kill -9`` included, and a forked solver worker does not inherit it. A state
file another process keeps locked (an operator's ``sqlite3`` shell in a transaction) is waited on for
``busy_timeout_s`` and then is a :class:`StoreBusy`; a damaged one (not a database, corrupt) a
:class:`StoreError`. Both are operator-facing errors (exit 2) that say what to do, never a traceback.

Why nothing is applied twice: a round first commits its desired configurations and intended calls, then sends
them one by one, committing each outcome. Each round derives its calls from what Slurm shows *now* against
``desired``, never by replaying stored calls, so after a crash the next round sends only what is still
missing: a release that went through shows a running job, a requeue that went through a pending one. The
``intended`` rows left by a crash are reported (``interrupted``) and marked ``unknown``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.problems import InputError, Problem

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, job_type TEXT NOT NULL, total_steps REAL NOT NULL, requested_gpus INTEGER NOT NULL,
    arrival_s REAL NOT NULL, first_seen_round INTEGER NOT NULL, steps_done REAL NOT NULL DEFAULT 0,
    steps_seen_s REAL, started_s REAL, restarts INTEGER NOT NULL DEFAULT 0,
    end_state TEXT, end_reason TEXT, ended_round INTEGER, ended_s REAL
);
CREATE TABLE IF NOT EXISTS desired (
    job_id TEXT PRIMARY KEY, round INTEGER NOT NULL, state TEXT NOT NULL, gpu_type TEXT, gpus INTEGER,
    setting INTEGER, unit TEXT, host_job TEXT, hosts TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS rounds (
    round INTEGER PRIMARY KEY, started_unix REAL NOT NULL, started_s REAL NOT NULL, status TEXT NOT NULL,
    objective TEXT, solver TEXT, plan_status TEXT, energy_j REAL, running INTEGER, waiting INTEGER,
    delta REAL, note TEXT NOT NULL DEFAULT '', overhead_s REAL, solve_s REAL
);
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, round INTEGER NOT NULL, seq INTEGER NOT NULL, argv TEXT NOT NULL,
    jobs TEXT NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', sent_unix REAL
);
CREATE TABLE IF NOT EXISTS observations (
    round INTEGER NOT NULL, job_id TEXT NOT NULL, steps_done REAL, energy_j REAL, window_s REAL,
    PRIMARY KEY (round, job_id)
);
CREATE TABLE IF NOT EXISTS holds (job_id TEXT PRIMARY KEY, round INTEGER NOT NULL, how TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS energy_windows (end_s REAL PRIMARY KEY, start_s REAL NOT NULL, energy_j REAL NOT NULL);
CREATE TABLE IF NOT EXISTS learner_feed (round INTEGER PRIMARY KEY, jobs TEXT NOT NULL, gpus TEXT NOT NULL);
"""
_ADDED_COLUMNS = (
    ("jobs", "stall_restarts", "INTEGER NOT NULL DEFAULT 0"),
    ("jobs", "ref_finish_s", "REAL"),
    ("jobs", "ref_energy_j", "REAL"),
    ("rounds", "budget_share_j", "REAL"),
)
"""Columns added since schema 1 was first written: added in place to an older file (nothing else changes)."""
LEARNER_FEED_ROUNDS = 5000
"""The rounds of learner feed the state keeps, the latest (about three weeks of 6-minute rounds; at 50 running jobs
about 60 MB): a restarted agent takes back what the learner was shown over them."""
BUSY_TIMEOUT_S = 10.0
"""How long one statement waits on a state file another process keeps locked before :class:`StoreBusy`."""


class StoreError(InputError):
    """The state file cannot be used (in use, damaged, another schema or cluster); the message says what to do.

    An :class:`InputError` on ``--state``: the command line reports it as bad input (exit 2), never as a bug.
    """

    def __init__(self, message: str, code: str = "bad-state"):
        super().__init__("--state", [Problem(code, "--state", message)])
        self.message = message

    def __str__(self) -> str:
        return self.message


class StoreBusy(StoreError):
    """Another process kept the state file locked for longer than the store waits (``busy_timeout_s``)."""


def _is_busy(err: sqlite3.Error) -> bool:
    text = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _store_error(path: Path, err: sqlite3.Error, waited_s: float) -> StoreError:
    """The operator-facing error for an SQLite failure on ``path``: busy, or damaged."""
    if _is_busy(err):
        return StoreBusy(
            f"{path} is locked by another process (SQLite: {err}) and stayed locked for {waited_s:g} s: close "
            "whatever holds it open in a transaction (an sqlite3 shell, a backup) and try again",
            "state-busy",
        )
    return StoreError(
        f"{path} cannot be used as the agent's state (SQLite: {err}): it is damaged or not an agent state file; "
        "move it aside and start with a fresh --state (jobs already running keep running; the new state "
        "sees them as new jobs)",
        "bad-state",
    )


class _Guarded:
    """An SQLite connection whose errors become :class:`StoreBusy` or :class:`StoreError` naming the file."""

    def __init__(self, db: sqlite3.Connection, path: Path, waited_s: float):
        self.raw = db
        self.path = path
        self.waited_s = waited_s

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self.raw.execute(sql, params)
        except sqlite3.Error as err:
            raise _store_error(self.path, err, self.waited_s) from None

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        try:
            return self.raw.executemany(sql, rows)
        except sqlite3.Error as err:
            raise _store_error(self.path, err, self.waited_s) from None

    def executescript(self, sql: str) -> sqlite3.Cursor:
        try:
            return self.raw.executescript(sql)
        except sqlite3.Error as err:
            raise _store_error(self.path, err, self.waited_s) from None

    def close(self) -> None:
        self.raw.close()


def lock_path(path: Path) -> Path:
    """The lock file of the state file ``path`` (``STATE.lock``, next to it)."""
    return path.with_name(path.name + ".lock")


_LOCK_FDS: set[int] = set()
"""The descriptors of the state locks this process holds; a forked child closes its copies at once."""


def _drop_locks_in_child() -> None:
    """In a forked child (the solver worker), close the inherited lock descriptors.

    A ``flock`` belongs to the open file, which a fork shares: a worker that kept its copy would keep the lock
    after a ``kill -9`` of the agent, and the next agent out until it died (seen live). Closing the child's copy
    leaves the parent's lock in place; a child started by ``exec`` never has one (the descriptor is close-on-exec).
    """
    for fd in _LOCK_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_FDS.clear()


os.register_at_fork(after_in_child=_drop_locks_in_child)


def _in_use(path: Path, lock: Path, pid: str) -> StoreError:
    who = f"pid {pid}" if pid.isdigit() else "pid unknown"
    return StoreError(
        f"{path} is in use by another wattplan agent ({who}, lock {lock}): one agent per state file; stop that "
        "agent first, or give this one another --state",
        "state-in-use",
    )


def _take_lock(path: Path) -> int:
    """An exclusive ``flock`` on ``path``'s lock file, held until :func:`_release_lock`; StoreError if taken.

    The kernel drops it when the process dies; a second store of the same state in this process is refused too
    (each open of the file is its own lock). ``wattplan cluster up`` and ``down`` test the same lock
    (:func:`planner.cluster.owned.agent_using`).
    """
    lock = lock_path(path)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        if err.errno in (errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK):
            raise _in_use(path, lock, pid) from None
        raise
    _LOCK_FDS.add(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _release_lock(fd: int) -> None:
    """Drop the lock :func:`_take_lock` took (closing its descriptor)."""
    _LOCK_FDS.discard(fd)
    os.close(fd)


def snapshot(source: Path, target: Path, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
    """Copy the state file ``source`` to ``target`` as one consistent snapshot (SQLite's backup API).

    A plain file copy misses what is still in the write-ahead log (``STATE-wal``) and may catch a checkpoint
    half-written; the backup reads the database as one transaction sees it, whatever a running agent does.
    """
    src: sqlite3.Connection | None = None
    dst: sqlite3.Connection | None = None
    try:
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, timeout=busy_timeout_s)
        dst = sqlite3.connect(str(target))
        src.backup(dst)
    except sqlite3.Error as err:
        raise _store_error(source, err, busy_timeout_s) from None
    finally:
        for db in (src, dst):
            if db is not None:
                db.close()


@dataclass(frozen=True, slots=True)
class KnownJob:
    """A managed job as the store remembers it (times on the agent's clock, s)."""

    job_id: str
    job_type: str
    total_steps: float
    requested_gpus: int
    arrival_s: float
    steps_done: float
    started_s: float | None
    restarts: int
    end_state: str | None
    ended_s: float | None
    steps_seen_s: float | None = None
    """When ``steps_done`` was last set (agent clock, s): observed, or estimated up to then."""

    @property
    def ended(self) -> bool:
        """The job has left the queue for good."""
        return self.end_state is not None


@dataclass(frozen=True, slots=True)
class Desired:
    """The configuration the agent decided for a job: ``state`` ``run`` (with the rest) or ``wait``."""

    job_id: str
    round: int
    state: str
    gpu_type: str | None = None
    gpus: int | None = None
    setting: int | None = None
    unit: str | None = None
    host_job: str | None = None
    hosts: tuple[str, ...] = ()


class AgentStore:
    """One agent's SQLite state (module docstring); one agent per file, held by a lock while it is open.

    ``exclusive``: take the lock (False only for a private copy, such as a dry run's snapshot);
    ``busy_timeout_s``: how long a statement waits on a lock another process holds (then :class:`StoreBusy`).
    """

    def __init__(
        self, path: Path, exclusive: bool = True, busy_timeout_s: float = BUSY_TIMEOUT_S, durable: bool = True
    ):
        self.path = path
        self.durable = durable
        """Commit to the disk before going on (``synchronous=FULL``); False only for a replay's throwaway state,
        which no crash needs to find again (``synchronous=OFF``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _take_lock(path) if exclusive else None
        try:
            self.db = _Guarded(
                sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout_s), path, busy_timeout_s
            )
        except sqlite3.Error as err:
            self._unlock()
            raise _store_error(path, err, busy_timeout_s) from None
        try:
            self._open()
        except StoreError:
            self.close()
            raise

    def _open(self) -> None:
        """Journal settings, tables (added columns included) and the schema check."""
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL" if self.durable else "PRAGMA synchronous=OFF")
        self.db.executescript(_SCHEMA)
        for table, column, kind in _ADDED_COLUMNS:
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})").fetchall()}
            if column not in have:
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif row[0] != str(SCHEMA_VERSION):
            raise StoreError(
                f"{self.path}: state schema {row[0]}, this agent reads {SCHEMA_VERSION}: give another --state",
                "bad-state",
            )

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            _release_lock(self._lock_fd)
            self._lock_fd = None

    def bind(self, key: str, value: str) -> None:
        """Tie the state to ``value`` (e.g. the cluster it is about); StoreError when it is tied to another."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
        elif row[0] != value:
            raise StoreError(
                f"{self.path} is the state of {row[0]}, not of {value}: give another --state", "state-of-other"
            )

    def close(self) -> None:
        """Close the database and drop the lock."""
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
        self._unlock()

    # ------------------------------------------------------------------ jobs

    def known_jobs(self) -> dict[str, KnownJob]:
        """Every managed job seen, by id."""
        rows = self.db.execute(
            "SELECT job_id, job_type, total_steps, requested_gpus, arrival_s, steps_done, started_s, restarts,"
            " end_state, ended_s, steps_seen_s FROM jobs"
        ).fetchall()
        return {r[0]: KnownJob(*r) for r in rows}

    def add_job(
        self, job_id: str, job_type: str, total_steps: float, requested: int, arrival_s: float, rnd: int
    ) -> None:
        """Remember a newly seen managed job (nothing when it is known)."""
        self.db.execute(
            "INSERT OR IGNORE INTO jobs (job_id, job_type, total_steps, requested_gpus, arrival_s, first_seen_round)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (job_id, job_type, total_steps, requested, arrival_s, rnd),
        )

    def set_progress(self, steps: Mapping[str, float], now_s: float) -> None:
        """Record each job's observed steps done (never lowered: a checkpoint cannot undo steps it reported)."""
        self.db.executemany(
            "UPDATE jobs SET steps_done = MAX(steps_done, ?), steps_seen_s = ? WHERE job_id = ?",
            [(float(v), now_s, k) for k, v in steps.items()],
        )

    def mark_started(self, job_ids: Iterable[str], now_s: float) -> None:
        """Set the first start of jobs seen running for the first time."""
        self.db.executemany(
            "UPDATE jobs SET started_s = ? WHERE job_id = ? AND started_s IS NULL", [(now_s, j) for j in job_ids]
        )

    def stall_restarts(self, job_id: str) -> int:
        """How many times the job was requeued for making no progress (or drawing no energy); 0 if unknown."""
        row = self.db.execute("SELECT stall_restarts FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return 0 if row is None else int(row[0])

    def set_stall_restarts(self, job_id: str, count: int) -> None:
        """Persist the job's stall-restart count (the cap outlives the agent process)."""
        self.db.execute("UPDATE jobs SET stall_restarts = ? WHERE job_id = ?", (count, job_id))

    # ------------------------------------------------------------------ holds the agent owns

    def agent_holds(self) -> set[str]:
        """The jobs whose current hold is the agent's (placed or adopted at opt-in), by job id."""
        return {r[0] for r in self.db.execute("SELECT job_id FROM holds").fetchall()}

    def adopt_holds(self, job_ids: Iterable[str], rnd: int) -> None:
        """Record the submission holds of jobs the agent sees for the first time (``sbatch --hold``)."""
        self.db.executemany("INSERT OR IGNORE INTO holds VALUES (?, ?, 'submission')", [(j, rnd) for j in job_ids])

    def drop_holds(self, job_ids: Iterable[str]) -> None:
        """Forget holds that are gone (Slurm shows the job not held): a later hold is not the agent's."""
        self.db.executemany("DELETE FROM holds WHERE job_id = ?", [(j,) for j in job_ids])

    def drop_released_holds(self, job_ids: Iterable[str]) -> None:
        """Forget the agent's ``uhold`` of jobs it has released: a later hold is not the agent's.

        Only a ``uhold``: it held a pending job, which the release frees at once. A ``requeuehold`` may still be
        under way when its release is accepted (Slurm shows the job ``COMPLETING`` for seconds), and a submission
        hold is kept as before; both are forgotten once a round sees the job not held (:meth:`drop_holds`).
        """
        self.db.executemany("DELETE FROM holds WHERE job_id = ? AND how = 'uhold'", [(j,) for j in job_ids])

    def count_restarts(self, job_ids: Iterable[str]) -> None:
        """Add one restart to each job (requeued to move, resize or re-pair)."""
        self.db.executemany("UPDATE jobs SET restarts = restarts + 1 WHERE job_id = ?", [(j,) for j in job_ids])

    def set_reference(self, runs: Mapping[str, tuple[float, float] | None]) -> None:
        """Each job's run in the agent's reference (Slurm alone, ``fifo-max``): ``(finish time (s), GPU energy (J))``.

        None: the reference cannot run the job. Written for every job given (the reference over more jobs seen is
        the better one); ``agent report`` and the metrics compare the jobs' own with it.
        """
        self.db.executemany(
            "UPDATE jobs SET ref_finish_s = ?, ref_energy_j = ? WHERE job_id = ?",
            [(None, None, j) if r is None else (r[0], r[1], j) for j, r in runs.items()],
        )

    def end_job(self, job_id: str, state: str, reason: str, rnd: int, now_s: float) -> None:
        """A job has left the queue for good (its last Slurm state and why)."""
        self.db.execute(
            "UPDATE jobs SET end_state = ?, end_reason = ?, ended_round = ?, ended_s = ? WHERE job_id = ?"
            " AND end_state IS NULL",
            (state, reason, rnd, now_s, job_id),
        )
        self.db.execute("DELETE FROM desired WHERE job_id = ?", (job_id,))

    # ------------------------------------------------------------------ desired configuration and calls

    def desired(self) -> dict[str, Desired]:
        """The configuration last decided for every job still wanted."""
        rows = self.db.execute(
            "SELECT job_id, round, state, gpu_type, gpus, setting, unit, host_job, hosts FROM desired"
        ).fetchall()
        return {r[0]: Desired(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], tuple(json.loads(r[8]))) for r in rows}

    def begin_round(self, rnd: int, started_unix: float, started_s: float) -> None:
        """Open round ``rnd`` (status ``planning``)."""
        self.db.execute(
            "INSERT OR REPLACE INTO rounds (round, started_unix, started_s, status) VALUES (?, ?, ?, 'planning')",
            (rnd, started_unix, started_s),
        )

    def next_round(self) -> int:
        """The index the next round takes (0 for a fresh state)."""
        row = self.db.execute("SELECT MAX(round) FROM rounds").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def commit_intent(
        self,
        rnd: int,
        desired: Sequence[Desired],
        calls: Sequence[tuple[Sequence[str], Sequence[int]]],
        status: str = "intended",
    ) -> list[int]:
        """In one transaction: replace the desired configurations of ``desired``'s jobs and store the calls.

        The jobs of every hold the calls place (``uhold``, ``requeuehold``) are recorded as the agent's holds in
        the same transaction, before anything is sent. Returns the calls' row ids, in order; the round's status
        becomes ``applying``.
        """
        ids: list[int] = []
        with self._transaction():
            for argv, jobs in calls:
                if tuple(argv[:2]) in (("scontrol", "uhold"), ("scontrol", "requeuehold")):
                    self.db.executemany(
                        "INSERT OR REPLACE INTO holds VALUES (?, ?, ?)", [(str(j), rnd, argv[1]) for j in jobs]
                    )
            for d in desired:
                self.db.execute(
                    "INSERT OR REPLACE INTO desired VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        d.job_id,
                        d.round,
                        d.state,
                        d.gpu_type,
                        d.gpus,
                        d.setting,
                        d.unit,
                        d.host_job,
                        json.dumps(list(d.hosts)),
                    ),
                )
            for seq, (argv, jobs) in enumerate(calls):
                cur = self.db.execute(
                    "INSERT INTO actions (round, seq, argv, jobs, status) VALUES (?, ?, ?, ?, ?)",
                    (rnd, seq, json.dumps(list(argv)), json.dumps(list(jobs)), status),
                )
                ids.append(int(cur.lastrowid or 0))
            self.db.execute("UPDATE rounds SET status = 'applying' WHERE round = ?", (rnd,))
        return ids

    def action_outcome(self, action_id: int, status: str, detail: str) -> None:
        """Record one call's outcome (``ok``, ``refused``, ``failed``)."""
        self.db.execute(
            "UPDATE actions SET status = ?, detail = ?, sent_unix = ? WHERE id = ?",
            (status, detail[:2000], time.time(), action_id),
        )

    def finish_round(self, rnd: int, status: str, **fields: Any) -> None:
        """Close a round with its status and summary fields (columns of ``rounds``)."""
        allowed = {
            "objective",
            "solver",
            "plan_status",
            "energy_j",
            "running",
            "waiting",
            "delta",
            "note",
            "overhead_s",
            "solve_s",
            "budget_share_j",
        }
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown round fields {sorted(bad)}")
        cols = ", ".join(f"{k} = ?" for k in fields)
        sets = f"status = ?{', ' + cols if cols else ''}"
        self.db.execute(f"UPDATE rounds SET {sets} WHERE round = ?", (status, *fields.values(), rnd))  # noqa: S608

    def interrupted(self) -> list[tuple[int, list[str]]]:
        """Calls a crash left without an outcome: ``[(round, argv)]``; they are marked ``unknown`` here."""
        rows = self.db.execute("SELECT id, round, argv FROM actions WHERE status = 'intended' ORDER BY id").fetchall()
        with self._transaction():
            self.db.execute("UPDATE actions SET status = 'unknown' WHERE status = 'intended'")
            self.db.execute("UPDATE rounds SET status = 'interrupted' WHERE status IN ('planning', 'applying')")
        return [(int(r[1]), json.loads(r[2])) for r in rows]

    def add_observations(self, rnd: int, rows: Iterable[tuple[str, float | None, float | None, float]]) -> None:
        """Per job of round ``rnd``: steps done, energy over the window (J), window length (s)."""
        self.db.executemany("INSERT OR REPLACE INTO observations VALUES (?, ?, ?, ?, ?)", [(rnd, *r) for r in rows])

    def add_learner_feed(self, rnd: int, jobs: Sequence[Mapping[str, Any]], gpus: Sequence[Mapping[str, Any]]) -> None:
        """What the learner was shown in round ``rnd``: the jobs' and the idle GPUs' observations (JSON objects).

        Feeds of rounds :data:`LEARNER_FEED_ROUNDS` or more before ``rnd`` are dropped.
        """
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO learner_feed VALUES (?, ?, ?)", (int(rnd), json.dumps(jobs), json.dumps(gpus))
            )
            self.db.execute("DELETE FROM learner_feed WHERE round <= ?", (int(rnd) - LEARNER_FEED_ROUNDS,))

    def learner_feeds(self) -> list[tuple[int, Any, Any]]:
        """Every round's feed of the learner in round order: ``(round, jobs, gpus)``, parsed JSON.

        The caller checks their shape (:func:`planner.agent.learned_state.restored_learner`).
        """
        rows = self.db.execute("SELECT round, jobs, gpus FROM learner_feed ORDER BY round").fetchall()
        feeds = []
        for rnd, jobs, gpus in rows:
            try:
                feeds.append((int(rnd), json.loads(jobs), json.loads(gpus)))
            except (TypeError, ValueError) as err:
                raise StoreError(f"{self.path}: learner_feed round {rnd} is not JSON ({err})", "bad-state") from None
        return feeds

    # ------------------------------------------------------------------ the energy budget's ledger

    def budget_origin(self, first_s: float, period_s: float, energy_j: float) -> float:
        """The energy budget's origin (agent clock, s): the one the state keeps, else ``first_s``, kept from now on.

        The period (s) and the budget (J) are recorded as given (the latest), for ``agent report``.
        """
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('budget_origin_s', ?)", (repr(float(first_s)),))
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('budget_period_s', ?)", (repr(float(period_s)),))
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('budget_energy_j', ?)", (repr(float(energy_j)),))
        return float(self.db.execute("SELECT value FROM meta WHERE key = 'budget_origin_s'").fetchone()[0])

    def charge_energy(self, start_s: float, end_s: float, energy_j: float) -> None:
        """Record the cluster's energy (J) over ``[start_s, end_s]`` (agent clock); a window already kept stays."""
        self.db.execute("INSERT OR IGNORE INTO energy_windows VALUES (?, ?, ?)", (end_s, start_s, energy_j))

    def charged_to_s(self) -> float | None:
        """The end of the last window charged (agent clock, s); None: none yet."""
        row = self.db.execute("SELECT MAX(end_s) FROM energy_windows").fetchone()
        return None if row[0] is None else float(row[0])

    def energy_windows(self, after_s: float) -> list[tuple[float, float, float]]:
        """The windows charged that end after ``after_s``: ``(start_s, end_s, energy_j)`` in time order."""
        rows = self.db.execute(
            "SELECT start_s, end_s, energy_j FROM energy_windows WHERE end_s > ? ORDER BY end_s", (after_s,)
        ).fetchall()
        return [(float(a), float(b), float(e)) for a, b, e in rows]

    def action_counts(self) -> dict[str, int]:
        """How many calls ended in each status, over the whole run."""
        return {s: int(n) for s, n in self.db.execute("SELECT status, COUNT(*) FROM actions GROUP BY status")}

    def _transaction(self) -> _Tx:
        return _Tx(self.db)


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception)."""

    def __init__(self, db: _Guarded):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        elif self.db.raw.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.raw.execute("ROLLBACK")
