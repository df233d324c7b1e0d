"""The receding-horizon model (docs/design.md §5.14): H = 1 is the round model; hand cases where H = 2 saves energy."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from cli import app
from tests.conftest import tiny_instance_doc
from tests.random_instances import tiny_rounds
from tests.sim_helpers import write_gavel_trace
from wattplan.formulations.backends import get_backend
from wattplan.formulations.backends.base import SolveParams
from wattplan.formulations.horizon_model import build_horizon_model
from wattplan.formulations.round_model import budget_rows, build_round_model
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.planning import Planner

R50 = "ResNet-50 (batch size 64)"

FAST_BACKENDS = ("highs", "cpsat")


def restart_doc() -> dict[str, Any]:
    """One job ``a`` of 200 steps running on 1 of 2 GPUs of one node; the round is 100 s, tau 10 s.

    1 GPU: 1 step/s at 200 W; 2 GPUs: 2 steps/s at 250 W per GPU; idle 10 W per GPU, node base 0 W, so a
    powered node costs ``2 * 10 * 100 = 2000`` J a round. Dynamic energy per step: 1 GPU ``(200 - 10) / 1 = 190``
    J, 2 GPUs ``2 * (250 - 10) / 2 = 240`` J.

    * H = 1, delta 0: 1 GPU (no restart) does 100 steps (pi 0.5); 2 GPUs restart: ``2 * 90 = 180`` steps (pi 0.9).
      The target 0.9 needs the move: ``180 * 240 + 2000 = 45,200`` J.
    * H = 2 (round 1 weighted: progress 0.99, energy 1.01): staying on 1 GPU both rounds finishes the job
      (100 + 100 steps, ``P = 0.5 + 0.99 * 0.5 = 0.995``) for ``21,000 + 1.01 * 21,000 = 42,210`` J; moving
      finishes it too (180 + 20 steps, ``P* = 0.9 + 0.99 * 0.1 = 0.999``) for ``45,200 + 1.01 * 6,800 = 52,068`` J.
      With the target at the stay plan's 0.995, H = 2 keeps the job where it is (the front door's delta 0.01,
      target 0.98901, keeps it too, doing at least 98.8 steps in round 1).
    """
    return {
        "schema": "wattplan.instance/1",
        "round": {
            "index": 0,
            "duration_s": 100,
            "budget_j": None,
            "objective": "energy",
            "delta": 0.0,
            "restart_s": 10,
            "min_pair_rate": 0.5,
        },
        "gpu_types": [
            {
                "name": "v100",
                "nodes": 1,
                "gpus_per_node": 2,
                "idle_power_w": 10,
                "node_power_w": 0,
                "setting_unit": "power_limit_w",
                "settings": [250],
            }
        ],
        "jobs": [
            {
                "id": "a",
                "type": "A",
                "remaining_steps": 200,
                "gpus": [1, 2],
                "weight": 1.0,
                "current": {"gpu_type": "v100", "gpus": 1, "setting": 250, "shares_with": None},
            }
        ],
        "profiles": [
            {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 1.0, "power_w": 200},
            {"type": "A", "gpu_type": "v100", "gpus": 2, "setting": 250, "steps_per_s": 2.0, "power_w": 250},
        ],
        "pairs": [],
    }


def _solve(lm_owner: Any, objective: str, maximize: bool, backend: str, lm: Any = None) -> tuple[float, np.ndarray]:
    model = lm if lm is not None else lm_owner.lm
    r = get_backend(backend).solve(model, objective, maximize, SolveParams(time_limit_s=20, rel_gap=0.0))  # type: ignore[arg-type]
    assert r.status == "optimal" and r.values is not None
    return float(r.objective), r.values


def test_one_round_horizon_is_the_round_model() -> None:
    inst = parse_instance(tiny_instance_doc())
    hm, rm = build_horizon_model(inst, 1), build_round_model(inst)
    assert hm.lm.num_cols == rm.lm.num_cols and hm.lm.row_names == rm.lm.row_names
    assert np.array_equal(hm.lm.a_vals, rm.lm.a_vals) and np.array_equal(
        hm.lm.objectives["energy"], rm.lm.objectives["energy"]
    )


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_tiny_round_optimum_is_kept_at_h1_and_grows_at_h2(backend: str) -> None:
    """H = 1 has the round model's optimum; H = 2 finishes every job (discounted progress 3.9881 of weights 4)."""
    inst = parse_instance(tiny_instance_doc())
    one, _ = _solve(build_round_model(inst), "progress", True, backend)
    h1, _ = _solve(build_horizon_model(inst, 1), "progress", True, backend)
    h2, _ = _solve(build_horizon_model(inst, 2), "progress", True, backend)
    # a: 810 + 190 steps of 1000, b (weight 2): 250 + 250 of 500, c: 100 of 100, round 1 weighted 0.99:
    # 0.81 + 0.99 * 0.19 + 2 * (0.5 + 0.99 * 0.5) + 1 = 3.9881.
    assert h1 == pytest.approx(one) and h2 == pytest.approx(3.9881, rel=1e-6)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_restart_avoided_by_not_moving(backend: str) -> None:
    inst = parse_instance(restart_doc())
    for horizon, p_star, floor, energy in ((1, 0.9, 0.9, 45_200.0), (2, 0.999, 0.995, 42_210.0)):
        hm = build_horizon_model(inst, horizon)
        p, _ = _solve(hm, "progress", True, backend, hm.lm.without_rows(budget_rows(hm.lm)))
        assert p == pytest.approx(p_star, rel=1e-6)
        target = hm.lm.with_row(hm.lm.objectives["progress"], floor * (1 - 1e-9), np.inf, "progress_floor", "progress")
        e, values = _solve(hm, "energy", False, backend, target)
        assert e == pytest.approx(energy, rel=1e-6)
        (alloc,) = hm.decode(values)
        assert alloc.gpus == (2 if horizon == 1 else 1)


def test_front_door_plans_round_zero_of_the_horizon() -> None:
    doc = restart_doc()
    doc["round"]["delta"] = 0.01
    inst = parse_instance(doc)
    one = Planner(PlanRequest(time_limit_s=10)).plan(inst)
    two = Planner(PlanRequest(time_limit_s=10, horizon=2)).plan(inst)
    assert [j.gpus for j in one.running()] == [2] and [j.gpus for j in two.running()] == [1]
    # Round 0 of the H = 2 plan: 100 steps at 190 J a step and one powered node.
    assert two.round.energy_j == pytest.approx(100 * 190 + 2000)
    assert two.round.status == "feasible" and two.round.bound is None


def finishing_doc() -> dict[str, Any]:
    """A job of 150 steps: 2 GPUs (2 steps/s) finish it in round 0; 1 GPU (1 step/s) in two rounds.

    Restart 0 s, so staying costs nothing. Energy per step: 1 GPU ``(200 - 10) = 190`` J, 2 GPUs
    ``2 * (300 - 10) / 2 = 290`` J; a powered node 2000 J a round. H = 1: 2 GPUs, ``150 * 290 + 2000 = 45,500`` J.
    H = 2 (``P* = 1``; target the 1-GPU plan's ``P = 2/3 + 0.99 / 3``): 1 GPU, 100 steps then the last 50
    (the job stops mid-round): ``21,000 + 1.01 * (50 * 190 + 2000) = 32,615`` J.
    """
    doc = restart_doc()
    doc["round"]["restart_s"] = 0
    doc["jobs"][0]["remaining_steps"] = 150
    doc["jobs"][0]["current"] = None
    doc["profiles"][1]["power_w"] = 300
    return doc


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_widest_option_buys_no_progress_within_the_horizon(backend: str) -> None:
    inst = parse_instance(finishing_doc())
    for horizon, floor, energy in ((1, 1.0, 45_500.0), (2, 2 / 3 + 0.99 / 3, 32_615.0)):
        hm = build_horizon_model(inst, horizon)
        target = hm.lm.with_row(hm.lm.objectives["progress"], floor * (1 - 1e-9), np.inf, "progress_floor", "progress")
        e, values = _solve(hm, "energy", False, backend, target)
        assert e == pytest.approx(energy, rel=1e-6)
        assert hm.decode(values)[0].gpus == (2 if horizon == 1 else 1)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_rounds())
def test_generated_rounds_h1_equals_the_round_model_and_h2_never_less(inst: Instance) -> None:
    one, _ = _solve(build_round_model(inst), "progress", True, "highs")
    h1, _ = _solve(build_horizon_model(inst, 1), "progress", True, "highs")
    hm = build_horizon_model(inst, 2)
    # CBC: HiGHS's presolve returned 0.99 x the optimum as optimal on one such round (presolve off: the optimum).
    h2, values = _solve(hm, "progress", True, "cbc")
    assert h1 == pytest.approx(one, rel=1e-9, abs=1e-12)
    # Round 0 with round 1 waiting is feasible, and no job does more than its remaining steps.
    assert one - 1e-7 <= h2 <= sum(j.weight for j in inst.jobs) + 1e-7
    assert hm.lm.is_feasible(values)


def test_plan_cli_refuses_a_horizon_out_of_range(tmp_path: Path) -> None:
    doc = copy.deepcopy(restart_doc())
    doc["round"]["delta"] = 0.01  # the target lets round 1 finish the job where it runs
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    bad = CliRunner().invoke(app, ["plan", str(path), "--horizon", "0", "--out", str(tmp_path / "p.json")])
    assert bad.exit_code != 0 and "horizon" in bad.output
    ok = CliRunner().invoke(app, ["plan", str(path), "--horizon", "2", "--out", str(tmp_path / "p.json"), "-q"])
    assert ok.exit_code == 0, ok.output
    plan = json.loads((tmp_path / "p.json").read_text())
    assert [j.get("gpus") for j in plan["jobs"] if j.get("gpus")] == [1]


def test_simulate_plans_with_a_horizon_and_refuses_one_out_of_range(tmp_path: Path) -> None:
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (R50, 3000, 400, 4)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    common = [str(trace), "--cluster", "v100:8", "-p", "wattplan", "--time-limit", "2", "-q", "--no-plots"]
    bad = CliRunner().invoke(app, ["simulate", *common, "--horizon", "9", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "horizon" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "bad").exists()
    ok = CliRunner().invoke(app, ["simulate", *common, "--horizon", "2", "--out", str(tmp_path / "ok")])
    assert ok.exit_code == 0, ok.output
    summary = json.loads((tmp_path / "ok" / "wattplan" / "summary.json").read_text())
    assert summary["completed"] == summary["jobs"] == 3 and summary["stop_reason"] == "completed"
    assert summary["replay_key"]["spec"]["policy_options"]["request"]["horizon"] == 2  # the loop planned with it
