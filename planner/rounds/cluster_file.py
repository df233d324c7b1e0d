"""An operator's cluster description (YAML): nodes per GPU type, nodes down, GPUs held by other jobs, the round.

Example (every key but ``gpu_types`` and each type's ``name`` and ``nodes`` is optional)::

    round_s: 360              # round length T (s), default 360
    power_cap_kw: 12          # average power the round may draw (kW): budget B = cap x T; default none
    objective: energy         # progress | energy | efficiency (default progress)
    gpu_types:
      - name: a100
        gpus_per_node: 8      # default 8 (a power of two)
        node_power_w: 400     # base power of a powered node without its GPUs (W), default 200
        nodes: [gpu-a1, gpu-a2, gpu-a3]   # host names, or a count (hosts TYPE-0, TYPE-1, ...)
        down: [gpu-a3]                     # down, drained or reserved: not planned
    unmanaged:                # GPUs held by jobs wattplan does not manage
      - node: gpu-a2
        gpus: [3]

A host with unmanaged GPUs is **left out of planning whole**: the round model counts GPUs per type and places
power-of-two blocks on whole nodes (docs/design.md §6.2), so a node with a hole cannot take every block the model
counts on it. Leaving it out never double-books a GPU; it costs the node's other GPUs for this round (reported).
Every problem names the file and the key (``gpu_types[1].down[0]``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from wattplan.planner.contracts.defaults import GPUS_PER_NODE, NODE_POWER_W, ROUND_S, ROUND_S_RANGE
from wattplan.planner.contracts.domain import is_power_of_two
from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import OBJECTIVES, Objective

_NAME = re.compile(r"[A-Za-z0-9_.]+")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TOP_KEYS = ("round_s", "power_cap_kw", "objective", "gpu_types", "unmanaged")
_TYPE_KEYS = ("name", "gpus_per_node", "node_power_w", "nodes", "down")
MAX_NODES = 100_000


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """The nodes of one GPU type: every host in file order, and why a host is left out (host -> reason)."""

    name: str
    gpus_per_node: int
    node_power_w: float
    hosts: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def usable_hosts(self) -> tuple[str, ...]:
        """The hosts wattplan plans on: every host not left out, in file order."""
        out = {h for h, _ in self.left_out}
        return tuple(h for h in self.hosts if h not in out)


@dataclass(frozen=True, slots=True)
class ClusterFile:
    """A cluster description (module docstring): node groups, round length (s) and power cap (kW)."""

    groups: tuple[NodeGroup, ...]
    round_s: float = ROUND_S
    power_cap_kw: float | None = None
    objective: Objective | None = None

    def host_map(self) -> dict[str, str]:
        """Plan node -> host: plan node ``TYPE-i`` is the ``i``-th usable host of the type (design §6.2 names)."""
        return {f"{g.name}-{i}": host for g in self.groups for i, host in enumerate(g.usable_hosts)}

    def left_out(self) -> dict[str, str]:
        """Every host left out of planning, with the reason."""
        return {host: why for g in self.groups for host, why in g.left_out}


def _number(value: Any, path: str, low: float, high: float, problems: list[Problem]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (low <= value <= high):
        problems.append(Problem("bad-field", path, f"must be a number in [{low:g}, {high:g}], got {value!r}"))
        return None
    return float(value)


def _hosts(value: Any, name: str, path: str, problems: list[Problem]) -> tuple[str, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_NODES:
            problems.append(Problem("bad-field", path, f"a node count must be in [0, {MAX_NODES}], got {value}"))
            return ()
        return tuple(f"{name}-{i}" for i in range(value))
    if not isinstance(value, list):
        problems.append(Problem("bad-field", path, "a list of host names or a node count is needed"))
        return ()
    hosts: list[str] = []
    for k, host in enumerate(value):
        if not (isinstance(host, str) and _HOST.fullmatch(host)):
            problems.append(Problem("bad-host-name", f"{path}[{k}]", f"{host!r} is not a host name ([A-Za-z0-9._-])"))
        else:
            hosts.append(host)
    return tuple(hosts)


def _group(raw: Any, path: str, problems: list[Problem]) -> NodeGroup | None:
    if not isinstance(raw, Mapping):
        problems.append(Problem("bad-field", path, "each GPU type is a mapping (name, nodes, ...)"))
        return None
    before = len(problems)
    for key in raw:
        if key not in _TYPE_KEYS:
            problems.append(
                Problem("unknown-field", f"{path}.{key}", f"not a GPU-type key (keys: {', '.join(_TYPE_KEYS)})")
            )
    name = raw.get("name")
    if not (isinstance(name, str) and _NAME.fullmatch(name)):
        problems.append(
            Problem("bad-field", f"{path}.name", f"a GPU type name ([A-Za-z0-9_.]) is needed, got {name!r}")
        )
        name = "?"
    per_node = raw.get("gpus_per_node", GPUS_PER_NODE)
    if (
        isinstance(per_node, bool)
        or not isinstance(per_node, int)
        or not (1 <= per_node <= 64 and is_power_of_two(per_node))
    ):
        problems.append(
            Problem("bad-field", f"{path}.gpus_per_node", f"must be a power of two in [1, 64], got {per_node!r}")
        )
    node_w = _number(raw.get("node_power_w", NODE_POWER_W), f"{path}.node_power_w", 0.0, 1e6, problems)
    if "nodes" not in raw:
        problems.append(Problem("missing-field", f"{path}.nodes", "required: host names or a node count"))
    hosts = _hosts(raw.get("nodes", []), name, f"{path}.nodes", problems)
    down_raw = raw.get("down", [])
    down = _hosts(down_raw, name, f"{path}.down", problems) if down_raw != [] else ()
    for k, host in enumerate(down):
        if host not in hosts:
            problems.append(Problem("unknown-host", f"{path}.down[{k}]", f"{host!r} is not one of this type's nodes"))
    if len(problems) > before:
        return None
    return NodeGroup(name, int(per_node), float(node_w or 0.0), hosts, tuple((h, "down") for h in down))


def _with_unmanaged(groups: list[NodeGroup], raw: Any, problems: list[Problem]) -> list[NodeGroup]:
    if raw is None:
        return groups
    if not isinstance(raw, list):
        problems.append(Problem("bad-field", "unmanaged", "a list of {node, gpus} is needed"))
        return groups
    held: dict[str, list[int]] = {}
    type_of = {h: g for g in groups for h in g.hosts}
    for k, item in enumerate(raw):
        path = f"unmanaged[{k}]"
        node = item.get("node") if isinstance(item, Mapping) else None
        gpus = item.get("gpus") if isinstance(item, Mapping) else None
        if node not in type_of:
            problems.append(Problem("unknown-host", f"{path}.node", f"{node!r} is no node of gpu_types"))
            continue
        per_node = type_of[node].gpus_per_node
        if not (isinstance(gpus, list) and gpus and all(isinstance(i, int) and 0 <= i < per_node for i in gpus)):
            problems.append(
                Problem("bad-field", f"{path}.gpus", f"GPU indices in [0, {per_node - 1}] are needed, got {gpus!r}")
            )
            continue
        held.setdefault(node, []).extend(gpus)
    out = []
    for g in groups:
        already = {h for h, _ in g.left_out}
        extra = tuple(
            (h, f"GPUs {','.join(map(str, sorted(set(held[h]))))} held by jobs wattplan does not manage")
            for h in g.hosts
            if h in held and h not in already
        )
        out.append(NodeGroup(g.name, g.gpus_per_node, g.node_power_w, g.hosts, g.left_out + extra))
    return out


def parse_cluster_file(doc: Any, source: str) -> ClusterFile:
    """The :class:`ClusterFile` of a parsed YAML document; ``InputError`` naming ``source`` and every key at fault."""
    if not isinstance(doc, Mapping):
        raise InputError(source, [Problem("not-a-cluster", "(file)", "a mapping with gpu_types: is needed")])
    problems: list[Problem] = []
    for key in doc:
        if key not in _TOP_KEYS:
            problems.append(Problem("unknown-field", str(key), f"not a cluster key (keys: {', '.join(_TOP_KEYS)})"))
    low, high = ROUND_S_RANGE
    round_s = _number(doc.get("round_s", ROUND_S), "round_s", low, high, problems)
    cap = doc.get("power_cap_kw")
    cap_kw = None if cap is None else _number(cap, "power_cap_kw", 0.0, 1e9, problems)
    objective = doc.get("objective")
    if objective is not None and objective not in OBJECTIVES:
        problems.append(Problem("bad-field", "objective", f"must be one of {', '.join(OBJECTIVES)}, got {objective!r}"))
    raw_types = doc.get("gpu_types")
    groups: list[NodeGroup] = []
    if not isinstance(raw_types, list) or not raw_types:
        problems.append(Problem("missing-field", "gpu_types", "a non-empty list of GPU types is needed"))
    else:
        for k, raw in enumerate(raw_types):
            group = _group(raw, f"gpu_types[{k}]", problems)
            if group is not None:
                groups.append(group)
        names = [g.name for g in groups]
        for name in sorted({n for n in names if names.count(n) > 1}):
            problems.append(Problem("duplicate-type", "gpu_types", f"GPU type {name!r} is listed twice"))
        hosts = [h for g in groups for h in g.hosts]
        for host in sorted({h for h in hosts if hosts.count(h) > 1}):
            problems.append(Problem("duplicate-host", "gpu_types", f"host {host!r} is listed twice"))
    groups = _with_unmanaged(groups, doc.get("unmanaged"), problems)
    if problems:
        raise InputError(source, problems)
    assert round_s is not None and math.isfinite(round_s)
    return ClusterFile(tuple(groups), round_s, cap_kw, cast("Objective | None", objective))


def read_cluster_file(path: Path) -> ClusterFile:
    """Read and check a cluster YAML file (module docstring)."""
    try:
        doc = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        raise InputError(str(path), [Problem("not-yaml", "(file)", f"not YAML: {exc}")]) from None
    return parse_cluster_file(doc, str(path))
