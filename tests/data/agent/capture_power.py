"""One-off: capture what Slurm 22.05 prints about nodes and jobs under its power saving (issue 44).

Run once as root on a host with Debian's Slurm, munge and Prometheus, from the repository root, to rewrite them::

    python tests/data/agent/capture_power.py

It starts ``wattplan cluster up --power-save`` (two nodes of eight v100s, time scale 600, nodes idle 1,200
emulated seconds, 2 real ones, power down; a boot takes 3,000, 5 real seconds) and writes next to itself:

- ``sinfo_powering_down.json``: a node Slurm is powering down (``SuspendTimeout`` running; flag ``POWERING_DOWN``);
- ``sinfo_powered_down.json``: both nodes powered down (``POWERED_DOWN``);
- ``sinfo_powering_up.json`` and ``squeue_configuring.json``: a one-GPU job just allocated a powered-down node,
  CONFIGURING while the node boots (``POWERING_UP``, with ``NOT_RESPONDING`` until its slurmd registers).

The cluster runs the emulated cluster's ``PrologSlurmctld`` (:mod:`planner.cluster.power`), which makes no
difference to these fields (``job_state`` CONFIGURING, ``state_reason`` None, as without it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from wattplan.planner.cluster.layout import ClusterLayout  # noqa: E402
from wattplan.planner.cluster.up import cluster_down, cluster_up  # noqa: E402
from wattplan.planner.profile_library.library import load_profile_library  # noqa: E402


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="wattplan-capture-power-"))
    root.chmod(0o755)
    layout = ClusterLayout(root / "c")
    env = {"SLURM_CONF": str(layout.slurm_conf), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}

    def run(*argv: str) -> str:
        done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def nodes() -> dict[str, list[str]]:
        return {n["name"]: n["state_flags"] for n in json.loads(run("sinfo", "--json"))["nodes"]}

    def wait(what: str, ready: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + 60
        while not (found := ready()):
            assert time.monotonic() < deadline, f"never saw {what}"
            time.sleep(0.1)
        return found

    try:
        cluster_up(
            layout.root, [("v100", 16)], 8, load_profile_library(None), None, 600.0,
            log=lambda _m: None, power_save=True, suspend_s=1200.0, resume_s=3000.0,
        )  # fmt: skip
        wait("a node powering down", lambda: any("POWERING_DOWN" in f for f in nodes().values()))
        (HERE / "sinfo_powering_down.json").write_text(run("sinfo", "--json"))
        wait("both nodes powered down", lambda: all("POWERED_DOWN" in f for f in nodes().values()))
        (HERE / "sinfo_powered_down.json").write_text(run("sinfo", "--json"))
        job = run("sbatch", "--parsable", "-o", "/dev/null", "--chdir", "/tmp", "--gres=gpu:1", "--wrap", "sleep 30")
        job = job.strip()

        def configuring() -> bool:
            jobs = json.loads(run("squeue", "--json"))["jobs"]
            cf = any(str(j["job_id"]) == job and j["job_state"] == "CONFIGURING" for j in jobs)
            return cf and any("POWERING_UP" in f for f in nodes().values())

        wait("the job configuring on a booting node", configuring)
        (HERE / "squeue_configuring.json").write_text(run("squeue", "--json"))
        (HERE / "sinfo_powering_up.json").write_text(run("sinfo", "--json"))
    finally:
        if layout.manifest.exists():
            cluster_down(layout.root, log=lambda _m: None)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
