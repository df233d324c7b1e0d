"""``wattplan diff`` golden tests: two hand-written plans and the hand-written actions between them.

``tests/golden/diff/old_plan.json`` (round 3) -> ``new_plan.json`` (round 4) exercises every action:
``a`` grows 2 -> 4 GPUs (resize), ``b`` waits (stop), ``c`` changes GPU (move), the pair ``d``/``e``
gets 250 W (re-set), ``f`` gains the partner ``g`` (re-pair; ``g`` starts), ``h`` is unchanged,
``i`` waits in both, and ``x; rm -rf /`` is new (start).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from rich.console import Console
from typer.testing import CliRunner

from cli import app
from tests.helpers.instances import reference_plan_doc
from wattplan.planner.contracts.plan import load_plan
from wattplan.planner.launch.diff import diff_plans, diff_table, diff_to_doc

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
    written = json.loads((tmp_path / "d.json").read_text())
    assert written.pop("written_by")["command"][:2] == ["wattplan", "diff"]  # provenance, not compared
    assert written == expected
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


# A plan that fails a check is never diffed (issue 22): exit 1, its problems listed, no actions printed or written.
def _wrote(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _job(doc: dict, job_id: str) -> dict:
    return next(j for j in doc["jobs"] if j["job_id"] == job_id)


Corruption = Callable[[dict], None]
INSTANCE_FREE: dict[str, tuple[str, Corruption]] = {
    "overlapping GPUs": ("placement-overlap", lambda p: _job(p, "c").update(placement=_job(p, "a")["placement"])),
    "non-reciprocal partner": ("pair-not-mutual", lambda p: _job(p, "b").update(shares_with="c")),
    "ghost partner": ("pair-not-mutual", lambda p: _job(p, "b").update(shares_with="ghost")),
    "energy over budget": ("over-budget", lambda p: p["round"].update(budget_j=p["round"]["energy_j"] / 2)),
    "job listed twice": ("duplicate-job", lambda p: p["jobs"].append({"job_id": "c", "state": "wait"})),
}
NEEDS_INSTANCE: dict[str, tuple[str, Corruption]] = {
    "setting the GPU lacks": ("setting-not-allowed", lambda p: _job(p, "c").update(setting=200)),
    "GPU index 99": (
        "placement-bad-index",
        lambda p: _job(p, "c").update(placement=[{"node": "v100-1", "gpu_indices": [99]}]),
    ),
}


def _diff(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["diff", *map(str, args)])


def _refused(result: Result, code: str, json_out: Path) -> bool:
    return (
        result.exit_code == 1 and code in result.output and "action(s)" not in result.output and not json_out.exists()
    )


@pytest.mark.parametrize("side", ["old", "new"])
@pytest.mark.parametrize("name", list(INSTANCE_FREE))
def test_diff_refuses_a_corrupt_plan_without_instances(tiny_doc: dict, tmp_path: Path, name: str, side: str) -> None:
    code, corrupt = INSTANCE_FREE[name]
    good = reference_plan_doc(tiny_doc)
    bad = copy.deepcopy(good)
    corrupt(bad)
    plans = [_wrote(tmp_path, "good.json", good), _wrote(tmp_path, "bad.json", bad)]
    old, new = plans if side == "new" else plans[::-1]
    json_out = tmp_path / "d.json"
    assert _diff(old, new).exit_code == 1
    result = _diff(old, new, "--json", json_out)
    assert _refused(result, code, json_out), result.output
    assert "bad.json" in result.output


@pytest.mark.parametrize("name", list(NEEDS_INSTANCE))
def test_diff_refuses_what_only_the_instance_shows_when_given_it(tiny_doc: dict, tmp_path: Path, name: str) -> None:
    code, corrupt = NEEDS_INSTANCE[name]
    good = reference_plan_doc(tiny_doc)
    bad = copy.deepcopy(good)
    corrupt(bad)
    old, new = _wrote(tmp_path, "good.json", good), _wrote(tmp_path, "bad.json", bad)
    inst = _wrote(tmp_path, "instance.json", tiny_doc)
    json_out = tmp_path / "d.json"
    unchecked = _diff(old, new)
    assert unchecked.exit_code == 0 and "not validated in full" in " ".join(unchecked.output.split())
    result = _diff(old, new, "--old-instance", inst, "--new-instance", inst, "--json", json_out)
    assert _refused(result, code, json_out), result.output


def test_diff_refuses_a_plan_of_another_instance(tiny_doc: dict, tmp_path: Path) -> None:
    """Each plan against its own round's instance; a plan checked against another instance is refused."""
    plan = _wrote(tmp_path, "plan.json", reference_plan_doc(tiny_doc))
    other_doc = copy.deepcopy(tiny_doc)
    other_doc["jobs"][0]["user"] = "someone-else"
    inst, other = _wrote(tmp_path, "instance.json", tiny_doc), _wrote(tmp_path, "other.json", other_doc)
    ok = _diff(plan, plan, "--old-instance", inst, "--new-instance", inst)
    assert ok.exit_code == 0 and "not validated in full" not in " ".join(ok.output.split()), ok.output
    json_out = tmp_path / "d.json"
    result = _diff(plan, plan, "--old-instance", inst, "--new-instance", other, "--json", json_out)
    assert _refused(result, "instance-mismatch", json_out), result.output


def test_two_rounds_of_two_instances_diff_without_comparing_their_digests(tiny_doc: dict, tmp_path: Path) -> None:
    next_doc = copy.deepcopy(tiny_doc)
    next_doc["round"]["index"] += 1
    old = _wrote(tmp_path, "old.json", reference_plan_doc(tiny_doc))
    new = _wrote(tmp_path, "new.json", reference_plan_doc(next_doc))
    a, b = _wrote(tmp_path, "a.json", tiny_doc), _wrote(tmp_path, "b.json", next_doc)
    result = _diff(old, new, "--old-instance", a, "--new-instance", b, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["to_round"] == tiny_doc["round"]["index"] + 1
