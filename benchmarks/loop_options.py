"""The options the loop took over from the round-based replay, measured on two live families (issue 43).

Per family (``instances/live/gavel_mix.trace``, ``instances/live/philly_shape.trace``), replays on the simulated
Slurm with the live comparison's settings (``v100:32``, time scale 30, 30 s load, 300 s idle lead, 360 s rounds,
240 s restart, the runtime-bounded mode at +3%, HiGHS 2 s, no pairs), each reused when its ``summary.json`` exists:

* ``base``: wattplan and Slurm alone;
* ``noise-S``: the same with ``--noise 0.1 --seed S`` for S = 0, 1, 2 (every job's throughput drawn per start and
  round from ``U[0.9, 1.1]``);
* ``horizon2``: wattplan with ``--horizon 2``;
* ``budget-P``: wattplan with ``--energy-budget-kwh E --budget-period-s 3600``, ``E`` = P% of the base run's mean
  energy per hour (its energy over its window's hours), P = 90 and 70.

Prints one Markdown table per family (energy over the run's own window, average and p95 JCT, makespan, requeues,
wall seconds; for the budgets each hour's energy and its largest share of ``E``) and writes ``OUT/loop_options.md``.

Usage: ``python benchmarks/loop_options.py --out OUT``.
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
FAMILIES = ("gavel_mix", "philly_shape")
COMMON = [
    "--cluster", "v100:32", "--time-scale", "30", "--load-s", "30", "--up-before-s", "300", "--round-s", "360",
    "--restart-s", "240", "--max-jct-increase", "3", "--solver", "highs", "--time-limit", "2", "--min-pair-rate", "1",
    "--no-plots", "-q",
]  # fmt: skip
PERIOD_S = 3600.0
BUDGET_SHARES = (90, 70)


def run(trace: Path, folder: Path, policies: list[str], extra: list[str]) -> dict[str, dict[str, Any]]:
    """``simulate`` of ``policies`` into ``folder`` (reused when every summary is there); summaries and wall s."""
    if not all((folder / p / "summary.json").exists() for p in policies):
        argv = [*WATTPLAN, "simulate", str(trace), *[a for p in policies for a in ("-p", p)], *COMMON, *extra]
        t0 = time.perf_counter()
        done = subprocess.run([*argv, "-o", str(folder)], capture_output=True, text=True, timeout=3 * 3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
        (folder / "command_wall_s.txt").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return {p: json.loads((folder / p / "summary.json").read_text()) for p in policies}


def _num(value: float | None, fmt: str) -> str:
    """``value`` formatted, or ``-`` when the run has none (no job finished)."""
    return "-" if value is None else format(value, fmt)


def line(name: str, s: dict[str, Any], budget: float | None = None) -> str:
    """One table row of a run's summary (``budget``: E in kWh, for the per-hour figures); its stop when not done."""
    hours = ""
    if budget is not None:
        per = [p["energy_kwh"] for p in s["energy_budget"]["periods"]]
        hours = f"{', '.join(f'{e:.2f}' for e in per)} (max {max(per) / budget:.1%} of E)"
    jobs = f"{s['completed']}/{s['jobs']}" + ("" if s["stop_reason"] == "completed" else f" ({s['stop_reason']})")
    return (
        f"| {name} | {s['energy_kwh']:.3f} | {_num(s['avg_jct_s'], ',.0f')} | {_num(s['p95_jct_s'], ',.0f')} "
        f"| {_num(s['makespan_s'], ',.0f')} | {s['requeues']} | {jobs} | {s['wall_s']:.1f} | {hours} |"
    )


def family_table(family: str, out: Path) -> list[str]:
    """The family's replays and its table."""
    trace = Path("instances/live") / f"{family}.trace"
    rows = [
        f"**{family}**",
        "",
        "| run | energy kWh | avg JCT s | p95 JCT s | makespan s | requeues | jobs | wall s | energy per hour kWh |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = run(trace, out / family / "base", ["wattplan", "slurm"], [])
    rows += [line("Slurm alone", base["slurm"]), line("wattplan", base["wattplan"])]
    for seed in (0, 1, 2):
        noisy = run(
            trace, out / family / f"noise-{seed}", ["wattplan", "slurm"], ["--noise", "0.1", "--seed", str(seed)]
        )
        rows += [line(f"Slurm alone, noise 0.1 seed {seed}", noisy["slurm"])]
        rows += [line(f"wattplan, noise 0.1 seed {seed}", noisy["wattplan"])]
    rows.append(
        line("wattplan, horizon 2", run(trace, out / family / "horizon2", ["wattplan"], ["--horizon", "2"])["wattplan"])
    )
    w = base["wattplan"]
    hours = (w["makespan_s"] + 300.0) / PERIOD_S  # the energy window: the idle lead and the makespan
    for share in BUDGET_SHARES:
        budget = round(share / 100 * w["energy_kwh"] / hours, 4)
        flags = ["--energy-budget-kwh", f"{budget:g}", "--budget-period-s", f"{PERIOD_S:g}"]
        summary = run(trace, out / family / f"budget-{share}", ["wattplan"], flags)["wattplan"]
        rows.append(line(f"wattplan, budget {share}% = {budget:g} kWh/h", summary, budget))
    return rows


def main() -> None:
    """Replay both families and write the tables."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    lines: list[str] = []
    for family in FAMILIES:
        lines += [*family_table(family, args.out), ""]
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "loop_options.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
