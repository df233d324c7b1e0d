"""``wattplan.simulate`` as a library entry (issue 27 item 1): no command line under it, the tidy folder layout.

A replay writes ``out/<policy>/{summary.json, rounds.csv, jobs.csv}`` for every policy (one as several) and
``out/comparison.{csv,json}`` at the top; ``rounds.csv`` and ``jobs.csv`` start with a ``policy`` column and the
nodes on are one ``nodes_on_<type>`` column per GPU type. The command line and the API write the same files.
"""

from __future__ import annotations

import csv
import io
import json
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
from wattplan.planner.sim.journal import CHECKPOINT_FILE
from wattplan.planner.sim.metrics import without_timing

ROOT = Path(__file__).resolve().parent.parent
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"
CLUSTER = "v100:8,p100:8"


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


def test_one_policy_writes_its_own_folder_with_policy_and_nodes_on_columns(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "one"
    result = wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max"], out=out, engine="rounds")
    assert sorted(p.name for p in (out / "fifo-max").iterdir() if not p.name.startswith(".")) == [
        "jobs.csv",
        "rounds.csv",
        "summary.json",
    ]
    assert not (out / "summary.json").exists() and not (out / "rounds.csv").exists()
    assert [r["policy"] for r in _rows(out / "comparison.csv")] == ["fifo-max"]
    header = (out / "fifo-max" / "rounds.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "policy" and "nodes_on" not in header
    # the cluster's types in its order, where the packed string was
    k = header.index("nodes_on_v100")
    assert header[k - 1 : k + 3] == ["powered_gpus", "nodes_on_v100", "nodes_on_p100", "budget_j"]
    rounds = _rows(out / "fifo-max" / "rounds.csv")
    assert {r["policy"] for r in rounds} == {"fifo-max"}
    # 8 GPUs per node: the nodes on hold every powered GPU
    assert all(8 * (int(r["nodes_on_v100"]) + int(r["nodes_on_p100"])) == int(r["powered_gpus"]) for r in rounds)
    jobs = _rows(out / "fifo-max" / "jobs.csv")
    assert list(jobs[0])[0] == "policy" and len(jobs) == 4
    assert result.rounds.columns[0] == "policy" and list(result.rounds.columns).count("policy") == 1
    assert result.rounds["nodes_on_p100"].dtype.kind == "i"


def _untimed_csv(path: Path) -> list[list[str]]:
    """CSV rows without the wall-clock columns (``solver_s``, ``solver_s_*``)."""
    rows = list(csv.reader(io.StringIO(path.read_text())))
    keep = [k for k, name in enumerate(rows[0]) if not name.startswith("solver_s")]
    return [[r[k] for k in keep] for r in rows]


def _untimed_json(path: Path) -> Any:
    """A summary (or a list of them) without wall-clock fields, provenance and the floor's note (it says seconds)."""
    doc = json.loads(path.read_text())
    docs = doc if isinstance(doc, list) else [doc]
    out = [{k: v for k, v in without_timing(d).items() if k != "written_by"} for d in docs]
    for d in out:
        d.get("energy_floor", {}).pop("note", None)
    return out if isinstance(doc, list) else out[0]


def test_the_command_line_and_the_api_write_the_same_files(tmp_path: Path, tiny_trace: Path) -> None:
    options = {"power_cap_w": 5000.0, "max_rounds": 40, "seed": 2, "engine": "rounds"}
    api = tmp_path / "api"
    wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max", "zeus"], out=api, **options)
    cli = tmp_path / "cli"
    args = ["simulate", str(tiny_trace), "--cluster", CLUSTER, "-p", "fifo-max", "-p", "zeus", "-o", str(cli)]
    args += ["--power-cap-w", "5000", "--max-rounds", "40", "--seed", "2", "--engine", "rounds", "--no-plots", "-q"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    files = sorted(p.relative_to(api) for p in api.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert files == sorted(p.relative_to(cli) for p in cli.rglob("*") if p.is_file() and not p.name.startswith("."))
    for rel in files:
        if rel.suffix == ".csv":
            assert _untimed_csv(api / rel) == _untimed_csv(cli / rel), rel
        else:
            assert _untimed_json(api / rel) == _untimed_json(cli / rel), rel


def test_results_of_the_older_one_policy_layout_still_read(tmp_path: Path, tiny_trace: Path) -> None:
    """A folder as a one-policy replay wrote it before: files at the top, no policy column, packed nodes_on."""
    new = tmp_path / "new"
    wattplan.simulate(tiny_trace, cluster=CLUSTER, policies=["fifo-max"], out=new, engine="rounds")
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(new / "fifo-max" / "summary.json", old / "summary.json")
    rounds = _rows(new / "fifo-max" / "rounds.csv")
    with (old / "rounds.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["round", "nodes_on", "energy_j"])
        for r in rounds:
            writer.writerow([r["round"], f"v100:{r['nodes_on_v100']} p100:{r['nodes_on_p100']}", r["energy_j"]])
    (old / "jobs.csv").write_text("job_id,jct_s\na,10\n")
    result = wattplan.read_results(old)
    assert result.policies == ["fifo-max"]
    assert result.rounds.nodes_on_v100.tolist() == [int(r["nodes_on_v100"]) for r in rounds]
    assert result.jobs.policy.tolist() == ["fifo-max"]


def test_a_checkpoint_of_the_older_layout_is_resumed(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "o"
    args = ["simulate", str(tiny_trace), "--engine", "rounds", "--cluster", "v100:8", "-p", "fifo-max", "--no-plots"]
    args += ["-q", "-o", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    rounds = (out / "fifo-max" / "rounds.csv").read_text()
    (out / "fifo-max" / CHECKPOINT_FILE).rename(out / CHECKPOINT_FILE)  # where an older version kept it
    shutil.rmtree(out / "fifo-max")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    assert "older layout" in text and "resumed from the checkpoint after round" in text
    assert (out / "fifo-max" / "rounds.csv").read_text() == rounds  # rewritten from the checkpoint, new columns
    assert not (out / CHECKPOINT_FILE).exists()


def test_bad_options_are_named_as_the_command_names_them(tmp_path: Path, tiny_trace: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", objective="speed", governor="x", out=tmp_path / "o")
    assert [p.path for p in exc.value.problems] == ["governor (--governor)", "objective (--objective)"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", governor="x", tail_pace="y", out=tmp_path / "o")
    assert [p.path for p in exc.value.problems] == ["governor (--governor)", "tail_pace (--tail-pace)"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", replan="often", engine="rounds", out=tmp_path / "o")
    assert [p.path for p in exc.value.problems] == ["replan (--replan)"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tiny_trace, cluster="v100:8", noise=2.0, zeus_eta=-1.0, engine="rounds", out=tmp_path / "o")
    assert {p.path for p in exc.value.problems} == {"noise (--noise)", "zeus_eta (--zeus-eta)"}


def test_frontier_options_are_checked_and_named(tmp_path: Path, tiny_trace: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tiny_trace, cluster="v100:8", deltas=[0.1, 1.5], out=tmp_path / "f")
    assert [p.path for p in exc.value.problems] == ["--deltas[1]"]  # the bad item, as the command names it
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tiny_trace, cluster="v100:8", objective="fast", out=tmp_path / "f")
    assert [p.path for p in exc.value.problems] == ["objective (--objective)"]
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tiny_trace, cluster="v100:8", replan="sometimes", out=tmp_path / "f")
    assert [p.path for p in exc.value.problems] == ["replan (--replan)"]
    with pytest.raises(TypeError, match="delta.*deltas"):
        wattplan.frontier(tiny_trace, cluster="v100:8", delta=0.1)


def test_replan_reaches_every_frontier_point(tiny_trace: Path) -> None:
    from wattplan.planner.sim.frontier import frontier_points
    from wattplan.planner.sim.options import FrontierOptions
    from wattplan.planner.sim.session import frontier_sweep

    options = FrontierOptions.checked(deltas=[0.1], max_jct_increase=[5], replan="events", engine="rounds")
    sweep = frontier_sweep(tiny_trace, "v100:8", options)
    points = frontier_points(sweep.base, sweep.deltas, sweep.jct_increases, sweep.baselines)
    assert len(points) > 2 and {p.spec.replan for p in points} == {"events"}
    assert frontier_sweep(tiny_trace, "v100:8", FrontierOptions()).base.replan == "rounds"


def test_bench_options_are_checked_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.bench(wattplan.default_instance(), solvers=["greedy"], seeds=0, out=tmp_path / "b")
    assert "seeds (--seeds)" in {p.path for p in exc.value.problems}
    assert not (tmp_path / "b" / "runs.csv").exists()
    with pytest.raises(TypeError, match="solver.*solvers"):
        wattplan.bench(wattplan.default_instance(), solver="greedy")
