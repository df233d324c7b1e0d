"""CBC in memory through OR-Tools' ``pywraplp`` (``ortools-cbc``): no MPS file between Python and CBC.

The pinned ortools wheel links CBC 2.10.12 and CLP 1.17.10 (the ``cbc`` backend is PuLP's
bundled CBC 2.10.3 called through an MPS file). The model is handed over as an
``MPModelProto`` whose wire bytes are written with numpy (:func:`model_proto_bytes`): one
fixed-size record per column and packed index and coefficient arrays per row, parsed by
protobuf's C parser and loaded with ``Solver.LoadModelFromProto``. That is the fastest of the
ways measured on a 2,000-job round (387,530 columns, 1.32 million nonzeros): ``pywraplp``'s
per-variable and per-coefficient calls take 3.6 s, an ``MPModelProto`` filled field by field
0.7-0.9 s, the numpy-written bytes 0.2-0.4 s, parsing included (plus 0.25-0.45 s for
``LoadModelFromProto`` in either proto case; ``tests/test_ortools_cbc_backend.py`` checks that
both protos are equal). OR-Tools' ``model_builder`` takes numpy arrays but cannot solve with CBC
(``Solver("cbc").solver_is_supported()`` is False).

What OR-Tools' CBC interface passes on, and so what this backend declares: the time limit,
the relative gap (``setAllowableFractionGap``), and MPS/LP
export (``ExportModelAsMpsFormat`` / ``ExportModelAsLpFormat``). LP relaxations go to CLP
(``CLP_LINEAR_PROGRAMMING``). CBC's ``BestBound`` is read but is no proof (:meth:`OrtoolsCbcBackend.solve`),
so ``bound`` is False. It does *not* pass a start: ``SetHint`` (or the model's
``solution_hint``) is accepted and ignored by ``CBCInterface::Solve``, so ``mip_start`` is
False. Its CBC is built without threads (``-threads`` answers "No match for threads") and
takes no solver-specific parameters, so ``threads`` and ``seed`` have no effect (CBC is
deterministic for a given model). CBC checks its limit between steps: the root LP of a 2,000-job
round (about 20 s in CLP) ran 16.6 s under an 8.8 s limit; the watchdog bounds that.
"""

from __future__ import annotations

import math
import struct
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    Features,
    ObjectiveName,
    SolveParams,
    SolverResult,
    SolveStatus,
    WithoutLpDuals,
    atomic_target,
)
from wattplan.formulations.conditioning import condition
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import dual_bound
from wattplan.formulations.mps import write_mps

INSTALL_HINT = "pip install ortools==9.15.6755"
MIN_SOLVER_S = 0.1
"""CBC's own time limit is never set below this (s), even when the hand-over used up the call's limit."""
READBACK_S_PER_COL = 1e-6
"""Seconds per column to read the solution back after CBC stops (0.2 s at 387,530 columns, measured),
kept out of CBC's own limit."""

TRUSTED_SHARE = 0.9
"""CBC's "infeasible" is believed only when it came before this share of CBC's limit and the all-zero
point (every job waiting) violates the model. OR-Tools runs CBC with its default preprocessing and
cannot turn it off; on the 137-job replay round of ``tests/test_cbc_backend.py`` (feasible, optimum
9.82) CBC 2.10.12 answered "infeasible" at a 1 s limit, as CBC 2.10.3 does (CBC issues #449, #740)."""

# Wire format of linear_solver.proto (field number << 3 | wire type): 1 = 64-bit, 2 = length-delimited.
_MODEL_MAXIMIZE = b"\x08\x01"  # MPModelProto.maximize = 1 (varint)
_MODEL_VARIABLE = 0x1A  # MPModelProto.variable = 3
_MODEL_CONSTRAINT = 0x22  # MPModelProto.constraint = 4
_VAR_RECORD = np.dtype(
    [
        ("tag", "u1"),
        ("size", "u1"),
        ("lb_tag", "u1"),  # MPVariableProto.lower_bound = 1
        ("lb", "<f8"),
        ("ub_tag", "u1"),  # upper_bound = 2
        ("ub", "<f8"),
        ("obj_tag", "u1"),  # objective_coefficient = 3
        ("obj", "<f8"),
        ("int_tag", "u1"),  # is_integer = 4 (varint)
        ("int", "u1"),
    ]
)
_ROW_LB, _ROW_UB = 0x11, 0x19  # MPConstraintProto.lower_bound = 2, upper_bound = 3
_ROW_INDEX, _ROW_COEF = 0x32, 0x3A  # var_index = 6 (packed int32), coefficient = 7 (packed double)


def _varint(n: int) -> bytes:
    """``n >= 0`` as a protobuf varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varints(values: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Non-negative integers (< 2**35) as concatenated varints, and each one's length in bytes."""
    v = values.astype(np.uint64)
    sizes = np.ones(len(v), dtype=np.int64)
    for k in range(1, 5):
        sizes += v >= (1 << (7 * k))
    ends = np.cumsum(sizes)
    out = np.zeros(int(ends[-1]) if len(v) else 0, dtype=np.uint8)
    first = ends - sizes
    for k in range(5):
        has = sizes > k
        byte = (v[has] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (sizes[has] > k + 1).astype(np.uint64) << np.uint64(7)
        out[first[has] + k] = (byte | more).astype(np.uint8)
    return out.tobytes(), sizes


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return bytes([tag]) + _varint(len(payload)) + payload


def model_proto_bytes(lm: LinearModel, objective: np.ndarray, maximize: bool, relax: bool) -> bytes:
    """The serialised ``MPModelProto`` of ``lm`` with this objective, written with numpy.

    ``relax`` drops integrality. Names are left out (solving needs none;
    :meth:`OrtoolsCbcBackend.export` adds them).
    """
    cols = np.zeros(lm.num_cols, dtype=_VAR_RECORD)
    cols["tag"], cols["size"] = _MODEL_VARIABLE, _VAR_RECORD.itemsize - 2
    cols["lb_tag"], cols["ub_tag"], cols["obj_tag"], cols["int_tag"] = 0x09, 0x11, 0x19, 0x20
    cols["lb"], cols["ub"], cols["obj"] = lm.lb, lm.ub, objective
    cols["int"] = False if relax else lm.is_int
    parts = [_MODEL_MAXIMIZE if maximize else b"", cols.tobytes()]
    order = np.argsort(lm.a_rows, kind="stable")
    index_bytes, index_sizes = _varints(lm.a_cols[order])
    coef_bytes = lm.a_vals[order].astype("<f8").tobytes()
    starts = np.searchsorted(lm.a_rows[order], np.arange(lm.num_rows + 1))
    index_ends = np.concatenate([[0], np.cumsum(index_sizes)])[starts].tolist()
    starts_l = starts.tolist()
    for r, (lo, hi) in enumerate(zip(lm.row_lo.tolist(), lm.row_hi.tolist(), strict=True)):
        a, b = starts_l[r], starts_l[r + 1]
        body = struct.pack("<BdBd", _ROW_LB, lo, _ROW_UB, hi)
        if b > a:
            body += _field(_ROW_INDEX, index_bytes[index_ends[r] : index_ends[r + 1]])
            body += _field(_ROW_COEF, coef_bytes[8 * a : 8 * b])
        parts.append(_field(_MODEL_CONSTRAINT, body))
    return b"".join(parts)


def model_proto(lm: LinearModel, objective: np.ndarray, maximize: bool, relax: bool) -> Any:
    """The ``MPModelProto`` of :func:`model_proto_bytes`, parsed by protobuf."""
    from ortools.linear_solver import linear_solver_pb2

    return linear_solver_pb2.MPModelProto.FromString(model_proto_bytes(lm, objective, maximize, relax))


class OrtoolsCbcBackend(WithoutLpDuals):
    """CBC (MIP) and CLP (LP relaxations) inside OR-Tools, fed an ``MPModelProto`` built with numpy."""

    name = "ortools-cbc"
    features: ClassVar[Features] = Features(
        mip_start=False, lp_relaxation=True, bound=False, export=True, lp_duals=False, continuous=True
    )
    mip_solver = "CBC_MIXED_INTEGER_PROGRAMMING"
    lp_solver = "CLP_LINEAR_PROGRAMMING"

    def is_available(self) -> bool:
        """True when ortools is installed (without loading it: the planner's process loads no solver).

        The pinned wheel links CBC and CLP; a build without them fails the solve with
        :class:`BackendUnavailable` (OR-Tools creates no such solver).
        """
        return find_spec("ortools") is not None

    def _solver(self, lp: bool) -> Any:
        if not self.is_available():
            raise BackendUnavailable(f"ortools with CBC is not installed ({INSTALL_HINT})")
        from ortools.linear_solver import pywraplp

        solver = pywraplp.Solver.CreateSolver(self.lp_solver if lp else self.mip_solver)
        if solver is None:
            raise BackendUnavailable(f"OR-Tools cannot create its {self.lp_solver if lp else self.mip_solver} solver")
        solver.SuppressOutput()
        return solver

    def _load(self, solver: Any, proto: Any, keep_names: bool = False) -> None:
        error = solver.LoadModelFromProtoKeepNames(proto) if keep_names else solver.LoadModelFromProto(proto)
        if error:
            raise RuntimeError(f"OR-Tools refused the model: {error}")

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """CBC on ``lm.objectives[objective]`` or, with ``relax``, CLP on its LP relaxation, of the conditioned model.

        No MIP bound is reported: CBC prunes every node that cannot beat its incumbent by more
        than the relative gap (or, at gap 0, its cutoff increment) and then reports the incumbent
        as its best bound (seen: a "bound" 1.9e-5 below a valid plan at ``rel_gap`` 1e-4), so
        the strategy proves one instead (docs/design.md §5.13). For an LP the bound is the
        Lagrangian bound of CLP's row duals (:func:`formulations.lagrangian.dual_bound`).

        ``params.time_limit_s`` covers the whole call: the solver's own limit is what the
        hand-over leaves, less an estimate of the read-back, at least :data:`MIN_SOLVER_S`.
        ``start``, ``threads`` and ``seed`` are not passed on: OR-Tools' CBC takes none of them
        (module docstring).
        """
        entered = time.perf_counter()
        from ortools.linear_solver import linear_solver_pb2, pywraplp

        solver = self._solver(lp=relax)
        coefs = lm.objectives[objective]
        cond = condition(lm, objective)
        self._load(solver, model_proto(cond.lm, cond.lm.objectives[objective], maximize, relax))
        limit_s = math.inf
        if params.time_limit_s is not None:
            left = float(params.time_limit_s) - (time.perf_counter() - entered) - READBACK_S_PER_COL * lm.num_cols
            limit_s = max(MIN_SOLVER_S, left)
            solver.SetTimeLimit(max(1, int(1000 * limit_s)))
        solver_params = pywraplp.MPSolverParameters()
        if params.rel_gap is not None and not relax:
            solver_params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, float(params.rel_gap))
        begin = time.perf_counter()
        code = solver.Solve(solver_params)
        elapsed = time.perf_counter() - begin
        if code == pywraplp.Solver.INFEASIBLE:
            if elapsed >= TRUSTED_SHARE * limit_s or lm.is_feasible(np.zeros(lm.num_cols)):
                why = "at its time limit" if elapsed >= TRUSTED_SHARE * limit_s else "with a feasible all-zero point"
                return SolverResult("no_solution", solve_s=elapsed, message=f"CBC said infeasible {why}: not trusted")
            return SolverResult("infeasible", solve_s=elapsed, message="infeasible")
        if code not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
            return SolverResult("no_solution", solve_s=elapsed, message=_STATUS_NAMES.get(code, str(code)))
        response = linear_solver_pb2.MPSolutionResponse()
        solver.FillSolutionResponseProto(response)
        values = np.array(response.variable_value, dtype=float)
        if len(values) != lm.num_cols:
            return SolverResult("no_solution", solve_s=elapsed, message=f"{_STATUS_NAMES[code]} without values")
        if not relax:
            values = np.where(lm.is_int, np.round(values), values)
        bound: float | None
        if relax:
            duals = np.array(response.dual_value, dtype=float)
            usable = code == pywraplp.Solver.OPTIMAL and len(duals) == lm.num_rows
            bound = dual_bound(lm, coefs, maximize, duals * cond.row_scale / cond.objective_scale) if usable else None
        else:
            bound = None  # CBC's best bound is no proof (docstring)
        result_status: SolveStatus = "optimal" if code == pywraplp.Solver.OPTIMAL else "feasible"
        return SolverResult(
            result_status,
            values=values,
            objective=float(coefs @ values),
            bound=bound,
            solve_s=elapsed,
            message=_STATUS_NAMES[code],
            stats={"nodes": float(solver.nodes()), "lp_iterations": float(solver.iterations())} if not relax else {},
        )

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model as MPS (:mod:`formulations.mps`) or LP (OR-Tools' writer) by the suffix, atomically."""
        if Path(path).suffix == ".mps":
            write_mps(lm, objective, maximize, Path(path))  # the one MPS format of every backend
            return
        solver = self._solver(lp=False)
        proto = model_proto(lm, lm.objectives[objective], maximize, relax=False)
        col_names, row_names = lm.export_names()
        for var, name in zip(proto.variable, col_names, strict=True):
            var.name = name
        for row, name in zip(proto.constraint, row_names, strict=True):
            row.name = name
        proto.name = "wattplan_round"
        self._load(solver, proto, keep_names=True)
        text = solver.ExportModelAsLpFormat(obfuscate=False)
        with atomic_target(Path(path)) as tmp:
            tmp.write_text(text)


_STATUS_NAMES = {
    0: "optimal",
    1: "feasible",
    2: "infeasible",
    3: "unbounded",
    4: "abnormal",
    5: "model_invalid",
    6: "not_solved",
}
"""``pywraplp.Solver.ResultStatus`` values by name."""
