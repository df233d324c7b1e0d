"""The first command a newcomer runs: ``make run`` installs the package and plans the shipped default round.

Two things it must do (issue 42): install without setuptools warnings of the project's own, and show a *proven*
plan (both stages of the ``progress`` objective within the requested gap) in seconds.

The install half is checked against the tree: every folder of shipped files is a listed package whose files the
package data names (setuptools warns "Package ... is absent from the `packages` configuration" for each folder
whose files the wheel carries but that is not a listed package; ``tests/test_install.py`` builds the wheel itself).

The solve half asks for the proof within a node limit, not a wall-clock one (docs/design.md §5.15): with one
thread and a fixed seed HiGHS's search is the same on every machine, so the test passes or fails with the code,
not the load. The time limit is a safety net only. Before the fix HiGHS's presolve spent 88 s of CPU on the
energy stage's model alone (a quadratic pass over its two rows that span every column, the budget and the
progress floor), overran the stage's limit and was killed, leaving the plan ``feasible`` with
``min_energy_at_progress: no_solution``; without presolve on such models the whole plan takes about 6 s of CPU.
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from wattplan.formulations.backends import SolveParams, get_backend
from wattplan.formulations.backends.highs import PRESOLVE_MAX_ROW_NONZEROS, longest_row
from wattplan.formulations.ir import LinearModel
from wattplan.formulations.round_model import PROGRESS_ROW, build_round_model
from wattplan.planner import planning
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.request import DEFAULT_REQUEST, PlanRequest
from wattplan.planner.files.resources import default_instance

ROOT = Path(__file__).resolve().parents[1]
DATA_TREES = {
    "instances": "wattplan.planner.data",
    "planner": "wattplan.planner",
    "formulations": "wattplan.formulations",
}
"""The folders of the checkout that become packages of the wheel, and the package each becomes."""
NODE_LIMIT = 1_000
"""Branch-and-bound nodes per stage: the proof needs 4 (stage 1) and 1 (stage 2) with one thread and seed 0."""
SAFETY_NET_S = 60.0
"""The planner's whole time limit, only so that a hung solver ends: about 10 times the CPU the plan needs."""


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _shipped_files() -> dict[str, list[str]]:
    """Per package, the names of the non-Python files its folder holds (folders of the data trees)."""
    found: dict[str, list[str]] = {}
    for top, package in DATA_TREES.items():
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT / top)
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in rel.parts:
                continue
            if any(part.startswith(".") for part in rel.parts):
                continue
            found.setdefault(".".join((package, *rel.parent.parts)), []).append(path.name)
    return found


def test_every_folder_of_shipped_files_is_a_listed_package_with_its_files_named() -> None:
    """No "Package ... is absent from the `packages` configuration" warning, and the wheel carries every file."""
    config = _setuptools()
    packages = set(config["packages"])
    patterns = config["package-data"]
    files = _shipped_files()
    assert {"wattplan.planner.data", "wattplan.planner.data.profiles", "wattplan.planner.agent.node_files"} <= set(
        files
    ), sorted(files)
    unlisted = sorted(set(files) - packages)
    assert not unlisted, f"folders of shipped files missing from [tool.setuptools] packages: {unlisted}"
    unnamed = [
        f"{package}: {name}"
        for package, names in files.items()
        for name in names
        if not any(fnmatch.fnmatch(name, p) for p in patterns.get(package, []))
    ]
    assert not unnamed, f"files no [tool.setuptools.package-data] pattern of their package names: {unnamed}"
    deep = sorted(p for package, globs in patterns.items() for p in globs if "/" in p)
    assert not deep, f"package-data patterns that reach into a sub-folder (make it a package): {deep}"


def _presolve_settings(monkeypatch: pytest.MonkeyPatch, lm: LinearModel) -> list[object]:
    """The values HiGHS's ``presolve`` option was given while the backend solved ``lm``'s LP relaxation."""
    import highspy

    seen: list[object] = []

    class Recording(highspy.Highs):
        def setOptionValue(self, option: str, value: object) -> object:  # noqa: N802 (HiGHS's name)
            if option == "presolve":
                seen.append(value)
            return super().setOptionValue(option, value)

    monkeypatch.setattr(highspy, "Highs", Recording)
    result = get_backend("highs").solve(lm, "progress", True, SolveParams(time_limit_s=SAFETY_NET_S), relax=True)
    assert result.status == "optimal", result.message
    return seen


def test_highs_solves_the_default_rounds_models_without_presolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both stages' models have rows over every column, past the threshold: HiGHS gets ``presolve=off``.

    A model whose rows are all short keeps HiGHS's own choice.
    """
    lm = build_round_model(load_instance(default_instance())).lm
    floor = lm.with_row(lm.objectives["progress"], 0.05, math.inf, PROGRESS_ROW, "progress")
    assert longest_row(lm) == int(np.count_nonzero(lm.objectives["energy"]))  # the budget row spans every column
    assert longest_row(lm) > PRESOLVE_MAX_ROW_NONZEROS and longest_row(floor) > PRESOLVE_MAX_ROW_NONZEROS
    assert _presolve_settings(monkeypatch, lm) == ["off"]
    assert _presolve_settings(monkeypatch, floor) == ["off"]
    small = lm.restricted(np.arange(PRESOLVE_MAX_ROW_NONZEROS // 2))
    assert 0 < longest_row(small) <= PRESOLVE_MAX_ROW_NONZEROS
    assert _presolve_settings(monkeypatch, small) == []


@pytest.mark.slow
def test_the_default_round_is_proven_at_both_stages_within_a_node_limit() -> None:
    """``wattplan plan`` on the shipped round with the default solver: ``optimal``, each stage by its own bound."""
    assert DEFAULT_REQUEST.solver == "highs"
    request = PlanRequest(time_limit_s=SAFETY_NET_S, threads=1, seed=0, node_limit=NODE_LIMIT)
    plan = planning.plan(load_instance(default_instance()), request)
    r = plan.round
    stages = {s.stage: s for s in r.report.stages}
    assert set(stages) == {"max_progress", "min_energy_at_progress"}, r.report.stages
    for stage in stages.values():
        assert stage.on_clock is False, f"{stage.stage} stopped on the {SAFETY_NET_S:g} s safety net: {stage}"
        assert stage.status == "optimal" and stage.bound is not None, stage
        assert abs(stage.objective - stage.bound) <= request.rel_gap * abs(stage.objective), stage
    assert r.status == "optimal", r.report
    assert r.gap is not None and r.gap <= request.rel_gap
    assert r.energy_j <= r.budget_j
