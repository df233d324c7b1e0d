"""Solve scaling: build and solve times, plan quality and model size against round size.

Rounds of N jobs come from the shipped Gavel traces (``instances/sources/gavel/traces``) and the
shipped V100 + P100 profile library, on a cluster of ``round(N / 4)`` nodes of 8 GPUs, two thirds
V100 and one third P100 (rounded to whole nodes), with a budget of ``b`` x full power x T.

Choice of jobs: the round builder keeps the jobs that arrived by ``at`` and are not finished, so
each trace is scanned for the time with the longest queue (a *snapshot*). If one snapshot holds
N jobs, the round is that trace at that time, cut to the N earliest arrivals
(``RoundOptions(max_jobs=N)``). Otherwise snapshots are added greedily, the one bringing the most
new jobs first (several traces, and a trace again at another time, without repeating a job of
that trace); their jobs are merged into one list, ids renamed ``TRACE:ID``, arrivals shifted by
``A - at_k`` so every snapshot's queue is queued at the common time ``A`` with the remaining
steps it had at ``at_k``, and the merged queue is cut to N. The instance's ``source`` records the
snapshots. These rounds are built by :mod:`planner.bench.round_families` (``TracePool``, ``make_round``), the
same code as ``wattplan instance sweep --family trace``.

For every (size, budget, solver) the script calls
``planner.planning.plan(inst, PlanRequest(solver, time_limit_s, threads=2, seed=0))`` and records the
model size and pruning, the build time, the stages (status, objective, bound, seconds), the plan
(status, progress, energy, bound, gap), the LP relaxation bound that the front door found in its
share of the limit, and a reference LP bound the benchmark solves once per (size, budget) with a
generous limit, which the distance ``(lp - progress) / lp`` uses. The greedy plan
(:func:`planner.planning.greedy_plan`) is the baseline.

Rows are appended to the CSV as they are measured; at the end (or with ``--report-only``) a
markdown table and a plot (distance to the LP bound against size, per solver) are written.

    .venv/bin/python benchmarks/solve_scaling.py --quick
    .venv/bin/python benchmarks/solve_scaling.py --sizes 100,500,1000,2000 --budgets 0.3,0.6 \
        --solvers cpsat,highs,cbc --time-limit 10 --out benchmarks/results/solve_scaling.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wattplan.planner import planning
from wattplan.planner.bench.round_families import TracePool, cluster_for, make_round
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.planning import greedy_plan
from wattplan.planner.profile_library.library import load_profile_library

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "benchmarks" / "figures"
LP_REFERENCE_LIMIT_S = 120.0

FIELDS = [
    "size",
    "budget_fraction",
    "solver",
    "jobs",
    "v100_nodes",
    "p100_nodes",
    "snapshots",
    "time_limit_s",
    "threads",
    "columns",
    "rows",
    "nonzeros",
    "exclusive_options",
    "pair_side_options",
    "pruned_zero_progress",
    "pruned_dominated_exclusive",
    "pruned_unbalanceable_pair_sides",
    "build_s",
    "lp_bound",
    "lp_ref",
    "lp_ref_s",
    "stage1_status",
    "stage1_objective",
    "stage1_bound",
    "stage1_s",
    "stage1_message",
    "stage2_status",
    "stage2_objective",
    "stage2_bound",
    "stage2_s",
    "stage2_message",
    "solve_s",
    "wall_s",
    "status",
    "plan_solver",
    "objective",
    "progress",
    "energy_j",
    "budget_j",
    "bound",
    "gap",
    "lp_gap",
    "greedy_progress",
    "greedy_energy_j",
    "greedy_s",
    "greedy_lp_gap",
    "fallback_reason",
    "error",
    "load1_before",
    "load1_after",
]


# --------------------------------------------------------------------------------------------
# Measurements


def _num(x: Any) -> Any:
    if x is None:
        return ""
    if isinstance(x, float):
        return "" if math.isnan(x) else repr(x)
    return x


def _lp_gap(lp: float | None, progress: float | None) -> float | None:
    if lp is None or progress is None or lp <= 0:
        return None
    return (lp - progress) / lp


def measure(inst: Instance, solver: str, limit: float, threads: int, base: dict[str, Any]) -> dict[str, Any]:
    row = dict(base)
    row["solver"] = solver
    row["load1_before"] = round(os.getloadavg()[0], 2)
    begin = time.perf_counter()
    try:
        plan = planning.plan(inst, PlanRequest(solver=solver, time_limit_s=limit, threads=threads, seed=0))
    except Exception as exc:  # recorded, never fatal: the run goes on with the next solve
        row["wall_s"] = time.perf_counter() - begin
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        traceback.print_exc(file=sys.stderr)
        return row
    row["wall_s"] = time.perf_counter() - begin
    r = plan.round
    model = r.report.model
    if model is not None:
        row.update(
            columns=model.columns,
            rows=model.rows,
            nonzeros=model.nonzeros,
            exclusive_options=model.options.get("exclusive"),
            pair_side_options=model.options.get("pair_sides"),
            pruned_zero_progress=model.pruned.get("zero_progress"),
            pruned_dominated_exclusive=model.pruned.get("dominated_exclusive"),
            pruned_unbalanceable_pair_sides=model.pruned.get("unbalanceable_pair_sides"),
            build_s=model.build_s,
        )
    row.update(
        lp_bound=r.report.lp_bound,
        status=r.status,
        plan_solver=r.solver,
        objective=r.objective_value,
        progress=r.progress,
        energy_j=r.energy_j,
        budget_j=r.budget_j,
        bound=r.bound,
        gap=r.gap,
        fallback_reason=r.notes().get("fallback_reason", ""),
    )
    stages = r.report.stages
    for k, st in enumerate(stages[:2], start=1):
        row[f"stage{k}_status"] = st.status
        row[f"stage{k}_objective"] = st.objective
        row[f"stage{k}_bound"] = st.bound
        row[f"stage{k}_s"] = st.solve_s
        row[f"stage{k}_message"] = st.message[:160]
    row["solve_s"] = r.report.solve_s
    row["lp_gap"] = _lp_gap(row.get("lp_ref") or row.get("lp_bound"), r.progress)
    return row


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def run(args: argparse.Namespace) -> Path:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": git_commit(),
        "modified": subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
        ).stdout.split("\n"),
        "cpus": os.cpu_count(),
        "machine": platform.platform(),
        "python": platform.python_version(),
    }
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    console.print(f"[bold]solve scaling[/] {meta}")
    lib = load_profile_library()
    pool = TracePool(lib)
    console.print("scanning trace queues for snapshots ...")
    pool.queues()
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        fh.flush()

        def emit(row: dict[str, Any]) -> None:
            writer.writerow({k: _num(row.get(k)) for k in FIELDS})
            fh.flush()
            os.fsync(fh.fileno())

        total = len(sizes) * len(budgets) * len(solvers)
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("solves", total=total)
            for n in sizes:
                skip_size = ""
                for budget in budgets:
                    progress.update(task, description=f"N={n} b={budget}: building round")
                    inst, snaps, _ = make_round(pool, n, budget)
                    v100, p100 = cluster_for(n)
                    base: dict[str, Any] = {
                        "size": n,
                        "budget_fraction": budget,
                        "jobs": len(inst.jobs),
                        "v100_nodes": v100,
                        "p100_nodes": p100,
                        "snapshots": " + ".join(s.describe() for s in snaps),
                        "time_limit_s": args.time_limit,
                        "threads": args.threads,
                        "budget_j": inst.round.budget_j,
                    }
                    if skip_size:
                        for solver in solvers:
                            emit({**base, "solver": solver, "status": "skipped", "error": skip_size})
                            progress.advance(task)
                        continue
                    progress.update(task, description=f"N={n} b={budget}: model + reference LP")
                    ref = planning.lp_reference(inst, "highs", args.lp_reference_limit, args.max_build_s)
                    pre_build_s = ref.build_s
                    if ref.lp_s is None:
                        skip_size = f"model build {pre_build_s:.1f} s > {args.max_build_s:.0f} s; size stopped"
                        console.print(f"[red]N={n}: {skip_size}[/]")
                        for solver in solvers:
                            emit(
                                {
                                    **base,
                                    "solver": solver,
                                    "status": "skipped",
                                    "build_s": pre_build_s,
                                    "columns": ref.columns,
                                    "rows": ref.rows,
                                    "error": skip_size,
                                }
                            )
                            progress.advance(task)
                        continue
                    lp_ref = ref.bound
                    base["lp_ref"] = lp_ref
                    base["lp_ref_s"] = ref.lp_s
                    progress.update(task, description=f"N={n} b={budget}: greedy")
                    t0 = time.perf_counter()
                    g = greedy_plan(inst)
                    base["greedy_s"] = time.perf_counter() - t0
                    base["greedy_progress"] = g.round.progress
                    base["greedy_energy_j"] = g.round.energy_j
                    base["greedy_lp_gap"] = _lp_gap(lp_ref, g.round.progress)
                    console.print(
                        f"N={n} b={budget}: {len(inst.jobs)} jobs, {v100}+{p100} nodes, "
                        f"build {pre_build_s:.2f} s, LP {lp_ref} ({base['lp_ref_s']:.1f} s), "
                        f"greedy {g.round.progress:.5g}; {base['snapshots']}"
                    )
                    for solver in solvers:
                        progress.update(task, description=f"N={n} b={budget}: {solver}")
                        row = measure(inst, solver, args.time_limit, args.threads, base)
                        row["load1_after"] = round(os.getloadavg()[0], 2)
                        emit(row)
                        progress.advance(task)
                        console.print(
                            f"  {solver:6s} {row.get('status')!s:9s} progress={_fmt(row.get('progress'))} "
                            f"lp_gap={_pct(row.get('lp_gap'))} gap={_pct(row.get('gap'))} "
                            f"build={_fmt(row.get('build_s'), 2)} s1={row.get('stage1_status')}/"
                            f"{_fmt(row.get('stage1_s'), 2)} s2={row.get('stage2_status')}/"
                            f"{_fmt(row.get('stage2_s'), 2)} wall={_fmt(row.get('wall_s'), 2)} "
                            f"load={row['load1_before']}/{row['load1_after']} "
                            f"{row.get('fallback_reason') or row.get('error') or ''}"
                        )
    return out


# --------------------------------------------------------------------------------------------
# Report


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None or x == "":
        return "-"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f"{v:.{digits}f}" if abs(v) >= 1 or digits <= 2 else f"{v:.{digits}g}"


def _pct(x: Any) -> str:
    if x is None or x == "":
        return "-"
    v = float(x)
    return f"{100 * v:.2f}%" if abs(v) < 10 else f"{100 * v:.0f}%"


def read_rows(path: Path) -> list[dict[str, str]]:
    with Path(path).open(newline="") as fh:
        return list(csv.DictReader(fh))


def markdown_table(rows: list[dict[str, str]]) -> str:
    head = (
        "| jobs | budget | solver | cols | rows | pruned (dom/unbal) | build s | stage 1 s (status) "
        "| stage 2 s (status) | solve s | wall s | plan | progress | bound | gap | LP bound | to LP "
        "| greedy | greedy to LP |"
    )
    sep = "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"
    lines = [head, sep]
    for r in rows:
        pruned = (
            f"{r.get('pruned_dominated_exclusive') or '-'}/{r.get('pruned_unbalanceable_pair_sides') or '-'}"
            if r.get("columns")
            else "-"
        )
        lines.append(
            "| "
            + " | ".join(
                [
                    r["size"],
                    r["budget_fraction"],
                    r["solver"],
                    r.get("columns") or "-",
                    r.get("rows") or "-",
                    pruned,
                    _fmt(r.get("build_s"), 2),
                    f"{_fmt(r.get('stage1_s'), 2)} ({r.get('stage1_status') or '-'})",
                    f"{_fmt(r.get('stage2_s'), 2)} ({r.get('stage2_status') or '-'})",
                    _fmt(r.get("solve_s"), 2),
                    _fmt(r.get("wall_s"), 2),
                    r.get("status") or "-",
                    _fmt(r.get("progress"), 5),
                    _fmt(r.get("bound"), 5),
                    _pct(r.get("gap")),
                    _fmt(r.get("lp_ref") or r.get("lp_bound"), 5),
                    _pct(r.get("lp_gap")),
                    _fmt(r.get("greedy_progress"), 5),
                    _pct(r.get("greedy_lp_gap")),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, str]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted({r["budget_fraction"] for r in rows}, key=float)
    solvers = list(dict.fromkeys(r["solver"] for r in rows))
    fig, axes = plt.subplots(1, len(budgets), figsize=(5.2 * len(budgets), 4.0), squeeze=False, sharey=True)
    markers = {"cpsat": "o", "highs": "s", "cbc": "^"}
    for ax, b in zip(axes[0], budgets, strict=True):
        sub = [r for r in rows if r["budget_fraction"] == b]
        for solver in solvers:
            pts = sorted(
                (int(r["size"]), 100 * float(r["lp_gap"]), r.get("status"))
                for r in sub
                if r["solver"] == solver and r.get("lp_gap")
            )
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers.get(solver, "x"), label=solver)
        for x in sorted({int(r["size"]) for r in sub}):
            fell = [r for r in sub if int(r["size"]) == x and r.get("status") == "fallback" and r.get("lp_gap")]
            if fell:
                y = max(100 * float(r["lp_gap"]) for r in fell)
                names = ", ".join(r["solver"] for r in fell)
                ax.annotate(
                    f"no solver plan (heuristic):\n{names}",
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, -24),
                    fontsize=7,
                    ha="center",
                )
        greedy = sorted({(int(r["size"]), 100 * float(r["greedy_lp_gap"])) for r in sub if r.get("greedy_lp_gap")})
        if greedy:
            ax.plot([p[0] for p in greedy], [p[1] for p in greedy], "k--", marker=".", label="greedy")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylim(0, 200)
        ax.set_xticks(sorted({int(r["size"]) for r in rows}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("jobs in the round")
        ax.set_title(f"budget {float(b):.0%} of full power")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("(LP bound - plan progress) / LP bound  [%]")
    axes[0][-1].legend(fontsize=8)
    limit = rows[0].get("time_limit_s", "?")
    threads = rows[0].get("threads", "?")
    fig.suptitle(f"Plan progress vs LP relaxation bound ({limit} s limit, {threads} threads)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def report(csv_path: Path, figure: Path) -> None:
    rows = read_rows(csv_path)
    table = markdown_table(rows)
    md = Path(csv_path).with_suffix(".md")
    md.write_text(table)
    print(table)
    if rows:
        print(f"table: {md}\nplot: {plot(rows, figure)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="100,500,1000,2000", help="round sizes (jobs), comma separated")
    ap.add_argument("--budgets", default="0.3,0.6", help="budgets as fractions of full power, comma separated")
    ap.add_argument("--solvers", default="cpsat,highs,cbc", help="backends, comma separated")
    ap.add_argument("--time-limit", type=float, default=10.0, help="planning time limit per solve (s)")
    ap.add_argument("--threads", type=int, default=2, help="solver threads")
    ap.add_argument("--out", default="benchmarks/results/solve_scaling.csv", help="CSV, written row by row")
    ap.add_argument("--figure", default="benchmarks/figures/solve_scaling_lp_gap.png", help="PNG plot")
    ap.add_argument("--max-build-s", type=float, default=60.0, help="stop a size whose model build takes longer")
    ap.add_argument(
        "--lp-reference-limit", type=float, default=LP_REFERENCE_LIMIT_S, help="limit of the reference LP solve (s)"
    )
    ap.add_argument("--quick", action="store_true", help="smoke run: size 100 only, the first budget only")
    ap.add_argument("--report-only", action="store_true", help="only rewrite the table and plot from --out")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes = "100"
        args.budgets = args.budgets.split(",")[0]
    out = Path(args.out)
    if not out.is_absolute():
        out = Path.cwd() / out
    args.out = str(out)
    figure = Path(args.figure)
    if not args.report_only:
        run(args)
    report(out, figure if figure.is_absolute() else Path.cwd() / figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
