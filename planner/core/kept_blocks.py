"""Running jobs a round cannot move, and the aligned GPU blocks they leave free (docs/design.md §3.5, §6.2).

A job is *pinned* when it runs now with a known placement, must run this round (``min_steps > 0``), is allowed
only its current GPU count (``gpus == (n,)``), and its job type has profiles and pair entries on its current GPU
type and count only: every option the round has for it keeps its GPUs, a setting being its only change
(:mod:`planner.sim.pinned` makes running jobs so under the no-restart and start rules). On a GPU type whose every
running job is pinned, and none of them shares its job type with a job that waits (a pair of the two could not be
told from a pair of two waiting jobs), the pinned jobs' GPUs are fixed for the round: :func:`pinned_gpus`.

Buddy placement (:mod:`planner.core.placement`) keeps every such pin exactly when, for each block size ``b``, the
new allocations of size ``>= b`` fit the aligned ``b``-blocks left free: :func:`free_blocks` on the nodes that hold
pinned GPUs, ``K / b`` on every further node. The round model writes that as rows (:mod:`formulations.round_model`,
``blocks[g,b]``), and the plan's assembly keeps on at least the nodes that hold pinned GPUs
(:func:`planner.core.assemble.assemble_plan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wattplan.planner.contracts.domain import CurrentConfig, GpuType, Instance, Job


def pinned_gpus(instance: Instance) -> dict[str, dict[str, set[int]]]:
    """The GPUs pinned jobs hold, per GPU type where they are fixed (module docstring): ``{g: {node: indices}}``.

    A GPU type without a running job is not in it (nothing is pinned there).
    """
    running = [j for j in instance.jobs if j.current is not None]
    if not running:
        return {}
    where = _Where.of(instance)
    waiting_types = {j.type for j in instance.jobs if j.current is None}
    kept: list[CurrentConfig] = []
    loose: set[str] = set()
    for job in running:
        cur = job.current
        assert cur is not None
        if not where.pinned(instance, job) or job.type in waiting_types:
            loose.add(cur.gpu_type)
        else:
            kept.append(cur)
    return {g: nodes for g, nodes in held_gpus(kept).items() if g not in loose}


def held_gpus(currents: Iterable[CurrentConfig | None]) -> dict[str, dict[str, set[int]]]:
    """``{GPU type: {node: GPU indices}}`` the running configurations ``currents`` hold (their placements).

    A configuration's GPU type is a key even where it names no placement; None (a job not running) holds nothing.
    """
    out: dict[str, dict[str, set[int]]] = {}
    for cur in currents:
        if cur is None:
            continue
        by_node = out.setdefault(cur.gpu_type, {})
        for part in cur.placement or ():
            by_node.setdefault(part.node, set()).update(part.gpu_indices)
    return out


@dataclass(frozen=True, slots=True)
class _Where:
    """Per job type, the GPU types of its profiles and the ``(GPU type, count)`` of its pair entries."""

    profiles: dict[str, set[str]]
    pairs: dict[str, set[tuple[str, int]]]

    @classmethod
    def of(cls, instance: Instance) -> _Where:
        profiles: dict[str, set[str]] = {}
        for p in instance.profiles:
            profiles.setdefault(p.type, set()).add(p.gpu_type)
        pairs: dict[str, set[tuple[str, int]]] = {}
        for e in instance.pairs:
            for t in (e.a, e.b):
                pairs.setdefault(t, set()).add((e.gpu_type, e.gpus))
        return cls(profiles, pairs)

    def pinned(self, instance: Instance, job: Job) -> bool:
        """True when every option ``job`` has this round keeps its GPU type, count and GPUs (module docstring)."""
        cur = job.current
        if cur is None or cur.placement is None or job.min_steps <= 0 or job.gpus != (cur.gpus,):
            return False
        names = set(instance.gpu_type(cur.gpu_type).node_names())
        if any(part.node not in names for part in cur.placement):
            return False
        if self.profiles.get(job.type, set()) - {cur.gpu_type}:
            return False
        return not self.pairs.get(job.type, set()) - {(cur.gpu_type, cur.gpus)}


def pinned_types(instance: Instance, held: Mapping[str, object]) -> set[str]:
    """The job types of the running jobs on the GPU types of ``held`` (:func:`pinned_gpus`): the pinned jobs' own.

    Every other option on those GPU types is a new allocation: a waiting job's, or a move of a running job of another
    GPU type.
    """
    return {j.type for j in instance.jobs if j.current is not None and j.current.gpu_type in held}


def pinned_nodes(instance: Instance) -> dict[str, int]:
    """The nodes that hold pinned GPUs, per GPU type of :func:`pinned_gpus`: they stay on this round."""
    return {g: len(nodes) for g, nodes in pinned_gpus(instance).items()}


def free_blocks(gpus_per_node: int, taken: set[int], size: int) -> int:
    """The aligned blocks ``[b size, (b + 1) size)`` of a node of ``gpus_per_node`` GPUs that miss ``taken``.

    Only whole blocks count: a node of 6 GPUs has one block of 4.
    """
    starts = range(0, gpus_per_node - size + 1, size)
    return sum(1 for b in starts if not taken.intersection(range(b, b + size)))


@dataclass
class FreeBlocks:
    """Per GPU type and block size ``b`` (1, 2, 4, ..., ``K``), the aligned ``b``-blocks still free.

    ``b = 1`` counts GPUs. A new allocation of ``n`` GPUs takes ``n / b`` blocks of every size ``b <= n``: the count
    of the round model's rows ``blocks[g,b]`` with every node on. Allocations that fit these counts together fit
    around the held GPUs by buddy placement (module docstring), and a smaller allocation takes no more of any size.
    """

    free: dict[tuple[str, int], float]
    sizes: dict[str, tuple[int, ...]]

    @classmethod
    def around(cls, gpu_types: Iterable[GpuType], held: Mapping[str, Mapping[str, set[int]]] | None) -> FreeBlocks:
        """The blocks of the nodes of ``gpu_types`` that miss ``held`` (``{GPU type: {node: GPU indices}}``).

        ``held`` None: GPUs only (``b = 1``), for a round whose running jobs may move.
        """
        free: dict[tuple[str, int], float] = {}
        sizes: dict[str, tuple[int, ...]] = {}
        for g in gpu_types:
            k = g.gpus_per_node
            sizes[g.name] = (1,) if held is None else tuple(2**i for i in range(k.bit_length()) if 2**i <= k)
            taken = (held or {}).get(g.name, {})
            for b in sizes[g.name]:
                free[(g.name, b)] = float(sum(free_blocks(k, set(taken.get(n, ())), b) for n in g.node_names()))
        return cls(free, sizes)

    def fits(self, room: Mapping[str, int]) -> bool:
        """True when every ``{GPU type: n}`` of ``room`` fits together (a type not counted here does not)."""
        return all(g in self.sizes for g in room) and all(self.free[key] >= v for key, v in self._need(room).items())

    def take(self, room: Mapping[str, int]) -> bool:
        """Take ``room``'s blocks when it :meth:`fits`; False (nothing taken) when it does not."""
        if not self.fits(room):
            return False
        for key, v in self._need(room).items():
            self.free[key] -= v
        return True

    def _need(self, room: Mapping[str, int]) -> dict[tuple[str, int], float]:
        return {(g, b): n / b for g, n in room.items() for b in self.sizes.get(g, ()) if b <= n}
