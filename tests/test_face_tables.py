"""The tables a new user meets read at 80 columns and say what their columns are (issue 42, item 5)."""

from __future__ import annotations

import io

from rich.console import Console

from wattplan.planner import planning
from wattplan.planner.console.tables import plan_table, solver_name
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.control.frontier import frontier_table
from wattplan.planner.files.resources import default_instance


def _text(renderable: object, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_plan_table_keeps_type_names_whole_and_says_what_kw_and_kj_are() -> None:
    inst = load_instance(default_instance())
    plan = planning.plan(inst, PlanRequest(solver="greedy"))
    text = _text(plan_table(plan, inst))
    assert all(len(line) <= 80 for line in text.splitlines())
    words = {word for j in inst.jobs for word in j.type.split() if len(word) > 6}
    assert words and all(word in text for word in words)  # e.g. "Transformer" not folded into "Transform" + "er"
    assert "placement" in text and "n x P" in text and "above idle" in text


def test_frontier_columns_are_headed_by_their_points_not_by_wattplan() -> None:
    rows = [
        {"label": "wattplan-delta-0.1", "policy": "wattplan", "error": "x"},
        {"label": "wattplan-delta-0.2", "policy": "wattplan", "error": "y"},
    ]
    text = _text(frontier_table(rows), width=120)
    assert "wattplan-delta-0.1" in text and "wattplan-delta-0.2" in text


def test_a_command_solver_is_named_by_its_program() -> None:
    assert solver_name("cmd:/opt/bin/mysolver {mps} -o {sol} -t {time_limit}").startswith("cmd:mysolver ")
    assert solver_name("highs") == "highs"
