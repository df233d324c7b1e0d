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

from dataclasses import dataclass

from wattplan.planner.contracts.domain import Instance, Job


def pinned_gpus(instance: Instance) -> dict[str, dict[str, set[int]]]:
    """The GPUs pinned jobs hold, per GPU type where they are fixed (module docstring): ``{g: {node: indices}}``.

    A GPU type without a running job is not in it (nothing is pinned there).
    """
    running = [j for j in instance.jobs if j.current is not None]
    if not running:
        return {}
    where = _Where.of(instance)
    waiting_types = {j.type for j in instance.jobs if j.current is None}
    held: dict[str, dict[str, set[int]]] = {}
    loose: set[str] = set()
    for job in running:
        cur = job.current
        assert cur is not None
        if not where.pinned(instance, job) or job.type in waiting_types:
            loose.add(cur.gpu_type)
            continue
        by_node = held.setdefault(cur.gpu_type, {})
        for part in cur.placement or ():
            by_node.setdefault(part.node, set()).update(part.gpu_indices)
    return {g: nodes for g, nodes in held.items() if g not in loose}


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


def pinned_nodes(instance: Instance) -> dict[str, int]:
    """The nodes that hold pinned GPUs, per GPU type of :func:`pinned_gpus`: they stay on this round."""
    return {g: len(nodes) for g, nodes in pinned_gpus(instance).items()}


def free_blocks(gpus_per_node: int, taken: set[int], size: int) -> int:
    """The aligned blocks ``[b size, (b + 1) size)`` of a node of ``gpus_per_node`` GPUs that miss ``taken``."""
    return sum(1 for b in range(0, gpus_per_node, size) if not taken.intersection(range(b, b + size)))
