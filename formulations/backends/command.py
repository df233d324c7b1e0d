"""A command-line solver: ``cmd:"mysolver --input {mps} --solution {sol} --time {time_limit}"`` (docs/design.md §5.7).

Each MIP solve writes the stage's model as MPS (:mod:`formulations.mps`: always a minimisation, the names of
:meth:`~formulations.ir.LinearModel.export_names`), runs the command with the placeholders filled in, waits at most
the stage's time limit plus :data:`GRACE_S`, and reads the solution file the command wrote, in any format
:func:`formulations.solution_io.read_solution` knows: CBC (``-solution``), HiGHS (``writeSolution``, raw style) or
SCIP (``writeSol``). The values go through the checks of ``plan --from-solution``
(:func:`formulations.external_plan.solution_values` and :func:`~formulations.external_plan.violations`: every
name known, bounds, integrality, every row of the stage's model); integer columns are then rounded.

Nothing the command says is trusted: its status words and objective are ignored (the objective is recomputed from
the values, in the model's units), the result is ``feasible`` at best and carries no bound (``features.bound`` is
False, so a plan's bound can only be wattplan's own LP bound), and the plan made from it passes the validator like
every plan. The front door keeps a command solver's plan ``feasible`` even where that LP bound closes the gap, and
turns a stage the command did not deliver into an error (:mod:`planner.planning`).

Placeholders (each ``{name}`` inside any word of the command): ``{mps}`` the model file, ``{sol}`` the solution
file to write (both required), ``{time_limit}`` seconds (a decimal number), ``{threads}``, ``{seed}`` and
``{gap}`` (the relative gap). The command is split into words like a POSIX shell would (:func:`shlex.split`) and
run without a shell, in a process group of its own so that a timeout kills everything it started, and in the
solving process's session, so that the watchdog's sentinel kills it too when the planner dies (kill -9 included,
:mod:`formulations.watchdog`); its standard input is ``/dev/null``. Its working directory
is the planning process's, or the folder :data:`CWD_ENV` names (``wattplan bench`` sets it to the folder ``bench``
was started in, since its workers run in scratch folders), so relative paths in the command mean what they meant
where it was typed. The model and solution files live in a temporary folder removed afterwards.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from wattplan.formulations.backends.base import Features, ObjectiveName, SolveParams, SolverResult, WithoutLpDuals
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.mps import write_mps

PREFIX = "cmd:"
"""The solver-name prefix of a command-line solver."""
PLACEHOLDERS = ("mps", "sol", "time_limit", "threads", "seed", "gap")
"""The placeholders a command may use."""
REQUIRED = ("mps", "sol")
"""The placeholders a command must use: where the model is and where its solution goes."""
GRACE_S = 2.0
"""Seconds past the stage's time limit before the command is killed (it must read the model and write a file)."""
DEFAULT_TIME_LIMIT_S = 3600.0
"""``{time_limit}`` when the solve has no limit (s)."""
CWD_ENV = "WATTPLAN_COMMAND_CWD"
"""Environment variable: the working directory of command-line solvers (default: the current directory)."""
OUTPUT_TAIL = 400
"""Characters of the command's stderr (else stdout) quoted when it fails."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]*)\}")


def command_problems(command: str) -> list[str]:
    """Why ``command`` cannot be run as a solver: empty, unbalanced quotes, an unknown or a missing placeholder."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return [f"cannot split the command into words: {exc}"]
    if not words:
        return ["the command is empty"]
    used = {m.group(1) for word in words for m in _PLACEHOLDER.finditer(word)}
    problems = [f"unknown placeholder {{{name}}}" for name in sorted(used - set(PLACEHOLDERS))]
    problems += [f"the command must contain {{{name}}}" for name in REQUIRED if name not in used]
    if problems:
        problems.append(f"placeholders: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    return problems


def command_words(command: str, values: dict[str, str]) -> list[str]:
    """The command's words with each ``{name}`` replaced by ``values[name]`` (other braces left as written)."""
    return [_PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), word) for word in shlex.split(command)]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """What one run of the command left: exit status (None: killed at the timeout), its output, seconds taken."""

    returncode: int | None
    output: str
    seconds: float


def run_command(words: list[str], cwd: Path, timeout_s: float) -> CommandRun:
    """Run ``words`` in ``cwd`` in a process group of its own; at ``timeout_s`` the whole group is killed.

    A group, not a session: the command stays in the solver process's session, which the watchdog kills whole
    when the planner dies (a session of its own would outlive it).
    """
    begin = time.perf_counter()
    try:
        proc = subprocess.Popen(
            words, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0
        )
    except OSError as exc:
        return CommandRun(127, f"cannot start {words[0]!r}: {exc.strerror or exc}", time.perf_counter() - begin)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        out, err = proc.communicate()
        return CommandRun(None, _tail(out, err), time.perf_counter() - begin)
    finally:
        _kill_session(proc.pid)  # whatever it left running in its group
    return CommandRun(proc.returncode, _tail(out, err), time.perf_counter() - begin)


def _kill_session(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (gone already: nothing to do)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(out: bytes, err: bytes) -> str:
    """The last :data:`OUTPUT_TAIL` characters of stderr, else of stdout, on one line."""
    text = (err or out or b"").decode("utf-8", errors="replace").strip()
    return " ".join(text[-OUTPUT_TAIL:].split())


class CommandBackend(WithoutLpDuals):
    """A solver run as a command on an MPS file (module docstring); ``name`` is ``cmd:<command>``."""

    features: ClassVar[Features] = Features(
        mip_start=False, lp_relaxation=False, bound=False, export=True, lp_duals=False, continuous=True
    )

    def __init__(self, command: str) -> None:
        self.command = command
        self.name = f"{PREFIX}{command}"

    def is_available(self) -> bool:
        """True when the command is well formed and its program can be found (a path, or on ``PATH``)."""
        if command_problems(self.command):
            return False
        program = shlex.split(self.command)[0]
        if os.sep in program:
            return os.access(Path(os.environ.get(CWD_ENV) or os.getcwd()) / program, os.X_OK)
        from shutil import which

        return which(program) is not None

    def export(self, lm: LinearModel, objective: ObjectiveName, maximize: bool, path: Path) -> None:
        """Write the model as MPS (the only format the command reads); an ``.lp`` path is refused."""
        if Path(path).suffix != ".mps":
            raise ValueError(f"the command solver writes MPS only, not {Path(path).suffix!r}")
        write_mps(lm, objective, maximize, Path(path))

    def solve(
        self,
        lm: LinearModel,
        objective: ObjectiveName,
        maximize: bool,
        params: SolveParams,
        start: np.ndarray | None = None,
        relax: bool = False,
    ) -> SolverResult:
        """Write the MPS, run the command, read and check its solution (module docstring); never raises.

        ``start`` is not used; ``relax`` is refused (``features.lp_relaxation`` is False).
        """
        if relax:
            return SolverResult("error", message="the command solver solves no LP relaxation")
        begin = time.perf_counter()
        limit = params.time_limit_s if params.time_limit_s is not None else DEFAULT_TIME_LIMIT_S
        with tempfile.TemporaryDirectory(prefix="wattplan-cmd-") as scratch:
            folder = Path(scratch)
            mps, sol = folder / "model.mps", folder / "model.sol"
            write_mps(lm, objective, maximize, mps)
            values = {
                "mps": str(mps),
                "sol": str(sol),
                "time_limit": f"{limit:g}",
                "threads": str(params.threads),
                "seed": str(params.seed),
                "gap": f"{params.rel_gap:g}" if params.rel_gap is not None else "0",
            }
            cwd = Path(os.environ.get(CWD_ENV) or os.getcwd())
            run = run_command(command_words(self.command, values), cwd, limit + GRACE_S)
            failure = _run_failure(run, limit + GRACE_S, sol)
            if failure:
                return SolverResult("error", solve_s=time.perf_counter() - begin, message=f"{self.name}: {failure}")
            return _checked_result(lm, objective, sol, time.perf_counter() - begin, self.name)


def _run_failure(run: CommandRun, timeout_s: float, sol: Path) -> str:
    """Why the run gave no solution file to read ("" when it did)."""
    said = f" ({run.output})" if run.output else ""
    if run.returncode is None:
        return f"timed out after {timeout_s:g} s and was killed{said}"
    if run.returncode != 0:
        return f"exited with status {run.returncode}{said}"
    if not sol.is_file():
        return f"exited 0 but wrote no solution file {{sol}}{said}"
    return ""


def _checked_result(lm: LinearModel, objective: ObjectiveName, sol: Path, seconds: float, name: str) -> SolverResult:
    """The solution in ``sol`` checked as ``--from-solution`` checks it, as a ``feasible`` result without bound."""
    from wattplan.formulations.external_plan import solution_values, violations
    from wattplan.formulations.solution_io import read_solution
    from wattplan.planner.contracts.problems import InputError

    try:
        solution = read_solution(sol)
        names = lm.export_names()
        x, lines = solution_values(lm, solution, sol, names)
        problems = violations(lm, x, lines, sol, names)
    except InputError as exc:
        problems = list(exc.problems)
    if problems:
        said = "; ".join(f"{p.path}: {p.message}" for p in problems[:3])
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        return SolverResult("error", solve_s=seconds, message=f"{name}: its solution is rejected: {said}{more}")
    x[lm.is_int] = np.round(x[lm.is_int])
    value = float(lm.objectives[objective] @ x)
    message = f"{name}: {solution.format} solution, solver said {solution.status!r} (not trusted)"
    return SolverResult("feasible", values=x, objective=value, bound=None, solve_s=seconds, message=message)
