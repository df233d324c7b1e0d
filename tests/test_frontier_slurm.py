"""``wattplan frontier``: each point one replay on the simulated Slurm, as ``simulate`` runs it.

The reference is Slurm alone, the floor the powered one (or the one without idle nodes once a point powers nodes
down), points resume by spec and input digests, a failed point is named, and the command line runs it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli import app
from tests.sim_helpers import A3C, R50, write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.control import frontier as cf
from wattplan.planner.control.common_window import energy_over
from wattplan.planner.control.frontier import SlurmFrontier, run_slurm_frontier, slurm_frontier_sweep
from wattplan.planner.control.session import slurm_replays, workload_powered_floor
from wattplan.planner.sim.frontier import FRONTIER_COLUMNS, ReplayFailed, frontier_plot
from wattplan.planner.sim.options import FrontierOptions, SimulateOptions

PNG = b"\x89PNG\r\n\x1a\n"
POINTS = ["slurm", "fifo-max", "wattplan-progress", "wattplan-efficiency-delta-0.1", "wattplan-efficiency-jct+5%"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """Five short jobs on eight V100s (two nodes)."""
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    return write_gavel_trace(tmp_path / "tiny.trace", rows)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The policies replayed on the simulated Slurm by the frontier (one worker: in this process), in order."""
    seen: list[str] = []
    real = cf.replay_on_slurm

    def counted(spec: Any, policy: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(policy)
        return real(spec, policy, *args, **kwargs)

    monkeypatch.setattr(cf, "replay_on_slurm", counted)
    return seen


def sweep(trace: Path, **given: Any) -> SlurmFrontier:
    """The checked sweep of ``trace`` on ``v100:8``: greedy plans, one worker, one delta and one JCT increase."""
    options = {"solver": "greedy", "workers": 1, "deltas": [0.1], "max_jct_increase": [5]}
    options |= {"baselines": ["slurm", "fifo-max"], **given}
    return slurm_frontier_sweep(trace, "v100:8", FrontierOptions.checked(options))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_points_take_the_slurm_baselines_and_what_a_restart_costs_there(trace: Path) -> None:
    everything = sweep(trace, baselines=["all"])
    labels = [p.label for p in everything.points()]
    baselines = ["slurm", "slurm-powersave", "maxq", "fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow"]
    assert labels == [*baselines, *POINTS[2:]] and everything.total == len(labels)
    assert all(p.setup == everything.setup for p in everything.points())
    # a restart costs the requeue delay (6 real s), the launch (1 real s) and the load (30 s): 37 s at scale 1 ...
    assert everything.sweep.base.rules.restart_s == everything.setup.restart_cost_s == 37.0
    # ... and 2 x 6 + 2 x 1 + 30 = 44 s at scale 2, unless --restart-s says otherwise
    assert sweep(trace, time_scale=2).sweep.base.rules.restart_s == 44.0
    assert sweep(trace, restart_s=20).sweep.base.rules.restart_s == 20.0
    with pytest.raises(InputError) as bad:
        sweep(trace, baselines=["slurm-alone"]).points()
    assert "choose from all, slurm, slurm-powersave, maxq, fifo-max" in str(bad.value)


def test_every_point_is_simulates_replay_against_slurm_alone_and_the_powered_floor(
    trace: Path, tmp_path: Path, replays: list[str]
) -> None:
    out = tmp_path / "fr"
    front = sweep(trace)
    ended: list[int] = []
    result = run_slurm_frontier(front, out, workers=1, point_done=lambda: ended.append(len(replays)))
    assert [r["label"] for r in result.rows] == POINTS
    assert ended == [1, 2, 3, 4, 5]  # as each point ends (the command's bar)
    assert replays == ["slurm", "fifo-max", "wattplan", "wattplan", "wattplan"]  # the reference is the slurm row
    for r in result.rows:
        assert r["engine"] == "slurm" and r["stop_reason"] == "completed" and not r.get("error")
        assert r["jobs_completed"] == r["jobs_total"] == 5 and r["jobs_unfinished"] == 0
        assert r["energy_kwh"] > 0 and r["avg_jct_s"] > 0 and r["p95_jct_s"] > 0
        assert r["reference"]["policy"] == "slurm" and r["power_saving"] is None
        files = sorted(p.name for p in (out / "runs" / r["label"]).iterdir())
        assert files == ["agent.log", "jobs.csv", "power.csv", "summary.json"]
    assert result.reference["label"] == "slurm"
    window = max(r["makespan_s"] for r in result.rows)  # the common window: the longest makespan of the sweep
    assert all(r["common_window_s"] == window for r in result.rows)
    powered = workload_powered_floor(front.sweep.base, nodes_stay_on=True, window_s=window).energy_kwh
    assert powered is not None and result.floor.energy_kwh == pytest.approx(powered, rel=1e-12)

    # captured share and JCT increase by hand from the CSV's own numbers, Slurm alone the reference
    rows = read_csv(out / "frontier.csv")
    assert list(rows[0]) == list(FRONTIER_COLUMNS) and [r["label"] for r in rows] == POINTS
    ref = rows[0]
    e_ref, j_ref, floor = float(ref["energy_kwh"]), float(ref["avg_jct_s"]), float(ref["energy_floor_kwh"])
    assert 0 < floor < e_ref and floor == pytest.approx(powered, rel=1e-12)
    for r in rows:
        share = (e_ref - float(r["energy_kwh"])) / (e_ref - floor)
        assert float(r["captured_share"]) == pytest.approx(share, abs=1e-12)
        assert float(r["jct_increase"]) == pytest.approx(float(r["avg_jct_s"]) / j_ref - 1, abs=1e-12)
    assert float(ref["captured_share"]) == 0.0 and float(ref["jct_increase"]) == 0.0
    assert any(r["on_front"] == "1" for r in rows if r["policy"] == "wattplan")
    assert all(r["on_front"] == "0" for r in rows if r["policy"] != "wattplan")
    assert (out / "frontier.png").read_bytes()[:8] == PNG

    # simulate replays the same policies to the same numbers, the same share too
    options = SimulateOptions.checked(solver="greedy")
    sim = slurm_replays(trace, "v100:8", options, ["slurm", "fifo-max"], tmp_path / "s")
    by_label = {r["label"]: r for r in result.rows}
    for s in sim:
        row = by_label[s.policy]
        assert (row["energy_own_kwh"], row["avg_jct_s"]) == (s.summary["energy_kwh"], s.summary["avg_jct_s"])
        assert row["energy_kwh"] == pytest.approx(energy_over(s.summary, window), rel=1e-12)


def test_a_rerun_reads_every_point_back_and_replays_what_changed(
    trace: Path, tmp_path: Path, replays: list[str]
) -> None:
    out = tmp_path / "fr"
    first = run_slurm_frontier(sweep(trace), out, workers=1)
    assert len(replays) == 5
    replays.clear()
    again = run_slurm_frontier(sweep(trace), out, workers=1)
    assert replays == [] and again.stale == []  # every point read back, the reference among them
    assert [r["energy_kwh"] for r in again.rows] == [r["energy_kwh"] for r in first.rows]

    # a point saved under another setup of the simulated Slurm is stale: that one alone is replayed
    saved = out / "runs" / "fifo-max" / "summary.json"
    doc = json.loads(saved.read_text())
    assert doc["frontier_spec"]["engine_setup"]["load_s"] == 30.0 and set(doc["frontier_inputs"]) == {"trace"}
    doc["frontier_spec"]["engine_setup"]["load_s"] = 10.0
    saved.write_text(json.dumps(doc))
    assert run_slurm_frontier(sweep(trace), out, workers=1).stale == ["fifo-max"] and replays == ["fifo-max"]
    replays.clear()

    # the same trace path with another workload (three jobs): every point is replayed
    write_gavel_trace(trace, [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1)])
    changed = run_slurm_frontier(sweep(trace), out, workers=1)
    assert sorted(changed.stale) == sorted(POINTS) and len(replays) == 5
    assert [r["jobs_total"] for r in changed.rows] == [3] * 5


def test_power_saving_takes_the_floor_without_idle_nodes_and_replays_slurm_alone(
    trace: Path, tmp_path: Path, replays: list[str]
) -> None:
    """The maxq baseline powers idle nodes down: the floor is then the one without idle nodes, as simulate's."""
    front = sweep(trace, baselines=["maxq"], deltas=[], max_jct_increase=[])
    result = run_slurm_frontier(front, tmp_path / "fr", workers=1, figures=None)
    assert [r["label"] for r in result.rows] == ["maxq", "wattplan-progress"]
    assert replays == ["maxq", "wattplan", "slurm"]  # Slurm alone is no point here: replayed for the reference
    assert result.rows[0]["power_saving"] == {"suspend_s": 600.0, "resume_s": 300.0}
    idle_off = workload_powered_floor(front.sweep.base, nodes_stay_on=False).energy_kwh
    powered = workload_powered_floor(front.sweep.base, nodes_stay_on=True).energy_kwh
    assert idle_off is not None and powered is not None and idle_off < powered
    assert result.floor.energy_kwh == pytest.approx(idle_off, rel=1e-12)
    e_ref = result.reference["energy_kwh"]
    assert result.reference["policy"] == "slurm" and "label" not in result.reference
    for r in result.rows:
        assert r["captured_share"] == pytest.approx((e_ref - r["energy_kwh"]) / (e_ref - idle_off), abs=1e-12)
    assert not (tmp_path / "fr" / "frontier.png").exists()


def test_a_failed_point_raises_naming_it_and_a_rerun_replays_only_it(
    trace: Path, tmp_path: Path, replays: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = cf.replay_on_slurm

    def failing(spec: Any, policy: str, *args: Any, **kwargs: Any) -> Any:
        if spec.max_jct_increase == 0.05:
            raise RuntimeError("the agent fell over")
        return counted(spec, policy, *args, **kwargs)

    monkeypatch.setattr(cf, "replay_on_slurm", failing)
    out = tmp_path / "fr"
    with pytest.raises(ReplayFailed) as caught:
        run_slurm_frontier(sweep(trace), out, workers=1)
    assert caught.value.failed == [("wattplan-efficiency-jct+5%", "RuntimeError: the agent fell over")]
    assert str(caught.value).startswith("1 of 5 frontier replays failed") and str(out / "runs") in str(caught.value)
    assert not (out / "frontier.csv").exists() and (out / "runs" / "fifo-max" / "summary.json").is_file()
    monkeypatch.setattr(cf, "replay_on_slurm", counted)
    replays.clear()
    run_slurm_frontier(sweep(trace), out, workers=1)
    assert replays == ["wattplan"] and (out / "frontier.csv").is_file()


def test_the_figure_names_its_reference_and_floor() -> None:
    rows = [{"label": "slurm", "policy": "slurm", "knob": "baseline", "energy_kwh": 8.0, "avg_jct_s": 3600.0}]
    reference = {"policy": "slurm", "energy_kwh": 8.0, "avg_jct_s": 3600.0}
    labels = (cf.REFERENCE_LABEL, cf.POWERED_FLOOR_LABEL)
    fig = frontier_plot(rows, 4.0, reference=reference, labels=labels)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "reference (Slurm alone)" in legend and "powered floor, every node on (4 kWh)" in legend


def run(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def test_the_command_replays_on_the_simulated_slurm(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "fr"
    args = ["--deltas", "0.1", "--max-jct-increase", "", "--baselines", "slurm", "--solver", "greedy", "--workers", "1"]
    result = run(
        "frontier", trace, "--cluster", "v100:8", *args, "--time-scale", "2", "--format", "json", "-q", "-o", out
    )
    assert result.exit_code == 0, result.output
    labels = ["slurm", "wattplan-progress", "wattplan-efficiency-delta-0.1"]
    assert [r["label"] for r in json.loads(result.stdout)["frontier"]] == labels
    assert [r["label"] for r in read_csv(out / "frontier.csv")] == labels
    summary = json.loads((out / "runs" / "wattplan-progress" / "summary.json").read_text())
    assert (summary["engine"], summary["time_scale"]) == ("slurm", 2.0)
    assert {r["reference"]["policy"] for r in json.loads((out / "frontier.json").read_text())} == {"slurm"}

    table = run("frontier", trace, "--cluster", "v100:8", *args, "--time-scale", "2", "-q", "-o", out)
    assert table.exit_code == 0 and "Frontier on a simulated Slurm" in table.stdout
    assert "3 replays; frontier written to" in " ".join(table.output.split())


@pytest.mark.slow  # two spawned workers: over 3 s
def test_workers_replay_through_the_executor_to_the_same_rows(trace: Path, tmp_path: Path) -> None:
    def numbers(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["label"], r["energy_kwh"], r["avg_jct_s"], r["captured_share"]) for r in rows]

    one = run_slurm_frontier(sweep(trace), tmp_path / "one", workers=1)
    two = run_slurm_frontier(sweep(trace), tmp_path / "two", workers=2)
    assert numbers(two.rows) == numbers(one.rows)
