"""Benchmark inputs and results made by hand: an instance set on disk and run rows of the summary."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.conftest import tiny_instance_doc


def write_set(folder: Path, manifest: bool = False) -> Path:
    """Two variants of the tiny instance (``a.json``; ``b.json`` with a budget) in ``folder``, optionally listed."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = tiny_instance_doc()
    (folder / "a.json").write_text(json.dumps(doc))
    other = copy.deepcopy(doc)
    other["round"]["budget_j"] = 60000
    (folder / "b.json").write_text(json.dumps(other))
    if manifest:
        (folder / "manifest.csv").write_text("file,jobs_asked,family\nb.json,3,tight\na.json,3,loose\n")
    return folder


def run_row(solver: str, status: str, objective: float | None, **kw) -> dict:
    """A run record of the benchmark on instance ``i1`` (a maximisation, 10 s limit), ``kw`` overriding any field."""
    base = {
        "instance_sha256": "i1",
        "solver": solver,
        "seed": 0,
        "status": status,
        "sense": "max",
        "objective": objective,
        "bound": None,
        "lp_bound": None,
        "time_s": 1.0,
        "time_limit_s": 10.0,
        "rel_gap": 1e-4,
        "incumbents": [],
    }
    return {**base, **kw}
