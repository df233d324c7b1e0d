"""The faces a new user meets from Python (issue 42): the README's example saved as a script and run with python.

Run as ``python example.py`` the example printed seven multiprocessing tracebacks and returned a frontier of NaN
energies with exit 0: ``workers=1`` started a spawn pool, whose workers ran the unguarded script again from its
top, and the replays they lost became rows without numbers. Each script here runs in a fresh interpreter, as a
user's would.
"""

from __future__ import annotations

import math
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from wattplan.results import read_results

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_TIMEOUT_S = 900
"""Generous: the example plans, replays, sweeps and benchmarks (under a minute on an idle 2-core machine)."""

SAVE_FRAMES = """
import pickle as _pickle, sys as _sys
with open(_sys.argv[1], "wb") as _fh:
    _pickle.dump({"result": result, "replay": replay, "front": front, "runs": runs}, _fh)
"""
"""Appended to the example: its results, pickled to the file named by the script's first argument."""


def readme_example() -> str:
    """The first ``python`` code block of the README (section "From Python")."""
    found = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert found, "no python example in README.md"
    return found.group(1)


def run_script(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python path args`` in the script's folder, as a user runs it."""
    return subprocess.run(
        [sys.executable, str(path), *args],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        check=False,
    )


@pytest.mark.slow
def test_the_readme_example_runs_as_a_plain_script(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example() + SAVE_FRAMES)
    done = run_script(script, str(tmp_path / "frames.pkl"))
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    frames = pickle.loads((tmp_path / "frames.pkl").read_bytes())
    result, replay, front, runs = frames["result"], frames["replay"], frames["front"], frames["runs"]

    rows = front.frontier
    assert {"fifo-max", "wattplan-efficiency-delta-0.03"} <= set(rows.label) and len(rows) == 6
    assert all(math.isfinite(v) and v > 0 for v in [*rows.energy_kwh, *rows.avg_jct_s])
    assert "error" not in rows or rows["error"].isna().all()

    jobs = result.jobs
    assert len(jobs) == len(result.instance.jobs) and set(jobs.state) <= {"run", "wait"}
    assert str(jobs.gpus.dtype) == "Int64" and jobs.loc[jobs.state == "wait", "reason"].notna().all()
    assert result.summary["energy_j"] == pytest.approx(result.plan.round.energy_j)
    # The replay: Slurm alone and wattplan on the loop the agent runs, five jobs each.
    assert list(replay.summary.policy) == ["slurm", "wattplan"] and set(replay.summary.engine) == {"slurm"}
    assert (replay.summary.completed == 5).all()
    summary = replay.summary.set_index("policy")
    assert summary.loc["slurm", "captured_share"] == 0  # the reference; the floor is over the common window
    assert (summary.energy_common_kwh >= summary.energy_floor_kwh).all()
    assert (summary.energy_common_kwh >= summary.energy_kwh).all()
    means = replay.jobs.groupby("policy")["jct_s"].mean()  # tidy: the jobs add up to the summary
    for policy, row in summary.iterrows():
        assert means[policy] == pytest.approx(row.avg_jct_s, rel=1e-9)
    assert set(replay.jobs.policy) == {"slurm", "wattplan"} and len(replay.jobs) == 10
    assert set(runs.bench.solver) >= {"highs", "greedy"}
    assert runs.bench.set_index("solver").loc["greedy", "kind"] == "heuristic"
    pd.testing.assert_frame_equal(read_results(replay.folder).jobs, replay.jobs)  # reads back from its folder


UNGUARDED_SWEEP = """
import wattplan

front = wattplan.frontier("6c71a0.trace", cluster="v100:8", start_s=2510560, max_jobs=3, solver="greedy",
                          deltas=[0.3], max_jct_increase=[], baselines="fifo-max", workers=2)
print(front.frontier)
"""

GUARDED_POOL = """
from wattplan.planner.executor import run_tasks


def main() -> None:
    print(sorted(outcome.value for _, outcome in run_tasks(pow, [(2, 3), (3, 2)], workers=2)))


if __name__ == "__main__":
    main()
"""


def test_a_script_without_a_main_guard_gets_one_clear_error_before_any_worker(tmp_path: Path) -> None:
    """Two workers would each run the script again from its top: refused, naming ``workers`` and the guard."""
    script = tmp_path / "sweep.py"
    script.write_text(UNGUARDED_SWEEP)
    done = run_script(script)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("Traceback") == 1, done.stderr[-4000:]
    assert "unguarded-main" in done.stderr and str(script) in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr and "workers=1" in done.stderr
    assert "spawn_main" not in done.stderr  # no worker ever started


def test_a_guarded_script_runs_its_pool_of_two(tmp_path: Path) -> None:
    """The guard is all it takes: a two-worker pool in a script that has it runs, nothing refused."""
    script = tmp_path / "pool.py"
    script.write_text(GUARDED_POOL)
    done = run_script(script)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip() == "[8, 9]" and "Traceback" not in done.stderr
