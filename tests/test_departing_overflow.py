"""The reflected overflow with the running jobs' departures, by hand (planner/agent/departing_overflow.py)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from wattplan.planner.agent.departing_overflow import departing_overflow_shares
from wattplan.planner.agent.node_power import demand_cdf, overflow_shares


def _poisson(k: int, mean: float) -> float:
    return math.exp(-mean) * mean**k / math.factorial(k)


def test_one_departure_halfway_by_hand() -> None:
    """1-GPU jobs, mu = 2 a cycle; one GPU freed at c / 2. ``X``, ``Y``: the arrivals of each half, Poisson(1).

    ``M = max(X, X + Y - 1) = X + (Y - 1)+``, so ``E[U(0)] = E[M] = 1 + E[(Y - 1)+] = 1 + e^-1`` and the share is
    ``(1 + e^-1) / 2 = 0.683940``; ``E[U(1)] = E[(X + (Y - 1)+ - 1)+]`` summed over both laws. Without the
    departure the share at 0 free GPUs is 1.
    """
    shares = departing_overflow_shares(Counter({1: 5}), 2.0, 100.0, [(50.0, 1)], 3)
    assert shares[0] == pytest.approx((1 + math.exp(-1)) / 2, rel=1e-9)
    by_sum = sum(_poisson(x, 1) * _poisson(y, 1) * max(0, x + max(0, y - 1) - 1) for x in range(40) for y in range(40))
    assert shares[1] == pytest.approx(by_sum / 2, rel=1e-9)
    assert departing_overflow_shares(Counter({1: 5}), 2.0, 100.0, [], 3)[0] == pytest.approx(1.0)


def test_without_departures_within_the_cycle_it_is_the_panjer_share() -> None:
    sizes = Counter({1: 10, 2: 5, 4: 3, 8: 2})
    mean = 12.0 * sum(g * n for g, n in sizes.items()) / sum(sizes.values())
    panjer = overflow_shares(demand_cdf(sizes, 12.0, 60), mean)
    for departures in ([], [(360.0, 8), (400.0, 4)]):  # at or after the cycle's end: none counts
        shares = departing_overflow_shares(sizes, 12.0, 360.0, departures, 60)
        assert shares == pytest.approx(panjer[:61], abs=1e-8)


def test_departures_never_raise_the_share_and_earlier_ones_help_more() -> None:
    sizes = Counter({1: 10, 2: 5, 4: 3, 8: 2})
    none = departing_overflow_shares(sizes, 12.0, 360.0, [], 60)
    late = departing_overflow_shares(sizes, 12.0, 360.0, [(300.0, 8)], 60)
    early = departing_overflow_shares(sizes, 12.0, 360.0, [(30.0, 8)], 60)
    for c in range(61):
        assert early[c] <= late[c] + 1e-12 <= none[c] + 2e-12
    assert early[20] < late[20] < none[20]
