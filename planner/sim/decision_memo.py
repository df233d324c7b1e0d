"""Re-plan only when the round changed: the previous decision reused for an identical round.

Only a policy that declares itself ``pure`` (:class:`~planner.sim.policies.base.Policy`; every built-in does) is
memoised. A pure policy's decision is a function of the round instance and the
:class:`~planner.sim.round_instance.ReplayRound` beside it. Every shipped policy reads from the context only each
job's requested GPU count and arrival time, which are fixed per job and so implied by the instance's job ids; none
reads the round's start ``now_s`` or carries state from one round to the next. The instance's round index and its
``extra["sim"]`` record (the start time; read by nobody) do not enter any decision either. So when a round's
instance equals the last decided one in everything else (the round's rules, budget, ``delta`` and credit weight; the
GPU types; every queued job with its remaining steps, current configuration and tail bound; the profiles and pair
rates: dataclass equality, exact to the bit), the last decision is the decision, and the memo returns it without
calling the policy.

This is exact, never an approximation: a round whose remaining steps changed (any job ran) is planned again, because
the progress objective weighs each job by ``sigma / R`` and a change of ``R`` can change the plan. It therefore
saves the rounds in which nothing ran and nothing changed (a queue waiting under a cap or for an arrival), not the
rounds of a steady schedule. A time-limited solver that stops at its limit may not return the same plan twice; the
memo then repeats the first, which is one of the plans it could have returned.

``--replan events`` (:func:`event_key`) trades that exactness for speed: the policy is asked again only at an
event, and between events the last decision runs on. It is opt-in, and its results are not today's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.sim.policies.base import Decision, Policy
from wattplan.planner.sim.round_instance import ReplayRound

ReplanOn = Literal["rounds", "events"]
"""When a replay asks its policy again: ``rounds``, whenever the round's instance changed in anything (exact: the
numbers are those of asking every round); ``events``, only when it changed in more than the remaining steps of its
jobs (an approximation, below)."""


def decision_key(inst: Instance) -> tuple[object, ...]:
    """What a decision depends on: the instance without its round index and ``extra`` (compared by ``==``)."""
    return (replace(inst.round, index=0), inst.gpu_types, inst.jobs, inst.profiles, inst.pairs)


def event_key(inst: Instance) -> tuple[object, ...]:
    """:func:`decision_key` blind to progress: each job without its remaining steps.

    Equal keys mean no arrival, no completion, no change of budget, ``delta``, credit weight, tail bound, profile
    (the learner), cluster or running configuration since the last decision: the events of ``--replan events``.
    The configurations stay in the key because a restart changes a round's steps and energy: the round after a
    decision that started or moved jobs is planned once more (with nothing restarting, the same plan may now draw
    more energy than the budget allows), and from then on the jobs run on as decided. What is lost: a plan that
    would have changed only because remaining steps did (the progress objective weighs a job by ``sigma / R``).
    ``benchmarks/RESULTS.md`` ("Replays at the speed of events") measures that loss.
    """
    jobs = tuple(replace(j, remaining_steps=0.0) for j in inst.jobs)
    return (replace(inst.round, index=0), inst.gpu_types, jobs, inst.profiles, inst.pairs)


@dataclass
class DecisionMemo:
    """The last decided round's key and decision; ``hits`` counts the rounds it answered.

    ``replan``: which key decides whether a round is the same (:data:`ReplanOn`).
    """

    replan: ReplanOn = "rounds"
    key: tuple[object, ...] | None = None
    decision: Decision | None = None
    hits: int = 0

    def decide(self, policy: Policy, inst: Instance, context: ReplayRound) -> Decision:
        """``policy.decide(inst, context)``, or the last decision when the round is the same (module docstring)."""
        if not getattr(policy, "pure", False):  # a plug-in may carry state between rounds: ask it every round
            return policy.decide(inst, context)
        key = event_key(inst) if self.replan == "events" else decision_key(inst)
        if self.decision is not None and key == self.key:
            self.hits += 1
            return self.decision
        self.decision = policy.decide(inst, context)
        self.key = key
        return self.decision
