"""``wattplan.simulate`` as a library entry (issue 27 item 1): no command line under it, the tidy folder layout.

A replay (the agent's loop on a simulated Slurm) writes ``out/<policy>/{summary.json, jobs.csv, power.csv,
agent.log}`` for every policy (one as several) and ``out/comparison.{csv,json}`` at the top; the ``jobs`` frame starts
with a ``policy`` column. The command line and the API write the same files.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import wattplan
from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError

ROOT = Path(__file__).resolve().parent.parent
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"
CLUSTER = "v100:8,p100:8"
STEPS = {"j0": 4000, "j1": 6000, "j2": 9000, "j3": 5000}
"""The steps of :func:`tiny_trace`'s jobs, by the ids the replay gives them (``j`` and the trace's order)."""
WALL_CLOCK_KEYS = ("wall_s", "cpu_s", "written_by", "energy_floor_note")
"""Summary fields that depend on the machine or the caller: seconds measured, provenance, the floor's solve note."""


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    """Four short jobs arriving within the first minutes (a few rounds of work)."""
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (A3C, 5000, 500, 1)]
    return write_gavel_trace(tmp_path / "tiny.trace", rows)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_api_imports_no_command_line(tmp_path: Path, tiny_trace: Path) -> None:
    code = (
        "import sys, wattplan\n"
        f"r = wattplan.simulate({str(tiny_trace)!r}, cluster='v100:8', policies=['fifo-max'], "
        f"out={str(tmp_path / 'o')!r})\n"
        f"f = wattplan.frontier({str(tiny_trace)!r}, cluster='v100:8', deltas=[0.1], max_jct_increase=[5], "
        f"baselines=['fifo-max'], workers=1, max_rounds=20, out={str(tmp_path / 'f')!r})\n"
        "b = wattplan.bench(wattplan.default_instance(), solvers=['greedy'], time_limit=5, "
        f"out={str(tmp_path / 'b')!r})\n"
        "print(sorted(m for m in ('wattplan.planner.cli', 'cli', 'typer', 'click') if m in sys.modules))\n"
        "print(r.summary.policy.tolist())\n"
        "print(sorted(f.frontier.label))\n"
        "print(b.bench.solver.tolist())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["[]", "['fifo-max']"]
    assert "fifo-max" in lines[2] and "wattplan-efficiency-delta-0.1" in lines[2]
    assert lines[3] == "['greedy']"


@pytest.mark.parametrize("name", ["simulate", "frontier"])
def test_the_api_offers_every_option_of_its_record_with_its_default(name: str) -> None:
    """The API takes its record's options as keywords: its signature lists each one, with the record's default."""
    import inspect

    from wattplan.planner.sim.options import FrontierOptions, SimulateOptions

    record = {"simulate": SimulateOptions, "frontier": FrontierOptions}[name]
    api = inspect.signature(getattr(wattplan, name)).parameters
    for opt in record.options():
        assert opt.name in api, f"wattplan.{name} lacks {opt.name}"
        assert api[opt.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert api[opt.name].default == opt.default, f"wattplan.{name}({opt.name}=) defaults differ"
    # beside the record: the inputs, the output folder, and what Python defaults otherwise than the command line
    own = {"trace", "cluster", "out", "plots", *({"policies", "quiet"} if name == "simulate" else ())}
    assert set(api) - {opt.name for opt in record.options()} == own


def test_one_policy_writes_its_own_folder_and_a_policy_column(tmp_path: Path, tiny_trace: Path) -> None:
    """One policy as several: ``out/fifo-max/`` with its four files, only the comparison at the top."""
    out = tmp_path / "one"
    result = wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max"], out=out)
    assert sorted(p.name for p in (out / "fifo-max").iterdir() if not p.name.startswith(".")) == [
        "agent.log",
        "jobs.csv",
        "power.csv",
        "summary.json",
    ]
    assert sorted(p.name for p in out.iterdir()) == ["comparison.csv", "comparison.json", "fifo-max"]
    assert [r["policy"] for r in _rows(out / "comparison.csv")] == ["fifo-max"]
    jobs = _rows(out / "fifo-max" / "jobs.csv")
    assert {r["job_id"]: float(r["steps"]) for r in jobs} == STEPS  # every step of the trace done, none more
    assert list(result.jobs.columns).count("policy") == 1 and result.jobs.columns[0] == "policy"
    assert result.jobs.policy.tolist() == ["fifo-max"] * 4
    assert result.summary.policy.tolist() == ["fifo-max"] and result.summary.completed.tolist() == [4]


def _untimed_csv(path: Path) -> list[list[str]]:
    """CSV rows without the wall-clock columns (:data:`WALL_CLOCK_KEYS`)."""
    rows = list(csv.reader(io.StringIO(path.read_text())))
    keep = [k for k, name in enumerate(rows[0]) if name not in WALL_CLOCK_KEYS]
    return [[r[k] for k in keep] for r in rows]


def _untimed_json(path: Path) -> Any:
    """A summary (or a list of them) without the wall-clock fields and the provenance (:data:`WALL_CLOCK_KEYS`)."""
    doc = json.loads(path.read_text())
    docs = doc if isinstance(doc, list) else [doc]
    out = [{k: v for k, v in d.items() if k not in WALL_CLOCK_KEYS} for d in docs]
    return out if isinstance(doc, list) else out[0]


def _untimed_log(path: Path) -> str:
    """An ``agent.log`` without the seconds each round took on this machine (``overhead 0.01 s, solve 0.00 s``)."""
    return re.sub(r"overhead [0-9.]+ s, solve [0-9.]+ s", "overhead, solve", path.read_text())


def test_the_command_line_and_the_api_write_the_same_files(tmp_path: Path, tiny_trace: Path) -> None:
    options = {"power_cap_w": 5000.0, "max_rounds": 40, "seed": 2}
    api = tmp_path / "api"
    wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max", "zeus"], out=api, **options)
    cli = tmp_path / "cli"
    args = ["simulate", str(tiny_trace), "--cluster", CLUSTER, "-p", "fifo-max", "-p", "zeus", "-o", str(cli)]
    args += ["--power-cap-w", "5000", "--max-rounds", "40", "--seed", "2", "--no-plots", "-q"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    files = sorted(p.relative_to(api) for p in api.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert files == sorted(p.relative_to(cli) for p in cli.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert {rel.suffix for rel in files} == {".csv", ".json", ".log"} and len(files) == 2 + 2 * 4
    for rel in files:
        if rel.suffix == ".csv":
            assert _untimed_csv(api / rel) == _untimed_csv(cli / rel), rel
        elif rel.suffix == ".log":
            assert _untimed_log(api / rel) == _untimed_log(cli / rel), rel
        else:
            assert _untimed_json(api / rel) == _untimed_json(cli / rel), rel
    assert json.loads((api / "zeus" / "summary.json").read_text())["replay_key"]["spec"]["power_cap_w"] == 5000.0


def test_results_of_the_older_one_policy_layout_still_read(tmp_path: Path, tiny_trace: Path) -> None:
    """A folder as a one-policy replay wrote it before: its files at the top, no policy column in ``jobs.csv``."""
    new = tmp_path / "new"
    wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max"], out=new)
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(new / "fifo-max" / "summary.json", old / "summary.json")
    (old / "jobs.csv").write_text("job_id,jct_s\na,10\n")
    result = wattplan.read_results(old)
    assert result.policies == ["fifo-max"] and result.kind == "replay"
    assert result.jobs.policy.tolist() == ["fifo-max"] and result.jobs.jct_s.tolist() == [10]
    saved = json.loads((new / "fifo-max" / "summary.json").read_text())
    assert result.summary.energy_kwh.tolist() == [saved["energy_kwh"]]


def test_bad_options_are_named_as_the_command_names_them(tmp_path: Path, tiny_trace: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", objective="speed", governor="x", out=tmp_path / "o")
    assert [p.path for p in exc.value.problems] == ["governor (--governor)", "objective (--objective)"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", governor="x", tail_pace="y", out=tmp_path / "o")
    assert [p.path for p in exc.value.problems] == ["governor (--governor)", "tail_pace (--tail-pace)"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", noise=2.0, zeus_eta=-1.0, out=tmp_path / "o")
    assert {p.path for p in exc.value.problems} == {"noise (--noise)", "zeus_eta (--zeus-eta)"}
    assert not (tmp_path / "o").exists()


def test_frontier_options_are_checked_and_named(tmp_path: Path, tiny_trace: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tiny_trace, cluster="v100:8", deltas=[0.1, 1.5], out=tmp_path / "f")
    assert [p.path for p in exc.value.problems] == ["--deltas[1]"]  # the bad item, as the command names it
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tiny_trace, cluster="v100:8", objective="fast", out=tmp_path / "f")
    assert [p.path for p in exc.value.problems] == ["objective (--objective)"]
    with pytest.raises(TypeError, match="delta.*deltas"):
        wattplan.frontier(tiny_trace, cluster="v100:8", delta=0.1)


def test_bench_options_are_checked_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.bench(wattplan.default_instance(), solvers=["greedy"], seeds=0, out=tmp_path / "b")
    assert "seeds (--seeds)" in {p.path for p in exc.value.problems}
    assert not (tmp_path / "b" / "runs.csv").exists()
    with pytest.raises(TypeError, match="solver.*solvers"):
        wattplan.bench(wattplan.default_instance(), solver="greedy")
