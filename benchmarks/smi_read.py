"""Time and peak memory of reading a large nvidia-smi query log and integrating its points.

Usage::

    python benchmarks/smi_read.py --rows 2000000 --gpus 8 [--nounits]

writes a synthetic log of ``--rows`` lines (``--gpus`` GPUs interleaved, one sample per GPU every 0.1 s) to a
temporary folder. Two shapes: ``--format=csv`` with units, eight columns (index, timestamp, power, utilisation,
SM clock, power limit, memory, name), or with ``--nounits`` the ``--format=csv,nounits`` shape with five columns
in another order (timestamp, index, power, utilisation, power limit) and bare numbers. Then, in a fresh
Python process each (so that the peak resident memory is this reading's alone):

* ``read``: :func:`planner.profiling.nvidia_smi.read_nvidia_smi_log`;
* ``read+points``: the read and :func:`planner.profiling.smi_points.points_from_smi` with one run per GPU
  over the middle half of the log (the integrals of ``wattplan profiles ingest``).

It prints one row per measurement: wall seconds and peak resident memory (MiB, ``ru_maxrss`` of the child).
The log's size on disk is printed too. Nothing is written outside the temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = (
    "index, timestamp, power.draw [W], utilization.gpu [%], clocks.sm [MHz], enforced.power.limit [W], "
    "memory.used [MiB], name"
)
HEADER_NOUNITS = "timestamp, index, power.draw [W], utilization.gpu [%], power.limit [W]"
STEP_S = 0.1
START = datetime(2026, 11, 24, 13, 0, 0)

CHILD = r"""
import json, resource, sys, time
from datetime import timedelta
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from wattplan.planner.profiling.job_side import JobRun
from wattplan.planner.profiling.nvidia_smi import read_nvidia_smi_log
from wattplan.planner.profiling.smi_points import points_from_smi
path, mode, gpus, rows = Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
t0 = time.perf_counter()
log = read_nvidia_smi_log(path)
n_points = None
if mode == "read+points":
    first = min(s.time for g in log.gpus for s in log.samples[g][:1])
    span = timedelta(seconds=0.1 * (rows // gpus))
    runs = [JobRun("A", (g,), 1000.0, setting=250, start=first + span / 4, end=first + 3 * span / 4) for g in log.gpus]
    n_points = len(points_from_smi(log, runs, "v100").points)
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": wall, "peak_mib": peak, "samples": sum(len(log.samples[g]) for g in log.gpus),
                  "points": n_points}))
"""


def write_log(path: Path, rows: int, gpus: int, nounits: bool = False) -> None:
    """A log of ``rows`` sample lines, GPUs interleaved, power between 60 and 300 W."""
    with path.open("w", encoding="utf-8") as out:
        out.write((HEADER_NOUNITS if nounits else HEADER) + "\n")
        for k in range(rows):
            sample, gpu = divmod(k, gpus)
            stamp = (START + timedelta(seconds=STEP_S * sample)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            power = 60.0 + (k * 37 % 240)
            util = 0 if gpu == gpus - 1 else 90
            mem = 0 if gpu == gpus - 1 else 20000
            if nounits:
                out.write(f"{stamp}, {gpu}, {power:.2f}, {util}, 250.00\n")
                continue
            out.write(f"{gpu}, {stamp}, {power:.2f} W, {util} %, 1530 MHz, 250.00 W, {mem} MiB, Tesla V100-SXM2-32GB\n")


def measure(path: Path, mode: str, rows: int, gpus: int) -> dict[str, float]:
    """Run one reading in a fresh interpreter and return its JSON line."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(path), mode, str(gpus), str(rows)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Write the log, measure each mode, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="sample lines in the log")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs interleaved in the log")
    parser.add_argument("--nounits", action="store_true", help="the csv,nounits shape, five reordered columns")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smi-read-") as tmp:
        path = Path(tmp) / "big.csv"
        write_log(path, args.rows, args.gpus, args.nounits)
        size_mib = path.stat().st_size / 2**20
        shape = "csv,nounits" if args.nounits else "csv"
        print(f"log: {args.rows:,} rows, {args.gpus} GPUs, --format={shape}, {size_mib:.0f} MiB")
        print(f"{'measurement':<14}{'wall s':>9}{'peak MiB':>10}{'samples':>11}{'points':>8}")
        for mode in ("read", "read+points"):
            r = measure(path, mode, args.rows, args.gpus)
            points = "-" if r["points"] is None else str(r["points"])
            print(f"{mode:<14}{r['wall_s']:>9.2f}{r['peak_mib']:>10.0f}{int(r['samples']):>11,}{points:>8}")


if __name__ == "__main__":
    main()
