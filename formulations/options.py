"""Option enumeration and safe pruning (docs/design.md §3.2 and §3.7).

Exclusive options ``o = (j, g, n, s)`` are enumerated as the design says. Pairs are not
enumerated job by job: a job's outcome in a pair depends only on its partner's *type*
(the slowdown ``rho``), the GPU type, count and setting, never on which job the partner
is. So each job gets *pair-side* options ``(j, B, g, n, s)``: "``j`` shares ``n`` GPUs of
``g`` at ``s`` with some job of type ``B``". The model then asks, per pair slot
``(A, B, g, n, s)``, that as many type-``A`` jobs sit on the ``A`` side as type-``B`` jobs
on the ``B`` side (or an even number when ``A = B``); any such assignment decomposes into
actual pairs with exactly the same progress, energy and GPU use, so the compact model is
exact while its size grows with jobs x types instead of jobs squared.

A same-type entry with ``rho_a != rho_b`` makes the order matter (the job listed first gets
``rho_a``): such an *ordered* slot has a first side (0) and a second side (1), equal counts,
and for every prefix of the type's jobs in instance order no more second-side than
first-side jobs, so the k-th first-side job can pair with the k-th second-side job.

Enumeration is columnar: every option is a row of NumPy arrays (job, GPU type, count,
setting, progress, energy; pair sides add partner type, slot and side), computed a whole
group of interchangeable jobs at a time (same type and allowed counts) from one profile
lookup per ``(g, n, s)``; the arithmetic is :func:`planner.core.economics.job_outcome`'s, in the
same order of operations, so each value is bit-for-bit the scalar one. Options come out in
the order job, (partner type,) GPU type, count (as the job lists them), setting, side. The
option objects (:attr:`OptionSet.exclusive`, :attr:`OptionSet.pair_sides`) are made only when
asked for; the model is built from the arrays.

A job with a tail bound (``min_steps > 0``) has only the options that give it at least ``min_steps``
steps (a constraint of the round, not a pruning; they are counted with the zero-progress ones), and the
model makes it run (:mod:`formulations.round_model`'s ``must_run`` rows). A job with a slowdown limit
(``min_rate > 0``) has only the options, exclusive or pair sides, whose rate ``rho X`` is at least ``min_rate``
(also a constraint of the round); it may still wait.

Pruning here never loses an optimum:

* options with zero progress (no time left after the restart, or a zero rate): waiting
  is at least as good (no energy, no GPUs);
* an exclusive option is dominated by another of the same job and GPU type that uses no
  more GPUs, makes at least as much progress and uses no more dynamic energy (capacity is
  counted per GPU type, so fewer GPUs never hurts); ties keep the first in enumeration order;
* pair-side options whose slot can never be balanced (no candidate on the other side,
  or fewer than two candidates for a same-type slot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import NamedTuple, Self, TypeVar

import numpy as np

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.core.economics import usable_pair_rates
from wattplan.planner.core.economics_batched import (
    JobGroup,
    allowed,
    exclusive_outcomes,
    grid_outcomes,
    job_groups,
    option_rows,
)


class Slot(NamedTuple):
    """A pair slot: two jobs sharing the GPUs of one GPU type at one setting.

    A type-``type_a`` and a type-``type_b`` job (``type_a <= type_b``) sharing
    ``gpus`` GPUs of ``gpu_type`` at ``setting``.
    """

    type_a: str
    type_b: str
    gpu_type: str
    gpus: int
    setting: int

    @property
    def same_type(self) -> bool:
        """True when both jobs of the slot are of one type (``A = B``)."""
        return self.type_a == self.type_b


Member = TypeVar("Member")


def match_slot(
    slot: Slot, ordered: bool, first: Sequence[Member], second: Sequence[Member]
) -> list[tuple[Member, Member]]:
    """Pair up the members of one slot, each side already in the caller's preferred order.

    A symmetric same-type slot (``A = B``, not ordered) keeps all its members on side 0 and
    pairs them two by two (1st with 2nd, 3rd with 4th, ...); any other slot pairs the k-th
    member of side 0 with the k-th member of side 1. Unmatched members are dropped.
    """
    if slot.same_type and not ordered:
        return list(zip(first[0::2], first[1::2], strict=False))
    return list(zip(first, second, strict=False))


@dataclass(frozen=True, slots=True)
class ExclusiveOption:
    """Job ``job`` alone on ``gpus`` GPUs of ``gpu_type`` at ``setting``."""

    job: int  # index into instance.jobs
    gpu_type: str
    gpus: int
    setting: int
    progress: float  # w_j * pi (weighted)
    energy_j: float  # dynamic energy n * (P - Pidle) * sigma / X (J)


@dataclass(frozen=True, slots=True)
class PairSideOption:
    """Job ``job`` sharing its GPUs with a job of type ``partner_type`` (slot ``slot``)."""

    job: int
    partner_type: str
    slot: Slot
    side: int  # 0: the job is of the slot's type A, 1: of type B; A = B: 0 unless the slot is ordered
    progress: float
    energy_j: float

    @property
    def gpu_type(self) -> str:
        """GPU type of the slot."""
        return self.slot.gpu_type

    @property
    def gpus(self) -> int:
        """GPU count of the slot (the pair's GPUs, counted once)."""
        return self.slot.gpus

    @property
    def setting(self) -> int:
        """Setting of the slot's GPUs."""
        return self.slot.setting


class _Columns:
    """Rows of equal-length NumPy columns (the dataclass fields): their count and a selection."""

    def __len__(self) -> int:
        return len(getattr(self, fields(self)[0].name))  # type: ignore[arg-type]

    def take(self, index: np.ndarray) -> Self:
        """The rows at ``index`` (a boolean mask or positions), in that order."""
        return type(self)(*(getattr(self, f.name)[index] for f in fields(self)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ExclusiveTable(_Columns):
    """Exclusive options as columns.

    Option ``i`` is job ``job[i]`` alone on ``gpus[i]`` GPUs of GPU type ``gpu[i]`` (an index into
    :attr:`OptionSet.gpu_names`) at ``setting[i]``, with weighted progress and dynamic energy (J).
    """

    job: np.ndarray
    gpu: np.ndarray
    gpus: np.ndarray
    setting: np.ndarray
    progress: np.ndarray
    energy_j: np.ndarray


@dataclass(frozen=True)
class PairSideTable(_Columns):
    """Pair-side options as columns.

    Option ``i`` is job ``job[i]`` on side ``side[i]`` of slot ``slot[i]`` (an index into
    :attr:`OptionSet.slot_list`), sharing with a job of type ``partner[i]`` (into :attr:`OptionSet.types`).
    """

    job: np.ndarray
    partner: np.ndarray
    slot: np.ndarray
    side: np.ndarray
    progress: np.ndarray
    energy_j: np.ndarray


@dataclass
class OptionSet:
    """Everything the round model is built from (columnar), with pruning counts.

    ``gpu_names`` and ``types`` name the GPU-type and partner-type indices of the tables;
    ``slot_list`` lists the slots in order of first use by ``pair_table``; ``ordered`` marks the
    slots whose two same-type members get different slowdowns (module docstring).
    """

    gpu_names: tuple[str, ...]
    types: tuple[str, ...]
    exclusive_table: ExclusiveTable
    pair_table: PairSideTable
    slot_list: tuple[Slot, ...]
    ordered: frozenset[Slot] = frozenset()
    pruned: dict[str, int] = field(default_factory=dict)
    enumerated: dict[str, int] = field(default_factory=dict)

    @cached_property
    def exclusive(self) -> list[ExclusiveOption]:
        """The exclusive options as objects (made on first use)."""
        t = self.exclusive_table
        return [
            ExclusiveOption(int(j), self.gpu_names[g], int(n), int(s), float(p), float(e))
            for j, g, n, s, p, e in zip(
                t.job.tolist(), t.gpu.tolist(), t.gpus.tolist(), t.setting.tolist(), t.progress, t.energy_j, strict=True
            )
        ]

    @cached_property
    def pair_sides(self) -> list[PairSideOption]:
        """The pair-side options as objects (made on first use)."""
        t = self.pair_table
        return [
            PairSideOption(int(j), self.types[b], self.slot_list[q], int(side), float(p), float(e))
            for j, b, q, side, p, e in zip(
                t.job.tolist(),
                t.partner.tolist(),
                t.slot.tolist(),
                t.side.tolist(),
                t.progress,
                t.energy_j,
                strict=True,
            )
        ]


def _exclusive(instance: Instance) -> tuple[ExclusiveTable, int]:
    """Exclusive options with progress (job, then GPU type, count as listed, setting) and the zero-progress count.

    Read from :func:`planner.core.economics_batched.exclusive_outcomes` (the greedy reads the same columns).
    """
    x = exclusive_outcomes(instance)
    keep = x.keep
    zero = len(keep) - int(keep.sum())
    cols = [c[keep] for c in (x.job, x.gpu, x.gpus, x.setting, x.progress, x.energy_j, x.count_pos, x.setting_pos)]
    order = np.lexsort((cols[7], cols[6], cols[1], cols[0]))
    return ExclusiveTable(*(c[order] for c in cols[:6])), zero


def _concat(parts: list[tuple[np.ndarray, ...]], width: int) -> list[np.ndarray]:
    """Column-wise concatenation of ``parts`` (``width`` empty columns when there are none)."""
    if not parts:
        return [np.zeros(0, dtype=np.int64) for _ in range(width)]
    return [np.concatenate([p[c] for p in parts]) for c in range(width)]


def prune_dominated(table: ExclusiveTable) -> np.ndarray:
    """A mask of the options that no other option of the same job and GPU type dominates.

    ``a`` dominates ``b`` when ``n_a <= n_b``, ``pi_a >= pi_b`` and ``e_a <= e_b``; of two options
    that dominate each other the first (in table order) stays.
    """
    keep = np.ones(len(table), dtype=bool)
    if not len(table):
        return keep
    key = table.job * (int(table.gpu.max()) + 1) + table.gpu
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    bounds = np.r_[starts, len(table)]
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if hi - lo < 2:
            continue
        n, p, e = table.gpus[lo:hi], table.progress[lo:hi], table.energy_j[lo:hi]
        dom = (n[:, None] <= n[None, :]) & (p[:, None] >= p[None, :]) & (e[:, None] <= e[None, :])  # dom[a, b]
        np.fill_diagonal(dom, False)
        earlier = np.tri(hi - lo, k=-1, dtype=bool).T  # earlier[a, b]: a before b
        beaten = dom & (earlier | ~dom.T)
        keep[lo:hi] = ~beaten.any(axis=0)
    return keep


def _pair_sides(instance: Instance, groups: list[JobGroup], types: tuple[str, ...]) -> tuple[list[np.ndarray], int]:
    """Pair-side options for every job and partner type whose entry passes ``min_pair_rate``.

    Columns: job, partner index, slot key parts (type a index, type b index, GPU index, count,
    setting), side, progress, energy, and the sort keys (count position, setting index).
    Each group's options are computed in one :func:`~planner.core.economics_batched.grid_outcomes` call.
    """
    parts: list[list[np.ndarray]] = []
    zero = 0
    for group in groups:
        part = _group_pair_sides(instance, group, types)
        if part is not None:
            zero += len(part[-1]) - int(part[-1].sum())
            keep = part.pop()
            parts.append([c[keep] for c in part])
    cols = _concat([tuple(p) for p in parts], 12)
    order = np.lexsort((cols[7], cols[11], cols[10], cols[4], cols[1], cols[0]))
    return [c[order] for c in cols], zero


def _group_pair_sides(instance: Instance, group: JobGroup, types: tuple[str, ...]) -> list[np.ndarray] | None:
    """One group's pair sides, every member of every option (the 12 columns of :func:`_pair_sides` and a keep mask).

    Options in the order partner type, GPU type, count (as listed), setting, side; each option's members in turn.
    None when the group has no pair side at all.
    """
    type_index = {t: i for i, t in enumerate(types)}
    keys: list[tuple[int, int, int, int, int, int, int, int, int]] = []  # bi, a, b, gi, n, s, side, k, si
    rate_l: list[float] = []
    x_l: list[float] = []
    coef_l: list[float] = []
    for bi, partner_type in enumerate(types):
        a, b = sorted((group.type, partner_type))
        for gi, g in enumerate(instance.gpu_types):
            for k, n in enumerate(group.counts):
                rates = usable_pair_rates(instance, group.type, partner_type, g, n)
                if rates is None:
                    continue
                if group.type == partner_type and rates[0] != rates[1]:
                    # Ordered slot: the job listed first gets rho_a (side 0), the other rho_b.
                    choices = [(0, rates[0]), (1, rates[1])]
                else:
                    choices = [(0 if group.type == a else 1, rates[0])]
                for si, s in enumerate(g.settings):
                    prof = instance.profile(group.type, g.name, n, s)
                    if prof is None:
                        continue
                    for side, rho in choices:
                        keys.append((bi, type_index[a], type_index[b], gi, n, s, side, k, si))
                        rate_l.append(rho * prof.steps_per_s)
                        x_l.append(prof.steps_per_s)
                        coef_l.append(n * (prof.power_w - g.idle_power_w))
    if not keys:
        return None
    key = np.array(keys, dtype=np.int64)
    rows = option_rows(key[:, 3], key[:, 4], rate_l, x_l, coef_l)
    progress, energy = grid_outcomes(instance, group, rows)
    m = len(group.index)
    per_row = [np.repeat(key[:, c], m) for c in range(key.shape[1])]  # bi, a, b, gi, n, s, side, k, si
    return [
        np.tile(group.index, len(keys)),
        *per_row[:7],
        progress.ravel(),
        energy.ravel(),
        per_row[7],
        per_row[8],
        allowed(progress, group, rows.rate).ravel(),
    ]


def _distinct(codes: np.ndarray) -> np.ndarray:
    """The distinct values of ``codes``, ascending (a sort: NumPy's hashing ``unique`` is slower here)."""
    s = np.sort(codes)
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s


def _balanceable(job: np.ndarray, slot: np.ndarray, side: np.ndarray, same_type: np.ndarray) -> np.ndarray:
    """A mask of the pair sides whose slot can pair them with at least one other job.

    Same-type slot: at least two distinct jobs over both sides; otherwise at least one job on
    the other side. (A slot side lists only jobs that can run there.)
    """
    if not len(job):
        return np.zeros(0, dtype=bool)
    nslots, njobs = int(slot.max()) + 1, int(job.max()) + 1
    members = _distinct((slot * 2 + side) * njobs + job) // njobs  # one entry per (slot, side, job)
    per_side = np.bincount(members, minlength=2 * nslots).reshape(nslots, 2)
    per_slot = np.bincount(_distinct(slot * njobs + job) // njobs, minlength=nslots)
    other = per_side[slot, 1 - side]
    return np.where(same_type[slot], per_slot[slot] >= 2, other > 0)


def enumerate_options(instance: Instance) -> OptionSet:
    """All useful options of the round, after the safe pruning of the module docstring."""
    groups = job_groups(instance)
    gpu_names = tuple(g.name for g in instance.gpu_types)
    types = tuple(sorted({job.type for job in instance.jobs}))
    exclusive, zero_x = _exclusive(instance)
    kept = exclusive.take(prune_dominated(exclusive))
    cols, zero_z = _pair_sides(instance, groups, types)
    job, partner, ta, tb, gi, n, s, side, progress, energy = cols[:10]
    # Slots are numbered in order of first use (the order the model lists them in).
    parts = (ta, tb, gi, n, s)
    radix = [int(c.max()) + 1 if len(c) else 1 for c in parts]
    key = np.zeros(len(job), dtype=np.int64)
    for c, r in zip(parts, radix, strict=True):
        key = key * r + c
    codes, inverse = np.unique(key, return_inverse=True)
    uniq = np.zeros((5, len(codes)), dtype=np.int64)
    rest = codes.copy()
    for d in range(4, -1, -1):
        rest, uniq[d] = np.divmod(rest, radix[d])
    same_type = uniq[0] == uniq[1]
    ok = _balanceable(job, inverse.ravel(), side, same_type)
    # Renumber the slots that keep members by first use among the kept pair sides.
    kept_slot = inverse.ravel()[ok]
    used, first_kept = np.unique(kept_slot, return_index=True)
    by_first = used[np.argsort(first_kept, kind="stable")]
    renumber = np.full(uniq.shape[1], -1, dtype=np.int64)
    renumber[by_first] = np.arange(len(by_first))
    slot_list = tuple(
        Slot(
            types[int(uniq[0, q])], types[int(uniq[1, q])], gpu_names[int(uniq[2, q])], int(uniq[3, q]), int(uniq[4, q])
        )
        for q in by_first.tolist()
    )
    pair_table = PairSideTable(job[ok], partner[ok], renumber[kept_slot], side[ok], progress[ok], energy[ok])
    ordered = frozenset(
        slot_list[q] for q in _distinct(pair_table.slot[pair_table.side == 1]).tolist() if slot_list[q].same_type
    )
    return OptionSet(
        gpu_names=gpu_names,
        types=types,
        exclusive_table=kept,
        pair_table=pair_table,
        slot_list=slot_list,
        ordered=ordered,
        enumerated={"exclusive": len(exclusive) + zero_x, "pair_sides": len(job) + zero_z},
        pruned={
            "zero_progress": zero_x + zero_z,
            "dominated_exclusive": len(exclusive) - len(kept),
            "unbalanceable_pair_sides": len(job) - int(ok.sum()),
        },
    )
