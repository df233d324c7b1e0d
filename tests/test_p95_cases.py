"""The p95 limit's cases (planner/sim/p95_cases.py): every schedule that keeps the limit is admitted by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattplan.planner.sim.p95_cases import p95_cases

HAND_LEAST = {**{f"s{i}": 1.0 for i in range(9)}, "x": 5.0, "y": 8.0}


def test_the_cases_of_eleven_jobs_by_hand() -> None:
    """N = 11: k = 9, f = 0.5, one job may exceed ``J_(9)``, none ``B``. ``m_(9) = 5``; long: x (5 s) and y (8 s).

    ``[5, 10]`` is cut at y's 8 s. In ``[5, 8]`` (``B(5) = 15``): x late (within 15, y within 8), y late (within 15,
    x within 8), or neither (both within 8, one short job past 8, none past 15). In ``[8, 10]`` (``B(8) = 12``) the
    same with 10 and 12.
    """
    cases = p95_cases(10.0, HAND_LEAST, split_outer=True)
    got = {
        (
            c.interval_s,
            tuple((j, round(w, 6)) for j, w in sorted(c.within_s.items())),
            c.free,
            c.short_late,
            c.short_outer_late,
        )
        for c in cases
    }
    assert got == {
        ((5.0, 8.0), (("x", 15.0), ("y", 8.0)), (), 0, 0),
        ((5.0, 8.0), (("x", 8.0), ("y", 15.0)), (), 0, 0),
        ((5.0, 8.0), (("x", 8.0), ("y", 8.0)), (), 1, 0),
        ((8.0, 10.0), (("x", 12.0), ("y", 10.0)), (), 0, 0),
        ((8.0, 10.0), (("x", 10.0), ("y", 12.0)), (), 0, 0),
        ((8.0, 10.0), (("x", 10.0), ("y", 10.0)), (), 1, 0),
    }
    assert all(c.short_window_s == pytest.approx(c.interval_s[1], rel=1e-6) for c in cases)


def test_finer_cuts_reject_a_p95_over_the_limit() -> None:
    """JCTs 1 (nine jobs), 10 and 12: p95 11 > 10.

    The coarse cases admit them (x within 10, y within 12); cut every 0.02 s, the case of ``[9.98, 10]`` has
    ``B = 10.02`` and every earlier one has both past its ``a_i``.
    """
    jct = {**{f"s{i}": 1.0 for i in range(9)}, "x": 10.0, "y": 12.0}
    assert float(np.percentile(list(jct.values()), 95)) > 10.0
    assert any(c.admits(jct) for c in p95_cases(10.0, HAND_LEAST))
    assert not any(c.admits(jct) for c in p95_cases(10.0, HAND_LEAST, pieces=250))


def test_no_case_when_the_least_jcts_exceed_the_limit() -> None:
    assert p95_cases(4.0, HAND_LEAST) == []


@settings(max_examples=300, deadline=None)
@given(
    least=st.lists(st.floats(1.0, 100.0), min_size=2, max_size=45),
    stretch=st.lists(st.one_of(st.floats(1.0, 3.0), st.floats(1.0, 300.0)), min_size=45, max_size=45),
    slack=st.floats(1.0, 1.3),
    pieces=st.integers(1, 4),
    split=st.booleans(),
)
@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_every_schedule_within_the_limit_is_admitted(
    least: list[float], stretch: list[float], slack: float, pieces: int, split: bool
) -> None:
    """Any JCTs at least their least JCTs, with a p95 within ``P``, keep some case's windows and counts."""
    m = {f"j{i}": v for i, v in enumerate(least)}
    jct = {j: v * stretch[i] for i, (j, v) in enumerate(m.items())}
    limit = float(np.percentile(list(jct.values()), 95)) * slack
    cases = p95_cases(limit, m, pieces, split)
    assert any(c.admits(jct) for c in cases)


@pytest.mark.parametrize("split", [False, True])
def test_a_short_job_past_b_beside_a_long_one_past_its_window(split: bool) -> None:
    """N = 31: k = 28, f = 0.5, two jobs may exceed ``J_(28)``, one ``B``. Least JCTs: 28 jobs 1 s, x, y, z 10 s.

    JCTs: 27 jobs 1 s, s 100 s, x and y 10 s, z 25 s: p95 = (10 + 25) / 2 = 17.5 within 20. With ``J_(28) = 10``
    in ``[10, 20]`` (``B = 30``), z is past 20 but within 30 and the short job s past 30: only a case that frees z
    and lets one short job past ``B`` admits them.
    """
    least = {**{f"s{i}": 1.0 for i in range(28)}, "x": 10.0, "y": 10.0, "z": 10.0}
    jct = {**{f"s{i}": 1.0 for i in range(27)}, "s27": 100.0, "x": 10.0, "y": 10.0, "z": 25.0}
    assert float(np.percentile(list(jct.values()), 95)) == pytest.approx(17.5)
    assert any(c.admits(jct) for c in p95_cases(20.0, least, split_outer=split))
