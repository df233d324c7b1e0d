"""The agent's clock in a replay: a simulated Slurm's virtual time, which jumps from one event to the next.

:class:`VirtualTimer` is a :class:`planner.agent.timing.Timer`. Its Unix time is the simulated cluster's emulated
time through the cluster's :class:`~planner.agent.node_settings.Clock` (``unix = t0_unix + emulated_s / scale``),
so the loop converts it back exactly as it converts the wall clock on an emulated cluster. A sleep advances the
cluster by that many real seconds (``scale`` times as many emulated ones). A wait for the next round asks the
loop's ``changed`` at exactly the instants the wall timer would (every ``poll_s`` from ``earliest``) but skips
every poll before the cluster's next event, where nothing can have changed: the replay takes the same rounds at
the same times as the live loop on a cluster that behaved the same, in the time the events take to compute.

Nothing here reads the machine's clock or sleeps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from wattplan.planner.agent.node_settings import Clock


class EventClock(Protocol):
    """What the timer moves: a cluster on emulated seconds that knows its next event."""

    @property
    def now_s(self) -> float:
        """The emulated time now (s)."""
        ...

    def next_event_s(self) -> float:
        """The next emulated time at which anything changes (``math.inf``: nothing will)."""
        ...

    def advance_to(self, t_s: float) -> None:
        """Play every event up to the emulated time ``t_s``."""
        ...


class NoMoreEvents(RuntimeError):
    """The loop waits for an event (no periodic round) and the simulated cluster will never have one: it stalled."""


class VirtualTimer:
    """A :class:`~planner.agent.timing.Timer` over a simulated cluster (module docstring).

    ``after_advance`` is called after every advance (the replay writes the submitter's done marker there once
    every job has arrived, as the emulated cluster's submitter does).
    """

    def __init__(self, cluster: EventClock, clock: Clock, after_advance: Callable[[], None] | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.after_advance = after_advance

    def unix(self) -> float:
        """The virtual Unix time of the cluster's emulated time now."""
        return self.clock.unix_at(self.cluster.now_s)

    def monotonic(self) -> float:
        """The virtual Unix time (it never goes back)."""
        return self.unix()

    def _advance_unix(self, unix: float) -> None:
        target = self.clock.at(unix)
        if target > self.cluster.now_s:
            self.cluster.advance_to(target)
        if self.after_advance is not None:
            self.after_advance()

    def sleep(self, seconds: float) -> None:
        """Advance the cluster by ``seconds`` real seconds."""
        if seconds > 0:
            self._advance_unix(self.unix() + seconds)

    def wait_for_round(
        self,
        deadline: float,
        earliest: float | None,
        poll_s: float,
        changed: Callable[[], bool],
        stopped: Callable[[], bool],
    ) -> bool:
        """:meth:`planner.agent.timing.Timer.wait_for_round`, jumping over polls that come before the next event.

        The polls are those of the wall timer: every ``poll_s`` from the wait's start, the first at or after
        ``earliest``. A poll after the cluster's next event is the first that may see a change; the ones before it
        are skipped. A wait without a deadline (``math.inf``) for a cluster that has no next event raises
        :class:`NoMoreEvents`.
        """
        last_poll = self.unix()
        step = max(poll_s, 1e-6)
        while not stopped():
            event = self.clock.unix_at(self.cluster.next_event_s()) if earliest is not None else math.inf
            if math.isinf(deadline) and math.isinf(event):
                raise NoMoreEvents(f"at {self.cluster.now_s:.0f} s the loop waits for an event that never comes")
            if earliest is None or event >= deadline:
                break
            first = max(event, earliest, last_poll + step)
            poll = last_poll + step * math.ceil((first - last_poll) / step - 1e-9)
            if poll >= deadline:
                break
            self._advance_unix(poll)
            last_poll = poll
            if changed():
                return True
        if not stopped():
            self._advance_unix(deadline)
        return False
