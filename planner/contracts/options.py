"""Options declared once: a face's options are one frozen dataclass whose fields carry unit, range, choices and help.

A *face* of the product (``plan``, the replay, ``bench``, the agent, ``cluster up``) declares its options as an
:class:`OptionRecord`: each field is written once with :func:`option` (default, help, unit, range or choices, the
command line's flag), and its type annotation is the option's kind (``float | None``: a number or absent). From that
one declaration

* the command line's typer command is generated (``planner.cli.faces``: name, flag, default, help),
* the Python API takes the same fields as keywords and runs the same check (:meth:`OptionRecord.checked`),
* the library code reads the typed record, never loose keywords.

:meth:`OptionRecord.problems` turns every bad value into one :class:`~planner.contracts.problems.Problem` whose path
names the option both ways, the record's field and the command line's flag: ``power_cap_w (--power-cap-w)``, with
``must be > 0 W, got -5``. The command line and the Python API print the same text. A number option is always
finite (NaN and infinity are refused whatever its range: a 1e308 W cap made an infinite budget no JSON can hold).

Rules between options (two that exclude each other, one that needs another) are :class:`Rule` objects of the
record (``RULES``), checked after each value's own check.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import math
import numbers
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, ClassVar, Self

from wattplan.planner.contracts.defaults import RESTART_S
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import RoundRules, rules_problems

OPTION_KEY = "wattplan.option"
"""The key of a field's metadata that holds its :class:`OptionSpec`."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """What one option is, beside its name, kind and default (the dataclass field's).

    ``unit``: the unit of a number (``W``, ``s``, ``J``, ``kWh``, ``%``; ``""`` for a count or a fraction), shown in
    the help and in errors. ``low``/``high``: the range's ends (None: open to that side); ``low_open``/``high_open``:
    the end itself is excluded. ``choices``: the values a text option may take. ``flag``: the command line's name
    (default ``--`` and the field's name with dashes); ``short``: a one-letter alias (``-o``); ``argument``: a
    positional argument of the command, not an option. ``metavar`` and ``parser`` shape the command line only.
    """

    help: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    flag: str | None = None
    short: str | None = None
    argument: bool = False
    metavar: str | None = None
    parser: Callable[[str], Any] | None = None
    hidden: bool = False


def option(
    default: Any,
    help: str,
    *,
    unit: str = "",
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    choices: Sequence[str] | type[enum.Enum] | None = None,
    flag: str | None = None,
    short: str | None = None,
    argument: bool = False,
    metavar: str | None = None,
    parser: Callable[[str], Any] | None = None,
    hidden: bool = False,
) -> Any:
    """One option's field of an :class:`OptionRecord`: its default and :class:`OptionSpec` (see there)."""
    if isinstance(choices, type) and issubclass(choices, enum.Enum):
        choices = tuple(str(member.value) for member in choices)
    spec = OptionSpec(
        help=help,
        unit=unit,
        low=low,
        high=high,
        low_open=low_open,
        high_open=high_open,
        choices=None if choices is None else tuple(choices),
        flag=flag,
        short=short,
        argument=argument,
        metavar=metavar,
        parser=parser,
        hidden=hidden,
    )
    return dataclasses.field(default=default, metadata={OPTION_KEY: spec})


_KINDS: dict[Any, tuple[type, str]] = {
    bool: (bool, "true or false"),
    int: (numbers.Integral, "a whole number"),
    float: (numbers.Real, "a number"),
    str: (str, "a text"),
    Path: (PurePath, "a path"),
}
"""Each kind an option may have: the class its Python values must be of and how an error names it."""


@dataclass(frozen=True, slots=True)
class Option:
    """One declared option of a record: its field, kind and default, and its :class:`OptionSpec`.

    ``kind``: bool, int, float, str or Path; ``optional``: None allowed; ``many``: a list of ``kind``.
    """

    name: str
    kind: type
    optional: bool
    many: bool
    default: Any
    spec: OptionSpec

    @property
    def flag(self) -> str:
        """The command line's name: ``--power-cap-w`` (``TRACE`` for a positional argument)."""
        if self.spec.argument:
            return self.spec.metavar or self.name.upper()
        return self.spec.flag or "--" + self.name.replace("_", "-")

    @property
    def label(self) -> str:
        """How an error names the option on both faces: ``power_cap_w (--power-cap-w)``."""
        return f"{self.name} ({self.flag})"

    def range_text(self) -> str:
        """The range in words with its unit: ``> 0 W``, ``in [0, 1)``, ``>= 1``; ``""`` when unbounded."""
        unit = f" {self.spec.unit}" if self.spec.unit else ""
        low, high = self.spec.low, self.spec.high
        if low is not None and high is not None:
            left, right = "(" if self.spec.low_open else "[", ")" if self.spec.high_open else "]"
            return f"in {left}{self._number(low)}, {self._number(high)}{right}{unit}"
        if low is not None:
            return f"{'>' if self.spec.low_open else '>='} {self._number(low)}{unit}"
        if high is not None:
            return f"{'<' if self.spec.high_open else '<='} {self._number(high)}{unit}"
        return ""

    def _number(self, value: float) -> str:
        """A range end or a value as written: whole numbers of a whole-number option exactly, others with ``:g``."""
        return str(int(value)) if self.kind is int else f"{value:g}"

    def problems(self, value: Any) -> list[Problem]:
        """What is wrong with ``value`` for this option (empty: nothing), each problem naming :attr:`label`."""
        if value is None:
            return [] if self.optional else [self._problem(f"must be given, got {value!r}")]
        items = _items(value, self.kind) if self.many else [value]
        if items is None:
            return [self._problem(f"must be a list of {_KINDS[self.kind][1]}s, got {value!r:.60}")]
        for item in items:
            if (why := self._item_problem(item)) is not None:
                return [self._problem(why)]
        return []

    def _item_problem(self, value: Any) -> str | None:
        """Why one value is bad, or None."""
        kind_name = _KINDS[self.kind][1] if self.kind in _KINDS else self.kind.__name__
        if not self._is_kind(value):
            return f"must be {kind_name}, got {value!r:.60}"
        if self.spec.choices is not None and str(value) not in self.spec.choices:
            return f"must be one of {', '.join(self.spec.choices)}, got {value!r:.60}"
        if self.kind in (int, float):
            number = float(value)
            if not math.isfinite(number):
                return f"must be a finite number{' ' + self.range_text() if self.range_text() else ''}, got {value}"
            if not self._in_range(number):
                return f"must be {self.range_text()}, got {self._number(value)}"
        if self.kind is str and "\x00" in value:
            return "cannot hold a NUL character"
        return None

    def _is_kind(self, value: Any) -> bool:
        """Whether ``value`` is of the option's kind (a bool is never a number)."""
        kind_class = _KINDS[self.kind][0] if self.kind in _KINDS else self.kind
        return isinstance(value, kind_class) and (self.kind is bool or not isinstance(value, bool))

    def _in_range(self, number: float) -> bool:
        """Whether ``number`` lies in the declared range."""
        low, high = self.spec.low, self.spec.high
        if low is not None and (number < low or (self.spec.low_open and number == low)):
            return False
        return high is None or not (number > high or (self.spec.high_open and number == high))

    def _problem(self, message: str) -> Problem:
        return Problem("bad-option", self.label, message)


def _items(value: Any, kind: type) -> list[Any] | None:
    """A list option's items: a list or tuple, or one comma-separated text for a list of texts; None if neither."""
    if isinstance(value, str) and kind is str:
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    return None


def _kind_of(hint: Any) -> tuple[type, bool, bool]:
    """``(kind, optional, many)`` of a field's annotation: ``float | None`` is ``(float, True, False)``."""
    optional = False
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) < len(args)
        if len(rest) != 1:
            raise TypeError(f"an option is one kind or None, not {hint}")
        hint = rest[0]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    many = origin in (tuple, list, Sequence)
    if many:
        hint = args[0]
    if hint not in _KINDS:
        raise TypeError(f"an option's kind is one of {', '.join(k.__name__ for k in _KINDS)}, not {hint}")
    return hint, optional, many


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule between options: ``check(values)`` returns the problems (each naming an option's label) or none."""

    check: Callable[[Mapping[str, Any], Callable[[str], str]], list[Problem]]
    describe: str
    """The rule in words, for the design document and the drift test (``--budget-j excludes --power-cap-w``)."""


def excludes(first: str, second: str) -> Rule:
    """``first`` and ``second`` may not both be given (not None, not False)."""

    def check(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
        if _given(values.get(first)) and _given(values.get(second)):
            return [Problem("conflicting-options", label(first), f"give {label(first)} or {label(second)}, not both")]
        return []

    return Rule(check, f"{first} excludes {second}")


def requires(needing: str, needed: str) -> Rule:
    """``needing`` may only be given with ``needed``."""

    def check(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
        if _given(values.get(needing)) and not _given(values.get(needed)):
            return [Problem("bad-option", label(needing), f"needs {label(needed)}")]
        return []

    return Rule(check, f"{needing} requires {needed}")


def _round_rules(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """The rules between a round's options (the restart shorter than the round), by the rules' one check."""
    restart = values["restart_s"] if values["restart_s"] is not None else RESTART_S
    rules = RoundRules(values["round_s"], restart, values["min_pair_rate"])
    return rules_problems(rules, {"restart_s": label("restart_s")})


ROUND_RULE = Rule(_round_rules, "restart_s shorter than round_s (contracts.rules.rules_problems)")
"""The rule of a record with ``round_s``, ``restart_s`` and ``min_pair_rate`` (the replay's, the agent's)."""


def _given(value: Any) -> bool:
    """Whether an option was given: not None and not False (a flag left off)."""
    return value is not None and value is not False


class OptionRecord:
    """Base of a face's option record: a frozen, keyword-only dataclass whose fields are :func:`option` fields.

    ``RULES``: the rules between its options. Build a record from a user's values with :meth:`checked`, which
    refuses (:class:`InputError`, source ``options``) any value of the wrong kind, outside its range or choices, or
    breaking a rule, naming each option as :attr:`Option.label`.
    """

    RULES: ClassVar[tuple[Rule, ...]] = ()

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """Every option of the record, in declaration order."""
        return _options_of(cls)  # type: ignore[arg-type]  # a class is hashable; mypy reads the dataclass __hash__

    @classmethod
    def option(cls, name: str) -> Option:
        """The option called ``name`` (KeyError if the record has none)."""
        for opt in cls.options():
            if opt.name == name:
                return opt
        raise KeyError(name)

    @classmethod
    def label(cls, name: str) -> str:
        """``name (--flag)`` of the option ``name``."""
        return cls.option(name).label

    @classmethod
    def problems(cls, values: Mapping[str, Any]) -> list[Problem]:
        """Every problem of ``values`` (a name-to-value map; names not given keep their defaults)."""
        known = {opt.name: opt for opt in cls.options()}
        problems = [
            Problem("bad-option", name, f"is not an option (options: {', '.join(known)})")
            for name in values
            if name not in known
        ]
        for opt in cls.options():
            if opt.name in values:
                problems += opt.problems(values[opt.name])
        if problems:
            return problems
        merged = {opt.name: values.get(opt.name, opt.default) for opt in cls.options()}
        for rule in cls.RULES:
            problems += rule.check(merged, cls.label)
        return problems

    @classmethod
    def checked(cls, values: Mapping[str, Any] | None = None, **more: Any) -> Self:
        """The record of ``values`` and ``more``, every one checked; :class:`InputError` with every problem."""
        given = {**(values or {}), **more}
        if problems := cls.problems(given):
            raise InputError("options", problems)
        options = {opt.name: opt for opt in cls.options()}
        typed = {name: _typed(options[name], value) for name, value in given.items()}
        return cls(**typed)

    def values(self) -> dict[str, Any]:
        """The record as a name-to-value map."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


def _typed(opt: Option, value: Any) -> Any:
    """``value`` as the option's kind: an int given for a float option becomes a float, a list option a tuple."""
    if value is None:
        return None
    if opt.many:
        items = _items(value, opt.kind) or []
        return tuple(_typed(dataclasses.replace(opt, many=False), item) for item in items)
    if opt.kind is float:
        return float(value)
    if opt.kind is int:
        return int(value)
    if opt.kind is Path:
        return Path(value)
    if opt.kind is str and isinstance(value, enum.Enum):
        return str(value.value)
    return value


@functools.cache
def _options_of(cls: type) -> tuple[Option, ...]:
    """The :class:`Option` of each field of the dataclass ``cls`` declared with :func:`option`."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(OPTION_KEY)
        if spec is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with option()")
        kind, optional, many = _kind_of(hints[f.name])
        found.append(Option(f.name, kind, optional, many, f.default, spec))
    return tuple(found)


def keyword_signature(function: Callable[..., Any], record: type[OptionRecord]) -> inspect.Signature:
    """``function``'s signature with its ``**options`` replaced by ``record``'s options as typed keywords.

    For ``help()`` and notebooks: a Python API function taking a record's options as ``**options`` shows each one
    with its default and type, from the one declaration.
    """
    own = [p for p in inspect.signature(function).parameters.values() if p.kind is not p.VAR_KEYWORD]
    hints = typing.get_type_hints(record)
    generated = [
        inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, default=opt.default, annotation=hints[opt.name])
        for opt in record.options()
    ]
    return inspect.Signature([*own, *generated], return_annotation=inspect.signature(function).return_annotation)


_KEEP: Any = object()


def same_as(record: type[OptionRecord], name: str, default: Any = _KEEP, help: str | None = None) -> Any:
    """A field declared as ``record`` declares its option ``name``: flag, unit, range, choices, help and default.

    ``default`` and ``help``, when given, replace the record's; the rest is written once, in ``record`` (the agent
    plays the replay's rounds with :class:`~planner.sim.options.ReplayOptions`' round options and solves them with
    :class:`~planner.planning.SolveOptions`' ranges).
    """
    opt = record.option(name)
    spec = opt.spec if help is None else dataclasses.replace(opt.spec, help=help)
    return dataclasses.field(default=opt.default if default is _KEEP else default, metadata={OPTION_KEY: spec})


def range_of(record: type[OptionRecord], name: str) -> dict[str, Any]:
    """The unit and range of ``record``'s option ``name``, as :func:`option` keywords.

    For another face's option with its own default and help and the same bounds: ``bench --time-limit`` refuses
    what ``plan --time-limit`` refuses.
    """
    spec = record.option(name).spec
    keys = ("unit", "low", "high", "low_open", "high_open")
    return {key: getattr(spec, key) for key in keys}
