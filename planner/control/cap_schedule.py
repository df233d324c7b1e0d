"""A power cap that moves, in a replay: a schedule that writes the agent's cap file on the virtual clock.

``wattplan simulate --power-cap-schedule CSV``: columns ``t_s`` (emulated seconds from the replay's first arrival,
ascending) and ``power_cap_w`` (W, > 0; empty or ``none``: no cap from then on). The replay's agent reads the cap
from a file (``--power-cap-file``, :mod:`planner.agent.power_cap`), exactly as live; :class:`ScheduledCap` writes the
file at each step's time, as an operator or a grid program would, and makes each step an event of the cluster, so
the virtual clock stops there and the agent's poll sees the change as it would live.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.agent.power_cap import NO_CAP, parse_cap
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.control.virtual_timer import EventClock


@dataclass(frozen=True, slots=True)
class CapStep:
    """From ``t_s`` (emulated s after the first arrival) the cap is ``cap_w`` (W; None: no cap)."""

    t_s: float
    cap_w: float | None


def read_cap_schedule(path: Path) -> tuple[CapStep, ...]:
    """The steps of a schedule file (module docstring); InputError naming the file and the row of a bad value."""
    label = "--power-cap-schedule"

    def bad(where: str, message: str) -> InputError:
        return InputError(label, [Problem("bad-schedule", f"{label} {path}{where}", message)])

    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise bad("", f"cannot be read: {e}") from None
    if not rows or not {"t_s", "power_cap_w"} <= rows[0].keys():
        raise bad("", "needs the columns t_s and power_cap_w and at least one row")
    steps: list[CapStep] = []
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            t = float(row["t_s"] or "nan")
        except ValueError:
            t = math.nan
        if not (math.isfinite(t) and t >= 0) or (steps and t <= steps[-1].t_s):
            raise bad(f", line {n}", f"t_s must be a number of seconds >= 0 above the line before, not {row['t_s']!r}")
        try:
            cap = parse_cap(row["power_cap_w"] or NO_CAP)
        except ValueError as e:
            raise bad(f", line {n}", f"power_cap_w {e}") from None
        steps.append(CapStep(t, cap))
    return tuple(steps)


def cap_text(cap_w: float | None) -> str:
    """The cap file's text for ``cap_w``."""
    return f"{NO_CAP}\n" if cap_w is None else f"{cap_w:.6g}\n"


class ScheduledCap:
    """An :class:`~planner.control.virtual_timer.EventClock` over ``cluster`` whose schedule steps are events too.

    ``start_s`` is the replay's first arrival (the schedule's 0); the file holds the cap of the last step due (none
    before the first) from the moment the clock reaches it.
    """

    def __init__(self, cluster: EventClock, steps: tuple[CapStep, ...], path: Path, start_s: float) -> None:
        self.cluster, self.path, self.start_s = cluster, path, start_s
        self.steps = steps
        self._next = 0
        write_text_atomic(path, cap_text(None))
        self._write_due()

    @property
    def now_s(self) -> float:
        """The cluster's emulated time."""
        return self.cluster.now_s

    def _step_s(self) -> float:
        return self.start_s + self.steps[self._next].t_s if self._next < len(self.steps) else math.inf

    def _write_due(self) -> None:
        cap: float | None = None
        wrote = False
        while self._step_s() <= self.cluster.now_s:
            cap, wrote = self.steps[self._next].cap_w, True
            self._next += 1
        if wrote:
            write_text_atomic(self.path, cap_text(cap))

    def next_event_s(self) -> float:
        """The cluster's next event or the schedule's next step, whichever comes first."""
        return min(self.cluster.next_event_s(), self._step_s())

    def advance_to(self, t_s: float) -> None:
        """Play the cluster to ``t_s``, stopping at each step on the way to write the file."""
        while self._step_s() <= t_s:
            self.cluster.advance_to(self._step_s())
            self._write_due()
        self.cluster.advance_to(t_s)
        self._write_due()


def cap_followed(
    power: list[tuple[float, float, float]], steps: tuple[CapStep, ...], start_s: float
) -> list[dict[str, float | None]]:
    """Per schedule step: its time and cap, how soon the cluster followed it, and how well it held it then.

    ``power``: the cluster's draw as steps ``(t0, t1, W)`` (emulated s). ``followed_after_s``: from the step until
    the draw first came within the cap (0: it was within already; None: not before the next step or the end). From
    then to the next step (or the end): ``over_cap_s``, the seconds the draw was above the cap (a round's budget is
    the cap times the round, so a plan may exceed it between its restarts), ``max_w`` the highest draw and
    ``mean_w`` the mean. A step without a cap is followed at once.
    """
    out: list[dict[str, float | None]] = []
    for k, step in enumerate(steps):
        t, end = start_s + step.t_s, start_s + steps[k + 1].t_s if k + 1 < len(steps) else math.inf
        row: dict[str, float | None] = {"t_s": step.t_s, "power_cap_w": step.cap_w, "followed_after_s": 0.0}
        if step.cap_w is not None:
            cap = step.cap_w * (1 + 1e-9)
            since = next((max(t0, t) for t0, t1, w in power if t1 > t and t0 < end and w <= cap), None)
            row["followed_after_s"] = None if since is None else since - t
            held = [(max(t0, since), min(t1, end), w) for t0, t1, w in power if since is not None and t1 > since]
            held = [(a, b, w) for a, b, w in held if b > a and a < end]
            span = sum(b - a for a, b, _ in held)
            row["over_cap_s"] = sum(b - a for a, b, w in held if w > cap)
            row["max_w"] = max((w for _, _, w in held), default=None)
            row["mean_w"] = sum((b - a) * w for a, b, w in held) / span if span > 0 else None
        out.append(row)
    return out
