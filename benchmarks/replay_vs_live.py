"""Each live run against its replay: energy (own windows), average and p95 JCT, the replay's relative error.

A live run is a folder ``benchmarks/live_compare.py --only managed --tag=TAG`` wrote (``managed.json``); its replay
is ``REPLAYS/<the run's folder name>/sim/POLICY/summary.json``, from ``live_compare.py --only simulate`` with the
run's options and tag and ``--out REPLAYS`` (so one set of live runs can be replayed by several versions of the
simulated Slurm). ``--unmanaged NAME=FILE`` (repeatable) also compares the replay's Slurm baseline
(``sim/slurm-powersave``, else ``sim/slurm``) of every run whose name starts with ``NAME`` with a live run of it
(its ``unmanaged.json``). Prints one line per comparison, as ``live_compare.py`` does.

Usage: ``python benchmarks/replay_vs_live.py --replays REPLAYS RUN [RUN...] [--unmanaged FAMILY=FILE]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

AGENT = "wattplan"
BASELINES = ("slurm-powersave", "slurm")


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def line(name: str, replay: dict[str, Any], live: dict[str, Any]) -> str:
    """``NAME: energy +x%, avg JCT +y%, p95 +z% (replay against live kWh)``: the replay's error against live."""
    err = {k: replay[k] / live[k] - 1 for k in ("energy_kwh", "avg_jct_s", "p95_jct_s")}
    return (
        f"{name}: energy {err['energy_kwh']:+.1%}, avg JCT {err['avg_jct_s']:+.1%}, p95 {err['p95_jct_s']:+.1%} "
        f"({replay['energy_kwh']:.3f} against {live['energy_kwh']:.3f} kWh)"
    )


def main() -> None:
    """Print every comparison."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--replays", type=Path, required=True)
    p.add_argument("--unmanaged", action="append", default=[], metavar="FAMILY=FILE")
    args = p.parse_args()
    unmanaged = dict(u.split("=", 1) for u in args.unmanaged)
    for run in args.runs:
        sim = args.replays / run.name / "sim"
        print(line(run.name, _load(sim / AGENT / "summary.json"), _load(run / "managed.json")))
        for prefix, live in unmanaged.items():
            if not run.name.startswith(prefix):
                continue
            policy = next(b for b in BASELINES if (sim / b / "summary.json").exists())
            print("  " + line(f"{policy} (live {live})", _load(sim / policy / "summary.json"), _load(Path(live))))


if __name__ == "__main__":
    main()
