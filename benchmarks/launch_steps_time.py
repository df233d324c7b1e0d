"""Real seconds and ``nvidia-smi`` calls of ``wattplan launch --to slurm``'s node steps, against the stand-in.

``nodes/HOST.setup.sh`` gives a node's GPUs the round's power limits or clocks before its jobs start, and
``HOST.reset.sh`` puts the defaults back after them; both run as root on the node, once per node and round. Each
``nvidia-smi`` call starts a process and, on a real node, initialises the driver's library, so the number of calls
is what this counts, with the real seconds the steps take against the emulated cluster's ``nvidia-smi``
(``wattplan.planner.cluster.nvidia_smi``: one Python start per call, which a real ``nvidia-smi`` exceeds).

Each FOLDER is a rendered Slurm folder (``wattplan launch PLAN --instance INSTANCE --to slurm -o FOLDER``), from
this commit or another; every node of it gets an emulated node with the GPUs its steps ask for (300 W default
limit, 100-300 W). Prints, per folder, the medians over ``--repeat`` runs and the calls of one run::

    python -m benchmarks.launch_steps_time /tmp/before /tmp/after --repeat 5
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.node_scripts_time import cluster_folder, timed

DEFAULT_W, MIN_W, MAX_W = 300, 100, 300


def step_nodes(folder: Path) -> list[dict[str, object]]:
    """The emulated nodes the folder's setup steps need: name and GPU count from their ``#SBATCH`` lines."""
    nodes = []
    for setup in sorted((folder / "nodes").glob("*.setup.sh")):
        text = setup.read_text()
        host = re.search(r"^#SBATCH --nodelist=(\S+)$", text, re.M)
        gres = re.search(r"^#SBATCH --gres=gpu:(?:\w+:)?(\d+)$", text, re.M)
        if host is None or gres is None:
            raise SystemExit(f"{setup}: no --nodelist or --gres=gpu line; is it a Slurm folder of wattplan launch?")
        nodes.append(
            {
                "name": host.group(1),
                "gpu_type": "emulated",
                "gpus": int(gres.group(1)),
                "default_limit_w": DEFAULT_W,
                "min_limit_w": MIN_W,
                "max_limit_w": MAX_W,
            }
        )
    if not nodes:
        raise SystemExit(f"{folder}: no nodes/*.setup.sh (no GPU settings in this round?)")
    return nodes


def time_folder(folder: Path, repeat: int) -> tuple[int, float, float, int, int]:
    """(nodes, median setup s, median reset s, calls of one setup run, calls of one reset run), summed over nodes."""
    nodes = step_nodes(folder)
    with tempfile.TemporaryDirectory(prefix="wp-lst-") as tmp:
        layout, env = cluster_folder(Path(tmp) / "c", nodes)
        calls = Path(tmp) / "calls.log"
        smi = layout.bin_dir / "nvidia-smi"
        smi.write_text(
            f"#!/bin/sh\necho x >> {shlex.quote(str(calls))}\n"
            f'exec {shlex.quote(sys.executable)} -m wattplan.planner.cluster.nvidia_smi "$@"\n'
        )
        totals: dict[str, list[float]] = {"setup": [], "reset": []}
        counts: dict[str, int] = {}
        for _ in range(repeat):
            for step in ("setup", "reset"):
                calls.write_text("")
                took = 0.0
                for node in nodes:
                    script = folder / "nodes" / f"{node['name']}.{step}.sh"
                    took += timed(script, {**env, "SLURMD_NODENAME": str(node["name"])})
                totals[step].append(took)
                counts[step] = len(calls.read_text().splitlines())
    return (
        len(nodes),
        statistics.median(totals["setup"]),
        statistics.median(totals["reset"]),
        counts["setup"],
        counts["reset"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="rendered Slurm folders (wattplan launch --to slurm)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of every step (the median is shown)")
    args = parser.parse_args()
    print("| folder | nodes | setup, s (all nodes) | reset, s | nvidia-smi calls: setup | reset |")
    print("|---|---|---|---|---|---|")
    for folder in args.folders:
        nodes, setup_s, reset_s, setup_calls, reset_calls = time_folder(folder, args.repeat)
        print(f"| {folder} | {nodes} | {setup_s:.2f} | {reset_s:.2f} | {setup_calls} | {reset_calls} |")


if __name__ == "__main__":
    main()
