"""The actions the agent sends to Slurm, grouped into the fewest calls, and applied or only listed.

Each action is one frozen record naming one Slurm job id; :func:`calls` turns a list of them into argv lists
(never shell strings), one call per kind and per identical update, in a fixed order that is always safe:

- ``Cancel``: ``scancel 12 13`` (end for good);
- ``RequeueHold``: ``scontrol requeuehold 12,13`` (a running job back to pending, held);
- ``Hold``: ``scontrol uhold 12,13`` (keep a pending job waiting; a *user* hold even when the agent is root, so
  the agent's holds never look like an administrator's ``JobHeldAdmin``, which it never releases);
- ``Update``: ``scontrol update JobId=12 Gres=gpu:2 NodeList=v100-0 NumNodes=1`` (change a pending job; one call
  per job);
- ``Release``: ``scontrol release 12,13`` (let held jobs start).

Slurm 22.05 accepts a comma-separated job list for ``uhold``, ``release`` and ``requeuehold`` (checked on the test
cluster, ``tests/test_agent_slurm.py``); ``scancel`` takes several ids. ``update JobId=12,13`` works for some
fields and fails for others (``scontrol: error: Invalid job ID 12,13`` with ``NodeList``, seen live), so each
update is its own call. A job submitted with an untyped ``--gres=gpu:N`` refuses a typed ``Gres=gpu:TYPE:N``
(``Invalid GRES specification (with and without type identification)``) and the other way round: the caller
keeps the job's form.
A grouped call that Slurm refuses for some jobs still acts on the others and names each refused job on standard
error (``Job is pending execution for job 13``): :attr:`ActionOutcome.refused` gives those lines by job id.
``update`` changes a pending job's request; move, resize or re-pair a running job with ``RequeueHold``, ``Update``
and ``Release`` in one :func:`apply` (checked on the test cluster), and a pending job nobody holds with ``Hold``,
``Update`` and ``Release``. An update must reach only held jobs: on a running job Slurm 22.05 refuses ``Gres=``
(``Job is no longer pending execution``) but first takes ``NodeList=`` as a shrink, whose resize accounting leaves
the job without a database index under ``accounting_storage/none``, so that every later update or hold of it waits
5 s in slurmctld and is refused (``Job update not available right now, the DB index is being set``).
A requeued job does not start again at once: Slurm keeps it pending (``Reason=BeginTime``) until its credential
may expire (``AuthInfo=...,cred_expire=N`` in ``slurm.conf``, 120 s by default; ``StartTime=now`` does not shorten
it), a restart cost the loop must count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wattplan.planner.agent.commands import Run, run_command
from wattplan.planner.agent.slurm_queue import NODE_NAME

_GRES = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?:[0-9]{1,4}")
_NODELIST = re.compile(r"[A-Za-z0-9_.\-\[\],]{1,1000}")


def _check_job(job: int) -> None:
    if isinstance(job, bool) or not isinstance(job, int) or job < 1:
        raise ValueError(f"a Slurm job id is a whole number >= 1, not {job!r}")


@dataclass(frozen=True, slots=True)
class _JobAction:
    """An action on one Slurm job, named by its id (a whole number >= 1)."""

    job: int

    def __post_init__(self) -> None:
        _check_job(self.job)


@dataclass(frozen=True, slots=True)
class Hold(_JobAction):
    """``scontrol uhold ID``: keep a pending job from starting (a user hold, ``JobHeldUser``)."""


@dataclass(frozen=True, slots=True)
class Release(_JobAction):
    """``scontrol release ID``: let a held job start."""


@dataclass(frozen=True, slots=True)
class RequeueHold(_JobAction):
    """``scontrol requeuehold ID``: put a running batch job back to pending, held."""


@dataclass(frozen=True, slots=True)
class Cancel(_JobAction):
    """``scancel ID``: end the job."""


@dataclass(frozen=True, slots=True)
class Update:
    """``scontrol update JobId=ID [Gres=gpu[:TYPE]:N] [NodeList=...] [NumNodes=N]`` of a pending job.

    ``gres`` is per node (``gpu:2`` or ``gpu:v100:2``); ``nodelist`` a Slurm host list (``v100-[0-1]``); at least
    one of the three is given.
    """

    job: int
    gres: str | None = None
    nodelist: str | None = None
    numnodes: int | None = None

    def __post_init__(self) -> None:
        _check_job(self.job)
        if self.gres is None and self.nodelist is None and self.numnodes is None:
            raise ValueError(f"Update of job {self.job} changes nothing")
        if self.gres is not None and not _GRES.fullmatch(self.gres):
            raise ValueError(f"Update of job {self.job}: gres must be gpu[:TYPE]:N, not {self.gres!r}")
        if self.nodelist is not None and not _NODELIST.fullmatch(self.nodelist):
            raise ValueError(f"Update of job {self.job}: {self.nodelist!r} is not a Slurm host list")
        if self.numnodes is not None and (
            isinstance(self.numnodes, bool) or not isinstance(self.numnodes, int) or self.numnodes < 1
        ):
            raise ValueError(f"Update of job {self.job}: numnodes must be a whole number >= 1")

    def fields(self) -> tuple[str, ...]:
        """The ``Name=value`` arguments after ``JobId=...``."""
        out = []
        if self.gres is not None:
            out.append(f"Gres={self.gres}")
        if self.nodelist is not None:
            out.append(f"NodeList={self.nodelist}")
        if self.numnodes is not None:
            out.append(f"NumNodes={self.numnodes}")
        return tuple(out)


Action = Cancel | RequeueHold | Hold | Update | Release
PHASES: tuple[type[Action], ...] = (Cancel, RequeueHold, Hold, Update, Release)
"""The order calls are sent in, whatever order the actions came in."""
_VERBS: dict[type[Action], str] = {RequeueHold: "requeuehold", Hold: "uhold", Release: "release"}
"""The ``scontrol`` verb of each action that takes a bare job list."""


@dataclass(frozen=True, slots=True)
class SlurmCall:
    """One command and the jobs it acts on."""

    argv: tuple[str, ...]
    jobs: tuple[int, ...]

    def __str__(self) -> str:
        return " ".join(self.argv)  # every token is checked to be free of spaces and quotes

    @property
    def verb(self) -> str:
        """What the call does: ``scontrol``'s sub-command (``requeuehold``, ``update``, ...), else the program.

        A node's ``update ... State=POWER_DOWN`` is ``power_down`` (:func:`power_down_call`), its ``State=POWER_UP``
        ``power_up`` (:func:`power_up_call`).
        """
        if self.argv[:2] == ("scontrol", "update") and self.argv[2:3] and self.argv[2].startswith("NodeName="):
            return "power_up" if self.argv[3:] == ("State=POWER_UP",) else "power_down"
        return self.argv[1] if self.argv[:1] == ("scontrol",) and len(self.argv) > 1 else self.argv[0]


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """What one call did: not run (a dry run, ``returncode`` None) or its exit status and messages."""

    call: SlurmCall
    ran: bool
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """The call ran and Slurm accepted it for every job (exit 0)."""
        return self.ran and self.returncode == 0

    @property
    def refused(self) -> dict[int, str]:
        """``{job id: Slurm's message}`` for each job standard error names (``... for job 13``)."""
        out: dict[int, str] = {}
        for line in self.stderr.splitlines():
            match = re.fullmatch(r"\s*(.*?) for job ([0-9]+)\s*", line)
            if match is not None and int(match.group(2)) in self.call.jobs:
                out[int(match.group(2))] = match.group(1)
        return out

    def __str__(self) -> str:
        if not self.ran:
            return f"would run: {self.call}"
        said = " / ".join(line.strip() for line in self.stderr.splitlines() if line.strip())
        status = "ok" if self.ok else f"exit {self.returncode}: {said or '(no message)'}"
        return f"{self.call}: {status}"


def _check(actions: Sequence[Action]) -> None:
    """At most one action of each kind per job, and a cancelled job gets nothing else."""
    seen: dict[tuple[type, int], Action] = {}
    for action in actions:
        key = (type(action), action.job)
        if key in seen and seen[key] != action:
            raise ValueError(f"two different {type(action).__name__} actions for job {action.job}")
        seen[key] = action
    held = {a.job for a in actions if isinstance(a, Hold)}
    updated = {a.job for a in actions if isinstance(a, Update)}
    both = sorted((held - updated) & {a.job for a in actions if isinstance(a, Release)})
    if both:
        raise ValueError(f"jobs {both} are both held and released with no update between")
    cancelled = {a.job for a in actions if isinstance(a, Cancel)}
    clash = sorted({a.job for a in actions if not isinstance(a, Cancel) and a.job in cancelled})
    if clash:
        raise ValueError(f"jobs {clash} are cancelled and given other actions too")


def _ids(jobs: Iterable[int]) -> str:
    return ",".join(str(j) for j in jobs)


def calls(actions: Iterable[Action]) -> list[SlurmCall]:
    """The fewest calls that carry ``actions``, in :data:`PHASES` order; jobs in each call in first-seen order."""
    todo = list(actions)
    _check(todo)
    out: list[SlurmCall] = []
    for phase in PHASES:
        jobs = list(dict.fromkeys(a.job for a in todo if type(a) is phase))
        if not jobs:
            continue
        if phase is Cancel:
            out.append(SlurmCall(("scancel", *(str(j) for j in jobs)), tuple(jobs)))
        elif phase is Update:
            for a in dict.fromkeys(a for a in todo if isinstance(a, Update)):
                out.append(SlurmCall(("scontrol", "update", f"JobId={a.job}", *a.fields()), (a.job,)))
        else:
            out.append(SlurmCall(("scontrol", _VERBS[phase], _ids(jobs)), tuple(jobs)))
    return out


def power_down_call(node: str) -> SlurmCall:
    """``scontrol update NodeName=NODE State=POWER_DOWN``: Slurm's power saving powers ``node`` down now.

    Slurm 22.05 (checked on the emulated cluster) runs its ``SuspendProgram`` at once on an idle node (``idle%``,
    then ``idle~``); on a node that runs jobs it marks the power-down pending (``mix!``, flag ``POWER_DOWN``) and
    powers it down when they end. A powered-down node is booted again by Slurm when a job is given it.
    """
    return SlurmCall(("scontrol", "update", f"NodeName={_node_name(node)}", "State=POWER_DOWN"), ())


def power_up_call(node: str) -> SlurmCall:
    """``scontrol update NodeName=NODE State=POWER_UP``: Slurm's power saving boots the powered-down ``node`` now.

    Slurm runs its ``ResumeProgram`` for it as for a node it gives a job (``idle#`` while it boots), and the node is
    idle once its slurmd registers; left idle, its ``SuspendTime`` powers it down again.
    """
    return SlurmCall(("scontrol", "update", f"NodeName={_node_name(node)}", "State=POWER_UP"), ())


def _node_name(node: str) -> str:
    """``node`` if it is one host name (no host list, no option); ValueError otherwise."""
    if not isinstance(node, str) or not NODE_NAME.fullmatch(node):
        raise ValueError(f"a node name is a host name, not {node!r:.80}")
    return node


def apply(actions: Iterable[Action], dry_run: bool, run: Run = run_command) -> list[ActionOutcome]:
    """Send ``actions`` as :func:`calls`; with ``dry_run`` nothing runs and each outcome says what would.

    Every call is sent even when an earlier one fails: a refusal (``Job is not pending``) is an outcome with
    Slurm's exit status and message, not an exception.
    """
    outcomes = []
    for call in calls(actions):
        if dry_run:
            outcomes.append(ActionOutcome(call, False, None, "", ""))
            continue
        result = run(call.argv)
        outcomes.append(ActionOutcome(call, True, result.returncode, result.stdout, result.stderr))
    return outcomes
