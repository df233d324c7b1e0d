"""The generated hostile-input suite (issues 22 and 41): every surface, a fixed set of seeds, every case must be ok.

Each case is a valid seed input with one mutation (:mod:`tests.hostile`), run in-process; ok means exit 0 or 2 (1
only for an invalid plan), no traceback, no ``internal error``, the mutated file or option named, nothing written
on failure, no input or protected file changed, no control character printed raw, no child process left, no
agent call on a job that did not opt in, and the refusals and readings :mod:`tests.hostile.oracle` lists. A
failure prints the surface, the seed, the mutation and the output; it reproduces with
``python benchmarks/hostile_audit.py --surface SURFACE --first-seed SEED --per-surface 1``.
The audit over 500 cases per surface is ``benchmarks/hostile_audit.py`` (benchmarks/RESULTS.md).

The surfaces of issue 41 (job lists, cluster files, ``instance next``, ``launch --from``, the agent's inputs, the
Python API) run the seeds of :data:`NEW_SAMPLE`; their cases failing for defects another change fixes are in
:data:`KNOWN` with the class, until that change lands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.hostile.inprocess import NEW_SURFACES, opted_in, unsafe_actions
from tests.hostile.oracle import CASE_DEADLINE_S, run_case
from tests.hostile.seeds import seed_dir
from tests.hostile.surfaces import SURFACES, Surface, draw_case

CASES_PER_SURFACE = 12
"""Seeds 0 to 11 of each issue-22 surface (about a second a case; 20 until the 500-case audit of every surface,
``benchmarks/hostile_audit.py``, made the breadth the audit's and the suite's time had to fit 10 minutes)."""
NEW_SAMPLE: dict[str, tuple[int, ...]] = {
    "from-jobs yaml": (0, 1, 6, 10, 11, 12, 17, 21, 22),
    "from-jobs csv": (0, 1, 4, 6, 11, 23, 71, 92),
    "cluster file": (0, 1, 3, 6, 7, 13, 20, 21, 23),
    "plan jobs": (0, 1, 2, 3, 4, 5, 7, 8, 11, 12),
    "instance next": (0, 1, 2, 10, 11, 28, 32),
    "instance next jobs": (0, 1, 3, 6, 7, 10, 18, 21, 32),
    "launch from": (0, 1, 2, 8, 16, 21, 22, 25, 26, 212),
    "launch operator": (0, 1, 2, 3, 4, 10, 13, 18, 27),
    "agent squeue": (0, 1, 2, 3, 4, 6, 101, 126),
    "agent sinfo": (0, 1, 2, 11, 13, 42),
    "agent scontrol": (0, 1, 2, 3, 4, 5),
    "agent prometheus": (0, 1, 18, 64),
    "agent prometheus server": (0, 1, 2, 6, 13, 14, 20),
    "api plan": (0, 1, 5, 8, 28, 31, 44, 47, 81),
    "api plan jobs": (0, 1, 10, 14, 20, 23, 30, 43, 47, 127),
    "api simulate": (0, 1, 6, 9, 20, 74),
}
"""The seeds run of each issue-41 surface (about a second a case; the audit draws 300 and more): 0 and 1, then
the first seed of each kind that found a defect of issue 41 on the code before it (a duplicate key or column,
a YAML 1.1 type, the 9-level alias bomb, deep nesting, several documents, a swapped file, valid inputs with a
previous launch or a foreign folder as ``--out``, an administrator's hold, hostile text, an edited ``Instance``,
a Python value, a Prometheus that hangs, trickles or sends a 1 MB header), and the seeds of the defects the 300-case
audit found after the fixes (an empty ``--profiles``, a ``--partition`` that is no token, deep JSON and a
400-digit count from ``squeue``, a node name with control characters, an ``Instance`` without profiles, an
``unmanaged`` node given as a list)."""
OLD_SURFACES = tuple(s for s in SURFACES if s not in NEW_SURFACES)
KNOWN: dict[tuple[str, int], str] = {}
"""Cases of the seeds run here that fail for a defect in a file another change owns, with the reason;
remove each when it is fixed."""
runner = CliRunner()
WIDE = {"COLUMNS": "1000"}


def _failures(surface: Surface, seeds: range, tmp_path: Path) -> list[str]:
    """A line and the output of every case of ``seeds`` that is not ok (the known ones skipped)."""
    failures = []
    for seed in seeds:
        if (surface.name, seed) in KNOWN:
            continue
        case = draw_case(surface, seed, tmp_path)
        verdict = run_case(case, CASE_DEADLINE_S)
        if verdict.cls != "ok":
            failures.append(
                f"{verdict.cls}: surface {surface.name!r} seed {seed} mutation {case.mutation!r} "
                f"exit {verdict.exit_code}: {verdict.first_line}\n  argv: {case.argv}\n{verdict.output[-2000:]}"
            )
    return failures


@pytest.mark.slow
@pytest.mark.parametrize("surface", OLD_SURFACES, ids=[s.name for s in OLD_SURFACES])
def test_every_generated_case_is_handled(surface: Surface, tmp_path: Path) -> None:
    failures = _failures(surface, range(CASES_PER_SURFACE), tmp_path)
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("surface", NEW_SURFACES, ids=[s.name for s in NEW_SURFACES])
def test_every_generated_case_of_the_issue_41_surfaces_is_handled(surface: Surface, tmp_path: Path) -> None:
    failures = _failures(surface, NEW_SAMPLE[surface.name], tmp_path)
    assert not failures, "\n\n".join(failures)


def test_a_case_is_the_same_for_the_same_seed(tmp_path: Path) -> None:
    surface = SURFACES[0]
    first = draw_case(surface, 7, tmp_path / "a")
    again = draw_case(surface, 7, tmp_path / "b")
    assert (first.mutation, first.kind) == (again.mutation, again.kind)
    assert [p.name for p in sorted(first.inputs.rglob("*"))] == [p.name for p in sorted(again.inputs.rglob("*"))]
    assert all(
        a.read_bytes() == b.read_bytes()
        for a, b in zip(sorted(first.inputs.rglob("*.json")), sorted(again.inputs.rglob("*.json")), strict=True)
    )


# Regression tests of the defects the generator found (each failed before its fix).


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def test_a_long_file_name_in_a_problem_heading_is_printed_whole(tmp_path: Path) -> None:
    # instance check seed 3 (json:empty): the heading was the table's title, wrapped to the table's width
    folder = tmp_path / ("a-long-folder-name-" * 5)
    folder.mkdir()
    bad = folder / "instance-with-a-long-name.json"
    bad.write_text("")
    result = run("instance", "check", bad)
    assert result.exit_code == 2
    assert f"bad input: {bad} (1 problem(s))" in result.output.splitlines()


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda p: p.update(job_type=-1), "points[0].job_type"),
        (lambda p: p.update(setting_unit={"x": 1}), "points[0].setting_unit"),
        (lambda p: p["provenance"].update(gpus=1), "points[0].provenance.gpus"),
        (lambda p: p.update(colour="red"), "points[0].colour"),
    ],
)
def test_measured_points_with_wrong_types_or_unknown_fields_exit_2_naming_the_field(
    tmp_path: Path, edit, path: str
) -> None:
    # profiles check seeds 4, 6, 23: TypeError (unhashable dict, int < str, Provenance(gpus=...)) as internal errors
    doc = json.loads((seed_dir() / "measurements.json").read_text())
    edit(doc["points"][0])
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps(doc))
    result = run("profiles", "check", seed_dir() / "library.json", meas)
    assert result.exit_code == 2, result.output
    assert "m.json" in result.output and path in result.output and "bad-point" in result.output


def test_nan_setting_unit_of_a_base_library_point_exits_2_naming_it(tmp_path: Path) -> None:
    # profiles ingest library seed 10: a NaN setting_unit was merged, then writing failed with exit 1
    doc = json.loads((seed_dir() / "measurements.json").read_text())
    doc["points"][3]["setting_unit"] = float("nan")
    base = tmp_path / "base.json"
    base.write_text(json.dumps(doc))
    smi = seed_dir()
    out = tmp_path / "out.json"
    result = run(
        "profiles", "ingest", smi / "smi_units.csv", "--job-side", smi / "jobs.json", "--library", base, "--out", out
    )
    assert result.exit_code == 2, result.output
    assert "points[3].setting_unit" in result.output and not out.exists()


@pytest.mark.parametrize("command", ["launch", "validate"])
def test_a_plan_whose_solve_report_has_a_wrong_type_exits_2_naming_it(tmp_path: Path, command: str) -> None:
    # launch seed 17: round.heuristics as a string was an AttributeError (internal error)
    doc = json.loads((seed_dir() / "plan.json").read_text())
    doc["round"]["heuristics"] = "x"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    inst = seed_dir() / "instance.json"
    args = ("launch", plan, "--instance", inst, "--to", "shell", "--out", tmp_path / "o")
    result = run(*args) if command == "launch" else run("validate", inst, plan)
    assert result.exit_code == 2, result.output
    assert "round.heuristics" in result.output and "plan-schema" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("deltas", "paths"),
    [("1e308", ["--deltas[0]"]), ("0.1,,nan", ["--deltas[1]", "--deltas[2]"]), ("0.1,1", ["--deltas[1]"])],
)
def test_frontier_deltas_out_of_range_exit_2_naming_the_item(tmp_path: Path, deltas: str, paths: list[str]) -> None:
    # frontier seed 14: --deltas 1e308 was refused as "--delta" by each replay's check
    out = tmp_path / "front"
    result = run("frontier", seed_dir() / "tiny.trace", "--cluster", "v100:8", "--deltas", deltas, "--out", out)
    assert result.exit_code == 2, result.output
    assert all(p in result.output for p in paths) and "--delta " not in result.output
    assert not out.exists()


def test_frontier_jct_increase_above_1000_percent_exits_2_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "front"
    args = ("frontier", seed_dir() / "tiny.trace", "--cluster", "v100:8", "--max-jct-increase", "5,inf", "-o", out)
    result = run(*args)
    assert result.exit_code == 2 and "--max-jct-increase[1]" in result.output, result.output


@pytest.mark.parametrize(
    ("option", "value"),
    [("--gpus-per-node", "2147483648"), ("--gpus-per-node", "0"), ("--node-power-w", "nan"), ("--node-power-w", "-1")],
)
def test_node_options_out_of_range_exit_2_naming_the_option(tmp_path: Path, option: str, value: str) -> None:
    # simulate philly seed 17, instance from-trace seed 12: 2**31 GPUs per node was blamed on --cluster
    trace = seed_dir() / "tiny.trace"
    result = run("simulate", trace, "--cluster", "v100:8", "-p", "fifo-max", option, value, "-q", "-o", tmp_path / "o")
    assert result.exit_code == 2, result.output
    label = f"{option.removeprefix('--').replace('-', '_')} ({option})"  # the record's problem names it both ways
    assert label in result.output and "bad-option" in result.output


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--start-s", "nan"), "--start-s"),
        (("--end-s", "inf"), "--end-s"),
        (("--end-s", "-1"), "--end-s -1"),
        (("--start-s", "1e9"), "--start-s 1e+09"),
        (("--start-s", "-1e308"), "--start-s"),
        (("--end-s", "1e10"), "--end-s"),
    ],
)
def test_a_window_selecting_nothing_or_not_finite_names_the_option(
    tmp_path: Path, args: tuple[str, str], named: str
) -> None:
    # frontier seeds 4 and 36: NaN --start-s and --end-s -1 were reported as an empty replay naming only the trace;
    # seed 343: --start-s -1e308 hung (the replay clock never reached the first arrival)
    trace = seed_dir() / "tiny.trace"
    result = run("frontier", trace, "--cluster", "v100:8", *args, "--deltas", "0.1", "-o", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert named in result.output


def test_a_zero_budget_plans_and_reports_no_division(tmp_path: Path) -> None:
    # plan seeds 295, 341 (--budget-j 0, --power-cap-w 0): the summary divided by the budget after the plan was written
    out = tmp_path / "plan.json"
    result = run("plan", seed_dir() / "instance.json", "--solver", "greedy", "--budget-j", "0", "-q", "--out", out)
    assert result.exit_code == 0, result.output
    assert "0.000 MJ (" in result.output and "J used)" in result.output and out.exists()


@pytest.mark.parametrize(("option", "value"), [("--power-cap-w", "1e308"), ("--budget-j", "1e300")])
def test_a_budget_option_too_large_to_write_exits_2_naming_it(tmp_path: Path, option: str, value: str) -> None:
    # plan seed 178: --power-cap-w 1e308 made a budget of inf J, then 'Out of range float values' with exit 1
    out = tmp_path / "plan.json"
    result = run("plan", seed_dir() / "instance.json", "--solver", "greedy", option, value, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"bad input: {option}" in result.output or option in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("gpu_types", 0, "node_power_w"), 1e308),
        (("gpu_types", 0, "idle_power_w"), 1e200),
        (("round", "duration_s"), 1e308),
        (("profiles", 0, "power_w"), 1e308),
        (("jobs", 0, "remaining_steps"), 1e308),
    ],
)
def test_an_instance_number_that_would_overflow_exits_2_naming_it(tmp_path: Path, path: tuple, value: float) -> None:
    # plan seed 224: node_power_w 1e308 planned to an infinite energy, then 'Out of range float values' with exit 1
    doc = json.loads((seed_dir() / "instance.json").read_text())
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    inst = tmp_path / "inst.json"
    inst.write_text(json.dumps(doc))
    out = tmp_path / "plan.json"
    result = run("plan", inst, "--solver", "greedy", "--out", out)
    assert result.exit_code == 2, result.output
    named = f"{path[0]}[{path[1]}].{path[2]}" if len(path) == 3 else ".".join(map(str, path))
    assert "inst.json" in result.output and named in result.output and not out.exists()


@pytest.mark.parametrize("cell", ["1e308", "1e-300"])
def test_a_zeus_epoch_time_out_of_range_exits_2_naming_the_cell(tmp_path: Path, cell: str) -> None:
    # profiles ingest zeus summary seeds 180, 389: 1e308 s per epoch gave an energy of inf J, exit 1 on writing
    lines = (seed_dir() / "summary_power_v100.csv").read_text().splitlines()
    cells = lines[5].split(",")
    cells[5] = cell
    lines[5] = ",".join(cells)
    summary = tmp_path / "summary_power_v100.csv"
    summary.write_text("\n".join(lines) + "\n")
    out = tmp_path / "lib.json"
    result = run("profiles", "ingest", summary, "--library", "none", "--out", out)
    assert result.exit_code == 2, result.output
    assert "summary_power_v100.csv" in result.output and "line 6, time_per_epoch" in result.output
    assert not out.exists()


@pytest.mark.parametrize("value", ["1e308", "1e-308", "86401"])
def test_a_round_length_out_of_range_exits_2_naming_it_and_writes_nothing(tmp_path: Path, value: str) -> None:
    # simulate gavel seeds 109, 218 (1e308: energies of inf J, exit 1 after writing), 133, 155 (1e-308: '--restart-s')
    out = tmp_path / "o"
    trace = seed_dir() / "tiny.trace"
    result = run("simulate", trace, "--cluster", "v100:8", "-p", "fifo-max", "--round-s", value, "-q", "-o", out)
    assert result.exit_code == 2, result.output
    assert "--round-s" in result.output and "--restart-s" not in result.output
    assert not out.exists()


def test_a_truth_missing_a_type_of_the_profiles_names_both_files(tmp_path: Path) -> None:
    # simulate gavel seed 245: a job type renamed in --profiles was reported against the truth alone
    doc = json.loads((seed_dir() / "library.json").read_text())
    doc["profiles"][0]["type"] = "renamed"
    lib = tmp_path / "lib.json"
    lib.write_text(json.dumps(doc))
    args = ("--profiles", lib, "--truth", seed_dir() / "truth.json", "-q", "-o", tmp_path / "o")
    result = run("simulate", seed_dir() / "tiny.trace", "--cluster", "v100:8", "-p", "fifo-max", *args)
    assert result.exit_code == 2, result.output
    assert "truth.json" in result.output and "which --profiles lib.json has" in result.output


@pytest.mark.parametrize("solver", ["highs", "cbc", "cpsat"])
@pytest.mark.parametrize(
    ("option", "value"), [("--time-limit", "1e308"), ("--time-limit", "1e7"), ("--seed", "2147483648")]
)
def test_solver_limits_too_large_for_the_solvers_exit_2_naming_them(
    tmp_path: Path, solver: str, option: str, value: str
) -> None:
    # frontier seed 211 (--time-limit 1e308): 'cannot convert float infinity to integer' in every replay, then a
    # KeyError; plan with 1e7 s: poll() 'timeout is too large' (internal errors)
    out = tmp_path / "plan.json"
    result = run("plan", seed_dir() / "instance.json", "--solver", solver, option, value, "-q", "--out", out)
    assert result.exit_code == 2, result.output
    assert option in result.output and not out.exists()


def test_a_failed_frontier_replay_is_a_column_of_the_frontier_table() -> None:
    # frontier seed 211: the summary table read a failed row's numbers (KeyError 'stop_reason', internal error)
    from rich.console import Console

    from wattplan.planner.control.frontier import frontier_table

    console = Console(width=300, record=True)
    console.print(frontier_table([{"label": "wattplan-progress", "policy": "wattplan", "error": "OverflowError: x"}]))
    text = console.export_text()
    assert "failed" in text and "OverflowError: x" in text


def _bench_set(tmp_path: Path) -> Path:
    """A copy of the seed bench set (written by instance sweep: manifest.csv and one instance)."""
    import shutil

    folder = tmp_path / "set"
    shutil.copytree(seed_dir() / "set", folder)
    return folder


def test_a_bench_manifest_that_is_not_utf8_exits_2_naming_it(tmp_path: Path) -> None:
    # bench seeds 2, 73: a 0xff byte in manifest.csv was a bare UnicodeDecodeError (exit 1, no file named)
    folder = _bench_set(tmp_path)
    manifest = folder / "manifest.csv"
    manifest.write_bytes(b"\xff" + manifest.read_bytes())
    result = run("bench", folder, "--solvers", "greedy", "-q", "--out", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert "manifest.csv" in result.output and not (tmp_path / "o").exists()


def test_bench_out_naming_a_file_of_the_set_is_refused(tmp_path: Path) -> None:
    # bench seed 33: --out SET/manifest.csv failed with 'File exists' (exit 1)
    folder = _bench_set(tmp_path)
    before = (folder / "manifest.csv").read_bytes()
    result = run("bench", folder, "--solvers", "greedy", "-q", "--out", folder / "manifest.csv")
    assert result.exit_code == 2, result.output
    assert "--out" in result.output and (folder / "manifest.csv").read_bytes() == before


def test_a_deeply_nested_instance_of_a_bench_set_is_a_failed_run(tmp_path: Path) -> None:
    # bench seed 90: json.loads of 100,000 nested lists raised RecursionError while listing the set (internal error)
    folder = _bench_set(tmp_path)
    inst = next(folder.glob("*.json"))
    inst.write_text('{"round": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run("bench", inst, "--solvers", "greedy", "--time-limit", "2", "-q", "--out", tmp_path / "o")
    assert "internal error" not in result.output and isinstance(result.exception, SystemExit | None)
    assert result.exit_code in (0, 2), result.output


@pytest.mark.parametrize("value", [[1], "", "x" * 100, 1.5, -0.1])
def test_a_profile_utilisation_that_is_not_a_fraction_exits_2_naming_it(tmp_path: Path, value: object) -> None:
    # simulate gavel seeds 214, 338, 456: a truth's profiles[k].utilisation as a list or a string was float()'d
    # mid-replay (TypeError, an internal error; ValueError, exit 1 naming nothing)
    doc = json.loads((seed_dir() / "truth.json").read_text())
    doc["profiles"][7]["utilisation"] = value
    truth = tmp_path / "truth.json"
    truth.write_text(json.dumps(doc))
    out = tmp_path / "o"
    args = ("--truth", truth, "-p", "fifo-max", "-q", "--no-plots", "-o", out)
    result = run("simulate", seed_dir() / "tiny.trace", "--cluster", "v100:8", *args)
    assert result.exit_code == 2, result.output
    assert "truth.json" in result.output and "profiles[7].utilisation" in result.output and not out.exists()


def test_frontier_names_the_baselines_option(tmp_path: Path) -> None:
    # frontier seeds 23, 37, 114, ... of benchmarks/hostile_audit.py: 'bad input: --baseline', unlocated
    out = tmp_path / "front"
    result = run("frontier", seed_dir() / "tiny.trace", "--cluster", "v100:8", "--baselines", "nope", "--out", out)
    assert result.exit_code == 2, result.output
    assert "--baselines" in result.output


@pytest.mark.parametrize("command", ["simulate", "frontier"])
def test_a_gpu_type_given_twice_in_cluster_exits_2_naming_the_item(tmp_path: Path, command: str) -> None:
    # frontier seeds 128, 333: --cluster v100:8,v100:8 failed late in placement with exit 1, naming no option
    out = tmp_path / "o"
    extra = ["-q"] if command == "simulate" else ["--deltas", "0.1"]
    result = run(command, seed_dir() / "tiny.trace", "--cluster", "v100:8,V100:16", *extra, "--out", out)
    assert result.exit_code == 2, result.output
    assert "--cluster" in result.output and "cluster[1]" in result.output and not out.exists()


# The generator and the oracle of issue 41 (each check fails if its part is broken).


def test_an_issue_41_case_is_the_same_for_the_same_seed(tmp_path: Path) -> None:
    for surface in NEW_SURFACES:
        first = draw_case(surface, 3, tmp_path / "a")
        again = draw_case(surface, 3, tmp_path / "b")
        assert (first.mutation, first.kind, first.must_refuse) == (again.mutation, again.kind, again.must_refuse)
        mine = sorted(p for p in first.inputs.rglob("*") if p.is_file())
        theirs = sorted(p for p in again.inputs.rglob("*") if p.is_file())
        assert [p.read_bytes() for p in mine] == [p.read_bytes() for p in theirs], surface.name


def test_yaml_mutations_are_what_their_labels_say() -> None:
    import random

    import yaml

    from tests.hostile import mutate

    seed = (seed_dir() / "cluster.yaml").read_bytes()
    seen: set[str] = set()
    for k in range(400):
        made = mutate.mutate_yaml(seed, random.Random(k))
        kind = made.label.split("@")[0].split("=")[0].split("(")[0]
        seen.add(kind)
        if kind == "yaml:implicit-type":
            token = made.label.split("=", 1)[1].split("@")[0]
            assert made.control is not None and token.encode() in made.content
            if token not in ("y", "n"):  # YAML 1.1 booleans PyYAML leaves as text
                assert yaml.safe_load(made.control) != yaml.safe_load(made.content)  # PyYAML retypes the token
        elif kind == "yaml:duplicate-key":
            key = made.label.split("@")[1]
            assert made.must_refuse and made.content.count(f"{key}:".encode()) >= 2
        elif kind == "yaml:alias-bomb" and "9 levels" in made.label:
            assert made.must_refuse and made.content.count(b"*l") == 8 * 9 and len(made.content) < len(seed) + 500
    assert {"yaml:implicit-type", "yaml:duplicate-key", "yaml:alias-bomb", "yaml:multi-doc", "yaml:tag"} <= seen


def test_the_opt_in_rule_of_the_oracle() -> None:
    assert opted_in("wattplan:type=ResNet-18 (batch size 64);steps=100")
    assert opted_in("wattplan: steps = 5 ; type = A3C")
    for comment in (" wattplan:type=A;steps=1", "WATTPLAN:type=A;steps=1", "wattplan:type=A;steps=0",
                    "wattplan:type=A;steps=1;steps=2", "wattplan:type=A\x1b;steps=1", "wattplan:type=A;steps=\uff15",
                    "wattplan:type=A;steps=1;user=root", "wattplan:type=A", None, 7):  # fmt: skip
        assert not opted_in(comment), comment


def test_the_oracle_flags_calls_on_jobs_that_did_not_opt_in_or_admin_holds() -> None:
    jobs = [
        {"job_id": 1, "comment": "wattplan:type=A;steps=5", "state_reason": "JobHeldUser"},
        {"job_id": 2, "comment": "wattplan:type=A;steps=5", "state_reason": "JobHeldAdmin"},
        {"job_id": 3, "comment": "not managed", "state_reason": "None"},
    ]
    queue = json.dumps({"jobs": jobs})
    assert unsafe_actions(queue, [("scontrol", "release", "1"), ("scontrol", "hold", "2")]) is None
    assert "job 2, held by an administrator" in str(unsafe_actions(queue, [("scontrol", "release", "1,2")]))
    update = ("scontrol", "update", "JobId=3", "Gres=gpu:2")
    assert "job '3', which did not opt in" in str(unsafe_actions(queue, [update]))
    assert "job '9'" in str(unsafe_actions(queue, [("scancel", "9")]))


def test_the_oracle_classes_of_issue_41(tmp_path: Path) -> None:
    import subprocess

    from tests.hostile.oracle import _children, _classify, _leftover_children, _Run

    case = draw_case(NEW_SURFACES[0], 0, tmp_path)
    inputs, files = {}, {str(p.relative_to(case.folder)) for p in case.folder.rglob("*") if p.is_file()}
    scratch = case.folder / "tmp"
    scratch.mkdir()

    def cls(run: _Run) -> str:
        return _classify(case, run, inputs, {}, {}, files, scratch).cls

    assert cls(_Run(0, "wrote x", None)) == "ok"
    assert cls(_Run(0, "job \x1b[2J wrote", None)) == "raw-control"
    assert cls(_Run(0, "ok", None, unsafe="released 2")) == "unsafe-action"
    (scratch / "wattplan-x").mkdir()
    assert cls(_Run(2, f"bad input: {case.names[0]}", None)) == "written-on-failure"
    (scratch / "wattplan-x").rmdir()
    (case.outputs / "PWNED").write_text("")
    assert cls(_Run(0, "ok", None)) == "injected"
    (case.outputs / "PWNED").unlink()
    case.must_refuse = True
    assert cls(_Run(0, "ok", None)) == "accepted"
    (case.outputs / "run.sh").write_text("if then\n")
    assert cls(_Run(0, "ok", None)) == "bad-script"
    before = _children()
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in _leftover_children(before)
    finally:
        child.kill()
        child.wait()
