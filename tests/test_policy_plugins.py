"""Plug-in replay policies (docs/design.md §10.4): a policy from outside the package runs in ``simulate``.

The toy policy lives in a module written to ``tmp_path`` and is published by a tiny ``dist-info`` beside it (an
entry point of ``wattplan.policies``), exactly as an installed package would publish it; ``tmp_path`` is put on
``sys.path`` (and on ``PYTHONPATH`` for spawned workers).
"""

from __future__ import annotations

import csv
import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.control.slurm_replay import PASS_DELAY_REAL_S
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim import policies
from wattplan.planner.sim.policies import (
    BUILTIN_NAMES,
    ENTRY_POINT_GROUP,
    PolicyOptions,
    expand_policy_names,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)

runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"
ROOT = Path(__file__).resolve().parents[1]

TOY_POLICY = textwrap.dedent(
    '''
    """A policy from outside wattplan: every job alone on one GPU of the first type, at its lowest setting."""
    from wattplan.planner.core.assemble import Allocation
    from wattplan.planner.sim.policies import Decision


    class OneGpuLow:
        name = "one-gpu-low"

        def decide(self, instance, context):
            g = instance.gpu_types[0]
            free, out = g.total_gpus, []
            for job in instance.jobs:
                s = min(g.settings)
                if 1 in job.gpus and free >= 1 and instance.profile(job.type, g.name, 1, s) is not None:
                    out.append(Allocation((job.id,), g.name, 1, s))
                    free -= 1
            return Decision(tuple(out), solver="one-gpu-low")


    def make(options):
        return OneGpuLow()


    def make_misnamed(options):
        policy = OneGpuLow()
        policy.name = "something-else"
        return policy


    def make_nothing(options):
        return 42
    '''
)


def install_toy(folder: Path, entries: dict[str, str]) -> None:
    """Write ``toy_policy.py`` and a ``toy_policy-0.1.dist-info`` publishing ``entries`` (name -> object)."""
    (folder / "toy_policy.py").write_text(TOY_POLICY)
    info = folder / "toy_policy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-policy\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{name} = {obj}" for name, obj in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/plugins`` with the toy policy installed and on the path of this process and its children."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    install_toy(
        folder,
        {
            "one-gpu-low": "toy_policy:make",
            "misnamed": "toy_policy:make_misnamed",
            "nothing": "toy_policy:make_nothing",
            "missing": "toy_policy_gone:make",
        },
    )
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", f"{folder}:{ROOT}")
    monkeypatch.delitem(sys.modules, "toy_policy", raising=False)
    return folder


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def test_an_entry_point_policy_is_listed_without_being_imported(plugin_path: Path) -> None:
    assert policy_names()[: len(BUILTIN_NAMES)] == BUILTIN_NAMES
    assert "one-gpu-low" in policy_names()
    assert "toy_policy" not in sys.modules  # listing reads metadata only
    assert expand_policy_names(["all"]) == BUILTIN_NAMES  # all: the built-ins only
    assert expand_policy_names(["all", "one-gpu-low", "fifo-max"]) == (*BUILTIN_NAMES, "one-gpu-low")


def test_an_entry_point_policy_runs_in_simulate(plugin_path: Path, tmp_path: Path) -> None:
    """The toy decides every round of the loop: each job alone on one V100 at its lowest setting (100 W).

    j0 (4,000 steps) is released at its arrival, j1 (3,000, asking for 2 GPUs) and j2 (2,000) at the event round a
    tenth of a 360 s round later, 36 s; each start pays the 1 s launch and the 30 s load, then runs at X(1 GPU,
    100 W): JCT = release - arrival + 31 + steps / X. At the request's 2 GPUs j1 would take 3,000 / X(2, 100 W).
    """
    rows = [(R50, 4000, 0, 1), (R50, 3000, 10, 2), (R50, 2000, 20, 1)]
    trace = write_gavel_trace(tmp_path / "t.trace", rows)
    out = tmp_path / "sim"
    code, output = invoke("simulate", trace, "--cluster", "v100:8", "-p", "one-gpu-low", "-q", "--no-plots", "-o", out)
    assert code == 0, output
    summary = json.loads((out / "one-gpu-low" / "summary.json").read_text())
    assert summary["policy"] == "one-gpu-low" and summary["stop_reason"] == "completed"
    assert summary["completed"] == 3 and summary["requeues"] == 0
    low = next(
        p
        for p in load_profile_library(None).profiles
        if (p.type, p.gpu_type, p.gpus, p.setting) == (R50, "v100", 1, 100)
    )
    with (out / "one-gpu-low" / "jobs.csv").open() as f:
        jct = {row["job_id"]: float(row["jct_s"]) for row in csv.DictReader(f)}
    for (job_id, release), (_, steps, arrival, _) in zip((("j0", 0.0), ("j1", 36.0), ("j2", 36.0)), rows, strict=True):
        start = release - arrival + PASS_DELAY_REAL_S  # Slurm's pass after the release
        assert jct[job_id] == pytest.approx(start + 31.0 + steps / low.steps_per_s, rel=1e-9), job_id
    assert "toy_policy" in sys.modules  # loaded when it was made


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_a_plugin_runs_beside_a_builtin_in_spawned_workers(plugin_path: Path, tmp_path: Path) -> None:
    trace = write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 2), (R50, 3000, 10, 2)])
    out = tmp_path / "sim"
    args = ["-p", "fifo-max", "-p", "one-gpu-low", "--workers", "2", "-q", "--no-plots", "-o", out]
    code, output = invoke("simulate", trace, "--cluster", "v100:8", *args)
    assert code == 0, output
    for policy in ("one-gpu-low", "fifo-max"):
        summary = json.loads((out / policy / "summary.json").read_text())
        assert summary["policy"] == policy and summary["completed"] == 2, policy


def test_an_unknown_policy_names_the_registered_ones(plugin_path: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        expand_policy_names(["fifo-max", "nope"])
    (problem,) = exc.value.problems
    assert problem.path == "--policy[1]" and "'nope'" in problem.message
    assert "fifo-max" in problem.message and "one-gpu-low" in problem.message
    trace = write_gavel_trace(tmp_path / "t.trace", [(R50, 4000, 0, 1)])
    code, output = invoke("simulate", trace, "--cluster", "v100:8", "-p", "nope", "-q", "-o", tmp_path / "o")
    assert code == 2 and "one-gpu-low" in output and "Traceback" not in output


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("misnamed", "whose name is 'something-else'"),
        ("nothing", "made 42"),
        ("missing", "cannot be loaded: ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_is_an_error_naming_it(plugin_path: Path, name: str, says: str) -> None:
    with pytest.raises(InputError) as exc:
        make_policy(name)
    (problem,) = exc.value.problems
    assert problem.code == "bad-policy-plugin" and f"policy {name!r}" in problem.path and says in problem.message


def test_register_policy_in_process() -> None:
    class Named:
        name = "mine"

        def decide(self, instance: object, context: object) -> policies.Decision:
            return policies.Decision((), solver="mine")

    made: list[PolicyOptions] = []

    def factory(options: PolicyOptions) -> policies.Policy:
        made.append(options)
        return Named()

    register_policy("mine", factory)
    try:
        options = PolicyOptions(zeus_eta=0.25)
        assert "mine" in policy_names() and make_policy("mine", options).name == "mine"
        assert made == [options]  # the factory gets the replay's options
        with pytest.raises(ValueError, match="registered already"):
            register_policy("mine", factory)
        with pytest.raises(ValueError, match="built-in"):
            register_policy("zeus", factory)
        with pytest.raises(ValueError, match="reserved"):
            register_policy("all", factory)
        with pytest.raises(ValueError, match="one word"):
            register_policy("a,b", factory)
    finally:
        unregister_policy("mine")
    assert "mine" not in policy_names()
    with pytest.raises(ValueError, match="unknown policy 'mine'; choose from all, fifo-max"):
        make_policy("mine")
