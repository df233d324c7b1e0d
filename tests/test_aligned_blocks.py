"""Slurm's GPU indices become aligned blocks on the same nodes, so the round's placement keeps every running job."""

from __future__ import annotations

from wattplan.planner.agent.aligned_blocks import aligned_blocks
from wattplan.planner.contracts.domain import CurrentConfig, GpuType, NodeGpus
from wattplan.planner.core.placement import PlacementRequest, place

V100 = GpuType("v100", 2, 8, 34.0, 300.0, "power_limit_w", (150, 250))


def _cur(node: str, *idx: int) -> CurrentConfig:
    return CurrentConfig("v100", len(idx), 250, None, (NodeGpus(node, idx),))


def test_slurms_indices_become_aligned_blocks_that_placement_keeps() -> None:
    current = {
        "1": _cur("v100-0", 1, 2),  # 2 GPUs, not an aligned block
        "2": _cur("v100-0", 0),
        "3": _cur("v100-0", 3),
        "4": _cur("v100-0", 4, 5, 6, 7),
        "5": _cur("v100-1", 2, 5),  # 2 GPUs, not even adjacent
        "6": _cur("v100-1", 2, 5),  # its pair partner: the same GPUs, so the same block
    }
    out = aligned_blocks(current, 8)
    assert out["4"].placement == (NodeGpus("v100-0", (0, 1, 2, 3)),)
    assert out["1"].placement == (NodeGpus("v100-0", (4, 5)),)
    assert out["2"].placement == (NodeGpus("v100-0", (6,)),) and out["3"].placement == (NodeGpus("v100-0", (7,)),)
    assert out["5"].placement == out["6"].placement == (NodeGpus("v100-1", (0, 1)),)
    assert all((c.gpu_type, c.gpus, c.setting) == (current[j].gpu_type, current[j].gpus, 250) for j, c in out.items())
    reqs = [PlacementRequest(j, "v100", c.gpus, c.placement) for j, c in out.items() if j != "6"]
    assert place([V100], reqs, {"v100": 2}).kept == frozenset(r.key for r in reqs)
    raw = [PlacementRequest(j, "v100", c.gpus, c.placement) for j, c in current.items() if j != "6"]
    assert place([V100], raw, {"v100": 2}).kept != frozenset(r.key for r in raw)  # Slurm's own indices: some move


def test_whole_nodes_and_an_overfull_node_are_left_as_slurm_shows_them() -> None:
    whole = CurrentConfig("v100", 8, 250, None, (NodeGpus("v100-0", tuple(range(8))),))
    stray = _cur("v100-0", 3)  # the node already holds 8 GPUs: Slurm and the agent disagree for a moment
    other = _cur("v100-1", 5)
    out = aligned_blocks({"1": whole, "2": stray, "3": other}, 8)
    assert out["1"] == whole and out["2"] == stray
    assert out["3"].placement == (NodeGpus("v100-1", (0,)),)
