"""``wattplan simulate`` end to end on the agent's loop: files, plots, summary fields, bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.helpers.commands import run
from wattplan.planner.control.slurm_replay import PASS_DELAY_REAL_S

SUMMARY_KEYS = ("energy_kwh", "avg_jct_s", "p95_jct_s", "makespan_s", "completed", "energy_floor_kwh")
TINY_STEPS = {"j0": 4000, "j1": 6000, "j2": 9000, "j3": 3000, "j4": 5000}
"""The steps of the ``tiny_trace`` fixture's jobs (tests/conftest.py), by the ids the replay gives them."""
LAUNCH_S, LOAD_S = PASS_DELAY_REAL_S + 1.0, 30.0  # Slurm's pass and launch at time scale 1, the checkpoint load
"""What every start costs on the simulated Slurm at time scale 1 (s): Slurm's pass after the job's arrival, the launch,
then ``--load-s``'s default."""


def _power_steps(path: Path) -> list[tuple[float, float, float]]:
    """``power.csv``: the cluster's draw step by step, ``(t0_s, t1_s, power_w)``."""
    with path.open() as f:
        return [(float(r["t0_s"]), float(r["t1_s"]), float(r["power_w"])) for r in csv.DictReader(f)]


def test_single_policy_writes_summary_logs_and_plots(tmp_path: Path, tiny_trace: Path) -> None:
    """Every step of the trace is done, the draw step by step adds up to the energy, the figures are written.

    The first step of ``power.csv`` is every node idle (the summary's ``idle_tail``: nothing runs after the last
    job either) for the first jobs' pass, launch and load, ``LAUNCH_S + LOAD_S`` from the first arrival: nothing
    computes while a job loads its checkpoint.
    """
    out = tmp_path / "out"
    result = run("simulate", tiny_trace, "--cluster", "v100:8", "--policy", "fifo-max", "--out", out, "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert summary[key] is not None, key
    assert summary["completed"] == summary["jobs"] == 5 and summary["stop_reason"] == "completed"
    jobs = list(csv.DictReader((out / "fifo-max" / "jobs.csv").open()))
    assert {r["job_id"]: float(r["steps"]) for r in jobs} == TINY_STEPS
    steps = _power_steps(out / "fifo-max" / "power.csv")
    assert steps[0] == (0.0, LAUNCH_S + LOAD_S, summary["idle_tail"]["steady_w"])
    assert all(b[0] == a[1] for a, b in zip(steps, steps[1:], strict=False))  # back to back, no gap
    assert steps[-1][1] == pytest.approx(summary["makespan_s"], rel=1e-12)  # the window ends at the last job
    energy = sum((t1 - t0) * w for t0, t1, w in steps)
    assert energy / 3.6e6 == pytest.approx(summary["energy_kwh"], rel=1e-9)
    parts = summary["energy_node_kwh"] + summary["energy_idle_kwh"] + summary["energy_dynamic_kwh"]
    assert parts == pytest.approx(summary["energy_kwh"], rel=1e-12)
    assert "round 0 t=0s" in (out / "fifo-max" / "agent.log").read_text()
    for png in ("power.png", "jct_cdf.png", "energy_jct.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_policies_one_folder_each_and_comparison(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "cmp"
    result = run(
        "simulate", tiny_trace, "--cluster", "v100:8,p100:8", "-p", "fifo-max", "-p", "wattplan",
        "--time-limit", "2", "--power-cap-w", "1400", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for policy in ("fifo-max", "wattplan"):
        summary = json.loads((out / policy / "summary.json").read_text())
        assert summary["policy"] == policy and summary["replay_key"]["spec"]["power_cap_w"] == 1400
        assert summary["completed"] == 5
        # The cap holds on average (a plan may exceed it between restarts). It binds: the two nodes idle draw 936 W
        # and fifo-max uncapped averages about 1,500 W on these jobs.
        assert summary["energy_kwh"] * 3.6e6 / summary["makespan_s"] <= 1400 * (1 + 1e-9)
    comparison = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["policy"] for r in comparison] == ["fifo-max", "wattplan"]
    assert (out / "power.png").exists() and (out / "energy_jct.png").exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--power-cap-w", "1000", "--energy-budget-kwh", "3", "--budget-period-s", "3600"), "conflicting-options"),
        (("--policy", "fastest"), "unknown-policy"),
        (("--noise", "1.5"), "bad-option"),
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


def test_the_agent_log_says_wattplan_fell_back(tmp_path: Path, tiny_trace: Path, monkeypatch) -> None:
    """A round whose solver returned nothing runs the greedy plan; the agent's round line names it, and all jobs end."""
    from wattplan.formulations import stages as stages_module
    from wattplan.formulations.backends import SolverResult

    monkeypatch.setattr(stages_module, "mip_stage", lambda state, *a, **k: SolverResult("time_limit"))
    out = tmp_path / "fb"
    result = run("simulate", tiny_trace, "--cluster", "v100:8", "-p", "wattplan", "--out", out, "-q", "--no-plots")
    assert result.exit_code == 0, result.output
    rounds = [line for line in (out / "wattplan" / "agent.log").read_text().splitlines() if line.startswith("round ")]
    planned = [line for line in rounds if "(idle)" not in line]
    assert planned and all("(fallback by cbc+greedy)" in line for line in planned), rounds
    assert json.loads((out / "wattplan" / "summary.json").read_text())["completed"] == 5
