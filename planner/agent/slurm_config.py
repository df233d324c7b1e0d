"""``scontrol show config``: Slurm's running configuration as a map, and the nodes its power saving leaves on.

The agent's check reads it (:mod:`planner.agent.check`: permissions, power saving, node scripts) and so does the
loop before it powers a node down (``--power-down``): Slurm's ``SuspendExcNodes`` and ``SuspendExcParts`` name the
nodes and partitions an operator keeps out of power saving, and the agent leaves them on as Slurm does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from wattplan.planner.agent.commands import Run, SlurmError, first_line
from wattplan.planner.agent.slurm_detail import expand_hostlist
from wattplan.planner.agent.slurm_queue import NodeState

CONFIG_COMMAND = ("scontrol", "show", "config")
_CONFIG_LINE = re.compile(r"^(\w+)(?:\[\d+\])?\s*=\s*(.*)$")
"""``Key = value``; from 23.02 a key that takes several scripts prints each as ``Prolog[0] = ...``."""
_UNSET = frozenset({"", "(null)", "none", "n/a"})
"""How ``scontrol show config`` prints a key that is not set (compared in lower case)."""
_COUNT = re.compile(r":[0-9]+$")
"""``SuspendExcNodes``' ``:N`` after a host list (22.05 and later: keep at least N of them on)."""


def slurm_config(text: str) -> dict[str, str]:
    """``scontrol show config``'s ``Key = value`` lines as a map (the header and blank lines skipped).

    The values of an indexed key (``Prolog[0]``, ``Prolog[1]``: 23.02 and later) are joined with commas, as 22.05
    wrote several scripts in one value.
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _CONFIG_LINE.match(line.strip())
        if match is not None:
            key, value = match.group(1), match.group(2).strip()
            found[key] = f"{found[key]},{value}" if key in found and value else value
    return found


def query_slurm_config(run: Run) -> dict[str, str]:
    """Run ``scontrol show config`` and read it; SlurmError when the command fails."""
    result = run(CONFIG_COMMAND)
    if result.returncode != 0:
        raise SlurmError(f"{' '.join(CONFIG_COMMAND)} failed (exit {result.returncode}): {first_line(result.stderr)}")
    return slurm_config(result.stdout)


def _groups(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (``a[0-3]:2,b[1,4]`` -> ``a[0-3]:2``, ``b[1,4]``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += 1 if ch == "[" else -1 if ch == "]" else 0
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [g.strip() for g in out if g.strip()]


def power_save_excluded(config: Mapping[str, str], nodes: Sequence[NodeState]) -> frozenset[str]:
    """The nodes Slurm's power saving leaves on: every node of ``SuspendExcNodes`` and of ``SuspendExcParts``.

    A ``:N`` after a host list (keep N of them on) is read as all of them: the agent powers none of them down.
    ValueError naming the key when a host list cannot be read (the caller then powers nothing down).
    """
    out: set[str] = set()
    listed = config.get("SuspendExcNodes", "")
    if listed.lower() not in _UNSET:
        for group in _groups(listed):
            try:
                out.update(expand_hostlist(_COUNT.sub("", group)))
            except ValueError as e:
                raise ValueError(f"SuspendExcNodes {listed[:120]!r}: {e}") from None
    parts = config.get("SuspendExcParts", "")
    if parts.lower() not in _UNSET:
        names = {p.strip() for p in parts.split(",") if p.strip()}
        out.update(n.name for n in nodes if names.intersection(n.partitions))
    return frozenset(out)
