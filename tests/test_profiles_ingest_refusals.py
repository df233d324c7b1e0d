"""Issue 22, item 13: ingest refuses what ``profiles fit`` refuses, and a column named twice.

A Zeus window of the power limit 0 W (``__GlobalPowerLimitOptimizer_0``) was ingested, then refused by
``profiles fit`` (``setting`` must be a positive integer); a window of 0 J on every GPU was refused at ingest
already (0 W per GPU: implausible-power). A header naming ``gpu0_energy`` twice counted that GPU twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.profiling.csv_header import duplicate_column_problems
from wattplan.planner.profiling.ingest import refuse_unfittable
from wattplan.planner.profiling.points import MeasuredPoint, Provenance
from wattplan.planner.profiling.zeus_summary import read_zeus_power_summary
from wattplan.planner.profiling.zeus_windows import read_zeus_windows

runner = CliRunner()
HEADER = "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
GOOD = "1.0,__GlobalPowerLimitOptimizer_250,10.0,2000,2000\n"


def codes(exc: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in exc.value.problems]


def test_a_window_of_the_power_limit_0_is_refused_by_ingest_as_fit_refuses_it(tmp_path: Path) -> None:
    f = tmp_path / "V100+resnet50+gpu0,1.csv"
    f.write_text(HEADER + GOOD + "2.0,__GlobalPowerLimitOptimizer_0,10.0,1900,1900\n")
    with pytest.raises(InputError) as exc:
        read_zeus_windows(f, "resnet50", "v100", 40)
    assert exc.value.source == str(f)
    assert codes(exc) == [("bad-point", "line 3, window_name")]
    assert "setting must be a positive integer, got 0" in exc.value.problems[0].message
    out = tmp_path / "m.json"
    result = runner.invoke(
        app, ["profiles", "ingest", str(f), "--steps-per-window", "40", "--library", "none", "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "line 3, window_name" in result.output and "bad-point" in result.output
    assert not out.exists()


def test_a_window_of_0_joules_on_every_gpu_is_refused_at_ingest(tmp_path: Path) -> None:
    f = tmp_path / "V100+resnet50+gpu0,1.csv"
    f.write_text(HEADER + GOOD + "2.0,__GlobalPowerLimitOptimizer_200,10.0,0,0\n")
    with pytest.raises(InputError) as exc:
        read_zeus_windows(f, "resnet50", "v100", 40)
    assert codes(exc) == [("implausible-power", "line 3, gpu0_energy")]


def test_ingest_refuses_any_reader_point_fit_would_refuse_naming_its_window(tmp_path: Path) -> None:
    f = tmp_path / "log.csv"
    bad = MeasuredPoint(
        kind="exclusive",
        gpu_type="v100",
        provenance=Provenance("log.csv", "0" * 64, "run 3 (lines 4-9)"),
        job_type="x",
        gpus=1,
        setting=0,
        steps_per_s=1.0,
        power_w=100.0,
    )
    with pytest.raises(InputError) as exc:
        refuse_unfittable(f, [bad])
    assert exc.value.source == str(f)
    assert codes(exc) == [("bad-point", "run 3 (lines 4-9): setting")]


def test_a_repeated_energy_column_is_a_duplicate_column_error_not_a_second_gpu(tmp_path: Path) -> None:
    f = tmp_path / "V100+resnet50+gpu0.csv"
    f.write_text("start_time,window_name,elapsed_time,gpu0_energy,gpu0_energy\n" + GOOD)
    with pytest.raises(InputError) as exc:
        read_zeus_windows(f, "resnet50", "v100", 40)
    assert exc.value.source == str(f)
    assert codes(exc) == [("duplicate-column", "line 1, gpu0_energy")]
    out = tmp_path / "m.json"
    result = runner.invoke(
        app, ["profiles", "ingest", str(f), "--steps-per-window", "40", "--library", "none", "-o", str(out)]
    )
    assert result.exit_code == 2 and "duplicate-column" in result.output and not out.exists()


def test_a_repeated_summary_column_is_a_duplicate_column_error(tmp_path: Path) -> None:
    f = tmp_path / "summary_power_v100.csv"
    f.write_text(
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power,average_power [mW]\n"
        "cifar100,shufflenetv2,1024,adam,250,10.0,150.0,150000\n"
    )
    with pytest.raises(InputError) as exc:
        read_zeus_power_summary(f, "v100")
    assert codes(exc) == [("duplicate-column", "line 1, average_power")]


def test_duplicate_column_problems_name_every_repeat_once_each() -> None:
    problems = duplicate_column_problems(["a", "b", "a", "c", "b"])
    assert [(p.code, p.path) for p in problems] == [
        ("duplicate-column", "line 1, a"),
        ("duplicate-column", "line 1, b"),
    ]
    assert duplicate_column_problems(["a", "b"]) == []


def test_the_shipped_zeus_files_still_ingest(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1] / "instances" / "sources" / "zeus"
    out = tmp_path / "m.json"
    files = [root / "profile_data" / "V100+resnet50+gpu0,1.csv", root / "summary_power_v100.csv"]
    result = runner.invoke(
        app,
        ["profiles", "ingest", *map(str, files), "--steps-per-window", "40", "--library", "none", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["points"]) > 10
