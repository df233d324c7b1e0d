"""Which Slurm answers, and whether the agent can read its JSON.

``sinfo --version`` prints ``slurm 22.05.8`` (Debian's build: ``slurm-wlm 24.11.5``). The releases the agent
reads are :data:`planner.agent.slurm_schema.RELEASES`'s, each with the JSON generation it is asked for; any other
is refused by name (23.02 prints only data_parser v0.0.39, 21.08 and earlier another shape again). Note that
``sinfo --version`` needs a readable Slurm configuration (``SLURM_CONF`` or ``/etc/slurm/slurm.conf``)
even though it contacts no daemon.
"""

from __future__ import annotations

import re

from wattplan.planner.agent.commands import NOT_FOUND, Run, SlurmError, first_line, run_command
from wattplan.planner.agent.slurm_schema import Generation, generation_for, supported_text
from wattplan.planner.contracts.problems import Problem

VERSION_COMMAND = ("sinfo", "--version")

_VERSION = re.compile(r"^slurm(?:-wlm)?\s+(\d+)\.(\d+)\.(\d+)\S*\s*$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``"slurm 22.05.8"`` or ``"slurm-wlm 22.05.8"`` -> ``(22, 5, 8)``; anything else is a :class:`SlurmError`."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise SlurmError(f"cannot read a Slurm version from `sinfo --version`: {text.strip()[:200]!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def slurm_version(run: Run = run_command) -> tuple[int, int, int]:
    """The (major, minor, patch) of the Slurm that ``sinfo --version`` reports; a clear error when it cannot."""
    result = run(VERSION_COMMAND)
    if result.returncode == NOT_FOUND:
        raise SlurmError("`sinfo` is not installed or not on PATH: the agent needs Slurm's client commands")
    if not result.ok:
        raise SlurmError(f"`sinfo --version` failed with exit {result.returncode}: {first_line(result.stderr)}")
    return parse_version(result.stdout)


def supported_problem(version: tuple[int, int, int]) -> Problem | None:
    """None for a supported Slurm, else the problem naming the version found and what is supported."""
    if generation_for(version) is not None:
        return None
    found = f"{version[0]}.{version[1]:02d}.{version[2]}"
    return Problem(
        "slurm-version",
        "sinfo --version",
        f"Slurm {found} is not supported: the agent reads the JSON of Slurm {supported_text()} only",
    )


def require_supported(run: Run = run_command) -> tuple[tuple[int, int, int], Generation]:
    """The Slurm version and the JSON generation to ask it for; a :class:`SlurmError` if missing or not supported."""
    version = slurm_version(run)
    generation = generation_for(version)
    if generation is None:
        problem = supported_problem(version)
        raise SlurmError(problem.message if problem is not None else "unsupported Slurm")
    return version, generation
