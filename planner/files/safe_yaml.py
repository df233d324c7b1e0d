"""A strict YAML reader for the files an operator writes by hand: job lists and cluster files.

``yaml.safe_load`` is the wrong tool for them (issue 41):

* **Aliases multiply.** An alias is a reference, so nine anchors of nine aliases each (411 bytes) describe nine
  to the ninth values; whatever walks the result (``str()`` of a field, a check of every item) takes tens of
  seconds and gigabytes. Here at most :data:`MAX_ALIASES` aliases are read, and the values they add (each alias
  counts the expanded size of what it names) are at most :data:`MAX_ALIAS_VALUES` in all: a bomb is refused at the
  first alias past the bound, in milliseconds. An alias to a node not yet complete (a recursive structure) is
  refused too.
* **Duplicate keys.** ``safe_load`` keeps the last value silently (``power_cap_kw: 6`` then ``power_cap_kw: 600``
  plans at 600 kW). Here a key given twice is a ``duplicate-key`` problem naming the key and both lines.
* **YAML 1.1 typing.** ``safe_load`` turns ``0755`` into 493, ``1:30`` into 90, ``yes`` into True and ``2001-12-14``
  into a date. Here every scalar is a string (quoted, block or plain) except a plain ``~``, ``null``, ``Null``,
  ``NULL`` or nothing at all, which is None (the YAML 1.2 core schema's null). A field that wants a number reads
  it from the text itself (``planner.rounds.job_list``, ``planner.rounds.cluster_file``), so ``user: 0755`` stays
  ``"0755"``. An explicit tag other than ``!!str``, ``!!seq``, ``!!map`` or ``!`` is refused (no ``!!python/...``,
  no ``!!binary``).
* **Depth.** PyYAML's composer recurses once per level, so a deeply nested document ended in ``RecursionError``.
  Here nesting is bounded by :data:`MAX_DEPTH` and the document is built with an explicit stack.

The document is built from the parser's events (libyaml's when PyYAML has it: a 100,000-host cluster file is
read in about a tenth of a second where the pure-Python composer took seconds), one document per file. Mappings
are :class:`YamlMap` and sequences :class:`YamlList`: a ``dict`` and a ``list`` that also know the line of each
key or item, so a later problem about ``gpu_types[1].down[0]`` can name its line (:func:`with_lines`). Every
problem of the reader names the line (and the column of a syntax error) and the path of the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from wattplan.planner.contracts.problems import InputError, Problem, format_path

MAX_DEPTH: Final = 64
"""Deepest nesting of mappings and sequences a file may have (a job list needs 4)."""
MAX_ALIASES: Final = 100
"""Most aliases (``*name``) a file may use."""
MAX_ALIAS_VALUES: Final = 10_000
"""Most values all aliases together may add to the document, each alias counting every value below what it names."""

NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
"""Plain scalars read as None (YAML 1.2 core schema); every other scalar is a string."""
_STANDARD_TAGS: Final = frozenset({"!", "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})

try:  # libyaml's parser: the same events, about thirty times faster
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.loader import SafeLoader as _Parser


class YamlMap(dict[str, Any]):
    """A YAML mapping: a ``dict`` that also knows its own line and the line of each key (1-based)."""

    line: int
    key_lines: dict[str, int]

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines = {}


class YamlList(list[Any]):
    """A YAML sequence: a ``list`` that also knows its own line and the line of each item (1-based)."""

    line: int
    item_lines: list[int]

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines = []


@dataclass
class _Open:
    """A mapping or sequence being read: its value, its path, its anchor, the key waiting for a value."""

    value: YamlMap | YamlList
    path: tuple[str | int, ...]
    anchor: str | None
    size: int = 1
    key: str | None = None
    key_line: int = 0


def _bad(source: str, code: str, path: str, message: str) -> InputError:
    return InputError(source, [Problem(code, path, message)])


def _at(path: tuple[str | int, ...], line: int) -> str:
    """A problem's path: the field's path and its line, ``gpu_types[0].nodes (line 4)``."""
    return f"{format_path(path)} (line {line})" if path else f"line {line}"


class _Builder:
    """Builds one document from parser events with an explicit stack (no recursion), enforcing the module's rules."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.stack: list[_Open] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.aliases = 0
        self.alias_values = 0
        self.root: Any = None

    def _child_path(self) -> tuple[str | int, ...]:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, YamlMap):
            return (*top.path, top.key if top.key is not None else "?")
        return (*top.path, len(top.value))

    def _check_tag(self, tag: str | None, line: int) -> None:
        if tag is not None and tag not in _STANDARD_TAGS:
            raise _bad(
                self.source,
                "yaml-tag",
                _at(self._child_path(), line),
                f"explicit tag {tag!r} is not read here: write plain values (strings, lists, mappings)",
            )

    def _add(self, value: Any, size: int, line: int, anchor: str | None, key_text: str | None = None) -> None:
        """Put a finished value (``size`` values in all) into the open container, or make it the document."""
        if anchor is not None:
            self.anchors[anchor] = (value, size)
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.value, YamlList):
            top.value.append(value)
            top.value.item_lines.append(line)
            return
        if top.key is None:  # this value is a key
            if key_text is None:
                raise _bad(
                    self.source,
                    "yaml-key",
                    _at(top.path, line),
                    "a key must be a plain or quoted word, not a list, a mapping or an alias",
                )
            if key_text in top.value.key_lines:
                first = top.value.key_lines[key_text]
                raise _bad(
                    self.source,
                    "duplicate-key",
                    _at((*top.path, key_text), line),
                    f"key {key_text!r} is given twice (lines {first} and {line}): which value is meant? keep one",
                )
            top.key, top.key_line = key_text, line
            return
        top.value[top.key] = value
        top.value.key_lines[top.key] = top.key_line
        top.key = None

    def scalar(self, event: Any) -> None:
        line = event.start_mark.line + 1
        if event.tag is not None:
            self._check_tag(event.tag, line)
        text = event.value
        value = None if text in NULLS and event.implicit[0] and event.tag is None else text
        self._add(value, 1, line, event.anchor, key_text=text)

    def start(self, event: Any, kind: type[YamlMap] | type[YamlList]) -> None:
        line = event.start_mark.line + 1
        self._check_tag(event.tag, line)
        path = self._child_path()
        if len(self.stack) >= MAX_DEPTH:
            raise _bad(
                self.source,
                "too-deep",
                _at(path[:4], line),
                f"lists and mappings nested more than {MAX_DEPTH} levels deep: no job list or cluster file is",
            )
        self.stack.append(_Open(kind(line), path, event.anchor))

    def end(self, event: Any) -> None:
        closed = self.stack.pop()
        self._add(closed.value, closed.size, closed.value.line, closed.anchor)

    def alias(self, event: Any) -> None:
        line = event.start_mark.line + 1
        if self.stack and isinstance(self.stack[-1].value, YamlMap) and self.stack[-1].key is None:
            self._add(None, 1, line, None)  # an alias in a key's place: refused as such
        path = _at(self._child_path(), line)
        if event.anchor not in self.anchors:
            raise _bad(
                self.source,
                "yaml-alias",
                path,
                f"alias *{event.anchor} names no complete value before it (an undefined or recursive anchor)",
            )
        self.aliases += 1
        value, size = self.anchors[event.anchor]
        self.alias_values += size
        if self.aliases > MAX_ALIASES:
            raise _bad(
                self.source, "yaml-alias", path, f"more than {MAX_ALIASES} aliases (*name): write the values out"
            )
        if self.alias_values > MAX_ALIAS_VALUES:
            raise _bad(
                self.source,
                "yaml-alias",
                path,
                f"aliases expand to more than {MAX_ALIAS_VALUES} values (nested aliases multiply): write them out",
            )
        self._add(value, size, line, None)


def _events(parser: Any) -> Iterable[Any]:
    while parser.check_event():
        yield parser.get_event()


def load_yaml(text: str, source: str) -> Any:
    """The one document of ``text`` by the module's rules: None, a string, a :class:`YamlMap` or a :class:`YamlList`.

    Raises :class:`InputError` naming ``source`` with the line, the field and what to do: ``not-yaml`` (syntax,
    with line and column), ``duplicate-key``, ``yaml-alias``, ``too-deep``, ``yaml-tag``, ``yaml-key``,
    ``several-documents``.
    """
    builder = _Builder(source)
    parser: Any = None
    documents = 0
    try:
        parser = _Parser(text)  # the pure-Python reader checks the characters here
        for event in _events(parser):
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    line = event.start_mark.line + 1
                    message = "a second YAML document (after ---): one document per file"
                    raise _bad(source, "several-documents", f"line {line}", message)
            elif isinstance(event, yaml.ScalarEvent):
                builder.scalar(event)
            elif isinstance(event, yaml.MappingStartEvent):
                builder.start(event, YamlMap)
            elif isinstance(event, yaml.SequenceStartEvent):
                builder.start(event, YamlList)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                builder.end(event)
            elif isinstance(event, yaml.AliasEvent):
                builder.alias(event)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(0, exc.position)) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        what = f"character U+{code:04X} is not allowed in a YAML file ({exc.reason})"
        raise _bad(source, "not-yaml", f"line {line}", f"not YAML: {what}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "(file)"
        what = " ".join(part for part in (exc.context, exc.problem) if part)
        raise _bad(source, "not-yaml", where, f"not YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise _bad(source, "not-yaml", "(file)", f"not YAML: {exc}") from None
    finally:
        dispose = getattr(parser, "dispose", None) if parser is not None else None
        if dispose is not None:
            dispose()
    return builder.root


_PART = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")


def _parts(path: str) -> list[str | int]:
    """``gpu_types[1].down[0]`` -> ``["gpu_types", 1, "down", 0]``."""
    return [int(m.group(1)) if m.group(1) is not None else m.group(2) for m in _PART.finditer(path)]


def line_of(doc: Any, path: str | Sequence[str | int]) -> int | None:
    """The line of the deepest part of ``path`` (``jobs[2].gpus`` or its parts) that ``doc`` holds; None if none."""
    line: int | None = None
    node = doc
    for part in _parts(path) if isinstance(path, str) else path:
        if isinstance(node, YamlMap) and isinstance(part, str) and part in node.key_lines:
            line, node = node.key_lines[part], node[part]
        elif isinstance(node, YamlList) and isinstance(part, int) and 0 <= part < len(node):
            line, node = node.item_lines[part], node[part]
        else:
            break
    return line


def with_lines(problems: Iterable[Problem], doc: Any) -> list[Problem]:
    """``problems`` with `` (line N)`` after each path that ``doc`` (from :func:`load_yaml`) can place."""
    out = []
    for p in problems:
        line = line_of(doc, p.path) if p.path and not p.path.startswith("(") else None
        out.append(Problem(p.code, f"{p.path} (line {line})", p.message) if line is not None else p)
    return out
