"""Buddy placement (planner.core.placement): property tests and examples.

The invariants are checked independently of the implementation by :func:`check_placement`:
an allocation of ``n <= K`` GPUs is one aligned block ``[b*n, (b+1)*n)`` on one node, one of
``n = m*K`` takes ``m`` whole nodes, no GPU is shared, at most ``u`` nodes are used, and with
no pins exactly ``ceil(sum n / K)`` nodes, the lowest-indexed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattplan.planner.contracts.domain import GpuType, NodeGpus, node_name
from wattplan.planner.core.placement import PlacementError, PlacementRequest, PlacementResult, place

PROPERTY = settings(max_examples=200, deadline=None)


def gpu_type(name: str = "v100", nodes: int = 4, k: int = 8) -> GpuType:
    return GpuType(
        name=name,
        nodes=nodes,
        gpus_per_node=k,
        idle_power_w=30,
        node_power_w=200,
        setting_unit="power_limit_w",
        settings=(150, 250),
    )


def allowed_sizes(k: int, nodes: int) -> list[int]:
    """Powers of two up to ``K``, then whole multiples ``m*K`` up to the pool."""
    return [2**i for i in range(k.bit_length())] + [m * k for m in range(2, nodes + 1)]


def node_index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


# ---------------------------------------------------------------------------- checker


def check_placement(
    gpu_types: Sequence[GpuType],
    requests: Sequence[PlacementRequest],
    nodes_on: Mapping[str, int] | None,
    result: PlacementResult,
) -> None:
    """Assert every invariant of a placement; the ``ceil`` count only when nothing is pinned."""
    types = {g.name: g for g in gpu_types}
    assert set(result.placements) == {r.key for r in requests}
    used: set[tuple[str, int]] = set()
    nodes_by_type: dict[str, set[str]] = {g: set() for g in types}
    for r in requests:
        g = types[r.gpu_type]
        blocks = result.placements[r.key]
        check_blocks(g, r.gpus, blocks)
        for ng in blocks:
            for i in ng.gpu_indices:
                assert (ng.node, i) not in used, f"GPU {ng.node}:{i} shared"
                used.add((ng.node, i))
            nodes_by_type[g.name].add(ng.node)
    for name, g in types.items():
        u = g.nodes if nodes_on is None else nodes_on.get(name, 0)
        n_used = len(nodes_by_type[name])
        assert result.nodes_used[name] == n_used
        assert n_used <= u
        reqs = [r for r in requests if r.gpu_type == name]
        if all(r.keep is None for r in reqs):
            assert n_used == math.ceil(sum(r.gpus for r in reqs) / g.gpus_per_node)
            assert {node_index(n) for n in nodes_by_type[name]} == set(range(n_used))
    for key in result.kept:
        r = next(r for r in requests if r.key == key)
        assert r.keep is not None
        assert result.placements[key] == normalized(r.keep)


def check_blocks(g: GpuType, n: int, blocks: tuple[NodeGpus, ...]) -> None:
    """One aligned block for ``n <= K``; ``n/K`` distinct whole nodes for ``n > K``; sorted."""
    k = g.gpus_per_node
    assert all(ng.node in g.node_names() for ng in blocks)
    assert [node_index(ng.node) for ng in blocks] == sorted(node_index(ng.node) for ng in blocks)
    if n <= k:
        assert len(blocks) == 1
        idx = blocks[0].gpu_indices
        assert idx[0] >= 0 and idx[0] % n == 0
        assert idx == tuple(range(idx[0], idx[0] + n))
        assert idx[-1] < k
    else:
        assert len(blocks) == n // k
        assert len({ng.node for ng in blocks}) == n // k
        assert all(ng.gpu_indices == tuple(range(k)) for ng in blocks)


def normalized(keep: tuple[NodeGpus, ...]) -> tuple[NodeGpus, ...]:
    ordered = sorted(keep, key=lambda ng: node_index(ng.node))
    return tuple(NodeGpus(ng.node, tuple(sorted(ng.gpu_indices))) for ng in ordered)


# ---------------------------------------------------------------------------- strategies


@st.composite
def pools(draw: st.DrawFn) -> tuple[GpuType, int]:
    """A GPU type (K in 1..16, N in 1..6) and a node budget ``u <= N``."""
    k = draw(st.sampled_from([1, 2, 4, 8, 16]))
    nodes = draw(st.integers(1, 6))
    return gpu_type(nodes=nodes, k=k), draw(st.integers(0, nodes))


def fitting(sizes: Sequence[int], capacity: int) -> list[int]:
    """The sizes, in order, skipping any that would push the sum above ``capacity``."""
    out: list[int] = []
    for s in sizes:
        if sum(out) + s <= capacity:
            out.append(s)
    return out


def fitting_requests(reqs: Sequence[PlacementRequest], capacity: int) -> list[PlacementRequest]:
    """The requests, in order, skipping any that would push ``sum n`` above ``capacity``."""
    out: list[PlacementRequest] = []
    for r in reqs:
        if sum(x.gpus for x in out) + r.gpus <= capacity:
            out.append(r)
    return out


@st.composite
def counts(draw: st.DrawFn, g: GpuType, capacity: int) -> list[int]:
    """Valid GPU counts with ``sum <= capacity``; sometimes filled exactly to capacity."""
    drawn = draw(st.lists(st.sampled_from(allowed_sizes(g.gpus_per_node, g.nodes))))
    sizes = fitting(drawn, capacity)
    if draw(st.booleans()):
        sizes += [1] * (capacity - sum(sizes))
    return sizes


def fresh_requests(g: GpuType, sizes: Sequence[int], prefix: str = "j") -> list[PlacementRequest]:
    return [PlacementRequest(f"{prefix}{i}", g.name, n) for i, n in enumerate(sizes)]


@st.composite
def bogus_keeps(draw: st.DrawFn, g: GpuType) -> tuple[NodeGpus, ...]:
    """Arbitrary, mostly invalid, pins: wrong nodes, out-of-range or misaligned indices."""
    names = [*g.node_names(), f"{g.name}-{g.nodes}", "other-0"]
    entry = st.builds(
        NodeGpus,
        st.sampled_from(names),
        st.lists(st.integers(-1, g.gpus_per_node), max_size=g.gpus_per_node).map(tuple),
    )
    return tuple(draw(st.lists(entry, max_size=3)))


@st.composite
def broken_keeps(draw: st.DrawFn, g: GpuType, keep: tuple[NodeGpus, ...]) -> tuple[NodeGpus, ...]:
    """A valid pin spoiled one way: shifted, out of range, wrong node, short, doubled."""
    n = len(keep[0].gpu_indices)
    how = draw(st.sampled_from(["shift", "negative", "beyond", "node", "short", "double"]))
    if how == "shift":
        return tuple(NodeGpus(ng.node, tuple(i + 1 for i in ng.gpu_indices)) for ng in keep)
    if how == "negative":
        return tuple(NodeGpus(ng.node, tuple(range(-n, 0))) for ng in keep)
    if how == "beyond":
        k = g.gpus_per_node
        return tuple(NodeGpus(ng.node, tuple(range(k, k + n))) for ng in keep)
    if how == "node":
        name = draw(st.sampled_from([f"{g.name}-{g.nodes}", "other-0", g.name]))
        return (NodeGpus(name, keep[0].gpu_indices), *keep[1:])
    if how == "short":
        return (NodeGpus(keep[0].node, keep[0].gpu_indices[:-1]), *keep[1:])
    return keep + keep


@st.composite
def repinned(draw: st.DrawFn) -> tuple[GpuType, list[PlacementRequest], int]:
    """A placed round, then a next round: some allocations pinned, resized, gone or new."""
    g, u = draw(pools())
    old = fresh_requests(g, draw(counts(g, g.gpus_per_node * u)))
    before = place([g], old, {g.name: u}).placements
    sizes = allowed_sizes(g.gpus_per_node, g.nodes)
    new: list[PlacementRequest] = []
    for r in old:
        action = draw(st.sampled_from(["pin", "pin", "fresh", "resize", "bogus", "broken", "gone"]))
        if action == "pin":
            new.append(PlacementRequest(r.key, g.name, r.gpus, keep=before[r.key]))
        elif action == "fresh":
            new.append(PlacementRequest(r.key, g.name, r.gpus))
        elif action == "resize":
            new.append(PlacementRequest(r.key, g.name, draw(st.sampled_from(sizes)), before[r.key]))
        elif action == "bogus":
            new.append(PlacementRequest(r.key, g.name, r.gpus, keep=draw(bogus_keeps(g))))
        elif action == "broken":
            keep = draw(broken_keeps(g, before[r.key]))
            new.append(PlacementRequest(r.key, g.name, r.gpus, keep=keep))
    new += fresh_requests(g, draw(st.lists(st.sampled_from(sizes), max_size=4)), prefix="new")
    new = fitting_requests(new, g.total_gpus)
    low = math.ceil(sum(r.gpus for r in new) / g.gpus_per_node)
    return g, new, draw(st.integers(low, g.nodes))


# ---------------------------------------------------------------------------- properties


@PROPERTY
@given(st.data())
def test_counting_constraint_suffices(data: st.DataObject) -> None:
    """Sum n <= K*u and valid counts => placement succeeds on exactly ceil(sum/K) nodes."""
    g, u = data.draw(pools())
    reqs = fresh_requests(g, data.draw(counts(g, g.gpus_per_node * u)))
    result = place([g], reqs, {g.name: u})
    check_placement([g], reqs, {g.name: u}, result)
    assert result.kept == frozenset()


@PROPERTY
@given(st.data())
def test_counting_constraint_violated_raises(data: st.DataObject) -> None:
    """Sum n > K*u => PlacementError naming the GPU type."""
    g, u = data.draw(pools())
    sizes = data.draw(counts(g, g.gpus_per_node * u))
    while sum(sizes) <= g.gpus_per_node * u:
        sizes.append(data.draw(st.sampled_from(allowed_sizes(g.gpus_per_node, g.nodes))))
    with pytest.raises(PlacementError, match="v100"):
        place([g], fresh_requests(g, sizes), {g.name: u})


@PROPERTY
@given(repinned())
def test_pins_keep_invariants(case: tuple[GpuType, list[PlacementRequest], int]) -> None:
    """Valid, invalid and conflicting pins: placement still succeeds within u nodes."""
    g, reqs, u = case
    result = place([g], reqs, {g.name: u})
    check_placement([g], reqs, {g.name: u}, result)


@PROPERTY
@given(st.data())
def test_same_requests_keep_all_pins(data: st.DataObject) -> None:
    """Re-placing the same allocations with any subset pinned keeps every pin.

    The previous placement proves the pins and the rest fit on u nodes, and
    first-fit-decreasing around pins is exact, so no pin is dropped; with everything
    pinned the placement is identical.
    """
    g, u = data.draw(pools())
    reqs = fresh_requests(g, data.draw(counts(g, g.gpus_per_node * u)))
    before = place([g], reqs, {g.name: u})
    pin = data.draw(st.lists(st.booleans(), min_size=len(reqs), max_size=len(reqs)))
    again = [
        PlacementRequest(r.key, g.name, r.gpus, before.placements[r.key] if p else None)
        for r, p in zip(reqs, pin, strict=True)
    ]
    after = place([g], again, {g.name: u})
    check_placement([g], again, {g.name: u}, after)
    assert after.kept >= {r.key for r in again if r.keep is not None}
    if all(pin):
        assert after.placements == before.placements
        assert after.kept == frozenset(r.key for r in reqs)


@PROPERTY
@given(st.data())
def test_request_order_is_irrelevant(data: st.DataObject) -> None:
    """Permuting the requests (pinned or not) gives the identical result."""
    g, reqs, u = data.draw(repinned())
    shuffled = data.draw(st.permutations(reqs))
    a = place([g], reqs, {g.name: u})
    b = place([g], shuffled, {g.name: u})
    assert a.nodes_used == b.nodes_used
    assert a == b


@PROPERTY
@given(st.data())
def test_two_types_are_independent(data: st.DataObject) -> None:
    """Two pools in one call: each placed as if alone."""
    g1, u1 = data.draw(pools())
    g2 = gpu_type("a100", nodes=data.draw(st.integers(1, 4)), k=data.draw(st.sampled_from([2, 4])))
    u2 = data.draw(st.integers(0, g2.nodes))
    r1 = fresh_requests(g1, data.draw(counts(g1, g1.gpus_per_node * u1)), "v")
    r2 = fresh_requests(g2, data.draw(counts(g2, g2.gpus_per_node * u2)), "a")
    on = {g1.name: u1, g2.name: u2}
    both = place([g1, g2], r1 + r2, on)
    check_placement([g1, g2], r1 + r2, on, both)
    alone = place([g1], r1, {g1.name: u1})
    assert {k: v for k, v in both.placements.items() if k.startswith("v")} == alone.placements


# ---------------------------------------------------------------------------- examples


def test_four_and_two_twos_share_one_node() -> None:
    g = gpu_type(k=8)
    reqs = [
        PlacementRequest("b", "v100", 2),
        PlacementRequest("a", "v100", 4),
        PlacementRequest("c", "v100", 2),
    ]
    result = place([g], reqs, {"v100": 1})
    assert result.nodes_used == {"v100": 1}
    assert result.placements == {
        "a": (NodeGpus("v100-0", (0, 1, 2, 3)),),
        "b": (NodeGpus("v100-0", (4, 5)),),
        "c": (NodeGpus("v100-0", (6, 7)),),
    }


def test_sixteen_gpus_take_two_whole_nodes() -> None:
    g = gpu_type(k=8, nodes=3)
    result = place([g], [PlacementRequest("big", "v100", 16)])
    assert result.placements["big"] == (
        NodeGpus("v100-0", tuple(range(8))),
        NodeGpus("v100-1", tuple(range(8))),
    )
    assert result.nodes_used == {"v100": 2}


def test_misaligned_pin_is_dropped() -> None:
    g = gpu_type(k=8)
    keep = (NodeGpus("v100-0", (1, 2)),)
    result = place([g], [PlacementRequest("j", "v100", 2, keep=keep)], {"v100": 1})
    assert result.placements["j"] == (NodeGpus("v100-0", (0, 1)),)
    assert result.kept == frozenset()


@pytest.mark.parametrize("node", ["v100-7", "a100-0", "v100", "v100-x"])
def test_pin_on_missing_node_is_dropped(node: str) -> None:
    g = gpu_type(k=8, nodes=2)
    keep = (NodeGpus(node, (0, 1, 2, 3)),)
    result = place([g], [PlacementRequest("j", "v100", 4, keep=keep)])
    assert result.placements["j"] == (NodeGpus("v100-0", (0, 1, 2, 3)),)
    assert result.kept == frozenset()


def test_valid_pin_is_kept_even_on_a_high_node() -> None:
    g = gpu_type(k=8, nodes=3)
    keep = (NodeGpus("v100-2", (5, 4)),)
    reqs = [PlacementRequest("j", "v100", 2, keep=keep), PlacementRequest("k", "v100", 4)]
    result = place([g], reqs, {"v100": 1})
    assert result.placements["j"] == (NodeGpus("v100-2", (4, 5)),)
    assert result.placements["k"] == (NodeGpus("v100-2", (0, 1, 2, 3)),)
    assert result.kept == {"j"}
    assert result.nodes_used == {"v100": 1}


def test_overlapping_pins_keep_the_larger() -> None:
    g = gpu_type(k=8)
    reqs = [
        PlacementRequest("small", "v100", 2, keep=(NodeGpus("v100-0", (2, 3)),)),
        PlacementRequest("large", "v100", 4, keep=(NodeGpus("v100-0", (0, 1, 2, 3)),)),
    ]
    result = place([g], reqs, {"v100": 1})
    assert result.kept == {"large"}
    assert result.placements["small"] == (NodeGpus("v100-0", (4, 5)),)


def test_pins_that_block_the_rest_are_dropped_smallest_first() -> None:
    """Pins spread over 2 nodes leave no whole node for an 8-GPU job when u = 2."""
    g = gpu_type(k=8, nodes=3)
    reqs = [
        PlacementRequest("a", "v100", 4, keep=(NodeGpus("v100-0", (0, 1, 2, 3)),)),
        PlacementRequest("b", "v100", 4, keep=(NodeGpus("v100-2", (0, 1, 2, 3)),)),
        PlacementRequest("c", "v100", 8),
    ]
    result = place([g], reqs, {"v100": 2})
    assert result.kept == {"a"}  # a and b tie on size; the larger key, b, goes first
    assert result.placements["c"] == (NodeGpus("v100-1", tuple(range(8))),)
    assert result.placements["b"] == (NodeGpus("v100-0", (4, 5, 6, 7)),)
    assert result.nodes_used == {"v100": 2}


def test_pins_on_more_than_u_nodes_are_dropped() -> None:
    """Two 1-GPU pins on two nodes, but only one node may be on: the smaller key stays."""
    g = gpu_type(k=2, nodes=2)
    reqs = [
        PlacementRequest("a", "v100", 1, keep=(NodeGpus("v100-0", (0,)),)),
        PlacementRequest("b", "v100", 1, keep=(NodeGpus("v100-1", (1,)),)),
    ]
    result = place([g], reqs, {"v100": 1})
    assert result.kept == {"a"}
    assert result.placements["b"] == (NodeGpus("v100-0", (1,)),)
    assert result.nodes_used == {"v100": 1}


def test_two_types_at_once() -> None:
    v100, a100 = gpu_type("v100", nodes=2, k=8), gpu_type("a100", nodes=3, k=4)
    reqs = [
        PlacementRequest("v", "v100", 8),
        PlacementRequest("a1", "a100", 8),
        PlacementRequest("a2", "a100", 2),
    ]
    result = place([v100, a100], reqs, {"v100": 1, "a100": 3})
    check_placement([v100, a100], reqs, {"v100": 1, "a100": 3}, result)
    assert result.nodes_used == {"v100": 1, "a100": 3}
    assert result.placements["a2"] == (NodeGpus(node_name("a100", 2), (0, 1)),)


@pytest.mark.parametrize(
    ("reqs", "nodes_on", "message"),
    [
        ([PlacementRequest("j", "v100", 3)], None, "v100.*3 GPUs"),
        ([PlacementRequest("j", "v100", 12)], None, "v100.*12 GPUs"),
        ([PlacementRequest("j", "v100", 0)], None, "v100"),
        ([PlacementRequest("j", "h100", 1)], None, "unknown gpu type 'h100'"),
        ([PlacementRequest("j", "v100", 1), PlacementRequest("j", "v100", 1)], None, "duplicate"),
        ([PlacementRequest("j", "v100", 8)], {"v100": 5}, "v100.*outside"),
        ([PlacementRequest("j", "v100", 8)], {"h100": 1}, "unknown gpu type 'h100'"),
        ([PlacementRequest("j", "v100", 8)], {}, "v100.*K\\*u = 8\\*0"),
        ([PlacementRequest("j", "v100", 8), PlacementRequest("k", "v100", 1)], {"v100": 1}, "v100"),
    ],
)
def test_invalid_input_raises(reqs: list[PlacementRequest], nodes_on: dict[str, int] | None, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        place([gpu_type(nodes=4, k=8)], reqs, nodes_on)


def test_node_size_must_be_power_of_two() -> None:
    with pytest.raises(PlacementError, match="v100.*power of two"):
        place([gpu_type(k=6)], [])
