"""How long a job that ended stays in Slurm's queue as ``COMPLETING`` on the emulated cluster, in real seconds.

The agent plans a job's GPUs free only once the job has left ``squeue`` (``COMPLETING`` is an active state,
``planner.agent.loop.ACTIVE_STATES``), and Slurm starts nothing on them before. The simulated Slurm of the replay
takes this from the figure measured here (``planner.control.slurm_replay.COMPLETING_REAL_S``).

Brings up an emulated cluster (``wattplan cluster up``, power saving as the live runs), submits TRACE unmanaged
(Slurm alone, the stand-in trainer), and reads ``squeue`` every ``--poll-s`` real seconds until every job has left
it. Per job: from Slurm's ``_job_complete`` (``slurmctld.log``, millisecond stamps) to the first read without the
job. A read takes time too, so each figure is late by up to a poll: the table gives the median, the 90th
percentile and the largest, and the same less half a poll. Writes ``OUT/completing.json`` and prints the table.

Usage: ``python -m benchmarks.completing_time TRACE --out OUT [--gpus v100:16] [--poll-s 0.1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.live_compare import WATTPLAN, wattplan_cli
from benchmarks.slurm_latency import completion
from wattplan.planner.cluster.layout import ClusterLayout

SCALE = 30.0


def completions(log: Path) -> dict[int, float]:
    """Each job's ``_job_complete: JobId=N done`` time (Unix s) in ``slurmctld.log``."""
    return dict(found for line in log.read_text().splitlines() if (found := completion(line)) is not None)


def watch(
    env: dict[str, str], poll_s: float, deadline_s: float, submitting: subprocess.Popen[bytes]
) -> dict[int, float]:
    """Each job's first absence from ``squeue``, read every ``poll_s``.

    Until the queue is empty once ``submitting`` has ended, or ``deadline_s`` passes.
    """
    seen: set[int] = set()
    gone: dict[int, float] = {}
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, check=True)
        now = time.time()
        listed = {int(x) for x in out.stdout.split()}
        for job in seen - listed:
            gone.setdefault(job, now)
        seen |= listed
        if seen and not listed and submitting.poll() is not None:
            return gone
        time.sleep(poll_s)
    raise SystemExit(f"jobs still listed after {deadline_s:.0f} s")


def main() -> None:
    """One run: the table and ``OUT/completing.json``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--gpus", default="v100:16")
    p.add_argument("--poll-s", type=float, default=0.1)
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="wpcg-", dir="/tmp"))  # short: Slurm's sockets live under it
    scratch.chmod(0o755)
    cluster = scratch / "c"
    try:
        wattplan_cli(
            "cluster", "up", "--dir", str(cluster), "--gpus", args.gpus, "--time-scale", f"{SCALE:g}", "--power-save"
        )
        env = {**os.environ, "SLURM_CONF": str(ClusterLayout(cluster).slurm_conf)}
        submit = ["cluster", "submit", str(args.trace), "--dir", str(cluster), "--unmanaged", "--wait"]
        submitting = subprocess.Popen([*WATTPLAN, *submit], stdout=subprocess.DEVNULL)
        gone = watch(env, args.poll_s, 3600.0, submitting)
        if submitting.wait() != 0:
            raise SystemExit("wattplan cluster submit failed")
        done = completions(cluster / "slurm" / "log" / "slurmctld.log")
    finally:
        wattplan_cli("cluster", "down", "--dir", str(cluster))
        shutil.rmtree(scratch, ignore_errors=True)
    lag = sorted(gone[j] - t for j, t in done.items() if j in gone)
    p90 = lag[min(len(lag) - 1, round(0.9 * (len(lag) - 1)))]
    figures = {
        "poll_s": args.poll_s,
        "jobs": len(lag),
        "median_s": statistics.median(lag),
        "p90_s": p90,
        "max_s": lag[-1],
        "median_less_half_poll_s": statistics.median(lag) - args.poll_s / 2,
        "lags_s": lag,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "completing.json").write_text(json.dumps(figures, indent=1) + "\n")
    print("| jobs | median s | p90 s | max s | median less half a poll s |\n|---|---|---|---|---|")
    less = figures["median_less_half_poll_s"]
    print(f"| {len(lag)} | {figures['median_s']:.2f} | {p90:.2f} | {lag[-1]:.2f} | {less:.2f} |")


if __name__ == "__main__":
    main()
