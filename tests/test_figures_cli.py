"""The figure options of ``simulate`` and ``frontier``, frontier's coverage of simulate's options, the mode hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.cli import PROGRESS_MODE_HINT, SWEEP_ONLY_OPTIONS

runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"


def run(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    return write_gavel_trace(tmp_path / "tiny.trace", rows)


def option_names(command: str) -> set[str]:
    """Every option string of ``command`` (``--plots`` and ``--no-plots`` alike), from its click definition."""
    group = typer.main.get_command(app)
    params = group.commands[command].params  # type: ignore[attr-defined]
    return {name for p in params if p.param_type_name == "option" for name in (*p.opts, *p.secondary_opts)}


def test_frontier_accepts_every_simulate_option_but_the_swept_ones() -> None:
    simulate, frontier = option_names("simulate"), option_names("frontier")
    missing = simulate - frontier
    # --policy (and -p): frontier replays wattplan and --baselines; --delta: frontier sweeps --deltas
    assert missing == {*SWEEP_ONLY_OPTIONS, "-p"}
    for name in ("--zeus-eta", "--noise", "--truth", "--learn", "--tail-bound", "--plot-format", "--dpi", "--format"):
        assert name in frontier


@pytest.mark.slow
def test_frontier_passes_the_new_options_to_every_point(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "front"
    result = run(
        "frontier", tiny_trace, "--cluster", "v100:8", "--deltas", "0.1", "--max-jct-increase", "5",
        "--baselines", "zeus", "--solver", "greedy", "--workers", "1", "--noise", "0.05", "--zeus-eta", "0.3",
        "--restart-s", "20", "--threads", "1", "--plot-format", "svg", "--format", "json", "-q", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "frontier.svg").read_bytes().startswith(b"<?xml")
    assert not (out / "frontier.png").exists()
    rows = json.loads((out / "frontier.json").read_text())
    assert {r["label"] for r in rows} == {"zeus", "wattplan-progress", "wattplan-efficiency-delta-0.1",
                                          "wattplan-efficiency-jct+5%"}  # fmt: skip
    for r in rows:
        assert not r.get("error"), r
        spec = r["frontier_spec"]
        assert (spec["noise"], spec["rules"]["restart_s"], spec["policy_options"]["zeus_eta"]) == (0.05, 20.0, 0.3)
    answer = json.loads(result.stdout)
    assert {r["label"] for r in answer["frontier"]} == {r["label"] for r in rows}


def test_frontier_without_plots_writes_no_figure(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "front"
    args = ("--deltas", "0.1", "--max-jct-increase", "5", "--baselines", "fifo-max", "--solver", "greedy")
    result = run("frontier", tiny_trace, "--cluster", "v100:8", *args, "--workers", "1", "--no-plots", "-q", "-o", out)
    assert result.exit_code == 0, result.output
    assert (out / "frontier.csv").is_file() and not list(out.glob("frontier.png"))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pdf", "svg"])
def test_simulate_writes_figures_in_the_asked_format(tmp_path: Path, tiny_trace: Path, fmt: str) -> None:
    out = tmp_path / "out"
    args = ("-p", "fifo-max", "-p", "eaco", "--power-cap-w", "3000", "--plot-format", fmt, "-q", "-o", out)
    result = run("simulate", tiny_trace, "--cluster", "v100:8", *args)
    assert result.exit_code == 0, result.output
    for stem in ("power", "jct_cdf", "energy_jct"):
        assert (out / f"{stem}.{fmt}").stat().st_size > 0
        assert not (out / f"{stem}.png").exists()


def test_bad_dpi_is_refused_before_any_replay(tmp_path: Path, tiny_trace: Path) -> None:
    out = tmp_path / "out"
    result = run("simulate", tiny_trace, "--cluster", "v100:8", "-p", "fifo-max", "--dpi", "10", "-q", "-o", out)
    assert result.exit_code == 2 and "--dpi" in result.output and "[50, 1200]" in result.output
    assert not out.exists()
    front = run("frontier", tiny_trace, "--cluster", "v100:8", "--dpi", "5000", "-o", out)
    assert front.exit_code == 2 and "--dpi" in front.output


def test_simulate_without_objective_names_the_mode_and_the_energy_modes(tmp_path: Path, tiny_trace: Path) -> None:
    base = ("simulate", tiny_trace, "--cluster", "v100:8", "--solver", "greedy", "--no-plots", "-q")
    plain = run(*base, "-o", tmp_path / "a")
    assert plain.exit_code == 0, plain.output
    assert "--objective progress" in plain.stderr and "--objective efficiency --max-jct-increase 3" in plain.stderr
    assert "wattplan frontier" in plain.stderr
    assert " ".join(PROGRESS_MODE_HINT.split()) in " ".join(plain.stderr.split())
    chosen = run(*base, "--objective", "progress", "-o", tmp_path / "b")
    assert chosen.exit_code == 0 and "wattplan frontier" not in chosen.output
    baseline_only = run("simulate", tiny_trace, "--cluster", "v100:8", "-p", "fifo-max", "--no-plots", "-q",
                        "-o", tmp_path / "c")  # fmt: skip
    assert baseline_only.exit_code == 0 and "wattplan frontier" not in baseline_only.output
