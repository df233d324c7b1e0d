"""Which Slurm answers, and whether the agent can read its JSON.

``sinfo --version`` prints ``slurm 22.05.8`` (Debian's build: ``slurm-wlm 22.05.8``). Only 22.05.x is supported:
its ``squeue --json`` and ``sinfo --json`` have the OpenAPI v0.0.38 shape that :mod:`planner.agent.slurm_queue`
reads; 23.02 and later print another schema (data_parser v0.0.39 and later), and 21.08 and earlier differ too.
Note that ``sinfo --version`` needs a readable Slurm configuration (``SLURM_CONF`` or ``/etc/slurm/slurm.conf``)
even though it contacts no daemon.
"""

from __future__ import annotations

import re

from wattplan.planner.agent.commands import NOT_FOUND, Run, SlurmError, first_line, run_command
from wattplan.planner.contracts.problems import Problem

SUPPORTED = (22, 5)
"""The one Slurm release series (major, minor) whose JSON the agent reads."""
SUPPORTED_TEXT = "22.05.x (squeue/sinfo --json in the OpenAPI v0.0.38 shape)"
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
    if version[:2] == SUPPORTED:
        return None
    found = f"{version[0]}.{version[1]:02d}.{version[2]}"
    return Problem(
        "slurm-version",
        "sinfo --version",
        f"Slurm {found} is not supported: the agent reads the JSON of Slurm {SUPPORTED_TEXT} only",
    )


def require_supported(run: Run = run_command) -> tuple[int, int, int]:
    """The Slurm version, or a :class:`SlurmError` if it is missing or not supported."""
    version = slurm_version(run)
    problem = supported_problem(version)
    if problem is not None:
        raise SlurmError(problem.message)
    return version
