"""How long jobs wait for their first start in replays on the simulated Slurm, against Slurm alone.

Reads the replay folders ``benchmarks/live_compare.py --only simulate`` writes (``OUT/FAMILY/sim/POLICY/`` with
``summary.json`` and ``jobs.csv``) and prints one Markdown row per family and policy: energy (kWh), average and
p95 JCT (s), requeues, rounds, and each job's wait from its arrival to its first start (s, median and mean). The
wait of Slurm alone is what the cluster makes a job wait; the agent's wait beyond it is its own latency (polls
of ``squeue`` every ``--poll-s`` real seconds, 1 by default, so ``--time-scale`` times as long in emulated
seconds, and the least gap between rounds).

A live run's folder (``--only managed`` or ``unmanaged``: ``OUT/FAMILY/managed.json``, ``unmanaged.json``, the
cluster reports) gives the same row from Slurm's own times: the wait from submission to Slurm's start, the
agent's rounds and restarts where it ran.

Usage: ``python benchmarks/start_delay.py OUT [OUT...]``.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path


def rows(out: Path) -> list[str]:
    """The table rows of every replay under ``out``."""
    lines = []
    for sim in sorted(out.glob("*/sim")):
        for policy in sorted(p for p in sim.iterdir() if (p / "summary.json").is_file()):
            summary = json.loads((policy / "summary.json").read_text())
            with (policy / "jobs.csv").open(newline="") as f:
                jobs = list(csv.DictReader(f))
            waits = [float(j["start_s"]) - float(j["arrival_s"]) for j in jobs if j["start_s"]]
            requeues = sum(int(j["requeues"]) for j in jobs)
            lines.append(
                f"| {out.name} | {sim.parent.name} | {policy.name} | {summary['energy_kwh']:.4f} | "
                f"{summary['avg_jct_s']:,.0f} | {summary['p95_jct_s']:,.0f} | {requeues} | {summary['rounds']} | "
                f"{statistics.median(waits):.1f} | {statistics.mean(waits):.1f} |"
            )
    for report in sorted([*out.glob("*/managed.json"), *out.glob("*/unmanaged.json")]):
        doc = json.loads(report.read_text())
        waits = [j["start_s"] - j["submit_s"] for j in doc["jobs"] if j.get("start_s") is not None]
        agent = doc.get("agent") or {}
        lines.append(
            f"| {out.name} | {report.parent.name} | live {report.stem} | {doc['energy_kwh']:.4f} | "
            f"{doc['avg_jct_s']:,.0f} | {doc['p95_jct_s']:,.0f} | {agent.get('restarts', 0)} | "
            f"{agent.get('rounds', 0)} | {statistics.median(waits):.1f} | {statistics.mean(waits):.1f} |"
        )
    return lines


def main() -> None:
    """Print the table of every folder given."""
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    print(
        "| run | family | policy | energy kWh | avg JCT s | p95 JCT s | requeues | rounds | wait median s "
        "| wait mean s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for out in sys.argv[1:]:
        print("\n".join(rows(Path(out))))


if __name__ == "__main__":
    main()
