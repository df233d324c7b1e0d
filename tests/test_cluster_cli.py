"""``wattplan cluster`` and ``wattplan agent``: a folder without an emulated cluster is refused, options by record.

A folder that holds no emulated cluster is refused with a clear error; the commands' options are records
(``planner.agent.options``, ``planner.cluster.options``), which the agent's loop reads too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattplan.planner.cli import app
from wattplan.planner.contracts.problems import InputError


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


def test_the_loop_reads_the_agents_option_record() -> None:
    """``wattplan agent``'s options are one record; the loop's configuration is built from it, defaults included."""
    from dataclasses import replace

    from wattplan.planner.agent.loop import AgentConfig
    from wattplan.planner.agent.options import AgentOptions
    from wattplan.planner.agent.trust import Allowed
    from wattplan.planner.contracts.request import REPLAY_REQUEST
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.sim.governor import Steering

    library = load_profile_library(None)
    defaults = AgentOptions()
    by_job = AgentConfig(library, defaults.rules(), defaults.request(), pairs=False)  # no pairs by default
    assert AgentConfig.of(defaults, library) == by_job
    assert defaults.request() == REPLAY_REQUEST and defaults.rules().objective == "energy"  # the by-job mode
    given = AgentOptions.checked(
        {"mode": "steered", "max_jct_increase": 5, "pairs": True, "event_rounds": False, "start_s": 2, "max_rounds": 3,
         "learn": True, "node_power_w": 150, "dry_run": True, "until_idle": True, "allow_user": ["alice"],
         "objective": "energy", "round_s": 60, "restart_s": 10, "delta": 0.1, "solver": "greedy", "time_limit_s": 2,
         "seed": 7, "governor": "projected", "delta_max": 0.2, "tail_bound": 10, "tail_pace": "fastest",
         "signal_aware": False, "poll_s": 0.2}
    )  # fmt: skip
    config = AgentConfig.of(given, library)
    assert config.steering == Steering(0.05, "projected", 0.2, False, 0.1, "fastest")  # the replay's record
    assert config.pairs and not config.event_rounds and config.learn
    assert (config.start_s, config.max_rounds, config.node_power_w, config.poll_s) == (2.0, 3, 150.0, 0.2)
    assert config.dry_run and config.until_idle and config.allowed == Allowed(frozenset({"alice"}))
    assert config.rules == RoundRules(60.0, 10.0, 0.5, "energy", 0.1)
    assert config.request == replace(REPLAY_REQUEST, solver="greedy", time_limit_s=2.0, seed=7)
    fixed = AgentConfig.of(AgentOptions(mode="steered", jct_bound=False), library)
    assert fixed.steering.max_increase is None and fixed.rules.objective == "progress"
    assert AgentOptions(mode="steered").steering() == Steering(0.03, "projected")  # the steered mode's default
    assert defaults.steering() == Steering(None, "projected")  # the by-job mode: no governor
    seeds = AgentConfig.of(
        AgentOptions.checked({"policy": "eaco", "zeus_eta": 0.3, "power_cap_w": 9000, "periodic_rounds": False}),
        library,
    )
    assert (seeds.policy, seeds.zeus_eta, seeds.power_cap_w) == ("eaco", 0.3, 9000.0)
    assert seeds.pairs and not seeds.periodic_rounds  # co-location is EaCO's lever
    with pytest.raises(InputError) as err:
        AgentOptions.checked({"event_rounds": False, "periodic_rounds": False})
    assert "--periodic-rounds" in str(err.value.problems[0])


def test_the_agent_runs_the_operators_baselines_by_the_names_simulate_gives_them() -> None:
    """``agent --policy slurm|slurm-powersave|maxq``: the loop's policy and power saving, as the replay names them."""
    from wattplan.planner.agent.loop import AgentConfig
    from wattplan.planner.agent.options import AGENT_BASELINES, AgentOptions
    from wattplan.planner.control.slurm_replay import SLURM_BASELINES
    from wattplan.planner.profile_library.library import load_profile_library

    library = load_profile_library(None)
    assert set(AGENT_BASELINES) == set(SLURM_BASELINES)
    expected = {"slurm": ("fifo-max", False), "slurm-powersave": ("fifo-max", True), "maxq": ("fifo-maxq", True)}
    for name, (policy, power_save) in expected.items():
        config = AgentConfig.of(AgentOptions.checked({"policy": name}), library)
        assert (config.policy, config.power_save, config.pairs) == (policy, power_save, False), name
    assert AgentConfig.of(AgentOptions.checked({"policy": "fifo-max", "power_save": True}), library).power_save
    with pytest.raises(InputError) as err:
        AgentOptions.checked({"policy": "slurm", "power_save": True})
    assert "slurm-powersave" in str(err.value.problems[0]) and "--power-save" in str(err.value.problems[0])
    result = CliRunner().invoke(app, ["agent", "--cluster", "/nonexistent", "--policy", "slurmish"])
    assert result.exit_code == 2 and "slurm-powersave" in result.output and "Traceback" not in result.output


def test_the_agent_and_cluster_options_name_each_bad_value_both_ways(tmp_path: Path) -> None:
    """The record's check on the command line: every problem names the option's field and flag, exit 2."""
    runner = CliRunner()
    for args, named in (
        (["agent", "--cluster", str(tmp_path), "--restart-s", "400"], "restart_s (--restart-s)"),
        (["agent", "--cluster", str(tmp_path), "--max-jct-increase", "2000"], "max_jct_increase (--max-jct-increase)"),
        (["agent", "--cluster", str(tmp_path), "--node-power-w", "-1"], "node_power_w (--node-power-w)"),
        (["cluster", "up", "--dir", str(tmp_path / "c"), "--gpus-per-node", "0"], "gpus_per_node (--gpus-per-node)"),
        (["cluster", "submit", "6c71a0.trace", "--dir", str(tmp_path), "--max-jobs", "0"], "max_jobs (--max-jobs)"),
    ):
        result = runner.invoke(app, args)
        printed = " ".join(result.output.split())
        assert result.exit_code == 2 and named in printed, (args, result.output)
        assert "cluster.json" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "c").exists()


def test_a_folder_too_long_for_slurms_step_sockets_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    """A folder too long for ``FOLDER/slurm/spool/NODE/NODE_JOBID.STEPID`` is refused, naming --dir, nothing made.

    Over 107 bytes slurmstepd cannot bind that socket: every job failed at launch and was requeued held for good
    (seen with a benchmark's 80-character folder).
    """
    folder = tmp_path / ("x" * max(1, 70 - len(str(tmp_path))))
    result = CliRunner().invoke(app, ["cluster", "up", "--dir", str(folder), "--gpus", "v100:8"], terminal_width=200)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "--dir" in said and "step sockets" in said and "choose a shorter path" in said
    assert not folder.exists()


def test_the_first_submission_waits_for_the_clusters_clock(tmp_path: Path) -> None:
    """``--first-at-s``: the first job is submitted when the cluster's clock reads it (emulated s since ``up``).

    The next follows at its trace offset after it; a clock already past it submits at once. A stand-in ``sbatch``
    only prints a job id, so ``submitted.csv``'s ``arrival_s`` is the cluster's clock at each submission.
    """
    import csv
    import json
    import time

    from wattplan.planner.cluster.layout import ClusterLayout
    from wattplan.planner.cluster.submit import Submission, run_submitter

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho $$\n")
    sbatch.chmod(0o755)
    scale = 60.0
    layout = ClusterLayout(tmp_path / "cluster")
    layout.root.mkdir()
    for first_at, t0_ago, expect in ((120.0, 0.5, 120.0), (30.0, 1.0, 60.0)):  # 90 emulated s ahead; 30 s behind
        t0 = time.time() - t0_ago
        manifest = {"t0_unix": t0, "time_scale": scale, "slurm_conf": "/dev/null", "slurm_bin": str(bin_dir)}
        manifest["gpus_per_node"] = 8
        layout.manifest.write_text(json.dumps(manifest))
        out = layout.submit_dir / "submitted.csv"
        out.unlink(missing_ok=True)
        layout.submit_dir.mkdir(parents=True, exist_ok=True)
        jobs = [Submission("j0", "A3C", 1, 10, 0.0), Submission("j1", "A3C", 1, 10, 60.0)]
        assert run_submitter(layout, jobs, managed=True, first_at_s=first_at) == 0
        with out.open() as f:
            arrivals = [float(r["arrival_s"]) for r in csv.DictReader(f)]
        # one real second of slack (60 emulated s) for a busy machine, after the due time only
        assert expect - 1.0 <= arrivals[0] <= expect + scale, (first_at, arrivals)
        assert arrivals[1] - arrivals[0] >= 60.0 - 1.0, arrivals
