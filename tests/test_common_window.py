"""Energy over a common window (:mod:`planner.control.common_window`): the idle tail after a run's last job.

One job on one 8-GPU node, by hand: with every node on the empty cluster draws its idle power for ever after, and
that draw is what the run's own window charged per second for its node and idle energy; with Slurm's power saving
the node draws the same until it is suspended (``suspend_s``, then ``SuspendTimeout``'s 30 s) and nothing after.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.sim_helpers import NO_SLURM_WAITS
from wattplan.planner.control.common_window import common_window_s, energy_over, on_common_window, tail_kwh
from wattplan.planner.control.sim_slurm import SHUTDOWN_S
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.replay import ReplaySpec

J_PER_KWH = 3.6e6
SUSPEND_S = 200.0
TIMEOUT_S = SHUTDOWN_S  # Slurm's SuspendTimeout in the simulated Slurm (PowerSaving.suspend_timeout_s)


def _spec(tmp_path: Path) -> ReplaySpec:
    trace = tmp_path / "one.trace"
    trace.write_text("ResNet-18 (batch size 32)\tcmd\t-n\t1\t3000\t0\t1\n")
    return ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",))


def test_every_node_on_the_tail_is_the_idle_draw_the_run_paid_per_second(tmp_path: Path) -> None:
    summary = replay_on_slurm(_spec(tmp_path), "slurm", SimulatedCluster(load_s=30.0)).summary
    tail = summary["idle_tail"]
    idle_w = (summary["energy_node_kwh"] + summary["energy_idle_kwh"]) * J_PER_KWH / summary["makespan_s"]
    assert math.isclose(tail["steady_w"], idle_w, rel_tol=1e-9)
    assert all(math.isclose(w, idle_w, rel_tol=1e-9) for _, _, w in tail["steps"])
    assert math.isclose(tail_kwh(tail, 3600.0), idle_w / 1000, rel_tol=1e-9)  # an hour of idle: W / 1000 kWh
    later = {**summary, "makespan_s": summary["makespan_s"] + 500.0}
    window = common_window_s([summary, later])
    assert window == summary["makespan_s"] + 500.0
    extra = energy_over(summary, window) - summary["energy_kwh"]
    assert math.isclose(extra, idle_w * 500.0 / J_PER_KWH, rel_tol=1e-9)
    assert energy_over(later, window) == later["energy_kwh"]
    row = on_common_window(summary, window)
    assert row["energy_own_kwh"] == summary["energy_kwh"] and row["energy_kwh"] == pytest.approx(
        summary["energy_kwh"] + extra
    )


def test_with_power_saving_the_node_draws_until_suspended_then_nothing(tmp_path: Path) -> None:
    on = replay_on_slurm(_spec(tmp_path), "slurm", SimulatedCluster(load_s=30.0, **NO_SLURM_WAITS)).summary
    setup = SimulatedCluster(load_s=30.0, power_save=True, suspend_s=SUSPEND_S, **NO_SLURM_WAITS)
    saving = replay_on_slurm(_spec(tmp_path), "slurm-powersave", setup).summary
    idle_w = on["idle_tail"]["steady_w"]
    tail = saving["idle_tail"]
    assert tail["steady_w"] == 0.0
    down = SUSPEND_S + TIMEOUT_S
    assert math.isclose(tail_kwh(tail, 1e6), idle_w * down / J_PER_KWH, rel_tol=1e-9)
    assert math.isclose(tail_kwh(tail, 100.0), idle_w * 100.0 / J_PER_KWH, rel_tol=1e-9)


def test_no_common_window_when_a_run_left_a_job_unfinished() -> None:
    done = {"makespan_s": 100.0, "completed": 2, "jobs": 2, "idle_tail": {"steps": [], "steady_w": 5.0}}
    assert common_window_s([done, {**done, "completed": 1}]) is None
    assert common_window_s([done, {**done, "idle_tail": None}]) is None
    assert common_window_s([]) is None


def test_the_energy_jct_figure_plots_the_energies_the_floor_is_compared_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The figure's points are over the common window, as its floor line: no point drawn below a floor it is above."""
    from wattplan.planner.control import session
    from wattplan.planner.sim import plots
    from wattplan.planner.sim.options import SimulateOptions

    trace = tmp_path / "two.trace"
    trace.write_text("ResNet-18 (batch size 32)\tcmd\t-n\t1\t3000\t0\t1\nA3C\tcmd\t-n\t1\t9000\t100\t1\n")
    drawn: dict[str, float] = {}

    def capture(points, path, title="", **kwargs):  # type: ignore[no-untyped-def]
        drawn.update({p.label: p.energy_kwh for p in points})
        drawn["floor"] = kwargs["floor_kwh"]

    monkeypatch.setattr(plots, "energy_jct_plot", capture)
    options = SimulateOptions.checked(solver="greedy", max_jct_increase=20.0, objective="efficiency")
    results = session.slurm_replays(trace, "v100:8", options, ["slurm", "wattplan"], tmp_path / "o", plots=True)
    for r in results:
        assert drawn[r.policy] == pytest.approx(r.summary["energy_common_kwh"], rel=1e-12)
        assert drawn[r.policy] >= drawn["floor"]
