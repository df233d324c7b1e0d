"""A face's options from a TOML file (``wattplan agent --config FILE``), and the file that gives a record's values.

A config file holds one key per option of an :class:`~planner.contracts.options.OptionRecord`, named as its flag
without the dashes (``max-jct-increase = 5``; the field's name, ``max_jct_increase``, is taken too), with TOML's own
types: a number, ``true``/``false``, a text, a list for a repeatable option (``allow-user = ["ana", "ben"]``). An
option left out keeps its default; TOML has no null, so an option whose default is a value cannot be set back to
none from the file (leave the key out instead). A relative path is read from the file's folder, so a service's
config file means the same from any working folder.

Every bad key or value is a :class:`~planner.contracts.problems.Problem` naming the file and the key
(``/etc/wattplan/agent.toml: max-jct-increase: must be in [0, 1000] %, got 2000``), and the record's rules are
checked after the command line's values are laid over the file's (:meth:`OptionRecord.checked`).

:func:`config_text` writes a record's values back as such a file (``wattplan agent --print-config``), so an
operator starts from the options a command line gave.
"""

from __future__ import annotations

import difflib
import json
import textwrap
import tomllib
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.options import Option, OptionRecord
from wattplan.planner.contracts.problems import InputError, Problem


def _key(opt: Option) -> str:
    """The option's key in a config file: its flag without the leading dashes (``max-jct-increase``)."""
    return opt.flag.removeprefix("--")


def _problem(path: Path, key: str, message: str) -> Problem:
    return Problem("bad-config", f"{path}: {key}", message)


def config_values(record: type[OptionRecord], path: Path) -> dict[str, Any]:
    """The option values a TOML config file gives ``record``, by field name; :class:`InputError` naming each fault.

    Each value has its option's kind and range checked here (the rules between options are checked when the
    command line's values are laid over these: :meth:`OptionRecord.checked`). Paths are made absolute against
    the file's folder.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), [Problem("unreadable-config", str(path), exc.strerror or str(exc))]) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(str(path), [Problem("bad-config", str(path), f"is not UTF-8 text: {exc.reason}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), [Problem("bad-config", str(path), f"is not TOML: {exc}")]) from None
    options = [opt for opt in record.options() if not opt.spec.argument]
    by_key = {_key(opt): opt for opt in options} | {opt.name: opt for opt in options}
    problems: list[Problem] = []
    values: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, value in data.items():
        opt = by_key.get(key)
        if opt is None:
            close = difflib.get_close_matches(key.replace("_", "-"), [_key(o) for o in options], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(_problem(path, key, f"is not an option{hint} (keys are the flags without --)"))
            continue
        if opt.name in seen:
            problems.append(_problem(path, key, f"gives the option {seen[opt.name]!r} gives again"))
            continue
        seen[opt.name] = key
        value = _as_kind(opt, value, path.parent)
        for found in opt.problems(value):
            problems.append(_problem(path, key, found.message))
        values[opt.name] = value
    if problems:
        raise InputError(str(path), problems)
    return values


def _as_kind(opt: Option, value: Any, folder: Path) -> Any:
    """A path option's text as a path read from ``folder`` (a list's items each); other values as TOML gave them."""
    if opt.kind is not Path:
        return value
    if opt.many and isinstance(value, list):
        return [folder / item if isinstance(item, str) else item for item in value]
    return folder / value if isinstance(value, str) and value else value


def config_text(options: OptionRecord, header: str) -> str:
    """``options`` as a config file :func:`config_values` reads back to the same values: one key per option.

    An option whose value is none is written as a comment (TOML has no null), with its help, so the file lists
    every option. ``header``: the first comment line (which command reads the file).
    """
    lines = [f"# {header}", ""]
    for opt in type(options).options():
        if opt.spec.argument:
            continue
        value = getattr(options, opt.name)
        lines += textwrap.wrap(opt.spec.help, width=100, initial_indent="# ", subsequent_indent="# ")
        if value is None:
            lines.append(f"# {_key(opt)} =")
        else:
            lines.append(f"{_key(opt)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    """One value in TOML: a bool, a number, a text (JSON's escapes are TOML's), a list of those; a path as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value))
