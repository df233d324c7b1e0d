"""The most any scheduler could save against ``slurm`` and ``maxq`` with powered nodes, under the aim's JCT limits.

Issue 44's aim: at most +3% average and +10% p95 JCT against ``slurm`` (Slurm alone, every node on, full power),
at least 30% less energy than ``slurm`` and 12% less than ``maxq``. For each live family (``instances/live``) and
cluster (``v100:16``, ``v100:32``) this replays ``slurm`` and ``maxq`` on the simulated Slurm (time scale 30, as
``benchmarks/baselines_slurm.py``) and solves lower bounds on the energy of every schedule that keeps the limits,
with nodes that may be off whenever no job holds them at no cost (no boot time, no boot energy, a node's static
power charged only for its GPUs at work: :func:`planner.planning.deadline_floor`, the floor's accounting, capacity
relaxed). With ``J_j`` ``slurm``'s JCTs, ``N`` jobs and ``k = floor(0.95 (N - 1))``:

* ``avg`` (an LP, certified by its duals): ``sum_j JCT_j <= 1.03 sum_j J_j``, each JCT at least the job's
  configuration time (``processing_sum_s``);
* ``aim`` (a MILP, HiGHS's proven bound): the same, and every job within ``1.1 p95(J)`` but any ``N - k - 1`` of
  them (a p95 within the limit needs its ``k + 1`` shortest JCTs within it).

On these option sets: ``every lever`` (any allowed GPU count, setting and pair), and ``by-job X%`` (what the
agent's default mode may run at ``--max-slowdown X``: counts up to the request, rates at least ``1 / (1 + X/100)``
of the request's full speed, pairs that keep it: :func:`planner.sim.round_instance.workload_instance` with
``by_job``). A schedule's energy over its own window (first arrival to last completion, the replays' ``energy_kwh``)
is at least the bound, so ``1 - bound / E`` is the most it saves against a baseline's ``E`` over its own window.
A ceiling under the aim's 30% (against ``slurm``) or 12% (against ``maxq``) proves the aim out of reach there for
every schedule with those options.

``--runs DIR`` adds, beside each ``by-job X%`` row, the by-job replay of ``benchmarks/baselines_slurm.py
--max-slowdown X --power-down [--pairs]`` under ``DIR/FAMILY-CLUSTER-sdX-pd-pairs/wattplan/`` (the agent's
default: pairs and power-down) or else ``DIR/FAMILY-CLUSTER-sdX-pd/wattplan/``, where there is one: its energy
and the share of the most its options could save against ``slurm`` (the ``aim`` bound) that it saved.

    python benchmarks/powered_ceiling.py [--out FILE.md] [--families a,b] [--clusters v100:16] \
        [--slowdowns 5,10,25,100] [--runs benchmarks/results/issue44/pairs]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.control.slurm_replay import SLURM_ALONE, SLURM_MAXQ, SimulatedCluster, replay_on_slurm
from wattplan.planner.files.resources import shipped
from wattplan.planner.sim.replay import ReplaySpec, prepare
from wattplan.planner.sim.round_instance import workload_instance
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import reference_ranks

FAMILIES = ("gavel_mix", "philly_shape", "two_waves")
CLUSTERS = ("v100:16", "v100:32")
TIME_SCALE = 30.0
"""As ``benchmarks/baselines_slurm.py`` and the live runs."""
AVERAGE, P95 = 0.03, 0.10
"""The aim's JCT limits against ``slurm``'s."""
AIM_SLURM, AIM_MAXQ = 0.30, 0.12
"""The aim's savings against ``slurm`` and ``maxq``."""
J_PER_KWH = 3.6e6
WAIT_SHARE = "wait share"
"""The key of ``slurm``'s waits (first start less arrival) as a share of its JCT sum in :func:`ceilings`' map."""


@dataclass(frozen=True)
class Ceiling:
    """One option set's bounds (kWh; None: not solved) and the solver's notes."""

    options: str
    avg_kwh: float | None
    aim_kwh: float | None
    note: str


def ceilings(
    family: str, cluster: str, slowdowns: Sequence[float], time_limit_s: float
) -> tuple[dict[str, float], list[Ceiling]]:
    """``slurm``'s and ``maxq``'s energies (kWh), ``slurm``'s :data:`WAIT_SHARE`, each option set's bounds."""
    spec = ReplaySpec(trace=shipped(f"live/{family}.trace"), cluster=cluster, rules=RoundRules())
    prepared = prepare(spec)
    setup = SimulatedCluster(time_scale=TIME_SCALE)
    runs = {p: replay_on_slurm(spec, p, setup, prepared=prepared) for p in (SLURM_ALONE, SLURM_MAXQ)}
    energy = {p: float(r.summary["energy_kwh"]) for p, r in runs.items()}
    ref = runs[SLURM_ALONE].jobs
    if any(r["finish_s"] is None or r["start_s"] is None for r in ref):
        raise SystemExit(f"{family} {cluster}: slurm left jobs unfinished")
    waited = sum(float(r["start_s"]) - float(r["arrival_s"]) for r in ref)
    arrival = {r["job_id"]: float(r["arrival_s"]) for r in ref}
    jct, ranked, k = reference_ranks({r["job_id"]: float(r["finish_s"]) for r in ref}, arrival)
    order = [jct[j] for j in ranked]
    total_s = (1 + AVERAGE) * sum(order)
    energy[WAIT_SHARE] = waited / sum(order)
    windows = dict.fromkeys(jct, (1 + P95) * float(np.percentile(order, 95)))
    free = max(len(order) - k - 1, 0)
    workload, ctx = prepared
    fresh = [JobState.new(s) for s in workload.jobs]
    option_sets: dict[str, Instance] = {"every lever": workload_instance(ctx.real, fresh)}
    for x in slowdowns:
        limited = replace(ctx.real, rules=replace(ctx.real.rules, slurm_starts=True, max_slowdown=x / 100))
        option_sets[f"by-job {x:g}%"] = workload_instance(limited, fresh, by_job=True)
    out = []
    for name, inst in option_sets.items():
        avg = planning.deadline_floor(inst, {}, 0, total_s, time_limit_s)
        aim = planning.deadline_floor(inst, windows, free, total_s, time_limit_s)
        out.append(Ceiling(name, _kwh(avg.energy_j), _kwh(aim.energy_j), f"avg: {avg.note}; aim: {aim.note}"))
    return energy, out


def _kwh(j: float | None) -> float | None:
    return None if j is None else j / J_PER_KWH


def _saving(bound: float | None, e: float, aim: float) -> str:
    """``1 - bound / e``, bold when below the aim (the aim is then out of reach)."""
    if bound is None:
        return "not solved"
    s = 1 - bound / e
    return f"**{s:.1%}**" if s < aim else f"{s:.1%}"


HEAD = (
    "| family | cluster | slurm kWh | slurm's waits, of its JCT sum | maxq kWh | options | bound, avg kWh "
    "| bound, aim kWh | most saved vs slurm "
    "(avg / aim) | most saved vs maxq (avg / aim) | by-job replay kWh | its saving vs slurm, of the most |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _replayed(runs: Path | None, family: str, cluster: str, options: str, e_slurm: float, bound: float | None) -> str:
    """The by-job replay's cells for a ``by-job X%`` row (``-`` where there is none)."""
    if runs is None or not options.startswith("by-job ") or bound is None:
        return "- | -"
    x = options.removeprefix("by-job ").removesuffix("%")
    base = runs / f"{family}-{cluster.replace(':', '')}-sd{x}-pd"
    for folder, label in ((Path(f"{base}-pairs"), "pairs, power-down"), (base, "power-down")):
        summary = folder / "wattplan" / "summary.json"
        if summary.exists():
            e = float(json.loads(summary.read_text())["energy_kwh"])
            return f"{e:.3f} ({label}) | {1 - e / e_slurm:.1%}, {(e_slurm - e) / (e_slurm - bound):.0%}"
    return "- | -"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--clusters", default=",".join(CLUSTERS))
    ap.add_argument("--slowdowns", default="5,10,25,100", help="the by-job mode's --max-slowdown values (%%)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per LP or MILP")
    ap.add_argument("--out", type=Path, help="also write the table here (markdown)")
    ap.add_argument(
        "--runs", type=Path, help="baselines_slurm.py's --out with --power-down [--pairs]: the by-job replays"
    )
    args = ap.parse_args(argv)
    slowdowns = [float(x) for x in args.slowdowns.split(",") if x]
    lines, notes = [HEAD], []
    print(HEAD, flush=True)
    for family in args.families.split(","):
        for cluster in args.clusters.split(","):
            begin = time.perf_counter()
            energy, found = ceilings(family, cluster, slowdowns, args.time_limit)
            e_slurm, e_maxq = energy[SLURM_ALONE], energy[SLURM_MAXQ]
            for c in found:
                cells = [
                    family,
                    cluster,
                    f"{e_slurm:.3f}",
                    f"{energy[WAIT_SHARE]:.0%}",
                    f"{e_maxq:.3f}",
                    c.options,
                    "-" if c.avg_kwh is None else f"{c.avg_kwh:.3f}",
                    "-" if c.aim_kwh is None else f"{c.aim_kwh:.3f}",
                    f"{_saving(c.avg_kwh, e_slurm, AIM_SLURM)} / {_saving(c.aim_kwh, e_slurm, AIM_SLURM)}",
                    f"{_saving(c.avg_kwh, e_maxq, AIM_MAXQ)} / {_saving(c.aim_kwh, e_maxq, AIM_MAXQ)}",
                    _replayed(args.runs, family, cluster, c.options, e_slurm, c.aim_kwh),
                ]
                lines.append("| " + " | ".join(cells) + " |")
                notes.append(f"- {family} {cluster} {c.options}: {c.note}")
                print(lines[-1], flush=True)
            notes.append(f"- {family} {cluster}: {time.perf_counter() - begin:.0f} s")
    text = "\n".join(lines) + "\n\nSolvers:\n\n" + "\n".join(notes) + "\n"
    print("\nSolvers:\n\n" + "\n".join(notes))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(args.out)


if __name__ == "__main__":
    main()
