"""A document that passed its schema is not walked again; one that fails is named every time (schema_check)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from wattplan.planner.contracts import schema_check
from wattplan.planner.contracts.profile_checks import PROFILES_SCHEMA, library_problems
from wattplan.planner.files.resources import profile_library


@pytest.fixture
def library_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(profile_library().read_text())
    return doc


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the full validations (each asks for the schema's validator)."""
    seen: list[str] = []
    real = schema_check._validator

    def counting(name: str) -> Any:
        seen.append(name)
        return real(name)

    monkeypatch.setattr(schema_check, "_validator", counting)
    monkeypatch.setattr(schema_check, "_passed", type(schema_check._passed)())
    return seen


def test_a_passed_document_is_not_walked_again(library_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    walks = _walks(monkeypatch)
    assert library_problems(library_doc) == [] and library_problems(copy.deepcopy(library_doc)) == []
    assert walks == [PROFILES_SCHEMA]


def test_a_changed_document_is_walked_and_its_problem_named_every_time(
    library_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = _walks(monkeypatch)
    assert library_problems(library_doc) == []
    library_doc["profiles"][3]["gpus"] = "2"
    for _ in range(2):
        problems = library_problems(library_doc)
        assert [p.path for p in problems] == ["profiles[3].gpus"]
    assert walks == [PROFILES_SCHEMA] * 3


def test_only_the_last_passed_documents_are_kept(library_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    walks = _walks(monkeypatch)
    monkeypatch.setattr(schema_check, "PASSED_KEPT", 1)
    other = copy.deepcopy(library_doc)
    other["profiles"][3]["gpus"] = 2.0  # the same value, written as a float: another JSON text
    for doc in (library_doc, other, library_doc):
        assert library_problems(doc) == []
    assert walks == [PROFILES_SCHEMA] * 3
    assert schema_check._passed_key({"x": object()}, PROFILES_SCHEMA) is None  # not JSON: never remembered
