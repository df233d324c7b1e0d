"""What the simulated Slurm prints: ``squeue --json``, ``sinfo --json``, ``scontrol show job -d`` and its messages.

:mod:`planner.control.sim_slurm` keeps the cluster's state; this module turns snapshots of it (:class:`JobView`,
:class:`NodeView`) into the text Slurm 22.05.8 prints, in the shapes the agent's readers take
(:mod:`planner.agent.slurm_queue`, :mod:`planner.agent.slurm_detail`, :mod:`planner.agent.slurm_version`) and the
captured outputs in ``tests/data/agent`` show: the OpenAPI v0.0.38 JSON with the fields Slurm fills for a batch
job, and the detailed job text with one ``Nodes=... GRES=gpu:TYPE:N(IDX:...)`` line per group of nodes holding
the same GPU indices. Times are whole Unix seconds (truncated), 0 where Slurm prints 0; the text view prints
them in UTC (``2026-05-01T12:00:00``), so the output depends on the virtual clock only. It also parses the
arguments the fake commands take (job id lists, ``Gres=`` values) and names Slurm's refusals.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

RELEASE = "22.05.8"
VERSION_TEXT = f"slurm {RELEASE}\n"
"""What ``sinfo --version`` prints."""
PARTITION = "gpu"
NO_JOBS = "No jobs in the system"
YEAR_S = 365 * 24 * 3600
"""A running job's ``end_time`` is its start plus this (an unlimited time limit, as 22.05 shows it)."""

# Slurm's refusals (slurm_strerror), printed as "MESSAGE for job N" per refused job.
INVALID_ID = "Invalid job id specified"
FINISHED = "Job has already finished"
NOT_PENDING = "Job is no longer pending execution"
PENDING = "Job is pending execution"
MIXED_GRES = "Invalid GRES specification (with and without type identification)"
BAD_GRES = "Invalid generic resource (gres) specification"
BAD_NODE = "Invalid node name specified"
NODE_CONFIG = "Requested node configuration is not available"
BAD_COUNT = "Invalid node count specified"
CANCEL_DONE = "Job/step already completing or completed"


@dataclass(frozen=True, slots=True)
class JobView:
    """One job as Slurm shows it; times in Unix s (0: none); ``gpus`` is ``(node, GPU type, indices)`` per node."""

    job_id: int
    name: str
    user: str
    account: str
    comment: str
    state: str
    reason: str
    priority: int
    per_node: int
    gres_type: str | None
    node_count: int
    nodes: tuple[str, ...]
    required: tuple[str, ...]
    gpus: tuple[tuple[str, str, tuple[int, ...]], ...]
    submit_unix: int
    eligible_unix: int
    start_unix: int
    end_unix: int
    restarts: int

    @property
    def gres(self) -> str:
        """The per-node GRES request: ``gpu:N`` or ``gpu:TYPE:N``."""
        return f"gpu:{self.gres_type}:{self.per_node}" if self.gres_type else f"gpu:{self.per_node}"

    @property
    def job_gres(self) -> str:
        """``JOB_GRES``: the GPUs per node a running job was allocated, ``gpu:TYPE:N``; ``(null)`` for none.

        Typed as Slurm prints it, whatever the request's spelling.
        """
        held = [(gpu_type, len(idx)) for _, gpu_type, idx in self.gpus if idx]
        return f"gpu:{held[0][0]}:{held[0][1]}" if self.state == "RUNNING" and held else "(null)"


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node: its name, GPU type, GPU count, the indices jobs hold and whether any job runs there."""

    name: str
    gpu_type: str
    gpus: int
    used: tuple[int, ...]
    busy: bool
    power: str = "on"
    """Its power state under power saving: ``on``, ``powering_down``, ``off`` or ``powering_up``."""
    down_pending: bool = False
    """Told ``State=POWER_DOWN`` while running jobs: powered down when they end (flag ``POWER_DOWN``)."""

    @property
    def state(self) -> str:
        """``idle`` (no job), ``allocated`` (every GPU held) or ``mixed``."""
        if not self.busy:
            return "idle"
        return "allocated" if len(self.used) >= self.gpus else "mixed"


# ---------------------------------------------------------------------------------------------- names and lists


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders the numbers in a name by value: ``v100-2`` before ``v100-10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"([0-9]+)", name) if p)


def index_ranges(indices: Sequence[int]) -> str:
    """``(0, 1, 3)`` -> ``0-1,3`` (sorted, runs collapsed)."""
    parts: list[str] = []
    values = sorted(set(indices))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def compress_hostlist(names: Sequence[str]) -> str:
    """Slurm's host list of ``names``: ``p100-0,v100-[0-1,3]``, ``""`` for none.

    A name's trailing number without a leading zero joins its prefix's brackets; other names stand alone.
    """
    if not names:
        return ""
    groups: dict[str, list[int]] = {}
    alone: list[str] = []
    for name in sorted(set(names), key=natural_key):
        m = re.fullmatch(r"(.*?)(0|[1-9][0-9]*)", name)
        if m is None:
            alone.append(name)
        else:
            groups.setdefault(m.group(1), []).append(int(m.group(2)))
    out = list(alone)
    for prefix, numbers in groups.items():
        out.append(f"{prefix}{numbers[0]}" if len(numbers) == 1 else f"{prefix}[{index_ranges(numbers)}]")
    return ",".join(sorted(out, key=natural_key))


def parse_job_ids(text: str) -> tuple[int, ...] | None:
    """``12,13`` -> ``(12, 13)``; None when an item is not a job id (a whole number >= 1)."""
    parts = text.split(",")
    if not all(re.fullmatch(r"[0-9]{1,12}", p) and int(p) >= 1 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def parse_gres(text: str) -> tuple[str | None, int] | None:
    """``gpu:2`` -> ``(None, 2)``, ``gpu:v100:2`` -> ``("v100", 2)``; None for anything else."""
    m = re.fullmatch(r"gpu(?::([A-Za-z0-9_.-]+))?:([0-9]{1,4})", text)
    return None if m is None else (m.group(1), int(m.group(2)))


def refusals(job_messages: Sequence[tuple[int, str]]) -> str:
    """Standard error of a call Slurm refused for some jobs: ``MESSAGE for job N`` per line."""
    return "".join(f"{message} for job {job}\n" for job, message in job_messages)


# ---------------------------------------------------------------------------------------------- JSON


ALLOCATED = ("RUNNING", "CONFIGURING")
"""Job states of a job holding its nodes and GPUs: running, or waiting for a powered-down node to boot."""


def _meta() -> dict[str, object]:
    major, minor, micro = (int(x) for x in RELEASE.split("."))
    return {
        "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
        "Slurm": {"version": {"major": major, "micro": micro, "minor": minor}, "release": RELEASE},
    }


def job_json(j: JobView) -> str:
    """One job's record in ``squeue --json`` (JSON text)."""
    running = j.state in ALLOCATED
    record = {
        "account": j.account,
        "batch_flag": True,
        "batch_host": j.nodes[0] if running and j.nodes else "",
        "cluster": "wattplan-sim",
        "comment": j.comment,
        "eligible_time": j.eligible_unix,
        "end_time": j.end_unix,
        "exit_code": 0,
        "flags": ["JOB_WAS_RUNNING"] if running else [],
        "gres_detail": [f"gpu:{t}:{len(idx)}(IDX:{index_ranges(idx)})" for _, t, idx in j.gpus if idx and running],
        "job_id": j.job_id,
        "job_state": j.state,
        "name": j.name,
        "nodes": compress_hostlist(j.nodes),
        "node_count": j.node_count,
        "partition": PARTITION,
        "priority": j.priority,
        "required_nodes": compress_hostlist(j.required),
        "requeue": True,
        "restart_cnt": j.restarts,
        "start_time": j.start_unix,
        "state_description": "",
        "state_reason": j.reason,
        "submit_time": j.submit_unix,
        "tasks": 1,
        "tres_per_job": "",
        "tres_per_node": f"gres:{j.gres}",
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": f"cpu=1,mem=1000M,node={j.node_count},billing=1",
        "tres_alloc_str": f"cpu={len(j.nodes)},node={len(j.nodes)},billing=1" if running else "",
        "user_name": j.user,
    }
    return json.dumps(record)


def squeue_json(jobs: Sequence[str]) -> str:
    """``squeue --json`` of the listed jobs' :func:`job_json` records, in the order given.

    Slurm lists pending and running jobs and those finished within MinJobAge.
    """
    head = json.dumps({"meta": _meta(), "errors": []})[:-1]
    return f'{head}, "jobs": [{", ".join(jobs)}]}}\n'


def _node_json(n: NodeView) -> dict[str, object]:
    used = f"gpu:{n.gpu_type}:{len(n.used)}(IDX:{index_ranges(n.used) or 'N/A'})"
    return {
        "active_features": "",
        "address": n.name,
        "features": "",
        "gres": f"gpu:{n.gpu_type}:{n.gpus}",
        "gres_drained": "N/A",
        "gres_used": used,
        "hostname": n.name,
        "name": n.name,
        "partitions": [PARTITION],
        "reason": "",
        "slurmd_version": RELEASE,
        "state": n.state,
        "state_flags": [*POWER_FLAGS.get(n.power, ()), *(("POWER_DOWN",) if n.down_pending else ())],
    }


POWER_FLAGS: dict[str, tuple[str, ...]] = {
    "powering_down": ("POWERING_DOWN",),
    "off": ("POWERED_DOWN",),
    "powering_up": ("NOT_RESPONDING", "POWERING_UP"),
}
"""``state_flags`` of a node by its power state (none when on)."""


def sinfo_json(nodes: Sequence[NodeView]) -> str:
    """``sinfo --json``: every node, by name (natural order)."""
    doc = {
        "meta": _meta(),
        "errors": [],
        "nodes": [_node_json(n) for n in sorted(nodes, key=lambda n: natural_key(n.name))],
    }
    return json.dumps(doc) + "\n"


# ---------------------------------------------------------------------------------------------- scontrol show job -d


def _when(unix: int) -> str:
    return "Unknown" if unix <= 0 else datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _detail_lines(j: JobView) -> list[str]:
    """One ``Nodes=... GRES=...`` line per run of consecutive nodes holding the same indices.

    A job that ended still lists its nodes until it leaves the list (``MinJobAge``), with an empty ``GRES=``, as
    22.05 prints it (seen on the emulated cluster: ``Nodes=v100-0 CPU_IDs=15 Mem=0 GRES=`` for a completed job).
    """
    if j.state in ("COMPLETED", "CANCELLED") and j.nodes:
        return [f"     Nodes={compress_hostlist(j.nodes)} CPU_IDs=0 Mem=0 GRES="]
    if j.state not in ALLOCATED:
        return []
    groups: list[tuple[list[str], str, tuple[int, ...]]] = []
    for node, gpu_type, idx in j.gpus:
        if groups and groups[-1][1:] == (gpu_type, idx):
            groups[-1][0].append(node)
        else:
            groups.append(([node], gpu_type, idx))
    lines = []
    for nodes, gpu_type, idx in groups:
        gres = f"gpu:{gpu_type}:{len(idx)}(IDX:{index_ranges(idx)})" if idx else ""
        lines.append(f"     Nodes={compress_hostlist(nodes)} CPU_IDs=0 Mem=0 GRES={gres}")
    return lines


def _job_text(j: JobView) -> str:
    nodes = compress_hostlist(j.nodes) if j.state != "PENDING" else ""
    lines = [
        f"JobId={j.job_id} JobName={j.name}",
        f"   UserId={j.user} GroupId={j.user} MCS_label=N/A",
        f"   Priority={j.priority} Nice=0 Account={j.account or '(null)'} QOS=(null)",
        f"   JobState={j.state} Reason={j.reason} Dependency=(null)",
        f"   Requeue=1 Restarts={j.restarts} BatchFlag=1 Reboot=0 ExitCode=0:0",
        f"   SubmitTime={_when(j.submit_unix)} EligibleTime={_when(j.eligible_unix)}",
        f"   StartTime={_when(j.start_unix)} EndTime={_when(j.end_unix)} Deadline=N/A",
        f"   Partition={PARTITION} AllocNode:Sid=localhost:1",
        f"   ReqNodeList={compress_hostlist(j.required) or '(null)'} ExcNodeList=(null)",
        f"   NodeList={nodes or '(null)'}",
        f"   BatchHost={j.nodes[0] if j.state == 'RUNNING' and j.nodes else '(null)'}",
        f"   NumNodes={j.node_count} NumCPUs={j.node_count} NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*",
        f"   JOB_GRES={j.job_gres}",
        *_detail_lines(j),
        f"   Comment={j.comment}" if j.comment else "   Comment=(null)",
        f"   TresPerNode=gres:{j.gres}",
    ]
    return "\n".join(lines) + "\n"


def config_text(suspend_s: float | None, resume_s: float, excluded: Sequence[str]) -> str:
    """``scontrol show config``'s power-saving keys as 22.05 prints them (``suspend_s`` None: no power saving).

    Times in whole seconds; the programs are the emulated cluster's names; ``SuspendExcNodes`` lists ``excluded``.
    """
    saving = suspend_s is not None
    keys = {
        "ResumeProgram": "/etc/slurm/resume" if saving else "(null)",
        "ResumeTimeout": f"{math.ceil(resume_s)} sec",
        "SuspendExcNodes": compress_hostlist(excluded) if excluded else "(null)",
        "SuspendExcParts": "(null)",
        "SuspendProgram": "/etc/slurm/suspend" if saving else "(null)",
        "SuspendTime": f"{round(suspend_s)} sec" if suspend_s is not None else "NONE",
    }
    head = "Configuration data as of 2026-05-01T12:00:00\n"
    return head + "".join(f"{k:<23} = {v}\n" for k, v in keys.items())


def show_job_text(jobs: Sequence[JobView]) -> str:
    """``scontrol show job -d``: every listed job, by job id, a blank line after each."""
    if not jobs:
        return NO_JOBS + "\n"
    return "".join(_job_text(j) + "\n" for j in sorted(jobs, key=lambda j: j.job_id))
