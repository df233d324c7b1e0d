r"""The three ways a command prints its answer: ``--format table|json|csv`` (docs/design.md §6.5).

A command describes its answer once, as named :class:`Section` s of plain rows (numbers stay numbers), and
prints the rich tables for ``table``; for the other two formats the sections alone are printed:

* ``json``: one JSON document, an object with one key per section in the command's order; a *record*
  section (the plan's summary) is an object, any other a list of row objects; keys are the rows' keys, stable
  from run to run; numbers are JSON numbers (energies in J, power in W unless the key names another unit).
* ``csv``: one CSV block per section, each with its own header row and a blank line between blocks; the first
  column, ``table``, names the section on every row, so a reader may split on the blank lines or on that column.
  A nested value (a list or an object) is its compact JSON text.

Both are printed on a terminal, so neither carries a control character of user text: JSON writes every one as a
``\u`` escape (Python's encoder does, but for DEL, which is escaped here), and a CSV cell writes each as
:func:`~planner.console.terminal.plain` does (``\x1b``; tab and newline kept, inside quotes).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wattplan.planner.console.terminal import plain


class OutputFormat(StrEnum):
    """How a command prints its answer."""

    table = "table"
    json = "json"
    csv = "csv"


@dataclass(frozen=True)
class Section:
    """One table of an answer: ``name`` (the JSON key, the CSV ``table`` column) and its ``rows``.

    ``record``: the section is one object (JSON prints ``rows[0]`` as an object, not a list of one).
    """

    name: str
    rows: Sequence[Mapping[str, Any]]
    record: bool = False


def sections_json(sections: Sequence[Section]) -> str:
    """The answer as one JSON document (module docstring), indented by one space, ending in a newline."""
    doc: dict[str, Any] = {}
    for s in sections:
        doc[s.name] = (dict(s.rows[0]) if s.rows else {}) if s.record else [dict(r) for r in s.rows]
    return json.dumps(doc, indent=1).replace("\x7f", "\\u007f") + "\n"  # ASCII: DEL the only control left raw


def _csv_cell(value: Any) -> Any:
    """A cell as CSV text: None empty, a bool ``true``/``false``, a list or object compact JSON, text made plain."""
    if isinstance(value, str):
        return plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, separators=(",", ":")).replace("\x7f", "\\u007f")
    return value


def sections_csv(sections: Sequence[Section]) -> str:
    """The answer as CSV blocks (module docstring): header ``table,KEY...`` then rows, a blank line between."""
    blocks = []
    for s in sections:
        keys: list[str] = []
        for row in s.rows:
            keys += [k for k in row if k not in keys]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["table", *keys])
        for row in s.rows:
            writer.writerow([s.name, *(_csv_cell(row.get(k)) for k in keys)])
        blocks.append(buffer.getvalue())
    return "\n".join(blocks)


def sections_text(sections: Sequence[Section], fmt: OutputFormat) -> str:
    """The answer in ``fmt`` (``json`` or ``csv``); ``table`` has no plain text (print the rich tables)."""
    if fmt == OutputFormat.json:
        return sections_json(sections)
    if fmt == OutputFormat.csv:
        return sections_csv(sections)
    raise ValueError(f"format {fmt.value} is printed as rich tables, not plain text")


__all__ = ["OutputFormat", "Section", "sections_csv", "sections_json", "sections_text"]
