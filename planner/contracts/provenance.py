"""Which wattplan wrote a file, and how: the ``written_by`` key of its JSON outputs (docs/design.md §7.4).

``written_by = {"command": [ARG, ...], "version": "X.Y.Z"}``: the command line as its words (``wattplan`` first)
and the version of the package that ran. Readers ignore it: the plan and instance schemas allow it as an optional
property, and nothing is computed from it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

PACKAGE = "wattplan"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
"""The checkout's ``pyproject.toml``: the version where the package is not installed."""


def wattplan_version() -> str:
    """The installed package's version (``importlib.metadata``), else the checkout's pyproject, else ``unknown``."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        pass
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return "unknown"
    found = project.get("version") if project.get("name") == PACKAGE else None
    return str(found) if found else "unknown"


def written_by(command: Sequence[str]) -> dict[str, Any]:
    """The ``written_by`` record of an output written by the command line ``command`` (its words)."""
    return {"command": [str(word) for word in command], "version": wattplan_version()}


__all__ = ["PACKAGE", "wattplan_version", "written_by"]
