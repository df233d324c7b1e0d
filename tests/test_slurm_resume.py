"""``simulate`` on the slurm engine resumes policy by policy (:mod:`planner.control.saved_replay`).

A rerun of the same command reads back every policy whose saved files came from the same replay, with the same
figures; a changed option or input file replays what it touches; ``--fresh`` replays all; a folder left half
written by an interruption is replayed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.control import session

R18 = "ResNet-18 (batch size 32)"
TF = "Transformer (batch size 128)"
runner = CliRunner()


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_gavel_trace(tmp_path / "t.trace", [(R18, 3000, 0, 1), (TF, 1500, 10, 4), (R18, 2000, 400, 2)])


def _simulate(trace: Path, out: Path, *extra: str) -> str:
    args = ["simulate", str(trace), "--cluster", "v100:8", "-p", "slurm", "-p", "fifo-max", "-p", "wattplan"]
    result = runner.invoke(app, [*args, "--solver", "greedy", "--no-plots", "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _comparison(out: Path) -> list[dict[str, str]]:
    with (out / "comparison.csv").open() as fh:
        return [{k: v for k, v in r.items() if k not in ("wall_s", "cpu_s")} for r in csv.DictReader(fh)]


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The policies replayed from here on (by name), counted through the replay the session calls."""
    replayed: list[str] = []
    real = session.replay_on_slurm

    def counting(spec, policy, *args, **kwargs):  # type: ignore[no-untyped-def]
        replayed.append(policy)
        return real(spec, policy, *args, **kwargs)

    monkeypatch.setattr(session, "replay_on_slurm", counting)
    return replayed


def test_a_rerun_reads_every_policy_back_with_the_same_figures(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _simulate(trace, out)
    first = _comparison(out)
    power = (out / "wattplan" / "power.csv").read_text()
    assert power.startswith("t0_s,t1_s,power_w\n") and len(power.splitlines()) > 2
    replayed = _count_replays(monkeypatch)
    said = _simulate(trace, out)
    assert replayed == []
    assert said.count("read back from") == 3
    assert _comparison(out) == first
    assert (out / "wattplan" / "power.csv").read_text() == power
    _simulate(trace, out, "--fresh")
    assert replayed == ["slurm", "fifo-max", "wattplan"]
    assert _comparison(out) == first


def test_a_changed_option_or_input_replays_and_a_half_written_folder_is_not_read(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _simulate(trace, out)
    replayed = _count_replays(monkeypatch)
    _simulate(trace, out, "--time-limit", "3")  # wattplan's solve changes; Slurm alone's spec holds it too
    assert replayed == ["slurm", "fifo-max", "wattplan"]
    replayed.clear()
    (out / "fifo-max" / "jobs.csv").unlink()  # as if interrupted while writing fifo-max's files
    summary = json.loads((out / "wattplan" / "summary.json").read_text())
    summary["replay_key"]["inputs"]["trace"] = "0" * 64  # saved from another trace
    (out / "wattplan" / "summary.json").write_text(json.dumps(summary))
    _simulate(trace, out, "--time-limit", "3")
    assert replayed == ["fifo-max", "wattplan"]
    replayed.clear()
    with trace.open("a") as fh:  # the trace changes: every policy replays
        fh.write(f"{R18}\tcmd\t-n\t1\t1000\t500\t1\n")
    _simulate(trace, out, "--time-limit", "3")
    assert replayed == ["slurm", "fifo-max", "wattplan"]
