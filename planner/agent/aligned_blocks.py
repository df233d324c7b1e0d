"""Running jobs' GPUs as the round model's placement needs them: one aligned block per job on the node it runs on.

The round model places allocations by buddy allocation (:mod:`planner.core.placement`): ``n <= K`` GPUs are the
aligned block ``[b n, (b + 1) n)`` of one node, and a current placement is kept only when it is such a block and
no larger kept job overlaps it. Slurm gives a job any ``n`` free indices of a node (``(1, 2)`` for a 2-GPU job),
and the agent's calls name nodes, never indices (``NodeList``, ``Gres=gpu:n``): Slurm picks the indices. Taken
as they are, Slurm's indices make pins invalid or overlapping, and the placement then moves a job to another node
although its node has room for it: a restart on Slurm, for nothing.

So the agent hands the round each running job's *node* with a block of its own size on it: per node, the groups
of jobs on the same GPUs (one job, or a pair) in decreasing size (then job id) each take the first free aligned
block. Sizes are powers of two dividing ``K`` and sum to at most ``K`` on a node, so first-fit-decreasing always
finds a block (the nesting argument of :mod:`planner.core.placement`). A job on whole nodes (``n >= K``) keeps
its nodes; a node whose jobs hold more than ``K`` GPUs (Slurm and the agent disagree for a moment) is left as
Slurm shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from wattplan.planner.contracts.domain import CurrentConfig, NodeGpus, is_power_of_two


def aligned_blocks(current: Mapping[str, CurrentConfig], gpus_per_node: int) -> dict[str, CurrentConfig]:
    """``current`` with every single-node placement replaced by an aligned block on the same node (docstring).

    ``gpus_per_node`` is ``K``, a power of two. Jobs with the same node and the same GPU indices (a pair) get
    the same block. Multi-node placements and jobs of a node that holds more than ``K`` GPUs are unchanged.
    """
    groups: dict[str, dict[tuple[int, ...], list[str]]] = {}
    for jid, cur in current.items():
        if cur.placement is None or len(cur.placement) != 1:
            continue
        ng = cur.placement[0]
        if not 0 < len(ng.gpu_indices) < gpus_per_node:
            continue
        groups.setdefault(ng.node, {}).setdefault(tuple(sorted(ng.gpu_indices)), []).append(jid)
    out = dict(current)
    for node, by_gpus in groups.items():
        sizes = [len(g) for g in by_gpus]
        if sum(sizes) + _whole(current, node, gpus_per_node) > gpus_per_node or not all(map(is_power_of_two, sizes)):
            continue
        used = [False] * gpus_per_node
        blocks: dict[str, tuple[NodeGpus, ...]] = {}
        for gpus, jobs in sorted(by_gpus.items(), key=lambda kv: (-len(kv[0]), min(_id_key(j) for j in kv[1]))):
            n = len(gpus)
            start = next((b for b in range(0, gpus_per_node, n) if not any(used[b : b + n])), None)
            if start is None:  # cannot happen for power-of-two sizes summing to at most K; keep Slurm's view
                break
            used[start : start + n] = [True] * n
            blocks.update({jid: (NodeGpus(node, tuple(range(start, start + n))),) for jid in jobs})
        else:
            out.update({jid: replace(current[jid], placement=b) for jid, b in blocks.items()})
    return out


def _whole(current: Mapping[str, CurrentConfig], node: str, k: int) -> int:
    """GPUs of ``node`` held by placements that this module leaves as they are (a whole-node entry)."""
    return sum(
        len(ng.gpu_indices)
        for cur in current.values()
        if cur.placement is not None
        for ng in cur.placement
        if ng.node == node and (len(cur.placement) > 1 or len(ng.gpu_indices) >= k)
    )


def _id_key(job_id: str) -> tuple[int, str]:
    return (int(job_id), job_id) if job_id.isdigit() else (1 << 62, job_id)
