"""Model exchange end to end: export both stages, solve them outside, read the solutions back.

The round is the first 8 jobs of the shipped default round on one node of each GPU type, with a
budget of 30% of full power (the ``energy`` variants 60%, so that the progress target is
reachable). Outside solvers run as outside programs would: CBC as its command-line binary
(PuLP's bundled one, and Debian's ``cbc`` where installed), HiGHS and SCIP in a fresh Python
process reading the file. Every file is a minimisation (:mod:`formulations.mps`), so nobody
passes ``-max`` or a sense.

Why this round: progress is a small number (0.0066 here) and solvers stop or accept rows at
*absolute* tolerances of about 1e-6, so on some rounds two plans whose progress differs by less
than that are equally "optimal" to a solver and solvers legitimately disagree (seen on the
12-job slice: 1.3e-5 relative in stage 1, and stage 2 using up to 1e-6 below the floor). Here
the optimum of each stage is clear of that, so the solvers must agree to 1e-6 relative.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.instances import small_round
from wattplan.formulations.external_plan import solution_values
from wattplan.formulations.ir import EXPORT_NAME_MAX, ModelBuilder
from wattplan.formulations.mps import CBC_EXACT, HIGHS_EXACT, write_mps
from wattplan.formulations.round_model import build_round_model
from wattplan.formulations.solution_io import read_solution
from wattplan.formulations.stage_export import stage2_path
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.problems import SolutionRejected

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
REL = 1e-6


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def rhs(mps_text: str, row: str) -> float:
    """The right-hand side of ``row`` in an MPS file's ``RHS`` section."""
    fields = next(f for f in (line.split() for line in mps_text.splitlines()) if f[:2] == ["RHS", row])
    return float(fields[2])


# --------------------------------------------------------------------------------------------
# Outside solvers


def cbc_binaries() -> list[Path]:
    """The CBC command-line binaries here: PuLP's bundled one and Debian's ``cbc``."""
    import pulp

    found = []
    bundled = Path(pulp.__file__).parent / "solverdir" / "cbc" / "linux" / "i64" / "cbc"
    if bundled.exists():
        found.append(bundled)
    system = shutil.which("cbc")
    if system and Path(system).resolve() not in [p.resolve() for p in found]:
        found.append(Path(system))
    return found


def solve_cbc(binary: Path, mps: Path, sol: Path, *extra: str) -> None:
    """``cbc MODEL [extra] -solve -solution SOL``: no sense given, the file says minimise."""
    result = subprocess.run(
        [str(binary), str(mps), *extra, "-solve", "-solution", str(sol)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and sol.exists(), result.stdout[-2000:] + result.stderr[-2000:]


HIGHS_SCRIPT = """
import sys, highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.setOptionValue("mip_rel_gap", 0.0)
assert h.readModel(sys.argv[1]) == highspy.HighsStatus.kOk
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
h.writeSolution(sys.argv[2], 0)
"""
SCIP_SCRIPT = """
import sys, pyscipopt
m = pyscipopt.Model()
m.hideOutput()
m.readProblem(sys.argv[1])
m.optimize()
assert m.getStatus() == "optimal", m.getStatus()
m.writeSol(m.getBestSol(), sys.argv[2])
"""


def _python_solver(script: str) -> Callable[[Path, Path], None]:
    def solve(mps: Path, sol: Path) -> None:
        result = subprocess.run(
            [sys.executable, "-c", script, str(mps), str(sol)], capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]

    return solve


def outside_solvers() -> dict[str, Callable[[Path, Path], None]]:
    """Every outside solver available here, by name, as ``solve(mps, solution_file)``."""
    solvers: dict[str, Callable[[Path, Path], None]] = {}
    for k, binary in enumerate(cbc_binaries()):
        solvers["cbc" if k == 0 else f"cbc-{k}"] = lambda mps, sol, b=binary: solve_cbc(b, mps, sol, "-ratio", "0")
    for name, script in (("highs", HIGHS_SCRIPT), ("scip", SCIP_SCRIPT)):
        module = "highspy" if name == "highs" else "pyscipopt"
        try:
            __import__(module)
        except ImportError:
            continue
        solvers[name] = _python_solver(script)
    return solvers


def file_objective(instance: Path, sol: Path, vector: str, maximize: bool) -> tuple[float, float | None]:
    """The objective of a solution file's values in the file's terms (a minimisation), and what the file reports."""
    lm = build_round_model(load_instance(instance)).lm
    solution = read_solution(sol)
    values, _ = solution_values(lm, solution, sol)
    value = float(lm.objectives[vector] @ values)
    return (-value if maximize else value), solution.objective


# --------------------------------------------------------------------------------------------
# The exported round, planned by wattplan


@dataclass(frozen=True)
class Exported:
    instance: Path
    stage1: Path
    stage2: Path
    plan: dict


def _export(folder: Path, objective: str, budget_share: float, jobs: int = 8) -> Exported:
    instance = small_round(folder, objective, budget_share, jobs)
    model = folder / "round.mps"
    result = run(
        "plan", instance, "--solver", "highs", "--gap", "0", "--time-limit", "60",
        "--export-model", model, "--out", folder / "plan.json", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert stage2_path(model).exists()
    return Exported(instance, model, stage2_path(model), json.loads((folder / "plan.json").read_text()))


@pytest.fixture(scope="module")
def progress_round(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    return _export(tmp_path_factory.mktemp("progress"), "progress", 0.3)


# --------------------------------------------------------------------------------------------
# The file


def test_the_file_starts_with_name_after_comments_and_has_no_sense(progress_round: Exported) -> None:
    for path in (progress_round.stage1, progress_round.stage2):
        lines = path.read_text().splitlines()
        head = [line for line in lines if not line.startswith("*")]
        assert head[0].startswith("NAME") and lines[0].startswith("* wattplan: ")
        sections = [line.split()[0] for line in lines if line and line[0] not in "* "]
        assert sections == ["NAME", "ROWS", "COLUMNS", "RHS", "BOUNDS", "ENDATA"]
        assert "OBJSENSE" not in path.read_text() and "MAX" not in sections
    first = progress_round.stage1.read_text().splitlines()
    assert first[0] == "* wattplan: maximise progress = - (this objective); the file is a minimisation"
    second = progress_round.stage2.read_text().splitlines()
    assert second[0] == "* wattplan: minimise energy = this objective; the file is a minimisation"
    assert " G  progress_floor" in second and " L  energy" in second


def test_the_writer_keeps_every_kind_of_row_and_bound(tmp_path: Path) -> None:
    """Ranged, equality, free rows; fixed, free, negative and infinite bounds; continuous between integers."""
    b = ModelBuilder()
    c = [
        b.add_col("a[1]", 0, 1, True),
        b.add_col("b (cont)", -2.5, 4, False),
        b.add_col("c", -np.inf, np.inf, False),
        b.add_col("d", 3, 3, True),
        b.add_col("e", 1, np.inf, True),
        b.add_col("f", -np.inf, 5, False),
        b.add_col("a[1]", 0, 2, True),  # a repeated name
    ]
    b.add_row(c[:3], [1, 2, -1], 1, 7, "ranged")
    b.add_row(c[3:5], [1, 1], 4, 4, "equal")
    b.add_row([c[5], c[6]], [1, 1e-7], -np.inf, 3.25, "upper")
    b.add_row([c[0], c[2]], [1, 1], -np.inf, np.inf, "free")
    lm = b.build({"progress": np.array([1, 0, 0.5, 0, 2, -1, 1e-9])})
    path = tmp_path / "m.mps"
    write_mps(lm, "progress", True, path)
    script = """
import json, sys, highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
assert h.readModel(sys.argv[1]) == highspy.HighsStatus.kOk
lp = h.getLp()
print(json.dumps({k: [float(v) if abs(v) < 1e30 else (1e99 if v > 0 else -1e99) for v in getattr(lp, k)]
                  for k in ("col_cost_", "col_lower_", "col_upper_", "row_lower_", "row_upper_")}
                 | {"integrality": [int(v) for v in lp.integrality_], "sense": int(lp.sense_), "rows": lp.num_row_}))
"""
    pytest.importorskip("highspy")
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    read = json.loads(out.stdout)
    big = lambda v: [1e99 if x == np.inf else -1e99 if x == -np.inf else x for x in v]  # noqa: E731
    assert read["col_cost_"] == [-1, 0, -0.5, 0, -2, 1, -1e-9]  # negated: the file minimises
    assert read["col_lower_"] == big(lm.lb) and read["col_upper_"] == big(lm.ub)
    assert read["integrality"] == [1, 0, 0, 1, 1, 0, 1]
    assert read["row_lower_"][:3] == [1, 4, -1e99] and read["row_upper_"][:3] == [7, 4, 3.25]
    assert read["sense"] == 1  # minimise
    text = path.read_text()
    assert "a_1_2" in text and "b_cont" in text  # safe, distinct names


def test_export_names_are_safe_distinct_and_short() -> None:
    b = ModelBuilder()
    for name in ["x[j 1]", "x_j_1", "x[j-1]", "x_j_1_2", "é", "y" * 300, "y" * 299 + "z"]:
        b.add_col(name, 0, 1, True)
    cols, _ = b.build({}).export_names()
    assert len(set(cols)) == len(cols)
    assert all(c and " " not in c and len(c) <= EXPORT_NAME_MAX + 3 for c in cols)
    assert all(set(c) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") for c in cols)


def stage1_value(plan_doc: dict) -> float:
    """P1, the first stage's value, which stage 2's floor is built from (the plan reports its own progress)."""
    return next(s["objective"] for s in plan_doc["round"]["stages"] if s["stage"] == "max_progress")


# --------------------------------------------------------------------------------------------
# Both stages, three solvers


@pytest.mark.slow
def test_outside_solvers_agree_with_wattplan_on_both_stages(progress_round: Exported, tmp_path: Path) -> None:
    solvers = outside_solvers()
    assert "cbc" in solvers, "PuLP's bundled CBC binary is missing"
    report = progress_round.plan["round"]
    stages = {s["stage"]: s for s in report["stages"]}
    p1 = stage1_value(progress_round.plan)
    expected = {
        progress_round.stage1: ("progress", True, -p1),
        progress_round.stage2: ("energy", False, stages["min_energy_at_progress"]["objective"]),
    }
    for mps, (vector, maximize, wattplan_value) in expected.items():
        found = {}
        for name, solve in solvers.items():
            sol = tmp_path / f"{mps.stem}.{name}.sol"
            solve(mps, sol)
            value, reported = file_objective(progress_round.instance, sol, vector, maximize)
            assert reported is not None and reported == pytest.approx(value, rel=REL, abs=5e-9)  # CBC prints 8 decimals
            found[name] = value
            out = tmp_path / f"{mps.stem}.{name}.plan.json"
            result = run("plan", progress_round.instance, "--from-solution", sol, "--out", out, "-q")
            assert result.exit_code == 0, result.output
            assert run("validate", progress_round.instance, out).exit_code == 0
            doc = json.loads(out.read_text())["round"]
            assert doc["status"] == "feasible" and doc["solver"] == f"external:{name.split('-')[0]}"
            assert doc["progress" if maximize else "energy_j"] == pytest.approx(-value if maximize else value, rel=REL)
        for name, value in found.items():
            assert value == pytest.approx(wattplan_value, rel=REL), (mps.name, name, found, wattplan_value)


@pytest.mark.slow
def test_cbc_needs_no_max_flag(progress_round: Exported, tmp_path: Path) -> None:
    """Plain ``cbc FILE -solve -solution SOL`` minimises the file and finds ``-P1``."""
    p1 = stage1_value(progress_round.plan)
    for binary in cbc_binaries():
        sol = tmp_path / "plain.sol"
        solve_cbc(binary, progress_round.stage1, sol)
        value, reported = file_objective(progress_round.instance, sol, "progress", True)
        assert reported is not None and reported < 0
        assert value == pytest.approx(-p1, rel=1e-4)  # CBC's own default tolerances, nothing else
        result = run("plan", progress_round.instance, "--from-solution", sol, "--out", tmp_path / "p.json", "-q")
        assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_energy_objective_stages(tmp_path: Path) -> None:
    """Stage 1 drops the budget; stage 2's floor is (1 - delta) P*; HiGHS reproduces the planned energy."""
    pytest.importorskip("highspy")
    exported = _export(tmp_path, "energy", 0.6)
    first, second = exported.stage1.read_text(), exported.stage2.read_text()
    assert " L  energy" not in first and " L  energy" in second
    target = exported.plan["round"]["progress_target"]
    assert rhs(second, "progress_floor") == pytest.approx(target["target"], rel=1e-15)
    assert target["target"] == pytest.approx(0.97 * target["best_without_budget"], rel=1e-12)
    sol = tmp_path / "stage2.sol"
    _python_solver(HIGHS_SCRIPT)(exported.stage2, sol)
    value, _ = file_objective(exported.instance, sol, "energy", False)
    assert value == pytest.approx(exported.plan["round"]["objective_value"], rel=REL)
    out = tmp_path / "from.json"
    assert run("plan", exported.instance, "--from-solution", sol, "--out", out, "-q").exit_code == 0
    doc = json.loads(out.read_text())["round"]
    assert doc["objective"] == "energy" and doc["objective_value"] == pytest.approx(value, rel=REL)


def test_stage2_for_an_outside_stage1_optimum(progress_round: Exported, tmp_path: Path) -> None:
    """``--stage2-progress P1`` rebuilds exactly the planner's stage 2; another P moves only the floor."""
    p1 = stage1_value(progress_round.plan)
    model = tmp_path / "again.mps"
    result = run("plan", progress_round.instance, "--export-model", model, "--stage2-progress", repr(p1))
    assert result.exit_code == 0 and "no plan" in result.output, result.output
    assert model.read_bytes() == progress_round.stage1.read_bytes()
    assert stage2_path(model).read_bytes() == progress_round.stage2.read_bytes()
    result = run("plan", progress_round.instance, "--export-model", model, "--stage2-progress", "0.005")
    assert result.exit_code == 0, result.output
    assert rhs(stage2_path(model).read_text(), "progress_floor") == pytest.approx(0.005 * (1 - 1e-6), rel=1e-15)


def test_a_new_export_removes_a_stale_stage2(progress_round: Exported, tmp_path: Path) -> None:
    model = tmp_path / "m.mps"
    stage2_path(model).write_text("stale")
    result = run("plan", progress_round.instance, "--export-model", model, "--stage2-progress", "0.001")
    assert result.exit_code == 0 and "stale" not in stage2_path(model).read_text()


# --------------------------------------------------------------------------------------------
# Reading solutions: formats and refusals


def _names(instance: Path) -> list[str]:
    return build_round_model(load_instance(instance)).lm.export_names()[0]


def _cbc_file(path: Path, entries: list[tuple[str, float]], status: str = "Optimal") -> Path:
    lines = [f"{status} - objective value -0.00100000"]
    lines += [f"{k:>7} {name:<40} {value:>15} {0:>23}" for k, (name, value) in enumerate(entries)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _refused(instance: Path, sol: Path, tmp_path: Path, *words: str) -> list[str]:
    """The command exits 1 without a traceback or a plan; the problems (read through the front door) hold ``words``."""
    from wattplan.planner.planning import plan_from_solution

    result = run("plan", instance, "--from-solution", sol, "--out", tmp_path / "never.json")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "solution rejected" in result.output
    assert not (tmp_path / "never.json").exists()
    with pytest.raises(SolutionRejected) as err:
        plan_from_solution(load_instance(instance), sol)
    assert err.value.source == str(sol)
    problems = [f"{p.path}: {p.message} [{p.code}]" for p in err.value.problems]
    for word in words:
        assert any(word in p for p in problems), (word, problems)
    return problems


def test_the_three_formats_are_told_apart(tmp_path: Path) -> None:
    cbc = tmp_path / "a.txt"
    cbc.write_text("Stopped on time - objective value -1.5\n      3 x_a 1 0\n**    4 x_b 0.5 0\n")
    highs = tmp_path / "b.txt"
    highs.write_text(
        "Model status\nOptimal\n\n# Primal solution values\nFeasible\nObjective -1.5\n# Columns 2\nx_a 1\nx_b 0\n"
        "# Rows 1\nr 1\n\n# Dual solution values\nNone\n"
    )
    scip = tmp_path / "c.txt"
    scip.write_text("solution status: optimal solution found\nobjective value: -1.5\nx_a 1 \t(obj:-1.5)\n")
    read = [read_solution(p) for p in (cbc, highs, scip)]
    assert [s.format for s in read] == ["cbc", "highs", "scip"]
    assert all(s.objective == -1.5 for s in read)
    assert [(v.name, v.value, v.line) for v in read[0].values] == [("x_a", 1.0, 2), ("x_b", 0.5, 3)]
    assert [(v.name, v.value, v.line) for v in read[1].values] == [("x_a", 1.0, 8), ("x_b", 0.0, 9)]
    assert [(v.name, v.value, v.line) for v in read[2].values] == [("x_a", 1.0, 3)]
    assert read[1].lists_every_column and not read[0].lists_every_column and not read[2].lists_every_column


def test_unknown_missing_and_infeasible_solutions_are_refused(tmp_path: Path) -> None:
    instance = small_round(tmp_path / "round")
    names = _names(instance)
    jobs_a = [n for n in names if n.startswith("x_j3_")]
    # an unknown column, named with its file and line
    sol = _cbc_file(tmp_path / "unknown.sol", [(names[0], 1), ("x_nobody_v100_1_100", 1)])
    _refused(instance, sol, tmp_path, f"{sol}:3", "x_nobody_v100_1_100", "unknown-column")
    # one job twice: its job row is broken, and the lines that set it are named
    sol = _cbc_file(tmp_path / "twice.sol", [(jobs_a[0], 1), (jobs_a[1], 1)])
    _refused(instance, sol, tmp_path, "row job_j3", f"{jobs_a[0]} = 1 (line 2)", f"{jobs_a[1]} = 1 (line 3)")
    # a fractional value of an integer column
    sol = _cbc_file(tmp_path / "half.sol", [(jobs_a[0], 0.5)])
    _refused(instance, sol, tmp_path, f"{sol}:2", "must be an integer")
    # HiGHS lists every column: one left out is missing
    lines = [f"{n} 0" for n in names[1:]]
    highs = tmp_path / "missing.sol"
    highs.write_text(
        "Model status\nOptimal\n\n# Primal solution values\nFeasible\nObjective 0\n"
        f"# Columns {len(lines)}\n" + "\n".join(lines) + "\n# Rows 0\n"
    )
    _refused(instance, highs, tmp_path, "missing-column", names[0])
    # a solver that found nothing, and a file that is no solution at all
    _refused(
        instance,
        _cbc_file(tmp_path / "inf.sol", [], "Infeasible"),
        tmp_path,
        "CBC reports 'Infeasible'",
        "[no-solution]",
    )
    (tmp_path / "junk.sol").write_text("hello\n")
    _refused(instance, tmp_path / "junk.sol", tmp_path, "unknown format")


def test_a_solution_over_the_budget_is_refused(tmp_path: Path) -> None:
    """Every job on its most power-hungry option: the energy row (the budget) breaks."""
    instance = small_round(tmp_path / "round", budget_share=0.05)
    rm = build_round_model(load_instance(instance))
    names = rm.lm.export_names()[0]
    energy = rm.lm.objectives["energy"]
    xt = rm.options.exclusive_table
    entries = []
    for j in np.unique(xt.job).tolist():
        cols = rm.x_cols[xt.job == j]
        entries.append((names[int(cols[np.argmax(energy[cols])])], 1.0))
    u = [(names[c], float(rm.lm.ub[c])) for c in rm.u_cols.values()]
    sol = _cbc_file(tmp_path / "hungry.sol", entries + u)
    _refused(instance, sol, tmp_path, "row energy", "violated-row")


def test_bad_usage_exits_2(progress_round: Exported, tmp_path: Path) -> None:
    sol = _cbc_file(tmp_path / "empty.sol", [])
    both = run("plan", progress_round.instance, "--from-solution", sol, "--export-model", tmp_path / "m.mps")
    assert both.exit_code == 2 and "--from-solution" in both.output
    missing = run("plan", progress_round.instance, "--from-solution", tmp_path / "nope.sol")
    assert missing.exit_code == 2 and "nope.sol" in missing.output
    folder = run("plan", progress_round.instance, "--from-solution", tmp_path)
    assert folder.exit_code == 2 and "folder" in folder.output
    alone = run("plan", progress_round.instance, "--stage2-progress", "0.1")
    assert alone.exit_code == 2 and "--export-model" in alone.output
    negative = run("plan", progress_round.instance, "--export-model", tmp_path / "m.mps", "--stage2-progress", "-1")
    assert negative.exit_code == 2 and "--stage2-progress" in negative.output


def test_an_empty_solution_is_the_empty_plan(progress_round: Exported, tmp_path: Path) -> None:
    """CBC and SCIP leave zeros out: a file with no entries means every column is 0, a valid (idle) plan."""
    out = tmp_path / "idle.json"
    result = run("plan", progress_round.instance, "--from-solution", _cbc_file(tmp_path / "e.sol", []), "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())["round"]
    assert doc["progress"] == 0 and doc["status"] == "feasible"


def test_a_superscript_column_count_is_refused_not_a_traceback(tmp_path: Path) -> None:
    """``'²'.isdigit()`` is True and ``int('²')`` fails: the reader must refuse it as it refuses any bad count."""
    highs = tmp_path / "b.txt"
    highs.write_text(
        "Model status\nOptimal\n\n# Primal solution values\nFeasible\nObjective -1.5\n# Columns \u00b2\nx_a 1\nx_b 0\n"
    )
    with pytest.raises(SolutionRejected):
        read_solution(highs)


# --------------------------------------------------------------------------------------------
# Tolerances for the true optimum, and the gap of an outside answer (issue 41)


def header_options(mps: Path) -> tuple[list[str], dict[str, float]]:
    """The CBC arguments and HiGHS options a file's header names for the true optimum (what an outsider reads)."""
    head = [line.removeprefix("* wattplan: ") for line in mps.read_text().splitlines() if line.startswith("*")]
    cbc = next(line for line in head if line.startswith("for the true optimum, CBC: cbc FILE "))
    words = cbc.removeprefix("for the true optimum, CBC: cbc FILE ").split()
    highs = next(line for line in head if line.startswith("HiGHS options: "))
    options = dict(kv.split("=") for kv in highs.removeprefix("HiGHS options: ").split())
    return words[: words.index("-solve")], {k: float(v) for k, v in options.items()}


def test_every_file_names_the_options_that_prove_the_true_optimum(progress_round: Exported) -> None:
    """Zero gaps, a tiny CBC cutoff increment and tight feasibility tolerances, in every file's header comments."""
    for path in (progress_round.stage1, progress_round.stage2):
        cbc, highs = header_options(path)
        assert " ".join(cbc) == CBC_EXACT and "-increment" in cbc and "-ratioGap" in cbc
        assert highs == {k: float(v) for k, v in (kv.split("=") for kv in HIGHS_EXACT.split())}
        assert highs["mip_rel_gap"] == 0 and highs["mip_abs_gap"] == 0 and highs["mip_feasibility_tolerance"] <= 1e-9
        assert all(line.startswith("* wattplan: ") for line in path.read_text().splitlines()[:8] if line[0] == "*")


HIGHS_WITH_OPTIONS = """
import json, sys, highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
for name, value in json.loads(sys.argv[3]).items():
    h.setOptionValue(name, value)
assert h.readModel(sys.argv[1]) == highspy.HighsStatus.kOk
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
h.writeSolution(sys.argv[2], 0)
"""


@pytest.mark.slow
def test_the_header_options_make_cbc_and_highs_find_the_true_optimum(tmp_path: Path) -> None:
    """With the options in the file's header CBC and HiGHS find the proven optimum of both stages to 1e-9.

    The 12-job slice: CBC 2.10 with its defaults says Optimal 1.2e-3 short of P1 (its cutoff increment, 1e-5, is an
    absolute step in a progress of 0.0068); the optimum is wattplan's, both stages proven with gap 0.
    """
    pytest.importorskip("highspy")
    exported = _export(tmp_path / "r12", "progress", 0.3, jobs=12)
    stages = {s["stage"]: s for s in exported.plan["round"]["stages"]}
    assert all(s["status"] == "optimal" for s in stages.values())  # both stages proven: the true optima
    expected = {
        exported.stage1: ("progress", True, -stages["max_progress"]["objective"]),
        exported.stage2: ("energy", False, stages["min_energy_at_progress"]["objective"]),
    }
    for mps, (vector, maximize, optimum) in expected.items():
        cbc_args, highs_options = header_options(mps)
        found = {}
        for k, binary in enumerate(cbc_binaries()):
            sol = tmp_path / f"{mps.stem}.cbc{k}.sol"
            solve_cbc(binary, mps, sol, *cbc_args)
            found[f"cbc{k}"] = file_objective(exported.instance, sol, vector, maximize)[0]
        sol = tmp_path / f"{mps.stem}.highs.sol"
        _python_solver(HIGHS_WITH_OPTIONS.replace("sys.argv[3]", repr(json.dumps(highs_options))))(mps, sol)
        found["highs"] = file_objective(exported.instance, sol, vector, maximize)[0]
        assert "cbc0" in found, "PuLP's bundled CBC binary is missing"
        for name, value in found.items():
            assert value == pytest.approx(optimum, rel=1e-9), (mps.name, name, found, optimum)


def _from_solution(instance: Path, sol: Path, out: Path, *extra: str) -> tuple[dict, str]:
    result = run("plan", instance, "--from-solution", sol, "--out", out, *extra)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["round"], result.output


def test_from_solution_reports_the_gap_to_wattplans_lp_bound(progress_round: Exported, tmp_path: Path) -> None:
    """An outside answer's plan carries wattplan's proven LP bound and its gap, ``|bound - v| / max(|v|, 1e-9)``."""
    binaries = cbc_binaries()
    assert binaries, "PuLP's bundled CBC binary is missing"
    sol = tmp_path / "s1.sol"
    solve_cbc(binaries[0], progress_round.stage1, sol, *header_options(progress_round.stage1)[0])
    doc, output = _from_solution(progress_round.instance, sol, tmp_path / "p.json")
    lp = progress_round.plan["round"]["lp_bound"]  # wattplan's own plan: the same LP, by the same solver
    assert doc["status"] == "feasible" and doc["lp_bound"] == pytest.approx(lp, rel=1e-9)
    assert doc["bound"] == doc["lp_bound"] and doc["progress"] <= doc["bound"]
    assert doc["gap"] == pytest.approx((doc["bound"] - doc["progress"]) / doc["progress"], rel=1e-9)
    assert "LP relaxation" in doc["lp_bound_note"]
    assert "LP bound" in output and f"bound {doc['bound']:.4g}" in output and f"gap {doc['gap']:.2%}" in output
    # an idle answer: the same bound, and the whole of it as the gap
    idle, _ = _from_solution(progress_round.instance, _cbc_file(tmp_path / "e.sol", []), tmp_path / "idle.json")
    assert idle["bound"] == pytest.approx(lp, rel=1e-9) and idle["gap"] == pytest.approx(lp / 1e-9, rel=1e-9)
    # no LP bound asked for: none, and the note says so
    none, _ = _from_solution(progress_round.instance, sol, tmp_path / "n.json", "--no-lp-bound")
    assert none["bound"] is None and none["gap"] is None and "not computed" in none["lp_bound_note"]


def test_from_solution_bounds_the_least_energy_from_below(tmp_path: Path) -> None:
    """``energy``: the LP's least energy at progress >= (1 - delta) p is a lower bound of the objective (<= v)."""
    instance = small_round(tmp_path / "round", "energy", 0.6)
    binaries = cbc_binaries()
    assert binaries, "PuLP's bundled CBC binary is missing"
    model = tmp_path / "m.mps"
    assert run("plan", instance, "--export-model", model, "--stage2-progress", "0.004").exit_code == 0
    sol = tmp_path / "s2.sol"
    solve_cbc(binaries[0], stage2_path(model), sol, *header_options(model)[0])
    doc, _ = _from_solution(instance, sol, tmp_path / "p.json")
    assert doc["objective"] == "energy" and doc["bound"] is not None
    assert 0 < doc["bound"] <= doc["objective_value"] * (1 + 1e-9)
    assert doc["gap"] == pytest.approx((doc["objective_value"] - doc["bound"]) / doc["objective_value"], rel=1e-9)


def test_a_large_rounds_bound_comes_from_column_generation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Above the core size the bound is column generation's Lagrangian bound: the LP's optimum, to 1e-5."""
    from wattplan.formulations import solve
    from wattplan.formulations.solution_bound import outside_bound

    rm = build_round_model(load_instance(small_round(tmp_path)))
    idle = np.zeros(rm.lm.num_cols)
    direct = outside_bound(rm, idle, "highs", 30.0)
    monkeypatch.setattr(solve, "CORE_MIN_COLUMNS", 0)
    generated = outside_bound(rm, idle, "highs", 30.0)
    assert direct.value is not None and generated.value is not None
    assert "column generation" in generated.note and "column generation" not in direct.note
    assert generated.value == pytest.approx(direct.value, rel=1e-5)  # its stopping rule: 1e-5
