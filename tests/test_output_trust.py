"""Outputs never destroy inputs, unwritable ones are refused before any work, failures keep old outputs (issue 41).

``simulate --profiles out/comparison.json --out out`` replaced the profile library with the comparison table and
exited 0; ``frontier --out FILE`` replayed, then failed with ``[Errno 20] Not a directory`` (exit 1, no option
named); ``plan --out NAME`` with a name too long for the file system exited 1 naming nothing; a failed
``plan JOBS --cluster`` had already replaced the previous ``JOBS.instance.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files.paths import (
    OUTPUT_IS_DIRECTORY,
    OUTPUT_IS_INPUT,
    UNWRITABLE_OUTPUT,
    refuse_overwriting_inputs,
)

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "instances" / "profiles" / "gavel_zeus_v100_p100.json"
DEFAULT = ROOT / "instances" / "default.json"
R50 = "ResNet-50 (batch size 64)"
LONG = "x" * 300  # longer than any file system's name limit (255 bytes)
runner = CliRunner()


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "1000"})


def text(result) -> str:
    return " ".join(result.output.split())


def assert_bad_input(result, code: str, option: str) -> None:
    """Exit 2 with problem ``code`` on ``option``, no traceback."""
    assert result.exit_code == 2, result.output
    assert code in text(result) and option in text(result)
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """Two short jobs: a replay of a few rounds."""
    return write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 1), (R50, 6000, 0, 2)])


# --- the helper ---------------------------------------------------------------------------------------------


def codes(info: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in info.value.problems]


def test_an_output_folder_may_hold_no_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    deep = out / "wattplan" / "jobs.csv"
    deep.parent.mkdir(parents=True)
    deep.write_text("x\n")
    for source in (out / "comparison.json", out / "any-name.csv", deep):
        with pytest.raises(InputError) as info:
            refuse_overwriting_inputs({"--out": out}, [source], folders={"--out"})
        assert codes(info) == [(OUTPUT_IS_INPUT, "--out")], source
    refuse_overwriting_inputs({"--out": out}, [tmp_path / "beside.csv", None], folders={"--out"})
    refuse_overwriting_inputs({"--out": out / "plan.json"}, [out / "instance.json"])  # a file output: only itself


def test_an_output_that_cannot_be_written_is_named_before_any_work(tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    cases = [
        ({"--out": a_file}, {"--out"}, UNWRITABLE_OUTPUT),  # a folder wanted, a file there
        ({"--out": a_file / "sub"}, {"--out"}, UNWRITABLE_OUTPUT),  # under a file
        ({"--out": a_file / "p.json"}, set(), UNWRITABLE_OUTPUT),
        ({"--out": tmp_path}, set(), OUTPUT_IS_DIRECTORY),  # a file wanted, a folder there
        ({"--out": tmp_path / LONG}, {"--out"}, UNWRITABLE_OUTPUT),
        ({"--out": tmp_path / f"{LONG}.json"}, set(), UNWRITABLE_OUTPUT),
        ({"--out": tmp_path / "a\0b"}, set(), UNWRITABLE_OUTPUT),
    ]
    for outputs, folders, code in cases:
        with pytest.raises(InputError) as info:
            refuse_overwriting_inputs(outputs, [], folders=folders)
        assert codes(info) == [(code, "--out")], outputs
    refuse_overwriting_inputs({"--out": tmp_path}, [], folders={"--out"})  # an existing folder is fine
    refuse_overwriting_inputs({"--out": tmp_path / "new" / "deeper"}, [], folders={"--out"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # nothing was created


# --- the commands -------------------------------------------------------------------------------------------


def test_simulate_refuses_inputs_inside_its_out_folder(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    profiles = out / "comparison.json"  # the name simulate writes its comparison under
    shutil.copy(LIBRARY, profiles)
    args = ("simulate", trace, "--cluster", "v100:8", "-p", "fifo-max", "-q", "--no-plots")
    result = run(*args, "--profiles", profiles, "--out", out)
    assert_bad_input(result, OUTPUT_IS_INPUT, "--out")
    assert profiles.read_bytes() == LIBRARY.read_bytes() and sorted(out.iterdir()) == [profiles]
    inside = out / "t.trace"  # any input in the folder, whatever its name
    shutil.copy(trace, inside)
    assert_bad_input(run("simulate", inside, *args[2:], "--out", out), OUTPUT_IS_INPUT, "--out")
    assert run(*args, "--profiles", LIBRARY, "--out", out / "elsewhere").exit_code == 0


def test_frontier_refuses_an_input_inside_out_and_a_file_as_out(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    inside = out / "frontier.csv"
    shutil.copy(trace, inside)
    sweep = ("--cluster", "v100:8", "--deltas", "0.1", "--max-jct-increase", "0", "--baselines", "fifo-max")
    sweep += ("--max-rounds", "5", "--no-plots", "--workers", "1")
    assert_bad_input(run("frontier", inside, *sweep, "--out", out), OUTPUT_IS_INPUT, "--out")
    assert inside.read_bytes() == trace.read_bytes()
    a_file = tmp_path / "taken"
    a_file.write_text("keep\n")
    result = run("frontier", trace, *sweep, "--out", a_file)
    assert_bad_input(result, UNWRITABLE_OUTPUT, "--out")  # exit 1, '[Errno 20] Not a directory', after replaying
    assert a_file.read_text() == "keep\n"


def test_bench_refuses_an_instance_inside_out_but_not_its_own_earlier_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    inst = out / "round.json"
    shutil.copy(DEFAULT, inst)
    result = run("bench", inst, "--solvers", "greedy", "--time-limit", "5", "-q", "--out", out)
    assert_bad_input(result, OUTPUT_IS_INPUT, "--out")
    assert sorted(out.iterdir()) == [inst]
    sets = tmp_path / "set"
    sets.mkdir()
    shutil.copy(DEFAULT, sets / "a.json")
    for _ in range(2):  # the second run finds the first's files under set/results: outputs, not inputs
        result = run("bench", sets, "--solvers", "greedy", "--time-limit", "5", "-q", "--out", sets / "results")
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", ["plan", "simulate", "instance sweep"])
def test_an_unwritable_out_exits_2_naming_it(tmp_path: Path, trace: Path, command: str) -> None:
    """A name too long for the file system: exit 1 with ``[Errno 36] File name too long`` and no option named."""
    if command == "plan":
        args: tuple[object, ...] = ("plan", DEFAULT, "--solver", "greedy", "-q", "--out", tmp_path / f"{LONG}.json")
    elif command == "simulate":
        args = ("simulate", trace, "--cluster", "v100:8", "-p", "fifo-max", "-q", "--out", tmp_path / LONG)
    else:
        args = ("instance", "sweep", "--sizes", "50", "--budgets", "0.3", "--out", tmp_path / LONG)
    assert_bad_input(run(*args), UNWRITABLE_OUTPUT, "--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trace"]


def test_instance_sweep_into_a_file_exits_2_naming_it(tmp_path: Path) -> None:
    """``instance sweep --out FILE`` ended in ``[Errno 17] File exists`` (exit 1, no option named)."""
    taken = tmp_path / "taken"
    taken.write_text("keep\n")
    result = run("instance", "sweep", "--sizes", "50", "--budgets", "0.3", "--out", taken)
    assert_bad_input(result, UNWRITABLE_OUTPUT, "--out")
    assert taken.read_text() == "keep\n"


def _job_list(folder: Path, steps: int) -> tuple[Path, Path]:
    jobs = folder / "jobs.csv"
    jobs.write_text(f"id,type,gpus,remaining_steps\na,{R50},2,{steps}\n")
    cluster = folder / "cluster.yaml"
    cluster.write_text("gpu_types:\n- {name: v100, nodes: [n1]}\n")
    return jobs, cluster


def test_a_failed_plan_of_a_job_list_keeps_the_previous_instance_and_plan(tmp_path: Path) -> None:
    jobs, cluster = _job_list(tmp_path, 100_000)
    plan = tmp_path / "plan.json"
    ok = run("plan", jobs, "--cluster", cluster, "--solver", "greedy", "-q", "--out", plan)
    assert ok.exit_code == 0, ok.output
    made = tmp_path / "plan.instance.json"
    before = made.read_bytes(), plan.read_bytes()
    _job_list(tmp_path, 999)  # the next round's counters
    garbage = tmp_path / "answer.sol"
    garbage.write_text("not a solution\n")
    failed = run("plan", jobs, "--cluster", cluster, "--from-solution", garbage, "-q", "--out", plan)
    assert failed.exit_code == 1 and "solution rejected" in text(failed), failed.output
    assert (made.read_bytes(), plan.read_bytes()) == before  # the plan and its instance still match
    assert json.loads(made.read_text())["jobs"][0]["remaining_steps"] == 100_000
    again = run("plan", jobs, "--cluster", cluster, "--solver", "greedy", "-q", "--out", plan)
    assert again.exit_code == 0 and json.loads(made.read_text())["jobs"][0]["remaining_steps"] == 999
