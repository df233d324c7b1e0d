"""Where the replay's agent first decides otherwise than the live agent it replays, from their logs (issue 44).

Reads run folders as ``benchmarks/live_compare.py`` writes them: ``RUN/agent.log`` (the live agent's log) and
``RUN/sim/POLICY/agent.log`` with ``summary.json`` (the replay of the same trace, ``--only simulate``). Each round
line (``round N t=Ts: Q queued, R running, plan runs P (...); delta D; calls: ...``) gives the round's time, the
queue it saw and how many jobs its plan runs. The live ``t`` is the cluster's clock, the trace's time plus the
lead before the first submission (the replay's ``up_before_s``); the replay's ``t`` is the trace's time.

A live round *meets* a replay round when the replay round saw the same queue (as many queued and as many running
jobs) within ``--window-s`` of the live round's trace time; they *agree* when they plan as many jobs to run. The
first live round that meets replay rounds and agrees with none of them is the first decision that differs; the
live rounds before it whose queue no replay round saw within the window are counted (the two runs' timing, or a
difference the round line does not show: which jobs, on how many GPUs).

Usage: ``python benchmarks/replay_divergence.py RUN [RUN...] [--policy wattplan] [--window-s 120]``.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROUND = re.compile(
    r"round (?P<n>\d+) t=(?P<t>-?[0-9.]+)s: (?P<queued>\d+) queued, (?P<running>\d+) running, "
    r"plan runs (?P<plan>\d+)(?:.*?; delta (?P<delta>[0-9.]+))?"
)
WINDOW_S = 120.0
"""How far apart in trace time (s) a live and a replay round may be and still meet: four polls at time scale 30."""


@dataclass(frozen=True, slots=True)
class Round:
    """One round line: its number, trace time (s), queue, planned count, governor's delta (None if not shown)."""

    n: int
    t: float
    queued: int
    running: int
    plan: int
    delta: float | None
    line: str


def rounds(log: Path, lead_s: float = 0.0) -> list[Round]:
    """The round lines of ``log``, their times minus ``lead_s`` (the live cluster's lead: trace time)."""
    out = []
    for line in log.read_text().splitlines():
        if m := ROUND.search(line):
            delta = float(m["delta"]) if m["delta"] else None
            n, t, q, r, p = int(m["n"]), float(m["t"]) - lead_s, int(m["queued"]), int(m["running"]), int(m["plan"])
            out.append(Round(n, t, q, r, p, delta, line.strip()))
    return out


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first live round whose decision no replay round of the same queue shares (None: none found)."""

    live: Round | None
    replay: tuple[Round, ...]
    agreed: int
    unmet: int
    first_unmet: Round | None


def first_divergence(live: list[Round], replay: list[Round], window_s: float = WINDOW_S) -> Divergence:
    """The first live round that meets replay rounds and agrees with none (module docstring)."""
    agreed = unmet = 0
    first_unmet: Round | None = None
    for lr in live:
        met = tuple(
            rr for rr in replay if abs(rr.t - lr.t) <= window_s and (rr.queued, rr.running) == (lr.queued, lr.running)
        )
        if not met:
            unmet += 1
            first_unmet = first_unmet or lr
        elif any(rr.plan == lr.plan for rr in met):
            agreed += 1
        else:
            return Divergence(lr, met, agreed, unmet, first_unmet)
    return Divergence(None, (), agreed, unmet, first_unmet)


def _shown(delta: float | None) -> str:
    """A round's delta as its log line shows it (three decimals), or ``-`` where the line has none."""
    return "-" if delta is None else f"{delta:.3f}"


def report(run: Path, policy: str, window_s: float) -> list[str]:
    """The lines printed for one run folder."""
    summary = json.loads((run / "sim" / policy / "summary.json").read_text())
    lead = float(summary.get("up_before_s") or 0.0)
    found = first_divergence(rounds(run / "agent.log", lead), rounds(run / "sim" / policy / "agent.log"), window_s)
    lines = [f"{run}:"]
    if found.live is None:
        lines.append(f"  no live round decides otherwise than a replay round of the same queue ({found.agreed} agree)")
    else:
        lr = found.live
        lines.append(
            f"  first decision that differs: live round {lr.n} at trace time {lr.t:.0f} s "
            f"({lr.queued} queued, {lr.running} running) plans {lr.plan} to run, delta {_shown(lr.delta)}"
        )
        for rr in found.replay:
            lines.append(
                f"  replay round {rr.n} at {rr.t:.0f} s, the same queue: plans {rr.plan}, delta {_shown(rr.delta)}"
            )
        lines.append(f"    live:   {lr.line}")
        lines.extend(f"    replay: {rr.line}" for rr in found.replay)
    lines.append(
        f"  before it: {found.agreed} live rounds agree with a replay round of their queue; {found.unmet} saw a queue "
        f"no replay round saw within {window_s:g} s"
        + (
            f" (the first: live round {found.first_unmet.n} at {found.first_unmet.t:.0f} s)"
            if found.first_unmet
            else ""
        )
    )
    return lines


def main() -> None:
    """Print the first differing decision of every run folder given."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of benchmarks/live_compare.py")
    p.add_argument("--policy", default="wattplan", help="the replay's policy folder under RUN/sim (wattplan)")
    p.add_argument("--window-s", type=float, default=WINDOW_S, help="how far apart rounds may meet (trace s)")
    args = p.parse_args()
    for run in args.runs:
        print("\n".join(report(run, args.policy, args.window_s)))


if __name__ == "__main__":
    main()
