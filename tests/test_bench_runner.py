"""The benchmark runner: each run in its own process; crashes, hangs, late answers and OOM are results; resuming."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tiny_instance_doc
from tests.helpers.bench import write_set
from wattplan.planner.bench.runner import (
    BenchConfig,
    RunSpec,
    config_problems,
    find_instances,
    prepare_runs,
    run_bench,
    run_one,
)
from wattplan.planner.bench.worker import EXIT_OOM, FAULT_ENV, injected_fault
from wattplan.planner.contracts.problems import InputError


def instance_bytes(**round_fields: Any) -> bytes:
    doc = tiny_instance_doc()
    doc["round"].update(round_fields)
    return json.dumps(doc).encode()


GENEROUS_GRACE_S = 60.0
"""The grace of runs whose test is not about the deadline: the hard deadline (limit + grace) counts the worker's
start-up, a few seconds on a loaded machine; a run that answers sooner is not kept waiting by it."""


def spec(
    solver: str = "greedy", limit: float = 2.0, grace: float = GENEROUS_GRACE_S, memory: int | None = None
) -> RunSpec:
    return RunSpec(solver, 0, limit, 1e-4, 1, memory, grace)


def test_a_clean_run_reports_the_plan() -> None:
    record = run_one(spec("greedy"), instance_bytes())
    assert record["status"] == "feasible" and record["exit_code"] == 0
    assert record["objective"] == pytest.approx(2.16) and record["plan_solver"] == "greedy"
    assert 0 < record["time_s"] < record["wall_s"] and 5 < record["peak_mb"] < 500
    assert record["incumbents"] and record["incumbents"][-1][1] == record["objective"]
    assert record["round"]["status"] == "feasible" and "stderr_tail" not in record


def test_a_crash_is_a_result_with_the_tail_of_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "crash:greedy")
    record = run_one(spec("greedy"), instance_bytes())
    assert record["status"] == "crash" and record["message"] == "killed by SIGABRT"
    assert "injected crash" in record["stderr_tail"] and record.get("objective") is None


def test_a_sigkill_from_someone_else_is_a_crash_unless_the_kernel_killed_for_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 22: ``kill -9`` of a worker was recorded as ``oom`` (and so never retried as a crash)."""
    monkeypatch.setenv(FAULT_ENV, "killed:greedy")
    record = run_one(spec("greedy"), instance_bytes())
    assert record["status"] == "crash" and record["exit_code"] == -9 and "SIGKILL" in record["message"]
    counts = iter([7, 8])  # the kernel's oom_kill count went up during the run
    monkeypatch.setattr("wattplan.planner.bench.runner.oom_kills", lambda: next(counts))
    record = run_one(spec("greedy"), instance_bytes())
    assert record["status"] == "oom" and "for memory" in record["message"]


def test_a_hang_is_killed_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker ignores SIGTERM and sleeps; the group is killed at limit + grace = 1.5 s."""
    monkeypatch.setenv(FAULT_ENV, "hang")
    begin = time.monotonic()
    record = run_one(spec("greedy", limit=0.5, grace=1.0), instance_bytes())
    assert record["status"] == "hang" and "no answer within 1.5 s" in record["message"]
    # killed, not waited out (the fault sleeps for ever); how long a loaded machine takes to reap it is no matter
    assert 1.5 <= time.monotonic() - begin < 60 and record["wall_s"] >= 1.5


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_hang_takes_the_processes_it_started_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child in a session of its own (as the watchdog's solve is) is out of the worker's group: killed too."""
    monkeypatch.setenv(FAULT_ENV, "orphan")
    record = run_one(spec("greedy", limit=0.5, grace=1.0), instance_bytes())
    assert record["status"] == "hang"
    match = re.search(r"injected orphan pid (\d+)", record["stderr_tail"])
    assert match, record["stderr_tail"]
    pid = int(match.group(1))
    deadline = time.monotonic() + 60  # ends as soon as the orphan is gone
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_an_answer_past_the_limit_is_a_timeout_with_its_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "slow:greedy")
    record = run_one(spec("greedy", limit=0.5), instance_bytes())  # answers 1.6 s into its 0.5 s: late
    assert record["status"] == "timeout" and record["plan_status"] == "feasible"
    assert record["time_s"] > 1.6 and record["objective"] == pytest.approx(2.16)


def test_memory_errors_are_oom_and_a_reported_error_is_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "oom")
    record = run_one(spec("greedy", memory=1200), instance_bytes())  # 64 MiB blocks until MemoryError
    assert record["status"] == "oom" and record["exit_code"] == EXIT_OOM and "MemoryError" in record["message"]
    monkeypatch.setenv(FAULT_ENV, "error")
    record = run_one(spec("greedy"), instance_bytes())
    assert record["status"] == "error" and "injected error" in record["message"]
    monkeypatch.delenv(FAULT_ENV)
    record = run_one(spec("greedy", memory=60), instance_bytes())  # too little to load numpy at all
    assert record["status"] == "oom", record
    record = run_one(spec("greedy"), b'{"schema": "wattplan.instance/1"}')
    assert record["status"] == "error" and "InputError" in record["message"]


def test_injected_fault_parsing() -> None:
    assert injected_fault("crash:highs,hang:cbc", "cbc") == "hang"
    assert injected_fault("crash:highs", "greedy") is None
    assert injected_fault("oom", "greedy") == "oom"
    assert injected_fault(None, "greedy") is None and injected_fault("boom", "greedy") is None


def test_instances_from_a_folder_a_manifest_or_a_file(tmp_path: Path) -> None:
    plain = find_instances(write_set(tmp_path / "plain"))
    assert [e.name for e in plain] == ["a.json", "b.json"] and plain[0].jobs == 3
    assert plain[0].objective == "progress" and plain[0].sha256 != plain[1].sha256
    listed = find_instances(write_set(tmp_path / "listed", manifest=True))
    assert [(e.name, e.extra) for e in listed] == [
        ("b.json", {"jobs_asked": "3", "family": "tight"}),
        ("a.json", {"jobs_asked": "3", "family": "loose"}),
    ]
    assert [e.name for e in find_instances(tmp_path / "plain" / "a.json")] == ["a.json"]
    (tmp_path / "listed" / "manifest.csv").write_text("file,family\nc.json,x\n")
    with pytest.raises(InputError, match="c.json"):
        find_instances(tmp_path / "listed")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no-instances"):
        find_instances(tmp_path / "empty")


def test_bad_options_are_listed_together(tmp_path: Path) -> None:
    config = BenchConfig(tmp_path / "nope", ("greedy", "simplex"), 0.0, 0, tmp_path / "out", workers=0, threads=0)
    codes = {(p.code, p.path) for p in config_problems(config)}
    assert ("no-such-file", "SET") in codes
    assert ("solver-unavailable", "--solvers[1]") in codes
    assert ("bad-option", "time_limit_s (--time-limit)") in codes
    assert {("bad-option", "--seeds"), ("bad-option", "--workers"), ("bad-option", "threads (--threads)")} <= codes
    with pytest.raises(InputError):
        prepare_runs(config)


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_sweep_survives_a_crash_and_resumes_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_set(tmp_path / "set")
    (folder / "a-copy.json").write_bytes((folder / "a.json").read_bytes())  # same content: one run serves both
    out = tmp_path / "out"
    config = BenchConfig(folder, ("greedy", "highs"), 5.0, 1, out, workers=2)
    monkeypatch.setenv(FAULT_ENV, "crash:highs")
    seen: list[str] = []
    first = run_bench(config, progress=lambda r: seen.append(r["status"]))
    assert first.ran == 4 and first.reused == 0 and len(seen) == 6
    by = {(t.entry.name, t.spec.solver): r for t, r in zip(first.tasks, first.records, strict=True)}
    assert {k: r["status"] for k, r in by.items()} == {
        ("a-copy.json", "greedy"): "feasible",
        ("a-copy.json", "highs"): "crash",
        ("a.json", "greedy"): "feasible",
        ("a.json", "highs"): "crash",
        ("b.json", "greedy"): "feasible",
        ("b.json", "highs"): "crash",
    }
    files = sorted((out / "runs").glob("*.json"))
    assert len(files) == 4 and not list((out / "runs").glob(".*"))  # no temporary file left behind
    stamps = {f.name: f.stat().st_mtime_ns for f in files}

    monkeypatch.delenv(FAULT_ENV)
    again = run_bench(config)
    assert again.ran == 0 and again.reused == 6
    assert {f.name: f.stat().st_mtime_ns for f in files} == stamps
    b_highs = next(t for t in first.tasks if (t.entry.name, t.spec.solver) == ("b.json", "highs"))
    crashed = out / "runs" / b_highs.file_name
    crashed.unlink()
    third = run_bench(config)
    assert third.ran == 1 and third.reused == 5
    assert json.loads(crashed.read_text())["status"] == "optimal"
    longer = run_bench(BenchConfig(folder, ("greedy",), 6.0, 1, out))  # another limit is another key
    assert longer.ran == 2 and longer.reused == 0


def write_hashed_manifest(folder: Path, rows: list[tuple[str, str]], bom: bool = False) -> None:
    """``manifest.csv`` with ``file`` and ``sha256`` columns (``wattplan instance sweep``'s own)."""
    text = "file,sha256,family\n" + "".join(f"{name},{digest},x\n" for name, digest in rows)
    (folder / "manifest.csv").write_bytes(("\ufeff" if bom else "").encode() + text.encode())


def sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_verified_manifest_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    folder = write_set(tmp_path / "set")
    write_hashed_manifest(folder, [("a.json", sha(folder / "a.json")), ("b.json", sha(folder / "b.json"))], bom=True)
    entries = find_instances(folder)
    assert [(e.name, e.extra["family"]) for e in entries] == [("a.json", "x"), ("b.json", "x")]


@pytest.mark.parametrize(
    ("edit", "code", "where", "named"),
    [
        ("hash", "sha256-mismatch", "row 3.sha256", "b.json"),
        ("instance", "sha256-mismatch", "row 2.sha256", "a.json"),
        ("dotdot", "outside-set", "row 3.file", "outside.json"),
        ("absolute", "outside-set", "row 3.file", "outside.json"),
        ("symlink", "outside-set", "row 3.file", "link.json"),
        ("nul", "no-such-file", "row 3.file", "NUL"),  # was 'embedded null byte', exit 1, no file named
    ],
)
def test_a_manifest_that_does_not_match_its_files_is_refused(
    tmp_path: Path, edit: str, code: str, where: str, named: str
) -> None:
    """Issue 22: edited hashes, edited instances, ``..`` paths and symlinks out of the set all ran."""
    folder = write_set(tmp_path / "set")
    outside = tmp_path / "outside.json"
    outside.write_bytes((folder / "b.json").read_bytes())
    rows = [("a.json", sha(folder / "a.json")), ("b.json", sha(folder / "b.json"))]
    if edit == "hash":
        rows[1] = ("b.json", sha(folder / "a.json"))
    elif edit == "instance":
        (folder / "a.json").write_text((folder / "a.json").read_text().replace("}", " }", 1))
    elif edit == "dotdot":
        rows[1] = ("../outside.json", sha(outside))
    elif edit == "absolute":
        rows[1] = (str(outside), sha(outside))
    elif edit == "nul":
        rows[1] = ("b\0.json", sha(folder / "b.json"))
    else:
        (folder / "link.json").symlink_to(outside)
        rows[1] = ("link.json", sha(outside))
    write_hashed_manifest(folder, rows)
    with pytest.raises(InputError) as caught:
        find_instances(folder)
    assert caught.value.source == str(folder / "manifest.csv")
    assert [(p.code, p.path) for p in caught.value.problems] == [(code, where)]
    assert named in caught.value.problems[0].message


def test_saved_runs_of_other_options_or_an_edited_instance_are_stale_not_reused(tmp_path: Path) -> None:
    """Issue 22: the memory cap (which decides ``oom``) was not in a run's key; stale runs are counted."""
    folder = write_set(tmp_path / "set")
    out = tmp_path / "out"
    first = run_bench(BenchConfig(folder, ("greedy",), 5.0, 1, out))
    assert (first.ran, first.reused, first.stale) == (2, 0, 0)
    capped = run_bench(BenchConfig(folder, ("greedy",), 5.0, 1, out, memory_limit_mb=4096))
    assert (capped.ran, capped.reused, capped.stale) == (2, 0, 2)
    assert all(r is not None and r["memory_limit_mb"] == 4096 for r in capped.records)
    (folder / "a.json").write_text((folder / "a.json").read_text() + "\n")  # another content, same name
    edited = run_bench(BenchConfig(folder, ("greedy",), 5.0, 1, out))
    assert (edited.ran, edited.reused, edited.stale) == (1, 1, 3)


def test_a_second_sweep_into_the_same_out_is_refused_naming_the_holder(tmp_path: Path) -> None:
    """Issue 22: two benches into one ``--out`` both ran every task."""
    import os

    from wattplan.planner.bench.runner import LOCK_FILE, bench_lock

    folder = write_set(tmp_path / "set")
    out = tmp_path / "out"
    config = BenchConfig(folder, ("greedy",), 5.0, 1, out)
    with bench_lock(out):  # another bench run holds it (a lock of another open file, as another process's)
        with pytest.raises(InputError) as caught:
            run_bench(config)
        [problem] = caught.value.problems
        assert (problem.code, problem.path) == ("out-in-use", "--out") and f"pid {os.getpid()}" in problem.message
    assert not (out / "runs").exists()
    done = run_bench(config)  # released: the bench run goes ahead, and leaves the lock free
    assert done.ran == 2 and (out / LOCK_FILE).read_text().strip() == str(os.getpid())
    assert run_bench(config).reused == 2
