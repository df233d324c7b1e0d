"""A replay written as it goes resumes where it stopped, with the outputs of an uninterrupted one."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import pytest

from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.sim.engine import ReplayState
from wattplan.planner.sim.journal import CHECKPOINT_FILE, ReplayJournal, remove_checkpoint
from wattplan.planner.sim.metrics import without_timing
from wattplan.planner.sim.output import decisions_csv, jobs_csv, rounds_csv
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec, prepare, replay_sha256, run_policy

ROOT = Path(__file__).resolve().parents[1]
BURST = ROOT / "instances" / "sources" / "gavel" / "traces" / "6214e9.trace"


class Interrupted(Exception):
    """Raised by :class:`StopAfter` as a kill would stop the replay."""


class StopAfter(ReplayJournal):
    """The test hook: a journal that raises after round ``k`` has been streamed (and checkpointed when due)."""

    def __init__(self, *args: object, k: int, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.k = k

    def round_done(self, state: ReplayState) -> None:
        super().round_done(state)
        if len(state.rounds) == self.k:
            raise Interrupted


def _spec(**kw: object) -> ReplaySpec:
    request = replace(REPLAY_REQUEST, solver="cbc", time_limit_s=30.0)  # never binds: deterministic rounds
    base: dict[str, object] = dict(
        trace=BURST,
        cluster="v100:8,p100:8",
        start_s=4178073,
        max_jobs=8,
        policy_options=PolicyOptions(request=request),
    )
    return ReplaySpec(**{**base, **kw})  # type: ignore[arg-type]


def _untimed(text: str) -> list[list[str]]:
    """CSV rows without the wall-clock column ``solver_s``."""
    rows = list(csv.reader(io.StringIO(text)))
    drop = rows[0].index("solver_s") if "solver_s" in rows[0] else -1
    return [[c for k, c in enumerate(r) if k != drop] for r in rows]


@pytest.mark.parametrize(
    ("policy", "options"),
    [
        ("powerflow", {"noise": 0.2, "power_cap_w": 6000.0}),  # the noise generator's state
        ("powerflow", {"learn": True}),  # the learner's beliefs
        ("wattplan", {"power_cap_w": 6000.0}),
        pytest.param(  # the governor and the tail bound (10 s)
            "wattplan", {"max_jct_increase": 0.2, "tail_bound": 0.5}, marks=pytest.mark.slow
        ),
    ],
)
def test_interrupted_replay_resumes_to_the_uninterrupted_outputs(
    tmp_path: Path, policy: str, options: dict[str, object]
) -> None:
    spec = _spec(seed=3, **options)
    wl, ctx = prepare(spec)
    T = ctx.rules.duration_s
    whole, whole_summary = run_policy(spec, wl, ctx, policy)
    assert len(whole.rounds) > 9
    digest = replay_sha256(spec)
    folder = tmp_path / "out"
    with pytest.raises(Interrupted):
        run_policy(
            spec, wl, ctx, policy, journal=StopAfter(folder, digest, policy, T, ctx.type_names, every_rounds=4, k=9)
        )
    streamed = (folder / "rounds.csv").read_text().splitlines()
    assert len(streamed) == 1 + 9  # header and every round played, flushed as it went
    journal = ReplayJournal(folder, digest, policy, T, ctx.type_names, every_rounds=4)
    again, again_summary = run_policy(spec, wl, ctx, policy, journal=journal)
    assert journal.resumed_at == 8  # the last checkpoint: round 9 is played again
    assert without_timing(again_summary) == without_timing(whole_summary)
    assert _untimed(rounds_csv(again)) == _untimed(rounds_csv(whole))
    assert jobs_csv(again) == jobs_csv(whole)
    assert decisions_csv(again) == decisions_csv(whole)
    # the streamed files hold the same rows as the final ones (jobs in the order they finished)
    assert _untimed((folder / "rounds.csv").read_text()) == _untimed(rounds_csv(again))
    streamed_jobs = (folder / "jobs.csv").read_text().splitlines()
    assert sorted(streamed_jobs) == sorted(jobs_csv(again).splitlines())


def test_finished_replay_reruns_from_its_checkpoint_without_playing(tmp_path: Path) -> None:
    spec = _spec()
    wl, ctx = prepare(spec)
    digest = replay_sha256(spec)
    first, _ = run_policy(
        spec, wl, ctx, "fifo-max", journal=ReplayJournal(tmp_path, digest, "fifo-max", 360.0, ctx.type_names)
    )
    journal = ReplayJournal(tmp_path, digest, "fifo-max", 360.0, ctx.type_names)
    second, _ = run_policy(spec, wl, ctx, "fifo-max", journal=journal)
    assert journal.resumed_at == len(first.rounds)
    assert second.stop_reason == "completed"
    assert [r.decide_s for r in second.rounds] == [r.decide_s for r in first.rounds]  # not re-decided


def test_checkpoint_of_other_options_or_policy_is_not_resumed_and_fresh_clears_it(tmp_path: Path) -> None:
    spec = _spec()
    wl, ctx = prepare(spec)
    run_policy(
        spec,
        wl,
        ctx,
        "fifo-max",
        journal=ReplayJournal(tmp_path, replay_sha256(spec), "fifo-max", 360.0, ctx.type_names),
    )
    other = replace(spec, power_cap_w=5000.0)
    assert replay_sha256(other) != replay_sha256(spec)
    journal = ReplayJournal(tmp_path, replay_sha256(other), "fifo-max", 360.0, ctx.type_names)
    capped, _ = run_policy(other, wl, ctx, "fifo-max", journal=journal)
    assert journal.resumed_at is None
    assert journal.discarded is not None and "other options or input files" in journal.discarded
    assert capped.budget_label != "none"  # replayed under the cap, not the old uncapped rounds
    zeus = ReplayJournal(tmp_path, replay_sha256(other), "zeus", 360.0, ctx.type_names)
    assert zeus.load() is None and zeus.discarded is not None and "'fifo-max'" in zeus.discarded
    remove_checkpoint(tmp_path)
    assert not (tmp_path / CHECKPOINT_FILE).exists()


def test_damaged_checkpoint_is_not_resumed(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_FILE).write_bytes(b"not a pickle")
    journal = ReplayJournal(tmp_path, "x", "fifo-max", 360.0, ("v100",))
    assert journal.load() is None
    assert journal.discarded is not None and "could not be read" in journal.discarded


def test_input_file_bytes_enter_the_replay_hash(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_bytes(BURST.read_bytes())
    before = replay_sha256(_spec(trace=trace))
    trace.write_bytes(BURST.read_bytes() + b"\n")
    assert replay_sha256(_spec(trace=trace)) != before
