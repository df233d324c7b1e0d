"""Energy over a common window: runs of the same workload compared over the same stretch of time.

A replay's own energy window ends at its last completion (:func:`~planner.control.slurm_replay.replay_on_slurm`).
Two runs of the same jobs end at different times, and a cluster whose nodes stay on draws its idle power after the
last job as before it: over its own window a run that finishes later is charged idle energy that the run finishing
earlier draws too, only after its window closed. Compared over their own windows, a schedule that slows jobs down to
save dynamic energy can look worse than one that does not, with less energy drawn over any stretch of time that
holds both (a replay of `philly_shape` on 32 V100: 1.10 kWh of dynamic energy against Slurm alone's 1.79, and 4.96
kWh against 4.26 over their own windows).

So runs are compared over the **common window**: from the workload's first arrival (less the idle lead every run
shares) to ``W`` after it, ``W`` the longest of the runs' makespans. A run that ended at ``m <= W`` is charged, past
its own energy, what the cluster draws idle from ``m`` to ``W``: its :func:`idle_tail`, the draw the simulated
cluster really has after the last completion (every node's idle power with every node on; with power saving, each
node's idle power until Slurm suspends it, then nothing), measured by playing the empty cluster on until nothing
changes any more. With every node on, the common window's difference between two runs is the difference of their
energy above idle. The energy floor over the common window is the floor whose window is at least ``W``
(:func:`planning.powered_floor` with ``min_window_s``): no schedule finishing within ``W`` draws less over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wattplan.planner.control.sim_slurm import PowerSaving, SimulatedSlurm
from wattplan.planner.sim.signals import J_PER_KWH

IDLE_TAIL = "idle_tail"
"""The summary's field with the run's idle tail: ``steps`` (``[t0, t1, W]``, s after the window's end) and
``steady_w`` (W, the draw after the last step)."""
SETTLE_S = 1.0
"""Emulated seconds played past the end (beyond any power-down) so the tail holds at least one step."""


def idle_tail(slurm: SimulatedSlurm, end_s: float | None, saving: PowerSaving | None) -> dict[str, Any] | None:
    """The cluster's draw after the last completion ``end_s`` (emulated s), played on until it changes no more.

    With power saving a node idle for ``suspend_s`` powers down (``suspend_timeout_s``, then nothing), so the empty
    cluster is steady ``suspend_s + suspend_timeout_s`` after the end; with every node on it is steady at once. None
    when a job did not finish (no window end).
    """
    if end_s is None:
        return None
    settle = SETTLE_S + (0.0 if saving is None else saving.suspend_s + saving.suspend_timeout_s)
    until = end_s + settle
    if slurm.now_s < until:
        slurm.advance_to(until)
    steps = [(max(a, end_s) - end_s, b - end_s, w) for a, b, w in slurm.power_steps(until) if b > end_s]
    return {"steps": [list(s) for s in steps], "steady_w": steps[-1][2] if steps else 0.0}


def tail_kwh(tail: Mapping[str, Any], seconds: float) -> float:
    """What the cluster draws idle over the first ``seconds`` after the end (kWh), by :func:`idle_tail`'s steps."""
    joules, covered = 0.0, 0.0
    for a, b, w in tail["steps"]:
        joules += w * max(0.0, min(b, seconds) - a)
        covered = max(covered, b)
    joules += tail["steady_w"] * max(0.0, seconds - covered)
    return joules / J_PER_KWH


def common_window_s(summaries: Sequence[Mapping[str, Any]]) -> float | None:
    """``W``: the longest makespan of ``summaries`` (s); None unless every run finished every job and has a tail."""
    if not summaries or any(s.get("makespan_s") is None or s.get(IDLE_TAIL) is None for s in summaries):
        return None
    if any(s.get("completed") != s.get("jobs") for s in summaries):
        return None
    return max(float(s["makespan_s"]) for s in summaries)


def energy_over(summary: Mapping[str, Any], window_s: float) -> float:
    """The run's energy over the common window of ``window_s`` after the first arrival (kWh): its own and its tail."""
    return float(summary["energy_kwh"]) + tail_kwh(summary[IDLE_TAIL], window_s - float(summary["makespan_s"]))


def on_common_window(row: Mapping[str, Any], window_s: float | None) -> dict[str, Any]:
    """A frontier row compared over the common window: ``energy_kwh`` over it, ``energy_own_kwh`` the run's own.

    Unchanged but for ``energy_own_kwh`` without a common window (None) or for a failed point's row.
    """
    out = {**row, "energy_own_kwh": row.get("energy_kwh"), "common_window_s": window_s}
    if window_s is not None and not row.get("error") and row.get(IDLE_TAIL) is not None:
        out["energy_kwh"] = energy_over(row, window_s)
    return out
