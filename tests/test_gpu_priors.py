"""Priors for GPU types without measurements (docs/design.md §9.8): the rule by hand, its measured error, the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.profiles import a_points, entry, point, tiny_library
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.profile_checks import library_problems
from wattplan.planner.control.slurm_replay import PASS_DELAY_REAL_S
from wattplan.planner.profile_library.library import library_from_doc, load_profile_library
from wattplan.planner.profile_library.priors import (
    GpuSpec,
    GpuSpecs,
    add_prior_types_doc,
    load_gpu_specs,
    measure_expected_error,
    settings_grid,
    speed_ratio,
    with_prior_types,
)
from wattplan.planner.profiling.fit import fit_library

runner = CliRunner()


def spec(name: str, tdp: float, low: float, idle: float, bw: float, fp16: float) -> GpuSpec:
    return GpuSpec(name, name, tdp, low, idle, 16.0, bw, 10.0, fp16)


# Reference: the tiny library's v100 (settings 150, 250 W; idle 40 W), spec'd with TDP 250 W, 900 GB/s, 100 TFLOPS.
# New type "big": TDP 500 W, limits from 100 W, idle 60 W, 3600 GB/s, 400 TFLOPS.
REF = spec("v100", 250, 150, 40, 900, 100)
BIG = spec("big", 500, 100, 60, 3600, 400)
SPECS = GpuSpecs("v100", {"v100": REF, "big": BIG}, None)


def test_speed_ratio_and_grid_by_hand() -> None:
    # r = sqrt((400 / 100) * (3600 / 900)) = sqrt(16) = 4
    assert speed_ratio(BIG, REF) == 4.0
    assert speed_ratio(BIG, REF, "bandwidth") == 4.0 and speed_ratio(BIG, REF, "fp32") == 2.0
    # f_lo = 150 / 250 = 0.6: from max(100, 300) = 300 to 500 W in 7 points: 300, 333.3, ..., 500 rounded
    assert settings_grid(BIG, REF, [150, 250]) == [300, 333, 367, 400, 433, 467, 500]


def test_prior_entry_by_hand_pairs_borrowed_and_basis() -> None:
    lib = library_from_doc(tiny_library(), "tiny")
    out, added = with_prior_types(lib, ["v100", "big"], SPECS)
    assert added == ["big"] and out.gpu_types["big"]["settings"] == [300, 333, 367, 400, 433, 467, 500]
    got = {(p.type, p.gpus, p.setting): p for p in out.profiles if p.gpu_type == "big"}
    # A on 1 GPU at 400 W: s_ref = 400 * 250 / 500 = 200 W, halfway between 150 and 250:
    # X_ref = (6 + 8) / 2 = 7 -> X = 4 * 7 = 28; P_ref = (140 + 200) / 2 = 170 ->
    # P = 60 + (170 - 40) * (500 - 60) / (250 - 40) = 60 + 130 * 440 / 210 = 332.38 W (below 400 W).
    a = got[("A", 1, 400)]
    assert a.steps_per_s == pytest.approx(28.0) and a.power_w == pytest.approx(60 + 130 * 440 / 210)
    # At 300 W: s_ref = 150, P = 60 + 100 * 440 / 210 = 269.5 W; B at 500 W: s_ref 250, P = 60 + 140 * 440/210.
    assert got[("A", 1, 300)].power_w == pytest.approx(60 + 100 * 440 / 210)
    assert got[("B", 1, 500)].steps_per_s == pytest.approx(40.0)
    assert got[("B", 1, 500)].power_w == pytest.approx(60 + 140 * 440 / 210)
    assert len(got) == 5 * 7  # A on 1, 2, 4, 8 GPUs and B on 1, at 7 settings
    (pair,) = [q for q in out.pairs if q.gpu_type == "big"]
    assert (pair.a, pair.b, pair.gpus, pair.rho_a, pair.rho_b) == ("A", "B", 1, 0.7, 1.0)
    assert a.basis is not None and a.basis["kind"] == "prior" and a.basis["rel_error"] is None  # no error measured


def test_power_never_above_the_setting() -> None:
    # A tiny idle and a high reference power: P = 1 + (240 - 40) * (500 - 1) / 210 = 476 W at s_ref 250 (500 W
    # limit, kept) but at 300 W (s_ref 150, P_ref 240 -> 476) it is capped at 300.
    doc = tiny_library()
    for p in doc["profiles"]:
        p["power_w"] = 240.0
    lib = library_from_doc(doc, "tiny")
    low_idle = GpuSpecs("v100", {"v100": REF, "big": spec("big", 500, 100, 1, 3600, 400)}, None)
    out, _ = with_prior_types(lib, ["big"], low_idle)
    powers = {p.setting: p.power_w for p in out.profiles if p.gpu_type == "big" and p.type == "B"}
    assert powers[300] == 300.0 and powers[500] == pytest.approx(1 + 200 * 499 / 210)


def test_doc_with_priors_passes_every_check_and_refuses_known_types() -> None:
    doc = tiny_library()
    lib = library_from_doc(doc, "tiny")
    add_prior_types_doc(doc, lib, ["big"], SPECS)
    assert library_problems(doc) == []
    with pytest.raises(Exception, match="--gpu"):
        add_prior_types_doc(tiny_library(), lib, ["v100", "h999"], SPECS)


def test_measured_error_reproduced_on_the_shipped_library() -> None:
    specs = load_gpu_specs()
    measured = measure_expected_error(load_profile_library(), specs)
    assert specs.error is not None
    assert measured.throughput == pytest.approx(specs.error.throughput, abs=1e-4)
    assert measured.power == pytest.approx(specs.error.power, abs=1e-4)
    assert measured.pair == pytest.approx(specs.error.pair, abs=1e-4)
    library_check, zeus_check = measured.checks
    assert (library_check.profiles, library_check.pairs, zeus_check.profiles) == (498, 329, 364)


def test_spec_file_names_sources_for_every_type() -> None:
    raw = json.loads(Path("instances/profiles/gpu_specs.json").read_text())
    names = {g["name"] for g in raw["gpu_types"]}
    assert {"a100", "h100", "h200", "v100", "p100"} <= names
    for g in raw["gpu_types"]:
        assert {"datasheet", "min_limit_w", "idle_power_w"} <= set(g["sources"]), g["name"]


def test_bad_spec_names_the_field(tmp_path: Path) -> None:
    raw = json.loads(Path("instances/profiles/gpu_specs.json").read_text())
    raw["gpu_types"][3]["tdp_w"] = -1
    bad = tmp_path / "specs.json"
    bad.write_text(json.dumps(raw))
    result = runner.invoke(
        app, ["profiles", "prior", "--gpu", "a100", "--specs", str(bad), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "gpu_types[3].tdp_w" in result.output


def test_profiles_prior_ls_show_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "lib.json"
    result = runner.invoke(app, ["profiles", "prior", "--gpu", "a100,h100", "--out", str(out)])
    assert result.exit_code == 0, result.output
    lib = load_profile_library(out)
    assert lib.gpu_types["h100"]["settings"] == [280, 350, 420, 490, 560, 630, 700]
    assert all(p.basis and p.basis["kind"] == "prior" for p in lib.profiles if p.gpu_type == "a100")
    again = runner.invoke(app, ["profiles", "prior", "--gpu", "a100", "--profiles", str(out), "--out", str(out) + "2"])
    assert again.exit_code == 2 and "already has profiles" in again.output
    listed = runner.invoke(app, ["profiles", "ls", "--profiles", str(out)], env={"COLUMNS": "80"})
    assert listed.exit_code == 0 and "prior 581" in listed.output and "none 581" in listed.output
    assert max(len(line) for line in listed.output.splitlines()) <= 80
    shown = runner.invoke(
        app,
        ["profiles", "show", "--gpu", "h100", "--type", "ResNet-50 (batch size 64)", "--profiles", str(out)],
        env={"COLUMNS": "80"},
    )
    assert shown.exit_code == 0 and shown.output.count("prior") == 4 * 7
    assert max(len(line) for line in shown.output.splitlines()) <= 80
    unknown = runner.invoke(app, ["profiles", "show", "--gpu", "b200"])
    assert unknown.exit_code == 2 and "--gpu" in unknown.output


def test_fit_accepts_a_library_of_priors(tmp_path: Path) -> None:
    doc = tiny_library()
    add_prior_types_doc(doc, library_from_doc(doc, "tiny"), ["big"], SPECS)
    fitted = fit_library(doc, a_points()).doc
    big = [p for p in fitted["profiles"] if p["gpu_type"] == "big"]
    assert len(big) == 35 and all(p["basis"]["kind"] == "prior" for p in big)


def test_a_measured_setting_off_the_grid_joins_it() -> None:
    # The V100's 300 W default limit against the tiny library's 150 / 250 W grid: it joins the settings and its
    # measured cell is tabled as measured (it was dropped before).
    pts = [*a_points(), point("exclusive", "a3", job_type="A", gpus=1, setting=300, steps_per_s=10.5, power_w=260.0)]
    result = fit_library(tiny_library(), pts)
    (v100,) = result.doc["gpu_types"]
    assert v100["settings"] == [150, 250, 300]
    a300 = entry(result.doc, "A", 1, 300)
    assert (a300["steps_per_s"], a300["power_w"], a300["basis"]["kind"]) == (10.5, 260.0, "measured")
    assert any("joined its settings" in n for n in result.notes)
    assert library_problems(result.doc) == []


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_plan_on_an_h100_instance_from_the_prior_alone(tmp_path: Path) -> None:
    inst, plan = tmp_path / "inst.json", tmp_path / "plan.json"
    built = runner.invoke(
        app,
        ["instance", "from-trace", "6c71a0.trace", "--cluster", "v100:8,h100:8", "--at", "1900000",
         "--max-jobs", "12", "--out", str(inst)],
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    assert "h100 has no profiles" in built.output and "median error" in built.output
    doc: dict[str, Any] = json.loads(inst.read_text())
    assert {g["name"] for g in doc["gpu_types"]} == {"v100", "h100"}
    assert any(p["gpu_type"] == "h100" for p in doc["profiles"])
    planned = runner.invoke(app, ["plan", str(inst), "--out", str(plan)])
    assert planned.exit_code == 0, planned.output
    assert "validated" in planned.output
    assert any(j.get("gpu_type") == "h100" for j in json.loads(plan.read_text())["jobs"])  # the prior type is used


def test_a_replay_on_h100_nodes_runs_on_the_prior(tmp_path: Path) -> None:
    """Two ResNet-50 jobs on an H100 node, which has no measured profile: the loop runs them on the prior.

    The prior's rate at the top setting (700 W) is ``r X_v100(n, 250 W)`` with the spec's speed ratio r = 5.733
    (design §9.8); each job starts at Slurm's pass after its arrival (8 GPUs free), pays the 1 s launch and the 30 s
    load, and runs
    at that rate: JCT = 31 + steps / (r X_v100). Every one of the 8 GPUs draws the prior's idle 94 W meanwhile.
    """
    shipped = load_profile_library(None)
    ratio = with_prior_types(shipped, ["h100"])[0].gpu_types["h100"]["prior"]["speed_ratio"]
    rows = [("ResNet-50 (batch size 64)", 10_000, 0, 1), ("ResNet-50 (batch size 64)", 20_000, 0, 2)]
    trace = write_gavel_trace(tmp_path / "two.trace", rows)
    out = tmp_path / "sim"
    done = runner.invoke(
        app,
        ["simulate", str(trace), "--cluster", "h100:8", "-p", "fifo-max", "--time-limit", "1", "--no-plots", "-q",
         "-o", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    assert summary["completed"] == summary["jobs"] == 2
    with (out / "fifo-max" / "jobs.csv").open() as f:
        jct = {row["job_id"]: float(row["jct_s"]) for row in csv.DictReader(f)}
    for job_id, (job_type, steps, _, gpus) in zip(("j0", "j1"), rows, strict=True):
        v100 = next(
            p for p in shipped.profiles if (p.type, p.gpu_type, p.gpus, p.setting) == (job_type, "v100", gpus, 250)
        )
        assert jct[job_id] == pytest.approx(PASS_DELAY_REAL_S + 31.0 + steps / (ratio * v100.steps_per_s), rel=1e-9), (
            job_id
        )
    assert summary["energy_idle_kwh"] * 3.6e6 == pytest.approx(8 * 94.0 * summary["makespan_s"], rel=1e-9)
