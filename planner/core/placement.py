"""Buddy placement: concrete nodes and GPU indices for the allocations of one round.

The optimiser decides, per GPU type ``g`` (``N_g`` nodes of ``K_g`` GPUs, ``K_g`` a power
of two), a GPU count ``n`` for every allocation (a job, or a co-located pair, which uses
its GPUs once) and the number ``u_g`` of powered-on nodes, subject to the counting
constraint

    sum(n over allocations of type g) <= K_g * u_g,    u_g <= N_g,

with every ``n`` either a power of two ``<= K_g`` or a whole multiple ``m * K_g``
(:func:`planner.contracts.domain.gpu_count_fits_type`). :func:`place` turns that into GPU indices:

* an allocation of ``n <= K`` GPUs sits on one node, in the aligned block
  ``[b*n, (b+1)*n)`` for some integer ``b`` (buddy allocation);
* an allocation of ``n = m*K > K`` GPUs takes ``m`` whole nodes;
* no GPU serves two allocations, and at most ``u_g`` distinct nodes of type ``g`` are used;
  with no pins exactly ``ceil(sum n / K_g)`` are used, the lowest-indexed ones.

Why the counting constraint suffices: sizes are powers of two dividing ``K`` (or whole
nodes), so they nest. Placed in decreasing size, every earlier allocation covers whole
aligned blocks of the current size ``s``; a node that is not full therefore still has a
free aligned block of size ``s``. First-fit-decreasing thus leaves at most one partly
filled node per size and never opens more than ``ceil(sum n / K)`` nodes.

The same argument makes first-fit-decreasing *exact* around pinned blocks: count, for
each size ``s``, the aligned ``s``-blocks not touched by a pin on the pinned nodes plus
``K/s`` per further node allowed; the greedy fails at an allocation of size ``s`` only
when the allocations of size ``>= s`` need more ``s``-blocks than that, in which case no
placement keeping those pins within ``u_g`` nodes exists either.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattplan.planner.contracts.domain import GpuType, NodeGpus, gpu_count_fits_type, is_power_of_two, node_name

# One block of GPUs on one node: (node index, first GPU index, number of GPUs).
_Block = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One allocation to place: ``gpus`` GPUs of ``gpu_type``.

    ``key`` names the allocation (a job id, or for a pair the first job's id). ``keep`` is
    its current placement; it is kept when valid and compatible with the others (see
    :func:`place` for the rule).
    """

    key: str
    gpu_type: str
    gpus: int
    keep: tuple[NodeGpus, ...] | None = None


@dataclass(frozen=True)
class PlacementResult:
    """Where every allocation runs.

    ``placements`` maps each key to its blocks, sorted by node index, GPU indices sorted.
    ``kept`` holds the keys with a ``keep`` whose placement equals it (as a set of GPUs).
    ``nodes_used`` maps every GPU type given to :func:`place` to its distinct nodes used.
    """

    placements: dict[str, tuple[NodeGpus, ...]]
    kept: frozenset[str]
    nodes_used: dict[str, int]


class PlacementError(ValueError):
    """The requests cannot be placed: bad input or the counting constraint is violated."""


def place(
    gpu_types: Sequence[GpuType],
    requests: Sequence[PlacementRequest],
    nodes_on: Mapping[str, int] | None = None,
) -> PlacementResult:
    """Place every request on concrete nodes and GPU indices (buddy allocation).

    Guarantee: if every ``K_g`` is a power of two, every count ``n`` satisfies
    ``gpu_count_fits_type(n, K_g)``, and for every type ``sum n <= K_g * u_g`` with
    ``0 <= u_g <= N_g``, placement succeeds; it uses at most ``u_g`` nodes of type ``g``,
    and exactly ``ceil(sum n / K_g)`` nodes (indices ``0..``) when nothing is pinned.
    Otherwise :class:`PlacementError` names the GPU type at fault.

    ``nodes_on`` gives ``u_g`` per type; a type missing from it has no node on. ``None``
    means every node may be used (``u_g = N_g``).

    Pins (``keep``) are handled per GPU type by a deterministic rule:

    1. a pin is *valid* when it names existing nodes of the request's type, and is one
       aligned block of exactly ``n`` GPUs (``n <= K``) or ``n/K`` whole nodes (``n > K``);
       invalid pins are dropped;
    2. valid pins are accepted in priority order (size descending, then key ascending);
       a pin sharing a GPU with an already accepted pin is dropped;
    3. if the remaining requests cannot be placed around the accepted pins within ``u_g``
       nodes, the lowest-priority accepted pin (smallest size, then largest key) is
       dropped, and so on; with no pins left placement always succeeds.

    ``kept`` reports the requests whose final placement equals their ``keep`` (GPU indices
    and entries compared in sorted order); that includes the rare pin dropped by rule 2 or
    3 whose allocation was then placed on the same GPUs anyway.

    The result does not depend on the order of ``requests``.
    """
    types = _types_by_name(gpu_types)
    budget = _nodes_on(types, nodes_on)
    by_type = _requests_by_type(types, requests)
    placements: dict[str, tuple[NodeGpus, ...]] = {}
    nodes_used: dict[str, int] = {}
    for name, gtype in types.items():
        reqs = by_type.get(name, [])
        _check_counting(gtype, reqs, budget[name])
        placed, used = _place_type(gtype, reqs, budget[name])
        placements.update(placed)
        nodes_used[name] = used
    kept = frozenset(r.key for r in requests if r.keep is not None and _normalize(r.keep) == placements[r.key])
    return PlacementResult(placements=placements, kept=kept, nodes_used=nodes_used)


# ---------------------------------------------------------------------------- validation


def _types_by_name(gpu_types: Sequence[GpuType]) -> dict[str, GpuType]:
    """GPU types by name; node sizes must be powers of two, names and counts sane."""
    types: dict[str, GpuType] = {}
    for g in gpu_types:
        if g.name in types:
            raise PlacementError(f"gpu type {g.name!r} is given twice")
        if not is_power_of_two(g.gpus_per_node):
            raise PlacementError(f"gpu type {g.name!r}: gpus_per_node = {g.gpus_per_node} is not a power of two")
        if g.nodes < 0:
            raise PlacementError(f"gpu type {g.name!r}: negative node count {g.nodes}")
        types[g.name] = g
    return types


def _nodes_on(types: Mapping[str, GpuType], nodes_on: Mapping[str, int] | None) -> dict[str, int]:
    """``u_g`` per type: ``N_g`` when ``nodes_on`` is None, else ``nodes_on.get(g, 0)``."""
    if nodes_on is None:
        return {name: g.nodes for name, g in types.items()}
    for name in nodes_on:
        if name not in types:
            raise PlacementError(f"nodes_on names unknown gpu type {name!r}")
    budget = {name: nodes_on.get(name, 0) for name in types}
    for name, u in budget.items():
        if not 0 <= u <= types[name].nodes:
            raise PlacementError(f"gpu type {name!r}: nodes_on = {u} is outside 0..{types[name].nodes}")
    return budget


def _requests_by_type(
    types: Mapping[str, GpuType], requests: Sequence[PlacementRequest]
) -> dict[str, list[PlacementRequest]]:
    """Group requests by GPU type, rejecting duplicate keys, unknown types, bad counts."""
    seen: set[str] = set()
    by_type: dict[str, list[PlacementRequest]] = {}
    for r in requests:
        if r.key in seen:
            raise PlacementError(f"duplicate placement key {r.key!r}")
        seen.add(r.key)
        gtype = types.get(r.gpu_type)
        if gtype is None:
            raise PlacementError(f"request {r.key!r} names unknown gpu type {r.gpu_type!r}")
        if not gpu_count_fits_type(r.gpus, gtype.gpus_per_node):
            raise PlacementError(
                f"gpu type {r.gpu_type!r}: request {r.key!r} asks for {r.gpus} GPUs, neither a "
                f"power of two <= {gtype.gpus_per_node} nor a multiple of {gtype.gpus_per_node}"
            )
        by_type.setdefault(r.gpu_type, []).append(r)
    return by_type


def _check_counting(gtype: GpuType, reqs: Sequence[PlacementRequest], u: int) -> None:
    """Raise unless ``sum n <= K * u`` for this type."""
    total = sum(r.gpus for r in reqs)
    capacity = gtype.gpus_per_node * u
    if total > capacity:
        raise PlacementError(
            f"gpu type {gtype.name!r}: requests need sum n = {total} GPUs > K*u = "
            f"{gtype.gpus_per_node}*{u} = {capacity}"
        )


# ---------------------------------------------------------------------------- pins


def _priority(r: PlacementRequest) -> tuple[int, str]:
    """Sort key: larger allocations first, then by key (makes placement order-free)."""
    return (-r.gpus, r.key)


def _pin_blocks(gtype: GpuType, r: PlacementRequest) -> list[_Block] | None:
    """The blocks of ``r.keep`` if it is a valid placement of ``r`` on ``gtype``, else None."""
    if not r.keep:
        return None
    index = {node_name(gtype.name, i): i for i in range(gtype.nodes)}
    k = gtype.gpus_per_node
    size = min(r.gpus, k)
    blocks: list[_Block] = []
    for ng in r.keep:
        node = index.get(ng.node)
        gpus = sorted(ng.gpu_indices)
        if node is None or not gpus or gpus[0] < 0 or gpus[0] % size != 0:
            return None
        if gpus != list(range(gpus[0], gpus[0] + size)) or gpus[-1] >= k:
            return None
        blocks.append((node, gpus[0], size))
    nodes = {b[0] for b in blocks}
    if len(nodes) != len(blocks) or len(blocks) * size != r.gpus:
        return None
    return blocks


def _cells(blocks: Sequence[_Block]) -> set[tuple[int, int]]:
    """The (node, GPU index) pairs a list of blocks covers."""
    return {(node, start + i) for node, start, size in blocks for i in range(size)}


def _accepted_pins(gtype: GpuType, reqs: Sequence[PlacementRequest]) -> list[tuple[str, list[_Block]]]:
    """Valid, mutually disjoint pins in priority order (rules 1 and 2 of :func:`place`)."""
    taken: set[tuple[int, int]] = set()
    accepted: list[tuple[str, list[_Block]]] = []
    for r in sorted(reqs, key=_priority):
        blocks = _pin_blocks(gtype, r)
        if blocks is None:
            continue
        cells = _cells(blocks)
        if cells & taken:
            continue
        taken |= cells
        accepted.append((r.key, blocks))
    return accepted


# ---------------------------------------------------------------------------- packing


class _Nodes:
    """Occupancy of the nodes of one type; a node is in use once any GPU on it is taken.

    Besides the free GPUs it keeps, in ascending order, the nodes in use that still have a free
    GPU (``open``) and a cursor below which every node is in use, so that a round of thousands
    of allocations on thousands of nodes is placed in about linear time.
    """

    def __init__(self, nodes: int, gpus_per_node: int) -> None:
        self.k = gpus_per_node
        self.free: list[list[bool]] = [[True] * gpus_per_node for _ in range(nodes)]
        self.free_count = [gpus_per_node] * nodes
        self.in_use: set[int] = set()
        self.open: list[int] = []
        self._cursor = 0

    def take(self, block: _Block) -> None:
        node, start, size = block
        row = self.free[node]
        for i in range(start, start + size):
            if row[i]:
                row[i] = False
                self.free_count[node] -= 1
        if node not in self.in_use:
            self.in_use.add(node)
            bisect.insort(self.open, node)
        if self.free_count[node] == 0:
            at = bisect.bisect_left(self.open, node)
            if at < len(self.open) and self.open[at] == node:
                del self.open[at]

    def free_block(self, node: int, size: int) -> int | None:
        """First GPU index of the lowest free aligned block of ``size`` on ``node``."""
        if self.free_count[node] < size:
            return None
        row = self.free[node]
        for start in range(0, self.k, size):
            if all(row[start : start + size]):
                return start
        return None

    def unused(self, count: int) -> list[int]:
        """The ``count`` lowest-indexed nodes not in use (fewer if there are not enough)."""
        while self._cursor < len(self.free) and self._cursor in self.in_use:
            self._cursor += 1
        out: list[int] = []
        i = self._cursor
        while len(out) < count and i < len(self.free):
            if i not in self.in_use:
                out.append(i)
            i += 1
        return out


def _place_type(
    gtype: GpuType, reqs: Sequence[PlacementRequest], u: int
) -> tuple[dict[str, tuple[NodeGpus, ...]], int]:
    """Placements of one type and its nodes used, dropping pins by rule 3 of :func:`place`."""
    pins = _accepted_pins(gtype, reqs)
    while True:
        result = _try_place(gtype, reqs, dict(pins), u)
        if result is not None:
            return result
        if not pins:  # unreachable when sum n <= K*u (module docstring)
            raise PlacementError(f"gpu type {gtype.name!r}: requests do not fit on {u} nodes")
        pins.pop()


def _try_place(
    gtype: GpuType,
    reqs: Sequence[PlacementRequest],
    pins: Mapping[str, list[_Block]],
    u: int,
) -> tuple[dict[str, tuple[NodeGpus, ...]], int] | None:
    """Pins first, then first-fit-decreasing; None if more than ``u`` nodes would be used."""
    state = _Nodes(gtype.nodes, gtype.gpus_per_node)
    blocks: dict[str, list[_Block]] = {}
    for key, pinned in pins.items():
        for b in pinned:
            state.take(b)
        blocks[key] = pinned
    rest = sorted((r for r in reqs if r.key not in pins), key=_priority)
    for r in rest:
        placed = _first_fit(state, r.gpus, u)
        if placed is None:
            return None
        blocks[r.key] = placed
    if len(state.in_use) > u:
        return None
    out = {key: _to_node_gpus(gtype.name, bs) for key, bs in blocks.items()}
    return out, len(state.in_use)


def _first_fit(state: _Nodes, n: int, u: int) -> list[_Block] | None:
    """Place ``n`` GPUs: whole nodes if ``n > K``, else the lowest free aligned block."""
    k = state.k
    if n > k:
        fresh = state.unused(n // k)
        if len(fresh) < n // k or len(state.in_use) + len(fresh) > u:
            return None
        blocks = [(node, 0, k) for node in fresh]
    else:
        small = _small_block(state, n, u)
        if small is None:
            return None
        blocks = small
    for b in blocks:
        state.take(b)
    return blocks


def _small_block(state: _Nodes, n: int, u: int) -> list[_Block] | None:
    """An aligned block of ``n <= K`` GPUs: a node in use first, else the lowest unused one."""
    for node in state.open:
        start = state.free_block(node, n)
        if start is not None:
            return [(node, start, n)]
    fresh = state.unused(1)
    if not fresh or len(state.in_use) >= u:
        return None
    return [(fresh[0], 0, n)]


def _to_node_gpus(gpu_type: str, blocks: Sequence[_Block]) -> tuple[NodeGpus, ...]:
    """Blocks as ``NodeGpus``, sorted by node index."""
    return tuple(
        NodeGpus(node=node_name(gpu_type, node), gpu_indices=tuple(range(start, start + size)))
        for node, start, size in sorted(blocks)
    )


def _normalize(placement: Sequence[NodeGpus]) -> tuple[NodeGpus, ...]:
    """A placement with GPU indices sorted and entries sorted by node index (then name)."""

    def order(ng: NodeGpus) -> tuple[int, str]:
        suffix = ng.node.rsplit("-", 1)[-1]
        return (int(suffix) if suffix.isascii() and suffix.isdigit() else -1, ng.node)  # not '²'

    return tuple(NodeGpus(ng.node, tuple(sorted(ng.gpu_indices))) for ng in sorted(placement, key=order))
