"""The cluster of a round cut from a trace: ``--cluster v100:64,p100:32`` as GPU types, nodes and node power."""

from __future__ import annotations

import math
from dataclasses import dataclass

from wattplan.planner.console.list_options import split_list
from wattplan.planner.contracts.defaults import GPUS_PER_NODE, NODE_POWER_W
from wattplan.planner.contracts.problems import InputError, Problem


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """GPUs per type, e.g. ``v100:64,p100:32`` with ``gpus_per_node`` GPUs a node."""

    gpus: tuple[tuple[str, int], ...]
    gpus_per_node: int = GPUS_PER_NODE
    node_power_w: float = NODE_POWER_W


MIN_GPUS_PER_NODE, MAX_GPUS_PER_NODE = 1, 64
"""GPUs per node a cluster may have (the instance schema's ``gpus_per_node`` range)."""
MAX_NODE_POWER_W = 1e6
"""Largest node base power (W) a cluster may have: a real node draws kW, 1e6 W keeps every product finite."""


def parse_cluster_spec(
    text: str, gpus_per_node: int = GPUS_PER_NODE, node_power_w: float = NODE_POWER_W
) -> ClusterSpec:
    """Parse ``type:GPUS[,type:GPUS...]``; each count must be a whole number of nodes.

    Problems name ``--cluster[k]``: an empty item, a GPU type given twice, a count that is no whole number of
    nodes.

    ``gpus_per_node`` must be in [1, 64] (the instance schema's range) and ``node_power_w`` (W) finite in
    [0, 1e6]; either out of range is a ``bad-option`` naming ``--gpus-per-node`` or ``--node-power-w`` (a count of
    2**31 GPUs per node was reported as a bad ``--cluster``).
    """
    options = []
    if not MIN_GPUS_PER_NODE <= gpus_per_node <= MAX_GPUS_PER_NODE:
        options.append(
            Problem(
                "bad-option",
                "--gpus-per-node",
                f"must be in [{MIN_GPUS_PER_NODE}, {MAX_GPUS_PER_NODE}], got {gpus_per_node}",
            )
        )
    if not (math.isfinite(node_power_w) and 0.0 <= node_power_w <= MAX_NODE_POWER_W):
        options.append(
            Problem("bad-option", "--node-power-w", f"must be in [0, {MAX_NODE_POWER_W:g}] W, got {node_power_w}")
        )
    if options:
        raise InputError(options[0].path if len(options) == 1 else "options", options)
    out: list[tuple[str, int]] = []
    problems: list[Problem] = []
    parts = split_list(text, "--cluster", key=lambda part: part.partition(":")[0].strip().lower())
    for k, part in enumerate(parts):
        name, sep, count = part.partition(":")
        if not sep or not (count.strip().isascii() and count.strip().isdigit()):  # isdigit alone takes '²'
            problems.append(Problem("bad-cluster", f"--cluster[{k}]", f"{part!r} is not TYPE:GPUS"))
            continue
        n = int(count)
        if n <= 0 or n % gpus_per_node:
            problems.append(
                Problem(
                    "bad-cluster",
                    f"--cluster[{k}]",
                    f"{n} GPUs is not a positive multiple of {gpus_per_node} GPUs per node",
                )
            )
            continue
        out.append((name.strip().lower(), n))
    if not out and not problems:
        problems.append(Problem("bad-cluster", "--cluster", "no GPU types given"))
    if problems:
        raise InputError("--cluster", problems)
    return ClusterSpec(tuple(out), gpus_per_node, node_power_w)
