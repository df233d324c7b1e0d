"""The kinds of the Python API's keywords, checked against their annotations before any option's own check.

From Python any object reaches a keyword: ``wattplan.simulate(cluster=None)`` ended in ``AttributeError:
'NoneType' object has no attribute 'strip'``, ``wattplan.plan(time_limit_s="2")`` in ``TypeError: '<' not
supported``, each naming nothing. The command line can give neither (its values always have their option's kind),
so the checks of ranges and choices behind both assume the kind is right; :func:`check_keywords` checks it first and
raises :class:`~planner.contracts.problems.InputError` naming every keyword of the wrong kind.
"""

from __future__ import annotations

import inspect
import numbers
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

from wattplan.planner.contracts.problems import InputError, Problem

_KINDS: dict[Any, Any] = {type(None): type(None), bool: bool, int: numbers.Integral, float: numbers.Real}
_KINDS |= {str: str, Path: PurePath}
"""The annotated types checked, each with the class its values must be of (numpy's numbers are numbers too)."""


def fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type ``hint``; a type this does not know is left to the option's check.

    A number is a real (an integral number for ``int``), never a bool; a list option is a list or tuple of its
    items, or one text for a list of texts.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if origin is Sequence:
        items = [value] if isinstance(value, str) and args == (str,) else value
        return isinstance(items, list | tuple) and all(fits(v, args[0]) for v in items)
    if hint not in _KINDS:
        return True
    return isinstance(value, _KINDS[hint]) and (hint is bool or not isinstance(value, bool))


def check_keywords(
    function: Callable[..., Any], given: Mapping[str, Any], name: Callable[[str], str] = lambda keyword: keyword
) -> None:
    """Raise :class:`InputError` naming (``name(keyword)``) each parameter of ``function`` not of its annotated type.

    ``given`` maps names to values (a ``locals()``: names that are not parameters are ignored).
    """
    hints = typing.get_type_hints(function)
    annotations = {key: p.annotation for key, p in inspect.signature(function).parameters.items()}
    problems = [
        Problem("bad-option", name(key), f"must be {annotations[key]}, got {value!r:.60}")
        for key, value in given.items()
        if key in hints and key != "return" and not fits(value, hints[key])
    ]
    if problems:
        raise InputError("options", problems)
