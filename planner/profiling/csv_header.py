"""The header row of a measurement CSV: every column named once.

A header that names a column twice (``gpu0_energy,gpu0_energy``) would be read twice (a Zeus window file's
GPUs counted double) or once by whichever copy a lookup meets first; neither is what the file means. Each
repeat is a ``duplicate-column`` problem at ``line 1`` naming the column, so the reader refuses the file
before any row is read.
"""

from __future__ import annotations

from collections.abc import Sequence

from wattplan.planner.contracts.problems import InputError, Problem


def duplicate_column_problems(names: Sequence[str]) -> list[Problem]:
    """One ``duplicate-column`` problem (``line 1``) per column named again in ``names``, in header order."""
    seen: set[str] = set()
    problems = []
    for k, name in enumerate(names):
        if name in seen:
            message = f"column {name!r} appears more than once (again as column {k + 1}): each column once"
            problems.append(Problem("duplicate-column", f"line 1, {name}", message))
        seen.add(name)
    return problems


def refuse_duplicate_columns(names: Sequence[str], source: str) -> None:
    """Raise :class:`InputError` (``source``) when a column of the header ``names`` appears twice."""
    if problems := duplicate_column_problems(names):
        raise InputError(source, problems)
