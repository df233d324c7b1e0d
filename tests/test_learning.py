"""Online profile learning: the truth transform, the shrinkage arithmetic and replays on the loop by a truth."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.sim_helpers import A, B, hand_context, write_gavel_trace
from wattplan.planner.agent.learned_state import restored_learner, save_feed
from wattplan.planner.agent.store import AgentStore
from wattplan.planner.cli import app
from wattplan.planner.contracts.domain import PairSlowdown, Profile
from wattplan.planner.control.slurm_replay import PASS_DELAY_REAL_S, replay_on_slurm
from wattplan.planner.files.resources import profile_library
from wattplan.planner.profile_library.library import ProfileLibrary, library_from_doc, load_profile_library
from wattplan.planner.profiling.truth import TruthParams, speedup, truth_library
from wattplan.planner.sim.learning import LearnConfig, ProfileLearner
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.telemetry import GpuObservation, JobObservation


def _tiny_prior() -> dict:
    return {
        "schema": "wattplan.profiles/1",
        "gpu_types": [
            {"name": "v100", "idle_power_w": 30, "setting_unit": "power_limit_w", "settings": [250]},
        ],
        "profiles": [
            {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 10.0, "power_w": 230.0},
            {"type": "A", "gpu_type": "v100", "gpus": 2, "setting": 250, "steps_per_s": 20.0, "power_w": 230.0},
            {"type": "A", "gpu_type": "v100", "gpus": 8, "setting": 250, "steps_per_s": 80.0, "power_w": 230.0},
        ],
        "pairs": [{"a": "A", "b": "A", "gpu_type": "v100", "gpus": 1, "rho_a": 0.8, "rho_b": 0.9}],
    }


def test_truth_transform_by_hand() -> None:
    """Alpha 0.08, cap 3.3, idle 41 W, node 230 W, pair factor 0.5.

    S(2) = 2 / 1.08 = 1.851852; S(8) = min(8 / 1.56, 3.3) = 3.3.
    X(2) = 10 x 1.851852 = 18.51852; u(2) = 0.925926; P(2) = 41 + (230 - 30) x 0.925926 = 226.1852 W.
    X(8) = 33; u(8) = 0.4125; P(8) = 41 + 200 x 0.4125 = 123.5 W; 1 GPU: 10 steps/s, 41 + 200 = 241 W.
    Pair: 0.4 and 0.45.
    """
    params = TruthParams(alpha=0.08, cap=3.3, pair_factor=0.5, idle_power_w=41.0, node_power_w=230.0)
    assert speedup(2, params) == pytest.approx(1.851852, rel=1e-6)
    doc = truth_library(_tiny_prior(), params)
    by_n = {p["gpus"]: p for p in doc["profiles"]}
    assert by_n[1]["steps_per_s"] == pytest.approx(10.0) and by_n[1]["power_w"] == pytest.approx(241.0)
    assert by_n[2]["steps_per_s"] == pytest.approx(18.51852, rel=1e-6)
    assert by_n[2]["power_w"] == pytest.approx(226.1852, rel=1e-6)
    assert by_n[8]["steps_per_s"] == pytest.approx(33.0) and by_n[8]["power_w"] == pytest.approx(123.5)
    assert by_n[8]["utilisation"] == pytest.approx(0.4125)
    assert (doc["pairs"][0]["rho_a"], doc["pairs"][0]["rho_b"]) == pytest.approx((0.4, 0.45))
    assert doc["gpu_types"][0]["idle_power_w"] == 41.0 and doc["gpu_types"][0]["node_power_w"] == 230.0
    lib = library_from_doc(doc, "truth")
    assert lib.profile_extras[("A", "v100", 8, 250)]["utilisation"] == pytest.approx(0.4125)


def _obs(
    job: str, job_type: str, n: int, rate: float, power: float | None, weight: float = 1.0, **kw
) -> JobObservation:
    return JobObservation(job, job_type, "v100", n, 250, kw.get("partner"), rate, power, kw.get("util"), weight)


def test_shrinkage_arithmetic_by_hand() -> None:
    """Hand cluster: A on 2 GPUs at 250 W believed 9 steps/s, 220 W (idle 30 W: dynamic 190 W).

    One observation, weight 0.9: 4.5 steps/s (ratio 0.5), 125 W with idle seen at 30 W (dynamic 95, ratio 0.5).
    Pool (v100, 2): log m = (0.9 log 0.5 + 1.0 x 0) / (0.9 + 1.0) = 0.473684 log 0.5.
    Cell (A, v100, 2): log r = (0.9 log 0.5 + 0.1 x 0.473684 log 0.5) / 1.0 = 0.947368 log 0.5 -> r = 0.518577.
    Belief: X = 9 x 0.518577 = 4.667198 steps/s; P = 30 + 190 x 0.518577 = 128.5297 W (power cell alike).
    Idle and node: (3 x 30 + 0.1 x 30) / 3.1 = 30; node (1 x 150 + 0.1 x 100) / 1.1 = 145.4545 W.
    Type B (unobserved) at 2 GPUs would take the pool: 0.5 ** 0.473684 = 0.720101.
    """
    learner = ProfileLearner(hand_context(), LearnConfig(prior_weight=0.1, pool_weight=1.0))
    learner.observe([_obs("j1", A, 2, 4.5, 125.0, 0.9)], [GpuObservation("v100", 30.0, 3.0, 150.0, 1.0)])
    assert learner.x_ratio(A, "v100", 2) == pytest.approx(0.5**0.947368421, rel=1e-9)
    assert learner.x_ratio(B, "v100", 2) == pytest.approx(0.5 ** (0.9 / 1.9), rel=1e-9)
    belief = {(p.type, p.gpus, p.setting): p for ps in learner.context().profiles_by_type.values() for p in ps}
    assert belief[(A, 2, 250)].steps_per_s == pytest.approx(4.667198, rel=1e-6)
    assert belief[(A, 2, 250)].power_w == pytest.approx(128.5297, rel=1e-6)
    assert learner.node_power_w(learner.prior.gpu_types[0]) == pytest.approx(145.4545, rel=1e-6)
    assert learner.basis(A, "v100", 2) == "observed" and learner.basis(A, "v100", 1) == "prior"
    assert learner.basis(B, "v100", 2) == "pooled"
    # The job's own estimate: its round shrunk to the type's estimate (the same data: the same ratio).
    # The job's own estimate, shrunk to the type's: log = (0.9 log 0.5 + 0.1 x 0.947368 log 0.5) / 1.0.
    assert learner.job_estimate("j1", A, "v100", 2) == pytest.approx(0.5**0.994736842, rel=1e-9)


def test_pair_rate_learned_from_the_exclusive_belief() -> None:
    """A alone at 1 GPU observed at 5 steps/s (believed 5: ratio 1); A beside B observed at 2 steps/s.

    rho_obs = 2 / 5 = 0.4 against the prior 0.8: ratio 0.5. Side (A, B, v100, 1), weight 1, k 0.1, pool
    (v100, 1) log m = 0.5 log 0.5: log r = (log 0.5 + 0.1 x 0.5 log 0.5) / 1.1 = 0.954545 log 0.5.
    Believed rho_a = 0.8 x 0.5 ** 0.954545 = 0.412947, below min_pair_rate 0.5: the model drops the pair.
    """
    learner = ProfileLearner(hand_context(), LearnConfig())
    learner.observe([_obs("j1", A, 1, 5.0, 230.0), _obs("j2", A, 1, 2.0, None, partner=B)], [])
    pair = learner.context().pairs[0]
    assert isinstance(pair, PairSlowdown)
    assert pair.rho_a == pytest.approx(0.8 * 0.5**0.9545454545, rel=1e-9)
    assert pair.rho_b == pytest.approx(0.6 * 0.5**0.5, rel=1e-9)  # B's side unobserved: the pool's correction


def test_low_utilisation_makes_half_the_gpus_worth_trying() -> None:
    """A on 2 GPUs observed at utilisation 0.3 (< 0.5) and its prior rate (ratio 1), 220 W (dynamic 190 W).

    The 1-GPU cell, never observed, is believed to run at the 2-GPU rate, 9 steps/s, with the same dynamic
    energy per step: 2 x 190 W on one GPU, P = 30 + 380 = 410 W. Its basis is "explore".
    """
    learner = ProfileLearner(hand_context(), LearnConfig())
    learner.observe([_obs("j1", A, 2, 9.0, 220.0, util=0.3)], [])
    belief = {(p.type, p.gpus, p.setting): p for ps in learner.context().profiles_by_type.values() for p in ps}
    assert belief[(A, 1, 250)].steps_per_s == pytest.approx(9.0)
    assert belief[(A, 1, 250)].power_w == pytest.approx(410.0)
    assert learner.basis(A, "v100", 1) == "explore"
    learner.observe([_obs("j1", A, 1, 5.0, 230.0)], [])
    assert learner.basis(A, "v100", 1) == "observed"


@pytest.fixture(scope="module")
def truth_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("truth") / "truth.json"
    path.write_text(json.dumps(truth_library(json.loads(profile_library().read_text()))))
    return path


R18 = "ResNet-18 (batch size 32)"
R50 = "ResNet-50 (batch size 128)"
START_S = PASS_DELAY_REAL_S + 1.0 + 30.0
"""What every start costs on the simulated Slurm at its defaults (s): Slurm's pass after the release, a real second's
launch, then a 30 s load."""
EVENT_WAIT_S = 36.0
"""An arrival after the agent's first round is planned a tenth of a 360 s round after it (test_slurm_replay.py)."""


def _top_rate(lib: ProfileLibrary, job_type: str, gpus: int) -> float:
    """Steps per second of ``job_type`` on ``gpus`` V100s at the top setting of ``lib``."""
    profiles = [p for p in lib.profiles if p.type == job_type and p.gpu_type == "v100" and p.gpus == gpus]
    return max(profiles, key=lambda p: p.setting).steps_per_s


def _true_rate(job_type: str, gpus: int) -> float:
    """The default truth's top-setting rate by hand: ``X_true(n) = X(1) S(n)``, ``S(n) = n / (1 + 0.08 (n - 1))``.

    Below the 3.3 ceiling for n <= 4: R18 on 2 GPUs 29.947 x 1.851852 = 55.458 steps/s (the prior says 94.249), R50
    on 4 GPUs 2.49677 x 3.225806 = 8.0541 (the prior 7.02929).
    """
    return _top_rate(load_profile_library(None), job_type, 1) * gpus / (1 + 0.08 * (gpus - 1))


def _top_profile(lib: ProfileLibrary, job_type: str, gpus: int) -> Profile:
    """``job_type``'s profile on ``gpus`` V100s at the top setting of ``lib``."""
    profiles = [p for p in lib.profiles if p.type == job_type and p.gpu_type == "v100" and p.gpus == gpus]
    return max(profiles, key=lambda p: p.setting)


def _true_power_ratio(truth: ProfileLibrary, job_type: str, gpus: int) -> float:
    """The truth's dynamic power per GPU over the prior's at the top setting: ``(P - Pidle)_true / (P - Pidle)``."""
    prior = load_profile_library(None)
    idle_true = float(truth.gpu_types["v100"]["idle_power_w"])
    idle_prior = float(prior.gpu_types["v100"]["idle_power_w"])
    dyn_true = _top_profile(truth, job_type, gpus).power_w - idle_true
    return dyn_true / (_top_profile(prior, job_type, gpus).power_w - idle_prior)


def _true_ratio(job_type: str, gpus: int) -> float:
    """The truth's throughput over the prior's (the same at every setting): R18 2 GPUs 0.5884, R50 4 GPUs 1.1458."""
    return _true_rate(job_type, gpus) / _top_rate(load_profile_library(None), job_type, gpus)


@pytest.fixture
def two_jobs(tmp_path: Path) -> Path:
    """R18 on 2 GPUs (40,000 steps, at 0 s) and R50 on 4 GPUs (6,000 steps, at 5 s): both fit on one V100 node."""
    return write_gavel_trace(tmp_path / "two.trace", [(R18, 40_000, 0, 2), (R50, 6_000, 5, 4)])


def test_simulate_on_the_loop_runs_jobs_by_the_truth(tmp_path: Path, truth_file: Path, two_jobs: Path) -> None:
    """``simulate --truth --learn`` on the loop: fifo-max's jobs run at the truth's rates, not the prior's.

    Each starts when the agent releases it (R18 at its arrival, R50 at the event round 36 s after the first) and
    pays the launch and the load: R18 31 + 40,000 / (29.947 x 1.851852) = 752.3 s (721.3 s of steps where the
    prior's 94.25 steps/s would take 424.4 s); R50 31 + 31 + 6,000 / (2.49677 x 3.225806) = 807.0 s.
    """
    out = tmp_path / "sim"
    args = ["simulate", str(two_jobs), "--cluster", "v100:8", "-p", "fifo-max", "--truth", str(truth_file)]
    result = CliRunner().invoke(app, [*args, "--learn", "--no-plots", "-q", "-o", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "fifo-max" / "summary.json").read_text())
    assert summary["completed"] == 2 and summary["stop_reason"] == "completed"
    spec = summary["replay_key"]["spec"]
    assert spec["learn"] is True and spec["truth"] == str(truth_file)
    with (out / "fifo-max" / "jobs.csv").open() as f:
        jct = {row["job_id"]: float(row["jct_s"]) for row in csv.DictReader(f)}
    assert jct["j0"] == pytest.approx(START_S + 40_000 / _true_rate(R18, 2), rel=1e-9)
    assert jct["j1"] == pytest.approx(EVENT_WAIT_S - 5 + START_S + 6_000 / _true_rate(R50, 4), rel=1e-9)
    # The log says what the node's idle GPUs showed: the truth's 41 W, not the prior's 34 W (shrunk a little).
    learned = re.findall(
        r"learned: v100 idle power ([0-9.]+) W per GPU \(prior 34.0 W\)", (out / "fifo-max" / "agent.log").read_text()
    )
    assert learned and float(learned[0]) == pytest.approx(41.0, rel=0.05)


def _recorded_agents(monkeypatch: pytest.MonkeyPatch, start_s: float | None = None) -> list[Any]:
    """Every loop agent the test's replays make, in order; with ``start_s``, each told that ``--start-s``."""
    from dataclasses import replace

    from wattplan.planner.agent import loop

    agents: list[loop.Agent] = []
    plain_init = loop.Agent.__init__

    def recording(self: loop.Agent, config: Any, *args: Any, **kwargs: Any) -> None:
        plain_init(self, config if start_s is None else replace(config, start_s=start_s), *args, **kwargs)
        agents.append(self)

    monkeypatch.setattr(loop.Agent, "__init__", recording)
    return agents


def _kept_feeds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[JobObservation], list[GpuObservation]]]:
    """Every learner feed the test's replays keep in their state (``planner.agent.learned_state.save_feed``)."""
    from wattplan.planner.agent import loop

    kept: list[tuple[int, list[JobObservation], list[GpuObservation]]] = []
    plain_save = loop.save_feed

    def keeping(store: Any, rnd: int, jobs: list[JobObservation], gpus: list[GpuObservation]) -> None:
        plain_save(store, rnd, jobs, gpus)
        kept.append((rnd, list(jobs), list(gpus)))

    monkeypatch.setattr(loop, "save_feed", keeping)
    return kept


def test_learning_on_the_loop_moves_the_belief_toward_the_truth(
    tmp_path: Path, truth_file: Path, two_jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fifo-max runs R18 on 2 GPUs and R50 on 4 for about two rounds each, alone, at the truth's rates.

    The prior believes ratio 1; the truth is 0.5884 (R18, 2 GPUs) and 1.1458 (R50, 4 GPUs) of the prior. With
    one whole window each against a parent worth 0.1 (design §10.6) the learner's type estimate is within 5% of
    the truth, and closer to it than the prior.
    """
    agents = _recorded_agents(monkeypatch)
    kept = _kept_feeds(monkeypatch)
    spec = ReplaySpec(trace=two_jobs, cluster="v100:8", policies=("fifo-max",), truth=truth_file, learn=True)
    result = replay_on_slurm(spec, "fifo-max")
    assert result.summary["completed"] == 2
    (agent,) = agents
    assert agent.cfg.learn
    learner = agent.learner
    assert learner is not None, "the loop replayed with --learn but never made a learner"
    # What the loop kept in its state gives a restarted agent the same beliefs (planner.agent.learned_state).
    state = AgentStore(tmp_path / "restart.db")
    for rnd, jobs, gpus in kept:
        save_feed(state, rnd, jobs, gpus)
    restored, rounds = restored_learner(learner.prior, state)
    state.close()
    assert rounds == len(kept) >= 2 and restored.context() == learner.context()
    assert restored.idle_power_w("v100") == learner.idle_power_w("v100")
    for job_type, gpus in ((R18, 2), (R50, 4)):
        true_x = _true_ratio(job_type, gpus)
        believed = learner.x_ratio(job_type, "v100", gpus)
        assert believed == pytest.approx(true_x, rel=0.05), (job_type, gpus)
        assert abs(believed - true_x) < abs(1.0 - true_x)
    # Only windows a job ran through in one run, loaded, count. R18 (Slurm job 1) starts at 1 s and loads until 31:
    # of the rounds at 0, 36 (R50's arrival), 396 and 753 (the first poll after R18 ends at 752.3 s), only the
    # window [36, 396] is whole (one round, weight 1). R50 (job 2) starts at 37: only [396, 753] (357 / 360).
    assert learner.evidence("throughput", ("job", "1", "v100", 2)) == pytest.approx(1.0)
    assert learner.evidence("throughput", ("job", "2", "v100", 4)) == pytest.approx(357.0 / 360.0)
    # Power: the node's two GPUs no job held show the truth's idle power, and with it each job's dynamic power.
    truth = load_profile_library(truth_file)
    idle_true = float(truth.gpu_types["v100"]["idle_power_w"])
    assert idle_true != float(load_profile_library(None).gpu_types["v100"]["idle_power_w"])
    assert learner.idle_power_w("v100") == pytest.approx(idle_true, rel=0.01)  # shrunk a little to the prior's
    for job_type, gpus in ((R18, 2), (R50, 4)):
        true_p = _true_power_ratio(truth, job_type, gpus)
        believed = learner.power_ratio(job_type, "v100", gpus)
        assert believed == pytest.approx(true_p, rel=0.05), (job_type, gpus, true_p)
        assert abs(believed - true_p) < abs(1.0 - true_p)


def test_a_job_still_loading_when_the_window_begins_is_not_learned_from_without_start_s(
    truth_file: Path, two_jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100 s load the agent is not told of (``--start-s 0``, the default on a real cluster).

    R18 starts at about 1 s and loads until about 101: the window [36, 396] begins while it loads, and its start
    before the window lets it through the start rule. Its first steps show at the read of 396, so only the windows
    after that count: one whole window, [396, 756], at the truth's rate. Taken with the load in it, the rate would
    be 65 of 360 s (18%) low.
    """
    from wattplan.planner.control.slurm_replay import SimulatedCluster

    agents = _recorded_agents(monkeypatch, start_s=0.0)
    spec = ReplaySpec(trace=two_jobs, cluster="v100:8", policies=("fifo-max",), truth=truth_file, learn=True)
    assert replay_on_slurm(spec, "fifo-max", SimulatedCluster(load_s=100.0)).summary["completed"] == 2
    learner = agents[0].learner
    assert learner is not None and agents[0].cfg.start_s == 0.0
    assert learner.evidence("throughput", ("job", "1", "v100", 2)) == pytest.approx(1.0)
    assert learner.x_ratio(R18, "v100", 2) == pytest.approx(_true_ratio(R18, 2), rel=0.05)


def test_a_restarted_loop_takes_back_what_its_learner_was_shown(
    tmp_path: Path, truth_file: Path, two_jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second replay whose state holds the first one's learner feed starts from the first one's beliefs.

    Each replay sees one whole window of Slurm job 1 (weight 1) and 357/360 of job 2 (the test above); with the
    first replay's feed taken back, the second learner holds both: 2 and 2 x 357/360. The log says so once.
    """
    from dataclasses import asdict

    kept = _kept_feeds(monkeypatch)
    spec = ReplaySpec(trace=two_jobs, cluster="v100:8", policies=("fifo-max",), truth=truth_file, learn=True)
    assert replay_on_slurm(spec, "fifo-max").summary["completed"] == 2
    first = [(rnd, [asdict(o) for o in jobs], [asdict(o) for o in gpus]) for rnd, jobs, gpus in kept]
    agents = _recorded_agents(monkeypatch)
    monkeypatch.setattr(AgentStore, "learner_feeds", lambda self: first)  # the state of the run before
    lines: list[str] = []
    assert replay_on_slurm(spec, "fifo-max", log=lines.append).summary["completed"] == 2
    took = [line for line in lines if "learner: took back" in line]
    assert len(took) == 1 and f"in {len(first)} earlier round(s)" in took[0], took
    learner = agents[0].learner
    assert learner is not None
    assert learner.evidence("throughput", ("job", "1", "v100", 2)) == pytest.approx(2.0)
    assert learner.evidence("throughput", ("job", "2", "v100", 4)) == pytest.approx(2 * 357.0 / 360.0)


def test_the_truth_given_as_the_profiles_replays_alike_with_or_without_truth(truth_file: Path, two_jobs: Path) -> None:
    """Planning with the truth as profiles, and the truth given again as ``--truth``: the same loop replay.

    The cluster then draws the truth's measured powers: the node's 230 W (not the 200 W assumption) and each of
    the 8 GPUs' 41 W idle, every second of the energy window, which runs from the first arrival to the last
    completion: node 230 x makespan, idle 8 x 41 x makespan.
    """
    plain = replay_on_slurm(ReplaySpec(trace=two_jobs, cluster="v100:8", profiles=truth_file), "powerflow")
    oracle = replay_on_slurm(
        ReplaySpec(trace=two_jobs, cluster="v100:8", profiles=truth_file, truth=truth_file), "powerflow"
    )
    untimed = [{k: v for k, v in r.summary.items() if k not in ("wall_s", "cpu_s")} for r in (plain, oracle)]
    assert untimed[0] == untimed[1] and plain.jobs == oracle.jobs and plain.power_steps == oracle.power_steps
    s = oracle.summary
    assert s["completed"] == 2
    assert s["energy_node_kwh"] * 3.6e6 == pytest.approx(230.0 * s["makespan_s"], rel=1e-9)
    assert s["energy_idle_kwh"] * 3.6e6 == pytest.approx(8 * 41.0 * s["makespan_s"], rel=1e-9)


def test_truth_cli_and_a_truth_library_missing_a_profile(tmp_path: Path) -> None:
    truth = tmp_path / "truth.json"
    result = CliRunner().invoke(app, ["profiles", "truth", "--out", str(truth), "--node-power-w", "240"])
    assert result.exit_code == 0, result.output
    bad = CliRunner().invoke(app, ["profiles", "truth", "--cap", "0", "--alpha", "-1", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--cap" in bad.output and "--alpha" in bad.output
    assert not (tmp_path / "x").exists()
    lib = load_profile_library(truth)
    assert lib.gpu_types["v100"]["node_power_w"] == 240.0 and lib.gpu_types["v100"]["idle_power_w"] == 41.0
    doc = json.loads(truth.read_text())
    doc["profiles"] = [p for p in doc["profiles"] if p["gpus"] == 8]  # the truth lacks every 1-GPU profile
    truth.write_text(json.dumps(doc))
    args = ["simulate", "6c71a0.trace", "--cluster", "v100:16,p100:8", "--start-s", "2510560", "--max-jobs", "4"]
    result = CliRunner().invoke(
        app, [*args, "--solver", "greedy", "--truth", str(truth), "--no-plots", "-q", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "truth-missing" in result.output


def test_profile_extras_survive_loading() -> None:
    doc = _tiny_prior()
    doc["profiles"][0]["basis"] = {"kind": "measured", "points": ["pt-1"], "rel_error": 0.01, "reason": "r"}
    lib = library_from_doc(doc, "x")
    assert lib.profiles[0] == Profile("A", "v100", 1, 250, 10.0, 230.0)
    assert lib.profile_extras[("A", "v100", 1, 250)]["basis"]["points"] == ["pt-1"]


def test_twice_the_gpus_predicted_from_utilisation() -> None:
    """A alone on 1 GPU at 250 W: observed 5 steps/s (its prior: ratio 1), 230 W (dynamic 200 W), utilisation 0.8.

    Two GPUs, never observed: stretch = 0.8 / 2 + 1 - 0.8 = 0.6, X(2) = 5 / 0.6 = 8.3333 steps/s (the prior
    said 9); busy share u' = 0.4 / 0.6 = 0.66667; dynamic power per GPU 200 x 0.66667 / 0.8 = 166.667 W,
    P = 30 + 166.667 = 196.667 W. Its basis is "model".
    """
    learner = ProfileLearner(hand_context(), LearnConfig())
    learner.observe([_obs("j1", A, 1, 5.0, 230.0, util=0.8)], [])
    belief = {(p.type, p.gpus, p.setting): p for ps in learner.context().profiles_by_type.values() for p in ps}
    assert belief[(A, 2, 250)].steps_per_s == pytest.approx(5 / 0.6)
    assert belief[(A, 2, 250)].power_w == pytest.approx(30 + 200 * (0.4 / 0.6) / 0.8)
    assert learner.basis(A, "v100", 2) == "model"


def test_truth_with_a_ceiling_per_family() -> None:
    """cap_spread 0 is one curve for all; cap_spread 1 gives a family the ceiling 3.3 x 2^h, h in [-1, 1]."""
    from wattplan.planner.profiling.truth import family_factor

    assert family_factor("ResNet-50 (batch size 64)", 0.0) == 1.0
    f = family_factor("CycleGAN", 1.0)
    assert 0.5 <= f <= 2.0
    assert family_factor("ResNet-50 (batch size 64)", 1.0) == family_factor("ResNet-50 (batch size 128)", 1.0)
    p = TruthParams(cap_spread=1.0)
    # S(8) = min(8 / 1.56, 3.3 f) = min(5.128, 3.3 f) for each family.
    for job_type in ("CycleGAN", "ResNet-50 (batch size 64)", "A3C"):
        expected = min(8 / 1.56, 3.3 * family_factor(job_type, 1.0))
        assert speedup(8, p, job_type) == pytest.approx(max(1.0, expected))
    assert len({round(speedup(8, p, t), 6) for t in ("CycleGAN", "ResNet-50 (batch size 64)", "A3C")}) == 3


def test_dynamic_power_waits_for_a_measured_idle_power() -> None:
    """A alone on 1 GPU at 250 W draws 241 W; the prior believes 230 W over a 30 W idle (dynamic 200 W).

    Round 1 has no idle GPU: nothing is learned about power yet (subtracting the prior's 30 W would say 211 W).
    Round 2 measures idle GPUs at 41 W (weight 10): idle belief (10 x 41 + 0.1 x 30) / 10.1 = 40.89109 W, and
    the held observation gives r = (241 - 40.89109) / 200 = 1.000545; cell log = (log r + 0.1 x 0.5 log r) / 1.1.
    """
    learner = ProfileLearner(hand_context(), LearnConfig())
    learner.observe([_obs("j1", A, 1, 5.0, 241.0)], [])
    assert learner.power_ratio(A, "v100", 1) == 1.0
    learner.observe([], [GpuObservation("v100", 41.0, 10.0, 100.0, 1.0)])
    idle = (10 * 41 + 0.1 * 30) / 10.1
    assert learner.idle_power_w("v100") == pytest.approx(idle)
    r = (241 - idle) / 200
    assert learner.power_ratio(A, "v100", 1) == pytest.approx(r ** (1.05 / 1.1), rel=1e-12)
