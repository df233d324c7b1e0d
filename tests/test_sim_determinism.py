"""The same seed gives the same replay on the simulated Slurm; the seed matters once there is throughput noise.

The scheduler loop replays (:func:`planner.control.slurm_replay.replay_on_slurm`) five jobs on ``v100:8``. With
``--noise x`` a computing job runs at ``f X``, ``f`` drawn from a hash of the seed, the job, its start and the
interval (:class:`~planner.control.truth_model.ThroughputNoise`): the same seed draws the same factors in every
replay, another seed others.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec, prepare

JOBS = [
    ("ResNet-18 (batch size 32)", 3000, 0, 2),
    ("ResNet-50 (batch size 128)", 1500, 20, 4),
    ("Transformer (batch size 128)", 2000, 40, 2),
    ("ResNet-18 (batch size 32)", 4000, 60, 4),
    ("ResNet-50 (batch size 128)", 1000, 80, 1),
]
"""Five jobs asking 13 GPUs of 8: some wait, so the policies' choices and the draws decide the order."""
TIMING = ("wall_s", "cpu_s")
"""Summary fields of the machine's speed and load, not of the replay's inputs."""


def _spec(tmp_path: Path, **kw: Any) -> ReplaySpec:
    trace = write_gavel_trace(tmp_path / "jobs.trace", JOBS)
    # A generous limit: these rounds solve to optimality in well under a second, so the wall-clock limit (which
    # makes time-limited solves depend on the machine's load) never binds.
    options = PolicyOptions(request=replace(REPLAY_REQUEST, solver="cbc", time_limit_s=30.0))
    return ReplaySpec(trace=trace, cluster="v100:8", policy_options=options, **kw)


def _replay(spec: ReplaySpec, policy: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The job rows and the summary, less its timing, of ``policy``'s replay."""
    result = replay_on_slurm(spec, policy, SimulatedCluster(load_s=30.0))
    return result.jobs, {k: v for k, v in result.summary.items() if k not in TIMING}


@pytest.mark.parametrize("policy", ["eaco", "powerflow", "wattplan"])
def test_same_seed_same_replay_with_noise(tmp_path: Path, policy: str) -> None:
    spec = _spec(tmp_path, noise=0.2, seed=7)
    jobs, summary = _replay(spec, policy)
    assert _replay(spec, policy) == (jobs, summary)
    assert (summary["completed"], summary["noise"], summary["noise_seed"]) == (len(JOBS), 0.2, 7)


def test_noise_makes_the_seed_matter(tmp_path: Path) -> None:
    """Two seeds draw two sets of factors: the jobs' times and the energy differ, and differ from no noise."""
    a_jobs, a = _replay(_spec(tmp_path, noise=0.2, seed=1), "powerflow")
    b_jobs, b = _replay(_spec(tmp_path, noise=0.2, seed=2), "powerflow")
    plain_jobs, plain = _replay(_spec(tmp_path), "powerflow")
    assert a["completed"] == b["completed"] == plain["completed"] == len(JOBS)
    assert a["energy_kwh"] != b["energy_kwh"] and plain["energy_kwh"] not in (a["energy_kwh"], b["energy_kwh"])
    finish = [[j["finish_s"] for j in rows] for rows in (a_jobs, b_jobs, plain_jobs)]
    assert finish[0] != finish[1] and finish[2] not in finish[:2]


def test_philly_job_types_follow_the_seed(tmp_path: Path) -> None:
    """A Philly row's job type is drawn with the seed, so seeds change the workload.

    A Philly row names no model: its type is drawn with the seed, so seeds change the workload;
    the ``.csv`` extension selects the Philly reader.
    """
    rows = [f"2017-10-09 07:{m:02d}:00,{600 + 60 * m},1,{600 + 60 * m},6214e9" for m in range(12)]
    trace = tmp_path / "slice.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n")
    spec = dict(trace=trace, cluster="v100:8", max_jobs=10)
    wl1, _ = prepare(ReplaySpec(**spec, seed=1))
    wl1b, _ = prepare(ReplaySpec(**spec, seed=1))
    wl2, _ = prepare(ReplaySpec(**spec, seed=2))
    assert wl1.source["format"] == "philly" and len(wl1.jobs) == 10
    assert [j.arrival_s for j in wl1.jobs] == [60.0 * m for m in range(10)]
    assert [j.type for j in wl1.jobs] == [j.type for j in wl1b.jobs]
    assert [j.type for j in wl1.jobs] != [j.type for j in wl2.jobs]
