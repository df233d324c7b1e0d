"""A real, throwaway Slurm cluster on this host for end-to-end launcher tests (docs/design.md §11.1).

Setup notes are in ../shared/DESIGN.md.

One ``munged``, one ``slurmctld`` and one ``slurmd`` per node (Debian's Slurm is built with
multiple-slurmd support: each daemon is started with ``-N NODE`` and listens on its own port),
every file under one temporary folder, every daemon started in the foreground as a child of the
test process and stopped by its PID. Each node has eight fake GPUs: character devices made
with ``mknod`` (Slurm needs real device files to set ``CUDA_VISIBLE_DEVICES``), declared with
``AutoDetect=off`` because Debian's build has no NVML.

Nodes declare more CPUs than this host has (``SlurmdParameters=config_overrides``) so that
several one-CPU jobs can run on a node at once; ``CR_CPU`` keeps Slurm from rounding a job up
to whole cores.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "scontrol", "sinfo", "squeue", "scancel")


def missing_binaries() -> list[str]:
    """Slurm and munge programs this host lacks (empty when a real cluster can be started)."""
    return [b for b in (*DAEMONS, *CLIENTS) if shutil.which(b) is None]


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that were free a moment ago on 127.0.0.1."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class SlurmStartError(RuntimeError):
    """The cluster did not come up; the message carries the daemons' log tails."""


@dataclass
class SlurmCluster:
    """A Slurm cluster of ``nodes`` (names) with ``gpus_per_node`` fake GPUs of ``gpu_type`` each."""

    root: Path
    nodes: Sequence[str] = ("v100-0", "v100-1")
    gpu_type: str = "v100"
    gpus_per_node: int = 8
    cpus_per_node: int = 16
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands (``sbatch``, ``scontrol``...) against this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # ------------------------------------------------------------------ files

    def _write_files(self) -> None:
        self.root.chmod(0o755)  # munged wants every folder above its socket searchable by all
        for sub in ("etc", "state", "log", "run", "munge", "dev"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            (self.root / "spool" / node).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o755)  # munged refuses a socket folder others may write
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        for i in range(self.gpus_per_node):
            dev = self.root / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, like /dev/null
        ctld_port, *node_ports = _free_ports(1 + len(self.nodes))
        host = socket.gethostname().split(".")[0]
        r = self.root
        lines = [
            "ClusterName=wattplan-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r}/munge/munge.socket",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/run/slurmctld.pid",
            f"SlurmdPidFile={r}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "GresTypes=gpu",
            "SchedulerType=sched/backfill",
            "ReturnToService=2",
            "EnforcePartLimits=ALL",
            "MailProg=/bin/true",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=600",
            "SlurmdTimeout=60",
        ]
        for node, port in zip(self.nodes, node_ports, strict=True):
            lines.append(
                f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
                f"CPUs={self.cpus_per_node} RealMemory=1000 Gres=gpu:{self.gpu_type}:{self.gpus_per_node} State=UNKNOWN"
            )
        lines.append("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        last = self.gpus_per_node - 1
        gres = ["AutoDetect=off"] + [
            f"NodeName={node} Name=gpu Type={self.gpu_type} File={r}/dev/nvidia[0-{last}]" for node in self.nodes
        ]
        (self.root / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")

    # ------------------------------------------------------------------ processes

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.root / "log" / f"{name}.stdout", "wb") as log:  # the child keeps its own copy
            self.processes[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )

    def start(self, timeout_s: float = 60.0) -> None:
        """Write the configuration, start munged, slurmctld and every slurmd, wait until all nodes are idle."""
        self._write_files()
        m = self.root / "munge"
        self._spawn(
            "munged",
            [
                "munged",
                "-F",
                "--force",
                f"--socket={m}/munge.socket",
                f"--key-file={m}/munge.key",
                f"--pid-file={m}/munged.pid",
                f"--log-file={self.root}/log/munged.log",
                f"--seed-file={m}/munged.seed",
            ],
        )
        self._wait_for(lambda: (m / "munge.socket").exists(), 10.0, "munged socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait_for(lambda: self._run_ok(["scontrol", "ping"]), 20.0, "slurmctld to answer")
        for node in self.nodes:
            self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-f", str(self.conf), "-N", node])
        self._wait_for(self._all_idle, timeout_s, "every node idle")

    def _run_ok(self, argv: list[str]) -> bool:
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=20)
        return r.returncode == 0 and "DOWN" not in r.stdout

    def node_states(self) -> dict[str, str]:
        """``{node: state}`` as ``sinfo`` reports it (``idle``, ``mix``, ``alloc``, ``drain``...)."""
        r = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True, text=True, timeout=20
        )
        states: dict[str, str] = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def _all_idle(self) -> bool:
        states = self.node_states()
        return all(states.get(n) == "idle" for n in self.nodes)

    def _wait_for(self, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise SlurmStartError(f"{name} exited with {proc.returncode}\n{self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise SlurmStartError(f"timed out after {timeout_s:g} s waiting for {what}\n{self.logs()}")

    def logs(self, tail: int = 30) -> str:
        """The last lines of every daemon log, for failure messages."""
        chunks = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            chunks.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(chunks)

    def stop(self) -> None:
        """Cancel this cluster's remaining jobs, then stop every daemon this object started, by PID.

        The daemons stop in order: slurmd first, munged last.
        """
        ctld = self.processes.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            subprocess.run(["scancel", "--user", str(os.getuid())], env=self.env, capture_output=True, timeout=20)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                queue = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True, timeout=20)
                if not queue.stdout.strip():
                    break
                time.sleep(0.2)
        for name in reversed(list(self.processes)):
            proc = self.processes[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self.processes.clear()

    # ------------------------------------------------------------------ helpers for tests

    def wait_for_jobs(self, job_ids: Sequence[str], timeout_s: float = 90.0) -> dict[str, str]:
        """Wait until every job has left the queue; return ``{job id: final state}`` from ``scontrol``."""
        deadline = time.monotonic() + timeout_s
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = {j: self.job_field(j, "JobState") for j in job_ids}
            if all(s not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "") for s in states.values()):
                return states
            time.sleep(0.3)
        raise TimeoutError(f"jobs still queued after {timeout_s:g} s: {states}\n{self.logs()}")

    def show_job(self, job_id: str) -> str:
        """``scontrol show job -d JOB`` output."""
        r = subprocess.run(
            ["scontrol", "show", "job", "-d", job_id], env=self.env, capture_output=True, text=True, timeout=20
        )
        return r.stdout

    def job_field(self, job_id: str, name: str) -> str:
        """One ``Name=value`` field of ``scontrol show job`` (empty when absent)."""
        for token in self.show_job(job_id).split():
            if token.startswith(f"{name}="):
                return token.split("=", 1)[1]
        return ""


REQUIRED = os.environ.get("WATTPLAN_REQUIRE_SLURM") == "1"
"""CI sets this: a missing Slurm is then a failure, not a skip."""


def _unavailable(reason: str) -> None:
    import pytest

    if REQUIRED:
        pytest.fail(f"WATTPLAN_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def running_cluster(prefix: str) -> Iterator[SlurmCluster]:
    """A started two-node cluster under a fresh folder named ``prefix*``, stopped (by PID) and deleted afterwards.

    Skips the test (fails it under ``WATTPLAN_REQUIRE_SLURM=1``) when Slurm is missing or this is not root.
    """
    missing = missing_binaries()
    if missing:
        _unavailable(
            f"Slurm is not installed ({', '.join(missing)} missing): "
            "apt-get install slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        _unavailable("the test cluster runs slurmd and mknod, which need root")
    root = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = SlurmCluster(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
