"""The GPU indices each running job holds, from ``scontrol show job -d`` (Slurm 22.05 has no JSON for it).

``squeue --json`` names a job's nodes but not its GPU indices; the detailed job view does, one line per group of
nodes that hold the same indices::

    JobId=17 JobName=resnet
       ...
         Nodes=v100-[0-1] CPU_IDs=0 Mem=0 GRES=gpu:v100:2(IDX:0-1)

A job with no GPU (the second job of a co-located pair runs with ``--gres=gpu:0``) has ``GRES=`` empty or no
``IDX`` part: it holds no index. Host lists (``v100-[0-1,3]``, ``a1,b[2-3]``) are expanded here, without asking
Slurm. Anything else is a :class:`~planner.agent.commands.SlurmError` naming the job and the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from wattplan.planner.agent.commands import Run, SlurmError, first_line, run_command

COMMAND = ("scontrol", "show", "job", "-d")
NO_JOBS = "No jobs in the system"

_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_HOST_ENTRY = re.compile(r"([^\[\],]*)(?:\[([0-9,\-]+)\])?([^\[\],]*)")
_JOB_ID = re.compile(r"JobId=([0-9]+)\b")
_NODES_GRES = re.compile(r"^\s+Nodes=(\S+)\s.*?\bGRES=(\S*)")
_IDX = re.compile(r"\(IDX:([0-9,\-]*)\)")

JobGpus = Mapping[int, tuple[tuple[str, tuple[int, ...]], ...]]
"""``{job id: ((host, GPU indices), ...)}``, hosts in Slurm's order."""


def expand_ranges(text: str) -> tuple[int, ...]:
    """``0-1,3`` -> ``(0, 1, 3)`` (ValueError on anything else; an empty text is no index)."""
    out: list[int] = []
    for part in text.split(",") if text else []:
        m = _RANGE.fullmatch(part)
        if m is None:
            raise ValueError(f"{part!r} is not N or N-M")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo or hi - lo > 100_000:
            raise ValueError(f"{part!r} is not an increasing range")
        out.extend(range(lo, hi + 1))
    return tuple(out)


def _split_top(text: str) -> list[str]:
    """Split a host list at the commas outside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``v100-[0-1,3],p100-0`` -> ``("v100-0", "v100-1", "v100-3", "p100-0")``; one bracket group per entry.

    Zero-padded ranges keep their width (``n[01-02]`` -> ``n01``, ``n02``). ValueError on other forms.
    """
    hosts: list[str] = []
    for entry in _split_top(text.strip()) if text.strip() else []:
        m = _HOST_ENTRY.fullmatch(entry)
        if m is None or not entry:
            raise ValueError(f"{entry!r} is not a host name or prefix[ranges]suffix")
        prefix, ranges, suffix = m.group(1), m.group(2), m.group(3)
        if ranges is None:
            hosts.append(entry)
            continue
        for part in ranges.split(","):
            width = len(part.split("-")[0])
            for i in expand_ranges(part):
                hosts.append(f"{prefix}{i:0{width}d}{suffix}")
    return tuple(hosts)


def read_job_gpus(text: str) -> dict[int, tuple[tuple[str, tuple[int, ...]], ...]]:
    """``{job id: ((host, indices), ...)}`` of every job in ``scontrol show job -d`` text with a ``Nodes=`` line.

    Pending jobs have no such line and are absent; a job with no GPU maps its hosts to empty index tuples.
    """
    out: dict[int, list[tuple[str, tuple[int, ...]]]] = {}
    job: int | None = None
    if text.strip() == NO_JOBS:
        return {}
    for line in text.splitlines():
        if line.startswith("JobId="):
            m = _JOB_ID.match(line)
            if m is None:
                raise SlurmError(f"scontrol show job -d: cannot read the job id in {line[:80]!r}")
            job = int(m.group(1))
            continue
        m = _NODES_GRES.match(line)
        if m is None or job is None:
            continue
        nodes, gres = m.group(1), m.group(2)
        try:
            hosts = expand_hostlist(nodes)
            idx_m = _IDX.search(gres)
            indices = expand_ranges(idx_m.group(1)) if idx_m else ()
        except ValueError as e:
            raise SlurmError(f"scontrol show job -d: job {job}: cannot read {line.strip()[:120]!r} ({e})") from None
        out.setdefault(job, []).extend((h, indices) for h in hosts)
    return {j: tuple(v) for j, v in out.items()}


def query_job_gpus(run: Run = run_command) -> dict[int, tuple[tuple[str, tuple[int, ...]], ...]]:
    """Run ``scontrol show job -d`` and read it; SlurmError when the command fails."""
    result = run(COMMAND)
    if not result.ok:
        raise SlurmError(f"{' '.join(COMMAND)} failed (exit {result.returncode}): {first_line(result.stderr)}")
    return read_job_gpus(result.stdout)
