"""The replay loop: one round of ``T`` seconds after another until every job is done.

Round ``r`` starts at ``t_r = t0 + r * T`` (``t0``: the replay's start, by default the first
job's arrival). In each round:

1. jobs that arrived by ``t_r`` and are unfinished are queued (a job arriving mid-round waits
   for the next round start; a job that finished in the previous round has released its GPUs);
2. the budget rule (:mod:`planner.sim.budget`) sets the round's budget, the round instance and its
   :class:`~planner.sim.round_instance.ReplayRound` are built (:mod:`planner.sim.round_instance`) and
   the policy decides;
3. the allocations are placed with :func:`planner.core.assemble.assemble_plan` (fewest nodes on)
   and the plan is checked with :func:`planner.core.validate.validate_plan`; a rejected plan is a
   bug and raises :class:`planner.core.validate.InvalidPlanError`;
4. jobs advance as :func:`planner.core.economics.job_outcome` predicts (times an optional seeded
   throughput factor ``f ~ U[1 - noise, 1 + noise]`` per job and round): a job that
   (re)starts loses ``restart_s``, a job finishing mid-round gets ``finish_s = t_r + start +
   steps / rate``; the round's energy (:mod:`planner.sim.accounting`) is charged.

With a truth context (``ctx.truth``, ``wattplan simulate --truth``) the policy plans with the
profiles of ``ctx`` (or, with a :class:`~planner.sim.learning.ProfileLearner`, with what it has
learned so far) while jobs advance and draw power by the truth: the plan is validated against the
instance the policy saw, its outcome computed on the truth's instance of the same round. A learner
then observes the round (:mod:`planner.sim.telemetry`) and updates its beliefs for the next one.

When no job is queued the clock jumps to the round in which the next job arrives (every node
is suspended meanwhile and draws nothing). The replay stops when every job is done
(``completed``); when ``stall_rounds`` rounds in a row run nothing although every job has
arrived (for a deterministic policy every later round would be the same; a time-limited solver
gets a few more chances): ``budget-exhausted`` under an energy budget (what is left cannot
power a node and its job), ``stalled`` otherwise (a power cap too small for any job); or after
``max_rounds`` simulated rounds (``max-rounds``). Unfinished jobs are reported, never dropped.

Everything carried from one round to the next is one :class:`ReplayState`: a journal
(:mod:`planner.sim.journal`) checkpoints it and :func:`simulate` resumes from it. A round equal to the last
one decided (up to its index and start) reuses that decision (:mod:`planner.sim.decision_memo`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from wattplan.planner.contracts.defaults import MAX_ROUNDS
from wattplan.planner.contracts.domain import CurrentConfig, Instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.economics import job_outcome
from wattplan.planner.core.evaluate import rho_of
from wattplan.planner.core.validate import InvalidPlanError, validate_plan
from wattplan.planner.sim.accounting import RoundOutcome, round_outcome
from wattplan.planner.sim.budget import Budget, NoBudget
from wattplan.planner.sim.decision_memo import DecisionMemo, ReplanOn
from wattplan.planner.sim.energy_levers import LeverBook, LeverSplit, phase_of, round_levers
from wattplan.planner.sim.governor import DeltaSteer
from wattplan.planner.sim.learning import ProfileLearner
from wattplan.planner.sim.policies.base import Policy
from wattplan.planner.sim.round_instance import ClusterContext, ReplayRound, replay_round, round_instance
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import TailBound
from wattplan.planner.sim.telemetry import JobObservation, UtilisationTable, observe_round
from wattplan.planner.sim.workload import Workload

StopReason = str  # "completed" | "budget-exhausted" | "stalled" | "max-rounds"


@dataclass(frozen=True, slots=True)
class SimConfig:
    """How to replay: ``max_rounds`` bounds the rounds simulated (skipped idle rounds excluded)."""

    start_s: float | None = None
    max_rounds: int = MAX_ROUNDS
    noise: float = 0.0
    seed: int = 0
    stall_rounds: int = 3
    replan: ReplanOn = "rounds"
    """When the policy is asked again (:data:`planner.sim.decision_memo.ReplanOn`)."""


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One simulated round, as the per-round log writes it (energies in J, times in s)."""

    index: int
    start_s: float
    queued: int
    running: int
    shared: int
    restarted: int
    arrived: int
    finished: int
    gpus_used: int
    powered_gpus: int
    nodes_on: dict[str, int]
    budget_j: float | None
    predicted_j: float
    node_j: float
    idle_j: float
    dynamic_j: float
    busy_gpu_s: float
    powered_gpu_s: float
    steps: float
    decide_s: float
    solver: str
    status: str
    note: str = ""
    """Why the round's plan is not the solver's plan for its objective (fallback reason,
    objective switched), empty otherwise."""
    clock_stops: int | None = None
    """The solver stages of the round's plan that stopped on the clock (``SolveReport.clock_stops``; a round with
    none planned the same under any load, docs/design.md §5.15); None for a policy that reports no stages."""
    delta: float | None = None
    """The round's ``delta`` when a governor (:mod:`planner.sim.governor`) set it."""
    credit_weight: float | None = None
    """The ``efficiency`` objective's credit weight when a governor set it (1 without a signal)."""
    unobserved: int | None = None
    """With a learner: running jobs whose decision rested on a belief without own observations."""
    bounded: int = 0
    """Jobs with a tail bound (``min_steps > 0``) in the round's instance (:mod:`planner.sim.tail_bound`)."""
    phase: str = ""
    """``saturated``, ``light`` or ``tail`` (:func:`planner.sim.energy_levers.phase_of`)."""
    levers: LeverSplit = LeverSplit()
    """The round's energy by lever, under the truth (:mod:`planner.sim.energy_levers`; J)."""

    @property
    def energy_j(self) -> float:
        """Energy the round drew: node plus idle plus dynamic (J)."""
        return self.node_j + self.idle_j + self.dynamic_j


@dataclass
class SimResult:
    """A finished replay: every job's final state, every round, and why it stopped."""

    policy: str
    jobs: list[JobState]
    rounds: list[RoundRecord]
    stop_reason: StopReason
    t0_s: float
    duration_s: float
    budget_label: str
    info: dict[str, Any] = field(default_factory=dict)
    decisions: list[DecisionRecord] = field(default_factory=list)
    """With a learner: every running job's round, what was believed and what was observed."""
    gpu_types: tuple[str, ...] = ()
    """The cluster's GPU types, in its order: the ``nodes_on_<type>`` columns of ``rounds.csv``."""


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One job-round of a learning replay: the belief the plan rested on against the observation."""

    round: int
    job_id: str
    job_type: str
    gpu_type: str
    gpus: int
    setting: int
    partner: str | None
    basis: str
    predicted_steps_per_s: float
    observed_steps_per_s: float
    predicted_power_w: float | None
    observed_power_w: float | None


@dataclass
class ReplayState:
    """Everything a replay carries from one round to the next: what a checkpoint saves and a resume restores.

    ``r`` is the index of the next round to consider; ``stop`` is set once the replay has stopped. The budget,
    governor, learner and tail bound are kept here (not in the caller) because they change as rounds are played
    (energy charged, beliefs learned); pickled together, an energy budget paced by the governor's credit weight
    keeps pointing at the same governor.
    """

    states: list[JobState]
    t0: float
    pacer: Budget
    rng: random.Random | None
    governor: DeltaSteer | None = None
    learner: ProfileLearner | None = None
    tail: TailBound | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    decisions: list[DecisionRecord] = field(default_factory=list)
    book: LeverBook | None = None
    arrived_before: int = 0
    idle_streak: int = 0
    r: int = 0
    stop: StopReason | None = None
    memo: DecisionMemo = field(default_factory=DecisionMemo)
    """The last round's decision, reused while the round stays the same (:mod:`planner.sim.decision_memo`)."""

    @property
    def jobs_done(self) -> int:
        """Jobs finished so far."""
        return sum(s.done for s in self.states)

    @property
    def work_done(self) -> float:
        """Share of the workload's reference work done, in [0, 1].

        ``sum_j n_j d_j (1 - R_j / S_j) / sum_j n_j d_j`` with ``n_j`` the requested GPUs, ``d_j`` the reference
        duration (s), ``R_j`` the remaining and ``S_j`` the total steps: GPU-seconds at reference speed, so
        that a long job weighs what it costs (what a progress bar's ETA needs).
        """
        total = done = 0.0
        for s in self.states:
            weight = s.spec.requested_gpus * s.spec.reference_duration_s
            total += weight
            done += weight * (1.0 if s.done else s.steps_done / s.spec.total_steps if s.spec.total_steps else 0.0)
        return done / total if total > 0 else 1.0


ProgressCallback = Callable[[ReplayState], None]
"""Called after every simulated round with the replay's state (``state.rounds[-1]`` is the round)."""


class ReplayObserver(Protocol):
    """What a journal (:mod:`planner.sim.journal`) hears: every round played, then the stop."""

    def round_done(self, state: ReplayState) -> None:
        """After each simulated round (the state is consistent: a resume from it plays the next round)."""
        ...

    def finished(self, state: ReplayState) -> None:
        """Once, when the replay has stopped (``state.stop`` set)."""
        ...


def _noise_factors(rng: random.Random | None, plan: Plan, noise: float) -> dict[str, float]:
    """A throughput factor per running job (plan order), 1 when there is no noise."""
    if rng is None or noise <= 0:
        return {}
    return {e.job_id: 1.0 + rng.uniform(-noise, noise) for e in plan.running()}


def _apply(
    inst: Instance, plan: Plan, out: RoundOutcome, states: dict[str, JobState], now_s: float
) -> tuple[int, float]:
    """Advance the jobs by the round's outcome; return (jobs finished, steps done)."""
    running = {e.job_id: e for e in plan.running()}
    finished, steps = 0, 0.0
    for s in (states[j.id] for j in inst.jobs):
        p = out.jobs.get(s.id)
        if p is None:
            s.current = None
            continue
        e = running[s.id]
        s.remaining_steps = 0.0 if p.finished else s.remaining_steps - p.steps
        s.restarts += p.restarts
        s.rounds_run += 1
        s.rounds_shared += p.shared
        s.compute_s += p.compute_s
        s.dynamic_energy_j += p.dynamic_j
        steps += p.steps
        if s.first_start_s is None:
            s.first_start_s = now_s + p.start_s
        if p.finished:
            s.finish_s = now_s + p.start_s + p.compute_s
            s.current = None
            finished += 1
        else:
            s.current = CurrentConfig(e.gpu_type or "", e.gpus or 0, e.setting or 0, e.shares_with, e.placement)
    return finished, steps


def simulate(
    workload: Workload,
    ctx: ClusterContext,
    policy: Policy,
    budget: Budget | None = None,
    config: SimConfig | None = None,
    progress: ProgressCallback | None = None,
    governor: DeltaSteer | None = None,
    learner: ProfileLearner | None = None,
    tail: TailBound | None = None,
    resume: ReplayState | None = None,
    observer: ReplayObserver | None = None,
) -> SimResult:
    """Replay ``workload`` on the cluster of ``ctx`` with ``policy`` (see the module docstring).

    With a ``governor``, each round's ``delta`` is its choice (:mod:`planner.sim.governor`); with a
    ``learner``, the policy plans with the learner's beliefs and the learner observes every round; with a
    ``tail`` bound, each round's instance carries the jobs' ``min_steps`` (:mod:`planner.sim.tail_bound`).
    ``resume``: a checkpointed :class:`ReplayState` of the same replay to go on from (its budget, governor,
    learner and tail bound replace the ones given); ``observer`` hears every round and the stop.
    """
    cfg = config or SimConfig()
    state = resume or start_state(workload, cfg, budget, governor, learner, tail)
    if state.stop is None:
        _run_rounds(state, ctx, policy, cfg, progress, observer)
    if observer is not None:
        observer.finished(state)
    info = {
        "cluster_powered_w": sum(g.nodes * g.powered_node_w for g in ctx.gpu_types),
        "replan": cfg.replan,
        "rounds_decided": len(state.rounds) - state.memo.hits,
    }
    T = ctx.rules.duration_s
    return SimResult(
        policy.name,
        state.states,
        state.rounds,
        state.stop or "completed",
        state.t0,
        T,
        state.pacer.label,
        info,
        state.decisions,
        tuple(g.name for g in ctx.gpu_types),
    )


def start_state(
    workload: Workload,
    cfg: SimConfig,
    budget: Budget | None = None,
    governor: DeltaSteer | None = None,
    learner: ProfileLearner | None = None,
    tail: TailBound | None = None,
) -> ReplayState:
    """The state before round 0: every job new, in arrival order; the clock at ``cfg.start_s`` or the first arrival."""
    states = [JobState.new(spec) for spec in sorted(workload.jobs, key=lambda j: j.arrival_s)]
    if not states:
        raise ValueError("the workload has no jobs to replay")
    t0 = cfg.start_s if cfg.start_s is not None else states[0].spec.arrival_s
    rng = random.Random(cfg.seed) if cfg.noise > 0 else None
    state = ReplayState(states, t0, budget or NoBudget(), rng, governor, learner, tail)
    state.memo = DecisionMemo(replan=cfg.replan)
    return state


def _run_rounds(
    st: ReplayState,
    ctx: ClusterContext,
    policy: Policy,
    cfg: SimConfig,
    progress: ProgressCallback | None,
    observer: ReplayObserver | None,
) -> None:
    """Play rounds from ``st.r`` until the replay stops; ``st.stop`` says why."""
    T = ctx.rules.duration_s
    states, pacer, governor, learner, tail = st.states, st.pacer, st.governor, st.learner, st.tail
    by_id = {s.id: s for s in states}
    while True:
        now = st.t0 + st.r * T
        queued = [s for s in states if s.queued_at(now)]
        unfinished = [s for s in states if not s.done]
        if not unfinished:
            st.stop = "completed"
            break
        if not queued:
            nxt = min(s.spec.arrival_s for s in unfinished)
            st.r = max(st.r + 1, math.ceil((nxt - st.t0) / T - 1e-9))
            continue
        if len(st.rounds) >= cfg.max_rounds:
            st.stop = "max-rounds"
            break
        if pacer.exhausted:
            st.stop = "budget-exhausted"
            break
        budget_j = pacer.round_budget_j(unfinished, now, T, ctx.total_gpus)
        delta = None if governor is None else governor.delta_for_round(states, now)
        weight = None if governor is None else governor.credit_weight_for_round(now)
        seen = learner.context() if learner is not None else ctx
        bounds = None if tail is None else tail.min_steps(seen, queued, now, budget_j)
        inst = round_instance(seen, st.r, now, queued, budget_j, delta, weight, bounds)
        real = inst if ctx.truth is None else round_instance(ctx.real, st.r, now, queued, budget_j, delta, weight)
        context = replay_round(now, queued)
        st.book = st.book.use(real) if st.book is not None else LeverBook(real)
        record = _play_round(
            inst,
            context,
            policy,
            by_id,
            now,
            st.rng,
            cfg.noise,
            real,
            ctx.real.utilisation,
            learner,
            st.decisions,
            st.book,
            st.memo,
        )
        arrived_now = sum(1 for s in states if s.spec.arrival_s <= now)
        requested = sum(s.spec.requested_gpus for s in queued)
        phase = phase_of(requested, ctx.total_gpus, arrived_now < len(states))
        arrived = arrived_now - st.arrived_before
        record = replace(record, arrived=arrived, delta=delta, credit_weight=weight, phase=phase)
        st.arrived_before = arrived_now
        pacer.charge(record.energy_j)
        st.rounds.append(record)
        st.idle_streak = st.idle_streak + 1 if record.running == 0 and arrived_now == len(states) else 0
        if st.idle_streak >= cfg.stall_rounds:
            st.stop = pacer.stall_reason
        else:
            st.r += 1
        if progress is not None:
            progress(st)
        if observer is not None:
            observer.round_done(st)
        if st.stop is not None:
            break


def _play_round(
    inst: Instance,
    context: ReplayRound,
    policy: Policy,
    states: dict[str, JobState],
    now_s: float,
    rng: random.Random | None,
    noise: float,
    real: Instance,
    utilisation: UtilisationTable,
    learner: ProfileLearner | None,
    decisions: list[DecisionRecord],
    book: LeverBook | None = None,
    memo: DecisionMemo | None = None,
) -> RoundRecord:
    """Decide, place, validate, advance: one round (steps 2-4 of the module docstring).

    ``inst`` is what the policy sees (with ``context`` beside it), ``real`` the same round under the truth
    (``inst`` itself without one); ``memo`` answers a round identical to the last one decided;
    with a ``learner`` the round's observations are logged and learned from.
    """
    begin = time.perf_counter()
    decision = (memo or DecisionMemo()).decide(policy, inst, context)
    decide_s = time.perf_counter() - begin
    info = SolveInfo(solver=decision.solver, status=decision.status, solve_s=decide_s)
    plan = assemble_plan(inst, decision.allocations, info)
    problems = validate_plan(inst, plan)
    if problems:
        raise InvalidPlanError(f"{policy.name} (round {inst.round.index})", problems)
    out = _real_outcome(real, plan, _noise_factors(rng, plan, noise), real is not inst)
    unobserved = None
    if learner is not None:
        jobs_seen, gpus_seen = observe_round(real, plan, out, utilisation)
        unobserved = _log_decisions(inst, plan, learner, jobs_seen, decisions)
        learner.observe(jobs_seen, gpus_seen)
    levers = round_levers(book or LeverBook(real), plan, out)  # simulate points the book at this round
    finished, steps = _apply(inst, plan, out, states, now_s)
    return RoundRecord(
        index=inst.round.index,
        start_s=now_s,
        queued=len(inst.jobs),
        running=len(out.jobs),
        shared=sum(p.shared for p in out.jobs.values()),
        restarted=sum(p.restarts for p in out.jobs.values()),
        arrived=0,
        finished=finished,
        gpus_used=out.gpus_used,
        powered_gpus=out.powered_gpus,
        nodes_on=dict(plan.round.nodes_on),
        budget_j=inst.round.budget_j,
        predicted_j=plan.round.energy_j,
        node_j=out.energy.node_j,
        idle_j=out.energy.idle_j,
        dynamic_j=out.energy.dynamic_j,
        busy_gpu_s=out.busy_gpu_s,
        powered_gpu_s=out.powered_gpu_s,
        steps=steps,
        decide_s=decide_s,
        solver=decision.solver,
        status=decision.status,
        note=decision.note,
        clock_stops=decision.detail.get("clock_stops"),
        unobserved=unobserved,
        bounded=sum(j.min_steps > 0 for j in inst.jobs),
        levers=levers,
    )


def _real_outcome(real: Instance, plan: Plan, factors: dict[str, float], is_truth: bool) -> RoundOutcome:
    """:func:`round_outcome` on the real instance; a truth library that lacks a planned profile is named."""
    try:
        return round_outcome(real, plan, factors)
    except ValueError as exc:
        if not is_truth:
            raise
        raise InputError(
            "--truth", [Problem("truth-missing", f"round {real.round.index}", f"{exc}: the truth library lacks it")]
        ) from None


def _log_decisions(
    inst: Instance,
    plan: Plan,
    learner: ProfileLearner,
    observed: list[JobObservation],
    decisions: list[DecisionRecord],
) -> int:
    """Log each observed job-round against its belief; return how many rested on no own observation."""
    running = {e.job_id: e for e in plan.running()}
    unobserved = 0
    for o in observed:
        e = running[o.job_id]
        basis = learner.basis(o.job_type, o.gpu_type, o.gpus, o.partner_type)
        unobserved += basis != "observed"
        partner = running.get(e.shares_with or "")
        job = inst.job(o.job_id)
        predicted = job_outcome(
            inst, job, inst.gpu_type(o.gpu_type), o.gpus, o.setting, rho_of(inst, e, partner) or 1.0
        )
        decisions.append(
            DecisionRecord(
                round=inst.round.index,
                job_id=o.job_id,
                job_type=o.job_type,
                gpu_type=o.gpu_type,
                gpus=o.gpus,
                setting=o.setting,
                partner=o.partner_type,
                basis=basis,
                predicted_steps_per_s=predicted.steps_per_s if predicted else float("nan"),
                observed_steps_per_s=o.steps_per_s,
                predicted_power_w=predicted.power_w if predicted and partner is None else None,
                observed_power_w=o.power_w,
            )
        )
    return unobserved
