"""The shapes of Slurm's JSON the agent reads, one per schema generation, and which release prints which.

Slurm 22.05 prints the OpenAPI v0.0.38 shape (``meta.plugin.type`` names it): ``squeue --json`` and
``sinfo --json``, one record per node there. From 23.02 on the JSON comes from a ``data_parser`` plugin whose
generation ``meta.plugin.data_parser`` names (``data_parser/v0.0.42``), and each release carries its own and two
or three earlier generations and prints the one a command asks for (``squeue --json=v0.0.42``). What changed for
the agent's fields from v0.0.38 to the data_parser generations (read off Slurm 24.11.5's own output, v0.0.40 to
v0.0.42, and SchedMD's schema descriptions of the later ones; ``tests/data/slurm_json``):

- counts and times are "number objects", ``{"set": true, "infinite": false, "number": 17}``: an unset one is read as
  0 (a pending job's start), an infinite one is a problem;
- a job's ``job_state`` and a node's ``state`` are lists: the base state and its flags (``["RUNNING",
  "CONFIGURING"]``, ``["IDLE", "DRAIN"]``); a node has no ``state_flags``;
- ``tres_per_node`` writes a GPU request as ``gres/gpu:v100:2`` (22.05: ``gres:gpu:v100:2``);
- one record per node comes from ``scontrol show nodes --json`` (``sinfo --json`` groups nodes into lines);
  ``active_features`` is a list;
- ``squeue`` lists finished jobs only when asked (``--states=all``; 22.05's JSON listed them unasked), and the agent
  learns how a job ended from them.

The agent asks each release for the newest generation it reads of those the release prints
(:data:`RELEASES`), names it on the command line, and checks that the document says so.
"""

from __future__ import annotations

from dataclasses import dataclass

LEGACY_PLUGIN = "openapi/v0.0.38"
"""``meta.plugin.type`` of Slurm 22.05's JSON."""


@dataclass(frozen=True, slots=True)
class Generation:
    """One JSON schema generation: how to ask for it and what its fields look like (module docstring)."""

    name: str
    """``v0.0.38`` ... ``v0.0.46``."""
    queue_command: tuple[str, ...]
    nodes_command: tuple[str, ...]
    data_parser: bool
    """True: a data_parser generation (number objects, state lists, ``gres/``); False: 22.05's v0.0.38."""

    @property
    def plugin(self) -> str:
        """What the document's ``meta.plugin`` says: ``openapi/v0.0.38`` or ``data_parser/v0.0.4x``."""
        return f"data_parser/{self.name}" if self.data_parser else LEGACY_PLUGIN

    @property
    def gres_prefix(self) -> str:
        """How ``tres_per_node`` starts a GPU request: ``gres/`` (data_parser) or ``gres:`` (22.05)."""
        return "gres/" if self.data_parser else "gres:"


def _data_parser(name: str) -> Generation:
    return Generation(
        name,
        ("squeue", "--states=all", f"--json={name}"),
        ("scontrol", "show", "nodes", f"--json={name}"),
        data_parser=True,
    )


LEGACY = Generation("v0.0.38", ("squeue", "--json"), ("sinfo", "--json"), data_parser=False)
"""Slurm 22.05's shape (the simulated Slurm of the replay prints it too)."""
GENERATIONS: dict[str, Generation] = {g.name: g for g in (LEGACY, *(_data_parser(f"v0.0.{n}") for n in range(40, 47)))}
"""Every generation the agent reads."""

RELEASES: dict[tuple[int, int], str] = {
    (22, 5): "v0.0.38",
    (23, 11): "v0.0.40",
    (24, 5): "v0.0.41",
    (24, 11): "v0.0.42",
    (25, 5): "v0.0.43",
    (25, 11): "v0.0.44",
    (26, 5): "v0.0.45",
    (26, 11): "v0.0.46",
}
"""Each supported release (major, minor) and the generation the agent asks it for: the newest it prints (26.11:
SchedMD's master, release candidate 1, when this was written; its v0.0.46 is in no release yet)."""


def generation_for(version: tuple[int, int, int]) -> Generation | None:
    """The generation to ask Slurm ``version`` for; None for a release the agent does not read."""
    name = RELEASES.get(version[:2])
    return None if name is None else GENERATIONS[name]


def supported_text() -> str:
    """The supported releases and their generations, for messages: ``22.05 (v0.0.38), 23.11 (v0.0.40), ...``."""
    return ", ".join(f"{major}.{minor:02d} ({name})" for (major, minor), name in RELEASES.items())
