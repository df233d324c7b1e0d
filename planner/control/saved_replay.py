"""A policy's replay on the simulated Slurm read back from its files, so that ``simulate`` resumes policy by policy.

A replay on the simulated Slurm keeps no checkpoint inside a policy; what it keeps is each finished policy's files in
``out/POLICY/`` (``summary.json``, ``jobs.csv``, ``power.csv``, ``agent.log``), written atomically when that policy
ends. The summary carries the policy's :func:`replay_key`: the replay's spec with this policy alone, the simulated
cluster's constants and the SHA-256 of every input file the spec names. ``simulate`` run again with the same
command reads back each policy whose saved key equals the key it would replay under (:func:`saved_result`) and
replays only the others, so an interrupted comparison of several policies loses at most the policies that were
running. A changed option, a changed input file or a file missing or unreadable means the policy is replayed;
``--fresh`` replays every policy.

The replay is deterministic (virtual clock, seeded solver, no wall-clock limit reached on a node-limited solve), so
a policy read back is the policy replayed again, but for its wall and CPU seconds, which are those of the run that
made it. A solve stopped by its time limit may plan differently when replayed; the saved result is then one of the
results the same command could give.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from wattplan.planner.control.slurm_replay import POWER_FILE, REPLAY_KEY, SimulatedCluster, SlurmReplayResult
from wattplan.planner.sim.frontier import input_digests, spec_json
from wattplan.planner.sim.replay import ReplaySpec

JOB_TEXT_COLUMNS = ("job_id", "job_type")
"""Columns of ``jobs.csv`` read back as text; every other column is a number (an int when written as one)."""


def replay_key(spec: ReplaySpec, policy: str, setup: SimulatedCluster) -> dict[str, Any]:
    """What a saved policy must match to be read back: spec (this policy alone), cluster constants, input digests."""
    return {
        "spec": spec_json(replace(spec, policies=(policy,))),
        "setup": json.loads(json.dumps(asdict(setup), default=str)),
        "inputs": input_digests(spec),
    }


def saved_result(folder: Path, policy: str, key: dict[str, Any]) -> SlurmReplayResult | None:
    """The replay of ``policy`` saved in ``folder`` when its summary holds ``key``; else None (replay it).

    None too when a file is missing or does not read: a half-written folder is never taken for a result.
    """
    try:
        summary = json.loads((folder / "summary.json").read_text())
        if not isinstance(summary, dict) or summary.get(REPLAY_KEY) != key or summary.get("policy") != policy:
            return None
        jobs = _read_jobs(folder / "jobs.csv")
        steps = _read_power(folder / POWER_FILE)
        if not (folder / "agent.log").is_file():
            return None
    except (OSError, ValueError, KeyError):
        return None
    return SlurmReplayResult(policy, summary, jobs, steps)


def _number(text: str) -> int | float | None:
    """A cell of ``jobs.csv``: empty is None, an integer literal an int, anything else a float."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        value = float(text)
        return None if math.isnan(value) else value


def _read_jobs(path: Path) -> list[dict[str, Any]]:
    """The rows of ``jobs.csv`` as :func:`~planner.control.slurm_replay.job_rows` made them."""
    with path.open(newline="") as fh:
        return [{k: (v if k in JOB_TEXT_COLUMNS else _number(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def _read_power(path: Path) -> list[tuple[float, float, float]]:
    """The steps of ``power.csv``."""
    with path.open(newline="") as fh:
        return [(float(r["t0_s"]), float(r["t1_s"]), float(r["power_w"])) for r in csv.DictReader(fh)]
