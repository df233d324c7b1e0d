"""A real package: ``pip install .`` (not editable) into a fresh venv, then run from an empty folder.

The wheel must carry its own data (default instance, profile library, traces, schemas) and
install no top-level module named ``cli``; ``wattplan plan``, ``simulate`` on a shipped trace
and ``launch`` must work with the repository out of sight. The dependencies are not
downloaded again: the fresh venv sees this environment's site-packages through a ``.pth``
line (which does not activate this checkout's editable install).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result


def test_every_package_of_the_tree_is_listed_for_the_wheel() -> None:
    """``pyproject.toml`` lists packages by hand (one of them is mapped from ``instances/``)."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"wattplan"} | {
        ".".join(("wattplan", *p.parent.relative_to(ROOT).parts))
        for top in ("planner", "formulations")
        for p in (ROOT / top).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"


def test_wheel_installs_into_a_fresh_venv_and_runs_from_an_empty_directory(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "out", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), "."], source)
    wheel = next(wheels.glob("wattplan-*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    py = venv / "bin" / "python"
    paths = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path)
    purelib = Path(paths.stdout.strip())
    (purelib / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", str(wheel)], tmp_path)

    assert not (purelib / "cli.py").exists() and not (purelib / "cli").exists()
    top_level = {p.name for p in purelib.iterdir()}
    assert "wattplan" in top_level and not top_level & {"planner", "formulations", "cli", "cli.py"}
    assert {"planner", "formulations"} <= {p.name for p in (purelib / "wattplan").iterdir()}

    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    wattplan = str(venv / "bin" / "wattplan")
    where = _run([str(py), "-c", "import wattplan.planner as p; print(p.__file__)"], work, env).stdout
    assert str(purelib) in where, where

    _run([wattplan, "plan", "--solver", "greedy", "--out", "plan.json", "-q"], work, env)
    api = "import wattplan; r = wattplan.plan(solver='greedy'); print(len(r.jobs), wattplan.__file__)"
    shown = _run([str(py), "-c", api], work, env).stdout
    assert shown.startswith("64 ") and str(purelib) in shown, shown  # the Python API, installed
    doc = json.loads((work / "plan.json").read_text())
    assert doc["schema"] == "wattplan.plan/1" and len(doc["jobs"]) == 64
    _run([wattplan, "plan", "--solver", "cbc", "--time-limit", "20", "--out", "plan-cbc.json", "-q"], work, env)

    default = _run(
        [str(py), "-c", "from wattplan.planner.files.resources import default_instance as d; print(d())"], work
    )
    _run(
        [wattplan, "launch", "plan.json", "--instance", default.stdout.strip(), "--to", "shell", "--out", "launch"],
        work,
        env,
    )
    assert (work / "launch" / "MANIFEST.json").exists()

    _run(
        [
            wattplan,
            "simulate",
            "6214e9.trace",
            "--cluster",
            "v100:16",
            "--max-jobs",
            "8",
            "--max-rounds",
            "40",
            "--policy",
            "fifo-max",
            "--policy",
            "wattplan",
            "--solver",
            "greedy",
            "--no-plots",
            "-q",
            "--out",
            "sim",
        ],
        work,
        env,
    )
    assert (work / "sim" / "comparison.csv").exists()
