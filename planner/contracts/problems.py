"""Input and plan problems, each with a stable code and the path of the offending field.

Paths are written as people read them: ``jobs[3].gpus[1]``, ``round.budget_j``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def format_path(parts: Iterable[str | int]) -> str:
    """``("jobs", 3, "gpus", 1)`` -> ``"jobs[3].gpus[1]"``; empty -> ``"(root)"``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: ``code`` (stable, for scripts), ``path``, ``message``."""

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.code}]"


class InputError(Exception):
    """An input file is unreadable or inconsistent; carries every problem found."""

    def __init__(self, source: str, problems: Sequence[Problem]):
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s)\n{lines}")


class SolutionRejected(InputError):
    """An outside solver's solution file gives no usable plan; ``source`` is the file.

    Not a solution in a known format, no solution in it, unknown or missing columns, broken
    bounds, integrality or rows. The command line exits 1 for it (the command was well formed,
    the answer it was given is not), where other :class:`InputError` problems exit 2.
    """


MAX_REPORTED_PROBLEMS = 500
"""Most problems one check reports: a hostile file could otherwise yield millions (and a table no one reads)."""

MORE_PROBLEMS = "more-problems"


def capped(problems: Iterable[Problem], limit: int = MAX_REPORTED_PROBLEMS) -> list[Problem]:
    """The first ``limit`` problems; if there are more, stop there and add one ``more-problems`` entry.

    Stops consuming ``problems`` (a generator may be lazy) after ``limit + 1`` items.
    """
    out: list[Problem] = []
    for problem in problems:
        if len(out) == limit:
            message = f"only the first {limit} problems are listed; fix them and check again"
            out.append(Problem(MORE_PROBLEMS, "(more)", message))
            break
        out.append(problem)
    return out


class RunFailed(RuntimeError):
    """Work the user asked for failed for a reason the message states, not a defect of wattplan.

    A replay killed for memory, a worker that died: the command line prints it as an error (exit 1), never as an
    internal error.
    """
