"""The simulated Slurm's two latencies (``pass_delay_s``, ``completing_s``), by hand on one GPU.

Two unmanaged jobs on one GPU: the first ends at ``a + LOAD + steps / X``; it then stays ``COMPLETING`` for
``C`` s, holding the GPU and listed in the queue, and the second starts one pass (``D`` s) after the GPU is free.
Its own submission waits a pass too. Energy: a completing job draws nothing beyond its GPU's idle power.
"""

from __future__ import annotations

import pytest

from tests.helpers.sim_slurm import IDLE, LOAD, NODE_W, R18, p, simulated, x
from wattplan.planner.agent.slurm_queue import query_queue
from wattplan.planner.control.sim_slurm import SimJob

C, D = 18.0, 12.0


def test_a_completing_job_holds_its_gpu_and_the_next_starts_a_pass_after() -> None:
    steps = 3000.0
    jobs = [SimJob(1, R18, 0.0, 1, steps, managed=False), SimJob(2, R18, 10.0, 1, steps, managed=False)]
    sim = simulated(jobs, (1,), completing_s=C, pass_delay_s=D)
    sim.advance_to(5.0)
    assert {j.job_id: j.state for j in query_queue(sim).jobs} == {}  # unmanaged: the agent's reader skips them
    start1 = D  # submitted at 0, started at the pass D s later
    end1 = start1 + LOAD + steps / x(R18)
    sim.advance_to(end1 + C / 2)
    listed = sim(("squeue", "--json")).stdout
    assert '"COMPLETING"' in listed  # still in the queue, holding the GPU
    sim.advance_to(1e6)
    rec = {r.job_id: r for r in sim.job_records()}
    assert rec[1].first_start_s == pytest.approx(start1)
    assert rec[1].finish_s == pytest.approx(end1)  # the job ended with its last step, not when it left
    assert rec[2].first_start_s == pytest.approx(end1 + C + D)
    end2 = end1 + C + D + LOAD + steps / x(R18)
    assert rec[2].finish_s == pytest.approx(end2)
    energy = sim.energy(end2)
    compute_s = 2 * steps / x(R18)
    assert energy.dynamic_j == pytest.approx((p(R18) - IDLE) * compute_s)  # nothing while completing or loading
    assert energy.node_j == pytest.approx(NODE_W * end2)


def test_a_completing_job_is_refused_as_ended_and_leaves_once() -> None:
    steps = 3000.0
    sim = simulated([SimJob(1, R18, 0.0, 1, steps, managed=True)], (1,), completing_s=C, pass_delay_s=D)
    sim.advance_to(0.0)
    assert sim(("scontrol", "release", "1")).ok
    end = D + LOAD + steps / x(R18)
    sim.advance_to(end + C / 2)
    for argv in (("scancel", "1"), ("scontrol", "requeuehold", "1"), ("scontrol", "uhold", "1")):
        result = sim(argv)
        assert not result.ok, argv  # Slurm: the job has already finished
    sim.advance_to(1e6)  # its GPU is freed once, at the end of its completing time
    (rec,) = sim.job_records()
    assert (rec.state, rec.finish_s) == ("COMPLETED", pytest.approx(end)) and sim.done()


def test_no_latency_is_the_old_slurm() -> None:
    steps = 3000.0
    jobs = [SimJob(1, R18, 0.0, 1, steps, managed=False), SimJob(2, R18, 10.0, 1, steps, managed=False)]
    sim = simulated(jobs, (1,))
    sim.advance_to(1e6)
    rec = {r.job_id: r for r in sim.job_records()}
    assert rec[2].first_start_s == pytest.approx(rec[1].finish_s) == pytest.approx(LOAD + steps / x(R18))


@pytest.mark.parametrize("field", ["completing_s", "pass_delay_s"])
@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_latency_is_refused_by_name(field: str, bad: float) -> None:
    with pytest.raises(ValueError, match=field):
        simulated([SimJob(1, R18, 0.0, 1, 10.0, managed=False)], (1,), **{field: bad})
