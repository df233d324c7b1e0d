"""The round model, written once (docs/design.md §3.3, in the compact pair form).

Columns
    ``x_o``  binary, exclusive option ``o = (j, g, n, s)``;
    ``z_p``  binary, pair-side option ``p = (j, B, g, n, s)`` (job ``j`` shares with a type-``B`` job);
    ``w_q``  integer, number of pairs in a symmetric same-type slot ``q = (A, A, g, n, s)``;
    ``u_g``  integer in ``[0, N_g]``, nodes of type ``g`` powered on.

Rows
    one job at most once      ``sum_o x_o(j) + sum_p z_p(j) <= 1``                          (``job[j]``)
    tail bound, ``min_steps_j > 0``  ``sum_o x_o(j) + sum_p z_p(j) >= 1``; its options all give it at
                              least ``min_steps_j`` steps (:mod:`formulations.options`)         (``must_run[j]``)
    capacity                  ``sum n x + sum_pairs n - K_g u_g <= 0``                        (``gpus[g]``)
        where a slot ``(A, B, g, n, s)`` holds ``sum_{side A} z`` pairs (``w_q`` when ``A = B``);
    aligned blocks, where every running job of type ``g`` stays where it runs (pinned, below)
                              ``sum_{new n >= b} (n / b) y - (K_g / b) u_g <= F_gb - (K_g / b) P_g``
                              for each block size ``b = 2, 4, .., K_g``                       (``blocks[g,b]``)
    balance, ``A != B``       ``sum_{side A} z - sum_{side B} z = 0``                          (``pair[q]``)
    balance, ``A = B``        ``sum z - 2 w_q = 0``                                             (``pair[q]``)
    ordered ``A = A`` slot    ``sum_{side 1} z - sum_{side 0} z = 0`` and, for each prefix of
                              the type's jobs in instance order, ``sum_{side 1} z <= sum_{side 0} z``
    energy                    ``sum e x + sum e z + sum_g u_g T (Pnode_g + K_g Pidle_g) <= B`` (``energy``, J)

Objective vectors
    ``progress = sum w_j pi`` over ``x`` and ``z``; ``energy`` (J) over ``x``, ``z`` and ``u``;
    ``excess_energy = energy - w sum_j e_j sigma_j`` (J): the energy above what the round's steps
    would cost at each job's best exclusive energy per step
    ``e_j = min_{g, n, s} n (P - Pidle_g + rho (Pnode_g / K_g + Pidle_g)) / X`` (J/step;
    :func:`planner.core.economics.step_credit_j`), so a round that runs every job at its best configuration on
    full nodes scores 0, a pair that saves idle power scores below 0, and idle GPUs on a powered node or a
    wasteful setting above. ``rho`` (:func:`planner.core.economics.static_multiplier`) is 1 while the queue can
    fill the cluster; when it cannot, the nodes it needs stay on until its jobs finish, so a step done now
    saves ``rho`` times a GPU's static power later, and the credit says so (a last job alone on a node is
    credited the whole node's static power, and uses the node's idle GPUs when that finishes it for less).
    ``w`` = ``round.credit_weight`` (1 by default): a signal-aware replay sets it per round to
    the signal's trailing-day mean over the round's value, so a clean hour credits steps above
    their best energy (run harder) and a dirty one below it (defer, down to ``(1 - delta) P*``).

Aligned blocks. Counting GPUs is enough to place a round's allocations by buddy allocation only when nothing is
pinned (:mod:`planner.core.placement`); around allocations kept where they are, first-fit-decreasing fails exactly
when, for some block size ``b``, the new allocations of size ``>= b`` need more aligned ``b``-blocks than there are
free: those of the ``P_g`` nodes that hold kept GPUs and untouched by them (``F_gb``), plus ``K_g / b`` per further
node on. Where the running jobs of type ``g`` are pinned (:mod:`planner.core.kept_blocks`: every option of theirs
keeps their GPUs, as :mod:`planner.sim.pinned` makes them), the rows ``blocks[g,b]`` count the new allocations
``y`` (a waiting job alone, or a pair of two waiting jobs, once), so the plan's placement keeps every pinned job in
place. Without them a round could start a job that fits the GPU count but not the free blocks, and the placement
would move a running job: a restart. At ``b = K_g`` the rows also make ``u_g`` at least ``P_g`` (a node that holds
a pinned job is on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from wattplan.formulations.ir import INF, LazyNames, LinearModel
from wattplan.formulations.options import (
    ExclusiveTable,
    OptionSet,
    PairSideTable,
    Slot,
    enumerate_options,
    match_slot,
)
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.core.assemble import Allocation, min_nodes_on
from wattplan.planner.core.economics import step_credits_j
from wattplan.planner.core.kept_blocks import FreeBlocks, pinned_gpus, pinned_types

ENERGY_ROW = "energy"
PROGRESS_ROW = "progress_floor"


def budget_rows(lm: LinearModel) -> list[str]:
    """The names of every energy budget row: ``energy``, and ``energy@h<h>`` of a horizon model's later rounds."""
    return [n for n in lm.row_names if n == ENERGY_ROW or n.startswith(ENERGY_ROW + "@")]


@dataclass
class RoundModel:
    """The compiled-once model of a round and the maps between columns and allocations.

    Columns are laid out as ``x`` (one per exclusive option, in option order), ``z`` (one per
    pair side), ``w`` (symmetric same-type slots) and ``u`` (GPU types); ``job_rows`` are the
    rows ``job[j]`` (``sum x + sum z <= 1``), the multiple-choice rows a decomposition prices.
    """

    instance: Instance
    options: OptionSet
    lm: LinearModel
    x_cols: np.ndarray  # column of exclusive option i
    z_cols: np.ndarray  # column of pair-side option i
    w_cols: dict[Slot, int]
    u_cols: dict[str, int]
    ordered_slots: frozenset[Slot]
    job_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _slot_gpu: np.ndarray = field(init=False, repr=False)
    _slot_gpus: np.ndarray = field(init=False, repr=False)
    _slot_setting: np.ndarray = field(init=False, repr=False)

    def decode(self, values: np.ndarray) -> list[Allocation]:
        """Allocations of a solution vector; pairs are formed slot by slot in instance order."""
        jobs = self.instance.jobs
        opts = self.options
        xt, zt = opts.exclusive_table, opts.pair_table
        chosen: list[Allocation] = []
        for i in np.flatnonzero(values[self.x_cols] > 0.5).tolist():
            chosen.append(
                Allocation(
                    (jobs[int(xt.job[i])].id,), opts.gpu_names[int(xt.gpu[i])], int(xt.gpus[i]), int(xt.setting[i])
                )
            )
        picked = np.flatnonzero(values[self.z_cols] > 0.5)
        sides: dict[int, list[list[int]]] = {}
        for i in picked.tolist():
            sides.setdefault(int(zt.slot[i]), [[], []])[int(zt.side[i])].append(int(zt.job[i]))
        for q, (first, second) in sides.items():
            slot = opts.slot_list[q]
            for j, k in match_slot(slot, slot in self.ordered_slots, sorted(first), sorted(second)):
                a, b = sorted((j, k))
                chosen.append(Allocation((jobs[a].id, jobs[b].id), slot.gpu_type, slot.gpus, slot.setting))
        return chosen

    def encode(self, allocations: Sequence[Allocation]) -> np.ndarray:
        """A column vector for the allocations (options missing from the model are skipped).

        ``u_g`` is what the plan's assembly powers: the fewest nodes that hold them, and at least the nodes that
        hold pinned jobs (:func:`planner.core.assemble.min_nodes_on`).
        """
        inst = self.instance
        opts = self.options
        index = {job.id: j for j, job in enumerate(inst.jobs)}
        gpu_index = {g: i for i, g in enumerate(opts.gpu_names)}
        type_index = {t: i for i, t in enumerate(opts.types)}
        v = np.zeros(self.lm.num_cols)
        held: list[Allocation] = []  # the allocations the model has
        for a in allocations:
            gi = gpu_index.get(a.gpu_type, -1)
            if not a.is_pair:
                i = self._exclusive_option(index[a.job_ids[0]], gi, a.gpus, a.setting)
                if i is not None:
                    v[self.x_cols[i]] = 1
                    held.append(a)
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
            cj = self._pair_side(j, type_index.get(tk, -1), gi, a.gpus, a.setting, side_j)
            ck = self._pair_side(k, type_index.get(tj, -1), gi, a.gpus, a.setting, side_k)
            if cj is None or ck is None:
                continue
            v[self.z_cols[cj]] = v[self.z_cols[ck]] = 1
            held.append(a)
            if slot in self.w_cols:
                v[self.w_cols[slot]] += 1
        nodes = min_nodes_on(inst, held)
        for g, col in self.u_cols.items():
            v[col] = nodes.get(g, 0)
        return v

    def _exclusive_option(self, job: int, gpu: int, gpus: int, setting: int) -> int | None:
        """The exclusive option of ``job`` on ``(gpu, gpus, setting)``, or None if the model has none."""
        t = self.options.exclusive_table
        lo, hi = np.searchsorted(t.job, [job, job + 1])
        hit = np.flatnonzero((t.gpu[lo:hi] == gpu) & (t.gpus[lo:hi] == gpus) & (t.setting[lo:hi] == setting))
        return int(lo + hit[0]) if len(hit) else None

    def _pair_side(self, job: int, partner: int, gpu: int, gpus: int, setting: int, side: int) -> int | None:
        """The pair side of ``job`` with a ``partner``-type job on ``(gpu, gpus, setting)`` at ``side``, or None."""
        t = self.options.pair_table
        lo, hi = np.searchsorted(t.job, [job, job + 1])
        q = t.slot[lo:hi]
        hit = np.flatnonzero(
            (t.partner[lo:hi] == partner)
            & (t.side[lo:hi] == side)
            & (self._slot_gpu[q] == gpu)
            & (self._slot_gpus[q] == gpus)
            & (self._slot_setting[q] == setting)
        )
        return int(lo + hit[0]) if len(hit) else None

    def __post_init__(self) -> None:
        gpu_index = {g: i for i, g in enumerate(self.options.gpu_names)}
        slots = self.options.slot_list
        self._slot_gpu = np.array([gpu_index[s.gpu_type] for s in slots], dtype=np.int64)
        self._slot_gpus = np.array([s.gpus for s in slots], dtype=np.int64)
        self._slot_setting = np.array([s.setting for s in slots], dtype=np.int64)


@dataclass
class _Rows:
    """Rows collected as coordinate arrays: entries ``(row, col, val)``, and per row its bounds, name, kind."""

    rows: list[np.ndarray] = field(default_factory=list)
    cols: list[np.ndarray] = field(default_factory=list)
    vals: list[np.ndarray] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Rows added so far."""
        return len(self.lo)

    def add_block(
        self,
        row_of_entry: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        lo: Sequence[float],
        hi: Sequence[float],
        names: Sequence[str],
        kind: str = "count",
    ) -> None:
        """Add ``len(lo)`` rows; entry ``e`` is in the block's row ``row_of_entry[e]``."""
        self.rows.append(np.asarray(row_of_entry, dtype=np.int64) + self.count)
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=float))
        self.lo.extend(lo)
        self.hi.extend(hi)
        self.names.extend(names)
        self.kinds.extend([kind] * len(lo))

    def add_row(
        self,
        cols: Sequence[int] | np.ndarray,
        vals: Sequence[float] | np.ndarray,
        lo: float,
        hi: float,
        name: str,
        kind: str,
    ) -> None:
        """Add the one row ``lo <= sum vals x[cols] <= hi``."""
        self.add_block(
            np.zeros(len(cols), dtype=np.int64), np.asarray(cols), np.asarray(vals), [lo], [hi], [name], kind
        )

    def concat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All entries as ``(rows, cols, vals)``."""
        if not self.rows:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        return np.concatenate(self.rows), np.concatenate(self.cols), np.concatenate(self.vals)


def build_round_model(instance: Instance, options: OptionSet | None = None) -> RoundModel:
    """Enumerate options (unless given) and build the model of the module docstring."""
    opts = options if options is not None else enumerate_options(instance)
    T = instance.round.duration_s
    xt, zt = opts.exclusive_table, opts.pair_table
    nx, nz = len(xt), len(zt)
    x_cols = np.arange(nx, dtype=np.int64)
    z_cols = np.arange(nx, nx + nz, dtype=np.int64)
    nslots = len(opts.slot_list)
    side0_count = np.bincount(zt.slot[zt.side == 0], minlength=nslots)
    w_slots = [q for q, s in enumerate(opts.slot_list) if s.same_type and s not in opts.ordered]
    w_of_slot = np.full(nslots, -1, dtype=np.int64)
    w_of_slot[w_slots] = nx + nz + np.arange(len(w_slots))
    w_cols = {opts.slot_list[q]: int(w_of_slot[q]) for q in w_slots}
    u_start = nx + nz + len(w_slots)
    u_cols = {g.name: u_start + i for i, g in enumerate(instance.gpu_types)}
    ncols = u_start + len(instance.gpu_types)

    lb = np.zeros(ncols)
    ub = np.ones(ncols)
    ub[nx + nz : u_start] = side0_count[w_slots] // 2
    ub[u_start:] = [g.nodes for g in instance.gpu_types]
    is_int = np.ones(ncols, dtype=bool)

    rows = _Rows()
    job_rows = _job_rows(rows, instance, opts, x_cols, z_cols)
    _must_run_rows(rows, instance, opts, x_cols, z_cols)
    _capacity_rows(rows, instance, opts, x_cols, z_cols, w_of_slot, u_cols)
    _balance_rows(rows, opts, z_cols, w_of_slot)
    for q in sorted(opts.slot_list.index(s) for s in opts.ordered):
        _prefix_rows(rows, opts, q, z_cols)

    progress = np.zeros(ncols)
    energy = np.zeros(ncols)
    progress[x_cols], progress[z_cols] = xt.progress, zt.progress
    energy[x_cols], energy[z_cols] = xt.energy_j, zt.energy_j
    for g in instance.gpu_types:
        energy[u_cols[g.name]] = T * g.powered_node_w
    if instance.round.budget_j is not None:
        nz_e = np.flatnonzero(energy)
        rows.add_row(nz_e, energy[nz_e], -INF, instance.round.budget_j, ENERGY_ROW, "energy")
    w = instance.round.credit_weight
    credits = step_credits_j(instance)
    e = np.array(
        [w * credits[job.id] * job.remaining_steps / job.weight if job.weight > 0 else 0.0 for job in instance.jobs]
    )
    credit = np.zeros(ncols)  # w sum_j e_j sigma_j, sigma = pi R_j (progress is w_j pi)
    if len(e):
        credit[x_cols] = e[xt.job] * xt.progress
        credit[z_cols] = e[zt.job] * zt.progress
    a_rows, a_cols, a_vals = rows.concat()
    lm = LinearModel(
        lb=lb,
        ub=ub,
        is_int=is_int,
        col_names=LazyNames(ncols, _ColumnNamer.of(instance, opts, w_slots)),
        a_rows=a_rows,
        a_cols=a_cols,
        a_vals=a_vals,
        row_lo=np.array(rows.lo, dtype=float),
        row_hi=np.array(rows.hi, dtype=float),
        row_names=tuple(rows.names),
        row_kind=tuple(rows.kinds),
        objectives={"progress": progress, "energy": energy, "excess_energy": energy - credit},
    )
    return RoundModel(instance, opts, lm, x_cols, z_cols, w_cols, u_cols, opts.ordered, job_rows)


@dataclass(frozen=True)
class _ColumnNamer:
    """The name of column ``c``: ``x[job,g,n,s]``, ``z[job,B,g,n,s,side]``, ``w[A,g,n,s]`` or ``u[g]``.

    A class rather than a closure, so a model pickles to a solver worker (:mod:`formulations.watchdog`). It holds
    only what the names are made of (job ids, the option tables, type and slot names), not the instance or the
    option set: a model is pickled to the worker at every solve, and the instance's profiles and jobs (slotted
    dataclasses, pickled field by field) cost far more to send than the model itself.
    """

    job_ids: tuple[str, ...]
    exclusive: ExclusiveTable
    pairs: PairSideTable
    gpu_names: tuple[str, ...]
    types: tuple[str, ...]
    slot_list: tuple[Slot, ...]
    w_slots: list[int]
    u_names: tuple[str, ...]

    @classmethod
    def of(cls, instance: Instance, opts: OptionSet, w_slots: list[int]) -> _ColumnNamer:
        """The namer of the model of ``instance`` built from ``opts`` with symmetric slots ``w_slots``."""
        return cls(
            tuple(j.id for j in instance.jobs),
            opts.exclusive_table,
            opts.pair_table,
            opts.gpu_names,
            opts.types,
            opts.slot_list,
            w_slots,
            tuple(g.name for g in instance.gpu_types),
        )

    def __call__(self, c: int) -> str:
        """The name of column ``c``."""
        jobs, xt, zt = self.job_ids, self.exclusive, self.pairs
        nx, nz = len(xt), len(zt)
        if c < nx:
            return f"x[{jobs[xt.job[c]]},{self.gpu_names[xt.gpu[c]]},{xt.gpus[c]},{xt.setting[c]}]"
        if c < nx + nz:
            i = c - nx
            s = self.slot_list[zt.slot[i]]
            partner = self.types[zt.partner[i]]
            return f"z[{jobs[zt.job[i]]},{partner},{s.gpu_type},{s.gpus},{s.setting},{zt.side[i]}]"
        u_start = nx + nz + len(self.w_slots)
        if c < u_start:
            s = self.slot_list[self.w_slots[c - nx - nz]]
            return f"w[{s.type_a},{s.gpu_type},{s.gpus},{s.setting}]"
        return f"u[{self.u_names[c - u_start]}]"


def _job_rows(rows: _Rows, instance: Instance, opts: OptionSet, x_cols: np.ndarray, z_cols: np.ndarray) -> np.ndarray:
    """``job[j]``: ``sum_o x_o(j) + sum_p z_p(j) <= 1`` for every job with more than one column; their indices."""
    job = np.concatenate([opts.exclusive_table.job, opts.pair_table.job]).astype(np.int64)
    cols = np.concatenate([x_cols, z_cols])
    order = np.argsort(job, kind="stable")
    job, cols = job[order], cols[order]
    counts = np.bincount(job, minlength=len(instance.jobs))
    many = np.flatnonzero(counts > 1)
    row_of_job = np.full(len(instance.jobs), -1, dtype=np.int64)
    row_of_job[many] = np.arange(len(many))
    keep = row_of_job[job] >= 0
    first = rows.count
    rows.add_block(
        row_of_job[job[keep]],
        cols[keep],
        np.ones(int(keep.sum())),
        [-INF] * len(many),
        [1.0] * len(many),
        [f"job[{instance.jobs[j].id}]" for j in many.tolist()],
    )
    return first + np.arange(len(many), dtype=np.int64)


def _must_run_rows(rows: _Rows, instance: Instance, opts: OptionSet, x_cols: np.ndarray, z_cols: np.ndarray) -> None:
    """``must_run[j]``: ``sum_o x_o(j) + sum_p z_p(j) >= 1`` for every job with a tail bound (``min_steps > 0``)."""
    bound = [j for j, job in enumerate(instance.jobs) if job.min_steps > 0]
    if not bound:
        return
    job = np.concatenate([opts.exclusive_table.job, opts.pair_table.job]).astype(np.int64)
    cols = np.concatenate([x_cols, z_cols])
    row_of_job = np.full(len(instance.jobs), -1, dtype=np.int64)
    row_of_job[bound] = np.arange(len(bound))
    keep = row_of_job[job] >= 0
    rows.add_block(
        row_of_job[job[keep]],
        cols[keep],
        np.ones(int(keep.sum())),
        [1.0] * len(bound),
        [INF] * len(bound),
        [f"must_run[{instance.jobs[j].id}]" for j in bound],
    )


def _capacity_rows(
    rows: _Rows,
    instance: Instance,
    opts: OptionSet,
    x_cols: np.ndarray,
    z_cols: np.ndarray,
    w_of_slot: np.ndarray,
    u_cols: dict[str, int],
) -> None:
    """``gpus[g]``, then ``blocks[g,b]`` where jobs are pinned: the GPUs, then the aligned blocks, the round holds.

    ``gpus[g]``: ``sum n x + sum_pairs n - K_g u_g <= 0``, a pair counted once (its ``w``, or its side-0 job);
    ``blocks[g,b]`` (module docstring) is the same count by aligned blocks of ``b > 1`` GPUs around pinned jobs.
    """
    gpu_of, cols, vals = _allocations(opts, x_cols, z_cols, w_of_slot)
    ngpu = len(instance.gpu_types)
    u = np.array([u_cols[g.name] for g in instance.gpu_types], dtype=np.int64)
    k = np.array([-float(g.gpus_per_node) for g in instance.gpu_types])
    rows.add_block(
        np.concatenate([gpu_of.astype(np.int64), np.arange(ngpu)]),
        np.concatenate([cols, u]),
        np.concatenate([vals, k]),
        [-INF] * ngpu,
        [0.0] * ngpu,
        [f"gpus[{g.name}]" for g in instance.gpu_types],
    )
    _block_rows(rows, instance, opts, x_cols, z_cols, w_of_slot, u_cols)


def _allocations(
    opts: OptionSet,
    x_cols: np.ndarray,
    z_cols: np.ndarray,
    w_of_slot: np.ndarray,
    new_x: np.ndarray | None = None,
    new_slot: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The columns of the round's allocations: each one's GPU type (into ``gpu_names``), column and GPU count.

    An exclusive option, and a pair once: its ``w`` in a symmetric slot, else its side-0 job's ``z``. ``new_x``
    (per exclusive option) and ``new_slot`` (per slot) keep only the options and slots they mark.
    """
    xt, zt = opts.exclusive_table, opts.pair_table
    slot_gpu = np.array([opts.gpu_names.index(s.gpu_type) for s in opts.slot_list], dtype=np.int64)
    slot_gpus = np.array([s.gpus for s in opts.slot_list], dtype=float)
    keep_slot = np.ones(len(opts.slot_list), dtype=bool) if new_slot is None else new_slot
    counted = (zt.side == 0) & (w_of_slot[zt.slot] < 0) & keep_slot[zt.slot] if len(zt) else np.zeros(0, dtype=bool)
    w_slots = np.flatnonzero((w_of_slot >= 0) & keep_slot)
    xs: slice | np.ndarray = slice(None) if new_x is None else np.flatnonzero(new_x)
    gpu_of = np.concatenate([xt.gpu[xs], slot_gpu[zt.slot[counted]], slot_gpu[w_slots]]).astype(np.int64)
    cols = np.concatenate([x_cols[xs], z_cols[counted], w_of_slot[w_slots]]).astype(np.int64)
    vals = np.concatenate([xt.gpus[xs].astype(float), slot_gpus[zt.slot[counted]], slot_gpus[w_slots]])
    return gpu_of, cols, vals


def _block_rows(
    rows: _Rows,
    instance: Instance,
    opts: OptionSet,
    x_cols: np.ndarray,
    z_cols: np.ndarray,
    w_of_slot: np.ndarray,
    u_cols: dict[str, int],
) -> None:
    """``blocks[g,b]`` of the module docstring, on the GPU types where :func:`pinned_gpus` pins jobs."""
    held = pinned_gpus(instance)
    if not held:
        return
    pinned = pinned_types(instance, held)  # the pinned jobs' own types: every other option is a new allocation
    new_x = np.array([instance.jobs[j].type not in pinned for j in opts.exclusive_table.job.tolist()], dtype=bool)
    new_slot = np.array([s.type_a not in pinned and s.type_b not in pinned for s in opts.slot_list], dtype=bool)
    gpu_of, cols, sizes = _allocations(opts, x_cols, z_cols, w_of_slot, new_x, new_slot)
    types = [g for g in instance.gpu_types if g.name in held and g.name in opts.gpu_names]
    blocks = FreeBlocks.around(types, held)  # every node on: the nodes beyond u_g come off the right-hand side
    for g in types:
        on_g = gpu_of == opts.gpu_names.index(g.name)
        for size in blocks.sizes[g.name][1:]:
            big = on_g & (sizes >= size)
            per_node = g.gpus_per_node // size
            rows.add_row(
                [*cols[big].tolist(), u_cols[g.name]],
                [*(sizes[big] / size).tolist(), -float(per_node)],
                -INF,
                blocks.free[(g.name, size)] - per_node * g.nodes,
                f"blocks[{g.name},{size}]",
                "count",
            )


def _slot_name(slot: Slot) -> str:
    return f"pair[{slot.type_a}|{slot.type_b},{slot.gpu_type},{slot.gpus},{slot.setting}]"


def _balance_rows(rows: _Rows, opts: OptionSet, z_cols: np.ndarray, w_of_slot: np.ndarray) -> None:
    """``pair[q]``: ``sum_{side A} z - sum_{side B} z = 0``, or ``sum z - 2 w_q = 0`` for a symmetric slot."""
    zt = opts.pair_table
    nslots = len(opts.slot_list)
    sign = np.where(zt.side == 0, 1.0, -1.0)
    w_slots = np.flatnonzero(w_of_slot >= 0)
    rows.add_block(
        np.concatenate([zt.slot, w_slots]),
        np.concatenate([z_cols, w_of_slot[w_slots]]),
        np.concatenate([sign, np.full(len(w_slots), -2.0)]),
        [0.0] * nslots,
        [0.0] * nslots,
        [_slot_name(s) for s in opts.slot_list],
    )


def _prefix_rows(rows: _Rows, opts: OptionSet, q: int, z_cols: np.ndarray) -> None:
    """For every prefix of the ordered slot's jobs (instance order): second-side count <= first-side count."""
    zt = opts.pair_table
    members = np.flatnonzero(zt.slot == q)
    by_job: dict[int, list[tuple[int, float]]] = {}
    for i in members.tolist():
        by_job.setdefault(int(zt.job[i]), []).append((int(z_cols[i]), 1.0 if zt.side[i] == 1 else -1.0))
    name = _slot_name(opts.slot_list[q])
    prefix: list[tuple[int, float]] = []
    for j in sorted(by_job):
        prefix = prefix + by_job[j]
        if any(v > 0 for _, v in by_job[j]):
            rows.add_row([c for c, _ in prefix], [v for _, v in prefix], -INF, 0, f"{name}.prefix[{j}]", "count")
