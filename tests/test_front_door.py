"""The one front door, :func:`planner.planning.plan`: solver names, request checks, statuses.

Regression tests for what a hostile user found: ``greedy`` offered by ``simulate`` but unknown
to the solver path, ``--export-model`` silently ignored with greedy, out-of-range options
accepted with exit 0, and a plan marked ``optimal`` with a gap far above the requested one.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.formulations import stages as stages_module
from wattplan.formulations.backends import SolverResult, backend_features
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import instance_sha256, instance_to_doc, load_instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import DEFAULT_REQUEST, REPLAY_REQUEST, PlanRequest
from wattplan.planner.core.validate import validate_plan
from wattplan.planner.files.resources import default_instance
from wattplan.planner.planning import Planner, plan, request_problems

runner = CliRunner()


@pytest.fixture(scope="module")
def inst() -> Instance:
    return load_instance(default_instance())


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"time_limit_s": -1.0}, "time_limit_s (--time-limit)"),
        ({"time_limit_s": 0.0}, "time_limit_s (--time-limit)"),
        ({"time_limit_s": float("nan")}, "time_limit_s (--time-limit)"),
        ({"rel_gap": -1.0}, "rel_gap (--gap)"),
        ({"rel_gap": 2.0}, "rel_gap (--gap)"),
        ({"threads": 0}, "threads (--threads)"),
        ({"seed": -3}, "seed (--seed)"),
        ({"solver": "gurobi"}, "solver (--solver)"),
        ({"export_model": Path("m.txt")}, "export_model (--export-model)"),
        ({"solver": "greedy", "export_model": Path("m.mps")}, "export_model (--export-model)"),
        ({"node_limit": 0}, "node_limit (--node-limit)"),
        ({"solver": "cpsat", "node_limit": 10}, "node_limit (--node-limit)"),
        ({"solver": "greedy", "node_limit": 10}, "node_limit (--node-limit)"),
    ],
)
def test_a_bad_request_is_refused_naming_the_option(inst: Instance, change: dict, path: str) -> None:
    request = replace(DEFAULT_REQUEST, **change)
    assert [p.path for p in request_problems(request)] == [path]
    with pytest.raises(InputError):
        plan(inst, request)


def test_the_defaults_are_valid() -> None:
    assert request_problems(DEFAULT_REQUEST) == [] and request_problems(REPLAY_REQUEST) == []
    # The default proves its plans with a bound of its own; a replay reads no bound and takes the fastest.
    default = backend_features(DEFAULT_REQUEST.solver)
    assert DEFAULT_REQUEST.solver == "highs" and default is not None and default.bound
    assert REPLAY_REQUEST.solver == "cbc"


def test_greedy_is_a_solver_of_the_front_door(inst: Instance) -> None:
    p = plan(inst, PlanRequest(solver="greedy"))
    assert p.round.solver == "greedy" and p.round.status == "feasible"
    assert validate_plan(inst, p) == []
    assert "greedy" in p.round.report.heuristics


@pytest.mark.parametrize(
    "args",
    [
        ("--time-limit", "-1"),
        ("--gap", "-1"),
        ("--gap", "2"),
        ("--threads", "0"),
        ("--solver", "greedy", "--export-model", "m.mps"),
        ("--solver", "cpsat", "--export-model", "m.mps"),
    ],
)
def test_plan_refuses_bad_options_with_exit_2_and_writes_nothing(tmp_path: Path, args: tuple[str, ...]) -> None:
    out = tmp_path / "plan.json"
    result = run("plan", "--out", out, *[a.replace("m.mps", str(tmp_path / "m.mps")) for a in args])
    assert result.exit_code == 2, result.output
    assert not out.exists() and not (tmp_path / "m.mps").exists()


def test_plan_without_an_instance_plans_the_shipped_default(tmp_path: Path) -> None:
    result = run("plan", "--solver", "greedy", "--out", tmp_path / "p.json", "-q")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "p.json").exists()


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    """Three short jobs for ``v100:8``: a replay of a few rounds."""
    from tests.sim_helpers import A3C, R50, write_gavel_trace

    return write_gavel_trace(tmp_path / "tiny.trace", [(R50, 4000, 0, 1), (A3C, 9000, 0, 1), (A3C, 5000, 100, 2)])


def planned_rounds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[PlanRequest, Plan]]:
    """Every round the front door plans from here on (``Planner.plan``, the ``wattplan`` policy's): request and plan."""
    seen: list[tuple[PlanRequest, Plan]] = []
    real = Planner.plan

    def spy(self: Planner, instance: Instance, started_at: float | None = None) -> Plan:
        planned = real(self, instance, started_at)
        seen.append((self.request, planned))
        return planned

    monkeypatch.setattr(Planner, "plan", spy)
    return seen


def test_simulate_with_the_greedy_solver(tiny_trace: Path, tmp_path: Path) -> None:
    """Every round of the agent's loop is planned by greedy, and its line in ``agent.log`` says so."""
    result = run(
        "simulate",
        tiny_trace,
        "--cluster",
        "v100:8",
        "--solver",
        "greedy",
        "--no-plots",
        "-q",
        "--out",
        tmp_path / "sim",
    )
    assert result.exit_code == 0, result.output
    log = (tmp_path / "sim" / "wattplan" / "agent.log").read_text()
    planners = re.findall(r"plan runs \d+ \(\w+ by ([^)]+)\)", log)  # an idle round plans nothing: "(idle)"
    assert planners and set(planners) == {"greedy"}, log


def test_simulate_refuses_a_bad_time_limit(tmp_path: Path) -> None:
    result = run("simulate", "6214e9.trace", "--cluster", "v100:16", "--time-limit", "-1", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "--time-limit" in result.output


@pytest.mark.slow
def test_a_plan_is_never_optimal_with_a_gap_above_the_requested_one(
    inst: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that claims ``optimal`` with a bound twice its objective gives a ``feasible`` plan."""
    stage = stages_module.mip_stage

    def loose_bound(state, name, lm, objective, share, start=None):  # type: ignore[no-untyped-def]
        r = stage(state, name, lm, objective, share, start)
        if r.has_solution and r.objective is not None:
            return SolverResult("optimal", r.values, r.objective, 2 * r.objective, r.solve_s)
        return r

    monkeypatch.setattr(stages_module, "mip_stage", loose_bound)
    p = plan(inst, PlanRequest(solver="cbc", time_limit_s=20, lp_bound=False, rel_gap=1e-4))
    assert p.round.gap is not None and p.round.gap > 1e-4
    assert p.round.status == "feasible"


@pytest.mark.slow
def test_a_node_limit_stops_every_stage_on_nodes_and_plans_a_round_the_same_way_twice(inst: Instance) -> None:
    """Unlimited, CBC's first stage of the default round takes 134-282 nodes; with one node each stage stops there."""
    request = PlanRequest(solver="cbc", time_limit_s=60, lp_bound=False, threads=1, node_limit=1)
    first, second = plan(inst, request), plan(inst, request)
    for p in (first, second):
        stages = [s for s in p.round.report.stages if s.status != "skipped"]
        assert stages and all(s.stats.get("nodes", 0) <= 2 for s in stages), stages
        assert p.round.report.clock_stops == 0 and all(s.on_clock is False for s in stages)
        assert validate_plan(inst, p) == []
    assert first.jobs == second.jobs and first.round.energy_j == second.round.energy_j


def test_simulate_passes_its_node_limit_on_and_records_it(
    tiny_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = planned_rounds(monkeypatch)
    args = ("simulate", tiny_trace, "--cluster", "v100:8", "-p", "wattplan", "--no-plots", "-q")
    # the time limit far above these 3-job rounds' need (a node limit ends them): none stops on the clock under load
    result = run(*args, "--node-limit", "3", "--threads", "1", "--time-limit", "60", "--out", tmp_path / "sim")
    assert result.exit_code == 0, result.output
    assert seen and {(r.solver, r.node_limit, r.threads, r.time_limit_s) for r, _ in seen} == {("cbc", 3, 1, 60.0)}
    assert all(p.round.report.clock_stops == 0 for _, p in seen)
    summary = json.loads((tmp_path / "sim" / "wattplan" / "summary.json").read_text())
    request = summary["replay_key"]["spec"]["policy_options"]["request"]
    assert (request["solver"], request["node_limit"], request["threads"], request["time_limit_s"]) == ("cbc", 3, 1, 60)
    # 0.1 s leaves no stage the 0.2 s it needs: every stage is skipped, on the clock, in every round
    seen.clear()
    short = run(*args, "--time-limit", "0.1", "--out", tmp_path / "short")
    assert short.exit_code == 0, short.output
    assert seen and all(p.round.report.clock_stops >= 1 for _, p in seen)
    assert all(s.status == "skipped" for _, p in seen for s in p.round.report.stages)
    refused = run(*args, "--node-limit", "3", "--solver", "cpsat", "--out", tmp_path / "s2")
    assert refused.exit_code == 2 and "--node-limit" in refused.output, refused.output


def test_the_time_limit_counts_from_the_callers_clock(inst: Instance) -> None:
    """A caller that started its clock long ago leaves the solver no time: the heuristic plan, on time."""
    import time

    started = time.perf_counter() - 100.0
    p = plan(inst, PlanRequest(solver="cbc", time_limit_s=30, lp_bound=False), started_at=started)
    assert p.round.status == "fallback"
    assert all(s.status == "skipped" for s in p.round.report.stages)
    assert np.isfinite(p.round.energy_j)


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_an_unwritable_export_path_exits_2_naming_it(tmp_path: Path, solver: str) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    target = blocker / "model.mps"
    result = run(
        "plan", "--solver", solver, "--time-limit", "5", "--export-model", target, "--out", tmp_path / "p.json"
    )
    assert result.exit_code == 2, result.output
    assert ".tmp." not in result.output  # the temporary file is never named
    assert not (tmp_path / "p.json").exists()
    with pytest.raises(InputError) as err:
        plan(load_instance(default_instance()), PlanRequest(solver=solver, time_limit_s=5, export_model=target))
    [problem] = err.value.problems
    assert problem.code == "unwritable-output" and str(target) in problem.message


@pytest.mark.slow
def test_the_solve_report_survives_writing_and_reading_the_plan(inst: Instance, tmp_path: Path) -> None:
    from wattplan.planner.contracts.plan import load_plan, write_plan

    p = plan(inst, PlanRequest(solver="cbc", time_limit_s=20))
    write_plan(p, tmp_path / "p.json")
    again = load_plan(tmp_path / "p.json")
    assert again.round.report == p.round.report and again.round.report.stages
    assert again.round.extra == p.round.extra


def test_front_door_plans_record_the_instance_as_given(inst: Instance) -> None:
    """The digest is of the instance passed in, not of the copy with the request's objective and delta."""
    digest = instance_sha256(inst)
    assert plan(inst, PlanRequest(solver="greedy")).round.instance_sha256 == digest
    other = "energy" if inst.round.objective != "energy" else "progress"
    changed = plan(inst, PlanRequest(solver="greedy", objective=other, delta=0.25))
    assert changed.round.instance_sha256 == digest and validate_plan(inst, changed) == []


def _plain_digest(inst: Instance) -> str:
    """The digest as its definition reads: SHA-256 of ``json.dumps(instance_to_doc, sort_keys=True)``, compact."""
    text = json.dumps(instance_to_doc(inst), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_digest_is_the_canonical_json_of_the_document_with_its_parts_reused(inst: Instance) -> None:
    """Assembled key by key with the profile and pair arrays reused, it is still the plain definition's digest."""
    jobs = inst.jobs[:3]
    variants = [
        inst,
        replace(inst, jobs=jobs),  # the same profile tuple: its text comes from the cache
        replace(inst, jobs=jobs, profiles=tuple(reversed(inst.profiles))),  # the same entries, another order
        replace(inst, extra={"note": "é ✓", "source": {"b": 1, "a": [2, 1]}}),  # extra keys, non-ASCII
        replace(inst, round=replace(inst.round, budget_j=None, index=7)),
        replace(inst, profiles=(replace(inst.profiles[0], power_w=inst.profiles[0].power_w + 1), *inst.profiles[1:])),
    ]
    digests = [instance_sha256(v) for v in variants]
    assert digests == [_plain_digest(v) for v in variants]
    assert len(set(digests)) == len(digests)
    assert instance_sha256(variants[1]) == digests[1]  # asked again: the kept value


@pytest.mark.parametrize("extra", [(), ("--objective", "energy"), ("--budget-j", "1e12")])
def test_cli_plans_record_the_digest_of_the_file_parsed(tmp_path: Path, extra: tuple[str, ...]) -> None:
    """``wattplan plan FILE``: the digest of FILE's instance as parsed (before any override), whatever its spacing."""
    doc = instance_to_doc(load_instance(default_instance()))
    source = tmp_path / "instance.json"
    source.write_text(json.dumps(doc, indent=4, sort_keys=False))
    out = tmp_path / "plan.json"
    result = run("plan", source, "--solver", "greedy", "--out", out, "-q", *extra)
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())["round"]["instance_sha256"]
    assert written == instance_sha256(load_instance(source)) == instance_sha256(load_instance(default_instance()))
    assert run("validate", source, out).exit_code == 0


def test_replay_rounds_record_their_instances(tiny_trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plan of the agent's loop records the digest of its round's instance (the loop validates each one)."""
    from wattplan.planner.agent import loop
    from wattplan.planner.control.slurm_replay import SimulatedCluster, replay_on_slurm
    from wattplan.planner.sim.options import SimulateOptions
    from wattplan.planner.sim.session import replay_spec

    seen: list[tuple[str | None, str]] = []

    def spy(round_inst: Instance, round_plan: Plan) -> list:
        seen.append((round_plan.round.instance_sha256, instance_sha256(round_inst)))
        return validate_plan(round_inst, round_plan)

    monkeypatch.setattr(loop, "validate_plan", spy)
    spec = replay_spec(tiny_trace, "v100:8", SimulateOptions(), ["fifo-max"])
    result = replay_on_slurm(spec, "fifo-max", SimulatedCluster())
    assert result.summary["completed"] == 3
    assert len(seen) >= 2 and all(recorded == actual for recorded, actual in seen)
    assert len({actual for _, actual in seen}) == len(seen)  # each round its own instance
