"""``wattplan simulate --workers N``: the policies replayed in parallel give the sequential results."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace

runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return [{k: v for k, v in r.items() if not k.startswith("solver_s")} for r in csv.DictReader(fh)]


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_simulate_with_workers_equals_sequential(tmp_path: Path) -> None:
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    args = ["simulate", str(trace), "--engine", "rounds", "--cluster", "v100:8", "--policy", "all"]
    args += ["--solver", "greedy", "--no-plots", "-q"]
    seq = runner.invoke(app, [*args, "-o", str(tmp_path / "seq")])
    par = runner.invoke(app, [*args, "-o", str(tmp_path / "par"), "--workers", "2"])
    assert seq.exit_code == 0 and par.exit_code == 0, seq.output + par.output
    expected = _rows(tmp_path / "seq" / "comparison.csv")
    assert [r["policy"] for r in expected] == ["fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow", "wattplan"]
    assert _rows(tmp_path / "par" / "comparison.csv") == expected  # solver seconds aside
    for policy in ("fifo-max", "wattplan"):
        assert (tmp_path / "par" / policy / "rounds.csv").read_text().count("\n") > 1
    bad = runner.invoke(app, [*args, "-o", str(tmp_path / "bad"), "--workers", "0"])
    assert bad.exit_code == 2 and "--workers" in bad.output


def test_frontier_and_simulate_without_ray_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(R50, 4000, 0, 1), (A3C, 5000, 0, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    common = [str(trace), "--cluster", "v100:8", "--solver", "greedy", "--ray", "local"]
    simulate = ["simulate", *common, "-q"]
    rounds = [*simulate, "--engine", "rounds"]
    for k, args in enumerate((["frontier", *common, "--deltas", "0.1", "--baselines", "fifo-max"], simulate, rounds)):
        result = runner.invoke(app, [*args, "-o", str(tmp_path / f"{args[0]}-{k}")])
        assert result.exit_code == 2, result.output
        assert "ray-unavailable" in result.output and "Traceback" not in result.output
