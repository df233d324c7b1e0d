"""Plan node names (``<gpu_type>-<index>``, e.g. ``v100-3``) to the host names a launcher uses."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.launch.quoting import comment_text

# A host name every target accepts: letters, digits, dots, dashes and underscores, alphanumeric at both ends.
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")


def is_host_name(text: str) -> bool:
    """True for a plain host name (``[A-Za-z0-9._-]``, alphanumeric ends, at most 253 characters)."""
    return bool(_HOST.fullmatch(text))


@dataclass(frozen=True)
class HostMap:
    """How plan nodes become hosts: an explicit map, a prefix, or (default) the plan names themselves."""

    mapping: Mapping[str, str] | None = None
    prefix: str = ""
    source: str = "--node-map"

    def host(self, node: str) -> str:
        """The host of plan node ``node``; raises :class:`InputError` when it is missing or not a host name."""
        if self.mapping is not None:
            if node not in self.mapping:
                raise InputError(self.source, [Problem("unmapped-node", node, f"the plan uses node {node!r}; map it")])
            host = self.mapping[node]
            path = node
        else:
            host = f"{self.prefix}{node}"
            path = "--node-prefix" if self.prefix else "placement.node"
        if not is_host_name(host):
            raise InputError(
                self.source if self.mapping is not None else "plan",
                [Problem("bad-host-name", path, f"{comment_text(host)} is not a host name ([A-Za-z0-9._-])")],
            )
        return host

    def check(self, nodes: Iterable[str]) -> None:
        """Resolve every node at once so every problem is reported together."""
        problems: list[Problem] = []
        source = "plan"
        hosts: dict[str, str] = {}
        for node in sorted(set(nodes)):
            try:
                hosts[node] = self.host(node)
            except InputError as exc:
                problems.extend(exc.problems)
                source = exc.source
        if problems:
            raise InputError(source, problems)
        seen: dict[str, str] = {}
        for node, host in hosts.items():
            if host in seen:
                problems.append(
                    Problem("duplicate-host", node, f"nodes {seen[host]!r} and {node!r} both map to host {host!r}")
                )
            seen[host] = node
        if problems:
            raise InputError(self.source, problems)


def instance_host_map(instance: Path) -> HostMap | None:
    """The instance's own map, ``extra.hosts`` (plan node -> host; ``instance from-jobs`` writes it), or None.

    ``launch`` uses it when neither ``--node-map`` nor ``--node-prefix`` is given (docs/design.md §9.9).
    """
    doc = read_json(instance)
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if hosts is None:
        return None
    return _checked_map(hosts, f"{instance} (hosts)")


def _checked_map(doc: object, source: str) -> HostMap:
    """A :class:`HostMap` of a JSON object node -> host; ``InputError`` naming ``source`` and each bad entry."""
    if not isinstance(doc, dict):
        raise InputError(source, [Problem("bad-node-map", "(root)", "a node map is a JSON object: node -> host")])
    problems = [
        Problem("bad-node-map", f"{key}", f"the host must be a string, not {type(value).__name__}")
        for key, value in doc.items()
        if not isinstance(value, str)
    ]
    problems += [
        Problem("bad-host-name", f"{key}", f"{comment_text(value)} is not a host name ([A-Za-z0-9._-])")
        for key, value in doc.items()
        if isinstance(value, str) and not is_host_name(value)
    ]
    if problems:
        raise InputError(source, problems)
    return HostMap(mapping=dict(doc), source=source)


def load_host_map(path: Path | None, prefix: str | None) -> HostMap:
    """Read ``--node-map FILE`` (a JSON object plan node -> host) or take ``--node-prefix``; not both.

    Raises :class:`InputError` naming the offending entry for anything but an object of strings.
    """
    if path is not None and prefix:
        raise InputError("options", [Problem("conflicting-options", "--node-map", "give --node-map or --node-prefix")])
    if path is None:
        if prefix and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", prefix):
            raise InputError(
                "options", [Problem("bad-option", "--node-prefix", f"{comment_text(prefix)} is not a host-name prefix")]
            )
        return HostMap(prefix=prefix or "")
    return _checked_map(read_json(path), str(path))
