"""The folder of one emulated cluster and the file contracts between its parts (docs/design.md §11.7).

One folder holds everything ``wattplan cluster up`` starts and everything the parts tell each other::

    cluster.json              the manifest: time scale, clock origin, nodes, power saving, ports, processes started,
                              and ``slurm_root``/``slurm_bin`` when Slurm runs from another root filesystem
    slurm-bin/                that Slurm's daemons and commands (:mod:`planner.cluster.slurm_root`); absent otherwise
    slurm/                    Slurm's and munge's files (etc/slurm.conf, state, spool, logs, fake devices)
    bin/                      nvidia-smi (the stand-in) and the node scripts' wrappers Slurm runs
    settings/JOBID.conf       agent -> nodes: the setting a managed job runs at (:class:`JobSetting`)
    node/NODE/jobmap/INDEX    DCGM's HPC job mapping: the job ids on GPU INDEX of NODE, one per line
    node/NODE/gpus/JOBID      the GPU indices JOBID holds on NODE (comma separated) and run=N, written by the prolog
    emu/gpus/NODE/INDEX.json  one emulated GPU's power limit and clock lock, written by the nvidia-smi stand-in
    emu/jobs/JOBID.json       a running stand-in trainer: its job type, total steps, phase
    emu/rates.json            the emulator's current speed of every running job (steps per emulated second)
    emu/power/NODE            power saving -> emulator: ``off`` (suspended) or ``resuming`` (booting); absent: on
    emu/power/NODE.boot.json  the boot helper of a resuming node and NODE.slurmd.json the slurmd it started: PIDs
                              ``cluster down`` stops (:mod:`planner.cluster.power`); NODE.lock serialises their work
    work/JOBID/               a job's checkpoint and Slurm output
    prometheus/               prometheus.yml and its database
    submit/                   what ``cluster submit`` sent (submitted.csv) and ``done`` once all is sent
    log/                      the emulator's, Prometheus' and the submitter's logs

``emu/power/NODE`` holds one word and a newline, written atomically by the suspend and resume programs Slurm runs
(``cluster up --power-save``, :mod:`planner.cluster.power`); any other content reads as on. A node that is off has no
slurmd and draws nothing; a resuming one draws its idle power while it boots (:mod:`planner.cluster.emulator`).

Time: the emulated clock reads ``(unix_now - t0_unix) * time_scale`` seconds. Energy counters, job times and
round lengths are in emulated seconds; Slurm's and Prometheus' own timestamps stay real. Only the clock knows the
scale: the agent at scale 1 with ``t0_unix = 0`` reads Unix time, as on a real cluster.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.agent.commands import slurm_env
from wattplan.planner.agent.node_settings import Clock, JobSetting
from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic

__all__ = [
    "MANIFEST_FORMAT",
    "POWER_OFF",
    "POWER_ON",
    "POWER_RESUMING",
    "POWER_STOPPING",
    "Clock",
    "ClusterLayout",
    "JobSetting",
    "parse_power_state",
    "power_off_since",
    "slurm_env",
    "write_json_atomic",
    "write_text_atomic",
]

MANIFEST_FORMAT = "wattplan-cluster/1"

POWER_ON = "on"
POWER_OFF = "off"
POWER_RESUMING = "resuming"
"""A node's power states under Slurm's power saving; ``emu/power/NODE`` holds ``off`` or ``resuming``, no file
means ``on`` (module docstring)."""
POWER_STOPPING = "stopping"
"""The emulator's name for a node whose file says ``off`` since less than a server's shutdown: it still draws its
idle power and runs no job (:mod:`planner.cluster.emulator`)."""
OFF_SINCE = "since="
"""The line of an ``off`` file that says when the node went off: ``since=UNIX`` (s, written by the suspend program,
:func:`power_off_since`)."""


def parse_power_state(text: str | None) -> str:
    """The power state ``emu/power/NODE``'s text says (None: no file): first line ``off``, ``resuming``, else ``on``."""
    lines = (text or "").strip().splitlines()
    word = lines[0].strip() if lines else ""
    return word if word in (POWER_OFF, POWER_RESUMING) else POWER_ON


def power_off_since(text: str | None) -> float | None:
    """When an ``off`` file's node went off (unix s, its ``since=`` line); None without a valid one."""
    for line in (text or "").splitlines()[1:]:
        if line.startswith(OFF_SINCE):
            try:
                since = float(line[len(OFF_SINCE) :])
            except ValueError:
                return None
            return since if math.isfinite(since) else None
    return None


@dataclass(frozen=True, slots=True)
class ClusterLayout:
    """The paths of one emulated cluster's folder (module docstring)."""

    root: Path

    @property
    def manifest(self) -> Path:
        """The ``cluster.json`` path (module docstring)."""
        return self.root / "cluster.json"

    @property
    def slurm_dir(self) -> Path:
        """The ``slurm`` path (module docstring)."""
        return self.root / "slurm"

    @property
    def slurm_conf(self) -> Path:
        """The ``etc`` path (module docstring)."""
        return self.slurm_dir / "etc" / "slurm.conf"

    @property
    def bin_dir(self) -> Path:
        """The ``bin`` path (module docstring)."""
        return self.root / "bin"

    @property
    def settings_dir(self) -> Path:
        """The ``settings`` path (module docstring)."""
        return self.root / "settings"

    @property
    def node_dir(self) -> Path:
        """The ``node`` path (module docstring)."""
        return self.root / "node"

    @property
    def emu_dir(self) -> Path:
        """The ``emu`` path (module docstring)."""
        return self.root / "emu"

    @property
    def work_dir(self) -> Path:
        """The ``work`` path (module docstring)."""
        return self.root / "work"

    @property
    def prometheus_dir(self) -> Path:
        """The ``prometheus`` path (module docstring)."""
        return self.root / "prometheus"

    @property
    def submit_dir(self) -> Path:
        """The ``submit`` path (module docstring)."""
        return self.root / "submit"

    @property
    def log_dir(self) -> Path:
        """The ``log`` path (module docstring)."""
        return self.root / "log"

    def setting_file(self, job_id: str) -> Path:
        """``settings/JOBID.conf``."""
        return self.settings_dir / f"{job_id}.conf"

    def jobmap_file(self, node: str, index: int) -> Path:
        """``node/NODE/jobmap/INDEX``: DCGM's HPC job mapping file of one GPU."""
        return self.node_dir / node / "jobmap" / str(index)

    def job_gpus_file(self, node: str, job_id: str) -> Path:
        """``node/NODE/gpus/JOBID``: the GPU indices a job holds on a node."""
        return self.node_dir / node / "gpus" / job_id

    def gpu_state_file(self, node: str, index: int) -> Path:
        """``emu/gpus/NODE/INDEX.json``: one emulated GPU's power limit and clock lock."""
        return self.emu_dir / "gpus" / node / f"{index}.json"

    def trainer_file(self, job_id: str) -> Path:
        """``emu/jobs/JOBID.json``: a running stand-in trainer's registration."""
        return self.emu_dir / "jobs" / f"{job_id}.json"

    @property
    def rates_file(self) -> Path:
        """``emu/rates.json``: ``{"jobs": {JOBID: steps per emulated second}, "emulated_s": ...}``."""
        return self.emu_dir / "rates.json"

    @property
    def power_dir(self) -> Path:
        """``emu/power``: the nodes' power states under Slurm's power saving (module docstring)."""
        return self.emu_dir / "power"

    def power_file(self, node: str) -> Path:
        """``emu/power/NODE``: ``off`` or ``resuming``; absent: the node is on."""
        return self.power_dir / node

    def read_manifest(self) -> dict[str, Any]:
        """The manifest (``cluster.json``); FileNotFoundError when no cluster was started here."""
        return json.loads(self.manifest.read_text())

    def clock(self) -> Clock:
        """The cluster's emulated clock, from the manifest."""
        m = self.read_manifest()
        return Clock(float(m["t0_unix"]), float(m["time_scale"]))
