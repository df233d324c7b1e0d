"""Fidelity of the replay on a simulated Slurm: live runs on the emulated cluster against ``wattplan simulate``.

For each trace: replay it with ``wattplan simulate --policy slurm --policy wattplan`` under the
settings of ``benchmarks/live_compare.py`` (the same cluster, time scale, round, restart cost, JCT bound, solver
and time limit; the simulated Slurm's checkpoint load is the stand-in trainer's, its requeue delay Slurm's 7 real
seconds times the scale), then compare with every live run given (``--live DIR``, repeatable: each holds
``FAMILY/managed.json`` from ``live_compare.py --only managed`` and, in it or in ``--unmanaged DIR`` (repeatable),
``FAMILY/unmanaged.json``): energy (own windows), average and p95 JCT, live against replay, for wattplan (the agent)
and for Slurm alone. Writes ``OUT/FAMILY/`` (the replay's folder), ``OUT/fidelity.json``, ``OUT/fidelity.md`` (the
table, worst family first) and ``OUT/jct_live_vs_replay.png`` (each job's JCT live against the replay).

``--replayed DIR`` compares with the replays ``live_compare.py --only simulate`` already wrote in ``DIR`` (its
``FAMILY/sim/POLICY/``, the live runs' own settings: power saving, the by-job mode, ``--up-before-s``) instead of
replaying: the agent's policy against the managed runs, the other policy (``slurm`` or ``slurm-powersave``) against
the unmanaged ones.

Usage: ``python benchmarks/slurm_fidelity.py TRACE [TRACE...] --live DIR [--live DIR] --unmanaged DIR --out OUT
[--replayed DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

WATTPLAN = [sys.executable, "-m", "wattplan"]
SLURM_REQUEUE_DELAY_S = 7.0
"""Real seconds from a requeue to the job running again on the emulated cluster's Slurm (live_compare.py's)."""
FIGURES = ("energy_kwh", "avg_jct_s", "p95_jct_s")


def replay(trace: Path, out: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``simulate`` of ``trace`` with Slurm alone and wattplan; their summaries and jobs by policy."""
    restart_s = args.trainer_restart_s + SLURM_REQUEUE_DELAY_S * args.time_scale
    argv = [
        *WATTPLAN, "simulate", str(trace), "--cluster", args.gpus,
        "--policy", "slurm", "--policy", "wattplan", "--objective", "efficiency",
        "--max-jct-increase", f"{args.max_jct_increase:g}", "--round-s", f"{args.round_s:g}",
        "--restart-s", f"{restart_s:g}", "--solver", args.solver, "--time-limit", f"{args.time_limit:g}",
        "--time-scale", f"{args.time_scale:g}", "--load-s", f"{args.trainer_restart_s:g}", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return read_replays(out, {"slurm": "slurm", "wattplan": "wattplan"})


def read_replays(folder: Path, policies: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The summaries and per-job JCTs of the replays in ``folder/POLICY/``, keyed by ``policies`` (key -> folder)."""
    import pandas as pd

    out_rows = {}
    for key, policy in policies.items():
        summary = json.loads((folder / policy / "summary.json").read_text())
        jobs = pd.read_csv(folder / policy / "jobs.csv")
        out_rows[key] = {"summary": summary, "jct": dict(zip(jobs["job_id"], jobs["jct_s"], strict=True))}
    return out_rows


def replayed(folder: Path) -> dict[str, dict[str, Any]]:
    """A ``live_compare.py --only simulate`` family's replays, ``folder`` being its ``FAMILY/sim``.

    The agent's policy comes back as ``wattplan``, Slurm alone (``slurm``, ``slurm-powersave`` or ``maxq``) as
    ``slurm``.
    """
    alone = next(p for p in ("slurm-powersave", "slurm", "maxq") if (folder / p / "summary.json").exists())
    agent = next(p.name for p in sorted(folder.iterdir()) if p.is_dir() and p.name != alone)
    return read_replays(folder, {"slurm": alone, "wattplan": agent})


def live_jct(report: dict[str, Any]) -> dict[str, float]:
    """Each job's JCT (s) in a ``cluster report``, by trace job id."""
    return {j["trace_job_id"]: float(j["jct_s"]) for j in report["jobs"] if j.get("jct_s") is not None}


def change(live: float, sim: float) -> float:
    """The replay's figure against the live one, as a fraction (sim / live - 1)."""
    return sim / live - 1.0


def compare(
    family: str, sim: dict[str, dict[str, Any]], lives: list[Path], unmanaged: list[Path]
) -> list[dict[str, Any]]:
    """One row per live run and policy: live and replay figures and the replay's error."""
    rows = []
    pairs = [("wattplan", lives, "managed"), ("slurm", unmanaged, "unmanaged")]
    for policy, folders, kind in pairs:
        for folder in folders:
            path = folder / family / f"{kind}.json"
            if not path.exists():
                continue
            live = json.loads(path.read_text())
            row: dict[str, Any] = {"family": family, "policy": policy, "live_run": str(folder)}
            for f in FIGURES:
                row[f"live_{f}"] = live[f]
                row[f"sim_{f}"] = sim[policy]["summary"][f]
                row[f"err_{f}"] = change(live[f], sim[policy]["summary"][f])
            row["live_jct"] = live_jct(live)
            row["sim_jct"] = sim[policy]["jct"]
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table, worst family first (largest absolute error of any figure)."""
    worst: dict[str, float] = {}
    for r in rows:
        worst[r["family"]] = max(worst.get(r["family"], 0.0), *(abs(r[f"err_{f}"]) for f in FIGURES))
    order = sorted(rows, key=lambda r: (-worst[r["family"]], r["family"], r["policy"], r["live_run"]))
    lines = [
        "| family | policy | live run | energy kWh live / replay | error | avg JCT s live / replay | error "
        "| p95 JCT s live / replay | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in order:
        cells = []
        for f, fmt in (("energy_kwh", "{:.3f}"), ("avg_jct_s", "{:,.0f}"), ("p95_jct_s", "{:,.0f}")):
            cells.append(f"{fmt.format(r[f'live_{f}'])} / {fmt.format(r[f'sim_{f}'])} | {r[f'err_{f}']:+.1%}")
        lines.append(f"| {r['family']} | {r['policy']} | {Path(r['live_run']).name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Each job's JCT live (x) against the replay (y), one marker per family and policy, the diagonal drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    markers = {"wattplan": "o", "slurm": "s"}
    top = 0.0
    for k, r in enumerate(rows):
        ids = sorted(set(r["live_jct"]) & set(r["sim_jct"]))
        xs = [r["live_jct"][i] / 3600 for i in ids]
        ys = [r["sim_jct"][i] / 3600 for i in ids]
        top = max(top, *xs, *ys)
        label = f"{r['family']} {r['policy']} ({Path(r['live_run']).name})"
        ax.scatter(xs, ys, marker=markers[r["policy"]], facecolors="none", edgecolors=f"C{k % 10}", label=label, s=18)
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8)
    ax.set_xlabel("JCT live (h)")
    ax.set_ylabel("JCT in the replay on a simulated Slurm (h)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def main() -> None:
    """Replay every trace, compare with the live runs, write the table, the JSON and the figure."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--live", type=Path, action="append", required=True, help="A live_compare.py --out folder.")
    p.add_argument(
        "--unmanaged", type=Path, action="append", required=True, help="Folder with FAMILY/unmanaged.json (repeatable)."
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--gpus", default="v100:16")
    p.add_argument("--time-scale", type=float, default=30.0)
    p.add_argument("--round-s", type=float, default=360.0)
    p.add_argument("--trainer-restart-s", type=float, default=30.0)
    p.add_argument("--max-jct-increase", type=float, default=3.0)
    p.add_argument("--solver", default="highs")
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--replayed", type=Path, help="A live_compare.py --only simulate folder: compare, do not replay.")
    args = p.parse_args()
    rows = []
    for trace in args.traces:
        family = trace.stem
        sim = replayed(args.replayed / family / "sim") if args.replayed else replay(trace, args.out / family, args)
        rows.extend(compare(family, sim, args.live, args.unmanaged))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fidelity.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "fidelity.md").write_text(table(rows))
    plot(rows, args.out / "jct_live_vs_replay.png")
    print(table(rows))


if __name__ == "__main__":
    main()
