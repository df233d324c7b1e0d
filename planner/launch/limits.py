"""How long a launched job may run: one round plus a grace, and when it is warned to checkpoint (§11.1).

A round lasts ``round.duration_s`` seconds (the instance's). A job gets a time limit of

    limit_min = ceil((duration_s + grace_s) / 60)          (minutes; Slurm's ``--time`` counts whole minutes)

and, ``signal_lead_s`` seconds before that limit, the signal ``USR1`` (Slurm ``--signal=B:USR1@LEAD``), on
which the job writes a checkpoint and exits. A job the next round keeps gets one more round,

    extend_min = ceil(duration_s / 60)                      (minutes, added with ``scontrol update TimeLimit=+N``)

The grace gives the next round's ``apply.sh`` time to extend kept jobs before their signal comes: with a
grace of at least the lead, the signal never comes before the round ends. The lead may not exceed the round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wattplan.planner.contracts.problems import InputError, Problem

DEFAULT_GRACE_S = 120
"""Seconds past the round's end before a job's time limit: the window for the next round to take over."""
DEFAULT_SIGNAL_LEAD_S = 60
"""Seconds before the time limit that ``USR1`` is sent (time to write a checkpoint)."""
MAX_SIGNAL_LEAD_S = 65535
"""The largest lead ``sbatch --signal`` accepts (seconds)."""
CHECKPOINT_SIGNAL = "USR1"


@dataclass(frozen=True, slots=True)
class LimitOptions:
    """What the operator asked: a grace (s), a signal lead (s, 0: no signal), or no time limit at all."""

    grace_s: int = DEFAULT_GRACE_S
    signal_lead_s: int = DEFAULT_SIGNAL_LEAD_S
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class RoundLimits:
    """A round's job limits: time limit (s and whole minutes), signal lead (s) and the extension of a kept job.

    ``time_limit_s`` None: no limit (``--no-time-limit``); ``signal_lead_s`` None: no signal.
    """

    time_limit_s: int | None
    signal_lead_s: int | None
    extend_min: int | None

    @property
    def time_limit_min(self) -> int | None:
        """The time limit in whole minutes (rounded up), as ``sbatch --time`` takes it."""
        return None if self.time_limit_s is None else math.ceil(self.time_limit_s / 60)


NO_LIMITS = RoundLimits(None, None, None)


def round_limits(duration_s: float, options: LimitOptions) -> RoundLimits:
    """The limits of a round of ``duration_s`` seconds; :class:`InputError` naming the bad option.

    The time limit is ``duration_s + grace_s`` rounded up to whole minutes (stored in seconds, a multiple
    of 60); the signal lead must lie in ``[0, duration_s]`` (0: no signal).
    """
    if not options.enabled:
        return NO_LIMITS
    problems = []
    if options.grace_s < 0:
        problems.append(Problem("bad-option", "--time-grace-s", f"must be >= 0 s, not {options.grace_s}"))
    lead = options.signal_lead_s
    if lead < 0 or lead > min(duration_s, MAX_SIGNAL_LEAD_S):
        problems.append(
            Problem(
                "bad-option",
                "--signal-lead-s",
                f"must lie between 0 and the round's {duration_s:g} s (round.duration_s), not {lead}",
            )
        )
    if problems:
        raise InputError("options", problems)
    minutes = math.ceil((duration_s + options.grace_s) / 60)
    return RoundLimits(
        time_limit_s=60 * minutes,
        signal_lead_s=lead or None,
        extend_min=math.ceil(duration_s / 60),
    )
