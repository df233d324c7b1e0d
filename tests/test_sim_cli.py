"""``wattplan simulate`` end to end: files, plots, summary fields, bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.helpers.commands import run

SUMMARY_KEYS = ("energy_kwh", "avg_jct_s", "p95_jct_s", "makespan_s", "jobs_completed", "gpu_utilisation")


def test_single_policy_writes_summary_logs_and_plots(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8", "--policy", "fifo-max", "--out", out, "-q"
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert summary[key] is not None, key
    assert summary["jobs_completed"] == 5 and summary["stop_reason"] == "completed"
    rows = list(csv.DictReader((out / "fifo-max" / "rounds.csv").open()))
    assert len(rows) == summary["rounds_simulated"]
    energy = sum(float(r["energy_j"]) for r in rows)
    assert energy / 3.6e6 == pytest.approx(summary["energy_kwh"], rel=1e-5)
    assert len(list(csv.DictReader((out / "fifo-max" / "jobs.csv").open()))) == 5
    for png in ("power.png", "jct_cdf.png", "energy_jct.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_policies_one_folder_each_and_comparison(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "cmp"
    result = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8,p100:8", "-p", "fifo-max", "-p", "wattplan",
        "--time-limit", "2", "--power-cap-w", "4000", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for policy in ("fifo-max", "wattplan"):
        summary = json.loads((out / policy / "summary.json").read_text())
        assert summary["policy"] == policy and summary["power_cap_w"] == 4000
        rows = list(csv.DictReader((out / policy / "rounds.csv").open()))
        assert all(float(r["energy_j"]) <= 4000 * 360 * (1 + 1e-9) for r in rows)
    comparison = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["policy"] for r in comparison] == ["fifo-max", "wattplan"]
    assert (out / "power.png").exists() and (out / "energy_jct.png").exists()


def _rounds_without_wall_clock(path: Path) -> list[dict[str, str]]:
    """``rounds.csv`` rows without the wall-clock column (``solver_s``)."""
    with path.open() as f:
        return [{k: v for k, v in row.items() if k != "solver_s"} for row in csv.DictReader(f)]


def test_replan_events_gives_fifo_max_the_same_rounds(tmp_path: Path, tiny_trace: Path) -> None:
    """fifo-max decides from the queue alone, so asking it only at events changes none of its rounds."""
    rounds: dict[str, list[dict[str, str]]] = {}
    decided: dict[str, int] = {}
    for mode in ("rounds", "events"):
        out = tmp_path / mode
        result = run(
            "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8,p100:8", "-p", "fifo-max",
            "--replan", mode, "--no-plots", "-q", "--out", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        rounds[mode] = _rounds_without_wall_clock(out / "fifo-max" / "rounds.csv")
        summary = json.loads((out / "fifo-max" / "summary.json").read_text())
        assert summary["replan"] == mode
        decided[mode] = summary["rounds_decided"]
    assert len(rounds["rounds"]) > 3 and rounds["events"] == rounds["rounds"]
    assert decided["events"] <= decided["rounds"]
    bad = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8", "--replan", "often",
        "--out", tmp_path / "x", "-q",
    )  # fmt: skip
    assert bad.exit_code == 2 and "--replan" in bad.output


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--engine", "rounds", "--power-cap-w", "1000", "--energy-budget-kwh", "3"), "conflicting-options"),
        (("--policy", "fastest"), "unknown-policy"),
        (("--engine", "rounds", "--noise", "1.5"), "bad-option"),
        (("--max-jobs", "0"), "bad-option"),
        (("--power-cap-w", "nan"), "--power-cap-w"),
        (("--round-s", "inf"), "--round-s"),
        (("--restart-s", "nan"), "--restart-s"),
    ],
)
def test_bad_options_exit_2_with_the_option_named(tiny_trace: Path, tmp_path: Path, args, code: str) -> None:
    result = run("simulate", tiny_trace, "--cluster", "v100:8", *args, "--out", tmp_path / "x", "-q")
    assert result.exit_code == 2, result.output
    assert code in result.output and "Traceback" not in result.output


def test_bad_cluster_and_empty_window_exit_2(tiny_trace: Path, tmp_path: Path) -> None:
    bad = run("simulate", tiny_trace, "--cluster", "v100:7", "--out", tmp_path / "x", "-q")
    assert bad.exit_code == 2 and "bad-cluster" in bad.output
    empty = run("simulate", tiny_trace, "--cluster", "v100:8", "--start-s", "1e9", "--out", tmp_path / "y", "-q")
    assert empty.exit_code == 2 and "empty-replay" in empty.output
    missing = run("simulate", tmp_path / "nope.trace", "--cluster", "v100:8", "--out", tmp_path / "z", "-q")
    assert missing.exit_code == 2 and "no such file" in missing.output and "nope.trace" in missing.output


def test_rounds_log_says_why_wattplan_fell_back(tmp_path: Path, tiny_trace: Path, monkeypatch) -> None:
    """A round whose solver returned nothing runs the greedy plan; ``rounds.csv`` names the reason."""
    from wattplan.formulations import stages as stages_module
    from wattplan.formulations.backends import SolverResult

    monkeypatch.setattr(stages_module, "mip_stage", lambda state, *a, **k: SolverResult("time_limit"))
    out = tmp_path / "fb"
    result = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8", "-p", "wattplan", "--out", out, "-q"
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "wattplan" / "rounds.csv").open()))
    assert rows and all(r["status"] == "fallback" for r in rows)
    assert all(r["note"] == "no solution: time_limit" for r in rows)
    assert json.loads((out / "wattplan" / "summary.json").read_text())["jobs_completed"] == 5
