"""``wattplan bench --ray local``: the same table as a local run (timings and memory aside).

Slow: it starts (and stops) a local Ray instance. Skipped where Ray is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.bench import write_set

ray = pytest.importorskip("ray")
runner = CliRunner()
MEASURED = {"time_s", "build_s", "solve_s", "wall_s", "peak_mb", "primal_integral"}
"""Columns that time or measure a run; everything else must match."""


def table(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return [{k: v for k, v in r.items() if k not in MEASURED} for r in csv.DictReader(fh)]


@pytest.mark.slow
def test_bench_on_local_ray_equals_the_local_run(tmp_path: Path) -> None:
    folder = write_set(tmp_path / "set", manifest=True)
    common = ["bench", str(folder), "--solvers", "greedy,highs", "--time-limit", "5", "-q"]
    local = runner.invoke(app, [*common, "-o", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    on_ray = runner.invoke(app, [*common, "-o", str(tmp_path / "ray"), "--ray", "local", "--workers", "2"])
    assert on_ray.exit_code == 0, on_ray.output
    assert not ray.is_initialized()  # the instance started for the run is stopped again
    expected = table(tmp_path / "local" / "runs.csv")
    assert [r["status"] for r in expected] == ["feasible", "optimal", "feasible", "optimal"]
    assert table(tmp_path / "ray" / "runs.csv") == expected
    assert "Ray at `local`" in (tmp_path / "ray" / "report.md").read_text()
