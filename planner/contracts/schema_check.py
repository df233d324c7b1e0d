"""Structural checks against the JSON Schemas shipped in ``planner/schemas``.

Array size limits (``maxItems``) are checked first by a cheap walk, and an oversized document is
reported (code ``too-many-items``) without the full validation, whose cost grows with every item.

A document that passed is remembered by its schema and a digest of its JSON text (the last
:data:`PASSED_KEPT`): the same document checked again (the profile library, read by every replay point of a
frontier and every surface of a run: about 0.5 s of validation each time) passes without the walk. Only passes
are remembered; a document that fails is walked every time, so every problem is always named.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, Problem, capped, format_path

INSTANCE_SCHEMA = "instance.schema.json"
PLAN_SCHEMA = "plan.schema.json"
TOO_MANY_ITEMS = "too-many-items"
MAX_MESSAGE_CHARS = 300
"""Longest schema message shown; jsonschema quotes the offending value, which may be huge."""

PASSED_KEPT = 64
"""How many passed documents are remembered (module docstring)."""
_passed: OrderedDict[tuple[str, bytes], None] = OrderedDict()
_passed_lock = threading.Lock()

_REQUIRED = re.compile(r"^'(.+)' is a required property$")
_LOCAL_REF = "#/"
_MAX_SCHEMA_DEPTH = 32  # a recursive schema is walked no deeper (and assumed to hold a limit)

Schema = dict[str, Any]
JsonPath = tuple[str | int, ...]


@cache
def load_schema(name: str) -> Schema:
    """The parsed JSON Schema ``name`` from the package data."""
    return json.loads(resources.files("wattplan.planner.schemas").joinpath(name).read_text(encoding="utf-8"))


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name))


def _resolve(schema: Schema, root: Schema) -> Schema:
    """``schema`` with a local ``$ref`` (``#/$defs/...``) followed; other schemas as they are."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith(_LOCAL_REF) and seen < _MAX_SCHEMA_DEPTH:
        target: Any = root
        for part in schema["$ref"][len(_LOCAL_REF) :].split("/"):
            target = target[part]
        schema, seen = target, seen + 1
    return schema


def _children(doc: Any, schema: Schema, root: Schema) -> Iterator[tuple[str | int, Any, Schema]]:
    """The parts of ``doc`` that ``schema`` describes further: (key or index, value, their schema)."""
    if isinstance(doc, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, value in doc.items():
            sub = props[key] if key in props else extra
            if isinstance(sub, dict):
                yield key, value, _resolve(sub, root)
    elif isinstance(doc, list) and isinstance(schema.get("items"), dict):
        item_schema = _resolve(schema["items"], root)
        for i, value in enumerate(doc):
            yield i, value, item_schema


_HAS_LIMIT: dict[int, bool] = {}
"""Memo of :func:`_has_size_limit` by schema object (the schemas are loaded once and never change)."""


def _has_size_limit(schema: Schema, root: Schema, depth: int = 0) -> bool:
    """Whether ``schema`` or anything below it sets ``maxItems`` (so the walk must go there)."""
    known = _HAS_LIMIT.get(id(schema))
    if known is not None:
        return known
    resolved = _resolve(schema, root)
    if "maxItems" in resolved or depth > _MAX_SCHEMA_DEPTH:
        answer = True
    else:
        subs = [*resolved.get("properties", {}).values(), resolved.get("items"), resolved.get("additionalProperties")]
        answer = any(isinstance(s, dict) and _has_size_limit(s, root, depth + 1) for s in subs)
    _HAS_LIMIT[id(schema)] = answer
    return answer


def size_problems(doc: Any, schema_name: str) -> list[Problem]:
    """Every array of ``doc`` longer than its schema's ``maxItems``; cheap, whatever the document's size.

    Follows ``properties``, ``items``, ``additionalProperties`` and local ``$ref`` only, and only
    into the parts of the schema that set a limit.
    """
    root = load_schema(schema_name)
    return capped(_oversized(doc, root, root))


def _oversized(doc: Any, root: Schema, schema: Schema) -> Iterator[Problem]:
    """Arrays longer than their ``maxItems``, walking only where the schema sets a limit."""
    stack: list[tuple[JsonPath, Any, Schema]] = [((), doc, _resolve(schema, root))]
    while stack:
        path, value, sub = stack.pop()
        limit = sub.get("maxItems")
        if isinstance(value, list) and isinstance(limit, int) and len(value) > limit:
            yield Problem(TOO_MANY_ITEMS, format_path(path), f"{len(value)} entries; at most {limit} are allowed")
            continue
        stack.extend(((*path, key), v, s) for key, v, s in _children(value, sub, root) if _has_size_limit(s, root))


def _most_specific(error: ValidationError) -> ValidationError:
    """For ``oneOf``/``anyOf`` failures, the sub-error that explains the most."""
    if error.context:
        return _most_specific(best_match(error.context))
    return error


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 3] + "..."


def _problem(error: ValidationError, code: str) -> Problem:
    error = _most_specific(error)
    path = list(error.absolute_path)
    message = error.message
    missing = _REQUIRED.match(message)
    if error.validator == "required" and missing:
        path.append(missing.group(1))
        message = "required field is missing"
    return Problem(code, format_path(path), _short(message))


def schema_problems(doc: Any, schema_name: str, code: str) -> list[Problem]:
    """Every place where ``doc`` breaks the schema, as problems with readable paths.

    Oversized arrays are reported alone (see :func:`size_problems`); otherwise at most
    :data:`~planner.contracts.problems.MAX_REPORTED_PROBLEMS` problems, sorted by path.
    """
    key = _passed_key(doc, schema_name)
    if key is not None:
        with _passed_lock:
            if key in _passed:
                _passed.move_to_end(key)
                return []
    too_big = size_problems(doc, schema_name)
    if too_big:
        return too_big
    errors = itertools.islice(_validator(schema_name).iter_errors(doc), MAX_REPORTED_PROBLEMS + 1)
    found = sorted(errors, key=lambda e: list(map(str, e.absolute_path)))
    if not found and key is not None:
        with _passed_lock:
            _passed[key] = None
            while len(_passed) > PASSED_KEPT:
                _passed.popitem(last=False)
    return capped(_problem(error, code) for error in found)


def _passed_key(doc: Any, schema_name: str) -> tuple[str, bytes] | None:
    """``(schema, digest of the document's JSON text)``; None for a document JSON cannot write (never remembered).

    The text keeps the document's key order and every value's type (``1`` and ``1.0`` and ``True`` differ), so two
    documents share a key only when they are the same JSON.
    """
    try:
        text = json.dumps(doc, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return schema_name, hashlib.blake2b(text.encode(), digest_size=32).digest()
