"""Mutations of valid inputs: JSON documents, CSV and trace text, raw bytes, file kinds and option values.

Every function takes a :class:`random.Random` and returns the mutated content and a short label of what was done
(``json:null@jobs[1].gpus``), so a case is named by its surface, its seed and this label.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

MARKUP = ["[/]", "[red]x", "[bold]job[/bold]", ":smile:", "[link=file:///etc/passwd]x[/link]"]
CONTROL = ["\x00", "\x1b[31mred\x1b[0m", "a\rb", "tab\there", "\u202eevil", "line\nbreak"]
SUPERSCRIPT = ["\u00b2", "1\u00b2", "\u2078", "\u00b9\u2070"]
BIG_STRING_CHARS = 20_000

JSON_VALUE_KINDS = [
    "delete",
    "null",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1",
    "0",
    "1.5",
    "huge-int",
    "wrong-type-str",
    "wrong-type-list",
    "wrong-type-object",
    "wrong-type-bool",
    "empty-string",
    "huge-string",
    "markup",
    "control",
    "superscript",
    "duplicate-key",
    "deep-nesting",
    "empty-container",
]
JSON_BYTE_KINDS = ["truncate", "bom", "invalid-utf8", "empty"]
CSV_KINDS = [
    "truncate-row",
    "extra-column",
    "missing-column",
    "duplicate-column",
    "unterminated-quote",
    "timezone",
    "unit-suffix",
    "not-available",
    "nan-cell",
    "inf-cell",
    "huge-cell",
    "negative-cell",
    "zero-cell",
    "empty-cell",
    "markup-cell",
    "superscript-cell",
    "blank-lines",
    "header-repeated",
    "nul-byte",
    "reorder-columns",
    "header-only",
    "drop-header",
    "crlf",
]
TEXT_BYTE_KINDS = ["truncate", "bom", "invalid-utf8", "empty"]
FILE_KINDS = ["missing", "directory"]

_DUP = "__hostile_duplicate__"
_DEEP = "__hostile_deep__"


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) to a value inside ``doc``, the root excluded."""
    found: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.append((*prefix, key))
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found.append((*prefix, index))
            found.extend(_paths(value, (*prefix, index)))
    return found


def path_text(path: tuple[Any, ...]) -> str:
    """``("jobs", 1, "gpus")`` -> ``jobs[1].gpus`` (the notation of wattplan's problem paths)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _replacement(kind: str, old: Any, rng: random.Random) -> Any:
    """The new value for a JSON value mutation ``kind`` (``old`` is the value it replaces)."""
    table: dict[str, Any] = {
        "null": None,
        "nan": math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "1e308": 1e308,
        "-1": -1,
        "0": 0,
        "1.5": 1.5,
        "huge-int": 10**30,
        "wrong-type-str": "x",
        "wrong-type-list": [old] if not isinstance(old, list) else "x",
        "wrong-type-object": {"value": old},
        "wrong-type-bool": True,
        "empty-string": "",
        "huge-string": "x" * BIG_STRING_CHARS,
        "markup": rng.choice(MARKUP),
        "control": rng.choice(CONTROL),
        "superscript": rng.choice(SUPERSCRIPT),
        "deep-nesting": _DEEP,
        "empty-container": {} if isinstance(old, dict) else [],
    }
    return table[kind]


def _serialise(doc: Any, rng: random.Random) -> str:
    """JSON text with NaN/Infinity literals, a repeated key and deep nesting where the mutation asked for them."""
    text = json.dumps(doc, indent=1, ensure_ascii=rng.random() < 0.5, allow_nan=True)
    if _DUP in text:
        text = text.replace(json.dumps(_DUP), json.dumps(rng.choice(["id", "type", "gpus", "schema", "name"])), 1)
    if _DEEP in text:
        depth = rng.choice([64, 1_000, 100_000])
        text = text.replace(json.dumps(_DEEP), "[" * depth + "]" * depth, 1)
    return text


def mutate_json(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of a JSON document: a value at a random path, or the file's bytes."""
    if rng.random() < 0.15:
        return mutate_bytes(data, rng, "json")
    doc = json.loads(data)
    paths = _paths(doc)
    if not paths:
        return mutate_bytes(data, rng, "json")
    # favour the structure a reader looks at first: the top levels and the first items of each list
    path = rng.choice([p for p in paths if len(p) <= rng.choice([1, 2, 3, 4, 8])] or paths)
    kind = rng.choice(JSON_VALUE_KINDS)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "duplicate-key":
        target = parent[last] if isinstance(parent[last], dict) else parent if isinstance(parent, dict) else None
        if target is None:
            kind = "null"
            parent[last] = None
        else:
            target[_DUP] = rng.choice([None, 0, "x", [1]])
    else:
        parent[last] = _replacement(kind, parent[last], rng)
    return _serialise(doc, rng).encode("utf-8", "surrogatepass"), f"json:{kind}@{path_text(path)}"


def mutate_bytes(data: bytes, rng: random.Random, fmt: str) -> tuple[bytes, str]:
    """A mutation of the file's bytes: cut at a random byte, a UTF-8 BOM, an invalid UTF-8 byte, or empty."""
    kind = rng.choice(JSON_BYTE_KINDS)
    if kind == "truncate":
        at = rng.randrange(len(data)) if data else 0
        return data[:at], f"{fmt}:truncate@byte {at}"
    if kind == "bom":
        return b"\xef\xbb\xbf" + data, f"{fmt}:bom"
    if kind == "invalid-utf8":
        at = rng.randrange(len(data) + 1)
        return data[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"]) + data[at:], f"{fmt}:invalid-utf8@{at}"
    return b"", f"{fmt}:empty"


def _cell(kind: str, old: str, rng: random.Random) -> str:
    """The new text of a CSV cell for a cell mutation ``kind``."""
    stripped = old.strip()
    lead = old[: len(old) - len(old.lstrip())]
    table = {
        "unit-suffix": f"{stripped} {rng.choice(['mW', 'kW', 'dBm', 'W', 'MiB', '%'])}",
        "not-available": rng.choice(["[N/A]", "[Not Supported]", "N/A"]),
        "nan-cell": rng.choice(["nan", "NaN", "-nan"]),
        "inf-cell": rng.choice(["inf", "-inf", "Infinity"]),
        "huge-cell": rng.choice(["1e308", "-1e308", "1e309", "9" * 400]),
        "negative-cell": "-1" if not stripped.startswith("-") else stripped[1:],
        "zero-cell": "0",
        "empty-cell": "",
        "markup-cell": rng.choice(MARKUP),
        "superscript-cell": rng.choice(SUPERSCRIPT),
    }
    return lead + table[kind]


def _timezone(cell: str, rng: random.Random) -> str:
    """A timestamp cell with its zone dropped, or a zone added (mixed naive and zone-aware times)."""
    for zone in ("+00:00", "Z"):
        if cell.endswith(zone):
            return cell[: -len(zone)]
    return cell + rng.choice(["+02:00", "Z", "-05:00"])


def mutate_table(data: bytes, rng: random.Random, sep: str, header: bool, fmt: str) -> tuple[bytes, str]:
    """One mutation of a CSV (``sep`` ``,``) or Gavel trace (``sep`` tab, no header) file."""
    if rng.random() < 0.12:
        return mutate_bytes(data, rng, fmt)
    lines = data.decode("utf-8").splitlines()
    first = 1 if header else 0
    if len(lines) <= first:
        return mutate_bytes(data, rng, fmt)
    kind = rng.choice([k for k in CSV_KINDS if header or k not in ("header-repeated", "header-only", "drop-header")])
    rows = [line.split(sep) for line in lines]
    width = len(rows[0])
    r = rng.randrange(first, len(rows))
    c = rng.randrange(len(rows[r]))
    where = f"line {r + 1}"
    if kind == "truncate-row":
        cut = rng.randrange(max(len(lines[r]), 1))
        lines[r] = lines[r][:cut]
    elif kind == "extra-column":
        rows[r].append(rng.choice(["x", "1", ""]))
        lines[r] = sep.join(rows[r])
    elif kind == "missing-column":
        rows[r].pop(c)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind == "duplicate-column":
        c = rng.randrange(width)
        lines = [sep.join([*row, row[c]] if c < len(row) else row) for row in rows]
        where = f"col {c + 1}"
    elif kind == "unterminated-quote":
        rows[r][c] = '"' + rows[r][c]
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind == "timezone":
        c = next((k for k, v in enumerate(rows[r]) if ":" in v and "-" in v or "/" in v), c)
        rows[r][c] = _timezone(rows[r][c], rng)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    elif kind in ("blank-lines", "header-repeated"):
        lines.insert(r, "" if kind == "blank-lines" else lines[0])
    elif kind == "nul-byte":
        at = rng.randrange(len(lines[r]) + 1)
        lines[r] = lines[r][:at] + "\x00" + lines[r][at:]
    elif kind == "reorder-columns":
        order = list(range(width))
        rng.shuffle(order)
        lines = [sep.join(row[k] for k in order if k < len(row)) for row in rows]
        where = "all"
    elif kind == "header-only":
        lines = lines[:1]
        where = "all"
    elif kind == "drop-header":
        lines = lines[1:]
        where = "line 1"
    elif kind == "crlf":
        return ("\r\n".join(lines) + "\r\n").encode("utf-8"), f"{fmt}:crlf"
    else:
        rows[r][c] = _cell(kind, rows[r][c], rng)
        lines[r] = sep.join(rows[r])
        where += f" col {c + 1}"
    return ("\n".join(lines) + "\n").encode("utf-8"), f"{fmt}:{kind}@{where}"


FLOAT_VALUES = ["nan", "inf", "-inf", "0", "-1", "1e308", "-1e308", "1e-308", "abc", "", "\u00b2", "1e400"]
INT_VALUES = ["0", "-1", "99999999999999999999", "1.5", "abc", "nan", "", "\u00b2", "2147483648"]
LIST_VALUES = ["0.1,,nan", ",", "nan", "inf,-1", "1e308", "x", "0.1;0.2", "[0.1]", "", "-0.5", "0.1,0.1", "1e400"]
INT_LIST_VALUES = ["3,,x", ",", "0", "-3", "1e308", "nan", "3;4", "99999999999", "", "1.5", "\u00b9"]
TEXT_VALUES = ["", "[/]", "[red]x", "\x00", "x" * 5_000, "\u00b2", "../../etc/passwd", "a,b,,c", ":", "nan"]
OPTION_VALUES: dict[str, list[str]] = {
    "float": FLOAT_VALUES,
    "int": INT_VALUES,
    "float-list": LIST_VALUES,
    "int-list": INT_LIST_VALUES,
    "text": TEXT_VALUES,
}


def option_value(kind: str, rng: random.Random, extra: list[str] | None = None) -> str:
    """A hostile value for an option of ``kind`` (float, int, float-list, int-list, text), or one of ``extra``."""
    return rng.choice(OPTION_VALUES[kind] + (extra or []))
