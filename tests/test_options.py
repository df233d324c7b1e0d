"""The columnar option enumeration against a plain scalar one, option by option.

The reference below walks jobs, partner types, GPU types, counts, settings and sides one at a
time through :func:`planner.core.economics.job_outcome` (the scalar arithmetic the validator also
uses) and prunes as the module docstring of :mod:`formulations.options` says. The vectorised
enumeration must give the same options, in the same order, with bit-identical progress and
energy, and the same pruning counts. Rounds with asymmetric same-type pairs exercise the
ordered slots.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.random_instances import tiny_rounds
from wattplan.formulations.options import Slot, enumerate_options
from wattplan.formulations.round_model import build_round_model
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.core.economics import exclusive_outcomes, job_outcome, usable_pair_rates
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.files.resources import DEFAULT_INSTANCE_NAME, shipped

Exclusive = tuple[int, str, int, int, float, float]
PairSide = tuple[int, str, Slot, int, float, float]


def reference_exclusive(inst: Instance) -> tuple[list[Exclusive], int, int]:
    """Exclusive options with progress, undominated within (job, GPU type); zero-progress and dominated counts."""
    options: list[Exclusive] = []
    zero = 0
    for j, job in enumerate(inst.jobs):
        for g, n, s, o in exclusive_outcomes(inst, job):
            if o.progress <= 0:
                zero += 1
            else:
                options.append((j, g.name, n, s, job.weight * o.progress, o.energy_j))

    def dominates(a: Exclusive, b: Exclusive) -> bool:
        return a[0] == b[0] and a[1] == b[1] and a[2] <= b[2] and a[4] >= b[4] and a[5] <= b[5]

    kept = [
        o
        for i, o in enumerate(options)
        if not any(dominates(p, o) and (k < i or not dominates(o, p)) for k, p in enumerate(options) if k != i)
    ]
    return kept, zero, len(options) - len(kept)


def reference_pair_sides(inst: Instance) -> tuple[list[PairSide], int]:
    """Balanceable pair sides in job, partner type, GPU type, count, setting, side order; zero-progress count."""
    types = sorted({job.type for job in inst.jobs})
    sides: list[PairSide] = []
    zero = 0
    for j, job in enumerate(inst.jobs):
        for partner in types:
            a, b = sorted((job.type, partner))
            for g in inst.gpu_types:
                for n in job.gpus:
                    rates = usable_pair_rates(inst, job.type, partner, g, n)
                    if rates is None:
                        continue
                    ordered = job.type == partner and rates[0] != rates[1]
                    choices = [(0, rates[0]), (1, rates[1])] if ordered else [(0 if job.type == a else 1, rates[0])]
                    for s in g.settings:
                        for side, rho in choices:
                            o = job_outcome(inst, job, g, n, s, rho)
                            if o is None:
                                continue
                            if o.progress <= 0:
                                zero += 1
                                continue
                            sides.append(
                                (j, partner, Slot(a, b, g.name, n, s), side, job.weight * o.progress, o.energy_j)
                            )
    members: dict[Slot, list[set[int]]] = {}
    for j, _, slot, side, _, _ in sides:
        members.setdefault(slot, [set(), set()])[side].add(j)
    kept = [
        p
        for p in sides
        if (len(members[p[2]][0] | members[p[2]][1]) >= 2 if p[2].same_type else bool(members[p[2]][1 - p[3]]))
    ]
    return kept, zero


def with_asymmetric_same_type_pairs(inst: Instance) -> Instance:
    """The round with every same-type pair entry made asymmetric (``rho_b = 0.9 rho_a``): ordered slots."""
    pairs = tuple(replace(p, rho_b=round(0.9 * p.rho_a, 6)) if p.a == p.b else p for p in inst.pairs)
    return replace(inst, pairs=pairs)


def check_against_reference(inst: Instance) -> None:
    opts = enumerate_options(inst)
    exclusive, zero_x, dominated = reference_exclusive(inst)
    pair_sides, zero_z = reference_pair_sides(inst)
    got_x = [(o.job, o.gpu_type, o.gpus, o.setting, o.progress, o.energy_j) for o in opts.exclusive]
    got_z = [(p.job, p.partner_type, p.slot, p.side, p.progress, p.energy_j) for p in opts.pair_sides]
    assert got_x == exclusive
    assert got_z == pair_sides
    assert opts.pruned["zero_progress"] == zero_x + zero_z
    assert opts.pruned["dominated_exclusive"] == dominated
    assert opts.ordered == {p[2] for p in pair_sides if p[2].same_type and p[3] == 1}
    # the slots are listed in order of first use
    first_use = list(dict.fromkeys(p[2] for p in pair_sides))
    assert list(opts.slot_list) == first_use


@settings(max_examples=60, deadline=None)
@given(tiny_rounds(max_jobs=6), st.booleans())
def test_columnar_enumeration_equals_the_scalar_one(inst: Instance, asymmetric: bool) -> None:
    check_against_reference(with_asymmetric_same_type_pairs(inst) if asymmetric else inst)


def test_default_round_enumeration_equals_the_scalar_one() -> None:
    check_against_reference(load_instance(shipped(DEFAULT_INSTANCE_NAME)))


@settings(max_examples=30, deadline=None)
@given(tiny_rounds(max_jobs=6))
def test_encode_decode_round_trip_on_ordered_slots(inst: Instance) -> None:
    """A decoded solution re-encodes to the same columns (pairs rebuilt slot by slot), ordered slots included."""
    inst = with_asymmetric_same_type_pairs(inst)
    rm = build_round_model(inst)
    v = rm.encode(greedy_allocations(inst))
    assert rm.lm.is_feasible(v)
    again = rm.encode(rm.decode(v))
    assert (again == v).all()
