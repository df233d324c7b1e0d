"""Hostile input: repeated keys, binary files, oversized arrays, live launch folders, unwritable outputs.

Each failure must be a bad-input error (exit 2) that names the file or field, never a traceback.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import app
from tests.launch_helpers import hand_plan, launch_instance
from wattplan.planner.contracts import jsonio
from wattplan.planner.contracts.instance_checks import instance_problems
from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
from wattplan.planner.contracts.jsonio import read_json, write_json_atomic, write_text_atomic
from wattplan.planner.contracts.plan import write_plan
from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, InputError
from wattplan.planner.contracts.schema_check import INSTANCE_SCHEMA, schema_problems
from wattplan.planner.launch.output import is_running, running_jobs
from wattplan.planner.rounds.traces import read_gavel_trace, read_philly_csv

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INSTANCE = ROOT / "instances" / "default.json"
runner = CliRunner()
WIDE = {"COLUMNS": "1000"}  # no wrapping of paths in the problem tables


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def problems_of(info: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str]]:
    """``(code, path)`` of every problem an :class:`InputError` carries."""
    return [(p.code, p.path) for p in info.value.problems]


def write_doc(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


# 1. Repeated JSON keys


def test_duplicate_key_is_an_input_error_with_its_path(tmp_path: Path) -> None:
    f = tmp_path / "dup.json"
    f.write_text('{"round": {"index": 0, "duration_s": 100, "duration_s": 5}, "x": 1}')
    with pytest.raises(InputError) as info:
        read_json(f)
    assert info.value.source == str(f)
    assert problems_of(info) == [("duplicate-key", "round.duration_s")]
    assert "'duration_s' is given 2 times" in info.value.problems[0].message


def test_every_duplicate_key_is_reported_in_nested_objects_and_arrays(tmp_path: Path) -> None:
    f = tmp_path / "dup.json"
    f.write_text(
        '{"a": 1, "a": 2, "a": 3,'
        ' "jobs": [{"id": "j0"}, {"id": "j1"}, {"id": "j2"}, {"id": "x", "gpus": [1], "id": "y"}],'
        ' "deep": [[{"k": {"z": 1, "z": 2}}]]}'
    )
    with pytest.raises(InputError) as info:
        read_json(f)
    assert sorted(problems_of(info)) == [
        ("duplicate-key", "a"),
        ("duplicate-key", "deep[0][0].k.z"),
        ("duplicate-key", "jobs[3].id"),
    ]
    assert "3 times" in next(p.message for p in info.value.problems if p.path == "a")


def test_same_key_in_different_objects_is_fine(tmp_path: Path) -> None:
    f = write_doc(tmp_path / "ok.json", {"a": {"id": 1}, "b": [{"id": 2}, {"id": 3}]})
    assert read_json(f) == {"a": {"id": 1}, "b": [{"id": 2}, {"id": 3}]}


def test_duplicate_key_in_an_instance_exits_2(tmp_path: Path, tiny_doc: dict) -> None:
    text = json.dumps(tiny_doc).replace('"duration_s": 100', '"duration_s": 100, "duration_s": 1', 1)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    result = run("instance", "check", bad)
    assert result.exit_code == 2, result.output
    assert "round.duration_s" in result.output and "duplicate-key" in result.output
    assert "Traceback" not in result.output


# 2. Files that are not UTF-8 text


def test_invalid_utf8_instance_names_the_file_and_byte_offset(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"schema": "caf\xe9"}')
    with pytest.raises(InputError) as info:
        read_json(bad)
    assert info.value.source == str(bad)
    assert problems_of(info) == [("not-utf8", "line 1")]
    assert "byte offset 15" in info.value.problems[0].message
    result = run("instance", "check", bad)
    assert result.exit_code == 2
    assert str(bad) in result.output and "not-utf8" in result.output and "byte offset 15" in result.output


def test_invalid_utf8_plan_exits_2(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(b'{\n"schema":\n "\xff\xfe"}')
    result = run("validate", DEFAULT_INSTANCE, plan)
    assert result.exit_code == 2, result.output
    assert str(plan) in result.output and "not-utf8" in result.output and "byte offset 14" in result.output


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"a": 1}).encode())
    assert read_json(f) == {"a": 1}


BINARY = bytes(range(256)) * 4  # the first byte that is not UTF-8 is 0x80, at offset 128


def test_binary_gavel_trace_is_not_utf8(tmp_path: Path) -> None:
    trace = tmp_path / "binary.trace"
    trace.write_bytes(BINARY)
    with pytest.raises(InputError) as info:
        read_gavel_trace(trace)
    assert info.value.source == str(trace)
    assert [p.code for p in info.value.problems] == ["not-utf8"]
    assert "byte offset 128" in info.value.problems[0].message
    result = run("instance", "from-trace", trace, "--cluster", "v100:8", "--at", "0", "--out", tmp_path / "i.json")
    assert result.exit_code == 2, result.output
    assert "not-utf8" in result.output and str(trace) in result.output
    assert not (tmp_path / "i.json").exists()


def test_binary_philly_csv_is_not_utf8(tmp_path: Path) -> None:
    trace = tmp_path / "binary.csv"
    trace.write_bytes(b"timestamp,duration,num_gpus,gpu_time,cluster\n" + BINARY)
    with pytest.raises(InputError) as info:
        read_philly_csv(trace, ["A"], lambda t, n: 1.0)
    assert [p.code for p in info.value.problems] == ["not-utf8"]
    assert "byte offset 173" in info.value.problems[0].message  # 45 header bytes + 128
    assert info.value.problems[0].path == "line 3"  # the header's newline and byte 10 come before it


def test_nul_bytes_in_a_philly_csv_are_a_bad_row(tmp_path: Path) -> None:
    trace = tmp_path / "nul.csv"
    trace.write_bytes(b"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,6\x00,1,6,c\n")
    with pytest.raises(InputError) as info:
        read_philly_csv(trace, ["A"], lambda t, n: 1.0)
    assert problems_of(info) == [("bad-trace-row", "line 2")]


# 3. Oversized input
#
# "Fast" and "linear" are measured in this process's CPU seconds (time.process_time), not on the wall clock: other
# processes on a loaded machine take wall-clock time from the test but not CPU time (a 10,000-job parse took 13 s on
# the wall clock and 3.9 s of CPU at a load of 8 on 2 cores). The bounds stay far below what a
# quadratic check would need.


def test_100k_gpu_counts_are_refused_fast(tmp_path: Path, tiny_doc: dict) -> None:
    tiny_doc["jobs"][0]["gpus"] = list(range(1, 100_001))
    bad = write_doc(tmp_path / "big.json", tiny_doc)
    start = time.process_time()
    result = run("instance", "check", bad)
    elapsed = time.process_time() - start
    assert result.exit_code == 2, result.output
    assert elapsed < 5, f"{elapsed:.1f} CPU s"
    assert "jobs[0].gpus" in result.output and "too-many-items" in result.output
    assert "100000 entries; at most 64" in result.output


def test_too_many_settings_are_refused(tiny_doc: dict) -> None:
    tiny_doc["gpu_types"][0]["settings"] = list(range(100, 400))
    with pytest.raises(InputError) as info:
        parse_instance(tiny_doc)
    assert problems_of(info) == [("too-many-items", "gpu_types[0].settings")]


def test_size_limits_are_reported_together(tiny_doc: dict) -> None:
    tiny_doc["jobs"][1]["gpus"] = [1] * 65
    tiny_doc["jobs"][2]["gpus"] = [1] * 70
    tiny_doc["jobs"][1]["current"]["placement"][0]["gpu_indices"] = [0] * 100
    problems = schema_problems(tiny_doc, INSTANCE_SCHEMA, "schema")
    assert sorted((p.code, p.path) for p in problems) == [
        ("too-many-items", "jobs[1].current.placement[0].gpu_indices"),
        ("too-many-items", "jobs[1].gpus"),
        ("too-many-items", "jobs[2].gpus"),
    ]


def test_huge_node_counts_are_refused_by_the_schema(tiny_doc: dict) -> None:
    tiny_doc["gpu_types"][0]["nodes"] = 10**12
    with pytest.raises(InputError) as info:
        parse_instance(tiny_doc)
    assert problems_of(info) == [("schema", "gpu_types[0].nodes")]


def test_file_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_doc(tmp_path / "big.json", {"pad": "x" * 200})
    monkeypatch.setattr(jsonio, "MAX_INPUT_BYTES", 100)
    with pytest.raises(InputError) as info:
        read_json(f)
    assert info.value.source == str(f)
    assert [p.code for p in info.value.problems] == ["too-large"]
    trace = tmp_path / "big.trace"
    trace.write_text("A\tcmd\t-n\t1\t100\t0\t1\n" * 10)
    with pytest.raises(InputError) as info:
        read_gavel_trace(trace)
    assert [p.code for p in info.value.problems] == ["too-large"]


def test_deep_nesting_is_an_input_error(tmp_path: Path) -> None:
    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError) as info:
        read_json(f)
    assert [p.code for p in info.value.problems] == ["too-deep"]


def test_nesting_the_parser_accepts_is_checked_without_recursion(tmp_path: Path) -> None:
    f = tmp_path / "deepish.json"
    f.write_text('{"a": ' + "[" * 600 + "NaN" + "]" * 600 + "}")
    doc = read_json(f)
    problems = jsonio.non_finite_numbers(doc)
    assert [p.code for p in problems] == ["not-finite"] and problems[0].path.startswith("a[0][0]")


def test_giant_integer_is_bad_json(tmp_path: Path) -> None:
    f = tmp_path / "int.json"
    f.write_text('{"a": ' + "9" * 5000 + "}")
    with pytest.raises(InputError) as info:
        read_json(f)
    assert [p.code for p in info.value.problems] == ["bad-json"]
    assert "4300 digits" in info.value.problems[0].message and "set_int_max_str_digits" not in str(info.value)


def _many_jobs_doc(tiny_doc: dict, n: int) -> dict:
    """``n`` running jobs, each sharing with the next and placed on the last node."""
    doc = copy.deepcopy(tiny_doc)
    doc["gpu_types"][0]["nodes"] = 100_000
    base = {k: v for k, v in doc["jobs"][2].items() if k != "current"}
    doc["jobs"] = [
        {
            **base,
            "id": f"j{i}",
            "current": {
                "gpu_type": "v100",
                "gpus": 1,
                "setting": 150,
                "shares_with": f"j{(i + 1) % n}",
                "placement": [{"node": "v100-99999", "gpu_indices": [i % 4]}],
            },
        }
        for i in range(n)
    ]
    return doc


def test_semantic_checks_are_linear(tiny_doc: dict) -> None:
    doc = _many_jobs_doc(tiny_doc, 10_000)
    start = time.process_time()
    assert instance_problems(doc) == []
    assert time.process_time() - start < 2


@pytest.mark.slow
def test_ten_thousand_jobs_check_in_a_few_seconds(tiny_doc: dict) -> None:
    doc = _many_jobs_doc(tiny_doc, 10_000)
    start = time.process_time()
    inst = parse_instance(doc)
    assert len(inst.jobs) == 10_000
    assert time.process_time() - start < 15  # 2-4 CPU s


def test_node_names_are_checked_without_listing_the_nodes(tiny_doc: dict) -> None:
    placement = tiny_doc["jobs"][1]["current"]["placement"]
    for node in ("v100-2", "v100-01", "v100--1", "v100-1 ", "v100-" + "9" * 5000, "p100-1", "v100-١"):
        placement[0]["node"] = node
        assert [(p.code, p.path) for p in instance_problems(tiny_doc)] == [
            ("bad-placement", "jobs[1].current.placement[0].node")
        ], node
    placement[0]["node"] = "v100-0"
    assert instance_problems(tiny_doc) == []


def test_reported_problems_are_capped(tiny_doc: dict) -> None:
    profile = tiny_doc["profiles"][0]
    tiny_doc["profiles"] = [dict(profile, gpu_type="k80", setting=i) for i in range(5 * MAX_REPORTED_PROBLEMS)]
    problems = instance_problems(tiny_doc)
    assert len(problems) == MAX_REPORTED_PROBLEMS + 1
    assert problems[-1].code == "more-problems"
    tiny_doc["round"]["objective"] = "x" * 100_000  # jsonschema quotes the value in its message
    (problem,) = schema_problems(tiny_doc, INSTANCE_SCHEMA, "schema")
    assert len(problem.message) <= 300


# 4. Launching over a folder whose jobs still run


@pytest.fixture
def live_pid() -> Iterator[int]:
    """The pid of a ``sleep`` that runs for the test and is stopped after it."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def launch_files(tmp_path: Path) -> tuple[Path, Path]:
    inst = launch_instance()
    plan_path, inst_path = tmp_path / "plan.json", tmp_path / "instance.json"
    write_plan(hand_plan(inst), plan_path)
    write_doc(inst_path, instance_to_doc(inst))
    return plan_path, inst_path


def _launch_shell(files: tuple[Path, Path], out: Path):
    return run("launch", files[0], "--instance", files[1], "--to", "shell", "--out", out)


def test_relaunch_is_refused_while_a_job_of_the_folder_runs(
    tmp_path: Path, launch_files: tuple[Path, Path], live_pid: int
) -> None:
    out = tmp_path / "out"
    assert _launch_shell(launch_files, out).exit_code == 0
    run_dir = out / "run" / "v100-0"
    run_dir.mkdir(parents=True)
    (run_dir / "train-4.pid").write_text(f"{live_pid}\n")
    (run_dir / "train-4.log").write_text("epoch 1\n")
    (run_dir / "gone.pid").write_text("999999999\n")  # not a process: no reason to refuse
    result = _launch_shell(launch_files, out)
    assert result.exit_code == 2, result.output
    assert f"bad input: {out} (1 problem(s))" in result.output and "run/v100-0/train-4.pid" in result.output
    assert f"pid {live_pid}" in result.output and "jobs-running" in result.output
    assert "gone" not in result.output
    assert (run_dir / "train-4.pid").read_text() == f"{live_pid}\n" and (run_dir / "train-4.log").exists()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary folder left


def test_relaunch_replaces_the_folder_when_its_jobs_have_ended(tmp_path: Path, launch_files: tuple[Path, Path]) -> None:
    out = tmp_path / "out"
    assert _launch_shell(launch_files, out).exit_code == 0
    proc = subprocess.Popen(["true"])
    proc.wait()  # a pid that ran and is gone
    run_dir = out / "run" / "v100-0"
    run_dir.mkdir(parents=True)
    (run_dir / "train-4.pid").write_text(f"{proc.pid}\n")
    result = _launch_shell(launch_files, out)
    assert result.exit_code == 0, result.output
    assert (run_dir / "train-4.pid").exists()  # the scripts' files are not the launch's to delete (issue 41)


def test_pid_files_without_a_usable_pid_are_ignored(tmp_path: Path) -> None:
    run_dir = tmp_path / "run" / "h"
    run_dir.mkdir(parents=True)
    for name, text in [("zero", "0"), ("all", "-1"), ("words", "not a pid"), ("huge", "9" * 40), ("empty", "")]:
        (run_dir / f"{name}.pid").write_text(text)
    os.mkfifo(run_dir / "pipe.pid")  # reading it would block
    assert running_jobs(tmp_path) == []


def test_a_process_of_another_user_counts_as_running(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("wattplan.planner.launch.output.os.kill", denied)
    assert is_running(1)


def test_live_pid_is_running(live_pid: int) -> None:
    assert is_running(live_pid)


# 5. Outputs that cannot be written


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_plan_out_naming_a_folder_exits_2_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "existing"
    folder.mkdir()
    result = run("plan", DEFAULT_INSTANCE, "--solver", "greedy", "--out", folder, "-q")
    assert result.exit_code == 2, result.output
    assert str(folder) in result.output and "output-is-directory" in result.output
    assert ".tmp" not in result.output
    assert list(folder.iterdir()) == [] and _leftovers(tmp_path) == []


def test_plan_out_under_a_regular_file_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "somefile").write_text("x")
    target = tmp_path / "somefile" / "plan.json"
    result = run("plan", DEFAULT_INSTANCE, "--solver", "greedy", "--out", target, "-q")
    assert result.exit_code == 2, result.output
    assert str(target) in result.output and "unwritable-output" in result.output
    assert "is not a folder" in result.output and ".tmp" not in result.output
    assert _leftovers(tmp_path) == []


def test_write_text_atomic_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        write_json_atomic(tmp_path, {"a": 1})
    assert info.value.source == str(tmp_path) and problems_of(info) == [("output-is-directory", "(file)")]
    (tmp_path / "f").write_text("x")
    target = tmp_path / "f" / "deeper" / "out.txt"
    with pytest.raises(InputError) as info:
        write_text_atomic(target, "text")
    assert info.value.source == str(target)
    (problem,) = info.value.problems
    assert problem.code == "unwritable-output" and str(target) in problem.message and ".tmp" not in problem.message
    assert _leftovers(tmp_path) == []


def test_a_named_pipe_is_written_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    write_json_atomic(fifo, {"a": 1})
    reader.join(timeout=10)
    assert json.loads(received[0]) == {"a": 1}
    assert stat.S_ISFIFO(fifo.stat().st_mode) and _leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_write_into_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(InputError) as info:
            write_text_atomic(folder / "out.txt", "text")
        assert info.value.problems[0].code == "unwritable-output"
        assert "Permission denied" in info.value.problems[0].message
    finally:
        folder.chmod(0o755)


# 5. Overflow and digits that are not ASCII


@pytest.fixture
def one_job_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "one.trace"
    trace.write_text("A3C\tcmd\tsteps\t0\t4000\t0\t1\n")
    return trace


@pytest.mark.parametrize(
    "start", ["0001-01-01T00:00+05:00", "0001-01-01T00:00", "9999-12-31T23:00Z", "1969-12-31T23:00Z"]
)
def test_signal_start_outside_the_years_exits_2_naming_the_option(
    tmp_path: Path, one_job_trace: Path, start: str
) -> None:
    # year 1 with a time zone overflowed taking it to UTC: internal error, exit 1
    result = run(
        "simulate", one_job_trace, "--cluster", "v100:8", "-p", "fifo-max", "--carbon", "CISO_2022.csv",
        "--signal-start", start, "--out", tmp_path / "out", "-q",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--signal-start" in result.output and "1970-2200" in result.output
    assert "internal error" not in result.output and not (tmp_path / "out").exists()


def test_superscript_gpu_count_in_cluster_exits_2(tmp_path: Path, one_job_trace: Path) -> None:
    # '\u00b2'.isdigit() is True but int() refuses it: internal error, exit 1
    out = tmp_path / "out"
    result = run("simulate", one_job_trace, "--cluster", "v100:\u00b2", "-p", "fifo-max", "--out", out, "-q")
    assert result.exit_code == 2, result.output
    assert "bad-cluster" in result.output and "internal error" not in result.output


def test_superscript_gpu_index_in_an_nvidia_smi_log_is_a_bad_value(tmp_path: Path) -> None:
    from wattplan.planner.profiling.nvidia_smi import read_nvidia_smi_log

    log_file = tmp_path / "smi.csv"
    log_file.write_text(
        "index, timestamp, power.draw [W]\n"
        "0, 2026/11/24 13:00:00, 100 W\n\u00b2, 2026/11/24 13:00:01, 100 W\n0, 2026/11/24 13:00:02, 100 W\n"
    )
    log = read_nvidia_smi_log(log_file)
    assert [(p.code, p.path) for p in log.problems] == [("bad-value", "line 3, index")]


def test_absurd_carbon_value_exits_2_before_the_replay(tmp_path: Path, one_job_trace: Path) -> None:
    # 1e308 gCO2/kWh overflowed the carbon sums once the replay had finished: internal error, nothing written
    signal = tmp_path / "carbon.csv"
    signal.write_text("timestamp,avg_CI\n2022-01-01T00:00Z,100\n2022-01-01T01:00Z,1e308\n2022-01-01T02:00Z,100\n")
    out = tmp_path / "out"
    result = run("simulate", one_job_trace, "--cluster", "v100:8", "-p", "fifo-max", "--carbon", signal, "--out", out)
    assert result.exit_code == 2, result.output
    assert "carbon.csv:row 3 (avg_CI)" in result.output and "out-of-range" in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("rows", "where", "code"),
    [
        # a naive hour beside zoned ones was read as UTC (a local time shifted by its offset), exit 0
        ("2022-01-01T00:00Z,100\n2022-01-01 01:00,100\n2022-01-01T02:00Z,100\n", "row 3 (avg_CI)", ""),
        ("2022-01-01T00:00Z,100\n2022-01-01T01:00Z,5 kW\n2022-01-01T02:00Z,100\n", "row 3 (avg_CI)", "bad-value"),
        ('2022-01-01T00:00Z,100\n2022-01-01T01:00Z,"100\n2022-01-01T02:00Z,100\n', "row 3", "bad-row"),
        ("2022-01-01T00:00Z,100\n2022-01-01T01:00Z,100,7\n2022-01-01T02:00Z,100\n", "row 3", "bad-row"),
    ],
    ids=["mixed-zones", "unit-suffix", "open-quote", "long-row"],
)
def test_malformed_signal_file_exits_2_naming_its_row(
    tmp_path: Path, one_job_trace: Path, rows: str, where: str, code: str
) -> None:
    signal = tmp_path / "carbon.csv"
    signal.write_text("timestamp,avg_CI\n" + rows)
    out = tmp_path / "out"
    result = run("simulate", one_job_trace, "--cluster", "v100:8", "-p", "fifo-max", "--carbon", signal, "--out", out)
    assert result.exit_code == 2, result.output
    expected_where = where if code else "row 3 (timestamp)"
    assert f"carbon.csv:{expected_where}" in result.output and (code or "mixed-time-zones") in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--at", "nan"),  # 'Out of range float values are not JSON compliant', no option named
        ("--at", "-inf"),
        ("--round-s", "inf"),  # OverflowError: internal error
        ("--budget-fraction", "nan"),
        ("--budget-j", "1e308"),  # exit 0 with a 300-digit budget
        ("--power-cap-w", "1e308"),
        ("--node-power-w", "inf"),
        ("--restart-s", "nan"),
        ("--min-pair-rate", "inf"),
    ],
)
def test_from_trace_number_options_out_of_range_exit_2_naming_them(
    tmp_path: Path, one_job_trace: Path, option: str, value: str
) -> None:
    out = tmp_path / "i.json"
    result = run(
        "instance", "from-trace", one_job_trace, "--cluster", "v100:8", "--at", "0", option, value, "--out", out
    )
    assert result.exit_code == 2, result.output
    assert option in result.output and "bad-option" in result.output and "internal error" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        (
            "big.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,1e308,1,10,c\n",
            "duration '1e308' is above 1e+09",
        ),
        ("steps.trace", "A3C\tcmd\tsteps\t0\t1e308\t0\t1\n", "total_steps '1e308' is above 1e+15"),
        ("arrival.trace", "A3C\tcmd\tsteps\t0\t4000\t1e308\t1\n", "arrival_time '1e308' is above 1e+09"),
    ],
)
def test_trace_numbers_that_overflow_exit_2_naming_the_row(tmp_path: Path, name: str, text: str, words: str) -> None:
    # a 1e308 s duration made infinite total steps: 'Out of range float values are not JSON compliant'
    trace = tmp_path / name
    trace.write_text(text)
    out = tmp_path / "i.json"
    result = run("instance", "from-trace", trace, "--cluster", "v100:8", "--at", "0", "--out", out)
    assert result.exit_code == 2, result.output
    assert words in result.output and "bad-trace-row" in result.output
    assert str(trace) in "".join(result.output.split())  # the table's title wraps a long path
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        (
            "zones.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-09 07:00:00Z,10,1,10,c\n2017-10-09 08:00:00,10,1,10,c\n",
            "line 3",
        ),
        (
            "quote.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n"
            '2017-10-09 07:00:00,10,1,10,"c\n2017-10-09 08:00:00,10,1,10,c\n',
            "line 2",
        ),
        ("units.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,10 s,1,10,c\n", "'10 s'"),
    ],
)
def test_malformed_philly_rows_exit_2_naming_the_line(tmp_path: Path, name: str, text: str, words: str) -> None:
    # mixed naive and zoned times shifted jobs by hours; an open quote swallowed every later row (12 rows -> 1 job)
    trace = tmp_path / name
    trace.write_text(text)
    out = tmp_path / "i.json"
    result = run("instance", "from-trace", trace, "--cluster", "v100:8", "--at", "0", "--out", out)
    assert result.exit_code == 2, result.output
    assert words in result.output and "bad-trace-row" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert not out.exists()
