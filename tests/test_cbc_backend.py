"""PuLP's bundled CBC (the ``cbc`` backend) on a real replay round that its default preprocessing gets wrong.

With ``-preprocess sos`` (CBC 2.10.3's default) this 137-job round came back "infeasible" at a
1 s limit and with progress 5.53 at 2-5 s, below the 7.73 of the MIP start it was given; with
preprocessing off CBC proves the optimum, 9.8207, at the root node (1.1 s on an idle machine, 6.7 s on a
loaded 2-core one).

The proof is asked for within a node limit, not a wall-clock one (docs/design.md §5.15): with one thread and a
fixed seed CBC's search is the same on every machine, so the test passes or fails with the code, not the load.
The time limit is only a safety net, far above any machine's proof time.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.instances import SHARING_OPTIMUM, sharing_model
from wattplan.formulations.backends import SolveParams, get_backend
from wattplan.formulations.round_model import build_round_model
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.core.greedy import greedy_allocations

ROUND = Path(__file__).parent / "data" / "replay_round_philly_6214e9_r1.json.gz"
OPTIMUM = 9.820683606527597  # proven by CBC (preprocessing off) and HiGHS with no time limit
NODE_LIMIT = 100
"""Branch-and-bound nodes CBC may use for the proof: it needs none beyond the root (``Enumerated nodes: 0``)."""
SAFETY_NET_S = 300.0
"""The wall-clock limit, only so that a hung solver ends: no machine should come near it."""


@pytest.mark.slow
def test_cbc_proves_the_replay_round_optimal_from_the_greedy_start() -> None:
    inst = parse_instance(json.loads(gzip.decompress(ROUND.read_bytes())), ROUND.name)
    assert inst.round.budget_j is None and len(inst.jobs) == 137
    rm = build_round_model(inst)
    start = rm.encode(greedy_allocations(inst))
    progress = rm.lm.objectives["progress"]
    assert rm.lm.is_feasible(start) and float(progress @ start) == pytest.approx(7.726187, rel=1e-6)
    backend = get_backend("cbc")
    params = SolveParams(time_limit_s=SAFETY_NET_S, rel_gap=1e-4, threads=1, seed=0, node_limit=NODE_LIMIT)
    result = backend.solve(rm.lm, "progress", True, params, start)
    assert result.on_clock is False, f"CBC stopped on its {SAFETY_NET_S:g} s safety net: {result.message}"
    assert result.status == "optimal", result.message
    assert result.objective == pytest.approx(OPTIMUM, rel=1e-4)


def test_the_solver_limit_leaves_room_for_the_handover(monkeypatch: pytest.MonkeyPatch) -> None:
    """``time_limit_s`` bounds the whole call: CBC gets what is left after about three build times.

    It is asked to run without preprocessing, with the seed, gap and thread count of the request.
    """
    from wattplan.formulations.backends import cbc, pulp_backend
    from wattplan.formulations.backends.pulp_backend import MIN_SOLVER_S, solver_seconds

    assert solver_seconds(2.14, 0.33) == pytest.approx(2.14 - 3 * 0.33)
    assert solver_seconds(10.0, 0.0) == 10.0
    assert solver_seconds(0.5, 0.33) == MIN_SOLVER_S

    seen: list[list[str]] = []
    run = cbc._run

    def recording(argv: list[str], log: Path, timeout_s: float | None) -> str:
        seen.append(argv)
        return run(argv, log, timeout_s) if len(seen) == 1 else "not run"  # the second call: its argv alone

    monkeypatch.setattr(cbc, "_run", recording)
    monkeypatch.setattr(pulp_backend, "HANDOVER_FACTOR", 1e6)  # any measurable build leaves CBC the minimum
    inst = parse_instance(json.loads(gzip.decompress(ROUND.read_bytes())), ROUND.name)
    rm = build_round_model(inst)
    params = SolveParams(time_limit_s=30.0, rel_gap=1e-4, threads=1, seed=4)
    get_backend("cbc").solve(rm.lm, "progress", True, params, None)
    get_backend("cbc").solve(rm.lm, "progress", True, replace(params, threads=2), None)
    argv, two = seen
    assert argv[argv.index("-sec") + 1] == repr(MIN_SOLVER_S)
    assert argv[argv.index("-preprocess") + 1] == "off"
    assert argv[argv.index("-randomSeed") + 1] == "5"
    assert argv[argv.index("-ratio") + 1] == "0.0001" and "-max" in argv and "-mips" not in argv
    # one thread is CBC's serial search: "-threads 1" starts its thread pool, whose start stalled solves 10 s
    assert "-threads" not in argv and two[two.index("-threads") + 1] == "2"


@pytest.mark.slow
def test_cbc_on_wattplans_file_answers_as_cbc_through_pulps_objects() -> None:
    """The ``cbc`` backend (its own MPS file) and ``pulp:PULP_CBC_CMD`` (PuLP's objects) run one CBC on one model.

    The progress stage of the real replay round from the greedy start: both prove the same optimum. Its LP
    relaxation's Lagrangian bound, from the duals read back from CBC's file, is a valid bound (not below it). The
    energy stage (a minimisation, started from the progress plan) on a small round: the same least energy.
    """
    inst = parse_instance(json.loads(gzip.decompress(ROUND.read_bytes())), ROUND.name)
    rm = build_round_model(inst)
    start = rm.encode(greedy_allocations(inst))
    params = SolveParams(time_limit_s=SAFETY_NET_S, threads=1, seed=0, node_limit=NODE_LIMIT)
    ours, theirs = get_backend("cbc"), get_backend("pulp:PULP_CBC_CMD")
    a, b = (x.solve(rm.lm, "progress", True, params, start) for x in (ours, theirs))
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(OPTIMUM, rel=1e-6) and b.objective == pytest.approx(OPTIMUM, rel=1e-6)
    lp = ours.solve(rm.lm, "progress", True, params, None, relax=True)
    assert lp.status == "optimal" and lp.bound is not None and lp.bound >= OPTIMUM * (1 - 1e-9)
    small = sharing_model().lm
    first = ours.solve(small, "progress", True, params, None)
    assert first.objective is not None
    floor = first.objective * (1 - 1e-6)
    energy_lm = small.with_row(small.objectives["progress"], floor, math.inf, "progress_floor", "progress")
    e1, e2 = (x.solve(energy_lm, "energy", False, params, first.values) for x in (ours, theirs))
    assert e1.status == e2.status == "optimal" and e1.objective == pytest.approx(e2.objective, rel=1e-9)


def test_an_infeasible_model_is_infeasible_and_a_small_one_is_solved_to_its_hand_computed_optimum() -> None:
    lm = sharing_model().lm
    params = SolveParams(time_limit_s=SAFETY_NET_S, threads=1)
    solved = get_backend("cbc").solve(lm, "progress", True, params, None)
    assert solved.status == "optimal" and solved.objective == pytest.approx(SHARING_OPTIMUM)
    impossible = lm.with_row(lm.objectives["progress"], SHARING_OPTIMUM + 0.1, math.inf, "more_than_best", "progress")
    assert get_backend("cbc").solve(impossible, "energy", False, params, None).status == "infeasible"
