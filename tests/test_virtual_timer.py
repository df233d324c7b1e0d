"""The agent's clock in a replay: it polls when the wall clock would, and skips only polls where nothing changed."""

from __future__ import annotations

import math

from wattplan.planner.agent.node_settings import Clock
from wattplan.planner.control.virtual_timer import VirtualTimer


class Events:
    """A cluster whose only events are the given emulated times; it records every advance."""

    def __init__(self, events: list[float]) -> None:
        self.now_s = 0.0
        self.events = sorted(events)
        self.advances: list[float] = []

    def next_event_s(self) -> float:
        return next((e for e in self.events if e > self.now_s), math.inf)

    def advance_to(self, t_s: float) -> None:
        assert t_s >= self.now_s
        self.now_s = t_s
        self.advances.append(t_s)


def test_a_wait_without_events_jumps_to_the_deadline_in_one_step() -> None:
    cluster = Events([])
    timer = VirtualTimer(cluster, Clock(1000.0, 30.0))
    assert timer.unix() == 1000.0
    changed = timer.wait_for_round(1012.0, 1001.2, 1.0, lambda: True, lambda: False)
    assert not changed
    assert cluster.advances == [360.0]  # 12 real seconds at 30 emulated seconds each


def test_the_first_poll_after_an_event_sees_it_on_the_wall_timers_grid() -> None:
    cluster = Events([100.0])  # emulated s: 3.33 real s after the wait starts
    seen: list[float] = []
    timer = VirtualTimer(cluster, Clock(0.0, 30.0))

    def changed() -> bool:
        seen.append(cluster.now_s)
        return cluster.now_s >= 100.0

    assert timer.wait_for_round(12.0, 1.2, 1.0, changed, lambda: False)
    assert seen == [120.0]  # the poll at 4 real s (1, 2, 3 s are skipped: nothing happened before 3.33 s)


def test_no_poll_before_earliest_and_none_without_event_rounds() -> None:
    cluster = Events([15.0])
    timer = VirtualTimer(cluster, Clock(0.0, 30.0))
    polls: list[float] = []
    assert timer.wait_for_round(12.0, 6.0, 1.0, lambda: polls.append(cluster.now_s) or True, lambda: False)
    assert polls == [180.0]  # the event came at 0.5 s; the first poll allowed is at earliest = 6 s
    cluster = Events([15.0])
    timer = VirtualTimer(cluster, Clock(0.0, 30.0))
    assert not timer.wait_for_round(12.0, None, 1.0, lambda: True, lambda: False)
    assert cluster.advances == [360.0]


def test_an_event_that_changes_nothing_is_polled_once_and_the_wait_goes_on() -> None:
    cluster = Events([40.0, 200.0])
    timer = VirtualTimer(cluster, Clock(0.0, 10.0))
    polls: list[float] = []

    def changed() -> bool:
        polls.append(cluster.now_s)
        return cluster.now_s >= 200.0

    assert timer.wait_for_round(60.0, 0.0, 1.0, changed, lambda: False)
    assert polls == [40.0, 200.0]


def test_sleep_advances_by_real_seconds_times_the_scale_and_a_stop_ends_the_wait() -> None:
    cluster = Events([])
    timer = VirtualTimer(cluster, Clock(0.0, 30.0))
    timer.sleep(0.3)
    assert math.isclose(cluster.now_s, 9.0)
    assert not timer.wait_for_round(100.0, 0.0, 1.0, lambda: True, lambda: True)
    assert math.isclose(cluster.now_s, 9.0)
