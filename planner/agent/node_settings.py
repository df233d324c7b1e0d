"""The agent's side of the node contract: the setting file of a managed job and the clock.

The agent writes one ``settings/JOBID.conf`` per managed job it runs (:class:`JobSetting`); the node scripts
(``planner/agent/node_files``: prolog, epilog, task prolog, node agent) read it and apply the setting with
``nvidia-smi``. The agent's :class:`Clock` is Unix time on a real cluster and the emulated clock on an emulated
one (:mod:`planner.cluster.layout`): nothing else in the agent knows the difference. Files are written with
:func:`planner.contracts.jsonio.write_text_atomic`, the project's one atomic writer.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from wattplan.planner.contracts.domain import SettingUnit


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
    exports ``CUDA_VISIBLE_DEVICES``). ``round`` is the agent's round that last changed it.
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
