"""Each live run against its replay: energy (own windows), average and p95 JCT, the replay's relative error.

A live run is a folder ``benchmarks/live_compare.py --only managed --tag=TAG`` wrote (``managed.json``); its replay
is ``REPLAYS/<the run's folder name>/sim/POLICY/summary.json``, from ``live_compare.py --only simulate`` with the
run's options and tag and ``--out REPLAYS`` (so one set of live runs can be replayed by several versions of the
simulated Slurm). ``--unmanaged NAME=FILE`` (repeatable) also compares the replay's Slurm baseline
(``sim/slurm-powersave``, else ``sim/slurm``) of every run whose name starts with ``NAME`` with a live run of it
(its ``unmanaged.json``). Prints one line per comparison, as ``live_compare.py`` does.

``--repeats`` also pools the repeated live runs of one setting (runs named ``FAMILY-SETTING-X``, ``X`` the repeat's
letter): per metric the live runs' mean and range, and the replay's error against the mean. Live runs of one setting
differ among themselves (philly_shape's steered mode: 9.8% in energy over four runs), so the replay is judged
against their mean: within 5% of it on energy, average and p95 JCT is the fidelity check (issue 44), and each
run's own error, printed above, is that plus the run's distance from the mean.

Usage: ``python benchmarks/replay_vs_live.py --replays REPLAYS RUN [RUN...] [--unmanaged FAMILY=FILE]
[--repeats]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

AGENT = "wattplan"
BASELINES = ("slurm-powersave", "slurm")
METRICS = ("energy_kwh", "avg_jct_s", "p95_jct_s")
TOLERANCE = 0.05
"""The fidelity check: the replay within 5% of the mean of the setting's live runs, on every metric."""


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def line(name: str, replay: dict[str, Any], live: dict[str, Any]) -> str:
    """``NAME: energy +x%, avg JCT +y%, p95 +z% (replay against live kWh)``: the replay's error against live."""
    err = {k: replay[k] / live[k] - 1 for k in METRICS}
    return (
        f"{name}: energy {err['energy_kwh']:+.1%}, avg JCT {err['avg_jct_s']:+.1%}, p95 {err['p95_jct_s']:+.1%} "
        f"({replay['energy_kwh']:.3f} against {live['energy_kwh']:.3f} kWh)"
    )


def repeats(setting: str, replays: list[dict[str, Any]], lives: list[dict[str, Any]]) -> str:
    """``SETTING (n live runs): per metric the replay's error against the live mean, the live range``; a verdict.

    The replays of repeated runs are one replay when the runs' options are the same (the simulated Slurm is
    deterministic); if they differ, their mean is used and the line says so.
    """
    cells, ok = [], True
    for k in METRICS:
        live = [run[k] for run in lives]
        mean, replay = sum(live) / len(live), sum(r[k] for r in replays) / len(replays)
        err = replay / mean - 1
        ok = ok and abs(err) <= TOLERANCE
        low, high = min(live) / mean - 1, max(live) / mean - 1
        cells.append(f"{k.split('_')[0]} {err:+.1%} (live {low:+.1%}..{high:+.1%} of the mean)")
    same = all(all(r[k] == replays[0][k] for k in METRICS) for r in replays)
    verdict = "within 5% of the live mean" if ok else "NOT within 5% of the live mean"
    note = "" if same else "; the runs' replays differ: their mean"
    return f"{setting} ({len(lives)} live runs{note}): " + ", ".join(cells) + f": {verdict}"


def main() -> None:
    """Print every comparison."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--replays", type=Path, required=True)
    p.add_argument("--unmanaged", action="append", default=[], metavar="FAMILY=FILE")
    p.add_argument("--repeats", action="store_true", help="Also pool each setting's repeated runs (docstring).")
    args = p.parse_args()
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    unmanaged = dict(u.split("=", 1) for u in args.unmanaged)
    for run in args.runs:
        sim = args.replays / run.name / "sim"
        replay, live = _load(sim / AGENT / "summary.json"), _load(run / "managed.json")
        print(line(run.name, replay, live))
        group = groups.setdefault(run.name.rsplit("-", 1)[0], ([], []))
        group[0].append(replay)
        group[1].append(live)
        for prefix, live in unmanaged.items():
            if not run.name.startswith(prefix):
                continue
            policy = next(b for b in BASELINES if (sim / b / "summary.json").exists())
            print("  " + line(f"{policy} (live {live})", _load(sim / policy / "summary.json"), _load(Path(live))))
    if args.repeats:
        for setting, (replays, lives) in groups.items():
            if len(lives) > 1:
                print(repeats(setting, replays, lives))


if __name__ == "__main__":
    main()
