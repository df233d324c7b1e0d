"""The round's rules: :class:`RoundRules`, the one type of what a round is played by, and its one check.

A round is played by five rules (docs/design.md §2 and §4): its length ``T`` (``duration_s``), the restart
cost ``tau`` (``restart_s``), the least pair slowdown (``min_pair_rate``), the objective and the progress the
``energy`` and ``efficiency`` objectives give up (``delta``). Their defaults are
:mod:`planner.contracts.defaults`'. The instance's round (:class:`~planner.contracts.domain.RoundSpec`)
carries them with its index, budget and credit weight (``RoundSpec.rules``, ``RoundSpec.from_rules``);
a round cut from a trace (:class:`~planner.rounds.builder.RoundOptions`) and a replay
(:class:`~planner.sim.replay.ReplaySpec`) hold a ``RoundRules``; a plan request
(:class:`~planner.contracts.request.PlanRequest`) may override two of them, the objective and ``delta``.

:func:`rules_problems` is the one check of their values, wherever they enter (``plan --delta``,
``simulate --delta``, ``--round-s``, ``--restart-s``, a frontier point's ``delta``): each caller names the
option its user gave.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from wattplan.planner.contracts.defaults import DELTA, MIN_PAIR_RATE, OBJECTIVE, RESTART_S, ROUND_S, ROUND_S_RANGE
from wattplan.planner.contracts.problems import Problem

Objective = Literal["progress", "energy", "efficiency"]
OBJECTIVES: Final[tuple[Objective, ...]] = ("progress", "energy", "efficiency")
DELTA_RANGE: Final = (0.0, 1.0)
"""Allowed ``delta``, ``low <= delta < high``: a fraction of the best progress, 1 excluded."""


@dataclass(frozen=True, slots=True)
class RoundRules:
    """The rules of a round (docs/design.md §2 and §4), fixed for a whole replay.

    ``T`` = ``duration_s`` (s), ``tau`` = ``restart_s`` (s), the least pair slowdown ``min_pair_rate``, the
    objective and its ``delta`` (target ``(1 - delta) * P*``).
    """

    duration_s: float = ROUND_S
    restart_s: float = RESTART_S
    min_pair_rate: float = MIN_PAIR_RATE
    objective: Objective = OBJECTIVE
    delta: float = DELTA
    max_slowdown: float | None = None
    """The slowdown limit ``x`` (a fraction; None: none): whenever a job runs it runs at least ``1 / (1 + x)`` as
    fast as its requested GPU count at full power would (:func:`planner.sim.round_instance.rate_floors`). The
    instance carries it as each job's ``min_rate`` (steps/s), not in its round."""
    slurm_starts: bool = False
    """The Slurm start rule (:mod:`planner.sim.slurm_starts`): a job starts when Slurm would start it and, once
    running, is never stopped to wait. The instance carries it as the ``min_steps`` of the jobs that must run."""
    pin_running: bool = False
    """No restarts: a running job is never moved, resized, made a guest or stopped to wait; only its setting
    changes (:mod:`planner.sim.pinned`, its jobs' ``min_steps``). The Slurm start rule implies it; without that rule
    wattplan still chooses when a job starts and on what."""


def rules_problems(rules: RoundRules, options: Mapping[str, str]) -> list[Problem]:
    """A ``bad-option`` problem for each rule of ``rules`` named in ``options`` whose value is out of range.

    ``options`` maps a field (``duration_s``, ``restart_s``, ``delta``, ``objective``) to the option name the
    caller's user gave for it (``"--delta"``, ``"delta (--delta)"``, ``"--deltas"``); fields not named are not
    checked. The ranges: ``duration_s`` in :data:`~planner.contracts.defaults.ROUND_S_RANGE` (both ends
    included); ``0 <= restart_s < duration_s`` (checked only when ``duration_s`` is in range);
    ``delta`` in ``[0, 1)``; the objective one of :data:`OBJECTIVES`. NaN is in no range. Problems come in
    that field order.
    """
    problems: list[Problem] = []
    low, high = ROUND_S_RANGE
    round_ok = low <= rules.duration_s <= high  # NaN fails both
    if "duration_s" in options and not round_ok:
        problems.append(
            Problem("bad-option", options["duration_s"], f"must be in [{low:g}, {high:g}] s, got {rules.duration_s}")
        )
    if "restart_s" in options and round_ok and not 0 <= rules.restart_s < rules.duration_s:
        problems.append(Problem("bad-option", options["restart_s"], "must be >= 0 and shorter than the round"))
    d_low, d_high = DELTA_RANGE
    if "delta" in options and not d_low <= rules.delta < d_high:
        problems.append(
            Problem("bad-option", options["delta"], f"must be in [{d_low:g}, {d_high:g}), got {rules.delta}")
        )
    if "objective" in options and rules.objective not in OBJECTIVES:
        message = f"must be progress, energy or efficiency, got {rules.objective!r}"
        problems.append(Problem("bad-option", options["objective"], message))
    return problems
