"""``benchmarks/restart_census.py``: the restarts an agent log names, by reason and by job (issue 44, item 7)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "restart_census.py"
LOG = """\
round 3 t=300s: 4 queued, 2 running, plan runs 4 (optimal by highs); delta 0.1; calls: none
round 4 t=360s: 4 queued, 4 running, plan runs 4 (optimal by highs); delta 0.1; calls: requeuehold 2
  requeued: 7 (2 -> 1 GPUs), 9 (moves to v100-[0-1])
  guest 12 released on its host 11
round 6 t=480s: 4 queued, 4 running, plan runs 3 (optimal by highs); delta 0.1; calls: requeuehold 2
  requeued: 7 (1 -> 2 GPUs), 8 (waits)
"""


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("restart_census", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_restart_is_counted_by_reason_and_a_job_restarted_twice_is_listed(tmp_path: Path) -> None:
    census = _module()
    log = tmp_path / "agent.log"
    log.write_text(LOG)
    assert census.restarts(log) == {
        "7": [(4, "2 -> 1 GPUs"), (6, "1 -> 2 GPUs")],
        "9": [(4, "moves to v100-[0-1]")],  # a host list's brackets are part of the reason
        "8": [(6, "waits")],
    }
    lines = census.report(log)
    assert lines[0].endswith("4 restarts of 3 jobs; by reason: 2 -> 1 GPUs 1, 1 -> 2 GPUs 1, moves 1, waits 1")
    assert lines[1:] == ["  restarted twice or more: 1 jobs", "    7: round 4 2 -> 1 GPUs; round 6 1 -> 2 GPUs"]


def test_without_a_log_it_prints_its_usage_and_exits_2() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "restart_census.py LOG" in done.stderr
