"""The folder of one emulated cluster and the file contracts between its parts (docs/design.md §11.7).

One folder holds everything ``wattplan cluster up`` starts and everything the parts tell each other::

    cluster.json              the manifest: time scale, clock origin, nodes, ports, the processes started
    slurm/                    Slurm's and munge's files (etc/slurm.conf, state, spool, logs, fake devices)
    bin/                      nvidia-smi (the stand-in) and the node scripts' wrappers Slurm runs
    settings/JOBID.conf       agent -> nodes: the setting a managed job runs at (:class:`JobSetting`)
    node/NODE/jobmap/INDEX    DCGM's HPC job mapping: the job ids on GPU INDEX of NODE, one per line
    node/NODE/gpus/JOBID      the GPU indices JOBID holds on NODE (comma separated), written by the prolog
    emu/gpus/NODE/INDEX.json  one emulated GPU's power limit and clock lock, written by the nvidia-smi stand-in
    emu/jobs/JOBID.json       a running stand-in trainer: its job type, total steps, phase
    emu/rates.json            the emulator's current speed of every running job (steps per emulated second)
    work/JOBID/               a job's checkpoint and Slurm output
    prometheus/               prometheus.yml and its database
    submit/                   what ``cluster submit`` sent (submitted.csv) and ``done`` once all is sent
    log/                      the emulator's, Prometheus' and the submitter's logs

Time: the emulated clock reads ``(unix_now - t0_unix) * time_scale`` seconds. Energy counters, job times and
round lengths are in emulated seconds; Slurm's and Prometheus' own timestamps stay real. Only the clock knows the
scale: the agent at scale 1 with ``t0_unix = 0`` reads Unix time, as on a real cluster.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.contracts.domain import SettingUnit

MANIFEST_FORMAT = "wattplan-cluster/1"


@dataclass(frozen=True, slots=True)
class Clock:
    """Emulated time ``(unix - t0_unix) * time_scale`` (s); ``Clock()`` is Unix time itself (a real cluster)."""

    t0_unix: float = 0.0
    time_scale: float = 1.0

    def now_s(self) -> float:
        """The emulated time now (s)."""
        return self.at(time.time())

    def at(self, unix_s: float) -> float:
        """The emulated time of a Unix time (s)."""
        return (unix_s - self.t0_unix) * self.time_scale

    def real_s(self, emulated_s: float) -> float:
        """Real seconds that ``emulated_s`` emulated seconds take."""
        return emulated_s / self.time_scale

    def unix_at(self, emulated_s: float) -> float:
        """The Unix time of an emulated time."""
        return self.t0_unix + emulated_s / self.time_scale


_TOKEN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
SETTING_KEYS = ("job_id", "round", "gpu_type", "gpus", "setting", "unit", "host_job")


@dataclass(frozen=True, slots=True)
class JobSetting:
    """What the agent asks the nodes to run a managed job at: ``settings/JOBID.conf``.

    The file is one ``key=value`` per line, keys :data:`SETTING_KEYS` in that order, every value a token of
    ``[A-Za-z0-9_.-]`` (``host_job`` empty when unset), so a node script reads it with ``IFS== read -r k v``
    and never evaluates it. ``setting`` is in ``unit`` (a power limit in W or a locked SM clock in MHz);
    ``host_job`` is set for the second job of a co-located pair, which Slurm runs with no GPU of its own: it
    uses the GPUs of ``host_job`` (the prolog reads them from ``node/NODE/gpus/HOST_JOB`` and the task prolog
    exports ``CUDA_VISIBLE_DEVICES``). ``round`` is the agent's round that wrote it.
    """

    job_id: str
    round: int
    gpu_type: str
    gpus: int
    setting: int
    unit: SettingUnit
    host_job: str | None = None

    def to_text(self) -> str:
        """The file's text (ValueError when a value is not a token)."""
        values = [self.job_id, str(self.round), self.gpu_type, str(self.gpus), str(self.setting), self.unit]
        for v in values + ([self.host_job] if self.host_job else []):
            if not _TOKEN.fullmatch(v):
                raise ValueError(f"setting value {v!r} is not a token of [A-Za-z0-9_.-]")
        values.append(self.host_job or "")
        return "".join(f"{k}={v}\n" for k, v in zip(SETTING_KEYS, values, strict=True))

    @classmethod
    def from_text(cls, text: str) -> JobSetting:
        """The inverse of :meth:`to_text` (ValueError naming the key on a malformed file)."""
        fields: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if not sep or key not in SETTING_KEYS or key in fields:
                raise ValueError(f"bad line {line!r}")
            fields[key] = value
        missing = [k for k in SETTING_KEYS if k not in fields]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        unit: SettingUnit
        if fields["unit"] == "power_limit_w":
            unit = "power_limit_w"
        elif fields["unit"] == "sm_clock_mhz":
            unit = "sm_clock_mhz"
        else:
            raise ValueError(f"unit must be power_limit_w or sm_clock_mhz, not {fields['unit']!r}")
        try:
            rnd, gpus, setting = int(fields["round"]), int(fields["gpus"]), int(fields["setting"])
        except ValueError as e:
            raise ValueError(f"round, gpus and setting must be whole numbers ({e})") from None
        return cls(fields["job_id"], rnd, fields["gpu_type"], gpus, setting, unit, fields["host_job"] or None)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write ``doc`` as JSON to ``path`` through a temporary file and a rename: readers never see half a file."""
    write_text_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


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

    def read_manifest(self) -> dict[str, Any]:
        """The manifest (``cluster.json``); FileNotFoundError when no cluster was started here."""
        return json.loads(self.manifest.read_text())

    def clock(self) -> Clock:
        """The cluster's emulated clock, from the manifest."""
        m = self.read_manifest()
        return Clock(float(m["t0_unix"]), float(m["time_scale"]))
