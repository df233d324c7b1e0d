"""``wattplan simulate`` with the floor, the runtime-bounded mode and signals; ``wattplan frontier``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.helpers.commands import run


def test_summary_has_floor_captured_share_and_carbon(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8", "-p", "zeus", "-p", "wattplan",
        "--time-limit", "2",
        "--max-jct-increase", "10", "--carbon", "CISO_2022.csv", "--signal-start", "2022-06-01T00:00Z",
        "--out", out, "-q", "--no-plots",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for policy in ("zeus", "wattplan"):
        s = json.loads((out / policy / "summary.json").read_text())
        assert 0 < s["energy_floor_kwh"] <= s["energy_kwh"]
        ref = s["reference"]
        assert ref["policy"] == "fifo-max"
        share = (ref["energy_kwh"] - s["energy_kwh"]) / (ref["energy_kwh"] - s["energy_floor_kwh"])
        assert s["captured_share"] == pytest.approx(share)
        assert s["carbon_kg"] > 0 and s["signals"]["carbon"]["offset_h"] == 151 * 24
    s = json.loads((out / "wattplan" / "summary.json").read_text())
    assert s["objective"] == "efficiency" and s["max_jct_increase"] == pytest.approx(0.1) and s["signal_aware"]
    deltas = [r["delta"] for r in csv.DictReader((out / "wattplan" / "rounds.csv").open())]
    assert deltas and all(d != "" for d in deltas)


def test_bad_signal_file_exits_2_naming_the_row(tmp_path: Path, tiny_trace: Path) -> None:
    bad = tmp_path / "ci.csv"
    bad.write_text("timestamp,gco2_per_kwh\n2022-01-01T00:00Z,200\n2022-01-01T01:00Z,-5\n2022-01-01T01:00Z,100\n")
    result = run("simulate", tiny_trace, "--cluster", "v100:8", "-p", "fifo-max", "--carbon", bad, "-o", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert "ci.csv:row 3" in result.output and "negative-value" in result.output
    assert "ci.csv:row 4" in result.output and "duplicate-timestamp" in result.output
    assert not (tmp_path / "o").exists()


def test_bad_knobs_exit_2(tmp_path: Path, tiny_trace: Path) -> None:
    for args in (
        ("--delta", "1.2"),
        ("--max-jct-increase", "-5"),
        ("--signal-start", "2022-06-01T00:00Z"),
        ("--tail-bound", "-1"),
        ("--delta-max", "1.5"),
        ("--governor", "sometimes"),
    ):
        result = run("simulate", tiny_trace, "--cluster", "v100:8", *args, "-o", tmp_path / "o")
        assert result.exit_code == 2, (args, result.output)
        assert args[0] in result.output, (args, result.output)


def test_tail_bound_and_projected_governor_run_end_to_end(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "simulate", tiny_trace, "--engine", "rounds", "--cluster", "v100:8", "-p", "wattplan", "--time-limit", "2",
        "--max-jct-increase", "3", "--tail-bound", "10", "--governor", "projected", "--delta-max", "0.4",
        "--out", out, "-q", "--no-plots",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    s = json.loads((out / "wattplan" / "summary.json").read_text())
    assert s["tail_bound"] == pytest.approx(0.1) and s["jobs_completed"] == s["jobs_total"]
    rows = list(csv.DictReader((out / "wattplan" / "rounds.csv").open()))
    assert {"bounded", "phase", "idle_gpus_j"} <= set(rows[0])
    assert max(float(r["delta"]) for r in rows) <= 0.4


@pytest.mark.slow
def test_frontier_command_writes_the_front(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "front"
    result = run(
        "frontier", tiny_trace, "--cluster", "v100:8", "--deltas", "0.1", "--max-jct-increase", "5",
        "--baselines", "fifo-max,zeus", "--time-limit", "2", "--workers", "2", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "frontier.csv").open()))
    assert {r["label"] for r in rows} == {
        "fifo-max",
        "zeus",
        "wattplan-progress",
        "wattplan-efficiency-delta-0.1",
        "wattplan-efficiency-jct+5%",
    }
    assert all(not r["error"] for r in rows)
    assert (out / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    bad = run("frontier", tiny_trace, "--cluster", "v100:8", "--deltas", "0.1,x", "-o", out)
    assert bad.exit_code == 2 and "--deltas[1]" in bad.output
