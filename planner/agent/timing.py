"""Where the agent's loop reads time and waits: the wall clock live, a virtual clock in a replay.

The loop (:mod:`planner.agent.loop`) never calls :mod:`time` for anything that decides: it asks a :class:`Timer`
for the Unix time, sleeps through it and waits through it for the next round. :class:`WallTimer` is the machine's
clock (``wattplan agent``); :class:`planner.control.virtual_timer.VirtualTimer` is a simulated Slurm's clock, which
jumps from one event to the next (``wattplan simulate``). The rule that decides *when* a round
starts stays in the loop, so it is the same live and in the replay; only how a wait passes differs.

Times are real seconds (what :class:`~planner.agent.node_settings.Clock` turns into the cluster's emulated
seconds): ``unix`` is the Unix time; ``monotonic`` a clock that never goes back, for deadlines (the wall timer's
:func:`time.monotonic`, the virtual timer's Unix time); ``sleep`` and the waits count real seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """The loop's clock: the time now, a sleep, and a wait for the next round that may end early on an event."""

    def unix(self) -> float:
        """The (possibly virtual) Unix time now (s)."""
        ...

    def monotonic(self) -> float:
        """A clock for deadlines (s): it never goes back."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` real seconds pass."""
        ...

    def wait_for_round(
        self,
        deadline: float,
        earliest: float | None,
        poll_s: float,
        changed: Callable[[], bool],
        stopped: Callable[[], bool],
    ) -> bool:
        """Wait until ``deadline`` (:meth:`monotonic` s); True as soon as ``changed()`` says yes before it.

        ``changed`` is asked every ``poll_s`` seconds from ``earliest`` on (never when ``earliest`` is None); the
        wait also ends, returning False, as soon as ``stopped()`` is true.
        """
        ...


class WallTimer:
    """The machine's clock: :func:`time.time`, :func:`time.sleep`, and a wait that sleeps in steps of 0.1 s."""

    def unix(self) -> float:
        """:func:`time.time`."""
        return time.time()

    def monotonic(self) -> float:
        """:func:`time.monotonic`."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """:func:`time.sleep` (nothing for a duration <= 0)."""
        if seconds > 0:
            time.sleep(seconds)

    def wait_for_round(
        self,
        deadline: float,
        earliest: float | None,
        poll_s: float,
        changed: Callable[[], bool],
        stopped: Callable[[], bool],
    ) -> bool:
        """:meth:`Timer.wait_for_round`: sleeps 0.1 s at a time, asks ``changed`` every ``poll_s`` from ``earliest``."""
        last_poll = time.monotonic()
        while not stopped() and time.monotonic() < deadline:
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))
            now = time.monotonic()
            if earliest is not None and now >= earliest and now - last_poll >= poll_s:
                last_poll = now
                if changed():
                    return True
        return False
