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
Every problem names the file, the key (``gpu_types[1].down[0]``) and, for a file, its line.

The file is read by :func:`planner.files.safe_yaml.load_yaml` (issue 41): no alias bomb, no duplicate key (a
second ``power_cap_kw`` is refused, never taken silently), no YAML 1.1 typing. Its values arrive as text and each
key reads its own kind (a plain decimal for a number, ASCII digits for a count); a host name is text, so
``nodes: [0755]`` names host ``0755``. A parsed document of Python values (``parse_cluster_file``) may hold numbers.
Every check is linear in the number of hosts (a 100,000-host file is checked in well under a second).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from wattplan.planner.contracts.defaults import GPUS_PER_NODE, NODE_POWER_W, ROUND_S, ROUND_S_RANGE
from wattplan.planner.contracts.domain import is_power_of_two
from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.contracts.rules import OBJECTIVES, Objective
from wattplan.planner.files.csv_frames import DECIMAL
from wattplan.planner.files.safe_yaml import line_of, load_yaml, with_lines

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
    doc: Any = field(default=None, compare=False, repr=False)
    """The document read (with lines, :mod:`planner.files.safe_yaml`), for problems found later (:meth:`at`)."""

    def at(self, path: str) -> str:
        """``path`` (``gpu_types[0].name``) with the file's line of it, ``gpu_types[0].name (line 3)``, when known."""
        line = line_of(self.doc, path)
        return path if line is None else f"{path} (line {line})"

    def host_map(self) -> dict[str, str]:
        """Plan node -> host: plan node ``TYPE-i`` is the ``i``-th usable host of the type (design §6.2 names)."""
        return {f"{g.name}-{i}": host for g in self.groups for i, host in enumerate(g.usable_hosts)}

    def left_out(self) -> dict[str, str]:
        """Every host left out of planning, with the reason."""
        return {host: why for g in self.groups for host, why in g.left_out}


def _as_number(value: Any) -> float | None:
    """A number given as a number, or as the text of a plain decimal (``300``, ``2.5``, ``1e3``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and DECIMAL.fullmatch(value.strip()):
        return float(value)
    return None


def _as_whole(value: Any) -> int | None:
    """A whole number given as an int, or as ASCII digits (``8``; not ``8.0``, ``0x8`` or ``٨``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = value.strip() if isinstance(value, str) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _number(value: Any, path: str, low: float, high: float, problems: list[Problem]) -> float | None:
    number = _as_number(value)
    if number is None or not math.isfinite(number) or not (low <= number <= high):
        problems.append(Problem("bad-field", path, f"must be a number in [{low:g}, {high:g}], got {value!r}"))
        return None
    return number


def _hosts(value: Any, name: str, path: str, problems: list[Problem]) -> tuple[str, ...]:
    count = None if isinstance(value, list) else _as_whole(value)
    if count is not None:
        if not 0 <= count <= MAX_NODES:
            problems.append(Problem("bad-field", path, f"a node count must be in [0, {MAX_NODES}], got {count}"))
            return ()
        return tuple(f"{name}-{i}" for i in range(count))
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
    given_per_node = raw.get("gpus_per_node", GPUS_PER_NODE)
    per_node = _as_whole(given_per_node)
    if per_node is None or not (1 <= per_node <= 64 and is_power_of_two(per_node)):
        problems.append(
            Problem("bad-field", f"{path}.gpus_per_node", f"must be a power of two in [1, 64], got {given_per_node!r}")
        )
    node_w = _number(raw.get("node_power_w", NODE_POWER_W), f"{path}.node_power_w", 0.0, 1e6, problems)
    if "nodes" not in raw:
        problems.append(Problem("missing-field", f"{path}.nodes", "required: host names or a node count"))
    hosts = _hosts(raw.get("nodes", []), name, f"{path}.nodes", problems)
    down_raw = raw.get("down", [])
    down = _hosts(down_raw, name, f"{path}.down", problems) if down_raw != [] else ()
    known = set(hosts)  # a set: a list made 100,000 down hosts of 100,000 a quadratic search
    for k, host in enumerate(down):
        if host not in known:
            problems.append(Problem("unknown-host", f"{path}.down[{k}]", f"{host!r} is not one of this type's nodes"))
    if len(problems) > before or per_node is None:
        return None
    return NodeGroup(name, per_node, float(node_w or 0.0), hosts, tuple((h, "down") for h in down))


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
        if not isinstance(node, str) or node not in type_of:  # a list or mapping is unhashable: check the type first
            problems.append(Problem("unknown-host", f"{path}.node", f"{node!r:.80} is no node of gpu_types"))
            continue
        per_node = type_of[node].gpus_per_node
        indices = [_as_whole(i) for i in gpus] if isinstance(gpus, list) else []
        if not (indices and all(i is not None and 0 <= i < per_node for i in indices)):
            problems.append(
                Problem("bad-field", f"{path}.gpus", f"GPU indices in [0, {per_node - 1}] are needed, got {gpus!r}")
            )
            continue
        held.setdefault(node, []).extend(i for i in indices if i is not None)
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
        problems += _repeats(groups)
    groups = _with_unmanaged(groups, doc.get("unmanaged"), problems)
    if problems:
        raise InputError(source, capped(with_lines(problems, doc)))
    assert round_s is not None and math.isfinite(round_s)
    return ClusterFile(tuple(groups), round_s, cap_kw, cast("Objective | None", objective), doc)


def _repeats(groups: list[NodeGroup]) -> list[Problem]:
    """A GPU type or a host listed twice, counted once each (linear: 100,000 hosts took 146 s with list.count)."""
    problems = []
    names = Counter(g.name for g in groups)
    for name in sorted(n for n, count in names.items() if count > 1):
        problems.append(Problem("duplicate-type", "gpu_types", f"GPU type {name!r} is listed twice"))
    where: dict[str, str] = {}
    for k, g in enumerate(groups):
        for i, host in enumerate(g.hosts):
            if host in where:
                message = f"host {host!r} is listed twice (first as {where[host]})"
                problems.append(Problem("duplicate-host", f"gpu_types[{k}].nodes[{i}]", message))
            else:
                where[host] = f"gpu_types[{k}].nodes[{i}]"
    return problems


def read_cluster_file(path: Path) -> ClusterFile:
    """Read and check a cluster YAML file (module docstring)."""
    return parse_cluster_file(load_yaml(read_text(path), str(path)), str(path))
