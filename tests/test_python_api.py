"""The Python API (issue 27): the example of docs/python.md and the README, run as written, asserted on its frames."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import wattplan
from wattplan.planner.contracts.problems import InputError
from wattplan.results import read_results, unpack_nodes_on

ROOT = Path(__file__).resolve().parent.parent


def _example(path: Path) -> str:
    """The first ``python`` code block of a markdown file."""
    found = re.search(r"```python\n(.*?)```", path.read_text(), re.S)
    assert found, f"no python example in {path}"
    return found.group(1)


@pytest.mark.slow
def test_the_documented_example_runs_and_its_frames_hold_up() -> None:
    code = _example(ROOT / "docs" / "python.md")
    assert code in (ROOT / "README.md").read_text(), "the README shows the same example as docs/python.md"
    scope: dict = {}
    exec(compile(code, "docs/python.md", "exec"), scope)  # noqa: S102 (the documented example, run as written)
    result, replay, front, runs = scope["result"], scope["replay"], scope["front"], scope["runs"]
    jobs = result.jobs
    assert len(jobs) == len(result.instance.jobs) and set(jobs.state) <= {"run", "wait"}
    assert jobs.loc[jobs.state == "wait", "reason"].notna().all()
    assert result.summary["energy_j"] == pytest.approx(result.plan.round.energy_j)
    assert list(replay.summary.policy) == ["fifo-max", "wattplan"]
    assert (replay.summary.jobs_completed == 5).all()
    # tidy: one row per round and policy, the rounds' energy adds up to each policy's total
    totals = replay.rounds.groupby("policy")["energy_j"].sum() / 3.6e6
    for _, row in replay.summary.iterrows():
        assert totals[row.policy] == pytest.approx(row.energy_kwh, rel=1e-6)
    assert set(replay.jobs.policy) == {"fifo-max", "wattplan"} and len(replay.jobs) == 10
    assert "nodes_on_v100" in replay.rounds
    assert {"fifo-max", "wattplan-efficiency-delta-0.03"} <= set(front.frontier.label)
    assert set(runs.bench.solver) >= {"highs", "greedy"}
    assert runs.bench.set_index("solver").loc["greedy", "kind"] == "heuristic"
    again = read_results(replay.folder)  # a result reads back from its folder
    pd.testing.assert_frame_equal(again.rounds, replay.rounds)


def test_unpacked_nodes_on() -> None:
    rounds = pd.DataFrame({"nodes_on": ["v100:3 p100:1", "", "p100:2"]})
    out = unpack_nodes_on(rounds)
    assert out.nodes_on_v100.tolist() == [3, 0, 0] and out.nodes_on_p100.tolist() == [1, 0, 2]


def test_read_results_of_something_else_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_results(tmp_path)
    assert exc.value.problems[0].code == "no-results"


def test_unknown_keyword_names_the_commands_options() -> None:
    with pytest.raises(TypeError, match="maxjobs.*max_jobs"):
        wattplan.simulate("6c71a0.trace", cluster="v100:8", maxjobs=3)


def test_bad_input_is_the_commands_report(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        wattplan.simulate("6c71a0.trace", cluster="v100:7", max_jobs=3, out=tmp_path / "o")
    assert "bad-cluster" in str(exc.value)


def test_plan_from_a_job_list(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("id,type,gpus,remaining_steps\na,ResNet-50 (batch size 64),2,100000\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("gpu_types:\n- {name: v100, nodes: [n1]}\n")
    result = wattplan.plan(jobs=jobs, cluster=cluster, time_limit_s=5)
    assert result.jobs.set_index("job").loc["a", "gpus"] == 2
    assert result.instance.extra["hosts"] == {"v100-0": "n1"}


def test_plan_under_a_power_cap_declares_the_override_as_the_command_does() -> None:
    """``power_cap_w`` (W) sets the budget to cap x T (J) and the plan says so, against the instance as given."""
    result = wattplan.plan(power_cap_w=20_000.0, solver="greedy", time_limit_s=5)
    T = result.instance.round.duration_s
    override = result.plan.round.budget_override
    assert override is not None and override.option == "--power-cap-w"
    assert override.budget_j == pytest.approx(20_000.0 * T) == result.plan.round.budget_j
    assert result.plan.round.energy_j <= 20_000.0 * T * (1 + 1e-9)
    with pytest.raises(InputError) as exc:
        wattplan.plan(power_cap_w=20_000.0, budget_j=1e6)
    assert exc.value.problems[0].code == "conflicting-options"
