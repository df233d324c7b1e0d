"""Text from files and the command line is printed literally: rich markup in it never crashes or vanishes.

A job id, file name or CSV cell holding ``[/]`` once raised rich's MarkupError (a traceback, exit 1) and
``[red]x[/red]`` printed as ``x``. Each case runs the real command and checks the exit code and the output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INSTANCE = ROOT / "instances" / "default.json"
runner = CliRunner()
WIDE = {"COLUMNS": "1000"}  # no wrapping inside the tables

SMI_HEADER = (
    "index, name, timestamp, power.draw [W], utilization.gpu [%], power.limit [W], power.max_limit [W], "
    "memory.used [MiB]\n"
)


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def assert_clean_exit(result, code: int) -> None:
    """The command ended with ``code`` through the CLI's own handling (no exception escaped)."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "internal error" not in result.output


def instance_with_twice(tmp_path: Path, job_id: str) -> Path:
    """The default instance with its first two jobs both named ``job_id`` (a duplicate-id error naming it)."""
    doc = json.loads(DEFAULT_INSTANCE.read_text())
    doc["jobs"][0]["id"] = doc["jobs"][1]["id"] = job_id
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(doc))
    return path


def test_instance_check_names_a_job_id_with_markup(tmp_path: Path) -> None:
    result = run("instance", "check", instance_with_twice(tmp_path, "j[/]1"))
    assert_clean_exit(result, 2)
    assert "job id 'j[/]1' is used twice" in result.output and "duplicate-job-id" in result.output


def test_validate_names_a_job_id_with_markup(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    result = run("validate", instance_with_twice(tmp_path, "j[/]1"), plan)
    assert_clean_exit(result, 2)
    assert "job id 'j[/]1' is used twice" in result.output


def test_a_style_tag_in_an_id_is_printed_not_applied(tmp_path: Path) -> None:
    result = run("instance", "check", instance_with_twice(tmp_path, "[red]x[/red]"))
    assert_clean_exit(result, 2)
    assert "job id '[red]x[/red]' is used twice" in result.output


def test_an_emoji_code_in_an_id_stays_text(tmp_path: Path) -> None:
    result = run("instance", "check", instance_with_twice(tmp_path, "job:smile:"))
    assert_clean_exit(result, 2)
    assert "job id 'job:smile:' is used twice" in result.output


def test_a_missing_file_whose_name_holds_markup_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # short names: the table title is not wrapped
    result = run("diff", "no[/]such.json", "[red]x[/red].json")
    assert_clean_exit(result, 2)
    assert "no[/]such.json" in result.output


def test_ingest_prints_cells_and_file_names_with_markup_literally(tmp_path: Path) -> None:
    rows = [
        f"{g}, Tesla V100-SXM2-32GB, 2026/11/24 13:00:0{s}.000, {w} W, {u} %, 250.00 W, 300.00 W, {m} MiB\n"
        for s in range(5)
        for g, w, u, m in ((0, 200, 90, 9000), (1, 40, 0, 0))
    ]
    rows += [
        f"0, Tesla V100-SXM2-32GB, 2026/11/24 13:00:0{s}.500, {cell} W, 90 %, 250.00 W, 300.00 W, 9000 MiB\n"
        for s, cell in ((5, "[red]x[/red]"), (6, "[/]"))
    ]
    log = tmp_path / "node[bold]1.csv"
    log.write_text(SMI_HEADER + "".join(rows))
    side = tmp_path / "side.json"
    side.write_text(json.dumps({"gpu_type": "v100", "runs": [{"job_type": "A", "gpus": [0], "steps": 40}]}))
    out = tmp_path / "m.json"
    result = run("profiles", "ingest", log, "--job-side", side, "--library", "none", "--out", out)
    assert_clean_exit(result, 0)
    assert "'[red]x[/red] W': not a number" in result.output
    assert "'[/] W': not a number" in result.output
    assert "node[bold]1.csv" in result.output
    assert json.loads(out.read_text())["schema"] == "wattplan.measurements/1"
