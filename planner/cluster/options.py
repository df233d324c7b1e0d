"""``wattplan cluster``'s options, declared once: one record per sub-command that has options beyond ``--dir``.

:class:`UpOptions` (``cluster up``), :class:`SubmitOptions` (``cluster submit``) and :class:`ReportOptions`
(``cluster report``); ``cluster down`` takes the folder only. The command line generates each command from its
record (``planner.cli.faces``) and checks what it is given with the record's ``checked``, which names every bad
value both ways (``time_scale (--time-scale): must be in (0, 10000], got 0``). The Python side reads the same
records: :func:`planner.cluster.up.check_options` checks ``cluster_up``'s values with :class:`UpOptions`,
:func:`planner.cluster.submit.submissions` takes a :class:`SubmitOptions`. The folder (``--dir``) and the trace
stay the command's own: they have no default.

The options a command shares with the replay are declared there once (:class:`planner.sim.options.ReplayOptions`,
taken with :func:`planner.contracts.options.same_as`). This module loads no pandas: the command line imports it to
build ``wattplan --help``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from wattplan.planner.cluster.slurm_daemons import MAX_SUSPEND_TIME_S, MAX_TIMEOUT_S, PowerSave
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.options import OptionRecord, Rule, option, requires, same_as
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.sim.options import LIBRARY_METAVAR, ReplayOptions, library_path

GPUS = "v100:32"
"""The emulated cluster's GPUs by default (``--gpus``): four nodes of eight V100s."""
TIME_SCALE = 60.0
"""Emulated seconds per real second by default (``--time-scale``): an emulated hour is a real minute."""
MAX_TIME_SCALE = 10_000.0
"""The fastest emulated clock (``--time-scale``): beyond it a real second of Slurm's own latency is hours."""
SUSPEND_S = 600.0
"""Emulated seconds a node stays idle before Slurm powers it down by default (``--suspend-s``, Slurm's SuspendTime)."""
RESUME_S = 300.0
"""Emulated seconds a powered-down server takes to boot by default (``--resume-s``)."""
MAX_RESUME_S = 3600.0
"""The longest boot (``--resume-s``): Slurm's ResumeTimeout, which must cover it, is a 16-bit number of seconds."""


def _power_save_fits_slurm(values: Mapping[str, Any], label: Callable[[str], str]) -> list[Problem]:
    """With ``power_save``, the real seconds Slurm is given fit its fields (:meth:`PowerSave.real_times`)."""
    if not values["power_save"]:
        return []
    scale = values["time_scale"]
    suspend_time, suspend_timeout, resume_timeout = PowerSave.real_times(scale, values["suspend_s"], values["resume_s"])
    at = f"at time scale {scale:g},"
    problems = []
    if suspend_time > MAX_SUSPEND_TIME_S:
        problems.append(
            Problem(
                "bad-option",
                label("suspend_s"),
                f"{at} {values['suspend_s']:g} emulated s are {suspend_time} real s, more than the "
                f"{MAX_SUSPEND_TIME_S} Slurm's SuspendTime holds: give less or a larger {label('time_scale')}",
            )
        )
    for name, real, what in (
        ("resume_s", resume_timeout, "ResumeTimeout"),
        ("time_scale", suspend_timeout, "SuspendTimeout"),
    ):
        if real > MAX_TIMEOUT_S:
            problems.append(
                Problem(
                    "bad-option",
                    label(name),
                    f"{at} Slurm's {what} would be {real} real s, more than the "
                    f"{MAX_TIMEOUT_S} it holds: give a larger {label('time_scale')}",
                )
            )
    return problems


POWER_SAVE_RULE = Rule(_power_save_fits_slurm, "power_save: suspend_s and resume_s at time_scale fit Slurm's times")


@dataclass(frozen=True, kw_only=True)
class UpOptions(OptionRecord):
    """``wattplan cluster up``: the emulated GPUs, their truth library, the clock and Slurm's power saving."""

    RULES: ClassVar[tuple[Rule, ...]] = (POWER_SAVE_RULE,)

    gpus: str = option(GPUS, "GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")
    gpus_per_node: int = same_as(ReplayOptions, "gpus_per_node")
    truth: Path | None = option(
        None,
        "Profile library the emulated GPUs run by (default: the shipped one).",
        parser=library_path,
        metavar=LIBRARY_METAVAR,
    )
    time_scale: float = option(
        TIME_SCALE, "Emulated seconds per real second.", low=0.0, low_open=True, high=MAX_TIME_SCALE
    )
    restart_s: float = option(
        defaults.RESTART_S, "Emulated seconds a (re)started job spends loading its checkpoint.", unit="s", low=0.0
    )
    power_save: bool = option(False, "Let Slurm power idle nodes down and boot them for work.")
    suspend_s: float = option(
        SUSPEND_S, "Emulated seconds a node is idle before it powers down.", unit="s", low=0.0, low_open=True
    )
    resume_s: float = option(
        RESUME_S, "Emulated seconds a powered-down node takes to boot.", unit="s", low=0.0, high=MAX_RESUME_S
    )
    slurm_root: Path | None = option(
        None,
        "Run Slurm from this root filesystem (make slurm-rootfs DIR=...: Debian 13's Slurm 24.11) instead of the "
        "host's; put DIR/slurm-bin first on PATH for its commands.",
        metavar="ROOTFS",
    )
    agent_metrics_port: int | None = option(
        None,
        "Prometheus also scrapes the agent's own metrics on 127.0.0.1:PORT (wattplan agent --metrics-port PORT).",
        low=1,
        high=65535,
        metavar="PORT",
    )

    def gpu_counts(self) -> tuple[tuple[str, int], ...]:
        """``--gpus`` as ``(type, count)`` pairs; InputError naming ``gpus (--gpus)``.

        The parser names plan's ``--cluster``: its problems are renamed.
        """
        try:
            return parse_cluster_spec(self.gpus, self.gpus_per_node).gpus
        except InputError as e:
            label = self.label("gpus")
            raise InputError(label, [Problem(p.code, label, p.message) for p in e.problems]) from None

    @classmethod
    def value_problems(
        cls,
        gpus_per_node: int,
        time_scale: float,
        restart_s: float,
        power_save: bool = False,
        suspend_s: float = SUSPEND_S,
        resume_s: float = RESUME_S,
    ) -> list[Problem]:
        """The problems of ``cluster_up``'s values but ``gpus`` and ``truth``, rules included (from Python).

        The command line checks them through :meth:`checked`.
        """
        return cls.problems(
            {
                "gpus_per_node": gpus_per_node,
                "time_scale": time_scale,
                "restart_s": restart_s,
                "power_save": power_save,
                "suspend_s": suspend_s,
                "resume_s": resume_s,
            }
        )


@dataclass(frozen=True, kw_only=True)
class SubmitOptions(OptionRecord):
    """``wattplan cluster submit``: the replay's selection of a trace's jobs, and how they are submitted.

    The selection's options are the replay's (:class:`~planner.sim.options.ReplayOptions`): the same jobs as
    ``wattplan simulate`` with the same options.
    """

    RULES: ClassVar[tuple[Rule, ...]] = (requires("maxq", "unmanaged"),)

    unmanaged: bool = option(False, "Submit as a user would, for Slurm's own scheduling (no hold, no opt-in comment).")
    maxq: bool = option(
        False,
        "With --unmanaged: each job runs at MaxQ's power limit for its type (the lowest keeping 97% of full speed by "
        "the shipped profiles), set by the nodes' prolog at its start as a site's prolog sets NVIDIA's MaxQ profile.",
    )
    max_jobs: int | None = same_as(ReplayOptions, "max_jobs")
    start_s: float | None = same_as(ReplayOptions, "start_s")
    end_s: float | None = same_as(ReplayOptions, "end_s")
    trace_format: str = same_as(ReplayOptions, "trace_format")
    vc: str | None = same_as(ReplayOptions, "vc")
    seed: int = option(0, "Seed of Philly job types.")
    wait: bool = option(False, "Return once every job is submitted (default: at once).")
    first_at_s: float | None = option(
        None,
        "Submit the first job when the cluster's clock reads this (emulated s since cluster up; the others at "
        "their trace offsets after it), so that runs meet the same idle time before their first job; when the "
        "clock is past it, at once. Default: at once.",
        unit="s",
        low=0.0,
    )


@dataclass(frozen=True, kw_only=True)
class ReportOptions(OptionRecord):
    """``wattplan cluster report``: where the report's JSON goes besides the summary line."""

    json_path: Path | None = option(None, "Write the report as JSON here.", flag="--json")
    against: Path | None = option(
        None,
        "Another run's report (cluster report --json of, say, an unmanaged run): its figures beside this run's, and "
        "this run's as a ratio of them.",
        metavar="REPORT.json",
    )
    jobs: bool = option(True, "Print one row per job (--no-jobs: the summary only).")
