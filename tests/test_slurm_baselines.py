"""The baselines operators would pick (``slurm``, ``slurm-powersave``, ``maxq``) and the agent on a power-saving Slurm.

MaxQ's table by hand on a small library; one job replayed on each baseline with its times and energy by hand; the
agent's reading of powered-down nodes; and the agent on a cluster with power saving finishing a workload, each
result above the floor that lets idle nodes draw nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.sim_helpers import NO_SLURM_WAITS
from wattplan.planner.agent.slurm_queue import read_nodes
from wattplan.planner.contracts.domain import Profile
from wattplan.planner.control.session import split_policies
from wattplan.planner.control.sim_slurm import SHUTDOWN_S
from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
from wattplan.planner.core.maxq import maxq_settings
from wattplan.planner.profile_library.index import index_library
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.sim.replay import ReplaySpec

LIB = load_profile_library(None)
DATA = Path(__file__).resolve().parent / "data" / "agent"
TRACE_LINE = "{kind}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}\n"
RESNET = "ResNet-50 (batch size 64)"


def _trace(tmp_path: Path, jobs: list[tuple[str, int, int, float]]) -> Path:
    path = tmp_path / "jobs.trace"
    path.write_text("".join(TRACE_LINE.format(kind=k, gpus=g, steps=s, arrival=a) for k, g, s, a in jobs))
    return path


def test_maxq_takes_the_lowest_setting_that_keeps_97_percent_at_every_count() -> None:
    speeds = {1: {100: 9.8, 150: 9.9, 200: 10.0}, 2: {100: 19.0, 150: 19.5, 200: 20.0}}
    profiles = tuple(Profile("T", "g", n, s, x, 50.0 + s / 2) for n, d in speeds.items() for s, x in d.items())
    lib = ProfileLibrary({"g": {"name": "g", "idle_power_w": 30, "settings": [100, 150, 200]}}, profiles, (), [])
    # count 1 keeps 97% at 100 W (9.8 >= 9.7) but count 2 does not (19.0 < 19.4): 150 W keeps both
    assert maxq_settings(lib.profiles) == {("T", "g"): 150}
    assert maxq_settings(lib.profiles, keep=0.95) == {("T", "g"): 100}
    assert maxq_settings(lib.profiles, keep=1.0) == {("T", "g"): 200}


def test_maxq_of_the_shipped_library_keeps_97_percent_and_no_lower_setting_does() -> None:
    table = maxq_settings(LIB.profiles)
    assert table
    for (job_type, gpu_type), setting in table.items():
        by_count: dict[int, dict[int, float]] = {}
        for p in LIB.profiles:
            if (p.type, p.gpu_type) == (job_type, gpu_type):
                by_count.setdefault(p.gpus, {})[p.setting] = p.steps_per_s
        for d in by_count.values():
            assert d[setting] >= 0.97 * d[max(d)]
        lower = [s for s in set.intersection(*(set(d) for d in by_count.values())) if s < setting]
        assert all(any(d[s] < 0.97 * d[max(d)] for d in by_count.values()) for s in lower)


def test_split_policies_keeps_the_baselines_apart() -> None:
    assert split_policies(["wattplan", "maxq", "slurm"]) == (["slurm", "maxq"], ["wattplan"])
    assert split_policies(["all"]) == (["slurm"], ["all"])
    assert split_policies(["slurm-powersave"]) == (["slurm-powersave"], [])


def test_one_job_on_each_baseline_by_hand(tmp_path: Path) -> None:
    """Two nodes, one 1-GPU job at 0: the second node idles; with power saving it is off after 600 + 60 s.

    maxq runs the job at its table's power limit: slower by the profiles, at less power.
    """
    steps = 200_000
    spec = ReplaySpec(trace=_trace(tmp_path, [(RESNET, 1, steps, 0.0)]), cluster="v100:16", policies=("fifo-max",))
    setup = SimulatedCluster(load_s=30.0, launch_s=0.0, suspend_s=600.0, resume_s=300.0, **NO_SLURM_WAITS)
    truth = index_library(LIB)
    limit = maxq_settings(LIB.profiles)[(RESNET, "v100")]
    results = {p: replay_on_slurm(spec, p, setup) for p in ("slurm", "slurm-powersave", "maxq")}
    finish0 = results["slurm"].jobs[0]["jct_s"]
    idle, top = truth.gpu_types["v100"].idle_power_w, max(truth.gpu_types["v100"].settings)
    for policy, result in results.items():
        setting = limit if policy == "maxq" else top
        profile = truth.profiles[(RESNET, "v100", 1, setting)]
        finish = 30.0 + steps / profile.steps_per_s
        (job,) = result.jobs
        assert math.isclose(job["jct_s"], finish, rel_tol=1e-9), policy
        assert finish > 660.0
        s = result.summary
        assert (s["power_saving"] is None) == (policy == "slurm")
        nodes_on_s = 2 * finish if policy == "slurm" else finish + 600.0 + SHUTDOWN_S
        assert s["energy_dynamic_kwh"] * 3.6e6 == pytest.approx((profile.power_w - idle) * (finish - 30.0))
        assert s["energy_idle_kwh"] * 3.6e6 == pytest.approx(8 * idle * nodes_on_s)
        node_w = results["slurm"].summary["energy_node_kwh"] / (2 * finish0)  # kWh per node-second
        assert s["energy_node_kwh"] == pytest.approx(node_w * nodes_on_s)
    assert results["maxq"].summary["energy_kwh"] < results["slurm-powersave"].summary["energy_kwh"]
    assert results["slurm-powersave"].summary["energy_kwh"] < results["slurm"].summary["energy_kwh"]


POWERED_DOWN = {"name": "v100-1", "state": "idle", "state_flags": ["POWERED_DOWN"], "gres": "gpu:v100:8"}


def _sinfo(*nodes: dict[str, object]) -> str:
    base = {"active_features": "", "partitions": ["gpu"]}
    meta = {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}}
    return json.dumps({"meta": meta, "nodes": [{**base, **n} for n in nodes]})


def test_a_powered_down_node_reads_as_off_and_one_powering_down_or_failed_as_down() -> None:
    text = _sinfo(
        {"name": "v100-0", "state": "idle", "state_flags": [], "gres": "gpu:v100:8"},
        POWERED_DOWN,
        {"name": "v100-2", "state": "idle", "state_flags": ["POWERING_DOWN"], "gres": "gpu:v100:8"},
        {"name": "v100-3", "state": "down", "state_flags": ["POWERED_DOWN"], "gres": "gpu:v100:8"},
        {"name": "v100-4", "state": "idle", "state_flags": ["POWERED_DOWN", "NOT_RESPONDING"], "gres": "gpu:v100:8"},
    )
    read = read_nodes(text)
    assert not read.problems
    assert [n.state for n in read.nodes] == ["idle", "off", "down", "down", "down"]


@pytest.mark.parametrize(
    ("document", "states"),
    [
        ("sinfo_powered_down.json", ["off", "off"]),
        ("sinfo_powering_down.json", ["down", "down"]),  # no job until it is off
        ("sinfo_powering_up.json", ["mixed", "off"]),  # booting for a job: NOT_RESPONDING until slurmd starts
    ],
)
def test_slurm_2205s_power_states_as_captured(document: str, states: list[str]) -> None:
    """Documents captured from Slurm 22.05.8 with power saving (tests/data/agent/capture_power.py)."""
    read = read_nodes((DATA / document).read_text())
    assert not read.problems and [n.state for n in read.nodes] == states


def test_the_agent_with_power_saving_finishes_above_the_floor_without_idle_nodes(tmp_path: Path) -> None:
    """Wattplan on a cluster that powers idle nodes down: every job done, the floor below every result.

    The workload leaves nodes idle for long stretches (a burst, a gap, a burst): Slurm powers them down, the agent
    plans on them again when the second burst comes.
    """
    jobs = [(RESNET, 1 << (k % 3), 60_000, 400.0 * k) for k in range(6)]
    jobs += [(RESNET, 1 << (k % 3), 60_000, 20_000.0 + 300.0 * k) for k in range(6)]
    spec = ReplaySpec(trace=_trace(tmp_path, jobs), cluster="v100:32", policies=("wattplan",))
    out = tmp_path / "out"
    from wattplan.planner.control.session import setup_of, with_floor
    from wattplan.planner.sim.options import SimulateOptions

    setup = setup_of(SimulateOptions(power_save=True))
    results = with_floor(spec, [replay_on_slurm(spec, p, setup, out) for p in ("slurm", "slurm-powersave", "wattplan")])
    by = {r.policy: r.summary for r in results}
    assert all(s["completed"] == 12 for s in by.values())
    assert by["wattplan"]["power_saving"] == {"suspend_s": 600.0, "resume_s": 300.0}
    floor = by["slurm"]["energy_floor_kwh"]
    assert "every node on" not in by["slurm"]["energy_floor_note"]
    assert all(s["energy_kwh"] >= floor for s in by.values())
    # the gap powers every node down: Slurm with power saving spends less than Slurm alone, and the agent, which
    # finished the second burst, planned on powered-down nodes (it stalls when it plans on none)
    assert by["slurm-powersave"]["energy_kwh"] < by["slurm"]["energy_kwh"]
    assert by["wattplan"]["stop_reason"] == "completed"
    first_burst_end = max(r["finish_s"] for r in results[2].jobs if r["arrival_s"] < 20_000.0)
    assert first_burst_end + 600.0 + SHUTDOWN_S < 20_000.0


def test_the_slurm_engine_prices_a_restart_at_what_the_simulated_slurm_charges(tmp_path: Path) -> None:
    """Without --restart-s tau is the requeue delay, the launch and the load: (6 + 1) x 30 + 30 s at scale 30."""
    from wattplan.planner.contracts.problems import InputError
    from wattplan.planner.control.session import setup_of, with_restart_cost
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.session import replay_spec

    trace = _trace(tmp_path, [(RESNET, 1, 1000, 0.0)])

    def tau(**given: float) -> float:
        options = SimulateOptions.checked(given)
        spec = with_restart_cost(replay_spec(trace, "v100:8", options), options, setup_of(options))
        return spec.rules.restart_s

    assert tau(time_scale=30.0) == pytest.approx(6 * 30 + 1 * 30 + 30)
    assert tau(time_scale=1.0) == pytest.approx(6 + 1 + 30)
    assert tau(time_scale=30.0, restart_s=50.0) == 50.0  # given: kept
    assert tau(time_scale=30.0, load_s=10.0, requeue_delay_s=20.0) == pytest.approx(20 + 30 + 10)
    with pytest.raises(InputError, match="restart-s"):
        tau(time_scale=100.0)  # 700 s of delay and launch: longer than a 360 s round


def test_a_job_waiting_for_a_node_that_powers_down_is_planned_once_it_is_off(tmp_path: Path) -> None:
    """A job waiting for a node Slurm is powering down is planned a poll after it is off, not a round later.

    Two nodes of 8 GPUs at time scale 30 (a poll every 30 emulated s); a holds one for hours at full power (the
    start rule with no slowdown: it keeps its 8 GPUs). The other is idle: it powers down from 615 s (30 s
    ``POWERING_DOWN``, then off at 645 s). b arrives at 620 s; the round its arrival starts (630 s) leaves the node
    out and b waits. No queue event follows, so the agent looks again a poll later (660 s) rather than at the next
    periodic round (1,800 s) and plans b on the node, off by then.
    """
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.control.session import setup_of
    from wattplan.planner.sim.options import SimulateOptions

    trace = tmp_path / "two.trace"  # a Gavel trace: the requested GPUs in the last column
    trace.write_text(f"{RESNET}\tcmd\t-n\t1\t5000000\t0\t8\n{RESNET}\tcmd\t-n\t1\t2000\t620\t1\n")
    rules = RoundRules(1800.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.0, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules, max_rounds=20)
    setup = setup_of(SimulateOptions(power_save=True, time_scale=30.0, suspend_s=615.0))
    result = replay_on_slurm(spec, "wattplan", setup, tmp_path / "out")
    b = next(j for j in result.jobs if j["job_id"] == "j1")
    assert 645.0 <= b["start_s"] < 1_200.0, b


def test_fifo_maxq_runs_the_agent_at_maxqs_setting_as_slurm_alone_with_its_prolog(tmp_path: Path) -> None:
    """The baseline ``maxq`` decided by the agent's loop (``fifo-maxq``) and by Slurm alone with a prolog (``maxq``).

    Four jobs of two types on a cluster with power saving, each fitting when it arrives: every job runs at MaxQ's
    setting for its type in both (the library's table; a round instance carries the same profiles), so each job's
    GPU energy is the same, and slower than at full power (``slurm-powersave``). The agent adds only its own
    latency to a start, at most a poll (a real second, 30 emulated s at the default time scale).
    """
    from wattplan.planner.control.session import setup_of
    from wattplan.planner.sim.options import SimulateOptions

    jobs = [(RESNET, 1, 150_000, 0.0), ("A3C", 1, 200_000, 50.0), (RESNET, 2, 150_000, 4000.0), ("A3C", 1, 90_000, 9e3)]
    spec = ReplaySpec(trace=_trace(tmp_path, jobs), cluster="v100:16", policies=("fifo-maxq",))
    setup = setup_of(SimulateOptions(power_save=True))
    by = {p: replay_on_slurm(spec, p, setup, tmp_path / p) for p in ("maxq", "fifo-maxq", "slurm-powersave")}
    agent, alone, full = by["fifo-maxq"].jobs, by["maxq"].jobs, by["slurm-powersave"].jobs
    assert len(agent) == len(alone) == len(full) == 4
    for a, b, f in zip(agent, alone, full, strict=True):
        assert a["requeues"] == 0 and a["steps"] == b["steps"]
        assert a["gpu_energy_j"] == pytest.approx(b["gpu_energy_j"], rel=1e-9)
        assert b["jct_s"] <= a["jct_s"] <= b["jct_s"] + 30.0
        assert a["jct_s"] > f["jct_s"] and a["gpu_energy_j"] < f["gpu_energy_j"]
    energy = {p: r.summary["energy_kwh"] for p, r in by.items()}
    assert energy["fifo-maxq"] == pytest.approx(energy["maxq"], rel=0.01)
    assert energy["fifo-maxq"] < energy["slurm-powersave"]
