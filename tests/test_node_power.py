"""The agent powering idle nodes down itself (``--power-down``; issue 44, item 1).

The rule by hand (:mod:`planner.agent.node_power`), the call it sends, the simulated Slurm answering ``scontrol
update NodeName=N State=POWER_DOWN`` as the emulated cluster's Slurm 22.05 did, and a replay whose energy differs
from Slurm's power saving alone by exactly the idle node's draw over the time it was powered down sooner.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.sim_slurm import IDLE, NODE_W, R18, simulated, x
from wattplan.planner.agent.node_power import (
    boot_wait_share,
    choose_power_down,
    choose_power_up,
    demand_cdf,
    demand_rate,
    overflow_shares,
    reserve_nodes,
    tightest_limit,
)
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.agent.slurm_actions import power_down_call, power_up_call
from wattplan.planner.agent.slurm_config import power_save_excluded, slurm_config
from wattplan.planner.agent.slurm_detail import query_job_gpus
from wattplan.planner.agent.slurm_queue import read_nodes
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.sim_slurm import PowerSaving, SimJob, SimulatedSlurm
from wattplan.planner.control.slurm_replay import SimulatedCluster, SlurmReplayResult, replay_on_slurm
from wattplan.planner.profile_library.index import index_library
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.replay import ReplaySpec

LIB = load_profile_library(None)


# ---------------------------------------------------------------------------------------------- the rule


def test_demand_rate_counts_the_gpus_of_the_window_over_its_length() -> None:
    arrivals = [(0.0, 8), (3000.0, 2), (3500.0, 4), (4000.0, 1)]
    # the last hour at t=4000 is [400, 4000]: 2 + 4 + 1 GPUs over 3600 s
    assert demand_rate(arrivals, 4000.0, 10_000.0, 3600.0) == pytest.approx(7 / 3600)
    # watched only 1000 s: the window is [3000, 4000], 2 + 4 + 1 GPUs over 1000 s (an arrival as the agent started
    # counts)
    assert demand_rate(arrivals, 4000.0, 1000.0, 3600.0) == pytest.approx(7 / 1000)
    assert demand_rate(arrivals, 4000.0, 0.0, 3600.0) == math.inf


def test_nodes_beyond_the_expected_demand_are_powered_down_in_slurm_conf_order() -> None:
    idle = ["n1", "n2", "n3"]
    # 36 GPUs in the last hour: lambda = 0.01 GPU/s; D = 0.01 x 360 = 3.6 GPUs; no free GPU: ceil(3.6 / 8) = 1 kept
    arrivals = [(100.0 * k, 4) for k in range(1, 10)]
    choice = choose_power_down(idle, 8, 0, arrivals, 3600.0, 7200.0, 360.0, waiting=0)
    assert choice.kept == ("n1",) and choice.down == ("n2", "n3")
    assert choice.demand_gpus == pytest.approx(3.6)
    # 4 GPUs free on the nodes that run: they take the 3.6 expected, every idle node goes down
    choice = choose_power_down(idle, 8, 4, arrivals, 3600.0, 7200.0, 360.0, waiting=0)
    assert choice.kept == () and choice.down == ("n1", "n2", "n3")
    # a cycle three times as long: D = 10.8, ceil((10.8 - 0) / 8) = 2 kept
    choice = choose_power_down(idle, 8, 0, arrivals, 3600.0, 7200.0, 1080.0, waiting=0)
    assert choice.kept == ("n1", "n2") and choice.down == ("n3",)
    # a burst: 16 GPUs in the last 100 s, none before in the hour. Over the hour D = 16 / 3600 x 360 = 1.6, over the
    # last cycle 16 / 360 x 360 = 16: the larger counts, two nodes kept
    burst = [(3500.0 + 10.0 * k, 2) for k in range(8)]
    choice = choose_power_down(idle, 8, 0, burst, 3600.0, 7200.0, 360.0, waiting=0)
    assert choice.demand_gpus == pytest.approx(16.0) and choice.kept == ("n1", "n2") and choice.down == ("n3",)
    # D exactly one node's worth (8 GPUs): one node kept, not two
    choice = choose_power_down(idle, 8, 0, [(3300.0, 8)], 3600.0, 360.0, 360.0, waiting=0)
    assert choice.demand_gpus == pytest.approx(8.0) and choice.kept == ("n1",)


def test_nothing_is_powered_down_while_a_job_waits_or_before_a_cycle_was_watched() -> None:
    idle = ["n1", "n2"]
    assert choose_power_down(idle, 8, 0, [], 3600.0, 7200.0, 360.0, waiting=1).down == ()
    assert choose_power_down(idle, 8, 0, [], 300.0, 300.0, 360.0, waiting=0).down == ()
    # no arrival in the last hour, watched long enough: every idle node goes down
    assert choose_power_down(idle, 8, 0, [(0.0, 8)], 7200.0, 7200.0, 360.0, waiting=0).down == ("n1", "n2")
    assert choose_power_down([], 8, 0, [], 7200.0, 7200.0, 360.0, waiting=0).down == ()


def _poisson_cdf(mu: float, m: int) -> float:
    return sum(math.exp(-mu) * mu**k / math.factorial(k) for k in range(m + 1))


def test_the_boot_wait_share_is_the_limit_times_the_jct_over_the_boot() -> None:
    """``q = min(1, x J / R)``: a share ``q`` of jobs waiting ``R`` adds ``q R / J`` to the average JCT."""
    assert boot_wait_share(0.10, 324.0, 300.0) == pytest.approx(0.108)
    assert boot_wait_share(0.03, 1000.0, 300.0) == pytest.approx(0.1)
    assert boot_wait_share(0.10, 7200.0, 300.0) == 1.0  # long jobs: a boot is within the limit
    assert boot_wait_share(None, 324.0, 300.0) == 1.0  # no limit: the mean rule alone
    assert boot_wait_share(0.0, 324.0, 300.0) == 0.0  # no slack: no job may wait a boot
    assert boot_wait_share(0.10, 324.0, 0.0) == 1.0  # a boot that takes no time costs no JCT


def test_the_limit_a_boot_is_priced_against_is_the_tightest_set() -> None:
    assert tightest_limit(0.10, None, None) == 0.10  # the by-job mode's slowdown limit
    assert tightest_limit(0.10, 0.03, 0.10) == 0.03  # steered without restarts: the average bound
    assert tightest_limit(None, 0.03, 0.01) == 0.01  # a tail bound tighter than the average's
    assert tightest_limit(None, None, None) is None


def test_the_demand_over_a_cycle_is_compound_poisson_by_hand() -> None:
    # 1-GPU jobs only: Poisson(mu)
    cdf = demand_cdf(Counter({1: 5}), 2.0, 6)
    assert cdf == pytest.approx([_poisson_cdf(2.0, m) for m in range(7)])
    # 2-GPU jobs only: A = 2 N, so P(A <= 2n + 1) = P(A <= 2n) = P(N <= n)
    cdf = demand_cdf(Counter({2: 3}), 1.5, 5)
    assert cdf == pytest.approx([_poisson_cdf(1.5, m // 2) for m in range(6)])
    # half 1-GPU, half 8-GPU jobs, mu = 1: P(A = 0) = e^-1, P(A = 1) = e^-1 x 1/2, P(A = 8) adds e^-1 x 1/2 and the
    # four 1-GPU jobs' e^-1 (1/2)^8 / 8!
    cdf = demand_cdf(Counter({1: 4, 8: 4}), 1.0, 8)
    e = math.exp(-1.0)
    assert cdf[0] == pytest.approx(e) and cdf[1] == pytest.approx(e * 1.5)
    pmf8 = cdf[8] - cdf[7]
    assert pmf8 == pytest.approx(e * 0.5 + e * 0.5**8 / math.factorial(8))
    # no arrivals: nothing is asked for
    assert demand_cdf(Counter(), 3.0, 4) == [1.0] * 5


def test_the_share_of_gpus_that_find_none_free_by_hand() -> None:
    """``E[(A - C)+] / E[A]``: Poisson(6.8) 1-GPU jobs leave 13.8% of their GPUs unserved by 7 free, 0.04% by 15."""
    mu = 6.8
    shares = overflow_shares(demand_cdf(Counter({1: 1}), mu, 20), mu)
    by_hand = [(mu - sum(1.0 - _poisson_cdf(mu, m) for m in range(c))) / mu for c in range(21)]
    assert shares[:21] == pytest.approx(by_hand)
    assert (
        shares[0] == 1.0
        and shares[7] == pytest.approx(0.1376, abs=1e-4)
        and shares[15] == pytest.approx(4.3e-4, abs=1e-5)
    )
    # 2-GPU jobs, mu = 1.5: one free GPU serves a GPU whenever a job comes, E[min(A, 1)] = P(A > 0) = 1 - e^-1.5
    shares = overflow_shares(demand_cdf(Counter({2: 1}), 1.5, 4), 3.0)
    assert shares[1] == pytest.approx((3.0 - (1.0 - math.exp(-1.5))) / 3.0)


def test_many_jobs_a_cycle_take_the_normal_law_close_to_the_exact_one() -> None:
    """Above 300 jobs a cycle: the normal law, whose 0.9 quantile of a Poisson(310) is within 2 GPUs of the exact."""
    exact = next(m for m in range(1000) if _log_poisson_cdf(310.0, m) >= 0.9)
    normal = next(m for m, p in enumerate(demand_cdf(Counter({1: 1}), 310.0, 400)) if p >= 0.9)
    assert abs(normal - exact) <= 2


def _log_poisson_cdf(mu: float, m: int) -> float:
    return sum(math.exp(k * math.log(mu) - mu - math.lgamma(k + 1)) for k in range(m + 1))


def test_a_reserve_keeps_the_node_the_mean_powers_down_on_a_knife_edge() -> None:
    """68 1-GPU jobs in the last hour: ``D = 6.8`` GPUs within 360 s, 7 free beside the running jobs.

    The mean rule keeps no idle node (6.8 <= 7). ``P(Poisson(6.8) > 7) = 0.37``: a burst outgrows the free GPUs
    in more than a third of the cycles, and 13.8% of the GPUs asked for find none free. With ``q = 0.108``
    (5-minute jobs, a 10% limit, a 300 s boot) the first idle node stays on: 15 free leave 0.04% unserved.
    """
    arrivals = [(3550.0 - 52.5 * k, 1) for k in range(68)]  # 6 of them in the last 360 s
    assert 1.0 - _poisson_cdf(6.8, 7) == pytest.approx(0.372, abs=1e-3)
    idle = ["n1", "n2", "n3"]
    mean = choose_power_down(idle, 8, 7, arrivals, 3600.0, 7200.0, 360.0, waiting=0)
    assert mean.demand_gpus == pytest.approx(6.8) and mean.kept == ()
    priced = choose_power_down(idle, 8, 7, arrivals, 3600.0, 7200.0, 360.0, waiting=0, overflow_share=0.108)
    assert priced.kept == ("n1",) and priced.down == ("n2", "n3")
    assert priced.reserved == ("n1",) and mean.reserved == ()
    assert "so that at most 11% of the GPUs asked for wait a boot" in priced.why
    assert reserve_nodes(arrivals, 3600.0, 3600.0, 360.0, 7, 8, 3, 0.108) == 1
    # no slack at all keeps every idle node on; a whole share is the mean rule
    assert choose_power_down(idle, 8, 7, arrivals, 3600.0, 7200.0, 360.0, 0, overflow_share=0.0).down == ()
    assert reserve_nodes(arrivals, 3600.0, 3600.0, 360.0, 7, 8, 3, 1.0) == 0


def test_the_reserve_never_keeps_fewer_than_the_mean_rule() -> None:
    """For every share, window and free count the priced rule keeps at least what the mean rule keeps."""
    bursts = [[(3600.0 - 37.0 * k, 1 + k % 8) for k in range(n)] for n in (0, 1, 3, 9, 20, 60)]
    for arrivals in bursts:
        for free in (0, 5, 13):
            mean = choose_power_down(["a", "b", "c", "d"], 8, free, arrivals, 3600.0, 7200.0, 360.0, 0)
            for share in (0.0, 0.01, 0.2, 0.9):
                priced = choose_power_down(
                    ["a", "b", "c", "d"], 8, free, arrivals, 3600.0, 7200.0, 360.0, 0, overflow_share=share
                )
                assert len(priced.kept) >= len(mean.kept)


def test_the_power_down_call_names_one_node_and_refuses_a_host_list() -> None:
    call = power_down_call("v100-3")
    assert call.argv == ("scontrol", "update", "NodeName=v100-3", "State=POWER_DOWN")
    assert call.jobs == () and call.verb == "power_down"
    for bad in ("v100-[0-3]", "a,b", "", "x y", "-rf"):
        with pytest.raises(ValueError, match="node name"):
            power_down_call(bad)


def test_nodes_are_booted_when_the_queue_grew_over_the_last_cycle_beyond_the_free_gpus() -> None:
    off = ["n2", "n3", "n4"]
    # 20 GPUs asked for in the last 360 s (and 40 more an hour ago, which power-up does not count): N_c = 20
    arrivals = [(3000.0, 40), (3300.0, 8), (3400.0, 8), (3500.0, 4)]
    # 3 free GPUs beside running jobs, no idle node: ceil((20 - 3) / 8) = 3 nodes wanted, all booted
    choice = choose_power_up(off, 0, 8, 3, arrivals, [], 3600.0, 7200.0, 360.0)
    assert choice.demand_gpus == pytest.approx(20.0) and choice.up == ("n2", "n3", "n4")
    said = "20.0 GPUs asked for and 0.0 ended in the last 360 s, 3 free on running nodes and 0 idle node(s): 3 booted"
    assert choice.why == said
    # one idle node and one booting with no job stand already: one more, the first in slurm.conf's order
    assert choose_power_up(off, 2, 8, 3, arrivals, [], 3600.0, 7200.0, 360.0).up == ("n2",)
    # 12 free: ceil(8 / 8) = 1 wanted, 1 standing: none
    assert choose_power_up(off, 1, 8, 12, arrivals, [], 3600.0, 7200.0, 360.0).up == ()
    # jobs that asked for 12 GPUs ended in the last cycle (and 40 before it): N_c = 8, ceil((8 - 3) / 8) = 1
    ends = [(3100.0, 40), (3350.0, 4), (3590.0, 8)]
    choice = choose_power_up(off, 0, 8, 3, arrivals, ends, 3600.0, 7200.0, 360.0)
    assert choice.demand_gpus == pytest.approx(8.0) and choice.up == ("n2",)
    # a steady queue, as many GPUs ending as asked for: nothing, even with no GPU free
    assert choose_power_up(off, 0, 8, 0, arrivals, [(3590.0, 20)], 3600.0, 7200.0, 360.0).up == ()
    # the same arrivals, 400 s later: none in the last cycle, nothing booted whatever the hour held
    assert choose_power_up(off, 0, 8, 0, arrivals, [], 4000.0, 7200.0, 360.0).up == ()
    # under a cycle watched, or nothing off: nothing
    assert choose_power_up(off, 0, 8, 0, arrivals, [], 3600.0, 300.0, 360.0).up == ()
    assert choose_power_up([], 0, 8, 0, arrivals, [], 3600.0, 7200.0, 360.0).up == ()


def test_power_up_never_boots_what_power_down_would_send_back_down() -> None:
    """``N_c <= D``: for the same arrivals and free GPUs, the reserve power-up fills is kept by power-down."""
    bursts = [[(3600.0 - 37.0 * k, 1 + k % 8) for k in range(n)] for n in (0, 1, 3, 9, 20)]
    for arrivals in bursts:
        for free in (0, 5, 13):
            for ends in ([], arrivals[:2]):
                off = ["a", "b", "c", "d"]
                wanted = len(choose_power_up(off, 0, 8, free, arrivals, ends, 3600.0, 7200.0, 360.0).up)
                down = choose_power_down(off[:wanted], 8, free, arrivals, 3600.0, 7200.0, 360.0, waiting=0).down
                assert down == ()


def test_the_power_up_call_names_one_node() -> None:
    call = power_up_call("v100-3")
    assert call.argv == ("scontrol", "update", "NodeName=v100-3", "State=POWER_UP")
    assert call.jobs == () and call.verb == "power_up"
    for bad in ("v100-[0-3]", "a,b", "", "x y", "-rf"):
        with pytest.raises(ValueError, match="node name"):
            power_up_call(bad)


def test_power_down_needs_power_saving_on_both_faces() -> None:
    with pytest.raises(InputError, match="power-down"):
        SimulateOptions.checked({"power_down": True})
    assert SimulateOptions.checked({"power_down": True, "power_save": True}).power_down
    with pytest.raises(InputError, match="power-down"):
        AgentOptions.checked({"power_down": True})
    assert AgentOptions.checked({"power_down": True, "power_save": True}).power_down
    assert AgentOptions.checked({"power_down": True, "policy": "maxq"}).power_down  # maxq runs with power saving
    for face in (SimulateOptions, AgentOptions):
        with pytest.raises(InputError, match="power-up"):
            face.checked({"power_up": True, "power_save": True})
        assert face.checked({"power_up": True, "power_down": True, "power_save": True}).power_up


# ---------------------------------------------------------------------------------------------- simulated Slurm


SAVING = PowerSaving(600.0, 300.0, 30.0)


def _slurm(jobs: list[SimJob], saving: PowerSaving | None = SAVING) -> SimulatedSlurm:
    """Two 8-GPU V100 nodes (``NODE_W`` each besides the GPUs, ``LOAD`` s per start) with power saving."""
    return simulated(jobs, (8, 8), power_saving=saving)


def _states(slurm: SimulatedSlurm) -> dict[str, tuple[str, str]]:
    read = read_nodes(slurm(("sinfo", "--json")).stdout)
    return {n.name: (n.state, n.slurm_state) for n in read.nodes}


def test_an_idle_node_told_power_down_powers_down_at_once_and_draws_nothing_once_off() -> None:
    slurm = _slurm([SimJob(1, R18, 0.0, 1, 1e9, managed=False)])
    slurm.advance_to(10.0)
    assert slurm.node_power() == {"v100-0": "on", "v100-1": "on"}
    done = slurm(("scontrol", "update", "NodeName=v100-1", "State=POWER_DOWN"))
    assert done.returncode == 0, done.stderr
    assert slurm.node_power()["v100-1"] == "powering_down"
    assert _states(slurm)["v100-1"][0] == "down"  # POWERING_DOWN: no job until it is off
    slurm.advance_to(40.0)  # SuspendTimeout 30 s
    assert slurm.node_power()["v100-1"] == "off" and _states(slurm)["v100-1"][0] == "off"
    before = slurm.energy()
    slurm.advance_to(1000.0)
    after = slurm.energy()
    assert (after.node_j - before.node_j) / 960.0 == pytest.approx(NODE_W)  # the one node still on
    assert (after.idle_j - before.idle_j) / 960.0 == pytest.approx(8 * IDLE)  # its 8 GPUs, the busy one included


def test_a_node_running_a_job_powers_down_when_it_ends_and_takes_jobs_meanwhile() -> None:
    steps = x(R18) * 70.0  # 70 s of steps at full power, after a 30 s load: each job ends 100 s after its start
    jobs = [SimJob(1, R18, 0.0, 1, steps, managed=False), SimJob(2, R18, 20.0, 1, steps, managed=False)]
    slurm = _slurm(jobs)
    slurm.advance_to(10.0)
    assert slurm(("scontrol", "update", "NodeName=v100-0", "State=POWER_DOWN")).returncode == 0
    assert slurm.node_power()["v100-0"] == "on"
    state, said = _states(slurm)["v100-0"]
    assert state == "mixed" and said == "mixed+POWER_DOWN"  # sinfo's mix!
    slurm.advance_to(30.0)  # the second job still lands on it (first fit), as 22.05 placed one there
    assert [host for host, _ in query_job_gpus(slurm)[2]] == ["v100-0"]
    slurm.advance_to(115.0)  # the first job ended at 100 s; the second runs until 120 s
    assert slurm.node_power()["v100-0"] == "on"
    slurm.advance_to(125.0)
    assert slurm.node_power()["v100-0"] == "powering_down"
    assert slurm.node_power()["v100-1"] == "on"  # never told: SuspendTime alone


def test_a_powered_down_node_told_power_up_boots_and_stays_idle_until_its_suspend_time() -> None:
    slurm = _slurm([])
    slurm.advance_to(10.0)
    assert slurm(("scontrol", "update", "NodeName=v100-1", "State=POWER_DOWN")).returncode == 0
    slurm.advance_to(100.0)
    assert slurm.node_power()["v100-1"] == "off"
    done = slurm(("scontrol", "update", "NodeName=v100-1", "State=POWER_UP"))
    assert done.returncode == 0, done.stderr
    assert slurm.node_power()["v100-1"] == "powering_up"
    state, said = _states(slurm)["v100-1"]
    assert state == "idle" and said == "idle+NOT_RESPONDING+POWERING_UP"  # idle#: booting, plannable
    slurm.advance_to(399.0)  # ResumeTimeout's boot: 300 s
    assert slurm.node_power()["v100-1"] == "powering_up"
    slurm.advance_to(401.0)
    assert slurm.node_power()["v100-1"] == "on" and _states(slurm)["v100-1"] == ("idle", "idle")
    assert slurm(("scontrol", "update", "NodeName=v100-1", "State=POWER_UP")).returncode == 0  # on: left so
    slurm.advance_to(999.0)  # SuspendTime 600 s from its boot
    assert slurm.node_power()["v100-1"] == "on"
    slurm.advance_to(1001.0)
    assert slurm.node_power()["v100-1"] == "powering_down"


def test_a_node_update_slurm_would_refuse_is_refused() -> None:
    slurm = _slurm([])
    bad = slurm(("scontrol", "update", "NodeName=v100-9", "State=POWER_DOWN"))
    assert bad.returncode == 1 and "Invalid node name specified" in bad.stderr
    other = slurm(("scontrol", "update", "NodeName=v100-0", "State=DRAIN"))
    assert other.returncode == 1 and "POWER_DOWN" in other.stderr
    no_saving = _slurm([], saving=None)(("scontrol", "update", "NodeName=v100-0", "State=POWER_DOWN"))
    assert no_saving.returncode == 1 and "power saving" in no_saving.stderr


# ---------------------------------------------------------------------------------------------- a replay by hand
# The replays set a 10% slowdown limit: their jobs run for 1,000 s and more, so a 300 s boot is within it
# (``q = 1``, the mean rule); with no slack at all the agent powers nothing down early (the second test).


def _one_job_with_and_without_power_down(tmp_path: Path, slowdown: float) -> dict[bool, SlurmReplayResult]:
    """One 1-GPU job of about 2,000 s at full power at 0 on two nodes, replayed without and with ``--power-down``."""
    trace = tmp_path / "one.trace"
    trace.write_text(f"{R18}\tcmd\t-n\t1\t{x(R18) * 2000.0:.0f}\t0\t1\n")
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=slowdown, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules)
    results = {}
    for down in (False, True):
        setup = SimulatedCluster(load_s=30.0, launch_s=0.0, power_save=True, power_down=down)
        results[down] = replay_on_slurm(spec, "wattplan", setup, tmp_path / f"out-{down}")
    return results


def test_the_agent_powers_the_idle_node_down_at_its_first_round_past_a_cycle(tmp_path: Path) -> None:
    """Two nodes, one 1-GPU job at 0 for about 2,000 s; the by-job mode keeps it on its one GPU of the first node.

    Slurm's power saving alone powers the second node down at 600 s. The agent's first round (0 s) has watched
    nothing; its next periodic round (360 s) has watched 360 s >= the cycle c = 60 + 300 s. One job of 1 GPU in
    360 s: lambda = 1/360 GPU/s, D = 360/360 = 1 GPU, below the 7 GPUs free on the first node: the second node
    is powered down then, 240 s sooner. Every other figure is the same, so the energies differ by exactly the idle
    node's draw (node power and 8 idle GPUs) for those 240 s, and the JCT not at all.
    """
    results = _one_job_with_and_without_power_down(tmp_path, 0.1)
    log = (tmp_path / "out-True" / "wattplan" / "agent.log").read_text()
    rounds = re.findall(r"round \d+ t=(\d+)s[^\n]*\n((?:  [^\n]*\n)*)", log)
    downs = [float(t) for t, notes in rounds if "powering down idle node(s) v100-1" in notes]
    assert downs == [360.0], log
    assert "powering down" not in (tmp_path / "out-False" / "wattplan" / "agent.log").read_text()
    on, off = results[False].summary, results[True].summary
    (job,) = results[False].jobs
    assert job["jct_s"] == results[True].jobs[0]["jct_s"] and job["jct_s"] > 660.0
    # node-seconds powered: the first node throughout, the second until off (600 + 60 s, or 360 + 60 s)
    node_w = on["energy_node_kwh"] * 3.6e6 / (job["jct_s"] + 660.0)
    assert off["energy_node_kwh"] * 3.6e6 == pytest.approx(node_w * (job["jct_s"] + 420.0), rel=1e-9)
    idle_w = 8 * index_library(LIB).gpu_types["v100"].idle_power_w
    saved_j = (on["energy_kwh"] - off["energy_kwh"]) * 3.6e6
    assert saved_j == pytest.approx(240.0 * (node_w + idle_w), rel=1e-9)


def test_no_slack_in_the_limit_keeps_the_idle_node_on(tmp_path: Path) -> None:
    """The first test's replay with ``--max-slowdown 0``: the agent powers nothing down early.

    No job may wait a boot (``q = 0``), so Slurm's ``SuspendTime`` alone acts, and the energy is the run's without
    power-down.
    """
    results = _one_job_with_and_without_power_down(tmp_path, 0.0)
    assert "powering down" not in (tmp_path / "out-True" / "wattplan" / "agent.log").read_text()
    assert results[True].summary["energy_kwh"] == pytest.approx(results[False].summary["energy_kwh"], rel=1e-12)
    assert results[True].jobs[0]["jct_s"] == results[False].jobs[0]["jct_s"]


def test_a_node_kept_for_a_burst_is_said_once_and_not_powered_down(tmp_path: Path) -> None:
    """A 1-GPU job of about 40 s every minute on two nodes, the by-job mode at 10%.

    After a cycle about 6.8 GPUs are expected within 360 s against 6 or 7 free beside the running job: the mean rule
    keeps v100-1 on only in the rounds with 6 free. With 7, 10% of the GPUs asked for would find none, above ``q =
    0.1 x J / 300 s`` (about 2%: ``J`` the jobs' JCT of about 40 s), so the reserve keeps it: the agent never powers
    it down (Slurm's ``SuspendTime`` does, at 600 s) and says so once, not every other round.
    """
    trace = tmp_path / "steady.trace"
    trace.write_text("".join(f"{R18}\tcmd\t-n\t1\t{x(R18) * 40.0:.0f}\t{60 * k}\t1\n" for k in range(20)))
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.1, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules)
    setup = SimulatedCluster(load_s=30.0, launch_s=0.0, power_save=True, power_down=True)
    result = replay_on_slurm(spec, "wattplan", setup, tmp_path / "out")
    assert result.summary["completed"] == 20
    log = (tmp_path / "out" / "wattplan" / "agent.log").read_text()
    kept = [line for line in log.splitlines() if "keeping idle node(s) v100-1 on for a burst" in line]
    assert len(kept) == 1 and "so that at most 2% of the GPUs asked for wait a boot" in kept[0], log
    assert "powering down idle node(s) v100-1" not in log, log
    assert "v100-1 is idle+powering_down" in log  # Slurm's SuspendTime, not the agent


def test_a_node_whose_job_ended_is_powered_down_while_slurm_still_lists_that_job(tmp_path: Path) -> None:
    """A job that ended lists its node with no GPU until ``MinJobAge`` (22.05): the node is idle all the same.

    a (1 GPU) runs for hours; b (8 GPUs, about 1,000 s of steps at 250 W, faster at its full power) runs on the
    other node and ends near 1,000 s (at t_b), which starts a round. 9 GPUs arrived in the t_b s watched (at 0, as
    the agent started): D = 360 x 9 / t_b, about 3 GPUs, below the 7 free beside a, so b's node goes down in that
    round, while ``scontrol show job -d`` still shows b on it (the agent once read that as a busy node, live only:
    the simulated Slurm did not list ended jobs' nodes).
    """
    trace = tmp_path / "two.trace"
    rows = [(R18, 1, x(R18) * 4000.0), (R18, 8, x(R18, 8) * 1000.0)]
    trace.write_text("".join(f"{t}\tcmd\t-n\t1\t{steps:.0f}\t0\t{g}\n" for t, g, steps in rows))
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.1, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules)
    setup = SimulatedCluster(load_s=30.0, launch_s=0.0, power_save=True, power_down=True)
    result = replay_on_slurm(spec, "wattplan", setup, tmp_path / "out")
    b = next(j for j in result.jobs if j["job_id"] == "j1")
    assert 720.0 < b["finish_s"] < 1080.0  # between two periodic rounds: its end starts a round of its own
    log = (tmp_path / "out" / "wattplan" / "agent.log").read_text()
    rounds = re.findall(r"round \d+ t=(\d+)s[^\n]*\n((?:  [^\n]*\n)*)", log)
    downs = [(float(t), notes) for t, notes in rounds if "powering down idle node(s)" in notes]
    assert downs and downs[0][0] == pytest.approx(b["finish_s"], abs=1.0), log
    expected = 360.0 * 9 / downs[0][0]
    assert f"idle node(s) v100-0: {expected:.1f} GPUs expected within 360 s, 7 free on running nodes" in downs[0][1]


def test_the_nodes_slurm_keeps_out_of_power_saving_are_read_from_its_config() -> None:
    """``SuspendExcNodes`` (``:N`` read as all of them) and ``SuspendExcParts``; an unreadable list is an error."""
    nodes = read_nodes(_states_document()).nodes
    config = slurm_config(
        "Configuration data as of 2026-05-01T12:00:00\n"
        "SuspendExcNodes         = v100-[0-1]:1,p100-3\nSuspendExcParts         = debug\n"
    )
    assert power_save_excluded(config, nodes) == {"v100-0", "v100-1", "p100-3", "v100-7"}
    assert power_save_excluded({"SuspendExcNodes": "(null)", "SuspendExcParts": "(null)"}, nodes) == frozenset()
    with pytest.raises(ValueError, match="SuspendExcNodes"):
        power_save_excluded({"SuspendExcNodes": "v100-[0-"}, nodes)


def _states_document() -> str:
    """``sinfo --json`` of two idle nodes, v100-7 in partition ``debug``."""
    base = {"active_features": "", "state": "idle", "state_flags": [], "gres": "gpu:v100:8"}
    meta = {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}}
    nodes = [{**base, "name": "v100-6", "partitions": ["gpu"]}, {**base, "name": "v100-7", "partitions": ["debug"]}]
    return json.dumps({"meta": meta, "nodes": nodes})


def test_a_node_slurm_keeps_out_of_power_saving_stays_on(tmp_path: Path) -> None:
    """The replay of the first test with ``SuspendExcNodes=v100-1``: neither Slurm nor the agent powers it down.

    Both nodes then draw their node power for the whole run (``2 x JCT`` node-seconds), against ``JCT + 420`` when
    the agent powers v100-1 down at 360 s: the same node power either way.
    """
    trace = tmp_path / "one.trace"
    trace.write_text(f"{R18}\tcmd\t-n\t1\t{x(R18) * 2000.0:.0f}\t0\t1\n")
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.1, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules)
    runs = {}
    for kept in ((), ("v100-1",)):
        setup = SimulatedCluster(load_s=30.0, launch_s=0.0, power_save=True, power_down=True, suspend_exc_nodes=kept)
        runs[kept] = replay_on_slurm(spec, "wattplan", setup, tmp_path / f"out{len(kept)}")
    log = (tmp_path / "out1" / "wattplan" / "agent.log").read_text()
    assert "v100-1" not in "".join(line for line in log.splitlines() if "powering down" in line), log
    (job,) = runs[()].jobs
    node_w = runs[()].summary["energy_node_kwh"] * 3.6e6 / (job["jct_s"] + 420.0)
    assert runs[("v100-1",)].summary["energy_node_kwh"] * 3.6e6 == pytest.approx(node_w * 2 * job["jct_s"], rel=1e-9)


def test_an_idle_stretch_before_the_first_job_does_not_thin_the_demand(tmp_path: Path) -> None:
    """The cluster and the agent are up 600 s before a (1 GPU, at 0); c (1 GPU) comes at 100 s, b (8 GPUs) at 200 s.

    Counting the demand from the agent's first round (-600 s), its periodic round at -240 s would see no GPU asked
    for in 360 s and power both nodes down, and every job would wait for a boot (seen live on two_waves, where
    the agent started 290 s before the first job). Counted from the first arrival, nothing is known before 0 s and
    no cycle has passed by b's arrival: no node goes down before a job ends.
    """
    trace = tmp_path / "three.trace"
    rows = [(R18, 1, x(R18) * 3000.0, 0.0), (R18, 1, x(R18) * 3000.0, 100.0), (R18, 8, x(R18, 8) * 600.0, 200.0)]
    trace.write_text("".join(f"{t}\tcmd\t-n\t1\t{steps:.0f}\t{a:.0f}\t{g}\n" for t, g, steps, a in rows))
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.1, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:16", policies=("wattplan",), rules=rules)
    setup = SimulatedCluster(
        load_s=30.0, launch_s=0.0, power_save=True, power_down=True, suspend_s=1200.0, up_before_s=600.0
    )
    result = replay_on_slurm(spec, "wattplan", setup, tmp_path / "out")
    log = (tmp_path / "out" / "wattplan" / "agent.log").read_text()
    assert log.startswith("round 0 t=-600s"), log  # the agent started with the cluster
    rounds = re.findall(r"round \d+ t=(-?\d+)s[^\n]*\n((?:  [^\n]*\n)*)", log)
    downs = [float(t) for t, notes in rounds if "powering down" in notes]
    first_end = min(j["finish_s"] for j in result.jobs)
    assert downs and min(downs) >= first_end - 1.0, log


def test_a_burst_after_a_lull_finds_a_node_booted_ahead(tmp_path: Path) -> None:
    """Three nodes. a (1 GPU, at 0) runs throughout on the first; the other two go down in the lull (360 s).

    b (8 GPUs) comes at 2,000 s and c (8 GPUs) at 2,100 s. Without ``--power-up`` Slurm boots a node for each as it
    comes, and c waits a whole boot (300 s). With it, b's round sees 8 GPUs asked for over the last cycle (360 s),
    none ended, and 7 free beside a: ``ceil((8 - 7) / 8) = 1`` node of reserve and none standing, so it boots the
    third node then, and c finds it booting since b's round: it ends about 100 s sooner (the gap between the
    arrivals; Slurm counts the boot in the job's run, so its start is the same). a and b run the same either way.
    """
    trace = tmp_path / "burst.trace"
    rows = [(R18, 1, x(R18) * 4000.0, 0.0), (R18, 8, x(R18, 8) * 600.0, 2000.0), (R18, 8, x(R18, 8) * 600.0, 2100.0)]
    trace.write_text("".join(f"{t}\tcmd\t-n\t1\t{steps:.0f}\t{a:.0f}\t{g}\n" for t, g, steps, a in rows))
    rules = RoundRules(360.0, 240.0, objective="energy", delta=0.9, max_slowdown=0.1, slurm_starts=True)
    spec = ReplaySpec(trace=trace, cluster="v100:24", policies=("wattplan",), rules=rules)
    runs = {}
    for up in (False, True):
        setup = SimulatedCluster(load_s=30.0, launch_s=0.0, power_save=True, power_down=True, power_up=up)
        runs[up] = {j["job_id"]: j for j in replay_on_slurm(spec, "wattplan", setup, tmp_path / f"out{up}").jobs}
    log = (tmp_path / "outTrue" / "wattplan" / "agent.log").read_text()
    rounds = re.findall(r"round \d+ t=(\d+)s[^\n]*\n((?:  [^\n]*\n)*)", log)
    ups = [(float(t), notes) for t, notes in rounds if "booting powered-down node(s)" in notes]
    assert [round(t) for t, _ in ups] == [pytest.approx(2000, abs=40)], log
    said = "booting powered-down node(s) v100-2: 8.0 GPUs asked for and 0.0 ended in the last 360 s, 7 free"
    assert said in ups[0][1]
    assert "booting" not in (tmp_path / "outFalse" / "wattplan" / "agent.log").read_text()
    without, with_up = runs[False], runs[True]
    assert with_up["j0"]["jct_s"] == without["j0"]["jct_s"]
    assert with_up["j1"]["jct_s"] == pytest.approx(without["j1"]["jct_s"], abs=1.0)
    assert without["j2"]["jct_s"] - with_up["j2"]["jct_s"] == pytest.approx(100.0, abs=10.0)
