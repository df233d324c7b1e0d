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

Why nothing is applied twice: a round first commits its desired configurations and intended calls, then sends
them one by one, committing each outcome. Each round derives its calls from what Slurm shows *now* against
``desired``, never by replaying stored calls, so after a crash the next round sends only what is still
missing: a release that went through shows a running job, a requeue that went through a pending one. The
``intended`` rows left by a crash are reported (``interrupted``) and marked ``unknown``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
"""


class StoreError(Exception):
    """The state file cannot be used (another schema, or not an agent's state); the message says which file."""


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
    """One agent's SQLite state (module docstring); one writer at a time (the loop)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not an agent state file ({e})") from None
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif row[0] != str(SCHEMA_VERSION):
            raise StoreError(f"{path}: state schema {row[0]}, this agent reads {SCHEMA_VERSION}")

    def bind(self, key: str, value: str) -> None:
        """Tie the state to ``value`` (e.g. the cluster it is about); StoreError when it is tied to another."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
        elif row[0] != value:
            raise StoreError(f"{self.path} is the state of {row[0]}, not of {value}: give another --state")

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # ------------------------------------------------------------------ jobs

    def known_jobs(self) -> dict[str, KnownJob]:
        """Every managed job seen, by id."""
        rows = self.db.execute(
            "SELECT job_id, job_type, total_steps, requested_gpus, arrival_s, steps_done, started_s, restarts,"
            " end_state, ended_s FROM jobs"
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

    def count_restarts(self, job_ids: Iterable[str]) -> None:
        """Add one restart to each job (requeued to move, resize or re-pair)."""
        self.db.executemany("UPDATE jobs SET restarts = restarts + 1 WHERE job_id = ?", [(j,) for j in job_ids])

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

        Returns the calls' row ids, in order; the round's status becomes ``applying``.
        """
        ids: list[int] = []
        with self._transaction():
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

    def action_counts(self) -> dict[str, int]:
        """How many calls ended in each status, over the whole run."""
        return {s: int(n) for s, n in self.db.execute("SELECT status, COUNT(*) FROM actions GROUP BY status")}

    def _transaction(self) -> _Tx:
        return _Tx(self.db)


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
