"""The runtime-bounded energy mode on the one scheduler: the six slices of ``slices.py`` on the simulated Slurm.

Per slice (``slices.SLICES``, cluster ``v100:32,p100:16``), one ``wattplan simulate`` of Slurm
alone (``slurm``), ``fifo-max`` and ``wattplan`` through the agent, the agent in the runtime-bounded energy mode
(``--objective efficiency --max-jct-increase 3``, CBC, 3 s per round, rounds on events only), every node powered
as live. Writes ``OUT/SLICE/`` (the replay) and ``OUT/energy_mode.md``: per slice the energy of each over the
replay's common window (to the longest of the three makespans, docs/design.md §10.8), the powered floor over it
(:func:`planner.planning.powered_floor`: every node on from the first arrival), wattplan's change against Slurm
alone, the share of Slurm alone's saving it captured ``(E_slurm - E) / (E_slurm - E_floor)`` (and of ``fifo-max``'s,
the round-based tables' reference), and its average and p95 JCT against Slurm alone's. Reuses a slice whose
``comparison.json`` exists (a replay made before the common window is refused: give a new ``--out``).

``--governor RULE`` replays with that rule of the JCT governor (``accrued`` or ``projected``; default: the
agent's and the replay's own default).

Usage: ``python benchmarks/energy_mode_slurm.py --out OUT [--slices a,b] [--governor RULE]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from slices import SLICES, Slice

WATTPLAN = [sys.executable, "-m", "wattplan"]
MODE = ["--objective", "efficiency", "--max-jct-increase", "3", "--solver", "cbc", "--time-limit", "3"]


def replay(name: str, selection: tuple[str, ...], out: Path, governor: list[str]) -> dict[str, dict[str, Any]]:
    """The slice's replay on the simulated Slurm (reused when done); each policy's summary."""
    folder = out / name
    if not (folder / "comparison.json").exists():
        argv = [
            *WATTPLAN, "simulate", *selection, "--cluster", "v100:32,p100:16",
            "-p", "slurm", "-p", "fifo-max", "-p", "wattplan", *MODE, *governor, "--no-periodic-rounds",
            "--out", str(folder),
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=4 * 3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return {p: json.loads((folder / p / "summary.json").read_text()) for p in ("slurm", "fifo-max", "wattplan")}


def floor_kwh(sl: Slice, s: dict[str, dict[str, Any]]) -> float:
    """The slice's powered floor over the replay's common window (kWh), as the summaries carry it."""
    given = s["wattplan"].get("energy_floor_kwh")
    if given is None:
        raise SystemExit(f"the floor LP of {sl.name} was not solved: {s['wattplan'].get('energy_floor_note')}")
    return float(given)


def common(summary: dict[str, Any]) -> float:
    """The run's energy over the replay's common window (kWh, ``energy_common_kwh``, docs/design.md §10.8)."""
    value = summary.get("energy_common_kwh")
    if value is None:
        raise SystemExit("a replay made before the common window (no energy_common_kwh): give a new --out")
    return float(value)


def row(name: str, s: dict[str, dict[str, Any]], floor: float) -> str:
    """One table row: energies, the floor, wattplan against Slurm alone, captured share, JCT ratios, requeues.

    Energies and the floor over the replay's common window (to the longest makespan of the three runs).
    """
    alone, fifo, wp = common(s["slurm"]), common(s["fifo-max"]), common(s["wattplan"])
    captured = (alone - wp) / (alone - floor)
    of_fifo = (fifo - wp) / (fifo - floor)
    w = s["wattplan"]
    return (
        f"| {name} | {alone:.1f} | {fifo:.1f} | {wp:.1f} | {floor:.1f} | "
        f"{wp / alone - 1:+.1%} | {captured:.1%} | {of_fifo:.1%} | "
        f"{w['avg_jct_s'] / s['slurm']['avg_jct_s']:.2f} | {w['p95_jct_s'] / s['slurm']['p95_jct_s']:.2f} | "
        f"{w['requeues']} | {w['rounds']} | {w['wall_s']:.0f} |"
    )


def main() -> None:
    """Replay the slices, write and print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--slices", help="Comma-separated slice names (default: all six).")
    p.add_argument("--governor", choices=("accrued", "projected"), help="The JCT governor's rule.")
    args = p.parse_args()
    chosen = [s for s in SLICES if args.slices is None or s.name in args.slices.split(",")]
    lines = [
        "| slice | Slurm alone kWh | fifo-max kWh | wattplan kWh | powered floor kWh | wattplan vs Slurm alone "
        "| captured of Slurm alone's saving | of fifo-max's | avg JCT x | p95 JCT x | requeues | rounds "
        "| wattplan wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sl in chosen:
        governor = [] if args.governor is None else ["--governor", args.governor]
        summaries = replay(sl.name, sl.args, args.out, governor)
        lines.append(row(sl.name, summaries, floor_kwh(sl, summaries)))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "energy_mode.md").write_text("\n".join(lines) + "\n")
        print(lines[-1], flush=True)


if __name__ == "__main__":
    main()
