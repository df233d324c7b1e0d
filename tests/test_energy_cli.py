"""``wattplan simulate`` with the floor, the runtime-bounded mode and signals; ``wattplan frontier``."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.helpers.commands import run

DELTA = re.compile(r" delta ([0-9.]+);")
"""The ``delta`` the JCT governor set, in a round line of ``agent.log``."""


def _planned_rounds(log: Path) -> list[str]:
    """The round lines of an ``agent.log`` whose plan ran jobs (the last, ``(idle)``, plans nothing)."""
    lines = log.read_text().splitlines()
    return [line for line in lines if line.startswith("round ") and "(idle)" not in line]


def test_summary_has_floor_captured_share_and_carbon(tmp_path: Path, tiny_trace: Path) -> None:
    """Against Slurm alone: ``captured_share = (E_ref - E) / (E_ref - E_floor)``, energies over the common window (kWh).

    The carbon signal's hour 0 is 2022-06-01T00:00Z, 151 days (January to May) after the file's first hour.
    """
    out = tmp_path / "out"
    result = run(
        "simulate", tiny_trace, "--cluster", "v100:8", "-p", "slurm", "-p", "zeus", "-p", "wattplan",
        "--time-limit", "2",
        "--max-jct-increase", "10", "--carbon", "CISO_2022.csv", "--signal-start", "2022-06-01T00:00Z",
        "--out", out, "-q", "--no-plots",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ref = json.loads((out / "slurm" / "summary.json").read_text())
    assert ref["captured_share"] == 0 and ref["completed"] == 5
    for policy in ("zeus", "wattplan"):
        s = json.loads((out / policy / "summary.json").read_text())
        assert s["completed"] == 5
        assert 0 < s["energy_floor_kwh"] <= s["energy_common_kwh"] and s["energy_kwh"] <= s["energy_common_kwh"]
        assert s["reference_policy"] == "slurm" and s["energy_floor_kwh"] == ref["energy_floor_kwh"]
        e_ref = ref["energy_common_kwh"]
        share = (e_ref - s["energy_common_kwh"]) / (e_ref - s["energy_floor_kwh"])
        assert s["captured_share"] == pytest.approx(share, rel=1e-9)
        assert s["carbon_kg"] > 0 and s["signals"]["carbon"]["offset_h"] == 151 * 24
    spec = json.loads((out / "wattplan" / "summary.json").read_text())["replay_key"]["spec"]
    assert spec["max_jct_increase"] == pytest.approx(0.1) and spec["signal_aware"]
    planned = _planned_rounds(out / "wattplan" / "agent.log")
    assert planned and all(DELTA.search(line) for line in planned), planned  # the governor steers every round


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
    """The tail bound and the projected governor on the agent's loop: every job ends, no round's delta above 0.04.

    Without ``--delta-max`` the governor asks more than 0.04 of these jobs (about 0.06 at +3%), so the bound binds.
    """
    out = tmp_path / "out"
    result = run(
        "simulate", tiny_trace, "--cluster", "v100:8", "-p", "wattplan", "--time-limit", "2",
        "--max-jct-increase", "3", "--tail-bound", "10", "--governor", "projected", "--delta-max", "0.04",
        "--out", out, "-q", "--no-plots",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    s = json.loads((out / "wattplan" / "summary.json").read_text())
    assert s["completed"] == s["jobs"] == 5 and s["stop_reason"] == "completed"
    spec = s["replay_key"]["spec"]
    assert (spec["tail_bound"], spec["governor"], spec["delta_max"]) == (pytest.approx(0.1), "projected", 0.04)
    planned = _planned_rounds(out / "wattplan" / "agent.log")
    deltas = [float(m.group(1)) for line in planned if (m := DELTA.search(line))]
    assert len(deltas) == len(planned) > 0 and max(deltas) <= 0.04, planned


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
