"""``benchmarks/replay_divergence.py``: the first round where a replay's agent decides otherwise than the live one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "replay_divergence.py"
LIVE = """\
01:53:48 round 0 t=75s: 0 queued, 0 running, plan runs 0 (idle); calls: none; overhead 0.05 s, solve 0.00 s
01:53:57 round 1 t=322s: 1 queued, 0 running, plan runs 1 (optimal by highs); delta 0.025; calls: update 1, release 1
  job 1: no wattplan_job_steps_done in Prometheus; steps estimated from the profiles
01:53:59 round 2 t=420s: 3 queued, 1 running, plan runs 3 (optimal by highs); delta 0.030; calls: update 2, release 2
01:54:03 round 3 t=700s: 5 queued, 3 running, plan runs 5 (optimal by highs); delta 0.047; calls: update 2, release 2
"""
REPLAY = """\
round 0 t=-300s: 0 queued, 0 running, plan runs 0 (idle); calls: none; overhead 0.00 s, solve 0.00 s
round 1 t=0s: 1 queued, 0 running, plan runs 1 (optimal by highs); delta 0.027; calls: update 1, release 1
round 2 t=90s: 2 queued, 1 running, plan runs 2 (optimal by highs); delta 0.031; calls: update 1, release 1
round 3 t=390s: 5 queued, 3 running, plan runs 3 (optimal by highs); delta 0.062; calls: none
round 4 t=420s: 5 queued, 3 running, plan runs 5 (optimal by highs); delta 0.062; calls: update 2, release 2
"""


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replay_divergence", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _run(tmp_path: Path, replay: str) -> Path:
    run = tmp_path / "run"
    (run / "sim" / "wattplan").mkdir(parents=True)
    (run / "agent.log").write_text(LIVE)
    (run / "sim" / "wattplan" / "agent.log").write_text(replay)
    (run / "sim" / "wattplan" / "summary.json").write_text(json.dumps({"up_before_s": 300.0}))
    return run


def test_the_first_live_round_no_replay_round_of_its_queue_agrees_with_is_named(tmp_path: Path) -> None:
    divergence = _module()
    live = divergence.rounds(_run(tmp_path, REPLAY) / "agent.log", lead_s=300.0)
    assert [(r.n, r.t, r.queued, r.running, r.plan, r.delta) for r in live][1:] == [
        (1, 22.0, 1, 0, 1, 0.025),
        (2, 120.0, 3, 1, 3, 0.030),
        (3, 400.0, 5, 3, 5, 0.047),
    ]
    assert live[0].delta is None  # an idle round shows none
    found = divergence.first_divergence(live, divergence.rounds(tmp_path / "run" / "sim" / "wattplan" / "agent.log"))
    # rounds 0 and 1 agree; live round 2's queue (3 queued) no replay round saw; live round 3 meets replay rounds 3
    # and 4 (the same queue within 120 s) and agrees with round 4: nothing differs
    assert found.live is None and (found.agreed, found.unmet, found.first_unmet.n) == (3, 1, 2)


def test_a_replay_that_plans_otherwise_on_the_same_queue_is_the_divergence(tmp_path: Path) -> None:
    divergence = _module()
    run = _run(tmp_path, REPLAY.replace("plan runs 5 (optimal by highs); delta 0.062", "plan runs 4 (x); delta 0.062"))
    lines = divergence.report(run, "wattplan", 120.0)
    assert "first decision that differs: live round 3 at trace time 400 s (5 queued, 3 running) plans 5" in lines[1]
    assert "delta 0.047" in lines[1]
    assert [line for line in lines if line.startswith("  replay round")] == [
        "  replay round 3 at 390 s, the same queue: plans 3, delta 0.062",
        "  replay round 4 at 420 s, the same queue: plans 4, delta 0.062",
    ]
    # a narrower window leaves round 3 of the replay alone in it, and still no agreement
    live, replay = (
        divergence.rounds(run / "agent.log", 300.0),
        divergence.rounds(run / "sim" / "wattplan" / "agent.log"),
    )
    assert [r.n for r in divergence.first_divergence(live, replay, 15.0).replay] == [3]


def test_the_agents_own_round_lines_are_read_as_it_wrote_them(tmp_path: Path) -> None:
    """The parser reads the lines :class:`RoundReport` writes: a change of their format fails here, not silently."""
    from wattplan.planner.agent.loop import RoundReport

    divergence = _module()
    shown = RoundReport(7, 1397.4, queued=18, running=15, planned_run=17, planned_pairs=1, status="optimal by highs")
    shown.delta, shown.notes = 0.0468, ["node v100-3 is idle+powering_down: left out"]
    idle = RoundReport(0, 75.0, status="idle")
    log = tmp_path / "agent.log"
    log.write_text(f"01:53:48 {idle.line()}\n{shown.line()}\n")
    read = [(r.n, r.t, r.queued, r.running, r.plan, r.delta) for r in divergence.rounds(log, lead_s=300.0)]
    assert read == [(0, -225.0, 0, 0, 0, None), (7, 1097.0, 18, 15, 17, 0.047)]
