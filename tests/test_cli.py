"""The command line end to end: exit codes, messages, files written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "instances" / "sources" / "gavel" / "traces"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_help_lists_the_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in ("plan", "validate", "instance", "profiles"):
        assert command in result.output


def test_plan_default_instance_writes_a_valid_plan(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = run("plan", ROOT / "instances" / "default.json", "--solver", "greedy", "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "wattplan.plan/1" and len(doc["jobs"]) == 64
    assert doc["round"]["energy_j"] <= doc["round"]["budget_j"]
    check = run("validate", ROOT / "instances" / "default.json", out)
    assert check.exit_code == 0 and "valid" in check.output


def test_validate_rejects_a_tampered_plan(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    assert run("plan", ROOT / "instances" / "default.json", "--solver", "greedy", "--out", out, "-q").exit_code == 0
    doc = json.loads(out.read_text())
    doc["round"]["energy_j"] *= 0.5
    out.write_text(json.dumps(doc))
    result = run("validate", ROOT / "instances" / "default.json", out)
    assert result.exit_code == 1
    assert "round-claim-mismatch" in result.output


def test_bad_instance_exits_2_with_paths_and_no_traceback(tmp_path: Path, tiny_doc: dict) -> None:
    tiny_doc["jobs"][0]["gpus"] = [1, 3]
    tiny_doc["profiles"][0]["power_w"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tiny_doc))
    result = run("instance", "check", bad)
    assert result.exit_code == 2
    assert "profiles[0].power_w" in result.output
    assert "Traceback" not in result.output
    plan_out = tmp_path / "plan.json"
    assert run("plan", bad, "--out", plan_out).exit_code == 2
    assert not plan_out.exists()


def test_failed_plan_keeps_the_previous_file(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    out.write_text("previous plan")
    result = run("plan", tmp_path / "missing.json", "--out", out)
    assert result.exit_code == 2
    assert out.read_text() == "previous plan"


def test_instance_from_gavel_trace(tmp_path: Path) -> None:
    out = tmp_path / "round.json"
    result = run(
        "instance",
        "from-trace",
        TRACES / "6c71a0.trace",
        "--cluster",
        "v100:16,p100:8",
        "--at",
        "1900000",
        "--max-jobs",
        "20",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    assert run("instance", "check", out).exit_code == 0
    doc = json.loads(out.read_text())
    assert len(doc["jobs"]) == 20
    assert {g["name"]: g["nodes"] for g in doc["gpu_types"]} == {"v100": 2, "p100": 1}


def test_instance_from_philly_csv(tmp_path: Path) -> None:
    out = tmp_path / "round.json"
    result = run(
        "instance",
        "from-trace",
        ROOT / "instances" / "sources" / "pollux" / "philly.csv",
        "--cluster",
        "v100:32",
        "--vc",
        "6214e9",
        "--at",
        "86400",
        "--power-cap-w",
        "5000",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["jobs"] and doc["round"]["budget_j"] == pytest.approx(5000 * 360)
    assert run("instance", "check", out).exit_code == 0


@pytest.mark.parametrize("spec", ["v100:12", "v100", "tpu:8", "v100:x"])
def test_bad_cluster_spec(tmp_path: Path, spec: str) -> None:
    result = run(
        "instance", "from-trace", TRACES / "6c71a0.trace", "--cluster", spec, "--at", "0", "--out", tmp_path / "x.json"
    )
    assert result.exit_code == 2
    assert "cluster" in result.output
    assert not (tmp_path / "x.json").exists()


def test_profiles_build_reproduces_the_shipped_library(tmp_path: Path) -> None:
    out = tmp_path / "lib.json"
    result = run("profiles", "build", "--out", out)
    assert result.exit_code == 0, result.output
    shipped = ROOT / "instances" / "profiles" / "gavel_zeus_v100_p100.json"
    assert json.loads(out.read_text()) == json.loads(shipped.read_text())


@pytest.mark.parametrize("solver", ["cpsat", "highs", "cbc"])
def test_plan_with_each_solver_on_a_small_round(tmp_path: Path, solver: str) -> None:
    inst = tmp_path / "round.json"
    assert (
        run(
            "instance",
            "from-trace",
            TRACES / "6c71a0.trace",
            "--cluster",
            "v100:16,p100:8",
            "--at",
            "1900000",
            "--max-jobs",
            "12",
            "--out",
            inst,
        ).exit_code
        == 0
    )
    out = tmp_path / "plan.json"
    result = run("plan", inst, "--solver", solver, "--time-limit", "20", "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["round"]["solver"] == solver and doc["round"]["status"] in ("optimal", "feasible")
    assert doc["round"]["model"]["columns"] > 0 and doc["round"]["lp_bound"] >= doc["round"]["progress"] - 1e-9
    assert run("validate", inst, out).exit_code == 0


def test_unknown_solver_is_bad_input(tmp_path: Path) -> None:
    result = run(
        "plan", ROOT / "instances" / "default.json", "--solver", "pulp:NO_SUCH_SOLVER", "--out", tmp_path / "p.json"
    )
    assert result.exit_code == 2
    assert "NO_SUCH_SOLVER" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_export_model(tmp_path: Path, suffix: str) -> None:
    model = tmp_path / f"round{suffix}"
    result = run(
        "plan",
        ROOT / "instances" / "default.json",
        "--solver",
        "cbc",
        "--time-limit",
        "10",
        "--export-model",
        model,
        "--out",
        tmp_path / "p.json",
        "-q",
    )
    assert result.exit_code == 0, result.output
    text = model.read_text()
    assert "x_j" in text and "batch_size_" in text  # readable names, no blanks or brackets


@pytest.mark.slow
def test_power_cap_overrides_the_budget(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    result = run(
        "plan",
        ROOT / "instances" / "default.json",
        "--solver",
        "cbc",
        "--power-cap-w",
        "5000",
        "--time-limit",
        "10",
        "--out",
        out,
        "-q",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["round"]["budget_j"] == pytest.approx(5000 * 360)
    assert doc["round"]["energy_j"] <= 5000 * 360 * (1 + 1e-9)


@pytest.mark.parametrize(
    ("option", "value", "budget"), [("--power-cap-w", "20000", 20000 * 360), ("--budget-j", "7000000", 7e6)]
)
def test_plan_under_a_budget_override_validates_against_its_instance(
    tmp_path: Path, option: str, value: str, budget: float
) -> None:
    """A plan made under --power-cap-w or --budget-j carries the override, and ``validate`` honours it."""
    instance, out = ROOT / "instances" / "default.json", tmp_path / "p.json"
    planned = run("plan", instance, "--solver", "greedy", option, value, "--out", out, "-q")
    assert planned.exit_code == 0, planned.output
    override = json.loads(out.read_text())["round"]["budget_override"]
    assert override["option"] == option and override["budget_j"] == pytest.approx(budget)
    assert override["instance_budget_j"] == json.loads(instance.read_text())["round"]["budget_j"]
    check = run("validate", instance, out)
    assert check.exit_code == 0, check.output
    said = " ".join(check.output.split())  # rich wraps long lines
    assert "valid" in said and f"budget: the plan's override {budget / 1e6:.3f} MJ ({option} {value}" in said


def test_budget_differing_without_a_declared_override_is_rejected(tmp_path: Path) -> None:
    instance, out = ROOT / "instances" / "default.json", tmp_path / "p.json"
    assert run("plan", instance, "--solver", "greedy", "--power-cap-w", "20000", "--out", out, "-q").exit_code == 0
    doc = json.loads(out.read_text())
    del doc["round"]["budget_override"]
    out.write_text(json.dumps(doc))
    result = run("validate", instance, out)
    assert result.exit_code == 1 and "round-mismatch" in result.output and "round.budget_j" in result.output


@pytest.mark.parametrize(("option", "value"), [("--budget-j", "nan"), ("--power-cap-w", "inf"), ("--budget-j", "-1")])
def test_a_budget_option_that_is_not_a_finite_number_is_refused_by_name(
    tmp_path: Path, option: str, value: str
) -> None:
    result = run("plan", "instances/default.json", option, value, "--out", str(tmp_path / "p.json"), "-q")
    assert result.exit_code == 2, result.output
    assert option in result.output and "Traceback" not in result.output
    assert not (tmp_path / "p.json").exists()


def test_version_prints_the_package_version() -> None:
    from wattplan.planner.contracts.provenance import wattplan_version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wattplan {wattplan_version()}"
    assert wattplan_version() not in ("", "unknown")
