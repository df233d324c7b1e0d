"""Shared fixtures: a tiny hand-made instance every test can read and mutate."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.module_seconds import UNKNOWN_S, load_weights

# pytest-xdist's workers start with COLUMNS=80 in their environment, and a rich Console built while COLUMNS is set
# keeps that width for good: the command line's module-level consoles, imported when the tests are collected, would
# ignore every test's own COLUMNS. Without it they read COLUMNS at each print (see ``wide_terminal``).
os.environ.pop("COLUMNS", None)


LOCAL_RAY_MODULES = frozenset(
    {"test_bench_ray", "test_executor_ray", "test_executor_ray_tmpdir", "test_executor_signals"}
)
"""The modules that start a local Ray instance: one work unit of ``make test``'s workers, so that no two Rays run at
once (``test_executor_ray_tmpdir`` counts Ray's folders under ``/tmp``) while the other worker runs the rest."""


def _work_unit(nodeid: str) -> str:
    """A test's unit of ``--dist loadfile``: its module, or one unit for every module of :data:`LOCAL_RAY_MODULES`."""
    module = nodeid.split("::", 1)[0]
    return "local Ray" if Path(module).stem in LOCAL_RAY_MODULES else module


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown to a pytest without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile``: whole modules per worker, the local-Ray modules as one (:func:`_work_unit`).

    pytest-xdist's ``loadgroup`` does not group under pytest 9.2 (it rewrites ``item._nodeid``, which pytest no
    longer reads), so the grouping is the scheduler's own: ``LoadFileScheduling`` with its scope function replaced.
    """
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LocalRayAsOneUnit(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    return LocalRayAsOneUnit(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the work units longest first by their measured seconds (``tests/helpers/module_seconds.py``).

    ``make test`` hands whole modules to its workers in collection order (``--dist loadfile
    --no-loadscope-reorder``), so the longest ones start first and none starts last while the other worker idles.
    The sort is stable: a module's own tests keep their order, and modules of equal weight theirs.
    """
    weights = load_weights()
    units: dict[str, float] = {}
    for stem in {item.path.stem for item in items}:
        unit = _work_unit(stem)
        units[unit] = units.get(unit, 0.0) + weights.get(stem, UNKNOWN_S)
    items.sort(key=lambda item: -units[_work_unit(item.path.stem)])


def tiny_instance_doc() -> dict[str, Any]:
    """Two job types on one 2-node, 4-GPU-per-node V100 pool.

    ``A`` runs on 1 or 2 GPUs, ``B`` on 1; settings 150 W and 250 W; idle 30 W per GPU,
    node base power 100 W; ``A`` and ``B`` may share one GPU at rates 0.8 and 0.6.
    """
    return {
        "schema": "wattplan.instance/1",
        "round": {
            "index": 3,
            "duration_s": 100,
            "budget_j": None,
            "objective": "progress",
            "delta": 0.03,
            "restart_s": 10,
            "min_pair_rate": 0.5,
        },
        "gpu_types": [
            {
                "name": "v100",
                "nodes": 2,
                "gpus_per_node": 4,
                "idle_power_w": 30,
                "node_power_w": 100,
                "setting_unit": "power_limit_w",
                "settings": [150, 250],
            }
        ],
        "jobs": [
            {"id": "a", "type": "A", "remaining_steps": 1000, "gpus": [1, 2], "weight": 1.0, "current": None},
            {
                "id": "b",
                "type": "B",
                "remaining_steps": 500,
                "gpus": [1],
                "weight": 2.0,
                "current": {
                    "gpu_type": "v100",
                    "gpus": 1,
                    "setting": 250,
                    "shares_with": None,
                    "placement": [{"node": "v100-1", "gpu_indices": [2]}],
                },
            },
            {"id": "c", "type": "A", "remaining_steps": 100, "gpus": [1], "weight": 1.0, "current": None},
        ],
        "profiles": [
            {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 150, "steps_per_s": 4.0, "power_w": 130},
            {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 5.0, "power_w": 230},
            {"type": "A", "gpu_type": "v100", "gpus": 2, "setting": 150, "steps_per_s": 7.0, "power_w": 125},
            {"type": "A", "gpu_type": "v100", "gpus": 2, "setting": 250, "steps_per_s": 9.0, "power_w": 220},
            {"type": "B", "gpu_type": "v100", "gpus": 1, "setting": 150, "steps_per_s": 2.0, "power_w": 110},
            {"type": "B", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 2.5, "power_w": 180},
        ],
        "pairs": [{"a": "A", "b": "B", "gpu_type": "v100", "gpus": 1, "rho_a": 0.8, "rho_b": 0.6}],
    }


@pytest.fixture
def tiny_doc() -> dict[str, Any]:
    return copy.deepcopy(tiny_instance_doc())


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    """Five short jobs on arrival within the first ten minutes (a few rounds of work), as a Gavel trace."""
    from tests.sim_helpers import A3C, R50, write_gavel_trace  # here: no wattplan module loads before COLUMNS goes

    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    return write_gavel_trace(tmp_path / "tiny.trace", rows)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command's output is read at 1,000 columns unless a test sets its own ``COLUMNS``.

    Rich wraps long paths at the terminal width, so a test reading ``tmp_path`` back from the output
    otherwise passed or failed with the length of pytest's temporary folder (``popen-gw0/`` under
    pytest-xdist, a longer ``pytest-NN`` counter). Tests of the 80-column layout pass ``COLUMNS=80``.
    """
    monkeypatch.setenv("COLUMNS", "1000")
