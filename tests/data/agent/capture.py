"""One-off: capture what Slurm 22.05's ``squeue --json``, ``sinfo --json`` and ``sinfo --version`` print.

The agent's reader tests (``tests/test_agent_slurm.py``) read these files instead of hand-written JSON. Run once
as root on a host with Debian's Slurm and munge, from the repository root, to rewrite them::

    python tests/data/agent/capture.py

It starts the throwaway cluster of ``tests/slurm_cluster.py`` (two nodes, eight fake v100 GPUs each), walks three
managed jobs, one job with a malformed opt-in comment and one unmanaged job through hold, update, release and
requeue-hold, and writes next to itself:

- ``sinfo_version.txt``: ``sinfo --version``;
- ``squeue_held.json``: every job just submitted (managed and malformed ones held, the unmanaged one running);
- ``squeue_running.json``: job ``m0`` updated to ``gpu:2`` and released (running), ``m1`` held by ``scontrol hold``;
- ``squeue_requeued.json``: ``m0`` back to pending and held after ``scontrol requeuehold``;
- ``sinfo_mixed.json``: nodes while jobs run (one ``mixed``);
- ``sinfo_drained.json``: after ``scontrol update NodeName=v100-1 State=DRAIN`` with no job on it
  (and features ``fast,ib`` set on v100-0);
- ``scontrol_refused.txt``: Slurm's message for ``scontrol update`` of a running job's GRES.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.slurm_cluster import SlurmCluster  # noqa: E402


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="wattplan-capture-"))
    cluster = SlurmCluster(root)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=cluster.env, capture_output=True, text=True, timeout=30)

    def submit(name: str, *extra: str) -> str:
        out = run("sbatch", "--parsable", "-J", name, "-o", f"{root}/%j.out", *extra, "--wrap", "sleep 60")
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def wait_state(job: str, state: str) -> None:
        deadline = time.monotonic() + 30
        while cluster.job_field(job, "JobState") != state:
            assert time.monotonic() < deadline, f"job {job} never {state}"
            time.sleep(0.2)

    try:
        cluster.start()
        (HERE / "sinfo_version.txt").write_text(run("sinfo", "--version").stdout)
        managed = "wattplan:type=resnet18;steps=1000"
        m0 = submit("m0", "--hold", "--gres=gpu:1", f"--comment={managed}")
        m1 = submit("m1", "--hold", "--gres=gpu:1", f"--comment={managed}")
        m2 = submit("m2", "--hold", "--gres=gpu:v100:2", "--comment=wattplan:type=bert;steps=500")
        submit("bad", "--hold", "--gres=gpu:1", "--comment=wattplan:type=resnet18;steps=lots")
        other = submit("other", "--gres=gpu:1", "--comment=not managed")
        wait_state(other, "RUNNING")
        (HERE / "squeue_held.json").write_text(run("squeue", "--json").stdout)

        assert run("scontrol", "update", f"JobId={m0}", "Gres=gpu:2").returncode == 0
        assert run("scontrol", "release", m0).returncode == 0
        assert run("scontrol", "release", m1).returncode == 0
        assert run("scontrol", "hold", m1).returncode == 0
        wait_state(m0, "RUNNING")
        (HERE / "squeue_running.json").write_text(run("squeue", "--json").stdout)
        (HERE / "sinfo_mixed.json").write_text(run("sinfo", "--json").stdout)
        refused = run("scontrol", "update", f"JobId={m0}", "Gres=gpu:4")
        (HERE / "scontrol_refused.txt").write_text(f"exit {refused.returncode}\n{refused.stderr}")

        assert run("scontrol", "requeuehold", m0).returncode == 0
        wait_state(m0, "PENDING")
        (HERE / "squeue_requeued.json").write_text(run("squeue", "--json").stdout)

        run("scancel", m0, m1, m2, other)
        drained = run("scontrol", "update", "NodeName=v100-1", "State=DRAIN", "Reason=capture")
        assert drained.returncode == 0, drained.stderr
        assert run("scontrol", "update", "NodeName=v100-0", "AvailableFeatures=fast,ib", "ActiveFeatures=fast,ib")
        (HERE / "sinfo_drained.json").write_text(run("sinfo", "--json").stdout)
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
