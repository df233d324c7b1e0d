"""Speed of the replay on a simulated Slurm: wall and CPU seconds of ``wattplan simulate``.

Cases (two trace families built differently, Gavel's synthetic arrivals and Philly's production log):

* the issue's command: the first 40 jobs of Gavel ``6c71a0`` on ``v100:32,p100:16``, wattplan, ``--time-limit 2``,
  with and without the 8 kW cap; then every policy at once (``--policy all``: Slurm alone and the five built-ins);
* 150-job slices, each policy on its own: Gavel ``6c71a0`` and Philly ``6214e9`` (virtual cluster ``6214e9``).

Each case runs with the agent's rounds on events only (``--no-periodic-rounds``, the rule whose rounds are as many
as the events) unless ``--periodic`` is given. Writes ``OUT/speed.json`` and ``OUT/speed.md`` (wall seconds of the
whole command, the replays' own wall and CPU seconds, solver workers included, rounds and energy per policy).

Usage: ``python benchmarks/slurm_speed.py --out OUT [--periodic] [--only NAME] [--policy NAME]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WATTPLAN = [sys.executable, "-m", "wattplan"]
POLICIES = ("slurm", "fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow", "wattplan")
CASES: dict[str, list[str]] = {
    "issue-40-gavel-6c71a0": ["6c71a0.trace", "--cluster", "v100:32,p100:16", "--max-jobs", "40"],
    "issue-40-gavel-6c71a0-cap8kw": [
        *("6c71a0.trace", "--cluster", "v100:32,p100:16", "--max-jobs", "40", "--power-cap-w", "8000")
    ],
    "gavel-6c71a0-150": ["6c71a0.trace", "--cluster", "v100:32,p100:16", "--max-jobs", "150"],
    "philly-6214e9-150": ["philly.csv", "--vc", "6214e9", "--cluster", "v100:32,p100:16", "--max-jobs", "150"],
}
"""Each case's trace, cluster and selection."""


def run(name: str, policies: list[str], out: Path, periodic: bool) -> dict[str, Any]:
    """One ``simulate`` command; its wall time and each policy's summary."""
    folder = out / name / "-".join(policies)
    rounds = [] if periodic else ["--no-periodic-rounds"]
    pols = [x for p in policies for x in ("--policy", p)]
    argv = [*WATTPLAN, "simulate", *CASES[name], *pols, "--time-limit", "2", *rounds]
    t0 = time.perf_counter()
    done = subprocess.run([*argv, "--out", str(folder)], capture_output=True, text=True, timeout=7200)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    names = POLICIES if policies == ["all"] else policies
    summaries = {p: json.loads((folder / p / "summary.json").read_text()) for p in names}
    return {"case": name, "policies": policies, "command_wall_s": wall, "summaries": summaries}


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table: one line per command and policy."""
    lines = [
        "| case | command | command wall s | policy | replay wall s | CPU s | rounds | jobs done | energy kWh |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for p, s in r["summaries"].items():
            lines.append(
                f"| {r['case']} | {' '.join(r['policies'])} | {r['command_wall_s']:.1f} | {p} | {s['wall_s']:.1f} "
                f"| {s['cpu_s']:.1f} | {s['rounds']} | {s['completed']}/{s['jobs']} | {s['energy_kwh']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the cases (module docstring) and write the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--periodic", action="store_true", help="Rounds every --round-s as well (the live default).")
    p.add_argument("--only", choices=sorted(CASES), action="append")
    p.add_argument("--policy", choices=POLICIES, action="append", help="The 150-job cases: only these policies.")
    args = p.parse_args()
    rows = []
    for name in args.only or list(CASES):
        if name.startswith("issue-"):
            rows.append(run(name, ["wattplan"], args.out, args.periodic))
            rows.append(run(name, ["all"], args.out, args.periodic))
        else:
            rows.extend(run(name, [policy], args.out, args.periodic) for policy in args.policy or POLICIES)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "speed.json").write_text(json.dumps(rows, indent=1) + "\n")
        (args.out / "speed.md").write_text(table(rows))
    print(table(rows))


if __name__ == "__main__":
    main()
