"""``wattplan simulate --workers N``: the policies replayed in parallel give the sequential results."""

from __future__ import annotations

import csv
import re
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
    """The rows of ``comparison.csv`` without the wall-clock and CPU seconds (they differ from run to run)."""
    with path.open() as fh:
        return [{k: v for k, v in r.items() if k not in ("wall_s", "cpu_s")} for r in csv.DictReader(fh)]


def _untimed(log: str) -> str:
    """The agent's log without each round's wall-clock seconds (``; overhead X s, solve Y s``)."""
    return re.sub(r"; overhead [0-9.]+ s, solve [0-9.]+ s", "", log)


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_simulate_with_workers_equals_sequential(tmp_path: Path) -> None:
    """Every policy (Slurm alone and the six built-ins) replayed by two workers: the serial comparison, file by file."""
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    args = ["simulate", str(trace), "--cluster", "v100:8", "--policy", "all"]
    args += ["--solver", "greedy", "--no-plots", "-q"]
    seq = runner.invoke(app, [*args, "-o", str(tmp_path / "seq")])
    par = runner.invoke(app, [*args, "-o", str(tmp_path / "par"), "--workers", "2"])
    assert seq.exit_code == 0 and par.exit_code == 0, seq.output + par.output
    expected = _rows(tmp_path / "seq" / "comparison.csv")
    policies = ["slurm", "fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow", "wattplan"]
    assert [r["policy"] for r in expected] == policies
    assert all(r["completed"] == "5" for r in expected)
    assert _rows(tmp_path / "par" / "comparison.csv") == expected  # wall and CPU seconds aside
    for policy in ("fifo-max", "wattplan"):  # the files the worker wrote: the serial ones, the seconds aside
        log = _untimed((tmp_path / "par" / policy / "agent.log").read_text())
        assert log == _untimed((tmp_path / "seq" / policy / "agent.log").read_text()) and log.count("round ") > 1
        jobs = (tmp_path / "par" / policy / "jobs.csv").read_text()
        assert jobs == (tmp_path / "seq" / policy / "jobs.csv").read_text() and len(jobs.splitlines()) == 1 + 5
    bad = runner.invoke(app, [*args, "-o", str(tmp_path / "bad"), "--workers", "0"])
    assert bad.exit_code == 2 and "--workers" in bad.output


def test_frontier_and_simulate_without_ray_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(R50, 4000, 0, 1), (A3C, 5000, 0, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    common = [str(trace), "--cluster", "v100:8", "--solver", "greedy", "--ray", "local"]
    simulate = ["simulate", *common, "-q"]
    for k, args in enumerate((["frontier", *common, "--deltas", "0.1", "--baselines", "fifo-max"], simulate)):
        result = runner.invoke(app, [*args, "-o", str(tmp_path / f"{args[0]}-{k}")])
        assert result.exit_code == 2, result.output
        assert "ray-unavailable" in result.output and "Traceback" not in result.output
