"""The agent's steering between rounds: each round's ``delta``, credit weight and tail bound from one record.

The record (:class:`planner.sim.governor.Steering`: ``--max-jct-increase``, ``--governor``, ``--delta-max``,
``--signal-aware``, ``--tail-bound``, ``--tail-pace``) is built once from the options, live and in a replay alike.
The agent knows only the jobs it has seen, so its reference, ``fifo-max`` in continuous time over them
(:func:`planner.agent.reference.slurm_reference`, what Slurm alone would do with the same submissions), is
recomputed whenever they change, and so are the governor (carrying its last ``delta`` over) and the tail bound's
deadlines.

The governor steps once per round length: a round that starts early (on an arrival or a completion) keeps the
last ``delta``. The signal, when followed, moves ``delta`` and the credit weight from there
(:class:`planner.sim.governor.SignalSteer`) in every round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattplan.planner.agent.reference import ReferenceRun, slurm_reference_runs
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.sim.governor import DeltaSteer, FixedDelta, JctGovernor, Steering
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.signals import SignalClock
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import TailBound


@dataclass(frozen=True, slots=True)
class RoundSteer:
    """What steering sets for one round: ``delta`` and the credit weight (None: the rules' and 1), ``min_steps``."""

    delta: float | None = None
    credit_weight: float | None = None
    min_steps: Mapping[str, float] | None = None
    """The tail bound's least steps per job this round (None: no tail bound)."""


@dataclass
class LiveSteering:
    """The agent's steering state (module docstring): the record, the rules, the reference and what it gives."""

    record: Steering
    rules: RoundRules
    start_s: float
    """A job's own start-up time (s) in the reference (:func:`~planner.agent.reference.slurm_reference`)."""
    signal: SignalClock | None = None
    governor: JctGovernor | None = None
    tail: TailBound | None = None
    reference_runs: Mapping[str, ReferenceRun | None] = field(default_factory=dict)
    """``fifo-max``'s run of each job seen so far (None: it cannot run); rebuilt when they change, steered or not:
    the agent reports against it (:meth:`planner.agent.store.AgentStore.set_reference`)."""
    _jobs: frozenset[str] | None = None
    _governed_at: float | None = None

    def round(
        self,
        ctx: ClusterContext,
        seen_ctx: ClusterContext,
        states: Sequence[JobState],
        queued: Sequence[JobState],
        now_s: float,
        budget_j: float | None,
    ) -> RoundSteer:
        """The round's steering at ``now_s`` over the jobs seen so far (``states``, finished ones included).

        The reference, its deadlines and their costs are on ``ctx`` (the profiles planned with); the tail bound's
        steps are priced on ``seen_ctx`` (what the round sees, learnt profiles included), as the replay does. A
        round with a budget gets no tail bound (:meth:`~planner.sim.tail_bound.TailBound.min_steps`).
        """
        self._follow(ctx, states)
        inner: DeltaSteer | None = None
        if self.governor is not None:
            early = self._governed_at is not None and now_s - self._governed_at < self.rules.duration_s
            if not early:
                self._governed_at = now_s
            inner = FixedDelta(self.governor.delta) if early else self.governor
        steer = self.record.steer(inner, self.rules.delta, self.signal, self.rules.duration_s)
        bounds = None if self.tail is None else self.tail.min_steps(seen_ctx, queued, now_s, budget_j)
        if steer is None:
            return RoundSteer(None, None, bounds)
        return RoundSteer(steer.delta_for_round(states, now_s), steer.credit_weight_for_round(now_s), bounds)

    def _follow(self, ctx: ClusterContext, states: Sequence[JobState]) -> None:
        """Recompute the reference, the governor and the deadlines when the jobs seen have changed."""
        ids = frozenset(s.id for s in states)
        if ids == self._jobs:
            return
        self._jobs = ids
        self.reference_runs = slurm_reference_runs([s.spec for s in states], ctx, self.start_s)
        if self.record.max_increase is None and self.record.tail_bound is None:
            return
        last = self.governor.delta if self.governor is not None else self.rules.delta
        self.governor = self.record.governor(self.reference_finish_s, last)
        self.tail = self.record.tail(ctx, self.reference_finish_s, states)

    @property
    def reference_finish_s(self) -> dict[str, float | None]:
        """``fifo-max``'s finish times (s) of the jobs seen so far (None: the job cannot run)."""
        return {job: None if run is None else run.finish_s for job, run in self.reference_runs.items()}
