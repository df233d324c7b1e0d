"""Replays at the speed of events: wall time and output identity before and after a change (issue 27, item 2).

Runs ``wattplan simulate`` from a source tree (``--tree``, default this checkout) on the four public
150-job slices of :data:`benchmarks.energy_gap.SLICES` (every policy, no budget, ``--time-limit 3``) and,
with ``--long``, on the issue's command (``6c71a0.trace``, first 40 jobs, every policy, 2 s per round,
an 8 kW cap), each into ``OUT/<name>``, and records each run's wall time in ``OUT/times.json`` and its CPU
time in ``OUT/cpu.json``.
``--compare A B`` then checks that two such folders hold the same results: every CSV and JSON file
byte for byte, except the wall-clock fields (``rounds.csv``'s ``solver_s``; ``summary.json``'s and
``comparison.*``'s ``solver_s_*`` and ``written_by``), and prints a markdown table of the times.

    python benchmarks/event_replay.py --tree /tmp/base --out /tmp/before --long   # before the change
    python benchmarks/event_replay.py --out /tmp/after --long                    # after it
    python benchmarks/event_replay.py --compare /tmp/before /tmp/after
    python benchmarks/event_replay.py --out /tmp/events --long --extra "--replan events"
    python benchmarks/event_replay.py --fidelity /tmp/after /tmp/events   # what re-planning at events changes

Every run starts afresh (``--fresh``): a folder left by an earlier run is replayed again, not resumed.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from wattplan.planner.sim.metrics import TIMING_KEYS as SUMMARY_TIMING_KEYS

HERE = Path(__file__).resolve().parent.parent
SLICES = {
    "gavel-6214e9": ("6214e9.trace", "--start-s", "4180536", "--max-jobs", "150"),
    "gavel-6c71a0": ("6c71a0.trace", "--start-s", "2510560", "--max-jobs", "150"),
    "gavel-b436b2": ("b436b2.trace", "--start-s", "2716761", "--max-jobs", "150"),
    "philly-6214e9": ("philly.csv", "--vc", "6214e9", "--start-s", "2320523", "--max-jobs", "150"),
}
"""The public slices (the first four of ``benchmarks/energy_gap.py``'s ``SLICES``)."""
SLICE_OPTIONS = ("--cluster", "v100:32,p100:16", "--policy", "all", "--time-limit", "3")
EXACT_OPTIONS = ("--cluster", "v100:32,p100:16", "--policy", "wattplan", "--time-limit", "120")
"""The identity check of ``wattplan`` itself: the first 30 jobs of each slice, with a time limit that never binds.

With ``--time-limit 3`` the 150-job rounds stop at the limit, so which plan a round gets depends on the machine's
load: two runs of the same code differ. Rounds that solve to the end are deterministic and must match."""
LONG = (
    "6c71a0.trace",
    "--cluster",
    "v100:32,p100:16",
    "--policy",
    "all",
    "--max-jobs",
    "40",
    "--time-limit",
    "2",
    "--power-cap-w",
    "8000",
)
"""The issue's command: 15 min 34 s before the change."""
TIMING_COLUMNS = ("solver_s", "clock_stops")
"""``rounds.csv`` columns a comparison skips: they follow the machine's speed and load."""
OWN_FILES = ("times.json", "cpu.json")
TIMING_KEYS = (*SUMMARY_TIMING_KEYS, "written_by", "replan", "rounds_decided")
"""Keys a comparison skips: the summary's wall-clock fields, and the replay's own counts of how it decided (new at
2baf2a3)."""


def run(tree: Path, name: str, args: tuple[str, ...], out: Path) -> tuple[float, float]:
    """Run ``simulate`` from ``tree`` into ``out/name``; return its wall time and its CPU time (s).

    The CPU time is user + system of the command and every process it waited for (solver workers, CBC): on a shared
    machine it moves far less with the load than the wall time does.
    """
    cmd = [
        sys.executable,
        "cli.py",
        "simulate",
        *args,
        "--engine",
        "rounds",
        "--out",
        str(out / name),
        "--no-plots",
        "-q",
        "--fresh",
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - begin
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _strip_json(value: Any) -> Any:
    """``value`` without wall-clock keys, and with a note's solve time (``in 0.02 s``) blanked."""
    if isinstance(value, dict):
        return {k: _strip_json(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip_json(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"in [0-9.]+ s\b", "in ? s", value)
    return value


def _nodes_on(row: dict[str, str]) -> str:
    """A round's powered nodes as sorted ``type:u`` pairs with u > 0.

    Read from the packed ``nodes_on`` column (before 87f4f65) or the ``nodes_on_<type>`` columns (after), so both
    layouts compare.
    """
    pairs = dict(p.split(":") for p in row.get("nodes_on", "").split())
    pairs.update({k.removeprefix("nodes_on_"): v for k, v in row.items() if k.startswith("nodes_on_")})
    return " ".join(f"{g}:{u}" for g, u in sorted(pairs.items()) if float(u) != 0)


def _strip_csv(text: str) -> list[list[str]]:
    """The rows without wall-clock columns, with the powered nodes in one canonical column.

    The ``policy`` column (new in 87f4f65) is left out: the folder names the policy.
    """
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        return []
    skip = {*TIMING_COLUMNS, *TIMING_KEYS, "policy", "nodes_on"}
    names = [n for n in rows[0] if n not in skip and not n.startswith("nodes_on_")]
    nodes = "nodes_on" in rows[0] or any(n.startswith("nodes_on_") for n in rows[0])
    return [[r[n] for n in names] + ([_nodes_on(r)] if nodes else []) for r in rows]


def _result_files(folder: Path) -> dict[str, Path]:
    """The folder's result files by their path in the per-policy layout (``POLICY/rounds.csv``).

    A one-policy replay written before 87f4f65 keeps its files at the top; they are named as if in ``POLICY/``,
    and the comparison files a one-policy replay now also writes at the top are left out on both sides.
    """
    files = {str(p.relative_to(folder)): p for p in folder.rglob("*") if p.suffix in (".csv", ".json")}
    files = {k: v for k, v in files.items() if v.name not in OWN_FILES}
    top = folder / "summary.json"
    if top.exists():
        policy = json.loads(top.read_text())["policy"]
        files = {(k if "/" in k else f"{policy}/{k}"): v for k, v in files.items()}
    if len({k.split("/")[0] for k in files if "/" in k}) == 1:
        files = {k: v for k, v in files.items() if "/" in k}
    return files


def differences(a: Path, b: Path) -> list[str]:
    """The result files of ``a`` and ``b`` that differ beyond wall-clock fields (paths in the per-policy layout)."""
    out = []
    fa, fb = _result_files(a), _result_files(b)
    for rel in sorted(fa.keys() | fb.keys()):
        pa, pb = fa.get(rel), fb.get(rel)
        if pa is None or pb is None:
            out.append(f"{rel}: only in {'b' if pb is not None else 'a'}")
        elif pa.suffix == ".json":
            if _strip_json(json.loads(pa.read_text())) != _strip_json(json.loads(pb.read_text())):
                out.append(rel)
        elif _strip_csv(pa.read_text()) != _strip_csv(pb.read_text()):
            out.append(rel)
    return out


FIDELITY = (("energy_kwh", "energy kWh"), ("avg_jct_s", "avg JCT h"), ("p95_jct_s", "p95 JCT h"))


def _summaries(folder: Path) -> dict[str, dict[str, Any]]:
    """``policy -> summary.json`` of one replay folder (one policy at its top, or one folder per policy)."""
    found = sorted(folder.rglob("summary.json"))
    return {str(json.loads(p.read_text())["policy"]): json.loads(p.read_text()) for p in found}


def fidelity(a: Path, b: Path) -> None:
    """Print, per run and policy, B's energy and JCTs against A's, and how many rounds each asked its policy."""
    print("| run | policy | rounds decided A / B | " + " | ".join(f"{t} A / B (B-A)" for _, t in FIDELITY) + " |")
    print("|---|---|---|" + "---|" * len(FIDELITY))
    for run_a in sorted(p for p in a.iterdir() if p.is_dir()):
        sa, sb = _summaries(run_a), _summaries(b / run_a.name) if (b / run_a.name).is_dir() else {}
        for policy in (p for p in sa if p in sb):
            x, y = sa[policy], sb[policy]
            cells = []
            for key, _ in FIDELITY:
                va, vb = x.get(key), y.get(key)
                scale = 1.0 if key == "energy_kwh" else 1 / 3600
                if va is None or vb is None:
                    cells.append("-")
                    continue
                cells.append(f"{va * scale:.2f} / {vb * scale:.2f} ({(vb / va - 1) * 100:+.2f}%)")
            asked = [d.get("rounds_decided", d["rounds_simulated"]) for d in (x, y)]
            decided = f"{asked[0]} / {asked[1]}"
            print(f"| {run_a.name} | {policy} | {decided} | " + " | ".join(cells) + " |")


def main() -> None:
    """Measure (``--out``) or compare (``--compare A B``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, default=HERE, help="source tree to run (default: this checkout)")
    ap.add_argument("--out", type=Path, help="results folder")
    ap.add_argument("--long", action="store_true", help="also the issue's 15-minute command")
    ap.add_argument("--only-long", action="store_true", help="only the issue's command")
    ap.add_argument("--exact", action="store_true", help="only wattplan on 30-job slices, solved to the end")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--fidelity", nargs=2, type=Path, metavar=("A", "B"), help="B's energy and JCTs against A's")
    ap.add_argument("--extra", default="", help="more simulate options for every run, e.g. '--replan events'")
    args = ap.parse_args()
    if args.fidelity:
        fidelity(*args.fidelity)
        return
    if args.compare:
        a, b = args.compare
        ta, tb = (json.loads((p / "times.json").read_text()) for p in (a, b))
        ca, cb = (json.loads((p / "cpu.json").read_text()) if (p / "cpu.json").exists() else {} for p in (a, b))
        print("| run | before s wall / CPU | after s wall / CPU | identical |")
        print("|---|---:|---:|---|")
        bad = False
        for name in ta:
            if name not in tb:
                continue
            diff = differences(a / name, b / name)
            bad |= bool(diff)
            same = "yes" if not diff else ", ".join(diff)
            before, after = f"{ta[name]:.1f} / {ca.get(name, 0):.1f}", f"{tb[name]:.1f} / {cb.get(name, 0):.1f}"
            print(f"| {name} | {before} | {after} | {same} |")
        sys.exit(1 if bad else 0)
    if args.out is None:
        ap.error("give --out or --compare")
    args.out.mkdir(parents=True, exist_ok=True)
    times_path = args.out / "times.json"
    times: dict[str, float] = json.loads(times_path.read_text()) if times_path.exists() else {}
    runs = [] if args.only_long or args.exact else [(n, (*s, *SLICE_OPTIONS)) for n, s in SLICES.items()]
    if args.exact:
        runs = [(f"exact-{n}", (*s[:-1], "30", *EXACT_OPTIONS)) for n, s in SLICES.items()]
    if args.long or args.only_long:
        runs.append(("long-6c71a0-40", LONG))
    cpu_path = args.out / "cpu.json"
    cpu: dict[str, float] = json.loads(cpu_path.read_text()) if cpu_path.exists() else {}
    for name, opts in runs:
        times[name], cpu[name] = run(args.tree.resolve(), name, (*opts, *args.extra.split()), args.out.resolve())
        times_path.write_text(json.dumps(times, indent=1))
        cpu_path.write_text(json.dumps(cpu, indent=1))
        print(f"{name}: {times[name]:.1f} s wall, {cpu[name]:.1f} s CPU", flush=True)


if __name__ == "__main__":
    main()
