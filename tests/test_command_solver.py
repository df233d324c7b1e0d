"""A command-line solver (``cmd:COMMAND``) and plug-in solvers (docs/design.md §5.7.1).

The toy command is a Python script written to ``tmp_path``: it solves the MPS file with HiGHS (highspy) in its own
process and writes HiGHS's raw solution file, or misbehaves as its first argument asks. Plans are compared with
``--solver highs`` on the 8-job slice of the default round of ``tests/test_model_exchange.py``
(:func:`tests.helpers.instances.small_round`).
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.instances import small_round
from wattplan.formulations.backends import (
    BackendUnavailable,
    get_backend,
    known_names,
    plugin_names,
    register_solver,
    unregister_solver,
)
from wattplan.formulations.backends.command import CommandBackend, command_problems
from wattplan.planner.console.solver_list import split_solvers
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.planning import command_solver_checked, plan, request_problems

runner = CliRunner()

TOY_SOLVER = textwrap.dedent(
    """
    import sys, time
    mode, mps, sol, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    if mode == "fail":
        sys.stderr.write("toy: license expired\\n")
        sys.exit(3)
    if mode == "sleep":
        time.sleep(60)
    if mode == "nothing":
        sys.exit(0)
    if mode == "garbage":
        open(sol, "w").write("hello\\n")
        sys.exit(0)
    import highspy
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", limit)
    h.readModel(mps)
    h.run()
    h.writeSolution(sol, 0)
    """
)


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    path = tmp_path / "toy_solver.py"
    path.write_text(TOY_SOLVER)
    return path


def cmd(toy: Path, mode: str = "solve") -> str:
    """``cmd:PYTHON TOY MODE {mps} {sol} {time_limit}``."""
    return f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(toy))} {mode} {{mps}} {{sol}} {{time_limit}}"


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def test_a_command_plans_like_highs_but_claims_no_more_than_feasible(toy: Path, tmp_path: Path) -> None:
    instance = load_instance(small_round(tmp_path / "round"))
    ours = plan(instance, PlanRequest(solver=cmd(toy), time_limit_s=30))
    reference = plan(instance, PlanRequest(solver="highs", time_limit_s=30))
    assert ours.round.status == "feasible" and reference.round.status == "optimal"
    assert ours.round.progress == pytest.approx(reference.round.progress, rel=1e-6)
    assert ours.round.solver.startswith("cmd:")
    # even where wattplan's own LP bound closes the gap, a command solver's plan is not called optimal
    capped = command_solver_checked(reference)
    assert capped.round.status == "feasible" and capped.round.bound == reference.round.bound
    assert "at most feasible" in capped.round.notes()["bound_note"]
    stages = [s for s in ours.round.report.stages if s.message.startswith("cmd:")]
    assert stages and all("(not trusted)" in s.message and s.bound is None for s in stages)


def test_plan_through_the_cli_with_a_command(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    code, output = invoke("plan", small_round(tmp_path / "round"), "--solver", cmd(toy), "-o", out, "-q")
    assert code == 0, output
    doc = json.loads(out.read_text())
    assert doc["round"]["status"] == "feasible" and doc["round"]["solver"].startswith("cmd:")


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("fail", "exited with status 3 (toy: license expired)"),
        ("nothing", "wrote no solution file"),
        ("garbage", "its solution is rejected"),
        ("sleep", "no answer within"),  # the watchdog kills it at the deadline
    ],
)
def test_a_command_that_gives_no_solution_is_an_error(toy: Path, tmp_path: Path, mode: str, says: str) -> None:
    instance = load_instance(small_round(tmp_path / "round"))
    # Only the sleeper (60 s) must outlast the limit; the others get a limit no start-up on a loaded machine reaches,
    # or a slow Python start would read as "no answer within" instead of what the command did.
    limit = 1.0 if mode == "sleep" else 60.0
    with pytest.raises(InputError) as exc:
        plan(instance, PlanRequest(solver=cmd(toy, mode), time_limit_s=limit))
    (problem,) = exc.value.problems
    assert problem.code == "solver-failed" and says in problem.message


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_bench_times_a_command_beside_a_builtin(toy: Path, tmp_path: Path) -> None:
    instances = small_round(tmp_path / "set")
    out = tmp_path / "bench"
    # the command quoted whole, as a user types cbc,cmd:"..." inside single quotes
    solvers = f'greedy,cmd:"{cmd(toy)[4:]}",{cmd(toy, "fail")}'
    code, output = invoke("bench", instances, "--solvers", solvers, "--time-limit", "20", "-q", "-o", out)
    assert code == 0, output
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    by_solver = {r["solver"]: r for r in runs}
    assert set(by_solver) == {"greedy", cmd(toy), cmd(toy, "fail")}
    good, bad = by_solver[cmd(toy)], by_solver[cmd(toy, "fail")]
    assert good["status"] == "feasible" and good["valid"] and good["time_s"] > 0
    assert bad["status"] == "error" and "exited with status 3" in bad["message"]


def test_bad_commands_and_unknown_solvers_name_what_is_known(toy: Path) -> None:
    assert command_problems("x {mps}") == [
        "the command must contain {sol}",
        "placeholders: {mps}, {sol}, {time_limit}, {threads}, {seed}, {gap}",
    ]
    assert command_problems("x {mps} {sol} {bogus}")[0] == "unknown placeholder {bogus}"
    assert command_problems('x "{mps} {sol}')[0].startswith("cannot split")
    (p,) = request_problems(PlanRequest(solver="cmd:x {mps}"))
    assert p.path == "solver (--solver)" and "must contain {sol}" in p.message
    (p,) = request_problems(PlanRequest(solver="cmd:/no/such/solver {mps} {sol}"))
    assert p.code == "solver-unavailable" and "not available" in p.message
    (p,) = request_problems(PlanRequest(solver="nope"))
    assert "unknown solver 'nope'" in p.message and "highs" in p.message and "cmd:COMMAND" in p.message


def test_split_solvers_keeps_quoted_commands_whole() -> None:
    assert split_solvers('cbc, cmd:"s --o a,b {mps} {sol}" ,highs') == ["cbc", "cmd:s --o a,b {mps} {sol}", "highs"]
    assert split_solvers("cmd:'x {mps} {sol}'") == ["cmd:x {mps} {sol}"]
    with pytest.raises(InputError, match="not closed"):
        split_solvers('cbc,cmd:"x')
    with pytest.raises(InputError):
        split_solvers("cbc,,highs")


def test_register_solver_in_process(toy: Path) -> None:
    command = cmd(toy)[4:]
    register_solver("toy", lambda: CommandBackend(command), features=CommandBackend.features, description="toy")
    try:
        assert "toy" in plugin_names() and "toy" in known_names()
        assert get_backend("toy").name.startswith("cmd:")
        with pytest.raises(ValueError, match="registered already"):
            register_solver("toy", CommandBackend)
        with pytest.raises(ValueError, match="built-in"):
            register_solver("highs", CommandBackend)
        with pytest.raises(ValueError, match="no ':'"):
            register_solver("a:b", CommandBackend)
    finally:
        unregister_solver("toy")
    with pytest.raises(BackendUnavailable, match="unknown solver 'toy'"):
        get_backend("toy")


def test_an_entry_point_solver_plans_and_a_broken_one_names_itself(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    module = textwrap.dedent(
        f"""
        from wattplan.formulations.backends.command import CommandBackend


        class Toy(CommandBackend):
            def __init__(self):
                super().__init__({cmd(toy)[4:]!r})
        """
    )
    (folder / "toy_backend.py").write_text(module)
    info = folder / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    entries = "[wattplan.solvers]\ntoy-ep = toy_backend:Toy\nbroken = toy_backend_gone:Toy\n"
    (info / "entry_points.txt").write_text(entries)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "toy_backend", raising=False)
    assert {"toy-ep", "broken"} <= set(plugin_names()) and "toy_backend" not in sys.modules
    result = plan(load_instance(small_round(tmp_path / "round")), PlanRequest(solver="toy-ep", time_limit_s=30))
    assert result.round.status == "feasible" and result.round.solver.startswith("cmd:")
    (p,) = request_problems(PlanRequest(solver="broken"))
    assert p.code == "solver-unavailable" and "'broken'" in p.message and "ModuleNotFoundError" in p.message
