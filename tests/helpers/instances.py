"""Rounds built by hand for the tests, as ``wattplan.instance/1`` documents, models or files, and a reference plan.

The document builders (:func:`gpu_type`, :func:`job`, :func:`profile`, :func:`instance_doc`) make the golden
rounds of ``tests/test_golden.py``; :func:`sharing_model` is the two-job round every backend proves
(:data:`SHARING_OPTIMUM`); :func:`small_round` the 8-job slice of the default round the model exchange tests
export; :func:`reference_plan_doc` a valid plan of the tiny instance of ``tests/conftest.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wattplan.formulations.round_model import RoundModel, build_round_model
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.plan import plan_to_doc
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan

ROOT = Path(__file__).resolve().parents[2]


def gpu_type(
    name: str = "v100",
    nodes: int = 1,
    per_node: int = 1,
    idle_w: float = 50,
    node_w: float = 100,
    settings: tuple[int, ...] = (200,),
) -> dict[str, Any]:
    """A GPU type of an instance document: ``nodes`` nodes of ``per_node`` GPUs, power limits ``settings``."""
    return {
        "name": name,
        "nodes": nodes,
        "gpus_per_node": per_node,
        "idle_power_w": idle_w,
        "node_power_w": node_w,
        "setting_unit": "power_limit_w",
        "settings": list(settings),
    }


def job(
    id: str, type: str, remaining: float, gpus: tuple[int, ...] = (1,), weight: float = 1.0, current=None
) -> dict[str, Any]:
    """A job of an instance document: ``remaining`` steps to go on any of ``gpus`` GPUs."""
    return {
        "id": id,
        "type": type,
        "remaining_steps": remaining,
        "gpus": list(gpus),
        "weight": weight,
        "current": current,
    }


def profile(type: str, g: str, n: int, s: int, x: float, p: float) -> dict[str, Any]:
    """A profile row: job type ``type`` on ``n`` GPUs of type ``g`` at setting ``s`` runs ``x`` steps/s at ``p`` W."""
    return {"type": type, "gpu_type": g, "gpus": n, "setting": s, "steps_per_s": x, "power_w": p}


def instance_doc(
    gpu_types: list[dict],
    jobs: list[dict],
    profiles: list[dict],
    pairs: list[dict] | None = None,
    *,
    budget_j: float | None = None,
    restart_s: float = 0,
    objective: str = "progress",
    delta: float = 0.03,
    min_pair_rate: float = 0.5,
) -> dict[str, Any]:
    """A ``wattplan.instance/1`` document of round 0 (100 s) from its parts."""
    return {
        "schema": "wattplan.instance/1",
        "round": {
            "index": 0,
            "duration_s": 100,
            "budget_j": budget_j,
            "objective": objective,
            "delta": delta,
            "restart_s": restart_s,
            "min_pair_rate": min_pair_rate,
        },
        "gpu_types": gpu_types,
        "jobs": jobs,
        "profiles": profiles,
        "pairs": pairs or [],
    }


SHARING_OPTIMUM = 1.4
"""Two jobs, one GPU: alone each reaches progress 1.0; sharing (rho 0.8 and 0.6) reaches 0.8 + 0.6 = 1.4."""


def sharing_model() -> RoundModel:
    """The round model of :data:`SHARING_OPTIMUM`: two waiting jobs that may share the one GPU of one node."""
    doc = instance_doc(
        [gpu_type(nodes=1, per_node=1)],
        [job("a", "A", 1000), job("b", "B", 1000)],
        [profile("A", "v100", 1, 200, 10, 150), profile("B", "v100", 1, 200, 10, 150)],
        [{"a": "A", "b": "B", "gpu_type": "v100", "gpus": 1, "rho_a": 0.8, "rho_b": 0.6}],
    )
    return build_round_model(parse_instance(doc))


def small_round(folder: Path, objective: str = "progress", budget_share: float = 0.3, jobs: int = 8) -> Path:
    """The 8-job slice of the default round, one node per GPU type, written to ``folder/round.json``.

    Its budget is ``budget_share`` of the cluster's full power over the round (docstring of
    ``tests/test_model_exchange.py``).
    """
    doc = json.loads((ROOT / "instances" / "default.json").read_text())
    doc["jobs"] = doc["jobs"][:jobs]
    for j in doc["jobs"]:
        j["current"] = None
    for g in doc["gpu_types"]:
        g["nodes"] = 1
    full_w = sum(
        g["node_power_w"] + g["gpus_per_node"] * (max(g["settings"]) + g["idle_power_w"]) for g in doc["gpu_types"]
    )
    doc["round"]["budget_j"] = budget_share * full_w * doc["round"]["duration_s"]
    doc["round"]["objective"] = objective
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "round.json"
    path.write_text(json.dumps(doc))
    return path


def reference_plan_doc(instance_doc: dict) -> dict:
    """Pair (a, b) on one V100 at 250 W, c alone on one V100 at 150 W (a plan of ``tiny_instance_doc()``)."""
    inst = parse_instance(instance_doc)
    allocations = [Allocation(("a", "b"), "v100", 1, 250), Allocation(("c",), "v100", 1, 150)]
    return plan_to_doc(assemble_plan(inst, allocations, SolveInfo(solver="test", status="feasible")))
