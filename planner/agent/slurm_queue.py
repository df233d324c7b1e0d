"""Strict readers of Slurm's jobs and nodes in every JSON generation of :mod:`planner.agent.slurm_schema`.

Jobs come from ``squeue --json``, nodes from ``sinfo --json`` on 22.05 (OpenAPI v0.0.38, the default here) and from
``scontrol show nodes --json`` later.

How a job opts in: its Slurm comment (``sbatch --comment=...``) is exactly

    wattplan:type=<job type>;steps=<total steps>

``type`` names the job's profiled job type (any text but ``;``, ``=`` and control characters, surrounding
spaces dropped) and ``steps`` its total training steps (a whole number >= 1); both keys appear once, in any order,
and no other key is allowed. A job whose comment does not start with ``wattplan:`` is not managed: the agent
reads it only to count it and never sends it an action. A comment that starts with ``wattplan:`` but breaks the
syntax is a problem naming the job id and ``comment``; that job is left alone, the others are still read.

``squeue --json`` lists finished jobs too (``COMPLETED``, ``CANCELLED``... for ``MinJobAge`` seconds);
:attr:`ManagedJob.state` is Slurm's ``job_state`` as printed, so the caller picks the states it acts on.

Every field a managed job needs is checked for its type; a bad one is a :class:`Problem` whose path names the job
and the field (``job 17.tres_per_node``), never a traceback. A document that is not JSON, is of another generation
than the one asked for (``meta.plugin``) or carries Slurm ``errors`` is a :class:`SlurmError` naming the generation
found, the one expected and the Slurm release.

The data_parser generations' job states are lists (the base state and its flags); :func:`job_state` folds one
into the one word 22.05 printed, as Slurm's ``job_state_string`` does: the first flag of :data:`STATE_FLAGS` that
is present, else the base state.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from wattplan.planner.agent.commands import Run, SlurmError, first_line, run_command
from wattplan.planner.agent.slurm_schema import LEGACY, Generation
from wattplan.planner.contracts.problems import Problem

OPT_IN_PREFIX = "wattplan:"
QUEUE_COMMAND = LEGACY.queue_command
"""22.05's ``squeue --json`` (each generation's own: :attr:`Generation.queue_command`)."""
NODES_COMMAND = LEGACY.nodes_command
"""22.05's ``sinfo --json`` (each generation's own: :attr:`Generation.nodes_command`)."""
STATE_FLAGS = (
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
)
"""A job's state flags in the order Slurm's ``job_state_string`` tests them: the first present names the state."""
JOB_BASE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)
"""A job's base states (exactly one in a data_parser ``job_state`` list)."""
NODE_BASE_STATES = frozenset({"IDLE", "DOWN", "ALLOCATED", "ERROR", "MIXED", "FUTURE", "UNKNOWN"})
"""A node's base states (exactly one in a data_parser ``state`` list)."""

NodeStateName = Literal["idle", "mixed", "allocated", "drained", "down", "off"]
USER_HOLD = "JobHeldUser"
"""``state_reason`` of a user hold: ``sbatch --hold``, ``scontrol uhold`` and ``requeuehold`` (root's too, seen on
22.05.8), and a user's own ``scontrol hold``."""
ADMIN_HOLD = "JobHeldAdmin"
"""``state_reason`` of an administrator's hold (``scontrol hold`` by root or an operator): never the agent's (it
holds with ``uhold``), never released by it."""
HELD_REASONS = frozenset({USER_HOLD, ADMIN_HOLD})
"""``state_reason`` of a pending job that waits on ``scontrol release``."""


@dataclass(frozen=True, slots=True)
class OptIn:
    """What a managed job's comment declares: its job type and total steps."""

    job_type: str
    total_steps: int


@dataclass(frozen=True, slots=True)
class ManagedJob:
    """One job that opted in, as ``squeue --json`` shows it.

    ``gpus_per_node`` and ``gpu_type`` come from ``tres_per_node`` (``--gres=gpu[:TYPE]:N``); ``node_list`` is
    Slurm's host list (``v100-[0-1]``, empty while pending); ``start_time_s`` is None while pending (Slurm then
    holds an estimate there); times are Unix seconds. ``user_name`` and ``account`` say whose job it is: the agent
    acts only on jobs of the users and accounts the operator allows (:mod:`planner.agent.trust`).
    """

    job_id: int
    name: str
    state: str
    held: bool
    reason: str
    user_name: str
    account: str
    partition: str
    node_list: str
    node_count: int
    gpus_per_node: int
    gpu_type: str | None
    submit_time_s: int
    start_time_s: int | None
    job_type: str
    total_steps: int
    required_nodes: str = ""
    """The host list a pending job asks for (``NodeList=`` of its last update; empty: any)."""


@dataclass(frozen=True, slots=True)
class QueueRead:
    """The managed jobs of one ``squeue --json``, the problems found, and how many jobs were not managed."""

    jobs: tuple[ManagedJob, ...]
    problems: tuple[Problem, ...]
    unmanaged: int
    listed: frozenset[int] = frozenset()
    """Every job id the document lists, read or not: a job with a problem is still in the queue."""


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node of ``sinfo --json``: ``state`` folded to six words, ``slurm_state`` as Slurm said it."""

    name: str
    state: NodeStateName
    slurm_state: str
    gpus: int
    gpu_type: str | None
    features: tuple[str, ...]
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodesRead:
    """The nodes of one ``sinfo --json`` and the problems found."""

    nodes: tuple[NodeState, ...]
    problems: tuple[Problem, ...]


# ---------------------------------------------------------------------------------------------- opt-in comment

_FORBIDDEN_IN_TYPE = re.compile(r"[;=\x00-\x1f\x7f]")


def parse_opt_in(comment: str) -> OptIn | None:
    """None for a comment that does not opt in; the declared fields; ValueError (the reason) if malformed."""
    if not comment.startswith(OPT_IN_PREFIX):
        return None
    fields: dict[str, str] = {}
    for part in comment[len(OPT_IN_PREFIX) :].split(";"):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{part.strip()!r} is not key=value")
        if key not in ("type", "steps"):
            raise ValueError(f"unknown key {key!r} (allowed: type, steps)")
        if key in fields:
            raise ValueError(f"key {key!r} given twice")
        fields[key] = value.strip()
    missing = [k for k in ("type", "steps") if k not in fields]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    job_type, steps = fields["type"], fields["steps"]
    if not job_type or _FORBIDDEN_IN_TYPE.search(job_type):
        raise ValueError("type must be non-empty text without ';', '=' or control characters")
    if not re.fullmatch(r"[0-9]{1,18}", steps) or int(steps) < 1:
        raise ValueError(f"steps must be a whole number >= 1, not {steps[:40]!r}")
    return OptIn(job_type, int(steps))


def opt_in_comment(job_type: str, total_steps: int) -> str:
    """The comment that makes a job managed (``sbatch --comment=...``); checked by :func:`parse_opt_in`."""
    comment = f"{OPT_IN_PREFIX}type={job_type};steps={total_steps}"
    parse_opt_in(comment)
    return comment


# ---------------------------------------------------------------------------------------------- field access


MAX_INTEGER = 2**63 - 1
"""The largest whole number read from Slurm's JSON: Slurm's own counters are 64-bit, and the agent's SQLite state
stores them as 64-bit integers (a larger one would fail there, mid-round)."""


class _Record:
    """Typed access to one JSON object's fields; each bad field adds one problem naming ``where`` and the field.

    ``generation`` says whether counts are number objects and states lists (:mod:`planner.agent.slurm_schema`).
    """

    def __init__(self, record: dict[str, Any], where: str, problems: list[Problem], generation: Generation = LEGACY):
        self.record = record
        self.where = where
        self.problems = problems
        self.generation = generation
        self.bad = False

    def problem(self, field: str, message: str) -> None:
        self.bad = True
        self.problems.append(Problem("slurm-field", f"{self.where}.{field}", message))

    def text(self, field: str) -> str:
        value = self.record.get(field)
        if field not in self.record:
            self.problem(field, "missing")
        elif not isinstance(value, str):
            self.problem(field, f"must be text, not {type(value).__name__}")
        else:
            return value
        return ""

    def integer(self, field: str, minimum: int = 0) -> int:
        value = self.record.get(field)
        if field not in self.record:
            self.problem(field, "missing")
        elif isinstance(value, bool) or not isinstance(value, int):
            self.problem(field, f"must be a whole number, not {type(value).__name__}")
        elif value < minimum:
            self.problem(field, f"must be >= {minimum}, not {value}")
        elif value > MAX_INTEGER:
            self.problem(field, f"must be at most {MAX_INTEGER} (a 64-bit count), not a {len(str(value))}-digit number")
        else:
            return value
        return 0

    def count(self, field: str) -> int:
        """A whole number >= 0: plain (v0.0.38) or a number object (data_parser; unset reads 0, infinite is bad)."""
        if not self.generation.data_parser:
            return self.integer(field)
        value = self.record.get(field)
        if field not in self.record:
            self.problem(field, "missing")
        elif not isinstance(value, dict) or not {"set", "infinite", "number"} <= value.keys():
            self.problem(field, "must be a number object {set, infinite, number}")
        elif value["infinite"] is True:
            self.problem(field, "is infinite")
        elif value["set"] is not True:
            return 0
        else:
            inner = _Record(value, f"{self.where}.{field}", self.problems)
            number = inner.integer("number")
            self.bad = self.bad or inner.bad
            return number
        return 0

    def state(self, field: str, bases: frozenset[str]) -> tuple[str, tuple[str, ...]]:
        """``(base state, flags)``: v0.0.38's text as given with no flags, a data_parser list split in two."""
        if not self.generation.data_parser:
            return self.text(field), ()
        words = self.texts(field)
        found = [w for w in words if w in bases]
        if self.bad and not words:
            return "", ()
        if len(found) != 1:
            self.problem(field, f"must hold exactly one base state, not {list(words)[:6]!r}")
            return "", ()
        return found[0], tuple(w for w in words if w != found[0])

    def texts(self, field: str) -> tuple[str, ...]:
        value = self.record.get(field)
        if field not in self.record:
            self.problem(field, "missing")
        elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(field, "must be a list of text")
        else:
            return tuple(value)
        return ()


def job_state(base: str, flags: tuple[str, ...]) -> str:
    """One word for a job's state, as 22.05 printed it: the first of :data:`STATE_FLAGS` in ``flags``, else ``base``."""
    return next((f for f in STATE_FLAGS if f in flags), base)


def _plugin(meta: Any, generation: Generation) -> tuple[str | None, str | None]:
    """``(generation the document names, Slurm release)`` from its ``meta`` (either shape); None where absent."""
    if not isinstance(meta, dict):
        return None, None
    plugin = meta.get("plugin")
    key = "data_parser" if generation.data_parser else "type"
    other = "type" if generation.data_parser else "data_parser"  # the other shape: name what it is
    kind = (plugin.get(key) or plugin.get(other) or None) if isinstance(plugin, dict) else None
    slurm = meta.get("slurm") or meta.get("Slurm")
    release = slurm.get("release") if isinstance(slurm, dict) else None
    return (kind if isinstance(kind, str) else None), (release if isinstance(release, str) else None)


def _document(text: str, what: str, key: str, generation: Generation = LEGACY) -> list[Any]:
    """The ``key`` list of one Slurm JSON document, after checking it is JSON of ``generation``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise SlurmError(f"`{what}` did not print JSON: {err}") from None
    except RecursionError:
        raise SlurmError(f"`{what}` printed JSON nested too deeply to read") from None
    if not isinstance(doc, dict):
        raise SlurmError(f"`{what}` printed JSON that is not an object")
    kind, release = _plugin(doc.get("meta"), generation)
    if kind != generation.plugin:
        found = f"schema {kind!r}" if kind is not None else "no meta.plugin"
        raise SlurmError(
            f"`{what}` printed {found} (Slurm {release or 'unknown'}), not the {generation.plugin} it was asked for"
        )
    errors = doc.get("errors")
    if errors:
        raise SlurmError(f"`{what}` reported errors: {json.dumps(errors)[:400]}")
    items = doc.get(key)
    if not isinstance(items, list):
        raise SlurmError(f"`{what}` printed no {key!r} list")
    return items


def _split_tres(text: str) -> list[str]:
    """Comma-separated items, commas inside parentheses kept (``gpu:v100:8(S:0,1),shard:64``)."""
    return [item for item in re.split(r",(?![^(]*\))", text) if item]


def _gpus(items: list[str], prefix: str) -> list[tuple[str | None, int]] | None:
    """``(type, count)`` of each ``[prefix]gpu[:type]:count`` item; None if a gpu item does not read."""
    out: list[tuple[str | None, int]] = []
    for item in items:
        if not item.startswith(prefix + "gpu"):
            continue
        match = re.fullmatch(re.escape(prefix) + r"gpu(?::([^:()]+))?:([0-9]+)(?:\(.*\))?", item)
        if match is None:
            return None
        out.append((match.group(1), int(match.group(2))))
    return out


# ---------------------------------------------------------------------------------------------- squeue


def _job(
    raw: dict[str, Any], job_id: int, opt_in: OptIn, problems: list[Problem], generation: Generation
) -> ManagedJob | None:
    rec = _Record(raw, f"job {job_id}", problems, generation)
    name = rec.text("name")
    state = job_state(*rec.state("job_state", JOB_BASE_STATES))
    reason = rec.text("state_reason")
    user_name = rec.text("user_name")
    account = rec.text("account")
    partition = rec.text("partition")
    node_list = rec.text("nodes")
    required = raw.get("required_nodes")  # read where present: a document without it asks for no nodes
    node_count = rec.count("node_count")
    submit = rec.count("submit_time")
    start = rec.count("start_time")
    per_node = rec.text("tres_per_node")
    gpus: list[tuple[str | None, int]] = []
    if not rec.bad:
        prefix = generation.gres_prefix
        found = _gpus(_split_tres(per_node), prefix)
        if found is None or len(found) > 1:
            rec.problem("tres_per_node", f"cannot read one GPU request ({prefix}gpu[:TYPE]:N) from {per_node[:80]!r}")
        elif not found:
            rec.problem("tres_per_node", "a managed job asks GPUs per node (--gres=gpu:N; N = 0 for a pair's guest)")
        else:
            gpus = found
    for field in ("tres_per_job", "tres_per_task", "tres_per_socket"):
        other = rec.text(field)
        if "gpu" in other:
            rec.problem(field, f"asks GPUs as {other[:80]!r}: the agent manages --gres=gpu:N per node only")
    if rec.bad or not gpus:
        return None
    return ManagedJob(
        job_id=job_id,
        name=name,
        state=state,
        held=state == "PENDING" and reason in HELD_REASONS,
        reason=reason,
        user_name=user_name,
        account=account,
        partition=partition,
        node_list=node_list,
        node_count=node_count,
        gpus_per_node=gpus[0][1],
        gpu_type=gpus[0][0],
        submit_time_s=submit,
        start_time_s=None if state == "PENDING" or start == 0 else start,
        job_type=opt_in.job_type,
        total_steps=opt_in.total_steps,
        required_nodes=required if isinstance(required, str) else "",
    )


def read_queue(text: str, generation: Generation = LEGACY) -> QueueRead:
    """The managed jobs of ``squeue --json`` text of ``generation``, each problem by job id and field (module)."""
    problems: list[Problem] = []
    jobs: list[ManagedJob] = []
    listed: set[int] = set()
    unmanaged = 0
    for index, raw in enumerate(_document(text, " ".join(generation.queue_command), "jobs", generation)):
        if not isinstance(raw, dict):
            problems.append(Problem("slurm-field", f"jobs[{index}]", "must be an object"))
            continue
        job_id = raw.get("job_id")
        if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
            problems.append(Problem("slurm-field", f"jobs[{index}].job_id", f"must be a job id, not {job_id!r}"))
            continue
        listed.add(job_id)
        rec = _Record(raw, f"job {job_id}", problems)
        comment = rec.text("comment")
        if rec.bad:
            continue
        try:
            opt_in = parse_opt_in(comment)
        except ValueError as err:
            problems.append(
                Problem("opt-in", f"job {job_id}.comment", f"malformed opt-in {comment[:120]!r}: {err}; left alone")
            )
            continue
        if opt_in is None:
            unmanaged += 1
            continue
        job = _job(raw, job_id, opt_in, problems, generation)
        if job is not None:
            jobs.append(job)
    return QueueRead(tuple(jobs), tuple(problems), unmanaged, frozenset(listed))


# ---------------------------------------------------------------------------------------------- sinfo

_UP = {"idle": "idle", "mixed": "mixed", "allocated": "allocated"}
_DOWN = {"down", "error", "unknown", "future"}
POWERING_DOWN = "POWERING_DOWN"
"""The flag of a node Slurm's power saving is powering down (``slurm_state`` holds it after a ``+``)."""
_DOWN_FLAGS = {"NOT_RESPONDING", "FAIL", POWERING_DOWN}
"""Flags of a node no job can be planned on now; ``POWERING_DOWN``: Slurm gives it no job until it is off (a
``SuspendTimeout``), after which it reads ``off``."""
_OFF_FLAGS = {"POWERED_DOWN"}
"""Flags of a node Slurm's power saving has powered down: ``off``, booted again for a job."""


NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
"""A node name the agent accepts from ``sinfo``: a host name. The name goes into ``scontrol update NodeList=`` and
the log; Slurm's host-list syntax (``[``, ``,``) and control characters have no place in one node's name."""


def _node(raw: dict[str, Any], index: int, problems: list[Problem], generation: Generation) -> NodeState | None:
    name = raw.get("name")
    if not isinstance(name, str) or not NODE_NAME.fullmatch(name):
        problems.append(
            Problem("slurm-field", f"nodes[{index}].name", f"must be a node name (host name), not {name!r:.80}")
        )
        return None
    rec = _Record(raw, f"node {name}", problems, generation)
    if generation.data_parser:  # ["IDLE", "DRAIN"]: the base state in 22.05's lower case, the flags as they are
        base, flags = rec.state("state", NODE_BASE_STATES)
        slurm_state = base.lower()
        features = ",".join(rec.texts("active_features"))
    else:
        slurm_state = rec.text("state")
        flags = rec.texts("state_flags")
        features = rec.text("active_features")
    gres = rec.text("gres")
    partitions = rec.texts("partitions")
    if rec.bad:
        return None
    state: NodeStateName
    if "DRAIN" in flags:
        state = "drained"
    elif slurm_state in _DOWN or (_DOWN_FLAGS.intersection(flags) and "POWERING_UP" not in flags):
        state = "down"  # a node booting for a job does not respond until its slurmd starts: not down
    elif _OFF_FLAGS.intersection(flags):
        state = "off"
    elif slurm_state in _UP:
        state = "idle" if slurm_state == "idle" else "mixed" if slurm_state == "mixed" else "allocated"
    else:
        rec.problem("state", f"unknown node state {slurm_state[:40]!r}")
        return None
    found = _gpus(_split_tres(gres), "")
    if found is None:
        rec.problem("gres", f"cannot read GPUs (gpu[:TYPE]:N) from {gres[:80]!r}")
        return None
    types = {t for t, _ in found}
    return NodeState(
        name=name,
        state=state,
        slurm_state="+".join([slurm_state, *flags]),
        gpus=sum(n for _, n in found),
        gpu_type=types.pop() if len(types) == 1 else None,
        features=tuple(f for f in features.split(",") if f),
        partitions=partitions,
    )


def read_nodes(text: str, generation: Generation = LEGACY) -> NodesRead:
    """The nodes of ``generation``'s nodes document (22.05: ``sinfo --json``), each problem by node name and field."""
    problems: list[Problem] = []
    nodes: list[NodeState] = []
    for index, raw in enumerate(_document(text, " ".join(generation.nodes_command), "nodes", generation)):
        if not isinstance(raw, dict):
            problems.append(Problem("slurm-field", f"nodes[{index}]", "must be an object"))
            continue
        node = _node(raw, index, problems, generation)
        if node is not None:
            nodes.append(node)
    return NodesRead(tuple(nodes), tuple(problems))


# ---------------------------------------------------------------------------------------------- commands


def _ask(run: Run, argv: tuple[str, ...]) -> str:
    result = run(argv)
    if not result.ok:
        raise SlurmError(f"`{' '.join(argv)}` failed with exit {result.returncode}: {first_line(result.stderr)}")
    return result.stdout


def query_queue(run: Run = run_command, generation: Generation = LEGACY) -> QueueRead:
    """Ask for the queue in ``generation`` (Slurm's release decides it: ``require_supported``) and read it."""
    return read_queue(_ask(run, generation.queue_command), generation)


def query_nodes(run: Run = run_command, generation: Generation = LEGACY) -> NodesRead:
    """Ask for the nodes in ``generation`` and read them."""
    return read_nodes(_ask(run, generation.nodes_command), generation)
