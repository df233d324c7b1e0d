"""The validator: hand-computed figures, and one hand-made plan per violation code."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.instances import reference_plan_doc
from wattplan.planner.contracts.instance_io import instance_sha256, instance_to_doc, load_instance, parse_instance
from wattplan.planner.contracts.plan import (
    BudgetOverride,
    parse_plan,
    plan_to_doc,
    with_budget_override,
    with_instance_sha256,
)
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.core.evaluate import evaluate_plan
from wattplan.planner.core.validate import plan_problems, validate_plan

INFO = SolveInfo(solver="test", status="feasible")


def codes(instance_doc: dict, plan_doc: dict) -> set[str]:
    return {p.code for p in validate_plan(parse_instance(instance_doc), parse_plan(plan_doc))}


def test_hand_computed_round(tiny_doc: dict) -> None:
    """T = 100 s, tau = 10 s, Pidle = 30 W, node 100 W + 4 x 30 W.

    a (waiting, restarts): t = 90 s, rate 0.8 x 5 = 4 steps/s, 360 steps of 1000 -> 0.36;
      energy (230 - 30) W x 360 / 5 s = 14 400 J.
    b (running on 1 V100, keeps its size): t = 100 s, rate 0.6 x 2.5 = 1.5, 150 of 500 steps,
      weight 2 -> 0.6; energy (180 - 30) x 150 / 2.5 = 9 000 J.
    c (restarts): t = 90 s, 4 steps/s, all 100 steps -> 1.0; energy (130 - 30) x 100 / 4 = 2 500 J.
    2 GPUs -> 1 node: 100 s x (100 + 4 x 30) W = 22 000 J. Total 47 900 J, progress 1.96.
    """
    doc = reference_plan_doc(tiny_doc)
    inst, plan = parse_instance(tiny_doc), parse_plan(doc)
    assert validate_plan(inst, plan) == []
    ev = evaluate_plan(inst, plan)
    assert ev.energy_j == pytest.approx(47_900)
    assert ev.progress == pytest.approx(1.96)
    assert {k: round(v.energy_j, 6) for k, v in ev.outcomes.items()} == {"a": 14_400, "b": 9_000, "c": 2_500}
    assert doc["round"]["gpus_used"] == {"v100": 2} and doc["round"]["nodes_on"] == {"v100": 1}
    # b keeps the GPU it runs on, and its partner joins it there.
    by_id = {j["job_id"]: j for j in doc["jobs"]}
    assert by_id["b"]["placement"] == [{"node": "v100-1", "gpu_indices": [2]}] == by_id["a"]["placement"]
    assert by_id["c"]["placement"][0]["node"] == "v100-1"


def _job(doc: dict, job_id: str) -> dict:
    return next(j for j in doc["jobs"] if j["job_id"] == job_id)


Mutation = Callable[[dict, dict], None]  # (instance doc, plan doc) -> None, in place


def _plan_job(job_id: str, **fields: Any) -> Mutation:
    return lambda inst, plan: _job(plan, job_id).update(fields)


CASES: list[tuple[str, Mutation]] = [
    ("instance-mismatch", lambda i, p: i["jobs"][0].update(user="someone-else")),
    ("round-mismatch", lambda i, p: p["round"].update(index=4)),
    ("unknown-job", lambda i, p: p["jobs"].append({"job_id": "zz", "state": "wait"})),
    ("duplicate-job", lambda i, p: p["jobs"].append({"job_id": "c", "state": "wait"})),
    ("missing-job", lambda i, p: p["jobs"].remove(_job(p, "c"))),
    ("unknown-gpu-type", _plan_job("c", gpu_type="a100")),
    ("count-not-allowed", _plan_job("c", gpus=2, placement=[{"node": "v100-1", "gpu_indices": [0, 1]}])),
    ("setting-not-allowed", _plan_job("c", setting=200)),
    ("setting-unit-mismatch", _plan_job("c", setting_unit="sm_clock_mhz")),
    ("no-profile", lambda i, p: i["profiles"].pop(0)),
    ("pair-not-mutual", _plan_job("b", shares_with="c")),
    ("pair-mismatch", _plan_job("a", setting=150)),
    ("pair-not-profiled", lambda i, p: i["pairs"].clear()),
    ("pair-below-min-rate", lambda i, p: i["round"].update(min_pair_rate=0.7)),
    ("nodes-exceeded", lambda i, p: p["round"]["nodes_on"].update(v100=3)),
    ("capacity-exceeded", lambda i, p: p["round"]["nodes_on"].update(v100=0)),
    ("placement-size", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [0, 1]}])),
    ("placement-bad-node", _plan_job("c", placement=[{"node": "p100-0", "gpu_indices": [0]}])),
    ("placement-bad-index", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [7]}])),
    ("placement-overlap", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [2]}])),
    ("placement-nodes-off", _plan_job("c", placement=[{"node": "v100-0", "gpu_indices": [0]}])),
    ("job-claim-mismatch", lambda i, p: _job(p, "c").update(energy_j=_job(p, "c")["energy_j"] * 1.1)),
    ("round-claim-mismatch", lambda i, p: p["round"].update(progress=p["round"]["progress"] + 0.1)),
    ("over-budget", lambda i, p: (i["round"].update(budget_j=40_000), p["round"].update(budget_j=40_000))),
    # a makes 360 steps in the reference plan: a tail bound of 400 is not met.
    ("below-tail-bound", lambda i, p: next(j for j in i["jobs"] if j["id"] == "a").update(min_steps=400.0)),
    # a runs at 4 steps/s in the reference plan: a slowdown limit of 5 steps/s is not kept.
    ("below-rate-floor", lambda i, p: next(j for j in i["jobs"] if j["id"] == "a").update(min_rate=5.0)),
    # c runs alone in the reference plan: a job that runs only in a pair may not.
    ("pair-only-alone", lambda i, p: next(j for j in i["jobs"] if j["id"] == "c").update(pair_only=True)),
]


def test_every_code_has_a_case() -> None:
    import wattplan.planner.core.validate as v

    documented = {line.split()[0] for line in v.__doc__.splitlines() if line[:1].isalpha() and "-" in line.split()[0]}
    assert documented - {"plan-schema", "placement-split"} == {c for c, _ in CASES}


@pytest.mark.parametrize(("code", "mutate"), CASES, ids=[c for c, _ in CASES])
def test_violation_is_rejected_with_its_code(tiny_doc: dict, code: str, mutate: Mutation) -> None:
    plan_doc = reference_plan_doc(tiny_doc)
    instance_doc = copy.deepcopy(tiny_doc)
    mutate(instance_doc, plan_doc)
    assert code in codes(instance_doc, plan_doc)


def test_placement_split_small_job_across_nodes(tiny_doc: dict) -> None:
    inst = parse_instance(tiny_doc)
    doc = plan_to_doc(assemble_plan(inst, [Allocation(("a",), "v100", 2, 250)], INFO, nodes_on={"v100": 2}))
    assert codes(tiny_doc, doc) == set()
    _job(doc, "a")["placement"] = [{"node": "v100-0", "gpu_indices": [0]}, {"node": "v100-1", "gpu_indices": [0]}]
    assert "placement-split" in codes(tiny_doc, doc)


def test_placement_split_big_job_on_part_nodes(tiny_doc: dict) -> None:
    """An 8-GPU job on 4-GPU nodes must take two whole nodes, not 4 + 2 + 2."""
    tiny_doc["gpu_types"][0]["nodes"] = 3
    tiny_doc["jobs"][0]["gpus"] = [8]
    tiny_doc["profiles"].append(
        {"type": "A", "gpu_type": "v100", "gpus": 8, "setting": 250, "steps_per_s": 30.0, "power_w": 200}
    )
    inst = parse_instance(tiny_doc)
    doc = plan_to_doc(assemble_plan(inst, [Allocation(("a",), "v100", 8, 250)], INFO, nodes_on={"v100": 3}))
    assert codes(tiny_doc, doc) == set()
    _job(doc, "a")["placement"] = [
        {"node": "v100-0", "gpu_indices": [0, 1, 2, 3]},
        {"node": "v100-1", "gpu_indices": [0, 1]},
        {"node": "v100-2", "gpu_indices": [2, 3]},
    ]
    assert codes(tiny_doc, doc) == {"placement-split"}


def test_all_wait_plan_costs_nothing(tiny_doc: dict) -> None:
    inst = parse_instance(tiny_doc)
    doc = plan_to_doc(assemble_plan(inst, [], INFO))
    assert codes(tiny_doc, doc) == set()
    assert doc["round"]["energy_j"] == 0 and doc["round"]["nodes_on"] == {}


def overridden_plan_doc(instance_doc: dict, override: BudgetOverride) -> dict:
    """The reference plan made with ``override``'s budget in place of the instance's, declaring it.

    Like ``wattplan plan``, it records the identity of the instance as given, before the override.
    """
    planned_doc = copy.deepcopy(instance_doc)
    planned_doc["round"]["budget_j"] = override.budget_j
    plan = parse_plan(reference_plan_doc(planned_doc))
    digest = instance_sha256(parse_instance(instance_doc))
    return plan_to_doc(with_instance_sha256(with_budget_override(plan, override), digest))


def test_declared_budget_override_is_honoured(tiny_doc: dict) -> None:
    """T = 100 s: a 600 W cap is a 60 000 J budget; the plan uses 47 900 J; the instance has no budget."""
    doc = overridden_plan_doc(tiny_doc, BudgetOverride(60_000, "--power-cap-w", 600, None))
    assert doc["round"]["budget_j"] == 60_000 and doc["round"]["budget_override"]["option"] == "--power-cap-w"
    assert codes(tiny_doc, doc) == set()
    del doc["round"]["budget_override"]  # the same budget, undeclared: an edited plan
    assert codes(tiny_doc, doc) == {"round-mismatch"}


def test_energy_is_checked_against_the_override(tiny_doc: dict) -> None:
    doc = overridden_plan_doc(tiny_doc, BudgetOverride(40_000, "--budget-j", 40_000, None))
    assert codes(tiny_doc, doc) == {"over-budget"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("instance_budget_j", 90_000), ("value", 700), ("option", "--budget-j")],
)
def test_inconsistent_override_is_a_round_mismatch(tiny_doc: dict, field: str, value: Any) -> None:
    """The override must name this instance's own budget, and its budget must follow from its option and value."""
    doc = overridden_plan_doc(tiny_doc, BudgetOverride(60_000, "--power-cap-w", 600, None))
    doc["round"]["budget_override"][field] = value
    problems = validate_plan(parse_instance(tiny_doc), parse_plan(doc))
    assert {p.code for p in problems} == {"round-mismatch"}
    assert all(p.path.startswith("round.budget_override.") for p in problems)


def test_plan_without_override_round_trips(tiny_doc: dict) -> None:
    doc = reference_plan_doc(tiny_doc)
    assert "budget_override" not in doc["round"]
    plan = parse_plan(doc)
    assert plan.round.budget_override is None and plan_to_doc(plan) == doc


def test_plan_records_the_digest_of_its_instance(tiny_doc: dict) -> None:
    doc = reference_plan_doc(tiny_doc)
    digest = doc["round"]["instance_sha256"]
    assert digest == instance_sha256(parse_instance(tiny_doc))
    assert len(digest) == 64 and set(digest) <= set("0123456789abcdef")
    assert plan_to_doc(parse_plan(doc)) == doc


def test_instance_document_round_trips_so_the_digest_is_stable(tiny_doc: dict, tmp_path: Any) -> None:
    """Parse -> doc -> parse gives an equal instance; a file's spacing and key order do not change the digest."""
    inst = parse_instance(tiny_doc)
    assert parse_instance(instance_to_doc(inst)) == inst
    reordered = dict(reversed(list(tiny_doc.items())))
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(reordered, indent=3))
    assert instance_sha256(load_instance(path)) == instance_sha256(inst)


def test_plan_of_another_instance_is_an_instance_mismatch(tiny_doc: dict) -> None:
    """A plan of instance A checked against instance B (one job's user differs, nothing the plan uses)."""
    doc = reference_plan_doc(tiny_doc)
    other = copy.deepcopy(tiny_doc)
    other["jobs"][0]["user"] = "someone-else"
    problems = validate_plan(parse_instance(other), parse_plan(doc))
    assert [p.code for p in problems] == ["instance-mismatch"]
    mine, theirs = doc["round"]["instance_sha256"], instance_sha256(parse_instance(other))
    assert mine[:12] in problems[0].message and theirs[:12] in problems[0].message
    assert problems[0].path == "round.instance_sha256"


def test_old_plan_without_a_digest_still_validates(tiny_doc: dict) -> None:
    doc = reference_plan_doc(tiny_doc)
    del doc["round"]["instance_sha256"]
    plan = parse_plan(doc)
    assert plan.round.instance_sha256 is None and plan_to_doc(plan) == doc
    assert codes(tiny_doc, doc) == set()


@pytest.mark.parametrize("digest", ["abc", "A" * 64, "g" * 64, 7])
def test_malformed_digest_is_a_schema_error(tiny_doc: dict, digest: Any) -> None:
    doc = reference_plan_doc(tiny_doc)
    doc["round"]["instance_sha256"] = digest
    with pytest.raises(InputError) as caught:
        parse_plan(doc)
    assert any(p.code == "plan-schema" and "instance_sha256" in p.path for p in caught.value.problems)


INSTANCE_FREE: list[tuple[str, Mutation]] = [
    ("duplicate-job", lambda i, p: p["jobs"].append({"job_id": "c", "state": "wait"})),
    ("pair-not-mutual", _plan_job("b", shares_with="c")),
    ("pair-not-mutual", _plan_job("b", shares_with="ghost")),
    ("pair-mismatch", _plan_job("a", setting=150)),
    ("placement-size", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [0, 1]}])),
    ("placement-bad-index", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [0, 0]}], gpus=2)),
    ("placement-overlap", _plan_job("c", placement=[{"node": "v100-1", "gpu_indices": [2]}])),
    ("placement-nodes-off", _plan_job("c", placement=[{"node": "v100-0", "gpu_indices": [0]}])),
    ("over-budget", lambda i, p: p["round"].update(budget_j=p["round"]["energy_j"] / 2)),
]


@pytest.mark.parametrize(("code", "mutate"), INSTANCE_FREE, ids=[f"{c}-{k}" for k, (c, _) in enumerate(INSTANCE_FREE)])
def test_instance_free_checks_find_without_the_instance(tiny_doc: dict, code: str, mutate: Mutation) -> None:
    plan_doc = reference_plan_doc(tiny_doc)
    assert plan_problems(parse_plan(plan_doc)) == []
    mutate(copy.deepcopy(tiny_doc), plan_doc)
    assert code in {p.code for p in plan_problems(parse_plan(plan_doc))}
    # validate_plan rejects it too (an edited budget as a round-mismatch, the energy as recomputed)
    assert codes(tiny_doc, plan_doc) & {code, "round-mismatch"}
