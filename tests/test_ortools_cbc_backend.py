"""OR-Tools' CBC in memory (``ortools-cbc``): the numpy-written model, the limit, untrusted infeasibility.

Its optima are held by ``tests/test_golden.py`` and ``tests/test_backend_features.py``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.instances import SHARING_OPTIMUM, sharing_model
from wattplan.formulations.backends import SolveParams, get_backend
from wattplan.formulations.backends.ortools_mip import _varints, model_proto
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.round_model import build_round_model
from wattplan.planner.contracts.instance_io import parse_instance

ROUND = Path(__file__).parent / "data" / "replay_round_philly_6214e9_r1.json.gz"


def _field_by_field(lm: LinearModel, objective: np.ndarray, maximize: bool, relax: bool) -> Any:
    """The same ``MPModelProto`` built through protobuf's own API."""
    from ortools.linear_solver import linear_solver_pb2

    proto = linear_solver_pb2.MPModelProto()
    if maximize:
        proto.maximize = True
    for lo, hi, c, integer in zip(lm.lb.tolist(), lm.ub.tolist(), objective.tolist(), lm.is_int.tolist(), strict=True):
        proto.variable.add(lower_bound=lo, upper_bound=hi, objective_coefficient=c, is_integer=integer and not relax)
    for row in lm.rows():
        con = proto.constraint.add(lower_bound=row.lo, upper_bound=row.hi)
        con.var_index.extend(row.cols.tolist())
        con.coefficient.extend(row.vals.tolist())
    return proto


def test_varints_match_protobufs_encoder() -> None:
    from google.protobuf.internal.encoder import _VarintBytes

    values = np.array([0, 1, 127, 128, 300, 16_383, 16_384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**31 - 1])
    data, sizes = _varints(values)
    expected = [_VarintBytes(int(v)) for v in values]
    assert data == b"".join(expected)
    assert sizes.tolist() == [len(e) for e in expected]
    assert _varints(np.array([], dtype=np.int64))[0] == b""


@pytest.mark.parametrize(("maximize", "relax"), [(True, False), (False, True)])
def test_the_numpy_written_model_equals_protobufs(maximize: bool, relax: bool) -> None:
    """Tiny and 27,455-column models (column indices of 1 to 3 varint bytes), objective and bounds included."""
    replay = build_round_model(parse_instance(json.loads(gzip.decompress(ROUND.read_bytes())), ROUND.name)).lm
    for lm in (sharing_model().lm, replay):
        for name in ("progress", "energy"):
            coefs = lm.objectives[name]
            assert model_proto(lm, coefs, maximize, relax) == _field_by_field(lm, coefs, maximize, relax)


def test_an_infeasible_answer_is_trusted_only_when_the_model_has_no_zero_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """CBC's preprocessing can call a feasible model infeasible; the all-zero plan proves it wrong."""
    from ortools.linear_solver import pywraplp

    monkeypatch.setattr(pywraplp.Solver, "Solve", lambda self, *args: pywraplp.Solver.INFEASIBLE)
    lm = sharing_model().lm
    r = get_backend("ortools-cbc").solve(lm, "progress", True, SolveParams(time_limit_s=20))
    assert r.status == "no_solution" and "not trusted" in r.message
    needs_progress = lm.with_row(lm.objectives["progress"], 1.0, float("inf"), "progress_floor", "progress")
    r = get_backend("ortools-cbc").solve(needs_progress, "energy", False, SolveParams(time_limit_s=20))
    assert r.status == "infeasible"


def test_the_solver_limit_is_what_the_handover_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    from ortools.linear_solver import pywraplp

    from wattplan.formulations.backends import ortools_mip

    limits: list[int] = []
    set_limit = pywraplp.Solver.SetTimeLimit

    def recording(self: Any, ms: int) -> None:
        limits.append(ms)
        set_limit(self, ms)

    monkeypatch.setattr(pywraplp.Solver, "SetTimeLimit", recording)
    lm = sharing_model().lm
    r = get_backend("ortools-cbc").solve(lm, "progress", True, SolveParams(time_limit_s=7.0, rel_gap=1e-9))
    assert r.status == "optimal" and r.objective == pytest.approx(SHARING_OPTIMUM) and r.bound is None
    assert 3500 < limits[-1] <= 7000  # the limit less the build time (ms here; a loaded machine may take seconds)
    monkeypatch.setattr(ortools_mip, "READBACK_S_PER_COL", 10.0)  # the read-back estimate eats the whole limit
    get_backend("ortools-cbc").solve(lm, "progress", True, SolveParams(time_limit_s=7.0))
    assert limits[-1] == 1000 * ortools_mip.MIN_SOLVER_S
