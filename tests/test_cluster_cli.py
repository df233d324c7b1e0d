"""``wattplan cluster`` and ``wattplan agent`` refuse a folder that holds no emulated cluster with a clear error."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from wattplan.planner.cli import app


def test_commands_on_a_folder_without_a_cluster_say_so(tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["cluster", "down"], ["cluster", "report"], ["cluster", "submit", "6c71a0.trace"]):
        result = runner.invoke(app, [*args, "--dir", str(tmp_path)])
        assert result.exit_code in (1, 2), (args, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output
        assert "cluster.json" in result.output, (args, result.output)
    result = runner.invoke(app, ["agent", "--cluster", str(tmp_path)])
    assert result.exit_code == 1 and "no cluster.json; start one with wattplan cluster up" in result.output


def test_agent_refuses_a_bad_start_time_by_name(tmp_path: Path) -> None:
    runner = CliRunner()
    for bad in ("-1", "nan"):
        result = runner.invoke(app, ["agent", "--cluster", str(tmp_path), "--start-s", bad])
        assert result.exit_code in (1, 2) and "--start-s" in result.output, result.output
        assert "Traceback" not in result.output


def test_agent_checks_its_solver_options_before_it_reads_the_cluster(tmp_path: Path) -> None:
    """A bad --node-limit or --solver is named at once (exit 2), not at the first round of a running loop."""
    runner = CliRunner()
    for args, named in (
        (["--solver", "greedy", "--node-limit", "5"], "node_limit (--node-limit)"),
        (["--solver", "highs", "--node-limit", "0"], "node_limit (--node-limit)"),
        (["--solver", "nosuch"], "solver (--solver)"),
    ):
        result = runner.invoke(app, ["agent", "--cluster", str(tmp_path), *args])
        assert result.exit_code == 2 and named in result.output, (args, result.output)
        assert "cluster.json" not in result.output and "Traceback" not in result.output
