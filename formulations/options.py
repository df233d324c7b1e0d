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

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from planner.domain import Instance
from planner.economics import exclusive_outcomes, job_outcome, usable_pair_rates


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


@dataclass
class OptionSet:
    """Everything the round model is built from, with pruning counts."""

    exclusive: list[ExclusiveOption]
    pair_sides: list[PairSideOption]
    pruned: dict[str, int] = field(default_factory=dict)
    enumerated: dict[str, int] = field(default_factory=dict)

    def slots(self) -> dict[Slot, list[list[int]]]:
        """Per slot, the indices (into ``pair_sides``) of its side-0 and side-1 options."""
        out: dict[Slot, list[list[int]]] = defaultdict(lambda: [[], []])
        for i, p in enumerate(self.pair_sides):
            out[p.slot][p.side].append(i)
        return dict(out)


def _exclusive(instance: Instance) -> tuple[list[ExclusiveOption], int]:
    """Exclusive options with progress, and the count of those without."""
    out: list[ExclusiveOption] = []
    zero = 0
    for j, job in enumerate(instance.jobs):
        for g, n, s, o in exclusive_outcomes(instance, job):
            if o.progress <= 0:
                zero += 1
                continue
            out.append(ExclusiveOption(j, g.name, n, s, job.weight * o.progress, o.energy_j))
    return out, zero


def _dominates(a: ExclusiveOption, b: ExclusiveOption) -> bool:
    return a.gpus <= b.gpus and a.progress >= b.progress and a.energy_j <= b.energy_j


def prune_dominated(options: list[ExclusiveOption]) -> list[ExclusiveOption]:
    """Drop options dominated within (job, GPU type); the first of equal options stays."""
    groups: dict[tuple[int, str], list[ExclusiveOption]] = defaultdict(list)
    for o in options:
        groups[(o.job, o.gpu_type)].append(o)
    kept = []
    for group in groups.values():
        for i, o in enumerate(group):
            beaten = any(_dominates(p, o) and (k < i or not _dominates(o, p)) for k, p in enumerate(group) if k != i)
            if not beaten:
                kept.append(o)
    return kept


def _pair_sides(instance: Instance) -> tuple[list[PairSideOption], int]:
    """Pair-side options for every job and partner type whose entry passes ``min_pair_rate``."""
    types = sorted({job.type for job in instance.jobs})
    out, zero = [], 0
    for j, job in enumerate(instance.jobs):
        for partner_type in types:
            a, b = sorted((job.type, partner_type))
            for g in instance.gpu_types:
                for n in job.gpus:
                    rates = usable_pair_rates(instance, job.type, partner_type, g, n)
                    if rates is None:
                        continue
                    if job.type == partner_type and rates[0] != rates[1]:
                        # Ordered slot: the job listed first gets rho_a (side 0), the other rho_b.
                        choices = [(0, rates[0]), (1, rates[1])]
                    else:
                        choices = [(0 if job.type == a else 1, rates[0])]
                    for s in g.settings:
                        for side, rho in choices:
                            o = job_outcome(instance, job, g, n, s, rho)
                            if o is None:
                                continue
                            if o.progress <= 0:
                                zero += 1
                                continue
                            out.append(
                                PairSideOption(
                                    j, partner_type, Slot(a, b, g.name, n, s), side, job.weight * o.progress, o.energy_j
                                )
                            )
    return out, zero


def _balanceable(sides: list[PairSideOption], instance: Instance) -> list[PairSideOption]:
    """Keep pair sides whose slot can pair them with at least one other job."""
    members: dict[Slot, list[set[int]]] = defaultdict(lambda: [set(), set()])
    for p in sides:
        members[p.slot][p.side].add(p.job)
    # A job needs a profile for its partner too: a slot side lists only jobs that can run there.
    keep = []
    for p in sides:
        if p.slot.same_type:
            ok = len(members[p.slot][0] | members[p.slot][1]) >= 2
        else:
            ok = bool(members[p.slot][1 - p.side])
        if ok:
            keep.append(p)
    return keep


def enumerate_options(instance: Instance) -> OptionSet:
    """All useful options of the round, after the safe pruning of the module docstring."""
    exclusive, zero_x = _exclusive(instance)
    kept = prune_dominated(exclusive)
    sides, zero_z = _pair_sides(instance)
    balanced = _balanceable(sides, instance)
    return OptionSet(
        exclusive=kept,
        pair_sides=balanced,
        enumerated={"exclusive": len(exclusive) + zero_x, "pair_sides": len(sides) + zero_z},
        pruned={
            "zero_progress": zero_x + zero_z,
            "dominated_exclusive": len(exclusive) - len(kept),
            "unbalanceable_pair_sides": len(sides) - len(balanced),
        },
    )
