"""Where the energy mode's energy above the floor goes, by lever and phase, on six slices (issue 25).

Per slice and variant, one ``wattplan simulate`` of ``fifo-max`` and ``wattplan`` in the runtime-bounded
energy mode (``--objective efficiency --max-jct-increase 3``, CBC, 3 s per round; a variant adds its own
options), written to ``OUT/SLICE/VARIANT`` and reused when its ``summary.json`` exists (a killed run
resumes at the replays it had not finished). Then two tables:

* **results**: energy, captured share ``(E_ref - E) / (E_ref - E_floor)``, average and p95 JCT against
  ``fifo-max``, the **JCT allowance used** ``J / ((1 + x) J_ref)`` (1: the whole allowed average JCT
  spent; below 1: headroom left), restarts, solver seconds per round (mean and max);
* **split**: ``E - E_floor`` by lever (:mod:`planner.sim.energy_levers`: setting, GPU count, GPU type,
  pairing, powered idle GPUs, restarts) and by phase (saturated, light, tail rounds), in kWh, and the
  floor offset ``base - E_floor`` (at most 0 up to the floor's own limits).

Slices: the four 150-job slices of ``benchmarks/replay.py`` (three Gavel traces and Philly 6214e9, bursts
of 1-GPU jobs) and the two heavy slices of ``benchmarks/heavy_slices.py`` (two days of multi-GPU
arrivals at load above 1: Gavel ee9e8c and Philly 2869ce), cluster ``v100:32,p100:16``.

    PYTHONPATH=. .venv/bin/python benchmarks/energy_gap.py --workers 2 --out benchmarks/results/energy_gap
    PYTHONPATH=. .venv/bin/python benchmarks/energy_gap.py --variant tail10="--tail-bound 10" ...
    PYTHONPATH=. .venv/bin/python benchmarks/energy_gap.py --variant cap60="--power-cap-w {cap:0.6}" ...

A variant's ``{cap:F}`` is F times the slice's ``fifo-max`` highest round power (W) and ``{budget:F}`` F times its
energy (kWh), read from the ``current`` variant's ``fifo-max`` folder (so ``current`` runs first).
    PYTHONPATH=. .venv/bin/python benchmarks/energy_gap.py --report-only RUN_DIR   # one replay folder
"""

from __future__ import annotations

import argparse
import csv
import shlex
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.files.resources import resolve_trace
from wattplan.planner.sim.energy_levers import LEVERS, PHASES
from wattplan.planner.sim.replay import ReplaySpec

ROOT = Path(__file__).resolve().parent.parent
J_PER_KWH = 3.6e6
CLUSTER = "v100:32,p100:16"


@dataclass(frozen=True)
class Slice:
    name: str
    args: tuple[str, ...]


SLICES = (
    Slice("gavel-6214e9", ("6214e9.trace", "--start-s", "4180536", "--max-jobs", "150")),
    Slice("gavel-6c71a0", ("6c71a0.trace", "--start-s", "2510560", "--max-jobs", "150")),
    Slice("gavel-b436b2", ("b436b2.trace", "--start-s", "2716761", "--max-jobs", "150")),
    Slice("philly-6214e9", ("philly.csv", "--vc", "6214e9", "--start-s", "2320523", "--max-jobs", "150")),
    Slice("heavy-gavel-ee9e8c", ("ee9e8c.trace", "--start-s", "896743", "--end-s", "1069543")),
    Slice("heavy-philly-2869ce", ("philly.csv", "--vc", "2869ce", "--start-s", "685120", "--end-s", "857920")),
)
MODE = ("--objective", "efficiency", "--max-jct-increase", "3", "--time-limit", "3")


def spec_of(sl: Slice) -> ReplaySpec:
    """The slice's replay spec from its ``simulate`` arguments (trace, ``--vc``, ``--start-s``, ...)."""
    args = list(sl.args)
    trace, opts = args[0], dict(zip(args[1::2], args[2::2], strict=True))
    return ReplaySpec(
        trace=resolve_trace(Path(trace)),
        cluster=CLUSTER,
        virtual_cluster=opts.get("--vc"),
        start_s=float(opts["--start-s"]) if "--start-s" in opts else None,
        end_s=float(opts["--end-s"]) if "--end-s" in opts else None,
        max_jobs=int(opts["--max-jobs"]) if "--max-jobs" in opts else None,
    )


def resolve(extra: Sequence[str], reference: Path) -> list[str]:
    """``extra`` with ``{cap:F}`` as F x the highest round power (W) and ``{budget:F}`` F x the energy (kWh).

    ``reference`` is the slice's ``fifo-max`` folder of the ``current`` variant (no budget).
    """
    if not any("{" in a for a in extra):
        return list(extra)
    peak = max(float(r["power_w"]) for r in _rows(reference))
    energy = read_json(reference / "summary.json")["energy_kwh"]
    out = []
    for a in extra:
        if a.startswith("{cap:"):
            a = f"{float(a[5:-1]) * peak:.0f}"
        elif a.startswith("{budget:"):
            a = f"{float(a[8:-1]) * energy:.3f}"
        out.append(a)
    return out


def run(sl: Slice, variant: str, extra: Sequence[str], out: Path) -> Path:
    """Replay ``fifo-max`` and ``wattplan`` on ``sl`` with the mode and ``extra``; the folder (reused when done)."""
    folder = out / sl.name / variant
    extra = resolve(extra, out / sl.name / "current" / "fifo-max")
    if not (folder / "wattplan" / "summary.json").exists():
        cmd = [sys.executable, str(ROOT / "cli.py"), "simulate", *sl.args, "--cluster", CLUSTER, "--engine", "rounds"]
        cmd += ["-p", "fifo-max", "-p", "wattplan", *MODE, *extra, "-q", "--no-plots", "-o", str(folder)]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return folder


def _rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "rounds.csv").open() as f:
        return list(csv.DictReader(f))


def split_by_phase(run_dir: Path) -> dict[str, dict[str, float]]:
    """``{phase: {lever or "base" or "energy": kWh}}`` summed over the rounds of ``run_dir/rounds.csv``."""
    out = {p: dict.fromkeys(("energy", "base", *LEVERS), 0.0) for p in PHASES}
    for r in _rows(run_dir):
        if not r.get("phase"):
            raise SystemExit(f"{run_dir}/rounds.csv has no lever columns: replay it again with this version")
        acc = out[r["phase"]]
        acc["energy"] += float(r["energy_j"]) / J_PER_KWH
        for name in ("base", *LEVERS):  # rounds.csv before the gpu_type lever: GPU type counted with count
            acc[name] += float(r.get(f"{name}_j") or 0.0) / J_PER_KWH
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def result_row(name: str, variant: str, folder: Path, allowed: float = 0.03) -> str:
    """One results row (module docstring) from a simulate folder holding ``fifo-max/`` and ``wattplan/``."""
    s = read_json(folder / "wattplan" / "summary.json")
    ref = s["reference"]  # fifo-max with no budget, whatever the variant's budget
    if ref.get("p95_jct_s") is None:
        ref = read_json(folder / "fifo-max" / "summary.json")
    rows = _rows(folder / "wattplan")
    solver = [float(r["solver_s"]) for r in rows]
    p95 = s["p95_jct_s"] / ref["p95_jct_s"] - 1.0
    used = s["avg_jct_s"] / ((1.0 + allowed) * ref["avg_jct_s"])
    restarts = sum(int(r["restarted"]) for r in rows)
    return (
        f"| {name} | {variant} | {s['energy_kwh']:.2f} | {ref['energy_kwh']:.2f} | {s['energy_floor_kwh']:.2f} | "
        f"{s['captured_share']:.0%} | {_pct(s['jct_increase'])} | {_pct(p95)} | {used:.0%} | {restarts} | "
        f"{sum(solver) / len(solver):.2f} / {max(solver):.2f} |"
    )


def split_rows(name: str, variant: str, run_dir: Path, floor_kwh: float) -> list[str]:
    """Split rows (module docstring): one per phase with rounds, then the total with the floor offset."""
    phases = split_by_phase(run_dir)
    lines = []
    for phase, acc in phases.items():
        if acc["energy"] == 0.0:
            continue
        levers = " | ".join(f"{acc[k]:.2f}" for k in LEVERS)
        lines.append(f"| {name} | {variant} | {phase} | {acc['energy']:.2f} | {levers} | |")
    total = {k: sum(acc[k] for acc in phases.values()) for k in ("energy", "base", *LEVERS)}
    gap = total["energy"] - floor_kwh
    levers = " | ".join(f"**{total[k]:.2f}** ({total[k] / gap:.0%})" for k in LEVERS)
    lines.append(
        f"| {name} | {variant} | all, {gap:.2f} above floor | {total['energy']:.2f} | {levers} | "
        f"{total['base'] - floor_kwh:+.2f} |"
    )
    return lines


RESULT_HEAD = (
    "| slice | variant | energy kWh | fifo-max kWh | floor kWh | captured | avg JCT | p95 JCT | JCT allowance used "
    "| restarts | solver s/round mean / max |\n|---|---|---|---|---|---|---|---|---|---|---|"
)
SPLIT_HEAD = (
    "| slice | variant | phase | energy kWh | setting | GPU count | GPU type | pairing | idle GPUs | restarts "
    "| floor offset |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "energy_gap")
    ap.add_argument("--workers", type=int, default=2, help="replays at once")
    ap.add_argument("--slices", default="all", help="comma-separated slice names (run in that order), or all")
    ap.add_argument(
        "--variant", action="append", default=[], metavar='NAME="OPTIONS"', help="a variant's simulate options"
    )
    ap.add_argument("--no-baseline", action="store_true", help="run only the named variants")
    ap.add_argument("--report-only", type=Path, nargs="*", help="split these replay folders (rounds.csv) only")
    args = ap.parse_args(argv)
    if args.report_only:
        print(SPLIT_HEAD)
        for run_dir in args.report_only:
            floor = read_json(run_dir / "summary.json").get("energy_floor_kwh") or 0.0
            print("\n".join(split_rows(run_dir.parent.name, run_dir.name, run_dir, floor)))
        return
    by_name = {s.name: s for s in SLICES}
    chosen = list(SLICES) if args.slices == "all" else [by_name[n] for n in args.slices.split(",")]
    variants: list[tuple[str, tuple[str, ...]]] = [] if args.no_baseline else [("current", ())]
    for v in args.variant:
        name, _, opts = v.partition("=")
        variants.append((name, tuple(shlex.split(opts))))
    tasks = [(sl, name, extra) for sl in chosen for name, extra in variants]
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        folders = list(pool.map(lambda t: run(t[0], t[1], t[2], args.out), tasks))
    print(RESULT_HEAD)
    for (sl, name, _), folder in zip(tasks, folders, strict=True):
        print(result_row(sl.name, name, folder))
    print()
    print(SPLIT_HEAD)
    for (sl, name, _), folder in zip(tasks, folders, strict=True):
        floor = read_json(folder / "wattplan" / "summary.json")["energy_floor_kwh"]
        print("\n".join(split_rows(sl.name, name, folder / "wattplan", floor)))


if __name__ == "__main__":
    main()
