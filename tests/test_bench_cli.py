"""``wattplan bench`` end to end: two tiny instances x greedy and highs; files, tables, resuming, bad input."""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.bench import write_set
from wattplan.planner.bench.options import BenchOptions
from wattplan.planner.bench.report import RUN_COLUMNS
from wattplan.planner.bench.runner import RunSpec, run_key
from wattplan.planner.bench.summary import SUMMARY_COLUMNS
from wattplan.planner.files.resources import default_instance

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_bench_writes_runs_summary_report_and_profile_then_resumes(tmp_path: Path) -> None:
    folder = write_set(tmp_path / "set", manifest=True)
    out = tmp_path / "out"
    args = ("bench", folder, "--solvers", "greedy,highs", "--time-limit", "5", "--workers", "2", "--out", out, "-q")
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert "4 runs (4 now, 0 reused)" in result.output

    rows = read_csv(out / "runs.csv")
    assert list(rows[0]) == [*RUN_COLUMNS, "jobs_asked", "family"]
    assert [(r["instance"], r["solver"], r["family"]) for r in rows] == [
        ("b.json", "greedy", "tight"),
        ("b.json", "highs", "tight"),
        ("a.json", "greedy", "loose"),
        ("a.json", "highs", "loose"),
    ]
    by = {(r["instance"], r["solver"]): r for r in rows}
    for name in ("a.json", "b.json"):
        highs, greedy = by[(name, "highs")], by[(name, "greedy")]
        assert highs["status"] == "optimal" and float(highs["gap_ref"]) == 0.0
        assert greedy["status"] == "feasible" and greedy["bound"] == ""
        best = float(highs["objective"])  # maximised progress: greedy's gap to the best bound by hand
        g = float(greedy["objective"])
        assert float(greedy["gap_ref"]) == pytest.approx((best - g) / best)
        assert int(greedy["jobs"]) == 3 and greedy["sense"] == "max" and greedy["objective_name"] == "progress"
        assert 0 <= float(greedy["primal_integral"]) <= 1 and float(greedy["peak_mb"]) > 0
        assert int(highs["columns"]) > 0 and int(highs["rows"]) > 0 and highs["plan_solver"].startswith("highs")
        assert highs["wrong"] == greedy["wrong"] == "" and highs["valid"] == greedy["valid"] == "True"
        assert highs["claimed_objective"] == highs["objective"] and greedy["claimed_objective"] == ""
    assert by[("a.json", "highs")]["objective"] == "2.81"

    lines = (out / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all("incumbents" in json.loads(x) and "round" in json.loads(x) for x in lines)
    summary = read_csv(out / "summary.csv")
    assert list(summary[0]) == list(SUMMARY_COLUMNS)
    s = {r["solver"]: r for r in summary}
    assert s["highs"]["solved"] == "2" and s["greedy"]["solved"] == "0"
    assert s["greedy"]["kind"] == "heuristic" and s["greedy"]["sgm_time_s"] == ""  # not timed against solvers
    assert s["virtual best"]["solved"] == "2" and s["highs"]["wins"] == "2"
    report = (out / "report.md").read_text()
    assert "![performance profile](profile.png)" in report and "| highs | solver | 2 | 2 |" in report
    assert "Python 3." in report and "commit " in report and "--solvers greedy,highs --time-limit 5" in report
    assert "## Wrong results" in report and report.rstrip().endswith("\n\nnone")  # no wrong run listed
    assert (out / "profile.png").read_bytes()[:8] == PNG

    again = run(*args)
    assert again.exit_code == 0 and "4 runs (0 now, 4 reused)" in again.output
    assert read_csv(out / "runs.csv") == rows


def test_a_crashing_solver_is_a_result_not_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATTPLAN_BENCH_FAULT", "crash:highs")
    folder = write_set(tmp_path / "set")
    result = run("bench", folder / "a.json", "--solvers", "greedy,highs", "--time-limit", "3", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "1 run(s) failed" in result.output
    rows = {r["solver"]: r for r in read_csv(tmp_path / "o" / "runs.csv")}
    assert rows["highs"]["status"] == "crash" and rows["greedy"]["status"] == "feasible"
    summary = {r["solver"]: r for r in read_csv(tmp_path / "o" / "summary.csv")}
    assert summary["highs"]["crash"] == "1" and summary["highs"]["mean_gap_ref"] == "1.0"


def test_a_wrong_bound_is_flagged_listed_and_not_solved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test-only fault puts highs's bound 10% below its own plan's value: the check must say so."""
    monkeypatch.setenv("WATTPLAN_BENCH_FAULT", "wrong_bound:highs")
    folder = write_set(tmp_path / "set")
    result = run("bench", folder / "a.json", "--solvers", "greedy,highs", "--time-limit", "5", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "1 wrong result(s)" in result.output
    rows = {r["solver"]: r for r in read_csv(tmp_path / "o" / "runs.csv")}
    highs, greedy = rows["highs"], rows["greedy"]
    assert highs["status"] == "optimal" and highs["valid"] == "True"
    assert highs["wrong"].startswith(f"bound {0.9 * 2.81:.10g} is below 2.81") and greedy["wrong"] == ""
    assert float(greedy["gap_ref"]) == pytest.approx((2.81 - 2.16) / 2.81)  # b* = v*: the wrong bound is out
    summary = {r["solver"]: r for r in read_csv(tmp_path / "o" / "summary.csv")}
    assert (summary["highs"]["solved"], summary["highs"]["wrong"]) == ("0", "1")
    assert summary["greedy"]["wrong"] == "0"
    report = (tmp_path / "o" / "report.md").read_text()
    wrong = report.split("## Wrong results", 1)[1]
    assert "| highs | a.json | 0 | bound 2.529 is below 2.81" in wrong and "greedy" not in wrong


@pytest.mark.parametrize(
    "options, needle",
    [
        (["--solvers", "greedy,simplex"], "--solvers[1]"),
        (["--time-limit", "0"], "--time-limit"),
        (["--seeds", "0"], "--seeds"),
        (["--seeds", "2147483648"], "--seeds"),  # listed 2**31 tasks before the first ran: a hang
        (["--workers", "0"], "--workers"),
        (["--gap", "1.5"], "--gap"),
        (["--memory-limit-mb", "0"], "--memory-limit-mb"),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, options: list[str], needle: str) -> None:
    folder = write_set(tmp_path / "set")
    result = run("bench", folder, *options, "-o", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_missing_set_and_missing_ray_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run("bench", tmp_path / "nope", "--solvers", "greedy", "-o", tmp_path / "o")
    assert result.exit_code == 2 and "does not exist" in result.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    folder = write_set(tmp_path / "set")
    result = run("bench", folder, "--solvers", "greedy", "--ray", "local", "-o", tmp_path / "o")
    assert result.exit_code == 2 and "ray-unavailable" in result.output and "Traceback" not in result.output
    for command in (["frontier", "x.trace", "--cluster", "v100:8"], ["simulate", "x.trace", "--cluster", "v100:8"]):
        assert "--ray" in run(*command, "--help").output


def test_a_manifest_with_an_edited_hash_exits_2_before_any_run(tmp_path: Path) -> None:
    """Issue 22: the manifest is verified before anything runs; the row and the file are named."""
    import hashlib

    folder = write_set(tmp_path / "set")
    digest = hashlib.sha256((folder / "a.json").read_bytes()).hexdigest()
    (folder / "manifest.csv").write_text(f"file,sha256\na.json,{digest}\nb.json,{digest}\n")
    out = tmp_path / "out"
    result = run("bench", folder, "--solvers", "greedy", "--time-limit", "5", "--out", out, "-q")
    assert result.exit_code == 2, result.output
    assert "sha256-mismatch" in result.output and "row 3.sha256" in result.output
    assert "b.json" in result.output and "Traceback" not in result.output
    assert not (out / "runs").exists()


def test_a_ray_address_nothing_answers_exits_2_naming_it(tmp_path: Path) -> None:
    """Issue 22: ``--ray 127.0.0.1:PORT`` with nothing listening hung forever; now exit 2 within seconds."""
    import socket
    import subprocess

    pytest.importorskip("ray")
    folder = write_set(tmp_path / "set")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: refused
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        cmd = [sys.executable, "-m", "wattplan", "bench", str(folder), "--solvers", "greedy", "--ray", address]
        try:
            done = subprocess.run(
                [*cmd, "-o", str(tmp_path / "o"), "-q"], capture_output=True, text=True, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"bench --ray {address} still waiting after 60 s")
    assert done.returncode == 2, done.stderr
    assert "ray-unreachable" in done.stderr and address in done.stderr and "Traceback" not in done.stderr


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"{os.getpid()}\\n".encode())
print("ready", flush=True)
time.sleep(60)
"""


def test_a_second_bench_into_the_same_out_exits_2_naming_the_first(tmp_path: Path) -> None:
    """Issue 22: two benches into one ``--out`` both did every task; the second is refused, naming the pid."""
    import subprocess

    folder = write_set(tmp_path / "set")
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(out / "bench.lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = run("bench", folder, "--solvers", "greedy", "--time-limit", "5", "--out", out, "-q")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 2, result.output
    # the problem table folds the message at 80 columns, possibly between "pid" and the number
    assert "out-in-use" in result.output and "(pid" in result.output
    assert re.search(rf"\b{holder.pid},", result.output)
    assert not (out / "runs").exists()


@pytest.mark.slow
def test_a_node_limit_reaches_every_exact_run_and_is_part_of_its_key(tmp_path: Path) -> None:
    """``--node-limit 1`` on the default round: CBC stops after a node or two (unlimited it takes 134-282 nodes).

    Greedy runs as it is (no limit recorded, so a rerun under another limit reuses its run), and the runs of a
    bench without the limit keep the keys they had before the option existed.
    """
    set_dir = tmp_path / "set"
    set_dir.mkdir()
    (set_dir / "default.json").write_bytes(default_instance().read_bytes())
    out = tmp_path / "out"
    args = ("bench", set_dir, "--solvers", "cbc,greedy", "--time-limit", "60", "--out", out, "-q")
    result = run(*args, "--node-limit", "1")
    assert result.exit_code == 0, result.output
    rows = {r["solver"]: r for r in read_csv(out / "runs.csv")}
    assert rows["cbc"]["node_limit"] == "1" and rows["greedy"]["node_limit"] == ""
    assert rows["cbc"]["status"] in ("optimal", "feasible") and int(rows["cbc"]["nodes"]) <= 2
    again = run(*args, "--node-limit", "2")  # another limit: CBC runs again, greedy's run is reused
    assert again.exit_code == 0 and "2 runs (1 now, 1 reused)" in again.output, again.output
    old = RunSpec("cbc", 0, 60.0, 1e-4, 1, None, 30.0)
    assert run_key("f" * 64, old) == f"{'f' * 64}|cbc|0|60.0|0.0001|1|mem=None|grace=30.0"
    assert run_key("f" * 64, replace(old, node_limit=1)).endswith("|nodes=1")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--solvers", "cpsat,greedy", "--node-limit", "5"], "--solvers[0] cpsat takes no node limit"),
        (["--solvers", "highs", "--node-limit", "0"], "must be >= 1 nodes"),
    ],
)
def test_a_node_limit_a_solver_cannot_keep_is_refused_by_name(tmp_path: Path, options: list[str], said: str) -> None:
    result = run("bench", write_set(tmp_path / "set"), *options, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "--node-limit" in result.output and said in result.output, result.output
    assert not (tmp_path / "out" / "runs").exists()


def test_the_command_is_generated_from_the_record() -> None:
    """Issue 42: every option of ``wattplan bench`` is a field of BenchOptions, with its flag, default and help."""
    import typer

    from wattplan.planner.cli.faces import help_text

    params = {p.name: p for p in typer.main.get_command(app).commands["bench"].params}
    for opt in BenchOptions.options():
        param = params.pop(opt.name)
        default = getattr(param.default, "value", param.default)
        assert (opt.flag in param.opts, default, param.help) == (True, opt.default, help_text(opt)), opt.name
    assert sorted(params) == ["fmt", "instances", "out_path", "quiet"]  # SET, --out, --quiet, --format: its own
    defaults = {opt.name: opt.default for opt in BenchOptions.options()}
    assert BenchOptions.problems(defaults) == [] and BenchOptions.checked(defaults) == BenchOptions()


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("seeds", 0, "must be in [1, 1000], got 0"),
        ("grace", -1, "must be > 0 s, got -1"),
        ("dpi", 10, "must be in [50, 1200] dpi, got 10"),
        ("threads", 2048, "must be in [1, 1024], got 2048"),
        ("time_limit", float("nan"), "must be a finite number in (0, 1e+06] s, got nan"),
    ],
)
def test_a_bad_option_is_named_both_ways_in_the_records_words(
    tmp_path: Path, name: str, value: float, said: str
) -> None:
    """The command prints the record's problem (``seeds (--seeds): must be in [1, 1000], got 0``), as the API raises."""
    (problem,) = BenchOptions.problems({name: value})
    assert (problem.path, problem.message) == (f"{name} ({BenchOptions.option(name).flag})", said)
    flag = BenchOptions.option(name).flag
    result = run("bench", write_set(tmp_path / "set"), "--solvers", "greedy", flag, value, "-o", tmp_path / "o")
    printed = " ".join(result.output.split())
    assert result.exit_code == 2 and problem.path in printed and problem.message in printed, result.output
    assert not (tmp_path / "o").exists()


def test_the_pythons_spellings_reach_the_same_record(tmp_path: Path) -> None:
    """A list of solvers is the command line's comma-separated text; ``gap=None`` keeps the default gap."""
    from wattplan.planner.bench.session import bench_config

    assert BenchOptions.checked(solvers=["highs", "greedy"], gap=None) == BenchOptions(solvers="highs,greedy")
    folder = write_set(tmp_path / "set")
    by_name = bench_config(folder, out=tmp_path / "o", solvers=("greedy",), seeds=2)
    by_record = bench_config(folder, out=tmp_path / "o", options=BenchOptions(solvers="greedy", seeds=2))
    assert by_name == by_record and by_name.config.solvers == ("greedy",) and len(by_name.tasks) == 4
    with pytest.raises(TypeError, match="options or seeds"):
        bench_config(folder, out=tmp_path / "o", options=BenchOptions(), seeds=2)
