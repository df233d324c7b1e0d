"""An output path that names an input is refused (exit 2) before anything is read or written.

``profiles ingest log.csv -o log.csv`` once replaced the raw log with the library made from it (exit 0);
``profiles check ... --json LIB`` and ``diff a b --json a`` did the same to their inputs.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.profiles import write_inputs
from tests.launch_helpers import hand_plan, launch_instance
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import write_plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files.paths import OUTPUT_IS_INPUT, SAME_OUTPUT, refuse_overwriting_inputs

ROOT = Path(__file__).resolve().parents[1]
SMI = ROOT / "tests" / "data" / "nvidia_smi"
DIFF = ROOT / "tests" / "golden" / "diff"
runner = CliRunner()
WIDE = {"COLUMNS": "1000"}


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def codes(info: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in info.value.problems]


def assert_refused(result, option: str) -> None:
    """Exit 2 with an ``output-is-input`` problem on ``option``, no traceback."""
    assert result.exit_code == 2, result.output
    assert OUTPUT_IS_INPUT in result.output and option in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# --- the helper ---------------------------------------------------------------------------------------------


def test_equal_paths_symlinks_and_hard_links_are_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "log.csv"
    data.write_text("x\n")
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    hard = tmp_path / "hard.csv"
    os.link(data, hard)
    monkeypatch.chdir(tmp_path)
    for out in (data, Path("log.csv"), Path("sub/../log.csv"), link, hard):
        with pytest.raises(InputError) as info:
            refuse_overwriting_inputs({"--out": out, "--json": None}, [data])
        assert codes(info) == [(OUTPUT_IS_INPUT, "--out")], out
    with pytest.raises(InputError) as info:  # the input given through the link, the output by its own name
        refuse_overwriting_inputs({"-o": data}, [link])
    assert codes(info) == [(OUTPUT_IS_INPUT, "-o")]
    refuse_overwriting_inputs({"--out": tmp_path / "new.json", "--json": None}, [data, None])  # no problem


def test_two_outputs_on_one_path_and_inputs_inside_a_replaced_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        refuse_overwriting_inputs({"--json": tmp_path / "r", "--csv": tmp_path / "r"}, [])
    assert codes(info) == [(SAME_OUTPUT, "--csv")]
    held = tmp_path / "out" / "plan.json"
    refuse_overwriting_inputs({"--out": tmp_path / "out"}, [held])  # only a replaced folder holds its inputs
    with pytest.raises(InputError) as info:
        refuse_overwriting_inputs({"--out": tmp_path / "out"}, [held], replaced={"--out"})
    assert codes(info) == [(OUTPUT_IS_INPUT, "--out")]
    refuse_overwriting_inputs({"--out": tmp_path / "out"}, [tmp_path / "outside.json"], replaced={"--out"})


# --- the commands -------------------------------------------------------------------------------------------


def test_ingest_onto_its_own_log_is_refused_and_the_log_kept(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    shutil.copy(SMI / "v100_units.csv", log)
    before = log.read_bytes()
    side = ("--job-side", SMI / "v100_units.jobs.json", "--library", "none")
    assert_refused(run("profiles", "ingest", log, *side, "-o", log), "--out")
    assert log.read_bytes() == before
    link = tmp_path / "link.json"
    link.symlink_to(log)
    assert_refused(run("profiles", "ingest", log, *side, "-o", link), "--out")
    assert log.read_bytes() == before and link.is_symlink()
    job_side = tmp_path / "side.json"
    shutil.copy(SMI / "v100_units.jobs.json", job_side)
    assert_refused(run("profiles", "ingest", log, "--job-side", job_side, "-o", job_side), "--out")
    assert job_side.read_bytes() == (SMI / "v100_units.jobs.json").read_bytes()


def test_check_json_or_csv_onto_an_input_is_refused(tmp_path: Path) -> None:
    lib, meas = write_inputs(tmp_path)
    lib_before, meas_before = lib.read_bytes(), meas.read_bytes()
    assert_refused(run("profiles", "check", lib, meas, "--json", lib), "--json")
    assert_refused(run("profiles", "check", lib, meas, "--csv", meas), "--csv")
    assert lib.read_bytes() == lib_before and meas.read_bytes() == meas_before


def test_diff_json_onto_a_plan_is_refused(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    shutil.copy(DIFF / "old_plan.json", old)
    shutil.copy(DIFF / "new_plan.json", new)
    for target in (old, new):
        assert_refused(run("diff", old, new, "--json", target), "--json")
    assert old.read_bytes() == (DIFF / "old_plan.json").read_bytes()
    assert new.read_bytes() == (DIFF / "new_plan.json").read_bytes()


def test_plan_truth_and_fit_onto_their_input_are_refused(tmp_path: Path) -> None:
    inst = tmp_path / "instance.json"
    shutil.copy(ROOT / "instances" / "default.json", inst)
    lib = tmp_path / "lib.json"
    shutil.copy(ROOT / "instances" / "profiles" / "gavel_zeus_v100_p100.json", lib)
    inst_before, lib_before = inst.read_bytes(), lib.read_bytes()
    assert_refused(run("plan", inst, "--solver", "greedy", "--out", inst), "--out")
    assert_refused(run("profiles", "truth", lib, "--out", lib), "--out")
    assert_refused(run("profiles", "fit", lib, "--out", lib), "--out")
    assert inst.read_bytes() == inst_before and lib.read_bytes() == lib_before


def test_relaunch_into_the_folder_holding_the_plan_is_refused(tmp_path: Path) -> None:
    inst = launch_instance()
    plan, inst_path = tmp_path / "plan.json", tmp_path / "instance.json"
    write_plan(hand_plan(inst), plan)
    inst_path.write_text(json.dumps(instance_to_doc(inst)))
    out = tmp_path / "out"
    assert run("launch", plan, "--instance", inst_path, "--to", "shell", "--out", out).exit_code == 0
    kept = out / "plan.json"
    shutil.copy(plan, kept)  # the launch folder is ours, so a relaunch would replace it whole
    assert_refused(run("launch", kept, "--instance", inst_path, "--to", "shell", "--out", out), "--out")
    assert kept.read_bytes() == plan.read_bytes()


def test_trace_and_set_commands_refuse_an_out_that_is_their_input(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    shutil.copy(ROOT / "instances" / "sources" / "gavel" / "traces" / "6c71a0.trace", trace)
    inst = tmp_path / "instance.json"
    shutil.copy(ROOT / "instances" / "default.json", inst)
    trace_before, inst_before = trace.read_bytes(), inst.read_bytes()
    cluster = ("--cluster", "v100:8")
    assert_refused(run("instance", "from-trace", trace, *cluster, "--at", 0, "--out", trace), "--out")
    assert_refused(run("simulate", trace, *cluster, "-p", "fifo-max", "-q", "--out", trace), "--out")
    assert_refused(run("frontier", trace, *cluster, "--out", trace), "--out")
    assert_refused(run("bench", inst, "--solvers", "greedy", "-q", "--out", inst), "--out")
    assert trace.read_bytes() == trace_before and inst.read_bytes() == inst_before
