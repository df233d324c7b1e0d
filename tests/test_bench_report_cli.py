"""A tiny real bench through the CLI: `instance sweep`, then highs, cbc and greedy over two seeds."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app

runner = CliRunner()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_a_tiny_sweep_benched_over_two_seeds(tmp_path: Path) -> None:
    sweep = [
        "instance",
        "sweep",
        "-o",
        str(tmp_path / "set"),
        "--sizes",
        "6",
        "--budgets",
        "0.5",
        "--family",
        "sampled",
    ]
    made = runner.invoke(app, sweep)
    assert made.exit_code == 0, made.output
    out = tmp_path / "out"
    args = ["bench", str(tmp_path / "set"), "--solvers", "highs,cbc,greedy", "--seeds", "2", "--time-limit", "5"]
    result = runner.invoke(app, [*args, "--workers", "2", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "greedy (heuristic)" in result.output and "virtual best" in result.output

    runs = read_csv(out / "runs.csv")
    assert len(runs) == 6
    for r in runs:
        if r["solver"] == "greedy":
            assert r["nodes"] == r["lp_iterations"] == ""  # greedy searches nothing: unknown, blank
        else:
            assert r["status"] in ("optimal", "feasible") and int(r["nodes"]) >= 0 and int(r["lp_iterations"]) >= 0
        assert r["branches"] == r["conflicts"] == ""

    summary = {s["solver"]: s for s in read_csv(out / "summary.csv")}
    assert list(summary) == ["highs", "cbc", "greedy", "virtual best"]
    assert summary["greedy"]["kind"] == "heuristic" and summary["greedy"]["sgm_time_s"] == ""
    vb = summary["virtual best"]
    assert vb["runs"] == vb["solved"] == "2"  # one instance x two seeds, both solved
    assert int(summary["highs"]["wins"]) + int(summary["cbc"]["wins"]) >= 2
    for name in ("highs", "cbc"):
        s = summary[name]
        assert float(s["sgm_ci_low"]) <= float(s["sgm_time_s"]) <= float(s["sgm_ci_high"])
    assert float(vb["sgm_time_s"]) <= min(float(summary[n]["sgm_time_s"]) for n in ("highs", "cbc")) + 1e-9

    (row,) = read_csv(out / "per_instance.csv")
    # the virtual best's solver per instance: every seed's winner, "/"-joined when the seeds disagree
    assert row["instance"] == "sampled-n6-b0.50-s0.json"
    winners = row["virtual best:solver"].split("/")
    assert set(winners) <= {"highs", "cbc"} and row["greedy:best"] == "False"
    assert any(row[f"{w}:best"] == "True" for w in winners)  # best: the least time over both seeds

    report = (out / "report.md").read_text()
    for heading in ("## Per instance", "## Performance profile", "## Heuristics", "## Search effort"):
        assert heading in report
    assert "over the 2 seeds" in report and "Student's t, 1 degrees of freedom" in report
