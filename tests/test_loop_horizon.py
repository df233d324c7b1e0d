"""``--horizon H`` on the one control loop: ``wattplan agent --horizon`` and ``simulate --horizon``.

The agent's policies plan each round with the ``H``-round model (docs/design.md §5.14), round 0 executed: the
option is the solve options' (one declaration), it reaches the loop's request, and a replay on the simulated Slurm
plans through :func:`formulations.horizon_solve.solve_horizon`, whose fallback rounds the round report names.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import wattplan.formulations.horizon_solve as horizon_solve
import wattplan.formulations.solve as solve_module
from wattplan.formulations.backends import Solvers
from wattplan.formulations.horizon_solve import OneRound
from wattplan.planner.agent.loop import AgentConfig
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.cli import app
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.control.slurm_replay import replay_on_slurm
from wattplan.planner.planning import is_one_round_fallback
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.session import replay_spec

JOBS = [
    ("ResNet-18 (batch size 32)", 4, 6000, 0.0),
    ("ResNet-50 (batch size 128)", 4, 1500, 10.0),
    ("Transformer (batch size 128)", 8, 1200, 20.0),
    ("ResNet-18 (batch size 32)", 2, 3000, 30.0),
]
"""Four jobs that do not all fit ``v100:8`` at once, so a round has a choice to make."""


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.trace"
    path.write_text("".join(f"{k}\tcmd\t-n\t1\t{s}\t{a}\t{g}\n" for k, g, s, a in JOBS))
    return path


def _planned_lines(log: str) -> list[str]:
    """The agent's round lines of the rounds it planned (``plan runs N (STATUS by SOLVER)``, not ``(idle)``)."""
    return [line for line in log.splitlines() if "plan runs" in line and " by " in line]


def test_the_agent_takes_a_horizon_and_refuses_0_and_9_naming_it() -> None:
    options = AgentOptions.checked(horizon=2)
    assert options.request().horizon == 2 and AgentOptions().request().horizon == 1
    assert AgentConfig.of(options, load_profile_library(None)).request.horizon == 2
    for bad in (0, 9):
        with pytest.raises(InputError) as err:
            AgentOptions.checked(horizon=bad)
        assert [(p.path, p.message) for p in err.value.problems] == [
            ("horizon (--horizon)", f"must be in [1, 8] rounds, got {bad}")
        ]
        result = CliRunner().invoke(app, ["agent", "--horizon", str(bad), "--dry-run"], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and "--horizon" in result.output, result.output


def test_a_replay_on_the_simulated_slurm_plans_every_round_with_the_horizon_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``simulate --horizon 2``: every job finishes and every planned round went through the 2-round model."""
    solved: list[tuple[int, bool]] = []
    real = solve_module.solve_horizon

    def spy(inst: Instance, req: PlanRequest, started_at: float, solvers: Solvers, one_round: OneRound) -> Plan:
        plan = real(inst, req, started_at, solvers, one_round)
        solved.append((req.horizon, is_one_round_fallback(plan)))
        return plan

    monkeypatch.setattr(solve_module, "solve_horizon", spy)
    out = tmp_path / "out"
    args = ["simulate", str(_trace(tmp_path)), "--cluster", "v100:8", "-p", "wattplan", "--horizon", "2"]
    result = CliRunner().invoke(app, [*args, "--no-plots", "-o", str(out)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "wattplan" / "summary.json").read_text())
    assert (summary["engine"], summary["completed"], summary["stop_reason"]) == ("slurm", len(JOBS), "completed")
    planned = _planned_lines((out / "wattplan" / "agent.log").read_text())
    assert planned and len(solved) == len(planned)
    assert solved == [(2, False)] * len(planned)  # the horizon model answered each round: no fallback
    assert not any("+one-round" in line for line in planned)


def test_the_round_report_names_a_fallback_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round the horizon model does not answer runs the one-round plan, ``by cbc+one-round`` in the agent's log."""
    monkeypatch.setattr(horizon_solve, "unsolved", lambda plan: "not solved (forced by the test)")
    spec = replay_spec(_trace(tmp_path), "v100:8", SimulateOptions.checked(horizon=2), ["wattplan"])
    result = replay_on_slurm(replace(spec, max_rounds=3), "wattplan", out=tmp_path / "out")
    planned = _planned_lines((tmp_path / "out" / "wattplan" / "agent.log").read_text())
    assert result.summary["rounds"] == 3 and planned
    assert all("by cbc+one-round)" in line for line in planned), planned
