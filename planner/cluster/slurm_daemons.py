"""A real Slurm on this host: munged, slurmctld and one slurmd per node, fake GPU devices (docs/design.md §11.1).

Debian's Slurm is built with multiple-slurmd support: each ``slurmd`` starts with ``-N NODE`` and listens on its
own port, so one host runs a whole cluster. Every file lives under one folder and every daemon starts in the
foreground in a session of its own, stopped later by its PID. Each node's GPUs are character devices made with
``mknod`` (Slurm needs real device files to set ``CUDA_VISIBLE_DEVICES``), declared with ``AutoDetect=off``
because Debian's build has no NVML.

Nodes declare more CPUs than this host has (``SlurmdParameters=config_overrides``) so that several one-CPU jobs
run on a node at once; ``CR_CPU`` keeps Slurm from rounding a job up to whole cores.

Scheduling latency is kept short, because emulated time runs faster than real time: ``cred_expire=5`` (a
requeued job becomes eligible 6 s after its requeue instead of 121 s, measured on 22.05.8; 5 is the least
value Slurm accepts, smaller ones fall back to 120) and ``sched_interval=1,bf_interval=1`` (the periodic passes
that start a job whose begin time has passed).

Power saving (:class:`PowerSave`, ``cluster up --power-save``): Slurm's own ``SuspendProgram``/``ResumeProgram``
with ``SuspendTime``, ``SuspendTimeout`` and ``ResumeTimeout`` in real seconds, no rate limits, the power-save
thread every second (``SlurmctldParameters=power_save_interval=1,power_save_min_interval=0``, accepted by
22.05.8 without a complaint in ``slurmctld.log``) and ``DebugFlags=Power``. Measured on 22.05.8 (the programs
themselves are :mod:`planner.cluster.power`'s):

- slurmctld forks each program directly, with only ``SLURM_CONF`` (and ``SLURM_RESUME_FILE``) in its
  environment, stdin/stdout/stderr closed, and the signal mask of its power-save thread: SIGTERM, SIGINT, SIGHUP
  and others blocked, SIGQUIT and SIGPIPE ignored. A slurmd started from there without clearing the mask ignores
  SIGTERM (the next suspend did not stop it, and its node never resumed again). It does not wait for a program,
  does not kill one that runs long, but waits for them at its own shutdown: a program returns at once;
- a resumed node counts as booted only if its slurmd reports a boot time later than the resume request: a slurmd
  restarted on a host that did not reboot needs ``-b`` ("report node rebooted"), else the node is marked DOWN at
  ``ResumeTimeout`` and its job requeued;
- a batch job allocated a powered-down node stays CONFIGURING until slurmctld's periodic job pass
  (``PERIODIC_TIMEOUT``, 30 s, compiled in) sees the node up: 0 to 30 s real after the boot, i.e. up to 30
  emulated minutes at the default time scale. A ``PrologSlurmctld`` that returns once the job's nodes are up
  ends that wait at once (22.05 documents it: the job starts when the program exits 0), so the emulated cluster
  installs one (:data:`PowerSave.prolog_slurmctld`); the job's start time is then its node's boot plus a
  fraction of a second, as on a real cluster, where 30 s are small against a boot.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wattplan.planner.agent.node_power import SHUTDOWN_S

DAEMONS = ("munged", "slurmctld", "slurmd")
SLURMD_ARGV = ("slurmd", "-D")
"""How every slurmd starts (then ``-f CONF -N NODE``); a resumed one adds ``-b`` (module docstring)."""
MAX_TIMEOUT_S = 65_000
"""The longest ``SuspendTimeout``/``ResumeTimeout`` (real s): Slurm keeps them in 16 bits."""
MAX_SUSPEND_TIME_S = 2**31 - 1
"""The longest ``SuspendTime`` (real s): Slurm keeps it in 32 bits."""
RESUME_MARGIN_S = 60
"""Real seconds ``ResumeTimeout`` allows beyond the emulated boot: the boot helper's and slurmd's start on a busy
host, and the registration; past it Slurm marks the node DOWN and requeues its jobs."""
MIN_SUSPEND_TIMEOUT_S = 2
"""The shortest ``SuspendTimeout`` (real s): the suspend program's slurmd stops in well under a second."""
CLIENTS = ("sbatch", "scontrol", "sinfo", "squeue", "scancel")


MAX_JOB_ID_DIGITS = 5
"""Digits of the largest job id the emulated cluster is sized for: its Slurm numbers jobs from 1 on every start
(``slurmctld -i``), so 99,999 jobs a cluster (the live workloads submit 40 to 150; Slurm's own ``MaxJobId`` is
67,108,863)."""
BATCH_STEP_ID = 4294967291
"""The step id of a job's batch step, in its step socket's name."""


def step_socket_path(spool_root: Path, node: str) -> str:
    """The longest step socket slurmstepd makes for ``node``: ``SPOOL/NODE/NODE_JOBID.STEPID``.

    A longer one than :data:`~wattplan.planner.cluster.owned.SOCKET_PATH_MAX` fails every job on the node at launch
    (slurmstepd cannot bind it; Slurm requeues the job held, seen with a cluster folder of 80 characters).
    """
    return f"{spool_root / node}/{node}_{'9' * MAX_JOB_ID_DIGITS}.{BATCH_STEP_ID}"


def missing_binaries() -> list[str]:
    """Slurm and munge programs this host lacks (empty when a real cluster can be started)."""
    return [b for b in (*DAEMONS, *CLIENTS) if shutil.which(b) is None]


def free_ports(count: int) -> list[int]:
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


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """One node: its name, GPU type and GPU count."""

    name: str
    gpu_type: str
    gpus: int


def nodes_of(counts: Sequence[tuple[str, int]], gpus_per_node: int) -> tuple[SlurmNode, ...]:
    """Nodes ``TYPE-0``, ``TYPE-1``... holding ``count`` GPUs of each type, ``gpus_per_node`` per node.

    ``count`` must be a multiple of ``gpus_per_node`` (ValueError otherwise).
    """
    nodes: list[SlurmNode] = []
    for gpu_type, count in counts:
        if count <= 0 or count % gpus_per_node:
            raise ValueError(f"{gpu_type}:{count} is not a positive multiple of {gpus_per_node} GPUs per node")
        nodes.extend(SlurmNode(f"{gpu_type}-{i}", gpu_type, gpus_per_node) for i in range(count // gpus_per_node))
    return tuple(nodes)


@dataclass(frozen=True, slots=True)
class PowerSave:
    """Slurm's power saving on this cluster: the times in real seconds and the programs (module docstring)."""

    suspend_time_s: int
    """``SuspendTime``: idle seconds before a node is powered down (at least 1)."""
    suspend_timeout_s: int
    """``SuspendTimeout``: seconds a node powers down, unavailable, before it may be resumed."""
    resume_timeout_s: int
    """``ResumeTimeout``: seconds a resumed node has to register before Slurm marks it DOWN."""
    suspend_program: Path
    resume_program: Path
    prolog_slurmctld: Path | None = None
    """A program that returns once a job's nodes are up (module docstring); None: none."""

    @staticmethod
    def real_times(time_scale: float, suspend_s: float, resume_s: float) -> tuple[int, int, int]:
        """``(SuspendTime, SuspendTimeout, ResumeTimeout)``, real s, for emulated ``suspend_s`` and ``resume_s``.

        ``time_scale`` is emulated seconds per real second. SuspendTime is rounded to the nearest second, at
        least 1; SuspendTimeout is :data:`SHUTDOWN_S` emulated seconds, at least
        :data:`MIN_SUSPEND_TIMEOUT_S`; ResumeTimeout is the boot rounded up plus :data:`RESUME_MARGIN_S`.
        """
        suspend_time = max(1, round(suspend_s / time_scale))
        suspend_timeout = max(MIN_SUSPEND_TIMEOUT_S, math.ceil(SHUTDOWN_S / time_scale))
        resume_timeout = math.ceil(resume_s / time_scale) + RESUME_MARGIN_S
        return suspend_time, suspend_timeout, resume_timeout

    def conf_lines(self) -> tuple[str, ...]:
        """The ``slurm.conf`` lines."""
        lines: tuple[str, ...] = (
            f"SuspendProgram={self.suspend_program}",
            f"ResumeProgram={self.resume_program}",
            f"SuspendTime={self.suspend_time_s}",
            f"SuspendTimeout={self.suspend_timeout_s}",
            f"ResumeTimeout={self.resume_timeout_s}",
            "SuspendRate=0",
            "ResumeRate=0",
            "SlurmctldParameters=power_save_interval=1,power_save_min_interval=0",
            "DebugFlags=Power",
        )
        if self.prolog_slurmctld is not None:
            lines += (f"PrologSlurmctld={self.prolog_slurmctld}",)
        return lines


def slurmctld_argv(conf: Path) -> list[str]:
    """The command line slurmctld runs with (in the foreground, ignoring saved state)."""
    return ["slurmctld", "-D", "-i", "-f", str(conf)]


def slurmd_argv(conf: Path, node: str, rebooted: bool = False) -> list[str]:
    """The command line of ``node``'s slurmd (``rebooted``: a resumed node's, with ``-b``)."""
    return [SLURMD_ARGV[0], *(["-b"] if rebooted else []), *SLURMD_ARGV[1:], "-f", str(conf), "-N", node]


IDLE_STATES = frozenset({"idle", "idle~", "idle%", "idle!", "idle#"})
"""``sinfo``'s short states of a node that registered and runs nothing; the flags are power saving's:
``~`` powered down, ``%`` powering down, ``!`` power-down pending, ``#`` powering up."""


@dataclass
class SlurmCluster:
    """A Slurm cluster of ``nodes`` under ``root``; ``extra_conf`` lines are appended to ``slurm.conf``."""

    root: Path
    nodes: Sequence[SlurmNode] = (SlurmNode("v100-0", "v100", 8), SlurmNode("v100-1", "v100", 8))
    cpus_per_node: int = 16
    extra_conf: Sequence[str] = ()
    min_job_age_s: int = 600
    power_save: PowerSave | None = None
    """Slurm's power saving (None: every node stays powered)."""
    path: str | None = None
    """``PATH`` the daemons and commands are found on (:mod:`planner.cluster.slurm_root`'s wrappers first); None:
    the environment's."""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        """``etc/slurm.conf``."""
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands (``sbatch``, ``scontrol``...) against this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf), **({} if self.path is None else {"PATH": self.path})}

    @property
    def node_names(self) -> tuple[str, ...]:
        """The node names, in order."""
        return tuple(n.name for n in self.nodes)

    # ------------------------------------------------------------------ files

    def _write_files(self) -> None:
        if not self.root.exists():
            self.root.mkdir(parents=True)
            self.root.chmod(0o755)  # ours: munge's clients need every folder above its socket searchable
        if not (self.root / "munge").exists():
            (self.root / "munge").mkdir()
            (self.root / "munge").chmod(0o755)  # ours: munged refuses a socket folder others may write
        for sub in ("etc", "state", "log", "run", "dev"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            (self.root / "spool" / node.name).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        for i in range(max(n.gpus for n in self.nodes)):
            dev = self.root / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, like /dev/null
        ctld_port, *node_ports = free_ports(1 + len(self.nodes))
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
            f"AuthInfo=socket={r}/munge/munge.socket,cred_expire=5",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n",  # step sockets live here: step_socket_path
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
            "SchedulerParameters=sched_interval=1,bf_interval=1",
            "ReturnToService=2",
            "EnforcePartLimits=ALL",
            "MailProg=/bin/true",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            f"MinJobAge={self.min_job_age_s}",
            "SlurmdTimeout=60",
            "KillWait=5",
            *(self.power_save.conf_lines() if self.power_save is not None else ()),
            *self.extra_conf,
        ]
        for node, port in zip(self.nodes, node_ports, strict=True):
            lines.append(
                f"NodeName={node.name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
                f"CPUs={self.cpus_per_node} RealMemory=1000 Gres=gpu:{node.gpu_type}:{node.gpus} State=UNKNOWN"
            )
        lines.append("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        gres = ["AutoDetect=off"] + [
            f"NodeName={n.name} Name=gpu Type={n.gpu_type} File={r}/dev/nvidia[0-{n.gpus - 1}]" for n in self.nodes
        ]
        (self.root / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")

    # ------------------------------------------------------------------ processes

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.root / "log" / f"{name}.stdout", "wb") as log:  # the child keeps its own copy
            self.processes[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )

    def start(self, timeout_s: float = 60.0) -> None:
        """Write the configuration, start munged, slurmctld and every slurmd, wait until all nodes are idle.

        With power saving a node may be powering down or powered down by then (its slurmd stopped by the suspend
        program): it registered idle first.
        """
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
        self._spawn("slurmctld", slurmctld_argv(self.conf))
        self._wait_for(lambda: self._run_ok(["scontrol", "ping"]), 20.0, "slurmctld to answer")
        for node in self.nodes:
            self._spawn(f"slurmd-{node.name}", slurmd_argv(self.conf, node.name))
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
        """Every node registered and idle; with power saving, a node may already be powering down or down."""
        states = self.node_states()
        idle = IDLE_STATES if self.power_save is not None else {"idle"}
        return all(states.get(n) in idle for n in self.node_names)

    def _wait_for(self, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                suspended = self.power_save is not None and name.startswith("slurmd-")  # its node powered down
                if proc.poll() is not None and not suspended:
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

    def pids(self) -> dict[str, int]:
        """``{daemon name: pid}`` of what :meth:`start` started, in start order."""
        return {name: p.pid for name, p in self.processes.items()}

    def job_ids(self) -> list[str]:
        """The ids of every job this cluster's slurmctld knows in a live state (every user's); empty if none."""
        queue = subprocess.run(
            ["squeue", "-h", "-a", "-t", "PD,R,CG,CF,S,RQ,RS,RH,RF,SE,SO,ST", "-o", "%A"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=20,
        )
        if queue.returncode != 0:
            return []
        return [line.strip() for line in queue.stdout.splitlines() if line.strip()]

    def cancel_all(self, timeout_s: float = 10.0) -> list[str]:
        """Cancel every job of this cluster, every user's, and wait (up to ``timeout_s``) until none is left.

        The jobs are this cluster's by construction: ``squeue`` and ``scancel`` talk to this cluster's
        slurmctld only (``SLURM_CONF``), and a job is named by id, never by user or name. Returns the ids still
        queued at the deadline (empty when all ended).
        """
        deadline = time.monotonic() + timeout_s
        left = self.job_ids()
        while left:
            subprocess.run(["scancel", *left], env=self.env, capture_output=True, timeout=20)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
            left = self.job_ids()
        return left

    def stop(self) -> None:
        """Cancel this cluster's remaining jobs, then stop every daemon this object started, by PID.

        The daemons stop in order: slurmd first, munged last.
        """
        ctld = self.processes.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            self.cancel_all()
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
