"""Comma-separated and repeated list options (``--deltas 0.03,0.1``, ``--solvers cbc,highs``, ``-p a -p b``).

One parser for every command's list options, with one set of rules:

* a value is split at commas and each item stripped; an empty value (``""``) is no items at all;
* an empty item (``0.1,,0.2``, a trailing comma, a blank repeated option) is an error;
* a number must be finite (``nan``, ``inf`` and ``-inf`` are refused) and inside the option's
  :class:`Bounds` (in the option's own unit, e.g. percent);
* an item given twice (two items with the same ``key``, e.g. the GPU type of ``v100:8,v100:16``) is an
  error where a repeat means nothing (the default).

Every bad item is a ``bad-option`` :class:`~planner.contracts.problems.Problem` at ``OPTION[k]`` (``k`` counts
from 0 over the items as written, empty ones included) whose message quotes the item; all of them are raised together as
one :class:`~planner.contracts.problems.InputError` whose source is the option (the command line exits 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wattplan.planner.contracts.problems import InputError, Problem


@dataclass(frozen=True)
class Bounds:
    """A closed or half-open interval of allowed values, in the option's unit (``unit``, e.g. ``" %"``)."""

    low: float
    high: float
    high_open: bool = False
    unit: str = ""

    def __contains__(self, x: float) -> bool:
        """``low <= x <= high`` (``< high`` when ``high_open``); NaN is in no interval."""
        return self.low <= x < self.high if self.high_open else self.low <= x <= self.high

    def __str__(self) -> str:
        """``[0, 1)`` or ``[0, 1000] %``."""
        return f"[{self.low:g}, {self.high:g}{')' if self.high_open else ']'}{self.unit}"


def _items(
    values: Sequence[str], option: str, key: Callable[[str], str] | None
) -> list[tuple[int, str, Problem | None]]:
    """``(k, item, problem or None)`` for every item of ``values``: empty ones and repeats are problems."""
    out: list[tuple[int, str, Problem | None]] = []
    first: dict[str, int] = {}
    for k, item in enumerate(values):
        where = f"{option}[{k}]"
        if not item:
            out.append((k, item, Problem("bad-option", where, "empty item: remove the extra comma, or give a value")))
            continue
        seen = key(item) if key is not None else None
        if seen is not None and seen in first:
            message = f"{item!r} repeats {option}[{first[seen]}]: give each once"
            out.append((k, item, Problem("bad-option", where, message)))
            continue
        if seen is not None:
            first[seen] = k
        out.append((k, item, None))
    return out


def _raise(option: str, problems: list[Problem]) -> None:
    if problems:
        raise InputError(option, problems)


def split_list(text: str, option: str, *, key: Callable[[str], str] | None = str, repeats: bool = False) -> list[str]:
    """The stripped comma-separated items of ``text`` (``""``: none); empty items and repeats raise (module docstring).

    ``key``: what makes two items the same (default the item itself); ``repeats=True`` allows repeats.
    """
    if not text.strip():
        return []
    return repeated_list([x.strip() for x in text.split(",")], option, key=key, repeats=repeats)


def repeated_list(
    values: Sequence[str], option: str, *, key: Callable[[str], str] | None = str, repeats: bool = False
) -> list[str]:
    """The stripped values of a repeatable option (``-p a -p b``); empty values and repeats raise."""
    checked = _items([v.strip() for v in values], option, None if repeats else key)
    _raise(option, [p for _, _, p in checked if p is not None])
    return [item for _, item, _ in checked]


def number_list(text: str, option: str, bounds: Bounds, *, repeats: bool = False) -> list[float]:
    """The finite numbers of a comma-separated ``text`` inside ``bounds`` (``""``: none); every bad item raises."""
    if not text.strip():
        return []
    values: list[float] = []
    problems: list[Problem] = []
    first: dict[float, int] = {}
    for k, item, problem in _items([x.strip() for x in text.split(",")], option, None):
        where = f"{option}[{k}]"
        if problem is not None:
            problems.append(problem)
            continue
        try:
            x = float(item)
        except ValueError:
            problems.append(Problem("bad-option", where, f"{item!r} is not a number"))
            continue
        if not math.isfinite(x):
            problems.append(Problem("bad-option", where, f"{item!r} is not a finite number"))
        elif x not in bounds:
            problems.append(Problem("bad-option", where, f"{item!r} is outside {bounds}"))
        elif x in first and not repeats:
            problems.append(Problem("bad-option", where, f"{item!r} repeats {option}[{first[x]}]: give each once"))
        else:
            first.setdefault(x, k)
            values.append(x)
    _raise(option, problems)
    return values


__all__ = ["Bounds", "number_list", "repeated_list", "split_list"]
