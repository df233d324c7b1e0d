"""Every prediction in a plan names the profile basis it came from (measured points, fitted, prior)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from wattplan.planner.cli import app
from wattplan.planner.contracts.instance_io import load_instance, write_instance
from wattplan.planner.contracts.plan import load_plan
from wattplan.planner.files.resources import default_instance


def test_plan_entries_carry_the_basis_of_their_profile(tmp_path: Path) -> None:
    doc = json.loads(default_instance().read_text())
    for k, p in enumerate(doc["profiles"]):
        measured = p["gpus"] == 1
        p["basis"] = {
            "kind": "measured" if measured else "fitted",
            "points": [f"pt-{k:016x}"] if measured else [],
            "rel_error": 0.01 if measured else 0.2,
            "reason": "test",
        }
    src = tmp_path / "inst.json"
    src.write_text(json.dumps(doc))
    inst = load_instance(src)
    write_instance(inst, tmp_path / "again.json")  # the basis survives a write and a read
    assert load_instance(tmp_path / "again.json").profiles[0].basis == doc["profiles"][0]["basis"]
    out = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["plan", str(src), "--solver", "greedy", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    plan = load_plan(out)
    running = plan.running()
    assert running
    by_key = {(p["type"], p["gpu_type"], p["gpus"], p["setting"]): p["basis"] for p in doc["profiles"]}
    for e in running:
        assert e.basis == by_key[(inst.job(e.job_id).type, e.gpu_type, e.gpus, e.setting)]
    fitted = sum(1 for e in running if e.gpus != 1)
    assert f"{fitted} rest on predictions" in " ".join(result.output.split())
    assert CliRunner().invoke(app, ["validate", str(src), str(out)]).exit_code == 0
