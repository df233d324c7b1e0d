"""``wattplan simulate``, the agent's loop on a simulated Slurm: what a user meets.

An energy budget without its period is refused naming both; the progress hook ends at all the work done;
``--workers 2`` gives the serial figures; the figures, ``dropped.csv`` and the provenance are written.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattplan.planner.cli import app
from wattplan.planner.control.slurm_replay import ReplayProgress, SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.session import replay_spec

TRACE_LINE = "{kind}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}\n"
JOBS = [
    ("ResNet-18 (batch size 32)", 1, 3000, 0.0),
    ("Transformer (batch size 128)", 4, 1500, 10.0),
    ("ResNet-50 (batch size 128)", 2, 800, 20.0),
    ("ResNet-50 (batch size 128)", 2, 800, 21.0),
]
POLICY_FILES = ["agent.log", "jobs.csv", "power.csv", "summary.json"]
"""The files of ``out/POLICY/``, by name."""


def _trace(tmp_path: Path, jobs: list[tuple[str, int, int, float]]) -> Path:
    path = tmp_path / "jobs.trace"
    path.write_text("".join(TRACE_LINE.format(kind=k, gpus=g, steps=s, arrival=a) for k, g, s, a in jobs))
    return path


def _simulate(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["simulate", *args], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_replay_is_the_agents_loop_with_figures_provenance_and_dropped_jobs(tmp_path: Path) -> None:
    """Slurm alone and the agent's loop, every file a user expects, a type without profile dropped."""
    trace = _trace(tmp_path, [*JOBS, ("No such model", 1, 100, 5.0)])
    out = tmp_path / "out"
    output = _simulate([str(trace), "--cluster", "v100:8", "-p", "slurm", "-p", "fifo-max", "-o", str(out)])
    assert "1 job(s) dropped, no profile on v100: 'No such model' 1 job (first j4)" in " ".join(output.split())
    for name in ("power.png", "jct_cdf.png", "energy_jct.png", "comparison.csv"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "dropped.csv").read_text().splitlines()[1:] == ["j4,No such model"]
    for policy in ("slurm", "fifo-max"):
        summary = json.loads((out / policy / "summary.json").read_text())
        assert summary["engine"] == "slurm" and summary["jobs"] == 4
        assert summary["workload"]["dropped_by_type"] == {"No such model": ["j4"]}
        assert summary["written_by"]["command"][:2] == ["wattplan", "simulate"]
        assert 0 < summary["energy_floor_kwh"] < summary["energy_kwh"]
        assert sorted(p.name for p in (out / policy).iterdir()) == POLICY_FILES


def test_an_energy_budget_without_its_period_names_both(tmp_path: Path) -> None:
    """The agent's budget is ``E`` in every ``--budget-period-s``: a budget alone is refused before anything runs."""
    trace = _trace(tmp_path, JOBS)
    args = ["simulate", str(trace), "--cluster", "v100:8", "--energy-budget-kwh", "5", "-o", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "--energy-budget-kwh" in result.output and "--budget-period-s" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


def test_progress_ends_at_all_the_work_done_and_never_goes_back(tmp_path: Path) -> None:
    spec = replay_spec(_trace(tmp_path, JOBS), "v100:8", SimulateOptions(), ["fifo-max"])
    heard: list[ReplayProgress] = []
    replay_on_slurm(spec, "fifo-max", SimulatedCluster(), progress=heard.append)
    assert heard, "the progress hook heard nothing"
    shares = [p.work_done for p in heard]
    assert shares == sorted(shares)
    assert heard[-1].work_done == 1.0 and heard[-1].jobs_done == heard[-1].jobs_total == len(JOBS)
    assert heard[-1].hours > 0


def test_workers_replay_the_policies_at_once_to_the_serial_figures(tmp_path: Path) -> None:
    trace = _trace(tmp_path, JOBS)
    common = [str(trace), "--cluster", "v100:8", "-p", "slurm", "-p", "fifo-max", "--no-plots", "-q"]
    _simulate([*common, "-o", str(tmp_path / "serial")])
    _simulate([*common, "--workers", "2", "-o", str(tmp_path / "parallel")])
    keys = ("energy_kwh", "avg_jct_s", "p95_jct_s", "requeues", "rounds", "energy_floor_kwh", "captured_share")
    for policy in ("slurm", "fifo-max"):
        serial = json.loads((tmp_path / "serial" / policy / "summary.json").read_text())
        parallel = json.loads((tmp_path / "parallel" / policy / "summary.json").read_text())
        assert {k: serial[k] for k in keys} == {k: parallel[k] for k in keys}, policy


KINDS = ("ResNet-18 (batch size 32)", "ResNet-50 (batch size 128)", "Transformer (batch size 128)", "A3C")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_powered_floor_is_below_every_policy_in_the_energy_mode(tmp_path: Path, seed: int) -> None:
    """Random small workloads: no policy, the energy mode's wattplan included, draws less than the powered floor.

    Both over the common window (to the longest makespan): the floor whose window is at least that long.
    """
    rng = random.Random(seed)
    jobs = [(rng.choice(KINDS), rng.choice((1, 2, 4)), rng.randint(200, 3000), rng.uniform(0, 600)) for _ in range(6)]
    out = tmp_path / "out"
    mode = ["--objective", "efficiency", "--max-jct-increase", "20", "--solver", "highs", "--node-limit", "50"]
    policies = ["-p", "slurm", "-p", "fifo-max", "-p", "wattplan", "-p", "zeus"]
    _simulate([str(_trace(tmp_path, jobs)), "--cluster", "v100:8", *policies, *mode, "--no-plots", "-o", str(out)])
    for row in json.loads((out / "comparison.json").read_text()):
        assert row["completed"] == 6, row["policy"]
        assert row["energy_floor_kwh"] <= row["energy_common_kwh"], row["policy"]  # over the common window
        assert row["captured_share"] < 1, row["policy"]


def test_the_signal_keeps_the_delta_max_of_the_steering_record() -> None:
    """``--delta-max`` bounds the delta the carbon or price signal sets, as it bounds the governor's."""
    from wattplan.planner.sim.governor import SignalSteer, Steering
    from wattplan.planner.sim.signals import signal_clock

    clock = signal_clock("carbon", Path("CISO_2022.csv"), 0.0, None)
    steer = Steering(0.03, delta_max=0.1).steer(None, 0.05, clock, 360.0)
    assert isinstance(steer, SignalSteer) and steer.delta_max == 0.1
    assert all(steer.delta_for_round([], 3600.0 * h) <= 0.1 for h in range(48))
