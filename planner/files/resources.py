"""Where the shipped data lives: the default instance, the profile library, sources, traces and grid signals.

The repository keeps its data in ``instances/`` at the top (the product's layout); a wheel
installs the same folder as the package data ``planner/data`` (``pyproject.toml`` maps one
onto the other), found here with :mod:`importlib.resources`. A checkout or an editable install
has no ``planner/data``, so the checkout's ``instances/`` beside the package is used instead.
Either way the files are the same bytes; nothing here depends on the working directory.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Final

DEFAULT_INSTANCE_NAME: Final = "default.json"
PROFILE_LIBRARY_NAME: Final = "profiles/gavel_zeus_v100_p100.json"
SOURCES_NAME: Final = "sources"
GAVEL_TRACES: Final = "sources/gavel/traces"
PHILLY_TRACE: Final = "sources/pollux/philly.csv"
CARBON_SIGNALS: Final = "sources/carbon"


def data_dir() -> Path:
    """The folder of the shipped data: installed package data, else the checkout's ``instances/``."""
    installed = importlib.resources.files("wattplan.planner") / "data"
    if installed.is_dir():
        return Path(str(installed))
    return Path(__file__).resolve().parents[2] / "instances"


def shipped(relative: str) -> Path:
    """A shipped file or folder by its path relative to the data folder (e.g. ``default.json``)."""
    return data_dir() / relative


def default_instance() -> Path:
    """The shipped default round instance (64 jobs of a Gavel trace on 8 V100 + 4 P100 nodes)."""
    return shipped(DEFAULT_INSTANCE_NAME)


def profile_library() -> Path:
    """The shipped profile library (Gavel throughputs x Zeus power curves, V100 and P100)."""
    return shipped(PROFILE_LIBRARY_NAME)


def source_dir() -> Path:
    """The third-party measurements the profile library is built from."""
    return shipped(SOURCES_NAME)


def shipped_traces() -> dict[str, Path]:
    """Every shipped trace by file name: the Gavel ``*.trace`` files and the Philly ``philly.csv``."""
    traces = {p.name: p for p in sorted(shipped(GAVEL_TRACES).glob("*.trace"))}
    philly = shipped(PHILLY_TRACE)
    traces[philly.name] = philly
    return traces


def resolve_trace(path: Path) -> Path:
    """``path`` if it exists, else the shipped trace of that name (``6c71a0.trace``, ``philly.csv``).

    Raises :class:`FileNotFoundError` naming ``path`` when neither exists.
    """
    if path.exists():
        return path
    found = shipped_traces().get(path.name) if path.parent == Path(".") else None
    if found is None:
        raise FileNotFoundError(2, "no such file or shipped trace", str(path))
    return found


def shipped_signals() -> dict[str, Path]:
    """Every shipped hourly grid signal by file name: ``CISO_2022.csv`` and ``ERCO_2022.csv`` (dc-rl carbon)."""
    return {p.name: p for p in sorted(shipped(CARBON_SIGNALS).glob("*.csv"))}


def resolve_signal(path: Path | str) -> Path:
    """``path`` if it exists, else the shipped signal of that bare name (``CISO_2022.csv``), else ``path``.

    Unlike :func:`resolve_trace` nothing is raised: a path that is neither is returned unchanged,
    so :func:`planner.sim.signals.read_signal` reports it as an ``unreadable`` input.
    """
    path = Path(path)
    if path.exists():
        return path
    found = shipped_signals().get(path.name) if path.parent == Path(".") else None
    return path if found is None else found
