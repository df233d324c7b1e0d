"""The energy-JCT frontier: sweep points, files, resuming, failed replays, the captured share."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.sim import frontier as fr
from wattplan.planner.sim.frontier import FRONTIER_COLUMNS, frontier, frontier_points, replay_points
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec

R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def base(tmp_path: Path) -> ReplaySpec:
    """Five short jobs on eight V100s; wattplan plans greedily (the sweep's mechanics, not the solver)."""
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    trace = write_gavel_trace(tmp_path / "tiny.trace", rows)
    request = replace(REPLAY_REQUEST, solver="greedy", time_limit_s=2.0)
    return ReplaySpec(trace=trace, cluster="v100:8", policy_options=PolicyOptions(request=request))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_sweep_points_labels_knobs_and_specs(base: ReplaySpec) -> None:
    capped = replace(
        base,
        power_cap_w=3000.0,
        policy_options=replace(base.policy_options, request=replace(REPLAY_REQUEST, objective="progress")),
    )
    points = frontier_points(capped, [0.1, 0.25, 0.1], [0.05, 0.07], ["fifo-max", "all"])
    labels = [p.label for p in points]
    assert labels == [
        "fifo-max",
        "fifo-maxq",
        "zeus",
        "eaco",
        "powerflow",
        "wattplan-progress",
        "wattplan-delta-0.1",
        "wattplan-delta-0.25",
        "wattplan-jct+5%",
        "wattplan-jct+7%",
    ]
    assert len(set(labels)) == len(labels)
    by = {p.label: p for p in points}
    for p in points:
        assert p.spec.policies == (p.policy,) and p.spec.power_cap_w == 3000.0
    assert all(by[b].knob == "baseline" and by[b].value is None for b in ("fifo-max", "zeus", "eaco", "powerflow"))
    prog = by["wattplan-progress"]
    assert (prog.knob, prog.value, prog.spec.rules.objective, prog.spec.max_jct_increase) == (
        "progress",
        None,
        "progress",
        None,
    )
    d = by["wattplan-delta-0.25"]
    assert (d.knob, d.value, d.spec.rules.objective, d.spec.rules.delta) == ("delta", 0.25, "energy", 0.25)
    j = by["wattplan-jct+7%"]
    assert (j.knob, j.value, j.spec.max_jct_increase, j.spec.rules.objective) == (
        "max_jct_increase",
        0.07,
        0.07,
        "energy",
    )
    # the request's own objective would override the rules' on every wattplan point
    assert all(p.spec.policy_options.request.objective is None for p in points if p.policy == "wattplan")
    assert all(p.spec.rules.duration_s == base.rules.duration_s for p in points)


def test_bad_baseline_and_bad_values_raise_before_anything_runs(base: ReplaySpec, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown-policy"):
        frontier_points(base, [], [], ["wattplan"])
    with pytest.raises(InputError, match="--delta"):
        replay_points(frontier_points(base, [1.5], [], ["fifo-max"]), tmp_path / "bad", workers=2)
    with pytest.raises(InputError, match="--max-jct-increase"):
        frontier(base, [], [-0.1], [], tmp_path / "bad", workers=2)
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_sweep_writes_runs_and_frontier_then_resumes(base: ReplaySpec, tmp_path: Path) -> None:
    out = tmp_path / "fr"
    seen: list[str] = []
    result = frontier(
        base, [0.1], [0.05], ["fifo-max", "zeus"], out, workers=2, progress=lambda p, r: seen.append(p.label)
    )
    labels = ["fifo-max", "zeus", "wattplan-progress", "wattplan-delta-0.1", "wattplan-jct+5%"]
    assert sorted(seen) == sorted(labels)
    assert [r["label"] for r in result.rows] == labels
    assert result.paths == [out / "frontier.csv", out / "frontier.json", out / "frontier.png"]
    for label in labels:
        summary = json.loads((out / "runs" / label / "summary.json").read_text())
        assert summary["label"] == label and summary["jobs_completed"] == 5
        assert (out / "runs" / label / "rounds.csv").exists() and (out / "runs" / label / "jobs.csv").exists()
    assert (out / "frontier.png").read_bytes()[:8] == PNG
    rows = read_csv(out / "frontier.csv")
    assert list(rows[0]) == list(FRONTIER_COLUMNS)
    assert [r["label"] for r in rows] == labels and not any(r["error"] for r in rows)
    assert any(r["on_front"] == "1" for r in rows if r["policy"] == "wattplan")
    assert all(r["on_front"] == "0" for r in rows if r["policy"] != "wattplan")
    assert len(json.loads((out / "frontier.json").read_text())) == len(labels)

    # captured share and JCT increase by hand from the CSV's own numbers (fifo-max is the reference)
    ref = next(r for r in rows if r["label"] == "fifo-max")
    floor = float(ref["energy_floor_kwh"])
    assert floor == pytest.approx(result.floor.energy_kwh) and 0 < floor < float(ref["energy_kwh"])
    for r in rows:
        e, e_ref = float(r["energy_kwh"]), float(ref["energy_kwh"])
        assert float(r["captured_share"]) == pytest.approx((e_ref - e) / (e_ref - floor), rel=1e-9, abs=1e-12)
        expected_jct = float(r["avg_jct_s"]) / float(ref["avg_jct_s"]) - 1
        assert float(r["jct_increase"]) == pytest.approx(expected_jct, abs=1e-12)
    assert float(ref["captured_share"]) == 0.0

    # a second call replays nothing whose spec is unchanged; a run saved from another spec is replayed
    stamps = {label: (out / "runs" / label / "summary.json").stat().st_mtime_ns for label in labels}
    zeus = out / "runs" / "zeus" / "summary.json"
    stale = json.loads(zeus.read_text())
    stale["frontier_spec"]["seed"] = 99
    zeus.write_text(json.dumps(stale))
    stamps["zeus"] = zeus.stat().st_mtime_ns
    again = frontier(base, [0.1], [0.05], ["fifo-max", "zeus"], out, workers=2)
    after = {label: (out / "runs" / label / "summary.json").stat().st_mtime_ns for label in labels}
    assert {k for k in labels if after[k] != stamps[k]} == {"zeus"}
    assert json.loads(zeus.read_text())["frontier_spec"]["seed"] == 0
    assert [r["energy_kwh"] for r in again.rows] == [r["energy_kwh"] for r in result.rows]


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_failed_replay_is_a_row_with_its_error_and_the_rest_complete(base: ReplaySpec, tmp_path: Path) -> None:
    points = frontier_points(base, [0.1], [], ["fifo-max"])
    broken = replace(points[0], label="broken", spec=replace(points[0].spec, trace=tmp_path / "missing.trace"))
    rows = replay_points([*points, broken], tmp_path / "fr", workers=2)
    assert [r["label"] for r in rows] == ["fifo-max", "wattplan-progress", "wattplan-delta-0.1", "broken"]
    assert rows[-1]["error"].startswith("InputError") and "missing.trace" in rows[-1]["error"]
    assert all("error" not in r and r["jobs_completed"] == 5 for r in rows[:-1])
    assert not (tmp_path / "fr" / "runs" / "broken" / "summary.json").exists()


def test_budget_base_replays_its_own_unbudgeted_reference(base: ReplaySpec, tmp_path: Path) -> None:
    """Under a cap, the sweep's fifo-max row is capped too; the reference is fifo-max without budget."""
    capped = replace(base, power_cap_w=2500.0, rules=RoundRules())
    result = frontier(capped, [], [], ["fifo-max"], tmp_path / "cap", workers=1)
    assert result.reference["power_cap_w"] is None and result.reference["policy"] == "fifo-max"
    assert [r["label"] for r in result.rows] == ["fifo-max", "wattplan-progress"]
    assert all(r["power_cap_w"] == 2500.0 for r in result.rows)


class WorkerBomb:
    """A trace path that kills the process unpickling it (a pool worker), as a crash or the OOM killer would."""

    def __reduce__(self):
        return (os._exit, (3,))

    def __deepcopy__(self, memo: dict) -> WorkerBomb:
        return self

    def __str__(self) -> str:
        return "worker-bomb.trace"


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_a_dying_worker_costs_only_its_own_replay(base: ReplaySpec, tmp_path: Path) -> None:
    points = frontier_points(base, [], [], ["fifo-max", "zeus", "eaco"])[:3]
    bomb = replace(points[1], label="bomb", spec=replace(points[1].spec, trace=WorkerBomb()))
    rows = replay_points([points[0], bomb, *points[1:]], tmp_path / "fr", workers=2)
    assert [r["label"] for r in rows] == ["fifo-max", "bomb", "zeus", "eaco"]
    assert rows[1]["error"].startswith("BrokenProcessPool")
    assert all("error" not in r and r["jobs_completed"] == 5 for r in (rows[0], *rows[2:]))


def test_resume_replays_points_whose_input_file_changed(base: ReplaySpec, tmp_path: Path) -> None:
    """Issue 22: a saved replay of another workload at the same trace path is stale, not reused."""
    out = tmp_path / "fr"
    first = frontier(base, [], [], ["fifo-max"], out, workers=1)
    assert first.stale == []
    summary = json.loads((out / "runs" / "fifo-max" / "summary.json").read_text())
    assert set(summary["frontier_inputs"]) == {"trace"} and len(summary["frontier_inputs"]["trace"]) == 64
    same = frontier(base, [], [], ["fifo-max"], out, workers=1)
    assert same.stale == []
    # the same path, another workload: one job fewer
    write_gavel_trace(Path(base.trace), [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1)])
    again = frontier(base, [], [], ["fifo-max"], out, workers=1)
    assert sorted(again.stale) == ["fifo-max", "wattplan-progress"]
    assert [r["jobs_total"] for r in again.rows] == [3, 3]
    assert [r["jobs_total"] for r in first.rows] == [5, 5]


def test_a_failed_replay_raises_naming_it_and_a_rerun_replays_only_it(
    base: ReplaySpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: a failed replay was a row without numbers (NaN energies in Python) and the call returned."""
    real = fr.replay_point

    def failing(point: fr.FrontierPoint) -> tuple[dict, object]:
        if point.label == "wattplan-progress":
            raise RuntimeError("the solver exploded")
        return real(point)

    monkeypatch.setattr(fr, "replay_point", failing)  # one worker replays here: the patch applies
    out = tmp_path / "fr"
    with pytest.raises(fr.ReplayFailed) as caught:
        frontier(base, [0.1], [], ["fifo-max"], out, workers=1)
    assert caught.value.failed == [("wattplan-progress", "RuntimeError: the solver exploded")]
    assert str(caught.value).startswith("1 of 3 frontier replays failed") and str(out / "runs") in str(caught.value)
    assert not (out / "frontier.csv").exists() and not (out / "runs" / "wattplan-progress" / "summary.json").exists()
    saved = {k: (out / "runs" / k / "summary.json").stat().st_mtime_ns for k in ("fifo-max", "wattplan-delta-0.1")}

    monkeypatch.setattr(fr, "replay_point", real)
    again = frontier(base, [0.1], [], ["fifo-max"], out, workers=1)
    assert all(not r.get("error") and r["jobs_completed"] == 5 for r in again.rows)
    assert {k: (out / "runs" / k / "summary.json").stat().st_mtime_ns for k in saved} == saved  # reused
    assert (out / "runs" / "wattplan-progress" / "summary.json").is_file()
