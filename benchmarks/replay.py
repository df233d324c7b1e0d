"""Trace replay: five policies under one energy accounting, without and with budgets.

Slices. Every shipped trace is long-tailed (the first jobs of a Gavel trace run for days), so a
replay of "the first N jobs" would need thousands of rounds, each a MILP for ``wattplan``. The
slices are therefore chosen by one rule that looks only at the trace, never at a policy's result:
among windows of ``N`` consecutive arrivals (a window starts at the first of the jobs that share
its first arrival time, so ``--start-s S --max-jobs N`` reproduces it) whose *reference makespan*
``max_j (a_j + d_j) - a_first`` is at most ``H`` hours (``d_j`` = the job alone at its requested
count on the fastest GPU at its top setting), take the one whose reference work ``sum_j n_j d_j``
is closest to ``W`` GPU-hours. With ``N = 150``, ``H = 8``, ``W = 150`` on ``v100:32,p100:16``
(48 GPUs, six 8-GPU nodes), every slice is about three hours of the whole cluster's work arriving
within an hour or so: a queue forms, then drains. Three Gavel traces have such a window (the other
twelve have none); the Philly slice is the same rule on virtual cluster 6214e9 of the Philly CSV
(job types drawn with seed 0, as ``wattplan instance from-trace`` draws them).

Runs per slice, all with ``T = 360`` s, restart 30 s, ``min_pair_rate`` 0.5, wattplan solving with
``--solver`` (CBC) and ``--time-limit`` seconds per round, one thread:

* (a) no budget: ``fifo-max``, ``zeus`` (eta 0.5), ``eaco``, ``powerflow``, ``wattplan`` (objective
  ``progress``) and ``wattplan-energy`` (objective ``energy``, delta 0.03);
* (b) power caps of ``c x P_fifo`` (``P_fifo`` = the highest round power fifo-max drew in (a)) for
  every ``c`` in ``--caps``: every policy (``wattplan`` with objective ``progress``). A cap holds
  every round, so every run finishes and gives one (energy, average JCT) point;
* (c) energy budgets of ``f x E_fifo`` (``E_fifo`` = fifo-max's energy in (a)) for every ``f`` in
  ``--fractions``, paced per round by :mod:`planner.sim.budget`: every policy, as in (b).

Equal energy. For each policy the completed runs give points (energy, average JCT); its Pareto
front (points that no run of the same policy beats on both) is interpolated linearly in energy.
``wattplan``'s average JCT at a baseline's measured energy ``E`` is its front at ``E`` (when ``E``
exceeds the front's largest energy, the front's lowest JCT, marked ``<=``: the budget would not
bind). The headline ratio is the baseline's average JCT over that, at the baseline's no-budget
energy; the table also gives the range of the ratio of the two fronts over the energies both cover.

    nice -n 5 .venv/bin/python benchmarks/replay.py            # the whole benchmark (~30 min, 2 cores)
    .venv/bin/python benchmarks/replay.py --quick              # a smoke run: 20 jobs, one cap, one budget
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.files.resources import GAVEL_TRACES, PHILLY_TRACE, shipped
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.rounds.traces import read_trace
from wattplan.planner.sim.engine import SimResult
from wattplan.planner.sim.metrics import pareto_front
from wattplan.planner.sim.plots import EnergyJctPoint, energy_jct_plot, jct_cdf_plot, power_plot
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import ReplaySpec, prepare, run_policy
from wattplan.planner.sim.state import JobSpec
from wattplan.planner.sim.workload import build_workload, select_jobs

REPO = Path(__file__).resolve().parents[1]
TRACES = shipped(GAVEL_TRACES)
PHILLY = shipped(PHILLY_TRACE)
BASELINES = ("fifo-max", "zeus", "eaco", "powerflow")
LABELS = (*BASELINES, "wattplan", "wattplan-energy")


@dataclass(frozen=True)
class Slice:
    """A trace and the window the selection rule picked."""

    name: str
    trace: Path
    virtual_cluster: str | None
    start_s: float
    jobs: int
    reference_makespan_h: float
    reference_work_gpu_h: float
    arrival_span_h: float


def pick_window(specs: Sequence[JobSpec], n: int, max_makespan_s: float, target_gpu_s: float) -> tuple | None:
    """(start index, reference makespan s, work GPU-s, arrival span s) of the rule's window, or None."""
    best: tuple | None = None
    for i in range(len(specs) - n + 1):
        if i > 0 and specs[i - 1].arrival_s == specs[i].arrival_s:
            continue  # a window starts at the first job of its arrival time
        window = specs[i : i + n]
        t0 = window[0].arrival_s
        makespan = max(j.arrival_s + j.reference_duration_s for j in window) - t0
        if makespan > max_makespan_s:
            continue
        work = sum(j.requested_gpus * j.reference_duration_s for j in window)
        key = abs(work - target_gpu_s)
        if best is None or key < best[0]:
            best = (key, i, makespan, work, window[-1].arrival_s - t0)
    return None if best is None else best[1:]


def find_slices(lib: ProfileLibrary, args: argparse.Namespace) -> list[Slice]:
    """Apply the selection rule to every shipped Gavel trace and to the Philly virtual cluster."""
    sources: list[tuple[str, Path, str | None]] = [(p.stem, p, None) for p in sorted(TRACES.glob("*.trace"))]
    sources.append((f"philly-{args.philly_vc}", PHILLY, args.philly_vc))
    out = []
    for name, path, vc in sources:
        if args.slices and name not in args.slices:
            continue
        trace = read_trace(path, lib, seed=0, virtual_cluster=vc)
        specs = list(build_workload(select_jobs(trace), lib, ("v100", "p100")).jobs)
        if len(specs) < args.jobs:
            continue
        found = pick_window(specs, args.jobs, args.max_makespan_h * 3600, args.target_gpu_h * 3600)
        if found is None:
            continue
        i, makespan, work, span = found
        out.append(Slice(name, path, vc, specs[i].arrival_s, args.jobs, makespan / 3600, work / 3600, span / 3600))
    return out


def spec_for(sl: Slice, args: argparse.Namespace, objective: str = "progress") -> ReplaySpec:
    return ReplaySpec(
        trace=sl.trace,
        cluster=args.cluster,
        virtual_cluster=sl.virtual_cluster,
        start_s=sl.start_s,
        max_jobs=sl.jobs,
        rules=RoundRules(objective=objective),
        policy_options=PolicyOptions(
            request=replace(REPLAY_REQUEST, solver=args.solver, time_limit_s=args.time_limit, threads=args.threads)
        ),
        seed=0,
    )


def log(msg: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_one(sl: Slice, args, label: str, kind: str, fraction: float | None, amount: float | None, cache) -> tuple:
    """One replay; ``kind`` is ``none``, ``cap`` (``amount`` W) or ``energy`` (``amount`` kWh)."""
    policy = "wattplan" if label.startswith("wattplan") else label
    objective = "energy" if label == "wattplan-energy" else "progress"
    spec = spec_for(sl, args, objective)
    if kind == "cap":
        spec = replace(spec, power_cap_w=amount)
    elif kind == "energy":
        spec = replace(spec, energy_budget_kwh=amount)
    key = (sl.name, objective)
    if key not in cache:
        cache[key] = prepare(spec)
    workload, ctx = cache[key]
    load = os.getloadavg()[0]
    begin = time.perf_counter()
    result, summary = run_policy(spec, workload, ctx, policy)
    wall = time.perf_counter() - begin
    row = {
        "slice": sl.name,
        "label": label,
        "budget_kind": kind,
        "budget_fraction": fraction,
        "power_cap_w": amount if kind == "cap" else None,
        "budget_kwh": amount if kind == "energy" else None,
        "wall_s": round(wall, 2),
        "load1_before": round(load, 2),
        **{k: v for k, v in summary.items() if not isinstance(v, dict | list) and k not in ("power_cap_w",)},
        "peak_power_w": max((r.energy_j for r in result.rounds), default=0.0) / result.duration_s,
        "fallback_rounds": summary["plan_status_rounds"].get("fallback", 0),
        "optimal_rounds": summary["plan_status_rounds"].get("optimal", 0),
    }
    fb = f" fallback {row['fallback_rounds']}" if policy == "wattplan" else ""
    log(
        f"{sl.name:>14} {label:<16} {kind:<6} f={fraction if fraction is not None else '-':<5} "
        f"{summary['stop_reason']:<16} E={summary['energy_kwh']:.2f} kWh "
        f"avgJCT={(summary['avg_jct_s'] or math.nan) / 3600:.3f} h done={summary['jobs_completed']}/"
        f"{summary['jobs_total']} rounds={summary['rounds_simulated']} wall={wall:.1f}s{fb}"
    )
    return result, row


# ---------------------------------------------------------------------------- equal energy


def jct_at(front: Sequence[tuple[float, float]], energy: float) -> tuple[float | None, bool]:
    """(JCT at ``energy`` on the front, True when it is only an upper bound beyond the front's end)."""
    if not front or energy < front[0][0]:
        return None, False
    if energy >= front[-1][0]:
        return front[-1][1], energy > front[-1][0] * (1 + 1e-9)
    for (e0, j0), (e1, j1) in zip(front, front[1:], strict=False):
        if e0 <= energy <= e1:
            return j0 + (j1 - j0) * (energy - e0) / (e1 - e0), False
    return None, False


def completed(rows: Sequence[dict], sl: str, label: str) -> list[dict]:
    return [r for r in rows if r["slice"] == sl and r["label"] == label and r["jobs_unfinished"] == 0]


def front_of(rows: Sequence[dict], sl: str, labels: Sequence[str]) -> list[tuple[float, float]]:
    """The Pareto front of the completed runs of ``labels`` on slice ``sl``."""
    return pareto_front([(r["energy_kwh"], r["avg_jct_s"]) for lab in labels for r in completed(rows, sl, lab)])


def equal_energy(rows: Sequence[dict], slices: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """(every completed baseline run against wattplan's front at its energy, one summary row per baseline).

    The summary row holds the ratio at the baseline's no-budget energy and the range of
    ``JCT_baseline(E) / JCT_wattplan(E)`` over the energies both fronts cover (41 points).
    """
    points, summary = [], []
    for sl in slices:
        w_front = front_of(rows, sl, ("wattplan", "wattplan-energy"))
        for b in BASELINES:
            for r in completed(rows, sl, b):
                jw, bound = jct_at(w_front, r["energy_kwh"])
                points.append(
                    {
                        "slice": sl,
                        "baseline": b,
                        "budget_kind": r["budget_kind"],
                        "budget_fraction": r["budget_fraction"],
                        "energy_kwh": r["energy_kwh"],
                        "baseline_avg_jct_s": r["avg_jct_s"],
                        "wattplan_avg_jct_s": jw,
                        "upper_bound": bound,
                        "ratio": None if jw is None else r["avg_jct_s"] / jw,
                    }
                )
            base = next(
                (p for p in points if p["slice"] == sl and p["baseline"] == b and p["budget_kind"] == "none"), None
            )
            b_front = front_of(rows, sl, (b,))
            lo, hi = max(b_front[0][0], w_front[0][0]), min(b_front[-1][0], w_front[-1][0])
            ratios = []
            if lo <= hi:
                for k in range(41):
                    e = lo + (hi - lo) * k / 40
                    jb, jw = jct_at(b_front, e)[0], jct_at(w_front, e)[0]
                    if jb is not None and jw:
                        ratios.append(jb / jw)
            summary.append(
                {
                    "slice": sl,
                    "baseline": b,
                    "baseline_energy_kwh": None if base is None else base["energy_kwh"],
                    "baseline_avg_jct_s": None if base is None else base["baseline_avg_jct_s"],
                    "wattplan_avg_jct_s": None if base is None else base["wattplan_avg_jct_s"],
                    "upper_bound": None if base is None else base["upper_bound"],
                    "ratio_at_baseline_energy": None if base is None else base["ratio"],
                    "overlap_kwh": f"{lo:.2f}-{hi:.2f}" if ratios else "",
                    "ratio_min": min(ratios) if ratios else None,
                    "ratio_max": max(ratios) if ratios else None,
                }
            )
    return points, summary


# ---------------------------------------------------------------------------- reports


def csv_text(rows: Sequence[dict]) -> str:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _h(s: float | None) -> str:
    return "-" if s is None else f"{s / 3600:.2f}"


def _no_budget(rows: Sequence[dict], sl: str, label: str) -> dict | None:
    return next((r for r in rows if r["slice"] == sl and r["label"] == label and r["budget_kind"] == "none"), None)


def _ratio(value: float | None, bound: bool | None) -> str:
    return "-" if value is None else (">= " if bound else "") + f"{value:.2f}x"


def markdown(rows: Sequence[dict], points: Sequence[dict], eq: Sequence[dict], slices: Sequence[Slice]) -> str:
    lines = ["# Trace replay results (generated by benchmarks/replay.py)", ""]
    lines += ["## Slices", "", "| slice | start s | jobs | ref. makespan h | ref. work GPU-h | arrival span h |"]
    lines += ["|---|---|---|---|---|---|"]
    for s in slices:
        lines.append(
            f"| {s.name} | {s.start_s:.0f} | {s.jobs} | {s.reference_makespan_h:.2f} | "
            f"{s.reference_work_gpu_h:.1f} | {s.arrival_span_h:.2f} |"
        )
    lines += ["", "## (a) No budget", ""]
    lines += [
        "| slice | policy | energy kWh (node/idle/dyn) | vs fifo-max | avg JCT h | vs fifo-max | median | p95 | p99 "
        "| makespan h | done | GPU util | kWh/M steps | all nodes on kWh | solver s mean/max | fallback rounds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in slices:
        base = _no_budget(rows, s.name, "fifo-max")
        for lab in LABELS:
            r = _no_budget(rows, s.name, lab)
            if r is None or base is None:
                continue
            de = r["energy_kwh"] / base["energy_kwh"] - 1
            dj = (r["avg_jct_s"] / base["avg_jct_s"] - 1) if r["avg_jct_s"] and base["avg_jct_s"] else math.nan
            lines.append(
                f"| {s.name} | {lab} | {r['energy_kwh']:.2f} ({r['energy_node_kwh']:.1f}/{r['energy_idle_kwh']:.1f}/"
                f"{r['energy_dynamic_kwh']:.1f}) | {de:+.1%} | {_h(r['avg_jct_s'])} | {dj:+.1%} | "
                f"{_h(r['median_jct_s'])} | {_h(r['p95_jct_s'])} | {_h(r['p99_jct_s'])} | {_h(r['makespan_s'])} | "
                f"{r['jobs_completed']}/{r['jobs_total']} | {r['gpu_utilisation']:.1%} | "
                f"{r['energy_kwh_per_million_steps']:.3f} | {r['energy_all_nodes_on_kwh']:.1f} | "
                f"{r['solver_s_mean']:.3f}/{r['solver_s_max']:.2f} | {r['fallback_rounds']} |"
            )
    for kind, title, amount in (
        ("cap", "(b) Power caps (fraction of fifo-max's peak round power)", "cap kW"),
        ("energy", "(c) Energy budgets, paced (fraction of fifo-max's energy)", "budget kWh"),
    ):
        lines += ["", f"## {title}", ""]
        lines += [f"| slice | f | {amount} | policy | stop | energy kWh | avg JCT h | p95 JCT h | makespan h | done |"]
        lines += ["|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r["budget_kind"] != kind:
                continue
            value = r["power_cap_w"] / 1000 if kind == "cap" else r["budget_kwh"]
            lines.append(
                f"| {r['slice']} | {r['budget_fraction']} | {value:.2f} | {r['label']} | {r['stop_reason']} | "
                f"{r['energy_kwh']:.2f} | {_h(r['avg_jct_s'])} | {_h(r['p95_jct_s'])} | {_h(r['makespan_s'])} | "
                f"{r['jobs_completed']}/{r['jobs_total']} |"
            )
    lines += ["", "## Average JCT at equal energy: baseline / wattplan", ""]
    lines += [
        "At the baseline's no-budget energy (wattplan's Pareto front there; `>=` where the baseline used more",
        "energy than any wattplan run, so wattplan's fastest run is compared), and the range of the ratio of the",
        "two Pareto fronts over the energies both cover.",
        "",
        "| slice | baseline | baseline kWh | baseline avg JCT h | wattplan avg JCT h | ratio at baseline energy "
        "| common energies kWh | ratio range |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in eq:
        jw = (
            "-"
            if e["wattplan_avg_jct_s"] is None
            else ("<= " if e["upper_bound"] else "") + _h(e["wattplan_avg_jct_s"])
        )
        rng = "-" if e["ratio_min"] is None else f"{e['ratio_min']:.2f}x-{e['ratio_max']:.2f}x"
        energy = "-" if e["baseline_energy_kwh"] is None else f"{e['baseline_energy_kwh']:.2f}"
        lines.append(
            f"| {e['slice']} | {e['baseline']} | {energy} | {_h(e['baseline_avg_jct_s'])} | {jw} | "
            f"{_ratio(e['ratio_at_baseline_energy'], e['upper_bound'])} | {e['overlap_kwh'] or '-'} | {rng} |"
        )
    lines += ["", "### Every completed baseline run against wattplan's front", ""]
    lines += ["| slice | baseline | run | energy kWh | baseline avg JCT h | wattplan avg JCT h | ratio |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for p in points:
        run = "none" if p["budget_kind"] == "none" else f"{p['budget_kind']} {p['budget_fraction']}"
        jw = (
            "-"
            if p["wattplan_avg_jct_s"] is None
            else ("<= " if p["upper_bound"] else "") + _h(p["wattplan_avg_jct_s"])
        )
        lines.append(
            f"| {p['slice']} | {p['baseline']} | {run} | {p['energy_kwh']:.2f} | {_h(p['baseline_avg_jct_s'])} | "
            f"{jw} | {_ratio(p['ratio'], p['upper_bound'])} |"
        )
    return "\n".join(lines) + "\n"


def plots(sl: Slice, results: dict[str, SimResult], rows: Sequence[dict], fig_dir: Path) -> None:
    title = f"{sl.name}: {sl.jobs} jobs, no budget"
    power_plot(results, fig_dir / f"replay_{sl.name}_power.png", title=title)
    jct_cdf_plot(results, fig_dir / f"replay_{sl.name}_jct_cdf.png", title=title)
    pts = [
        EnergyJctPoint(
            r["label"], r["energy_kwh"], r["avg_jct_s"], "wattplan" if r["label"].startswith("wattplan") else r["label"]
        )
        for r in rows
        if r["slice"] == sl.name and r["jobs_unfinished"] == 0
    ]
    energy_jct_plot(pts, fig_dir / f"replay_{sl.name}_energy_jct.png", title=f"{sl.name}: all completed runs")


def meta(args: argparse.Namespace, wall_s: float, slices: Sequence[Slice]) -> dict[str, Any]:
    def version(mod: str) -> str | None:
        try:
            from importlib.metadata import version as v

            return v(mod)
        except Exception:
            return None

    cpu = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln), ""
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return {
        "command": " ".join(sys.argv),
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1),
        "commit": commit,
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": cpu,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "versions": {m: version(m) for m in ("ortools", "highspy", "pulp", "numpy")},
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "slices": [{**s.__dict__, "trace": s.trace.name} for s in slices],
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="v100:32,p100:16")
    ap.add_argument("--jobs", type=int, default=150, help="N: jobs per slice")
    ap.add_argument("--max-makespan-h", type=float, default=8.0, help="H: reference makespan bound (h)")
    ap.add_argument("--target-gpu-h", type=float, default=150.0, help="W: reference work target (GPU-h)")
    ap.add_argument("--philly-vc", default="6214e9")
    ap.add_argument("--slices", nargs="*", help="only these slice names (e.g. 6214e9 philly-6214e9)")
    ap.add_argument("--caps", default="0.8,0.6,0.4", help="power caps as fractions of fifo-max's peak round power")
    ap.add_argument("--fractions", default="0.9,0.85", help="energy budgets as fractions of fifo-max's energy")
    ap.add_argument("--solver", default="cbc")
    ap.add_argument("--time-limit", type=float, default=3.0, help="wattplan's seconds per round")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "replay")
    ap.add_argument("--figures", type=Path, default=REPO / "benchmarks" / "figures")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 jobs, one cap, one budget, one Gavel slice")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.target_gpu_h, args.fractions, args.caps = 20, 20.0, "0.9", "0.6"
        args.slices = args.slices or ["6214e9"]
        args.out = args.out.with_name(args.out.name + "_quick")
    fractions = [float(f) for f in args.fractions.split(",") if f]
    caps = [float(c) for c in args.caps.split(",") if c]
    begin = time.perf_counter()
    lib = load_profile_library()
    slices = find_slices(lib, args)
    for s in slices:
        log(
            f"slice {s.name}: start {s.start_s:.0f} s, {s.jobs} jobs, ref. makespan {s.reference_makespan_h:.2f} h, "
            f"work {s.reference_work_gpu_h:.1f} GPU-h, arrivals over {s.arrival_span_h:.2f} h"
        )
    rows: list[dict] = []
    cache: dict = {}
    for sl in slices:
        results: dict[str, SimResult] = {}
        for label in LABELS:
            res, row = run_one(sl, args, label, "none", None, None, cache)
            results[label] = res
            rows.append(row)
        fifo = _no_budget(rows, sl.name, "fifo-max")
        for c in caps:
            for label in (*BASELINES, "wattplan"):
                rows.append(run_one(sl, args, label, "cap", c, c * fifo["peak_power_w"], cache)[1])
        for f in fractions:
            for label in (*BASELINES, "wattplan"):
                rows.append(run_one(sl, args, label, "energy", f, f * fifo["energy_kwh"], cache)[1])
        plots(sl, results, rows, args.figures)
        write_text_atomic(args.out.with_suffix(".csv"), csv_text(rows))  # partial results survive a crash
    points, eq = equal_energy(rows, [s.name for s in slices])
    write_text_atomic(args.out.with_suffix(".csv"), csv_text(rows))
    write_text_atomic(args.out.with_name(args.out.name + "_equal_energy.csv"), csv_text(eq))
    write_text_atomic(args.out.with_name(args.out.name + "_equal_energy_points.csv"), csv_text(points))
    write_text_atomic(args.out.with_suffix(".md"), markdown(rows, points, eq, slices))
    write_json_atomic(args.out.with_suffix(".meta.json"), meta(args, time.perf_counter() - begin, slices))
    log(f"done in {time.perf_counter() - begin:.0f} s; results in {args.out}.csv/.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
