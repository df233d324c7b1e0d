"""``wattplan launch`` on the command line: exit codes, path-named errors, refusing invalid plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.launch_helpers import hand_plan, launch_instance, launch_instance_doc
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import plan_to_doc, write_plan

runner = CliRunner()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    inst = launch_instance()
    plan_path, inst_path = tmp_path / "plan.json", tmp_path / "instance.json"
    write_plan(hand_plan(inst), plan_path)
    inst_path.write_text(json.dumps(instance_to_doc(inst)))
    return plan_path, inst_path


def _launch(plan: Path, inst: Path, out: Path, *extra: str, to: str = "slurm"):
    return runner.invoke(app, ["launch", str(plan), "--instance", str(inst), "--to", to, "--out", str(out), *extra])


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("slurm", {"submit.sh", "jobs", "nodes", "MANIFEST.json"}),
        ("kubernetes", {"jobs.yaml", "device-plugin-config.yaml", "node-agent.yaml", "label-nodes.sh", "apply.sh"}),
        ("shell", {"v100-0.sh", "v100-1.sh", "a100-0.sh"}),
    ],
)
def test_each_target_renders(tmp_path: Path, files: tuple[Path, Path], target: str, expected: set[str]) -> None:
    out = tmp_path / target
    result = _launch(*files, out, to=target)
    assert result.exit_code == 0, result.output
    assert "rendered 9 allocation(s) of round 7" in result.output
    assert expected <= {p.name for p in out.iterdir()}
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert manifest["schema"] == "wattplan.launch/1" and manifest["target"] == target
    assert manifest["placeholder_jobs"] == []


def test_missing_commands_render_with_a_warning(tmp_path: Path) -> None:
    inst = launch_instance(with_commands=False)
    write_plan(hand_plan(inst), tmp_path / "plan.json")
    (tmp_path / "inst.json").write_text(json.dumps(instance_to_doc(inst)))
    result = _launch(tmp_path / "plan.json", tmp_path / "inst.json", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "placeholder" in result.output and "'train-4'" in result.output


def test_invalid_plan_is_refused_with_its_problems(tmp_path: Path, files: tuple[Path, Path]) -> None:
    plan_path, inst_path = files
    doc = json.loads(plan_path.read_text())
    doc["jobs"][0]["setting"] = 200  # not a v100 setting
    plan_path.write_text(json.dumps(doc))
    result = _launch(plan_path, inst_path, tmp_path / "out")
    assert result.exit_code == 1
    assert "invalid plan" in result.output and "setting-not-allowed" in result.output
    assert not (tmp_path / "out").exists()


def test_bad_launch_fields_are_input_errors_with_paths(tmp_path: Path, files: tuple[Path, Path]) -> None:
    doc = launch_instance_doc()
    doc["jobs"][0]["env"] = {"BAD NAME": "x", "OK": "y"}
    doc["jobs"][1]["workdir"] = "relative/dir"
    doc["jobs"][2]["command"] = ["", "x"]
    doc["jobs"][3]["user"] = "-rf"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["instance", "check", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    for path, code in [
        ("jobs[0].env.BAD NAME", "bad-env-name"),
        ("jobs[1].workdir", "bad-workdir"),
        ("jobs[2].command[0]", "bad-command"),
        ("jobs[3].user", "bad-user"),
    ]:
        assert path in result.output and code in result.output, path
    assert "jobs[0].env.OK" not in result.output
    assert _launch(files[0], bad, tmp_path / "out").exit_code == 2
    doc["jobs"] = launch_instance_doc()["jobs"]
    doc["jobs"][4]["command"] = []  # structure: the JSON Schema wants a non-empty argv
    bad.write_text(json.dumps(doc))
    result = _launch(files[0], bad, tmp_path / "out")
    assert result.exit_code == 2 and "jobs[4].command" in result.output


def test_bad_options_are_exit_2(tmp_path: Path, files: tuple[Path, Path]) -> None:
    plan, inst = files
    node_map = tmp_path / "map.json"
    node_map.write_text(json.dumps({"v100-0": "a"}))
    result = _launch(plan, inst, tmp_path / "o1", "--node-map", str(node_map))
    assert result.exit_code == 2 and "unmapped-node" in result.output
    result = _launch(plan, inst, tmp_path / "o2", "--node-map", str(node_map), "--node-prefix", "x-")
    assert result.exit_code == 2 and "conflicting-options" in result.output
    result = _launch(plan, inst, tmp_path / "o3", "--node-prefix", "GPU_", to="kubernetes")
    assert result.exit_code == 2 and "bad-node-name" in result.output
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    result = _launch(plan, inst, foreign)
    assert result.exit_code == 2 and (foreign / "keep.txt").read_text() == "mine"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_relaunch_replaces_the_folder(tmp_path: Path, files: tuple[Path, Path]) -> None:
    plan, inst = files
    out = tmp_path / "out"
    assert _launch(plan, inst, out, to="shell").exit_code == 0
    assert _launch(plan, inst, out, to="kubernetes").exit_code == 0
    assert (out / "jobs.yaml").exists() and not (out / "v100-0.sh").exists()  # the old round is gone


def test_plan_for_another_round_is_refused(tmp_path: Path, files: tuple[Path, Path]) -> None:
    plan, inst = files
    doc = plan_to_doc(hand_plan(launch_instance()))
    doc["round"]["index"] = 8
    plan.write_text(json.dumps(doc))
    result = _launch(plan, inst, tmp_path / "out")
    assert result.exit_code == 1 and "round-mismatch" in result.output


def test_plan_made_under_a_budget_launches_against_its_instance(tmp_path: Path, files: tuple[Path, Path]) -> None:
    """``plan --budget-j`` on an instance without a budget: ``launch`` honours the plan's declared override."""
    _, inst = files
    plan = tmp_path / "capped.json"
    planned = runner.invoke(app, ["plan", str(inst), "--solver", "greedy", "--budget-j", "1e9", "--out", str(plan)])
    assert planned.exit_code == 0, planned.output
    result = _launch(plan, inst, tmp_path / "out", to="shell")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # rich wraps long lines
    expected = (
        "budget: the plan's override 1000.000 MJ (--budget-j 1000000000 J) in place of the instance's (no budget)"
    )
    assert expected in said


def test_plan_of_another_instance_is_refused(tmp_path: Path, files: tuple[Path, Path]) -> None:
    """The same round with other commands: launching would run other programs, so the recorded digest refuses it."""
    plan, _ = files
    other = tmp_path / "other.json"
    other.write_text(json.dumps(instance_to_doc(launch_instance(command=["python", "other.py"]))))
    out = tmp_path / "out"
    result = _launch(plan, other, out)
    assert result.exit_code == 1 and "instance-mismatch" in result.output, result.output
    assert not out.exists()
