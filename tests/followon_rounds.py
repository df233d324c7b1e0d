"""Two rounds of one cluster for the follow-on launch tests (``wattplan launch --from``).

Round 7 and round 8 of v100 nodes (2 x 8 GPUs, power limits 150/250 W), built with the planner's own
:func:`planner.core.assemble.assemble_plan` and validated. From round 7 to round 8:

=============  ====================  ====================  ===========
job            round 7               round 8               action
=============  ====================  ====================  ===========
``keep``       4 GPUs @ 250 W        the same              unchanged
``a re-set``   2 GPUs @ 150 W        the same GPUs @ 250   re-set
``grow``       1 GPU @ 150 W         2 GPUs @ 150 W        resize
``done``       1 GPU @ 250 W         waiting               stop
``new``        waiting               1 GPU @ 150 W         start
=============  ====================  ====================  ===========
"""

from __future__ import annotations

import copy
from typing import Any

from tests.launch_helpers import launch_instance_doc
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.core.validate import validate_plan

JOBS = (("keep", "A", [4]), ("a re-set", "A", [2]), ("grow", "A", [1, 2]), ("done", "B", [1]), ("new", "B", [1]))


def round_doc(index: int, command: list[str] | None = None) -> dict[str, Any]:
    """The instance of round ``index``: the v100 pool of the launch tests and the five jobs above."""
    doc = copy.deepcopy(launch_instance_doc(command=command))
    doc["round"]["index"] = index
    doc["gpu_types"] = [g for g in doc["gpu_types"] if g["name"] == "v100"]
    doc["profiles"] = [p for p in doc["profiles"] if p["gpu_type"] == "v100"]
    doc["pairs"] = [p for p in doc["pairs"] if p["gpu_type"] == "v100"]
    template = doc["jobs"][0]
    doc["jobs"] = [{**template, "id": i, "type": t, "gpus": g, "env": {"WATTPLAN_TEST_ID": i}} for i, t, g in JOBS]
    return doc


def _plan(instance: Instance, allocations: list[Allocation]) -> Plan:
    plan = assemble_plan(instance, allocations, SolveInfo("hand", "feasible"))
    problems = validate_plan(instance, plan)
    assert not problems, problems
    return plan


def two_rounds(command: list[str] | None = None) -> tuple[Instance, Plan, Instance, Plan]:
    """``(instance 7, plan 7, instance 8, plan 8)``."""
    first, second = parse_instance(round_doc(7, command)), parse_instance(round_doc(8, command))
    plan7 = _plan(
        first,
        [
            Allocation(("keep",), "v100", 4, 250),
            Allocation(("a re-set",), "v100", 2, 150),
            Allocation(("grow",), "v100", 1, 150),
            Allocation(("done",), "v100", 1, 250),
        ],
    )
    plan8 = _plan(
        second,
        [
            Allocation(("keep",), "v100", 4, 250),
            Allocation(("a re-set",), "v100", 2, 250),
            Allocation(("grow",), "v100", 2, 150),
            Allocation(("new",), "v100", 1, 150),
        ],
    )
    return first, plan7, second, plan8
