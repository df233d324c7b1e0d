"""A replay on the loop says how long it will be before it starts, and how far it is as it goes.

The forecast (:mod:`planner.sim.forecast`) is what ``simulate`` on the loop warns with before any policy runs; the
progress it reports as it goes is the loop's (:mod:`planner.control.session`): a bar, or under ``-q`` a line every
30 s with a linear ETA.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import NO_SLURM_WAITS, A, write_gavel_trace
from wattplan.planner.control import session
from wattplan.planner.control.slurm_replay import ReplayProgress, SimulatedCluster, replay_on_slurm
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.forecast import BASELINE_ROUND_S, WATTPLAN_ROUND_S, forecast, long_replay_warning
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.state import JobSpec

R50 = "ResNet-50 (batch size 64)"
R18 = "ResNet-18 (batch size 32)"


def _job(job_id: str, arrival_s: float, seconds: float, gpus: int) -> JobSpec:
    return JobSpec(job_id, A, arrival_s, seconds, gpus, (gpus,), 1.0)  # 1 step/s: duration = steps


def _top_rate(job_type: str) -> float:
    """Steps per second of ``job_type`` on one V100 at its top setting, in the shipped library."""
    profiles = [p for p in load_profile_library(None).profiles if p.type == job_type and p.gpu_type == "v100"]
    return max((p for p in profiles if p.gpus == 1), key=lambda p: p.setting).steps_per_s


def test_forecast_by_hand() -> None:
    """W = 2 x 1000 + 4 x 2000 = 10,000 GPU-s on 4 GPUs: 2,500 s > the longest path 100 + 2,000 s.

    Rounds of 360 s: floor(2500 / 360) + 1 = 7; two policies cost 0.1 + 0.005 s a round.
    """
    f = forecast([_job("a", 0.0, 1000.0, 2), _job("b", 100.0, 2000.0, 4)], 4, 360.0, ("wattplan", "fifo-max"))
    assert (f.jobs, f.mean_job_s, f.median_first_jobs_s, f.span_s, f.rounds) == (2, 1500.0, 1500.0, 2500.0, 7)
    assert abs(f.wall_s - 7 * (WATTPLAN_ROUND_S + BASELINE_ROUND_S)) < 1e-12
    assert not f.long and long_replay_warning(f) is None


def test_jobs_of_days_are_warned_about_with_the_numbers() -> None:
    days = [_job(f"j{k}", 60.0 * k, 2 * 86_400.0, 1) for k in range(4)]
    f = forecast(days, 48, 360.0, ("fifo-max",))
    assert f.long
    text = long_replay_warning(f)
    assert text is not None and "4 selected jobs run 2.0 days each" in text and "--max-jobs" in text


def test_simulate_on_the_loop_warns_of_a_long_replay_before_it_starts(tmp_path: Path) -> None:
    """Two R50 jobs of 2.5 days on one V100 each, at 0 s and 60 s, replayed by Slurm alone (no rounds to play).

    Steps: 2.5 days x 4.3948 steps/s. Span: max(2 x 216,000 / 8 GPUs, 60 + 216,000) = 216,060 s (2.5 days), so
    floor(216,060 / 360) + 1 = 601 rounds, at 0.005 s each 3 s of wall time.
    """
    steps = round(2.5 * 86_400 * _top_rate(R50))
    trace = write_gavel_trace(tmp_path / "days.trace", [(R50, steps, 0, 1), (R50, steps, 60, 1)])
    out = tmp_path / "out"
    args = ["simulate", str(trace), "--cluster", "v100:8", "-p", "slurm", "-q", "--no-plots", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert (
        "this replay is long: the 2 selected jobs run 2.5 days each on average at full speed (median of the first "
        "ten 2.5 days), so it simulates at least 2.5 days (601 rounds) and will likely take about 3 s; select fewer "
        "or shorter jobs with --start-s, --end-s or --max-jobs"
    ) in said
    assert (out / "slurm" / "summary.json").is_file()


def test_quiet_progress_line_has_hours_jobs_work_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    """``-q``'s line, at most every 30 wall seconds: ETA = elapsed (1 - f) / f, unknown before any work.

    The clock starts at 100 s when the hook is made. At 110 s (10 s since the last line) nothing is written; at
    140 s, a quarter done: 40 s elapsed, ETA 40 x 0.75 / 0.25 = 120 s; at 150 s nothing; at 175 s with no work
    done (a resumed count) the ETA is unknown.
    """
    ticks = iter([100.0, 110.0, 140.0, 150.0, 175.0])
    monkeypatch.setattr(session, "time", SimpleNamespace(monotonic=lambda: next(ticks)))  # this module's clock
    lines: list[str] = []
    hook = session.progress_log_hook(lines.append, "zeus")
    for jobs_done, work, hours in ((0, 0.1, 0.5), (1, 0.25, 2.5), (1, 0.3, 3.0), (1, 0.0, 4.0)):
        hook(ReplayProgress("zeus", jobs_done, 2, work, hours))
    assert lines == [
        "zeus: 2.5 h emulated, 1/2 jobs, 25.0% of the work, 40 s elapsed, ETA 120 s",
        "zeus: 4.0 h emulated, 1/2 jobs, 0.0% of the work, 75 s elapsed, ETA unknown",
    ]


def test_the_loop_reports_the_reference_work_done_and_ends_at_all_of_it(tmp_path: Path) -> None:
    """Slurm alone, one R18 job of 3,000 steps at 0 s: the last report is the whole work, the job, its makespan.

    The makespan is the launch and the load, 31 s, and 3,000 / X steps at full speed; the hours are those since the
    first arrival. Every report's share of the reference work stays in [0, 1] and never goes down.
    """
    trace = write_gavel_trace(tmp_path / "one.trace", [(R18, 3000, 0, 1)])
    seen: list[ReplayProgress] = []
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max",))
    replay_on_slurm(spec, "slurm", SimulatedCluster(load_s=30.0, **NO_SLURM_WAITS), progress=seen.append)
    last = seen[-1]
    assert (last.policy, last.jobs_done, last.jobs_total, last.work_done) == ("slurm", 1, 1, 1.0)
    assert last.hours == pytest.approx((31.0 + 3000 / _top_rate(R18)) / 3600, rel=1e-9)
    shares = [p.work_done for p in seen]
    assert all(0.0 <= a <= b <= 1.0 for a, b in itertools.pairwise(shares))


def test_out_that_is_a_file_is_named_before_any_round(tmp_path: Path) -> None:
    trace = write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 1)])
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    args = ["simulate", str(trace), "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots", "-o", str(taken)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "unwritable-output" in " ".join(result.output.split()) and "Traceback" not in result.output
