"""The round model, written once (docs/design.md §3.3, in the compact pair form).

Columns
    ``x_o``  binary, exclusive option ``o = (j, g, n, s)``;
    ``z_p``  binary, pair-side option ``p = (j, B, g, n, s)`` (job ``j`` shares with a type-``B`` job);
    ``w_q``  integer, number of pairs in a symmetric same-type slot ``q = (A, A, g, n, s)``;
    ``u_g``  integer in ``[0, N_g]``, nodes of type ``g`` powered on.

Rows
    one job at most once      ``sum_o x_o(j) + sum_p z_p(j) <= 1``                          (``job[j]``)
    capacity                  ``sum n x + sum_pairs n - K_g u_g <= 0``                        (``gpus[g]``)
        where a slot ``(A, B, g, n, s)`` holds ``sum_{side A} z`` pairs (``w_q`` when ``A = B``);
    balance, ``A != B``       ``sum_{side A} z - sum_{side B} z = 0``                          (``pair[q]``)
    balance, ``A = B``        ``sum z - 2 w_q = 0``                                             (``pair[q]``)
    ordered ``A = A`` slot    ``sum_{side 1} z - sum_{side 0} z = 0`` and, for each prefix of
                              the type's jobs in instance order, ``sum_{side 1} z <= sum_{side 0} z``
    energy                    ``sum e x + sum e z + sum_g u_g T (Pnode_g + K_g Pidle_g) <= B`` (``energy``, J)

Objective vectors
    ``progress = sum w_j pi`` over ``x`` and ``z``; ``energy`` (J) over ``x``, ``z`` and ``u``;
    ``excess_energy = energy - w sum_j e_j sigma_j`` (J): the energy above what the round's steps
    would cost at each job's best exclusive energy per step
    ``e_j = min_{g, n, s} n (P + Pnode_g / K_g) / X`` (J/step; :func:`planner.economics.best_step_energy_j`), so a
    round that runs every job at its best configuration on full nodes scores 0, a pair that
    saves idle power scores below 0, and idle GPUs on a powered node or a wasteful setting above.
    ``w`` = ``round.credit_weight`` (1 by default): a signal-aware replay sets it per round to
    the signal's trailing-day mean over the round's value, so a clean hour credits steps above
    their best energy (run harder) and a dirty one below it (defer, down to ``(1 - delta) P*``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from formulations.ir import INF, LinearModel, ModelBuilder
from formulations.options import OptionSet, Slot, enumerate_options, match_slot
from planner.assemble import Allocation
from planner.domain import Instance
from planner.economics import best_step_energy_j

ENERGY_ROW = "energy"
PROGRESS_ROW = "progress_floor"


@dataclass
class RoundModel:
    """The compiled-once model of a round and the maps between columns and allocations."""

    instance: Instance
    options: OptionSet
    lm: LinearModel
    x_cols: np.ndarray  # column of exclusive option i
    z_cols: np.ndarray  # column of pair-side option i
    w_cols: dict[Slot, int]
    u_cols: dict[str, int]
    ordered_slots: frozenset[Slot]

    def decode(self, values: np.ndarray) -> list[Allocation]:
        """Allocations of a solution vector; pairs are formed slot by slot in instance order."""
        jobs = self.instance.jobs
        chosen: list[Allocation] = []
        for i, o in enumerate(self.options.exclusive):
            if values[self.x_cols[i]] > 0.5:
                chosen.append(Allocation((jobs[o.job].id,), o.gpu_type, o.gpus, o.setting))
        sides: dict[Slot, list[list[int]]] = defaultdict(lambda: [[], []])
        for i, p in enumerate(self.options.pair_sides):
            if values[self.z_cols[i]] > 0.5:
                sides[p.slot][p.side].append(p.job)
        for slot, (first, second) in sides.items():
            for j, k in match_slot(slot, slot in self.ordered_slots, sorted(first), sorted(second)):
                a, b = sorted((j, k))
                chosen.append(Allocation((jobs[a].id, jobs[b].id), slot.gpu_type, slot.gpus, slot.setting))
        return chosen

    def encode(self, allocations: Sequence[Allocation]) -> np.ndarray:
        """A column vector for the allocations (options missing from the model are skipped)."""
        inst = self.instance
        index = {job.id: j for j, job in enumerate(inst.jobs)}
        x_of = {(o.job, o.gpu_type, o.gpus, o.setting): self.x_cols[i] for i, o in enumerate(self.options.exclusive)}
        z_of = {
            (p.job, p.partner_type, p.gpu_type, p.gpus, p.setting, p.side): self.z_cols[i]
            for i, p in enumerate(self.options.pair_sides)
        }
        v = np.zeros(self.lm.num_cols)
        used: dict[str, int] = defaultdict(int)
        for a in allocations:
            if not a.is_pair:
                col = x_of.get((index[a.job_ids[0]], a.gpu_type, a.gpus, a.setting))
                if col is not None:
                    v[col] = 1
                    used[a.gpu_type] += a.gpus
                continue
            j, k = sorted(index[i] for i in a.job_ids)
            tj, tk = inst.jobs[j].type, inst.jobs[k].type
            low, high = sorted((tj, tk))
            slot = Slot(low, high, a.gpu_type, a.gpus, a.setting)
            ordered = slot in self.ordered_slots
            if tj != tk:
                side_j = 0 if tj < tk else 1
                side_k = 1 - side_j
            else:
                side_j, side_k = 0, (1 if ordered else 0)
            cj = z_of.get((j, tk, a.gpu_type, a.gpus, a.setting, side_j))
            ck = z_of.get((k, tj, a.gpu_type, a.gpus, a.setting, side_k))
            if cj is None or ck is None:
                continue
            v[cj] = v[ck] = 1
            used[a.gpu_type] += a.gpus
            if slot in self.w_cols:
                v[self.w_cols[slot]] += 1
        for g, col in self.u_cols.items():
            k = self.instance.gpu_type(g).gpus_per_node
            v[col] = -(-used.get(g, 0) // k)
        return v


def build_round_model(instance: Instance, options: OptionSet | None = None) -> RoundModel:
    """Enumerate options (unless given) and build the model of the module docstring."""
    opts = options if options is not None else enumerate_options(instance)
    T = instance.round.duration_s
    mb = ModelBuilder()
    x_cols = np.array(
        [
            mb.add_col(f"x[{instance.jobs[o.job].id},{o.gpu_type},{o.gpus},{o.setting}]", 0, 1, True)
            for o in opts.exclusive
        ],
        dtype=np.int64,
    )
    z_cols = np.array(
        [
            mb.add_col(
                f"z[{instance.jobs[p.job].id},{p.partner_type},{p.gpu_type},{p.gpus},{p.setting},{p.side}]", 0, 1, True
            )
            for p in opts.pair_sides
        ],
        dtype=np.int64,
    )
    slots = opts.slots()
    ordered = frozenset(s for s, (first, second) in slots.items() if s.same_type and second)
    w_cols = {
        s: mb.add_col(f"w[{s.type_a},{s.gpu_type},{s.gpus},{s.setting}]", 0, len(first) // 2, True)
        for s, (first, _) in slots.items()
        if s.same_type and s not in ordered
    }
    u_cols = {g.name: mb.add_col(f"u[{g.name}]", 0, g.nodes, True) for g in instance.gpu_types}

    _job_rows(mb, instance, opts, x_cols, z_cols)
    _capacity_rows(mb, instance, opts, slots, x_cols, z_cols, w_cols, u_cols)
    _balance_rows(mb, opts, slots, ordered, z_cols, w_cols)

    progress = np.zeros(mb.num_cols)
    energy = np.zeros(mb.num_cols)
    progress[x_cols] = [o.progress for o in opts.exclusive]
    progress[z_cols] = [p.progress for p in opts.pair_sides]
    energy[x_cols] = [o.energy_j for o in opts.exclusive]
    energy[z_cols] = [p.energy_j for p in opts.pair_sides]
    for g in instance.gpu_types:
        energy[u_cols[g.name]] = T * g.powered_node_w
    if instance.round.budget_j is not None:
        nz = np.flatnonzero(energy)
        mb.add_row(nz.tolist(), energy[nz].tolist(), -INF, instance.round.budget_j, ENERGY_ROW, "energy")
    credit = np.zeros(mb.num_cols)  # w sum_j e_j sigma_j, sigma = pi R_j (progress is w_j pi)
    w = instance.round.credit_weight
    e = [
        w * best_step_energy_j(instance, job.type, job.gpus) * job.remaining_steps / job.weight
        if job.weight > 0
        else 0.0
        for job in instance.jobs
    ]
    credit[x_cols] = [e[o.job] * o.progress for o in opts.exclusive]
    credit[z_cols] = [e[p.job] * p.progress for p in opts.pair_sides]
    lm = mb.build({"progress": progress, "energy": energy, "excess_energy": energy - credit})
    return RoundModel(instance, opts, lm, x_cols, z_cols, w_cols, u_cols, ordered)


def _job_rows(mb: ModelBuilder, instance: Instance, opts: OptionSet, x_cols: np.ndarray, z_cols: np.ndarray) -> None:
    per_job: dict[int, list[int]] = defaultdict(list)
    for i, o in enumerate(opts.exclusive):
        per_job[o.job].append(int(x_cols[i]))
    for i, p in enumerate(opts.pair_sides):
        per_job[p.job].append(int(z_cols[i]))
    for j, cols in sorted(per_job.items()):
        if len(cols) > 1:
            mb.add_row(cols, [1.0] * len(cols), -INF, 1, f"job[{instance.jobs[j].id}]")


def _capacity_rows(
    mb: ModelBuilder,
    instance: Instance,
    opts: OptionSet,
    slots: dict[Slot, list[list[int]]],
    x_cols: np.ndarray,
    z_cols: np.ndarray,
    w_cols: dict[Slot, int],
    u_cols: dict[str, int],
) -> None:
    terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, o in enumerate(opts.exclusive):
        terms[o.gpu_type].append((int(x_cols[i]), o.gpus))
    for slot, (first, _) in slots.items():
        if slot in w_cols:
            terms[slot.gpu_type].append((w_cols[slot], slot.gpus))
        else:  # one pair per side-0 member (A != B, or the first side of an ordered slot)
            terms[slot.gpu_type].extend((int(z_cols[i]), slot.gpus) for i in first)
    for gpu_type in instance.gpu_types:
        cols = [c for c, _ in terms[gpu_type.name]] + [u_cols[gpu_type.name]]
        vals = [float(v) for _, v in terms[gpu_type.name]] + [-float(gpu_type.gpus_per_node)]
        mb.add_row(cols, vals, -INF, 0, f"gpus[{gpu_type.name}]")


def _balance_rows(
    mb: ModelBuilder,
    opts: OptionSet,
    slots: dict[Slot, list[list[int]]],
    ordered: frozenset[Slot],
    z_cols: np.ndarray,
    w_cols: dict[Slot, int],
) -> None:
    for slot, (first, second) in slots.items():
        name = f"pair[{slot.type_a}|{slot.type_b},{slot.gpu_type},{slot.gpus},{slot.setting}]"
        if slot in w_cols:
            cols = [int(z_cols[i]) for i in first] + [w_cols[slot]]
            mb.add_row(cols, [1.0] * len(first) + [-2.0], 0, 0, name)
            continue
        cols = [int(z_cols[i]) for i in first] + [int(z_cols[i]) for i in second]
        mb.add_row(cols, [1.0] * len(first) + [-1.0] * len(second), 0, 0, name)
        if slot in ordered:
            _prefix_rows(mb, opts, slot, first, second, z_cols, name)


def _prefix_rows(
    mb: ModelBuilder,
    opts: OptionSet,
    slot: Slot,
    first: list[int],
    second: list[int],
    z_cols: np.ndarray,
    name: str,
) -> None:
    """For every prefix of the slot's jobs (instance order): second-side count <= first-side count."""
    by_job: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for i in first:
        by_job[opts.pair_sides[i].job].append((int(z_cols[i]), -1.0))
    for i in second:
        by_job[opts.pair_sides[i].job].append((int(z_cols[i]), 1.0))
    prefix: list[tuple[int, float]] = []
    for j in sorted(by_job):
        prefix = prefix + by_job[j]
        if any(v > 0 for _, v in by_job[j]):
            mb.add_row([c for c, _ in prefix], [v for _, v in prefix], -INF, 0, f"{name}.prefix[{j}]")
