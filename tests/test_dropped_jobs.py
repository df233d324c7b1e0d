"""Jobs whose type has no profile on the cluster are dropped out loud (issue 22, item 13).

``simulate`` and ``frontier`` dropped them with only a counter (``dropped_no_profile``): which types, how many
jobs and which ids were nowhere. Now the terminal names each type with its job count and first job id, the
output files record the ids by type (``dropped.csv``, ``workload.dropped_by_type`` in ``summary.json``), and a
trace whose every selected job is dropped is an exit-2 error naming the trace file.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.workload import dropped_text

runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"
ODD = "Mystery [b]net"  # markup in a type name is shown as written


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    rows = [(R50, 4000, 0, 1), (ODD, 6000, 0, 2), (R50, 3000, 10, 1), (ODD, 1000, 20, 1), ("Other", 500, 30, 1)]
    return write_gavel_trace(tmp_path / "mixed.trace", rows)


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def dropped_rows(path: Path) -> list[tuple[str, str]]:
    with path.open() as fh:
        return [(r["job_id"], r["type"]) for r in csv.DictReader(fh)]


def test_the_workload_keeps_dropped_ids_by_type(mixed: Path) -> None:
    workload, _ = prepare(ReplaySpec(trace=mixed, cluster="v100:8"))
    assert [j.id for j in workload.jobs] == ["j0", "j2"]
    assert workload.dropped_by_type == {ODD: ("j1", "j3"), "Other": ("j4",)}
    assert workload.source["dropped_no_profile"] == 3
    assert workload.source["dropped_by_type"] == {ODD: ["j1", "j3"], "Other": ["j4"]}
    assert dropped_text(workload.dropped_by_type, ["v100"]) == (
        "3 job(s) dropped, no profile on v100: 'Mystery [b]net' 2 jobs (first j1), 'Other' 1 job (first j4)"
    )
    assert dropped_text({}, ["v100"]) == ""


def test_simulate_names_dropped_types_and_writes_their_ids(mixed: Path, tmp_path: Path) -> None:
    out = tmp_path / "sim"
    code, output = invoke("simulate", mixed, "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots", "-o", out)
    assert code == 0, output
    flat = " ".join(output.split())
    assert "3 job(s) dropped, no profile on v100: 'Mystery [b]net' 2 jobs (first j1), 'Other' 1 job (first j4)" in flat
    assert dropped_rows(out / "dropped.csv") == [("j1", ODD), ("j3", ODD), ("j4", "Other")]
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    assert summary["workload"]["dropped_by_type"] == {ODD: ["j1", "j3"], "Other": ["j4"]}
    # a rerun into the same folder that drops nothing leaves no dropped.csv of the old run
    clean = write_gavel_trace(tmp_path / "clean.trace", [(R50, 4000, 0, 1)])
    code, output = invoke("simulate", clean, "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots", "-o", out)
    assert code == 0, output
    assert "job(s) dropped" not in output and not (out / "dropped.csv").exists()


def test_frontier_names_dropped_types_and_writes_their_ids(mixed: Path, tmp_path: Path) -> None:
    out = tmp_path / "fr"
    args = ["--baselines", "fifo-max", "--deltas", "0.1", "--max-jct-increase", "", "--solver", "greedy"]
    code, output = invoke("frontier", mixed, "--cluster", "v100:8", *args, "--workers", "1", "-o", out)
    assert code == 0, output
    flat = " ".join(output.split())
    assert "'Mystery [b]net' 2 jobs (first j1), 'Other' 1 job (first j4)" in flat
    assert dropped_rows(out / "dropped.csv") == [("j1", ODD), ("j3", ODD), ("j4", "Other")]
    rows = json.loads((out / "frontier.json").read_text())
    assert all(r["workload"]["dropped_by_type"] == {ODD: ["j1", "j3"], "Other": ["j4"]} for r in rows)


def test_a_trace_whose_every_job_is_dropped_is_an_error_naming_it(tmp_path: Path) -> None:
    trace = write_gavel_trace(tmp_path / "none.trace", [("Mystery", 6000, 0, 2), ("Other", 500, 30, 1)])
    with pytest.raises(InputError) as exc:
        prepare(ReplaySpec(trace=trace, cluster="v100:8"))
    assert exc.value.source == str(trace)
    assert [(p.code, p.path) for p in exc.value.problems] == [("no-profiled-job", "(jobs)")]
    assert "'Mystery' 1 job (first j0), 'Other' 1 job (first j1)" in exc.value.problems[0].message
    out = tmp_path / "sim"
    code, output = invoke("simulate", trace, "--cluster", "v100:8", "-p", "fifo-max", "-q", "-o", out)
    assert code == 2 and "no-profiled-job" in output and "none.trace" in " ".join(output.split())
    assert not out.exists()
