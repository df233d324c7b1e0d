"""Where a live run's jobs lose real seconds around their starts, read off the emulated cluster's Slurm logs.

Reads a folder of Slurm 22.05 logs (the emulated cluster's ``slurm/log``: ``slurmctld.log`` and
``slurmd-NODE.log``; ``benchmarks/results/issue43/lead/live-b/FAMILY/slurm-log*`` keep copies) and prints, in real
seconds (median, 90th percentile, max, count):

- **submission -> start, jobs that fit**: from ``sbatch`` to Slurm's start, for the jobs that started within
  ``WAITED_S`` of it (Slurm alone: its own latency; managed: the agent's and Slurm's together);
- **release -> start**: from the agent's ``scontrol release`` (``release hold on JobId=N``) to Slurm's start
  (``Started JobId=N`` or ``Allocate JobId=N``); only managed runs release;
- **start -> launch**: from Slurm's start to slurmd's ``Launching batch job N`` (the prolog; a node's boot where
  the job got a powered-down node, the longest ones);
- **completion -> next start**: for a job that waited in the queue (started over 3 s after its submission), from
  the last completion on its node (``_job_complete: JobId=M done``) to its start: the epilog and Slurm's next
  scheduling pass.

With the agent's state beside the logs (``../agent.db``, which ``benchmarks/live_compare.py`` keeps since this
table was extended), two more rows split the agent's part of the completion's latency, on the one host's clock:

- **completion -> round**: from a completion (``_job_complete``) to the start of the first round after it
  (``rounds.started_unix``): the agent's poll of ``squeue`` and the time Slurm shows the job ``COMPLETING``;
- **round -> release**: from a round's start to its ``scontrol release`` (``actions.sent_unix``): reading the queue
  and Prometheus, the solve, the updates before the release.
- **submission -> release**: for a job the round that first saw it released (issue 44, item 8), from Slurm's
  ``_slurm_rpc_submit_batch_job`` to the release's log line, both to the millisecond: the agent's whole latency
  for a job that fits (the wait for its next ``squeue`` read, then the round). The agent's own report has the same
  from Slurm's submit time, which Slurm keeps in whole seconds.

The simulated Slurm (``planner.control.sim_slurm``) models a start as ``LAUNCH_REAL_S`` real seconds
(``planner.control.slurm_replay``) and a completion's GPUs as free at once; these figures say what that leaves out.

With more than one folder, a last table pools them.

Usage: ``python benchmarks/slurm_latency.py LOGDIR [LOGDIR...]``.
"""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
import statistics
import sys
from datetime import datetime
from pathlib import Path

import numpy as np

WAITED_S = 3.0
"""A job that started this long after its submission waited in the queue."""


def unix_of(line: str) -> float:
    """The Unix time of a Slurm log line (``[2026-11-30T03:12:21.187] ...``, local time as the machine logs it)."""
    return datetime.fromisoformat(line[1:24]).timestamp()


def completion(line: str) -> tuple[int, float] | None:
    """``(job id, Unix s)`` of a ``slurmctld.log`` line ``_job_complete: JobId=N done``; None for another line."""
    m = re.search(r"_job_complete: JobId=(\d+) done", line)
    return None if m is None else (int(m.group(1)), unix_of(line))


def latencies(folder: Path) -> dict[str, list[float]]:
    """The three kinds of latency (module docstring) of every job the logs in ``folder`` show, in real seconds."""
    submit: dict[int, float] = {}
    start: dict[int, float] = {}
    node: dict[int, str] = {}
    done: dict[int, float] = {}
    released: dict[int, float] = {}
    for line in (folder / "slurmctld.log").read_text().splitlines():
        if m := re.search(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", line):
            submit.setdefault(int(m.group(1)), unix_of(line))
        elif m := re.search(r"Started JobId=(\d+) in \S+ on (\S+)|Allocate JobId=(\d+) NodeList=(\S+)", line):
            job = int(m.group(1) or m.group(3))
            start.setdefault(job, unix_of(line))
            node.setdefault(job, m.group(2) or m.group(4))
        elif (job_done := completion(line)) is not None:
            done[job_done[0]] = job_done[1]
        elif m := re.search(r"release hold on JobId=(\d+)", line):
            released.setdefault(int(m.group(1)), unix_of(line))
    launch: dict[int, float] = {}
    for log in sorted(folder.glob("slurmd-*.log")):
        for line in log.read_text().splitlines():
            if m := re.search(r"Launching batch job (\d+)", line):
                launch.setdefault(int(m.group(1)), unix_of(line))
    after_completion = []
    for job, t in start.items():
        if t - submit.get(job, t) <= WAITED_S:
            continue
        before = [d for other, d in done.items() if d <= t and node.get(other) == node[job]]
        if before:
            after_completion.append(t - max(before))
    found = {
        "submission -> start, jobs that fit": [
            t - submit[j] for j, t in start.items() if j in submit and t - submit[j] <= WAITED_S
        ],
        "release -> start": [start[j] - released[j] for j in start if j in released],
        "start -> launch": [launch[j] - t for j, t in start.items() if j in launch],
        "completion -> next start": after_completion,
    }
    state = folder.parent / "agent.db"
    if state.is_file():
        found.update(agent_latencies(state, sorted(done.values()), submit, released))
    return found


def agent_latencies(
    state: Path, completions: list[float], submit: dict[int, float], released: dict[int, float]
) -> dict[str, list[float]]:
    """The agent's three rows (module docstring) from its state file and the log's Unix times by job."""
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as db:
        rounds = sorted(r[0] for r in db.execute("SELECT started_unix FROM rounds"))
        sent = db.execute(
            "SELECT r.started_unix, a.sent_unix FROM actions a JOIN rounds r ON r.round = a.round "
            "WHERE a.argv LIKE '%release%' AND a.sent_unix IS NOT NULL"
        ).fetchall()
        seen = {int(j): r for j, r in db.execute("SELECT job_id, first_seen_round FROM jobs").fetchall()}
        releases = db.execute(
            "SELECT round, jobs FROM actions WHERE argv LIKE '%release%' AND status = 'ok'"
        ).fetchall()
    at_once = {int(j) for rnd, jobs in releases for j in json.loads(jobs) if seen.get(int(j)) == rnd}
    to_round = []
    for t in completions:
        k = bisect.bisect_left(rounds, t)
        if k < len(rounds):
            to_round.append(rounds[k] - t)
    return {
        "completion -> round": to_round,
        "round -> release": [b - a for a, b in sent],
        "submission -> release": [released[j] - submit[j] for j in sorted(at_once) if j in released and j in submit],
    }


def row(name: str, values: list[float]) -> str:
    """One Markdown row: median, 90th percentile, max and count (s).

    The percentile is numpy's linear one, as ``wattplan agent report``'s (:func:`planner.agent.report`) and every
    JCT percentile of the replays: one definition for the figures set side by side.
    """
    if not values:
        return f"| {name} | - | - | - | 0 |"
    ordered = sorted(values)
    p90 = float(np.percentile(ordered, 90))
    return f"| {name} | {statistics.median(ordered):.2f} | {p90:.2f} | {ordered[-1]:.2f} | {len(ordered)} |"


def main() -> None:
    """Print one table per log folder given."""
    if len(sys.argv) < 2:
        raise SystemExit(__doc__.splitlines()[-1])
    pooled: dict[str, list[float]] = {}
    head = "| latency (real s) | median | p90 | max | jobs |\n|---|---|---|---|---|"
    for arg in sys.argv[1:]:
        folder = Path(arg)
        print(f"\n{folder}\n\n{head}")
        for name, values in latencies(folder).items():
            print(row(name, values))
            pooled.setdefault(name, []).extend(values)
    if len(sys.argv) > 2:
        print(f"\nall {len(sys.argv) - 1} folders\n\n{head}")
        for name, values in pooled.items():
            print(row(name, values))


if __name__ == "__main__":
    main()
