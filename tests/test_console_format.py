"""``--format table|json|csv`` (planner.console.formats), the plan's waiting table, and help at 80 columns."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from cli import app
from wattplan.planner.console.formats import OutputFormat, Section, sections_csv, sections_json, sections_text
from wattplan.planner.console.tables import folded, waiting_table
from wattplan.planner.core.waiting import WaitingReason

SECTIONS = [
    Section("summary", [{"energy_j": 1500.0, "budget_j": None, "ok": True}], record=True),
    Section("running", [{"job": "j1", "gpus": 2, "placement": ["v100-0:0,1"]}, {"job": "j,2", "gpus": 1}]),
]


def test_json_is_one_document_with_numbers_as_numbers() -> None:
    doc = json.loads(sections_json(SECTIONS))
    assert list(doc) == ["summary", "running"]
    assert doc["summary"] == {"energy_j": 1500.0, "budget_j": None, "ok": True}
    assert doc["running"][0] == {"job": "j1", "gpus": 2, "placement": ["v100-0:0,1"]}


def test_csv_is_one_block_per_table_with_a_table_column() -> None:
    text = sections_csv(SECTIONS)
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    summary = list(csv.reader(io.StringIO(blocks[0])))
    assert summary == [["table", "energy_j", "budget_j", "ok"], ["summary", "1500.0", "", "true"]]
    running = list(csv.reader(io.StringIO(blocks[1])))
    assert running[0] == ["table", "job", "gpus", "placement"]
    assert running[1] == ["running", "j1", "2", '["v100-0:0,1"]']
    assert running[2] == ["running", "j,2", "1", ""]  # a comma in a cell is quoted, a missing key is empty


def test_table_has_no_plain_text() -> None:
    with pytest.raises(ValueError, match="rich tables"):
        sections_text(SECTIONS, OutputFormat.table)


def test_long_cells_fold_at_80_columns_instead_of_being_cut() -> None:
    reason = WaitingReason("job-" + "x" * 40, "ResNet-50 (batch size 128)", None, (1, 2), "budget", "y" * 150)
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(folded(waiting_table([reason])))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text.count("y") >= 150 and "1|2" in text


INSTANCE = Path(__file__).resolve().parents[1] / "instances" / "default.json"


def _plan(tmp_path: Path, *options: str) -> Any:
    args = ["plan", str(INSTANCE), "--solver", "greedy", "-o", str(tmp_path / "p.json"), *options]
    return CliRunner().invoke(app, args)


def test_plan_json_has_running_waiting_and_summary(tmp_path: Path) -> None:
    result = _plan(tmp_path, "--format", "json", "--budget-j", "2e6")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc) == ["running", "waiting", "summary"]
    summary = doc["summary"]
    assert summary["budget_j"] == 2e6 and summary["budget_kw"] == pytest.approx(2e6 / summary["duration_s"] / 1e3)
    assert summary["waiting"] == len(doc["waiting"]) > 0
    assert {w["reason"] for w in doc["waiting"]} <= {
        "no-gpu-type",
        "partner-slowdown",
        "no-free-gpus",
        "budget",
        "lower-value",
    }
    assert all(isinstance(r["power_kw"], float) for r in doc["running"])
    written = json.loads((tmp_path / "p.json").read_text())
    assert written["written_by"]["command"][:2] == ["wattplan", "plan"]


def test_plan_csv_quiet_is_the_summary_only(tmp_path: Path) -> None:
    result = _plan(tmp_path, "--format", "csv", "-q")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert len(rows) == 2 and rows[0][:3] == ["table", "round", "duration_s"] and rows[1][0] == "summary"


def test_plan_table_shows_waiting_reasons_and_kw(tmp_path: Path) -> None:
    result = _plan(tmp_path, "--budget-j", "2e6")
    assert result.exit_code == 0, result.output
    assert "waiting:" in result.stdout and "reason" in result.stdout
    assert " kW" in result.stdout and "budget" in result.stdout


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand of the app, as the words that name it (typer's own click has groups)."""
    found = [path]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


@pytest.mark.parametrize("path", _commands(typer.main.get_command(app)), ids=lambda p: " ".join(p) or "wattplan")
def test_help_fits_80_columns(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    too_wide = [line for line in result.output.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    assert "…" not in result.output


def test_a_count_bar_shows_done_of_total_the_items_elapsed_time_and_an_eta() -> None:
    from wattplan.planner.console.bars import count_bar

    console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False)
    with count_bar("bench", "runs", console, extra=("{task.fields[failed]} failed",)) as bar:
        task = bar.add_task("bench", total=8, failed=0)
        bar.update(task, advance=3, failed=1)
        bar.refresh()
    text = console.file.getvalue()  # type: ignore[attr-defined]
    last = [line for line in text.splitlines() if line.strip()][-1]
    assert "3/8 runs" in last and "1 failed" in last and "ETA" in last and "0:00:0" in last
    quiet = Console(file=io.StringIO(), width=100)
    with count_bar("bench", "runs", quiet, quiet=True) as bar:
        bar.add_task("bench", total=1)
    assert quiet.file.getvalue() == ""  # type: ignore[attr-defined]
