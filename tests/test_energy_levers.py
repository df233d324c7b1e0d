"""The energy split by lever (:mod:`planner.sim.energy_levers`) on hand-computed rounds.

Hand cluster (``tests.sim_helpers``): one node of two GPUs, ``w = 100 / 2 + 30 = 80`` W per GPU.
Job type A, energy per step ``e = n (P - 30) / X + h n 80 / (rho X)``:

* 1 GPU at 150 W: ``100 / 4 + 80 / 4 = 45`` J (A's best alone); at 250 W: ``200 / 5 + 80 / 5 = 56`` J;
* 2 GPUs at 150 W: ``2 * 95 / 7 + 160 / 7 = 50`` J;
* 1 GPU at 150 W beside B (``rho = 0.8``, half the static power): ``25 + 40 / 3.2 = 37.5`` J.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.sim_helpers import A, B, hand_context, hand_job
from wattplan.planner.contracts.domain import CurrentConfig
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.sim.accounting import round_outcome
from wattplan.planner.sim.energy_levers import LeverBook, phase_of, round_levers
from wattplan.planner.sim.round_instance import round_instance
from wattplan.planner.sim.state import JobState

T = 100.0


def _state(job_id: str, job_type: str, steps: float, current: CurrentConfig | None) -> JobState:
    s = JobState.new(hand_job(job_id, job_type, 0.0, steps))
    s.current = current
    return s


def _split(states: list[JobState], allocations: list[Allocation], ctx=None):
    ctx = ctx or hand_context(duration_s=T, restart_s=10.0)
    inst = round_instance(ctx, 0, 0.0, states, None)
    plan = assemble_plan(inst, allocations, SolveInfo("hand", "feasible"))
    out = round_outcome(inst, plan)
    return round_levers(LeverBook(inst), plan, out), out.energy.total_j


def test_dearer_setting_is_the_setting_lever() -> None:
    a = _state("a", A, 1e6, CurrentConfig("v100", 1, 250))
    split, energy = _split([a], [Allocation(("a",), "v100", 1, 250)])
    # 500 steps at 56 J against the best 45 J; the node's other GPU and A's idle: 160 W x 100 s - 80 x 100.
    assert split.setting == pytest.approx(500 * (56 - 45))
    assert split.count == split.pairing == split.restarts == 0
    assert split.idle_gpus == pytest.approx(8000.0)
    assert split.base == pytest.approx(500 * 45)
    assert split.total_j == pytest.approx(energy) == pytest.approx(36000.0)


def test_more_gpus_is_the_count_lever_and_a_waiting_partner_the_pairing_lever() -> None:
    a = _state("a", A, 1e6, CurrentConfig("v100", 2, 150))
    b = _state("b", B, 1e6, None)  # queued, waiting
    split, energy = _split([a, b], [Allocation(("a",), "v100", 2, 150)])
    # 700 steps at 50 J: 5 J each above A's best alone (45 J), 7.5 J more above its best beside B.
    assert split.setting == pytest.approx(0.0, abs=1e-9)
    assert split.count == pytest.approx(700 * 5.0)
    assert split.pairing == pytest.approx(700 * 7.5)
    assert split.base == pytest.approx(700 * 37.5)
    assert split.idle_gpus == pytest.approx(0.0, abs=1e-6)
    assert split.total_j == pytest.approx(energy)


def test_a_restart_holds_its_gpus_for_tau() -> None:
    a = _state("a", A, 1e6, None)  # starts now: 10 s restart
    split, energy = _split([a], [Allocation(("a",), "v100", 1, 150)])
    assert split.restarts == pytest.approx(80.0 * 10.0)
    assert split.setting == pytest.approx(0.0, abs=1e-9)
    assert split.base == pytest.approx(4 * 90 * 45.0)
    assert split.total_j == pytest.approx(energy)


def test_a_pair_charges_each_job_half_the_static_power() -> None:
    a = _state("a", A, 1e6, CurrentConfig("v100", 1, 250, "b"))
    b = _state("b", B, 1e6, CurrentConfig("v100", 1, 250, "a"))
    split, energy = _split([a, b], [Allocation(("a", "b"), "v100", 1, 250)])
    # A beside B at 250 W: 400 steps at 200 / 5 + 40 / 4 = 50 J against 37.5 J at 150 W (B has one setting).
    assert split.pairing == 0 and split.setting == pytest.approx(400 * 12.5)
    # The pair holds one GPU for 100 s, the node's other GPU is idle.
    assert split.idle_gpus == pytest.approx(80.0 * 100.0)
    assert split.total_j == pytest.approx(energy)


@pytest.mark.parametrize(
    ("requested", "arrivals_left", "phase"),
    [(48, True, "saturated"), (60, False, "saturated"), (47, True, "light"), (10, False, "tail")],
)
def test_phase(requested: int, arrivals_left: bool, phase: str) -> None:
    assert phase_of(requested, 48, arrivals_left) == phase


def test_a_slower_gpu_type_is_the_gpu_type_lever() -> None:
    """A second type ``slow`` (same powers, half the rate): A on 1 slow GPU at 150 W costs 100/2 + 80/2 = 90 J/step."""
    ctx = hand_context(duration_s=T, restart_s=10.0)
    slow = dataclasses.replace(ctx.gpu_types[0], name="slow")
    extra = tuple(
        dataclasses.replace(p, gpu_type="slow", steps_per_s=p.steps_per_s / 2) for p in ctx.profiles_by_type[A]
    )
    two = dataclasses.replace(
        ctx,
        gpu_types=(ctx.gpu_types[0], slow),
        profiles_by_type={**ctx.profiles_by_type, A: ctx.profiles_by_type[A] + extra},
    )
    a = _state("a", A, 1e6, CurrentConfig("slow", 1, 150))
    split, energy = _split([a], [Allocation(("a",), "slow", 1, 150)], two)
    assert split.gpu_type == pytest.approx(200 * (90 - 45))  # 2 steps/s x 100 s, against 45 J on a v100
    assert split.count == split.setting == split.pairing == 0
    assert split.total_j == pytest.approx(energy)
