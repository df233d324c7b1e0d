"""The agent's per-round overhead outside the solver with 100 and 1,000 managed jobs, on a real Slurm.

For each job count: an emulated cluster (``wattplan cluster up --time-scale 1``: real Slurm, the emulator,
Prometheus) of ``--gpus`` GPUs receives that many managed jobs at once (held, opted in, Gavel job types in turn,
1 or 2 GPUs), then the agent plays ``--rounds`` rounds in this process, back to back with ``--gap-s`` real
seconds between them (rounds of 360 s would only add waiting). Each round's overhead is the agent's own
time: reading Slurm (``squeue``/``sinfo``/``scontrol show job``), reading Prometheus, building the instance and
the reference schedule, deciding and sending the calls; the solver's time is reported apart.

Usage: ``python benchmarks/agent_overhead.py --jobs 100 --jobs 1000 --out FILE [--gpus v100:128]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wattplan.planner.agent.commands import runner
from wattplan.planner.agent.loop import Agent, AgentConfig
from wattplan.planner.agent.run import PrometheusObserver, environment
from wattplan.planner.agent.store import AgentStore
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.profile_library.library import load_profile_library

WATTPLAN = [sys.executable, "-m", "wattplan"]


def _submit(slurm_env: dict[str, str], work: Path, n: int, types: list[str]) -> float:
    """Submit ``n`` held managed jobs; seconds it took."""
    t0 = time.monotonic()
    for i in range(n):
        job_type = types[i % len(types)]
        gpus = 1 + (i % 2)
        argv = [
            "sbatch",
            "--parsable",
            "--hold",
            "--requeue",
            f"--gres=gpu:{gpus}",
            "--ntasks=1",
            f"--comment=wattplan:type={job_type};steps=1000000",
            f"--output={work}/slurm-%j.out",
            "--wrap",
            "sleep 100000",
        ]
        done = subprocess.run(argv, env=slurm_env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise SystemExit(f"sbatch failed: {done.stderr}")
    return time.monotonic() - t0


def measure(n: int, gpus: str, rounds: int, gap_s: float, solver: str, time_limit: float) -> dict[str, object]:
    """Start a cluster, submit ``n`` jobs, play ``rounds`` rounds; overheads and solve times per round."""
    root = Path(tempfile.mkdtemp(prefix=f"wp-overhead-{n}-"))
    try:
        subprocess.run(
            [*WATTPLAN, "cluster", "up", "--dir", str(root), "--gpus", gpus, "--time-scale", "1"],
            check=True,
            capture_output=True,
            timeout=600,
        )
        env = environment(root, None, None)
        lib = load_profile_library(None)
        types = sorted({p.type for p in lib.profiles if p.gpu_type == "v100" and p.gpus == 2})
        submit_s = _submit(env.slurm_env, root / "work", n, types)
        config = AgentConfig(
            lib,
            RoundRules(objective="efficiency"),
            PlanRequest(solver=solver, time_limit_s=time_limit, threads=1, lp_bound=False),
            clock=env.clock,
            settings_dir=env.settings_dir,
        )
        store = AgentStore(root / "agent.db")
        agent = Agent(
            config, store, runner(env.slurm_env), PrometheusObserver(str(env.prometheus_url), True), lambda _m: None
        )
        reports = []
        for _ in range(rounds):
            r = agent.round()
            reports.append(
                {
                    "overhead_s": r.overhead_s,
                    "solve_s": r.solve_s,
                    "queued": r.queued,
                    "running": r.running,
                    "planned_run": r.planned_run,
                    "calls": len(r.calls),
                    "status": r.status,
                    "notes": r.notes[:3],
                }
            )
            time.sleep(gap_s)
        store.close()
        over = [r["overhead_s"] for r in reports]
        return {
            "jobs": n,
            "gpus": gpus,
            "submit_s": submit_s,
            "rounds": reports,
            "overhead_s_median": statistics.median(over),
            "overhead_s_max": max(over),
        }
    finally:
        subprocess.run([*WATTPLAN, "cluster", "down", "--dir", str(root)], capture_output=True, timeout=300)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Measure each ``--jobs`` count and write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, action="append", required=True)
    p.add_argument("--gpus", default="v100:128")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--gap-s", type=float, default=8.0)
    p.add_argument("--solver", default="highs")
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the emulated cluster starts slurmd")
    rows = []
    for n in args.jobs:
        row = measure(n, args.gpus, args.rounds, args.gap_s, args.solver, args.time_limit)
        rows.append(row)
        print(
            f"{n} jobs: overhead median {row['overhead_s_median']:.2f} s, max {row['overhead_s_max']:.2f} s; "
            f"solve {[round(r['solve_s'], 2) for r in row['rounds']]}"
        )  # type: ignore[index]
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
