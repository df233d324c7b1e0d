"""A restarted agent believes what it had learned: the learner's feed kept in the state and fed again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim_helpers import A, B, hand_context
from wattplan.planner.agent.learned_state import restored_learner, save_feed
from wattplan.planner.agent.store import AgentStore, StoreError
from wattplan.planner.sim.learning import ProfileLearner
from wattplan.planner.sim.telemetry import GpuObservation, JobObservation


def _obs(
    job: str, job_type: str, n: int, rate: float, power: float | None, partner: str | None = None
) -> JobObservation:
    return JobObservation(job, job_type, "v100", n, 250, partner, rate, power, None, 1.0)


ROUNDS = [  # round: the jobs' observations and the idle GPUs' (round 3 sees no idle GPU)
    (1, [_obs("j1", A, 1, 5.0, 241.0)], []),
    (2, [_obs("j1", A, 1, 5.2, 240.0), _obs("j2", A, 1, 2.0, None, partner=B)],
     [GpuObservation("v100", 41.0, 10.0, 100.0, 1.0)]),
    (3, [_obs("j3", B, 2, 7.0, 150.0)], []),
]  # fmt: skip


def _beliefs(learner: ProfileLearner) -> dict[str, object]:
    ctx = learner.context()
    profiles = sorted(
        (p.type, p.gpus, p.setting, p.steps_per_s, p.power_w) for ps in ctx.profiles_by_type.values() for p in ps
    )
    return {
        "profiles": profiles,
        "pairs": [(p.a, p.b, p.rho_a, p.rho_b) for p in ctx.pairs],
        "idle": learner.idle_power_w("v100"),
        "evidence": [learner.evidence("throughput", ("job", j, "v100", n)) for j, n in (("j1", 1), ("j3", 2))],
        "basis": [learner.basis(A, "v100", 1), learner.basis(B, "v100", 2), learner.basis(A, "v100", 1, B)],
    }


def test_a_reopened_state_gives_back_the_learner_it_fed(tmp_path: Path) -> None:
    """Three rounds fed to a learner and kept; the state closed (the agent stops) and opened again (it restarts).

    The restored learner's beliefs equal the fed one's to the bit, and the hand arithmetic of
    ``test_dynamic_power_waits_for_a_measured_idle_power`` holds after round 2: idle (10 x 41 + 0.1 x 30) / 10.1 W.
    """
    fed = ProfileLearner(hand_context())
    store = AgentStore(tmp_path / "agent.db")
    for rnd, jobs, gpus in ROUNDS[:2]:
        fed.observe(jobs, gpus)
        save_feed(store, rnd, jobs, gpus)
    store.close()
    again = AgentStore(tmp_path / "agent.db")
    learner, rounds = restored_learner(hand_context(), again)
    assert rounds == 2
    assert learner.idle_power_w("v100") == pytest.approx((10 * 41 + 0.1 * 30) / 10.1)
    assert _beliefs(learner) == _beliefs(fed)
    rnd, jobs, gpus = ROUNDS[2]  # the restarted agent goes on learning, and keeps that too
    fed.observe(jobs, gpus)
    learner.observe(jobs, gpus)
    save_feed(again, rnd, jobs, gpus)
    again.close()
    third = AgentStore(tmp_path / "agent.db")
    restored, rounds = restored_learner(hand_context(), third)
    third.close()
    assert rounds == 3 and _beliefs(restored) == _beliefs(fed) == _beliefs(learner)
    assert _beliefs(restored) != _beliefs(ProfileLearner(hand_context()))  # it learned something


def test_the_state_keeps_the_latest_rounds_of_feed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wattplan.planner.agent import store as store_module

    monkeypatch.setattr(store_module, "LEARNER_FEED_ROUNDS", 3)
    store = AgentStore(tmp_path / "agent.db")
    for rnd in range(10, 15):
        save_feed(store, rnd, [_obs("j1", A, 1, 5.0, None)], [])
    kept = [rnd for rnd, _, _ in store.learner_feeds()]
    store.close()
    assert kept == [12, 13, 14]


def test_a_new_state_restores_a_learner_that_knows_nothing(tmp_path: Path) -> None:
    store = AgentStore(tmp_path / "agent.db")
    learner, rounds = restored_learner(hand_context(), store)
    store.close()
    assert rounds == 0 and _beliefs(learner) == _beliefs(ProfileLearner(hand_context()))


@pytest.mark.parametrize(
    ("jobs", "gpus", "says"),
    [
        ('{"job_id": "j1"}', "[]", "no list of JobObservation"),
        ('[{"job_id": "j1"}]', "[]", "no list of JobObservation"),
        ("[]", '[{"gpu_type": "v100", "watts": 1}]', "no list of GpuObservation"),
        ("[", "[]", "is not JSON"),
        (
            '[{"job_id": "j1", "job_type": "A", "gpu_type": "v100", "gpus": "2", "setting": 250, "partner_type": null, '
            '"steps_per_s": 1, "power_w": null, "utilisation": null, "weight": 1}]',
            "[]",
            "gpus is '2', not int",
        ),
        (
            "[]",
            '[{"gpu_type": "v100", "idle_power_w": true, "idle_weight": 1, "node_power_w": 1, "node_weight": 1}]',
            "idle_power_w is True, not float [|] None",
        ),
    ],
)
def test_a_damaged_feed_is_named_by_its_round(tmp_path: Path, jobs: str, gpus: str, says: str) -> None:
    store = AgentStore(tmp_path / "agent.db")
    store.db.execute("INSERT INTO learner_feed VALUES (7, ?, ?)", (jobs, gpus))
    with pytest.raises(StoreError, match=f"learner_feed round 7 .*{says}|learner_feed round 7 {says}") as err:
        restored_learner(hand_context(), store)
    store.close()
    assert err.value.problems[0].code == "bad-state"
