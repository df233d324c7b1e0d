"""The ``cbc`` backend: PuLP's bundled CBC binary, driven directly on wattplan's own MPS file.

PuLP 3.3 bundles CBC 2.10.3 and knows where it lies; that binary is all this backend takes from PuLP. A solve
writes the conditioned model (:mod:`formulations.conditioning`) with the one MPS writer (:mod:`formulations.mps`,
columns ``c<k>`` and rows ``r<k>``, the objective as it is, ``-max`` for a maximisation), the MIP start as CBC's
``-mips`` file, runs the binary with the options PuLP's ``PULP_CBC_CMD`` gave it (``-sec``, ``-ratio``,
``-allow``, ``-threads`` (above one, below), ``-maxNodes``, the seeds, ``-preprocess off``, ``-timeMode elapsed``,
``-printingOptions all``) and reads its solution file back by the column and row indices in the names.

Why not through PuLP's model objects: building them, PuLP's MPS writer and its reader cost 13-40% of a whole plan's
time on two rounds (``benchmarks/cbc_handover.py``; benchmarks/RESULTS.md, "The default solver without PuLP's
objects"). The model CBC sees is the same; its columns come in index order rather than PuLP's order of first use,
and a two-sided row is one ranged row rather than two, so a search CBC stops early (a node or time limit) may end
at another plan.

One thread is CBC's serial search, without ``-threads``: ``-threads 1`` starts CBC 2.10.3's thread pool with one
worker, and now and then a solve waited exactly 10 s for that worker to start (its log: ``Thread 0 used 0 times,
waiting to start 10.000``) before answering a model it solves in milliseconds (``python -m tests.helpers.cbc_stall
--threads-one``: 7 of 780 runs; none without; coin-or/Cbc issue 640 reports hangs with more threads). ``-threads
N`` is passed only for N above 1.

What the file says is read as PuLP read it: ``Optimal`` on the first line is a proof; ``Stopped on ... - objective
value`` is a solution without one; ``Infeasible`` and ``Integer infeasible`` are infeasible; anything else gives no
solution. The values are checked against the model (bounds, integrality, rows) before they are used, and an LP
relaxation's row duals give a Lagrangian bound only through :func:`~formulations.lagrangian.dual_bound`, valid for
any duals.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from wattplan.formulations.backends.base import (
    BackendUnavailable,
    ObjectiveName,
    SolveParams,
    SolverResult,
)
from wattplan.formulations.backends.pulp_backend import (
    CBC,
    CBC_PREPROCESS,
    PulpBackend,
    cbc_log_stats,
    cbc_on_clock,
    solver_seconds,
)
from wattplan.formulations.conditioning import absolute_gap, condition
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.lagrangian import dual_bound
from wattplan.formulations.mps import write_mps_to

EXIT_GRACE_S = 30.0
"""Seconds past its own ``-sec`` limit after which a CBC that has not exited is killed (it reads and writes
files besides solving; the watchdog's deadline normally ends a stuck solve first)."""


@functools.cache
def cbc_binary() -> str | None:
    """The path of PuLP's bundled CBC binary, or None when PuLP or the binary is missing (looked up once)."""
    try:
        import pulp
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PULP_CBC_CMD: still PuLP 3.3's bundled CBC
        solver = pulp.getSolver(CBC, msg=False)
    return str(solver.path) if solver.available() else None


def cbc_arguments(
    params: SolveParams, seconds: float | None, maximize: bool, relax: bool, files: dict[str, Path]
) -> list[str]:
    """CBC's command-line arguments after the model file, as PuLP's ``PULP_CBC_CMD`` built them."""
    args = ["-max"] if maximize else []
    if "start" in files:
        args += ["-mips", str(files["start"])]
    if seconds is not None:
        args += ["-sec", repr(seconds)]
    seed = params.seed + 1
    args += ["-randomSeed", str(seed), "-randomCbcSeed", str(seed), "-preprocess", CBC_PREPROCESS]
    if params.rel_gap is not None:
        args += ["-ratio", repr(float(params.rel_gap))]
    args += ["-allow", repr(absolute_gap(params.rel_gap))]
    if params.threads > 1:  # one thread is CBC's serial search: -threads 1 starts its thread pool (module docstring)
        args += ["-threads", str(params.threads)]
    if params.node_limit is not None and not relax:
        args += ["-maxNodes", str(int(params.node_limit))]
    args += ["-timeMode", "elapsed", "-initialSolve" if relax else "-solve"]
    return [*args, "-printingOptions", "all", "-solution", str(files["solution"])]


def write_start(path: Path, start: np.ndarray) -> None:
    """The MIP start as CBC's ``-mips`` file: a solution file's header, then ``index c<k> value 0`` per column."""
    lines = ["Stopped on time - objective value 0\n"]
    lines += [f"{k:>7} c{k} {float(v)!r:>15} {0:>23}\n" for k, v in enumerate(start)]
    path.write_text("".join(lines), encoding="ascii")


def read_cbc_solution(path: Path, num_cols: int, num_rows: int) -> tuple[str, np.ndarray, np.ndarray]:
    """CBC's first line, the column values and the row duals of a solution file of ``c<k>``/``r<k>`` names.

    A column or row the file does not list is 0 (PuLP's reading); a line marked ``**`` (a value off its bound
    by more than CBC's tolerance) is read like any other, and the caller checks the values.
    """
    text = path.read_text(encoding="ascii", errors="replace").splitlines()
    values, duals = np.zeros(num_cols), np.zeros(num_rows)
    for line in text[1:]:
        fields = line.split()
        if fields[:1] == ["**"]:
            fields = fields[1:]
        if len(fields) < 4 or len(fields[1]) < 2 or not fields[1][1:].isdigit():
            continue
        index = int(fields[1][1:])
        if fields[1][0] == "c" and index < num_cols:
            values[index] = float(fields[2])
        elif fields[1][0] == "r" and index < num_rows:
            duals[index] = float(fields[3])
    return (text[0].strip() if text else ""), values, duals


class CbcBackend(PulpBackend):
    """PuLP's bundled CBC run on wattplan's MPS file (module docstring); exports as :class:`PulpBackend` does."""

    features: ClassVar = replace(PulpBackend.features, node_limit=True)

    def __init__(self) -> None:
        super().__init__(CBC, label="cbc")

    def is_available(self) -> bool:
        """True when PuLP's bundled CBC binary is on this machine."""
        return cbc_binary() is not None

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Write the conditioned ``lm``, run CBC on it and read its answer (module docstring).

        No MIP bound is reported (CBC's solution file carries none, and a gap tolerance is no proof); an LP
        relaxation that CBC calls optimal carries the Lagrangian bound of its row duals.
        """
        binary = cbc_binary()
        if binary is None:
            raise BackendUnavailable(f"PuLP cannot find the solver {CBC!r} on this machine")
        entered = time.perf_counter()
        model = replace(lm, is_int=np.zeros(lm.num_cols, dtype=bool)) if relax else lm  # what CBC solves
        cond = condition(model, objective)
        with tempfile.TemporaryDirectory(prefix="wattplan-cbc-") as scratch:
            folder = Path(scratch)
            files = {"model": folder / "model.mps", "solution": folder / "model.sol", "log": folder / "cbc.log"}
            names = ([f"c{k}" for k in range(lm.num_cols)], [f"r{r}" for r in range(lm.num_rows)])
            with files["model"].open("w", encoding="ascii", newline="\n") as f:
                write_mps_to(f, cond.lm, objective, False, names=names)  # the objective as it is; -max if maximised
            if start is not None and not relax:
                files["start"] = folder / "start.mst"
                write_start(files["start"], start)
            build_s = time.perf_counter() - entered
            seconds = None if params.time_limit_s is None else solver_seconds(float(params.time_limit_s), build_s)
            argv = [binary, str(files["model"]), *cbc_arguments(params, seconds, maximize, relax, files)]
            begin = time.perf_counter()
            failure = _run(argv, files["log"], None if seconds is None else seconds + EXIT_GRACE_S)
            elapsed = time.perf_counter() - begin
            log = files["log"].read_text(encoding="utf-8", errors="replace") if files["log"].is_file() else ""
            if failure or not files["solution"].is_file():
                why = failure or "CBC wrote no solution file"
                return SolverResult("error", solve_s=elapsed, message=f"cbc: {why}: {log[-300:]}")
            head, values, duals = read_cbc_solution(files["solution"], lm.num_cols, lm.num_rows)
        stats = cbc_log_stats(log)
        on_clock = cbc_on_clock(log)
        word = head.split()[0] if head else ""
        if word in ("Infeasible", "Integer"):
            return SolverResult("infeasible", solve_s=elapsed, message=head, on_clock=on_clock)
        if word != "Optimal" and "objective value" not in head:
            return SolverResult("no_solution", solve_s=elapsed, message=head, on_clock=on_clock)
        values = np.where(model.is_int, np.round(values), values)
        if not model.is_feasible(values):
            return SolverResult("no_solution", solve_s=elapsed, message=head, on_clock=on_clock)
        proven = word == "Optimal"
        bound = None
        if relax and proven:
            model_duals = duals * cond.row_scale / cond.objective_scale
            bound = dual_bound(lm, lm.objectives[objective], maximize, model_duals)
        return SolverResult(
            "optimal" if proven else "feasible",
            values=values,
            objective=float(lm.objectives[objective] @ values),
            bound=bound,
            solve_s=elapsed,
            message=head,
            stats=stats,
            on_clock=on_clock,
        )


def _run(argv: list[str], log: Path, timeout_s: float | None) -> str:
    """Run CBC with its output in ``log``; why it failed ("" when it exited 0)."""
    with log.open("wb") as out:
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"CBC ran {timeout_s:g} s past its limit and was killed"
        except OSError as exc:
            return f"CBC could not start ({exc.strerror})"
    return "" if done.returncode == 0 else f"CBC exited with status {done.returncode}"
