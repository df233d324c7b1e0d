"""Every kind of bad instance is reported with its code and the path of the bad field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wattplan.planner.contracts.instance_io import instance_to_doc, load_instance, parse_instance
from wattplan.planner.contracts.problems import InputError


def problems_of(doc: Any) -> set[tuple[str, str]]:
    with pytest.raises(InputError) as info:
        parse_instance(doc, "test")
    return {(p.code, p.path) for p in info.value.problems}


def test_tiny_instance_is_valid_and_round_trips(tiny_doc: dict) -> None:
    inst = parse_instance(tiny_doc)
    assert [j.id for j in inst.jobs] == ["a", "b", "c"]
    assert inst.job("b").current.placement[0].node == "v100-1"
    again = parse_instance(instance_to_doc(inst))
    assert again == inst


def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def mutate(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


BAD_INPUTS: list[tuple[str, Callable[[dict], None], str, str]] = [
    ("wrong schema tag", _set(["schema"], "wattplan.instance/9"), "schema", "schema"),
    ("missing field", lambda d: d["jobs"][1].pop("remaining_steps"), "schema", "jobs[1].remaining_steps"),
    ("wrong type", _set(["jobs", 0, "gpus"], "two"), "schema", "jobs[0].gpus"),
    ("negative number", _set(["gpu_types", 0, "idle_power_w"], -5), "schema", "gpu_types[0].idle_power_w"),
    ("zero steps", _set(["jobs", 2, "remaining_steps"], 0), "schema", "jobs[2].remaining_steps"),
    ("NaN", _set(["profiles", 1, "power_w"], float("nan")), "not-finite", "profiles[1].power_w"),
    ("infinite budget", _set(["round", "budget_j"], float("inf")), "not-finite", "round.budget_j"),
    ("unknown job type", _set(["jobs", 0, "type"], "Z"), "unknown-job-type", "jobs[0].type"),
    ("no profile for a count", _set(["jobs", 1, "gpus"], [1, 2]), "no-profile", "jobs[1].gpus[1]"),
    ("count not a power of two", _set(["jobs", 0, "gpus"], [1, 3]), "bad-gpu-count", "jobs[0].gpus[1]"),
    ("count above node, not a multiple", _set(["jobs", 0, "gpus"], [6]), "bad-gpu-count", "jobs[0].gpus[0]"),
    ("duplicate count", _set(["jobs", 0, "gpus"], [1, 1]), "duplicate-gpu-count", "jobs[0].gpus[1]"),
    ("duplicate job id", _set(["jobs", 2, "id"], "a"), "duplicate-job-id", "jobs[2].id"),
    ("setting not listed", _set(["profiles", 0, "setting"], 175), "setting-not-listed", "profiles[0].setting"),
    (
        "current setting not listed",
        _set(["jobs", 1, "current", "setting"], 200),
        "setting-not-listed",
        "jobs[1].current.setting",
    ),
    (
        "unknown GPU type in profile",
        _set(["profiles", 2, "gpu_type"], "a100"),
        "unknown-gpu-type",
        "profiles[2].gpu_type",
    ),
    ("unknown GPU type of a pair", _set(["pairs", 0, "gpu_type"], "k80"), "unknown-gpu-type", "pairs[0].gpu_type"),
    ("unknown type in a pair", _set(["pairs", 0, "b"], "Q"), "unknown-job-type", "pairs[0].b"),
    ("power below idle", _set(["profiles", 4, "power_w"], 20), "power-below-idle", "profiles[4].power_w"),
    (
        "node size not a power of two",
        _set(["gpu_types", 0, "gpus_per_node"], 6),
        "node-size",
        "gpu_types[0].gpus_per_node",
    ),
    (
        "duplicate setting",
        _set(["gpu_types", 0, "settings"], [150, 250, 150]),
        "duplicate-setting",
        "gpu_types[0].settings[2]",
    ),
    ("duplicate profile", lambda d: d["profiles"].append(dict(d["profiles"][0])), "duplicate-profile", "profiles[6]"),
    (
        "duplicate pair (other order)",
        lambda d: d["pairs"].append({**d["pairs"][0], "a": "B", "b": "A"}),
        "duplicate-pair",
        "pairs[1]",
    ),
    (
        "unknown partner",
        _set(["jobs", 1, "current", "shares_with"], "nobody"),
        "unknown-partner",
        "jobs[1].current.shares_with",
    ),
    (
        "placement on a missing node",
        _set(["jobs", 1, "current", "placement"], [{"node": "v100-7", "gpu_indices": [0]}]),
        "bad-placement",
        "jobs[1].current.placement[0].node",
    ),
    (
        "placement index off the node",
        _set(["jobs", 1, "current", "placement"], [{"node": "v100-0", "gpu_indices": [4]}]),
        "bad-placement",
        "jobs[1].current.placement[0].gpu_indices[0]",
    ),
]


@pytest.mark.parametrize(("name", "mutate", "code", "path"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_reported_with_code_and_path(
    tiny_doc: dict, name: str, mutate: Callable[[dict], None], code: str, path: str
) -> None:
    mutate(tiny_doc)
    assert (code, path) in problems_of(tiny_doc)


def test_every_problem_is_reported_at_once(tiny_doc: dict) -> None:
    tiny_doc["jobs"][0]["type"] = "Z"
    tiny_doc["jobs"][2]["id"] = "b"
    tiny_doc["profiles"][0]["setting"] = 175
    found = problems_of(tiny_doc)
    assert {
        ("unknown-job-type", "jobs[0].type"),
        ("duplicate-job-id", "jobs[2].id"),
        ("setting-not-listed", "profiles[0].setting"),
    } <= found


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "broken.json"
    f.write_text('{"schema": "wattplan.instance/1",\n "round": }')
    with pytest.raises(InputError) as info:
        load_instance(f)
    (problem,) = info.value.problems
    assert problem.code == "bad-json" and problem.path == "line 2 column 11"


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_instance(tmp_path / "nope.json")
    assert info.value.problems[0].code == "unreadable"


def test_shipped_default_instance_is_valid() -> None:
    inst = load_instance(Path(__file__).resolve().parents[1] / "instances" / "default.json")
    assert len(inst.jobs) == 64
    assert {g.name: g.nodes for g in inst.gpu_types} == {"v100": 8, "p100": 4}
    assert inst.round.budget_j is not None


def test_non_object_document() -> None:
    assert ("schema", "(root)") in problems_of(json.loads("[1, 2]"))
