"""``--solvers cbc,cmd:"mysolver {mps} {sol}"``: a solver list whose commands may hold commas and quotes.

The value is split at commas outside quotes (``'`` or ``"``), so ``cbc,cmd:"solve --opts a,b {mps} {sol}"`` is two
items; a command-line solver's command wrapped whole in one pair of quotes loses them (``cmd:"x {mps}"`` is
``cmd:x {mps}``, the quotes a shell would have removed). Every item then follows the list rules of
:mod:`planner.console.list_options` (no empty item, no repeat). Unbalanced quotes are a ``bad-option``.
"""

from __future__ import annotations

from wattplan.planner.console.list_options import repeated_list
from wattplan.planner.contracts.problems import InputError, Problem

COMMAND_PREFIX = "cmd:"
"""The prefix of a command-line solver's name (``formulations.backends.command.PREFIX``)."""


def _split_outside_quotes(text: str) -> list[str] | None:
    """``text`` split at commas outside quotes; None when a quote is left open."""
    items: list[str] = []
    current: list[str] = []
    quote = ""
    for c in text:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == ",":
            items.append("".join(current))
            current = []
            continue
        current.append(c)
    if quote:
        return None
    items.append("".join(current))
    return items


def _unwrapped(item: str) -> str:
    """A ``cmd:`` item with the quotes around its whole command removed; any other item as it is."""
    if not item.startswith(COMMAND_PREFIX):
        return item
    command = item[len(COMMAND_PREFIX) :].strip()
    if len(command) >= 2 and command[0] == command[-1] and command[0] in "'\"" and command[0] not in command[1:-1]:
        command = command[1:-1]
    return COMMAND_PREFIX + command


def split_solvers(text: str, option: str = "--solvers") -> list[str]:
    """The solver names of ``text`` (module docstring); ``""`` is none. Raises :class:`InputError` at ``option``."""
    if not text.strip():
        return []
    items = _split_outside_quotes(text)
    if items is None:
        raise InputError(option, [Problem("bad-option", option, f"a quote is not closed in {text!r}")])
    return repeated_list([_unwrapped(x.strip()) for x in items], option)


__all__ = ["split_solvers"]
