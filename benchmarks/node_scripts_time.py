"""Real seconds the node scripts take per job, by the job's GPU count, against the ``nvidia-smi`` stand-in.

Slurm starts a job's processes only after its prolog returns, and gives its GPUs to the next job only after its
epilog returns (the job stays ``COMPLETING`` meanwhile). Both call ``nvidia-smi``: the prolog to set a managed
job's power limit, the epilog to read the limits back and reset every GPU the job leaves. Each call starts a
process and, on a real node, initialises the driver's library, so their number per job is what this measures.

Builds a one-node emulated cluster folder (8 GPUs, no daemons), and runs ``prolog.sh`` then ``epilog.sh`` for
``--repeat`` jobs of each GPU count (1, 2, 4, 8), unmanaged (no settings file: mapping only) and managed (a power
limit of 200 W), and prints the median of each. ``--scripts DIR`` times another copy of the node scripts, for
instance an older commit's::

    mkdir -p /tmp/old && for f in prolog epilog common; do
      git show REV:planner/agent/node_files/$f.sh > /tmp/old/$f.sh; done
    python -m benchmarks.node_scripts_time --scripts /tmp/old

Usage: ``python -m benchmarks.node_scripts_time [--scripts DIR] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.cluster.layout import ClusterLayout

NODE_FILES = Path(__file__).resolve().parents[1] / "planner" / "agent" / "node_files"
NODE = {"name": "n0", "gpu_type": "v100", "gpus": 8, "default_limit_w": 300, "min_limit_w": 150, "max_limit_w": 300}
GPU_COUNTS = (1, 2, 4, 8)
LIMIT_W = 200


def cluster_folder(root: Path, nodes: list[dict[str, object]] | None = None) -> tuple[ClusterLayout, dict[str, str]]:
    """A cluster folder of ``nodes`` (default: :data:`NODE`) with the stand-in on PATH, and the scripts' environment.

    The environment names the first node (``SLURMD_NODENAME``); a script run as another node overrides it.
    """
    nodes = nodes or [NODE]
    layout = ClusterLayout(root)
    layout.root.mkdir(parents=True)
    layout.manifest.write_text(json.dumps({"t0_unix": 0, "time_scale": 1, "nodes": nodes}))
    layout.bin_dir.mkdir()
    smi = layout.bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m wattplan.planner.cluster.nvidia_smi "$@"\n')
    smi.chmod(0o755)
    env = {
        "PATH": f"{layout.bin_dir}:/usr/bin:/bin",
        "HOME": str(root),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "WATTPLAN_CLUSTER_DIR": str(layout.root),
        "WATTPLAN_SETTINGS_DIR": str(layout.settings_dir),
        "WATTPLAN_NODE_DIR": str(layout.node_dir),
        "SLURMD_NODENAME": str(nodes[0]["name"]),
    }
    return layout, env


def timed(script: Path, env: dict[str, str]) -> float:
    """Real seconds one run of ``script`` takes (it must exit 0)."""
    start = time.perf_counter()
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{script.name} failed ({done.returncode}): {done.stderr.strip()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", type=Path, default=NODE_FILES, help="the node scripts' folder to time")
    parser.add_argument("--repeat", type=int, default=5, help="jobs per GPU count and kind (the median is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wp-nst-") as tmp:
        layout, env = cluster_folder(Path(tmp) / "c")
        print(f"node scripts: {args.scripts}\n")
        print("| job | GPUs | prolog, s | epilog, s |\n|---|---|---|---|")
        job = 100
        for managed in (False, True):
            for count in GPU_COUNTS:
                prologs, epilogs = [], []
                for _ in range(args.repeat):
                    job += 1
                    gpus = ",".join(map(str, range(count)))
                    if managed:
                        layout.settings_dir.mkdir(parents=True, exist_ok=True)
                        setting = JobSetting(str(job), 0, "v100", count, LIMIT_W, "power_limit_w", None)
                        layout.setting_file(str(job)).write_text(setting.to_text())
                    run_env = {**env, "SLURM_JOB_ID": str(job), "SLURM_JOB_GPUS": gpus}
                    prologs.append(timed(args.scripts / "prolog.sh", run_env))
                    epilogs.append(timed(args.scripts / "epilog.sh", run_env))
                kind = f"managed, {LIMIT_W} W" if managed else "unmanaged"
                print(f"| {kind} | {count} | {statistics.median(prologs):.3f} | {statistics.median(epilogs):.3f} |")


if __name__ == "__main__":
    main()
