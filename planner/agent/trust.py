"""Which Slurm jobs the agent may act on, and which holds it may release (docs/design.md §11.6, trust).

The agent usually runs as root (or Slurm's operator), so every call it sends carries more privilege than the
job's owner has: a ``release`` lifts an administrator's hold, an ``update`` gives GPUs past the owner's limits.
A job's comment is written by its owner, so the opt-in alone proves nothing. The rules:

1. **Whose jobs.** A job is managed only if it opted in (its comment, :mod:`planner.agent.slurm_queue`) *and*
   its Slurm user is one of ``--allow-user`` or its account one of ``--allow-account``. With neither option the
   agent allows the user it runs as, and no one else: acting on one's own jobs adds no privilege, whoever runs
   it (root's jobs for root, alice's for alice), and an operator names everyone else. An opted-in job of anyone
   else is left alone (said once per job). Every call names jobs by Slurm job id, never by name.
2. **Whose holds.** An administrator's hold (``Reason=JobHeldAdmin``) is never released, and such a job is left
   out of the round (nothing is planned for it, no call names it). A user hold (``JobHeldUser``) is released
   only when it is the agent's: one it placed (``scontrol uhold`` or ``requeuehold``, recorded in the state
   before the call is sent) or the job's own submission hold (``sbatch --hold``, how a job opts in), adopted
   when the agent first sees the job. A user hold placed after that (the owner pausing a job) is the owner's:
   the job is left out until its owner releases it. A hold record is dropped as soon as Slurm shows the job
   not held, so a later hold is never mistaken for the agent's.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable
from dataclasses import dataclass

from wattplan.planner.agent.slurm_queue import ADMIN_HOLD, USER_HOLD, ManagedJob

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")
"""A Slurm user or account name as the options take it (POSIX portable names, ``@`` for directory users)."""


def own_user() -> str:
    """The name of the user this process runs as (its uid's number when it has no name)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a user or account name (None when it is one)."""
    if not _NAME.fullmatch(name):
        return f"{name[:40]!r} is not a user or account name (letters, digits, _ . @ -; at most 64)"
    return None


@dataclass(frozen=True, slots=True)
class Allowed:
    """The users and accounts whose opted-in jobs the agent acts on (rule 1 of the module docstring)."""

    users: frozenset[str]
    accounts: frozenset[str] = frozenset()

    @classmethod
    def own_user(cls) -> Allowed:
        """The default: the user the agent runs as, and no one else."""
        return cls(frozenset({own_user()}))

    @classmethod
    def of(cls, users: Iterable[str], accounts: Iterable[str]) -> Allowed:
        """From the options; with neither, :meth:`own_user`."""
        u, a = frozenset(users), frozenset(accounts)
        return cls(u, a) if (u or a) else cls.own_user()

    def admits(self, job: ManagedJob) -> bool:
        """The job belongs to an allowed user or account (an empty account matches nothing)."""
        return job.user_name in self.users or (bool(job.account) and job.account in self.accounts)

    def describe(self) -> str:
        """One line for the log: who is allowed."""
        parts = []
        if self.users:
            parts.append("users " + ", ".join(sorted(self.users)))
        if self.accounts:
            parts.append("accounts " + ", ".join(sorted(self.accounts)))
        return " and ".join(parts) or "no one"


def foreign_hold(job: ManagedJob, agent_holds: set[str]) -> str | None:
    """Why a held job's hold is not the agent's to release (rule 2); None when it is, or the job is not held.

    ``agent_holds``: the jobs whose hold the agent placed or adopted (the state's ``holds``). An administrator's
    hold is never the agent's, whatever the record says (the agent holds with ``uhold``).
    """
    if not job.held:
        return None
    if job.reason == ADMIN_HOLD:
        return "held by an administrator (JobHeldAdmin)"
    if job.reason == USER_HOLD and str(job.job_id) in agent_holds:
        return None
    return f"held by its user, not by wattplan ({job.reason})"
