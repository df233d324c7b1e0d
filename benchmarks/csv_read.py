"""Time and peak memory of the Philly trace and hourly signal readers on large generated files.

Usage::

    python benchmarks/csv_read.py [--rows 1000000] [--signal-hours 1000000] [--root DIR ...] [--repeat 3]

Writes ``/tmp/wattplan-bench-csv/philly_{rows}.csv`` (``timestamp,duration,num_gpus,gpu_time,cluster``,
one job a second, naive times, 4 clusters) and ``/tmp/wattplan-bench-csv/signal_{hours}.csv``
(``timestamp,avg_CI``, consecutive UTC hours from 1970 with 1 empty cell in 100, filled by
interpolation), once, then reads each with the reader of every ``--root`` (a checkout of this
repository; default: this one) in a fresh Python process per measurement, and prints a table:
wall time of the read alone (s, the best of ``--repeat`` runs) and the peak resident memory of
that process (``ru_maxrss``, MiB, the largest of the runs), next to the same process that only
imports the reader (its floor: Python, numpy and pandas).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path("/tmp/wattplan-bench-csv")
ROOT = Path(__file__).resolve().parents[1]

PHILLY = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from wattplan.planner.rounds.traces import read_philly_csv
start = time.perf_counter()
jobs = {call}
elapsed = time.perf_counter() - start
print(json.dumps({{"s": elapsed, "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "n": len(jobs)}}))
"""

SIGNAL = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from wattplan.planner.sim.signals import read_signal
start = time.perf_counter()
signal = {call}
elapsed = time.perf_counter() - start
print(json.dumps({{"s": elapsed, "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "n": signal.hours}}))
"""

CALLS = {
    "philly": (PHILLY, "read_philly_csv({path!r}, ['A', 'B'], lambda t, g: 2.0, seed=0)"),
    "signal": (SIGNAL, "read_signal({path!r}, 'carbon')"),
}


def philly_file(rows: int) -> Path:
    """A Philly CSV of ``rows`` jobs (written once): one arrival a second, 1-8 GPUs, 4 clusters."""
    path = OUT / f"philly_{rows}.csv"
    if path.exists():
        return path
    rng = random.Random(0)
    start = datetime(2017, 10, 3, 2, 11, 59)
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as fh:
        fh.write("timestamp,duration,num_gpus,gpu_time,cluster\n")
        for i in range(rows):
            duration = rng.randint(1, 200_000)
            gpus = rng.choice((1, 1, 1, 2, 4, 8))
            stamp = (start + timedelta(seconds=i)).isoformat(sep=" ")
            fh.write(f"{stamp},{duration},{gpus},{duration * gpus},vc{rng.randint(0, 3)}\n")
    path.with_suffix(".tmp").replace(path)
    return path


def signal_file(hours: int) -> Path:
    """An hourly carbon CSV of ``hours`` hours from 1970 (written once), one empty cell in 100."""
    path = OUT / f"signal_{hours}.csv"
    if path.exists():
        return path
    rng = random.Random(1)
    start = datetime(1970, 1, 1, tzinfo=UTC)
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as fh:
        fh.write("timestamp,avg_CI\n")
        for h in range(hours):
            value = "" if 0 < h < hours - 1 and h % 100 == 50 else f"{rng.uniform(50, 500):.6f}"
            fh.write(f"{(start + timedelta(hours=h)).isoformat(sep=' ')},{value}\n")
    path.with_suffix(".tmp").replace(path)
    return path


def measure(root: Path, reader: str, path: Path | None) -> dict[str, float]:
    """One fresh process reading ``path`` with ``root``'s ``reader`` (or only importing it when ``path`` is None)."""
    template, call = CALLS[reader]
    code = template.format(root=str(root), call=call.format(path=str(path)) if path else "[]")
    if path is None:
        code = code.replace("signal.hours", "0")
    done = subprocess.run([sys.executable, "-c", code], cwd="/tmp", capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Generate the files, measure every root and reader, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the Philly CSV")
    parser.add_argument("--signal-hours", type=int, default=1_000_000, help="hours of the signal CSV")
    parser.add_argument("--root", type=Path, action="append", help="a checkout whose readers to measure")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best time, largest memory)")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    files = {"philly": philly_file(args.rows), "signal": signal_file(args.signal_hours)}
    columns = ("rows", "MiB on disk", "read s", "peak MiB", "import MiB")
    print(f"{'root':<40} {'reader':<7} " + " ".join(f"{c:>{max(len(c), 9)}}" for c in columns))
    for root in args.root or [ROOT]:
        for reader, path in files.items():
            floor = measure(root, reader, None)["rss_kib"] / 1024
            runs = [measure(root, reader, path) for _ in range(args.repeat)]
            best = min(r["s"] for r in runs)
            peak = max(r["rss_kib"] for r in runs) / 1024
            size = path.stat().st_size / 2**20
            rows = int(runs[0]["n"])
            print(f"{str(root):<40} {reader:<7} {rows:>9} {size:>11.1f} {best:>9.2f} {peak:>9.0f} {floor:>10.0f}")


if __name__ == "__main__":
    main()
