"""``wattplan diff`` golden tests: two hand-written plans and the hand-written actions between them.

``tests/golden/diff/old_plan.json`` (round 3) -> ``new_plan.json`` (round 4) exercises every action:
``a`` grows 2 -> 4 GPUs (resize), ``b`` waits (stop), ``c`` changes GPU (move), the pair ``d``/``e``
gets 250 W (re-set), ``f`` gains the partner ``g`` (re-pair; ``g`` starts), ``h`` is unchanged,
``i`` waits in both, and ``x; rm -rf /`` is new (start).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from cli import app
from planner.launch.diff import diff_plans, diff_table, diff_to_doc
from planner.plan import load_plan

GOLDEN = Path(__file__).parent / "golden" / "diff"
OLD, NEW = GOLDEN / "old_plan.json", GOLDEN / "new_plan.json"

# One hand-written row per action: action, job, from, to, changes.
EXPECTED_ROWS = [
    ("stop", "'b'", "v100 x1 @ 150 W on v100-0[2]", "-", ""),
    ("resize (restart)", "'a'", "v100 x2 @ 250 W on v100-0[0,1]", "v100 x4 @ 250 W on v100-0[0,1,2,3]",
     "gpus, placement"),
    ("move (restart)", "'c'", "v100 x1 @ 150 W on v100-1[0]", "v100 x1 @ 150 W on v100-1[1]", "placement"),
    ("re-set", "'d'", "v100 x1 @ 150 W on v100-1[2] with 'e'", "v100 x1 @ 250 W on v100-1[2] with 'e'", "setting"),
    ("re-set", "'e'", "v100 x1 @ 150 W on v100-1[2] with 'd'", "v100 x1 @ 250 W on v100-1[2] with 'd'", "setting"),
    ("re-pair", "'f'", "v100 x1 @ 250 W on v100-1[3]", "v100 x1 @ 250 W on v100-1[3] with 'g'", "shares_with"),
    ("start", "'g'", "-", "v100 x1 @ 250 W on v100-1[3] with 'f'", ""),
    ("start", "'x; rm -rf /'", "-", "v100 x1 @ 150 W on v100-0[4]", ""),
]  # fmt: skip


def test_diff_matches_the_golden_json() -> None:
    doc = diff_to_doc(diff_plans(load_plan(OLD), load_plan(NEW)))
    assert doc == json.loads((GOLDEN / "expected.json").read_text())


def test_diff_of_a_plan_with_itself_is_empty() -> None:
    doc = diff_to_doc(diff_plans(load_plan(NEW), load_plan(NEW)))
    assert doc["actions"] == []
    assert doc["unchanged"] == ["a", "c", "d", "e", "f", "g", "h", "x; rm -rf /"]
    assert set(doc["summary"].values()) == {0, 8}


def test_reverse_diff_swaps_starts_and_stops() -> None:
    doc = diff_to_doc(diff_plans(load_plan(NEW), load_plan(OLD)))
    kinds = {a["job_id"]: a["action"] for a in doc["actions"]}
    assert kinds == {"b": "start", "g": "stop", "x; rm -rf /": "stop", "a": "resize", "c": "move", "d": "re-set",
                     "e": "re-set", "f": "re-pair"}  # fmt: skip


def _table_rows(text: str) -> list[tuple[str, ...]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            rows.append(tuple(cell.strip() for cell in line.strip("│").split("│")))
    return rows  # the header row is drawn with heavy bars (┃)


def test_diff_table_rows() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(diff_table(diff_plans(load_plan(OLD), load_plan(NEW))))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert text.splitlines()[0].rstrip() == "round 3 -> 4: 8 action(s)"
    assert _table_rows(text) == EXPECTED_ROWS
    assert "unchanged: 1 job(s)" in text


def test_cli_diff_json_and_table(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["diff", str(OLD), str(NEW), "--format", "json", "--json", str(tmp_path / "d.json")])
    assert result.exit_code == 0, result.output
    expected = json.loads((GOLDEN / "expected.json").read_text())
    assert json.loads(result.stdout) == expected
    assert json.loads((tmp_path / "d.json").read_text()) == expected
    table = runner.invoke(app, ["diff", str(OLD), str(NEW)])
    assert table.exit_code == 0 and "re-pair" in table.output and "x; rm -rf /" in table.output


def test_cli_diff_bad_plan_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    doc = json.loads(OLD.read_text())
    doc["jobs"][0]["gpus"] = "two"
    bad.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["diff", str(bad), str(NEW)])
    assert result.exit_code == 2
    assert "jobs[0].gpus" in result.output
