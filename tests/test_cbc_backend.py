"""CBC through PuLP on a real replay round that its default preprocessing gets wrong.

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
from pathlib import Path

import pytest

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

    It is asked to run without preprocessing.
    """
    import pulp

    from wattplan.formulations.backends import pulp_backend
    from wattplan.formulations.backends.pulp_backend import MIN_SOLVER_S, solver_seconds

    assert solver_seconds(2.14, 0.33) == pytest.approx(2.14 - 3 * 0.33)
    assert solver_seconds(10.0, 0.0) == 10.0
    assert solver_seconds(0.5, 0.33) == MIN_SOLVER_S

    seen: dict = {}
    get_solver = pulp.getSolver

    def recording(name, **options):
        seen.update(options)
        return get_solver(name, **options)

    monkeypatch.setattr(pulp, "getSolver", recording)
    monkeypatch.setattr(pulp_backend, "HANDOVER_FACTOR", 1e6)  # any measurable build leaves CBC the minimum
    inst = parse_instance(json.loads(gzip.decompress(ROUND.read_bytes())), ROUND.name)
    rm = build_round_model(inst)
    params = SolveParams(time_limit_s=30.0, threads=1, seed=0)
    get_backend("cbc").solve(rm.lm, "progress", True, params, None)
    assert seen["timeLimit"] == MIN_SOLVER_S
    assert "preprocess off" in seen["options"]
