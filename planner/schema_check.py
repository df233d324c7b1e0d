"""Structural checks against the JSON Schemas shipped in ``planner/schemas``."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from planner.problems import Problem, format_path

INSTANCE_SCHEMA = "instance.schema.json"
PLAN_SCHEMA = "plan.schema.json"
_REQUIRED = re.compile(r"^'(.+)' is a required property$")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed JSON Schema ``name`` from the package data."""
    return json.loads(resources.files("planner.schemas").joinpath(name).read_text(encoding="utf-8"))


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name))


def _most_specific(error: ValidationError) -> ValidationError:
    """For ``oneOf``/``anyOf`` failures, the sub-error that explains the most."""
    if error.context:
        return _most_specific(best_match(error.context))
    return error


def schema_problems(doc: Any, schema_name: str, code: str) -> list[Problem]:
    """Every place where ``doc`` breaks the schema, as problems with readable paths."""
    problems = []
    for error in sorted(_validator(schema_name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        error = _most_specific(error)
        path = list(error.absolute_path)
        message = error.message
        missing = _REQUIRED.match(message)
        if error.validator == "required" and missing:
            path.append(missing.group(1))
            message = "required field is missing"
        problems.append(Problem(code, format_path(path), message))
    return problems
