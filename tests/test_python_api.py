"""The Python API (issue 27): the example of docs/python.md and the README, run as written, asserted on its frames."""

from __future__ import annotations

import re
import tempfile
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


def test_the_readme_shows_the_documented_example() -> None:
    """The README and docs/python.md show one example; tests/test_script_faces.py runs it as a script."""
    code = _example(ROOT / "docs" / "python.md")
    assert code in (ROOT / "README.md").read_text(), "the README shows the same example as docs/python.md"


def test_plan_jobs_count_gpus_in_whole_numbers() -> None:
    """Issue 42: ``gpus`` was a float column (``2.0``), NaN where a job waits."""
    jobs = wattplan.plan(solver="greedy", power_cap_w=3000.0).jobs
    assert {str(jobs[c].dtype) for c in ("requested_gpus", "gpus")} == {"Int64"}
    running, waiting = jobs[jobs.state == "run"], jobs[jobs.state == "wait"]
    assert len(running) and len(waiting)
    assert (running.gpus >= 1).all() and waiting.gpus.isna().all()
    assert all(type(g) is int for g in running.gpus.tolist())


def test_plan_summary_is_a_pandas_series_like_the_other_results() -> None:
    """Issue 42: ``summary`` was a dict among DataFrames; a Series keeps ``summary["energy_j"]``."""
    result = wattplan.plan(solver="greedy")
    assert isinstance(result.summary, pd.Series)
    assert result.summary["energy_j"] == result.plan.round.energy_j and result.summary["status"] == "feasible"


def test_a_failed_frontier_replay_raises_and_nothing_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: a failed replay came back as a row of NaN energies, and the call returned as if it had worked."""
    from dataclasses import replace

    from wattplan.planner.control import frontier as on_slurm
    from wattplan.planner.sim import frontier as fr

    real = on_slurm.replay_slurm_point

    def failing(point: fr.FrontierPoint) -> tuple[dict, object]:
        if point.label == "wattplan-progress":
            raise RuntimeError("the solver exploded")
        return real(point)

    # one worker replays in this process: the patched replay of each point applies
    monkeypatch.setattr(on_slurm, "SLURM_ENGINE", replace(on_slurm.SLURM_ENGINE, replay=failing))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the call's temporary folder goes
    with pytest.raises(fr.ReplayFailed) as caught:
        wattplan.frontier(
            "6c71a0.trace", cluster="v100:8", start_s=2510560, max_jobs=3, solver="greedy", deltas=[],
            max_jct_increase=[], baselines="fifo-max", workers=1,
        )  # fmt: skip
    assert caught.value.failed == [("wattplan-progress", "RuntimeError: the solver exploded")]
    assert "give an output folder" in str(caught.value)  # the temporary folder is gone: nothing to resume
    assert list(tmp_path.iterdir()) == []


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


# --- issue 41: the API checks what the command line checks ---------------------------------------------------


def _job_list(folder: Path) -> tuple[Path, Path]:
    jobs = folder / "jobs.csv"
    jobs.write_text("id,type,gpus,remaining_steps\na,ResNet-50 (batch size 64),2,100000\n")
    cluster = folder / "cluster.yaml"
    cluster.write_text("gpu_types:\n- {name: v100, nodes: [n1]}\n")
    return jobs, cluster


def test_an_instance_built_in_python_is_checked_as_a_file_is() -> None:
    """A job asking for -3 GPUs was planned (exit-0 equivalent); a field of the wrong type crashed a solver."""
    import dataclasses

    from wattplan.planner.contracts.instance_io import load_instance

    inst = load_instance(wattplan.default_instance())
    bad = dataclasses.replace(inst, jobs=(dataclasses.replace(inst.jobs[0], requested_gpus=-3), *inst.jobs[1:]))
    with pytest.raises(InputError) as exc:
        wattplan.plan(bad, solver="greedy")
    assert [p.path for p in exc.value.problems] == ["jobs[0].requested_gpus"]
    broken = dataclasses.replace(inst, jobs=(dataclasses.replace(inst.jobs[0], gpus=None), *inst.jobs[1:]))
    with pytest.raises(InputError):
        wattplan.plan(broken, solver="greedy")
    with pytest.raises(InputError) as exc:
        wattplan.plan(42, solver="greedy")  # type: ignore[arg-type]
    assert [p.path for p in exc.value.problems] == ["instance"]
    assert wattplan.plan(inst, solver="greedy").instance is inst  # a good one is planned as given


def test_budget_options_are_checked_and_named() -> None:
    """A negative or NaN budget came back as ``InvalidPlanError`` ('greedy produced an invalid plan')."""
    for keywords, name in (({"budget_j": -1.0}, "budget_j"), ({"power_cap_w": float("nan")}, "power_cap_w")):
        with pytest.raises(InputError) as exc:
            wattplan.plan(solver="greedy", **keywords)
        label = f"{name} (--{name.replace('_', '-')})"  # named as the record names it, both ways
        assert [(p.code, p.path) for p in exc.value.problems] == [("bad-option", label)]


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"time_limit_s": "2"}, "time_limit_s"),  # TypeError: '<' not supported between 'int' and 'str'
        ({"threads": None}, "threads"),
        ({"solver": b""}, "solver"),
        ({"budget_j": []}, "budget_j"),
        ({"profiles": {}}, "profiles"),
    ],
)
def test_a_keyword_of_the_wrong_kind_is_named(keywords: dict, name: str) -> None:
    with pytest.raises(wattplan.InputError) as exc:  # the API's documented error
        wattplan.plan(**{"solver": "greedy", **keywords})
    assert [(p.code, p.path.split()[0]) for p in exc.value.problems] == [("bad-option", name)]


def test_a_request_of_the_wrong_kind_is_named() -> None:
    """A :class:`PlanRequest` built in Python is checked for kinds before ranges (no ``TypeError``)."""
    from wattplan.planner.contracts.request import PlanRequest
    from wattplan.planner.planning import request_problems

    request = PlanRequest(solver="greedy", time_limit_s="5", threads=2.5, seed=True)  # type: ignore[arg-type]
    assert [p.path.split()[0] for p in request_problems(request)] == ["time_limit_s", "threads", "seed"]


def test_job_list_keywords_are_named(tmp_path: Path) -> None:
    jobs, cluster = _job_list(tmp_path)
    with pytest.raises(InputError) as exc:  # was a bare ValueError
        wattplan.plan(jobs=jobs, solver="greedy")
    assert [p.path for p in exc.value.problems] == ["cluster"]
    with pytest.raises(InputError) as exc:
        wattplan.plan(wattplan.default_instance(), profiles=tmp_path / "lib.json", solver="greedy")
    assert exc.value.problems[0].code == "conflicting-options"


def test_write_never_replaces_the_files_the_plan_was_made_from(tmp_path: Path) -> None:
    """``PlanResult.write(instance_path)`` replaced the instance file with the plan (the CLI refuses it)."""
    inst = tmp_path / "round.json"
    inst.write_bytes(wattplan.default_instance().read_bytes())
    before = inst.read_bytes()
    result = wattplan.plan(inst, solver="greedy")
    with pytest.raises(InputError) as exc:
        result.write(inst)
    assert [(p.code, p.path) for p in exc.value.problems] == [("output-is-input", "plan_path")]
    with pytest.raises(InputError) as exc:
        result.write(tmp_path / "p.json", tmp_path / "p.json")
    assert [(p.code, p.path) for p in exc.value.problems] == [("same-output", "instance_path")]
    assert inst.read_bytes() == before and not (tmp_path / "p.json").exists()
    jobs, cluster = _job_list(tmp_path)
    from_jobs = wattplan.plan(jobs=jobs, cluster=cluster, solver="greedy")
    for path in (jobs, cluster):
        with pytest.raises(InputError):
            from_jobs.write(tmp_path / "plan.json", path)
    assert not (tmp_path / "plan.json").exists()
    result.write(tmp_path / "plan.json", tmp_path / "instance.json")
    assert (tmp_path / "plan.json").exists() and (tmp_path / "instance.json").exists()


def test_replay_inputs_are_named_and_a_failure_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad replay input is an ``InputError`` naming it; a failed call without ``out`` leaves no temporary folder.

    A missing trace raised ``FileNotFoundError``, ``cluster=None`` ``AttributeError``, and each failed call without
    ``out`` left an empty ``wattplan-simulate-*`` folder behind.
    """
    import tempfile
    import warnings

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    with pytest.raises(InputError) as exc:
        wattplan.simulate(tmp_path / "missing.trace", cluster="v100:8", policies=["fifo-max"])
    assert exc.value.source == str(tmp_path / "missing.trace")
    with pytest.raises(InputError) as exc:
        wattplan.simulate("6c71a0.trace", cluster=None, policies=["fifo-max"])  # type: ignore[arg-type]
    assert [p.path for p in exc.value.problems] == ["--cluster"]
    with pytest.raises(InputError) as exc:  # policies=None is Slurm alone and wattplan; none at all is refused
        wattplan.simulate("6c71a0.trace", cluster="v100:8", policies=[])
    assert [p.path for p in exc.value.problems] == ["--policy"]
    with pytest.raises(InputError) as exc:
        wattplan.simulate("6c71a0.trace", cluster="v100:8", max_rounds=[], round_s="360")  # type: ignore[arg-type]
    assert [p.path for p in exc.value.problems] == ["round_s (--round-s)", "max_rounds (--max-rounds)"]
    with pytest.raises(InputError) as exc:
        wattplan.bench(wattplan.default_instance(), solvers=None, seeds=1.5)  # type: ignore[arg-type]
    assert [p.path for p in exc.value.problems] == ["solvers (--solvers)", "seeds (--seeds)"]
    with pytest.raises(InputError) as exc:
        wattplan.frontier(tmp_path / "missing.trace", cluster="v100:8")
    with pytest.raises(InputError), warnings.catch_warnings():  # fails once the temporary folder was made
        warnings.simplefilter("ignore")  # the long-replay warning
        wattplan.simulate("6c71a0.trace", cluster="v100:8", policies=["fifo-max"], max_jobs=2, workers=0)
    assert list(temporary.iterdir()) == []


def test_read_results_of_a_damaged_summary_names_the_file(tmp_path: Path) -> None:
    """A summary.json that is not an object raised ``AttributeError``; broken JSON a ``JSONDecodeError``."""
    summary = tmp_path / "summary.json"
    for content in ("[1, 2]", "{not json"):
        summary.write_text(content)
        with pytest.raises(InputError) as exc:
            read_results(tmp_path)
        assert exc.value.source == str(summary)
