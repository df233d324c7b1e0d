"""A power cap that moves (issue 44, item 4): the agent's cap file, the replay's schedule, and the cap followed.

The file's values and its refusals; the schedule's rows and its errors naming the line; the schedule writing the
file on the virtual clock; how soon and how well a cap was followed, by hand; the agent reading the file at each
round and starting a round when it changes; and a replay whose cap is cut by a third for a third of the run,
followed within one round, with no job lost.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from wattplan.planner.agent.power_cap import CapFile, parse_cap
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.control.cap_schedule import CapStep, ScheduledCap, cap_followed, read_cap_schedule


def test_the_file_holds_watts_or_none() -> None:
    assert parse_cap("6000\n") == 6000.0
    assert parse_cap(" 6.5e3 ") == 6500.0
    assert parse_cap("none") is None and parse_cap("") is None and parse_cap("NONE\n") is None
    for bad in ("-5", "0", "nan", "inf", "6 kW", "lots"):
        with pytest.raises(ValueError, match="not a power in W"):
            parse_cap(bad)


def test_a_cap_file_is_read_when_it_changes_and_a_bad_value_keeps_the_last(tmp_path: Path) -> None:
    path = tmp_path / "cap"
    cap = CapFile(path, 8000.0)
    assert cap.cap_w == 8000.0 and not cap.changed()  # no file yet: the start value
    path.write_text("5000\n")
    assert cap.changed()
    assert cap.read() == f"power cap now 5,000 W ({path})" and cap.cap_w == 5000.0
    assert not cap.changed() and cap.read() is None
    path.write_text("half\n")
    os.utime(path, ns=(1, 1))  # a new signature even within the same clock tick
    said = cap.read()
    assert said is not None and "'half'" in said and "the cap stays 5,000 W" in said and cap.cap_w == 5000.0
    path.write_text("none\n")
    assert cap.read() == f"power cap now none ({path})" and cap.cap_w is None


def _schedule(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cap.csv"
    path.write_text(text)
    return path


def test_the_schedule_reads_its_rows_and_names_a_bad_line(tmp_path: Path) -> None:
    steps = read_cap_schedule(_schedule(tmp_path, "t_s,power_cap_w\n0,none\n600,4000\n1200,\n"))
    assert steps == (CapStep(0.0, None), CapStep(600.0, 4000.0), CapStep(1200.0, None))
    for text, where, what in (
        ("t_s,power_cap_w\n0,4000\n0,3000\n", "line 3", "t_s must be"),
        ("t_s,power_cap_w\n0,4000\n10,-1\n", "line 3", "power_cap_w holds '-1'"),
        ("t_s,cap\n0,4000\n", "", "needs the columns t_s and power_cap_w"),
        ("t_s,power_cap_w\n-5,4000\n", "line 2", "t_s must be"),
    ):
        with pytest.raises(InputError) as e:
            read_cap_schedule(_schedule(tmp_path, text))
        assert where in e.value.problems[0].path and what in e.value.problems[0].message


class Ticks:
    """An event clock with events every 100 s."""

    def __init__(self) -> None:
        self.now_s = 50.0

    def next_event_s(self) -> float:
        return (math.floor(self.now_s / 100) + 1) * 100.0

    def advance_to(self, t_s: float) -> None:
        self.now_s = t_s


def test_the_schedule_writes_the_file_at_each_step_on_the_virtual_clock(tmp_path: Path) -> None:
    path = tmp_path / "cap"
    steps = (CapStep(0.0, 9000.0), CapStep(130.0, 4000.0), CapStep(400.0, None))
    clock = ScheduledCap(Ticks(), steps, path, start_s=50.0)
    assert path.read_text() == "9000\n"  # the step at the first arrival is due at once
    assert clock.next_event_s() == 100.0
    clock.advance_to(100.0)
    assert clock.next_event_s() == 180.0  # the step at 50 + 130 s comes before the cluster's 200
    clock.advance_to(179.0)
    assert path.read_text() == "9000\n"
    clock.advance_to(1000.0)  # passes 180 and 450: the file holds the last
    assert path.read_text() == "none\n" and clock.next_event_s() == 1100.0


def test_how_soon_and_how_well_a_cap_was_followed_by_hand() -> None:
    power = [(0.0, 100.0, 5000.0), (100.0, 150.0, 4500.0), (150.0, 200.0, 3000.0), (200.0, 300.0, 3500.0)]
    steps = (CapStep(0.0, None), CapStep(80.0, 3200.0), CapStep(280.0, None))
    got = cap_followed(power, steps, start_s=0.0)
    assert got[0] == {"t_s": 0.0, "power_cap_w": None, "followed_after_s": 0.0}
    # within the cap from 150 s (70 s after the step); from 150 to 280: 50 s at 3000 W, 80 s at 3500 W (above)
    assert got[1]["followed_after_s"] == pytest.approx(70.0)
    assert got[1]["over_cap_s"] == pytest.approx(80.0) and got[1]["max_w"] == 3500.0
    assert got[1]["mean_w"] == pytest.approx((50 * 3000 + 80 * 3500) / 130)
    never = cap_followed(power, (CapStep(0.0, 1000.0),), start_s=0.0)
    assert never[0]["followed_after_s"] is None and never[0]["over_cap_s"] == 0.0 and never[0]["mean_w"] is None


def test_the_agent_reads_the_cap_each_round_and_a_change_starts_one(tmp_path: Path) -> None:
    path = tmp_path / "cap"
    agent, _ = fake_agent(tmp_path, FakeSlurm(), power_cap_file=path, power_cap_w=50_000.0)
    assert agent.cap_w() == 50_000.0
    path.write_text("20000\n")
    assert agent._queue_changed()  # polled between rounds: the new cap starts a round at once
    report = agent.round()
    assert f"power cap now 20,000 W ({path})" in report.notes
    assert agent.cap_w() == 20_000.0 and not agent._cap.changed()  # type: ignore[union-attr]


TRACE_LINE = "{kind}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}\n"


def test_a_replay_follows_a_cut_within_a_round_and_loses_no_job(tmp_path: Path) -> None:
    """A cut from 2,000 s to 4,000 s, followed within a round, every job done.

    16 V100s busy with 1- and 2-GPU jobs; the cap is 1.4 kW (the two idle nodes draw 944 W), then none. The agent
    plans with the greedy policy (no solver clock), rounds every 360 s.
    """
    from typer.testing import CliRunner

    from wattplan.planner.cli import app

    kind = "ResNet-50 (batch size 64)"
    trace = tmp_path / "jobs.trace"
    trace.write_text(
        "".join(TRACE_LINE.format(kind=kind, gpus=1 + k % 2, steps=120_000, arrival=100.0 * k) for k in range(12))
    )
    schedule = _schedule(tmp_path, "t_s,power_cap_w\n2000,1400\n4000,none\n")
    out = tmp_path / "out"
    argv = [
        "simulate", str(trace), "--cluster", "v100:16", "-p", "wattplan", "--solver", "greedy", "--time-scale", "30",
        "--power-cap-schedule", str(schedule), "--out", str(out), "--no-plots", "-q",
    ]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    s = json.loads((out / "wattplan" / "summary.json").read_text())
    assert s["completed"] == s["jobs"] == 12 and s["stop_reason"] == "completed"
    cut, back = s["power_cap_steps"]
    assert cut["power_cap_w"] == 1400.0 and back["power_cap_w"] is None
    assert cut["followed_after_s"] is not None and cut["followed_after_s"] <= 360.0  # within one round
    assert cut["mean_w"] <= 1400.0 * 1.05
    log = (out / "wattplan" / "agent.log").read_text()
    assert "power cap now 1,400 W" in log and "power cap now none" in log
