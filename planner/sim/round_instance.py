"""The simulator's state at a round start, as an :class:`~planner.contracts.domain.Instance`.

The rules are the round builder's (:mod:`planner.rounds.builder`): GPU types from the cluster
spec and the profile library (built by :func:`~planner.rounds.builder.build_round` itself, so the
two never drift apart), allowed counts up to twice the request, profiles of the job types
present on the cluster's GPU types with at most the type's GPUs, the pair entries among those
types. What the replay adds:

* jobs are the queued ones (arrived, unfinished), in arrival order, with their true
  ``remaining_steps`` and, if they ran in the previous round, their ``current`` configuration
  with its placement (``shares_with`` only while the partner is still queued);
* the round's budget comes from the pacer (:mod:`planner.sim.budget`);
* :class:`ReplayRound` (:func:`replay_round`), handed to the policy beside the instance, tells it what
  the model does not carry: the round's start time and each job's requested GPU count and arrival time.
  The instance's ``extra["sim"]`` keeps the same facts as a record (:meth:`ReplayRound.record`), written
  with the instance and part of its SHA-256 as before; nothing reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from wattplan.planner.contracts.domain import CurrentConfig, GpuType, Instance, Job, PairSlowdown, Profile, RoundSpec
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.builder import RoundOptions, build_round
from wattplan.planner.rounds.cluster_spec import ClusterSpec
from wattplan.planner.sim.pinned import pin_running
from wattplan.planner.sim.slurm_starts import running_steps, slurm_start_steps
from wattplan.planner.sim.state import JobState


@dataclass(frozen=True)
class ClusterContext:
    """Everything about the cluster and the profiles that every round instance shares."""

    gpu_types: tuple[GpuType, ...]
    profiles_by_type: dict[str, tuple[Profile, ...]]
    pairs: tuple[PairSlowdown, ...]
    rules: RoundRules
    truth: ClusterContext | None = None
    """What really happens when it differs from these profiles (``--truth``): jobs advance and draw
    power by it (:mod:`planner.control.truth_model`); None: the profiles are the truth."""
    utilisation: Mapping[tuple[str, str, int, int], float] = field(default_factory=dict)
    """Busy fraction of a profile's GPUs, (type, GPU type, count, setting) -> [0, 1], where the library has it."""

    @property
    def real(self) -> ClusterContext:
        """The context jobs really run by: ``truth`` if given, else this one."""
        return self.truth or self

    @property
    def total_gpus(self) -> int:
        """GPUs of the whole cluster: ``sum_g N_g * K_g``."""
        return sum(g.total_gpus for g in self.gpu_types)

    @property
    def type_names(self) -> tuple[str, ...]:
        """The GPU type names, in cluster order."""
        return tuple(g.name for g in self.gpu_types)


_CONTEXTS: dict[tuple[ClusterSpec, int, RoundRules], tuple[ProfileLibrary, ClusterContext]] = {}
"""``(cluster, id(lib), rules) -> (lib, context)``: the contexts of the last few clusters and libraries. A live agent
asks for its cluster's context every round with the same (equal) cluster, the same library object and the same
rules; one context object then serves them all, and so does what is kept per context object (:func:`nodes_stay_on`,
the profile tables of :func:`round_instance`). Holding ``lib`` keeps its id from being reused while the entry
lives."""

MEMO_SIZE = 8
"""Entries :data:`_CONTEXTS` and :data:`_STAY_ON` keep before they start again empty."""


def cluster_context(cluster: ClusterSpec, lib: ProfileLibrary, rules: RoundRules) -> ClusterContext:
    """GPU types exactly as :func:`build_round` makes them; profiles grouped by job type (:func:`_cluster_context`).

    Kept per ``(cluster, library object, rules)`` (:data:`_CONTEXTS`): the context is a function of those three
    alone, ``cluster`` and ``rules`` are frozen values compared by equality, and a library is never changed after
    it is loaded (a frozen dataclass whose tables nothing writes to), so a kept context cannot go stale.
    """
    key = (cluster, id(lib), rules)
    hit = _CONTEXTS.get(key)
    if hit is not None and hit[0] is lib:
        return hit[1]
    ctx = _cluster_context(cluster, lib, rules)
    if len(_CONTEXTS) >= MEMO_SIZE:
        _CONTEXTS.clear()
    _CONTEXTS[key] = (lib, ctx)
    return ctx


def _cluster_context(cluster: ClusterSpec, lib: ProfileLibrary, rules: RoundRules) -> ClusterContext:
    """GPU types exactly as :func:`build_round` makes them; profiles grouped by job type.

    A library that measured a node's power without its GPUs (``gpu_types[].node_power_w``, e.g. a
    truth library) replaces the cluster's assumed node power with it.

    Raises :class:`planner.contracts.problems.InputError` for a GPU type the library does not profile.
    """
    empty = build_round([], cluster, lib, RoundOptions(at_s=0.0, budget_fraction=None))
    sizes = {g.name: g.total_gpus for g in empty.gpu_types}
    by_type: dict[str, list[Profile]] = {}
    for p in lib.profiles:
        if p.gpu_type in sizes and p.gpus <= sizes[p.gpu_type]:
            by_type.setdefault(p.type, []).append(p)
    pairs = tuple(p for p in lib.pairs if p.gpu_type in sizes)
    utilisation = {
        key: float(extra["utilisation"])
        for key, extra in lib.profile_extras.items()
        if key[1] in sizes and extra.get("utilisation") is not None
    }
    gpu_types = tuple(
        replace(g, node_power_w=float(lib.gpu_types[g.name].get("node_power_w", g.node_power_w)))
        for g in empty.gpu_types
    )
    return ClusterContext(gpu_types, {t: tuple(ps) for t, ps in by_type.items()}, pairs, rules, utilisation=utilisation)


@dataclass(frozen=True)
class ReplayRound:
    """What a replay round tells its policy beside the instance, which the round model does not carry.

    The round's start ``now_s`` (s, replay clock), each queued job's requested GPU count (normalised) and its
    arrival time (s).
    """

    now_s: float
    requested_gpus: Mapping[str, int] = field(default_factory=dict)
    arrival_s: Mapping[str, float] = field(default_factory=dict)

    def requested(self, job: Job) -> int:
        """``job``'s requested GPU count; its smallest allowed count when the round does not know it."""
        return int(self.requested_gpus[job.id]) if job.id in self.requested_gpus else min(job.gpus)

    def record(self) -> dict[str, Any]:
        """The instance's ``extra["sim"]``: ``now_s``, ``requested_gpus`` and ``arrival_s`` by job id."""
        return {"now_s": self.now_s, "requested_gpus": dict(self.requested_gpus), "arrival_s": dict(self.arrival_s)}


_STAY_ON: dict[int, tuple[ClusterContext, ClusterContext]] = {}
"""``id(ctx) -> (ctx, nodes_stay_on(ctx))`` for the last few contexts (holding ``ctx`` keeps its id from being
reused while the entry lives)."""


def nodes_stay_on(ctx: ClusterContext) -> ClusterContext:
    """:func:`_nodes_stay_on` of ``ctx``, kept per context object (:data:`_STAY_ON`).

    A context is frozen and its tables are never written to, so the transformed context of one object stays true;
    a live agent transforms the same (kept, :func:`cluster_context`) context every round.
    """
    hit = _STAY_ON.get(id(ctx))
    if hit is not None and hit[0] is ctx:
        return hit[1]
    out = _nodes_stay_on(ctx)
    if len(_STAY_ON) >= MEMO_SIZE:
        _STAY_ON.clear()
    _STAY_ON[id(ctx)] = (ctx, out)
    return out


def _nodes_stay_on(ctx: ClusterContext) -> ClusterContext:
    """``ctx`` for a cluster whose nodes stay powered whatever a round plans (W, J are the marginal ones).

    A powered node draws ``Pnode + K Pidle`` whether its GPUs run jobs or not, so when nothing powers nodes
    down that power is spent by every plan alike and no plan can save it. The round then sees only what a
    plan changes: every type's ``node_power_w`` and ``idle_power_w`` become 0 and every profile's ``power_w``
    becomes ``power_w - Pidle`` of its GPU type (never below 0). A job's energy ``n (P - Pidle) t`` is the
    same in both views; the node term ``u_g T (Pnode + K Pidle)`` is 0, so the model no longer makes jobs
    wait or packs them onto fewer nodes to save power that no one stops drawing. ``truth`` is transformed
    the same way; steps per second and pair rates are unchanged.
    """
    idle = {g.name: g.idle_power_w for g in ctx.gpu_types}
    profiles = {
        t: tuple(replace(p, power_w=max(p.power_w - idle.get(p.gpu_type, 0.0), 0.0)) for p in ps)
        for t, ps in ctx.profiles_by_type.items()
    }
    return replace(
        ctx,
        gpu_types=tuple(replace(g, idle_power_w=0.0, node_power_w=0.0) for g in ctx.gpu_types),
        profiles_by_type=profiles,
        truth=None if ctx.truth is None else nodes_stay_on(ctx.truth),
    )


def replay_round(now_s: float, queued: Sequence[JobState]) -> ReplayRound:
    """The :class:`ReplayRound` of the round starting at ``now_s`` for the ``queued`` jobs (arrival order)."""
    return ReplayRound(
        now_s,
        {s.id: s.spec.requested_gpus for s in queued},
        {s.id: s.spec.arrival_s for s in queued},
    )


def _current(state: JobState, queued: set[str]) -> CurrentConfig | None:
    cur = state.current
    if cur is None or cur.shares_with is None or cur.shares_with in queued:
        return cur
    return CurrentConfig(cur.gpu_type, cur.gpus, cur.setting, None, cur.placement)


_TABLES: dict[tuple[int, frozenset[str]], tuple[ClusterContext, tuple[Profile, ...], tuple[PairSlowdown, ...]]] = {}
"""``(id(ctx), job types) -> (ctx, profiles, pairs)``: the tables of the last few job-type sets, so consecutive rounds
with the same types share one profile tuple (and what is computed from it: the instance digest's text, the lookup
maps). Holding ``ctx`` keeps its id from being reused while the entry lives."""


def _type_tables(ctx: ClusterContext, types: frozenset[str]) -> tuple[tuple[Profile, ...], tuple[PairSlowdown, ...]]:
    """The profiles (by type name, then as listed) and pair rates of ``ctx`` for jobs of ``types``."""
    hit = _TABLES.get((id(ctx), types))
    if hit is not None and hit[0] is ctx:
        return hit[1], hit[2]
    profiles = tuple(p for t in sorted(types) for p in ctx.profiles_by_type.get(t, ()))
    pairs = tuple(p for p in ctx.pairs if p.a in types and p.b in types)
    if len(_TABLES) >= 64:
        _TABLES.clear()
    _TABLES[(id(ctx), types)] = (ctx, profiles, pairs)
    return profiles, pairs


def round_instance(
    ctx: ClusterContext,
    index: int,
    now_s: float,
    queued: Sequence[JobState],
    budget_j: float | None,
    delta: float | None = None,
    credit_weight: float | None = None,
    min_steps: Mapping[str, float] | None = None,
) -> Instance:
    """The instance of round ``index`` starting at ``now_s`` for the ``queued`` jobs (arrival order).

    ``min_steps``: the tail bound of the jobs that have one (:mod:`planner.sim.tail_bound`; none: 0). Each job's
    ``min_rate`` is its slowdown limit under the rules' ``max_slowdown`` (:func:`rate_floors`); with the rules'
    ``slurm_starts`` every running job is pinned to its GPU type, count and partner (:mod:`planner.sim.pinned`) and
    the jobs Slurm would run get the ``min_steps`` of :mod:`planner.sim.slurm_starts` (the larger of it and their
    tail bound); with ``pin_running`` alone the running jobs are pinned and only they get those ``min_steps``
    (:func:`planner.sim.slurm_starts.running_steps`).

    ``delta`` overrides the rules' (the runtime-bounded mode sets it per round); ``credit_weight``
    sets the ``efficiency`` objective's ``w`` (a signal-aware replay sets it per round; default 1).
    Its ``extra["sim"]`` is :func:`replay_round`'s record (module docstring).
    """
    ids = {s.id for s in queued}
    profiles, pairs = _type_tables(ctx, frozenset(s.spec.type for s in queued))
    floors = rate_floors(profiles, queued, ctx.rules.max_slowdown)
    jobs = tuple(
        Job(
            id=s.id,
            type=s.spec.type,
            remaining_steps=s.remaining_steps,
            gpus=_counts(s, ctx.rules.slurm_starts),
            current=_current(s, ids),
            min_steps=(min_steps or {}).get(s.id, 0.0),
            min_rate=floors.get(s.id, 0.0),
        )
        for s in queued
    )
    rules = ctx.rules if delta is None else replace(ctx.rules, delta=delta)
    spec = RoundSpec.from_rules(index, rules, budget_j, 1.0 if credit_weight is None else credit_weight)
    context = replay_round(now_s, queued)
    inst = Instance(spec, ctx.gpu_types, jobs, profiles, pairs, {"sim": context.record()})
    if not (ctx.rules.slurm_starts or ctx.rules.pin_running):
        return inst
    inst = pin_running(inst)
    if ctx.rules.slurm_starts:
        starts = slurm_start_steps(inst, context.requested_gpus, context.arrival_s)
        return _at_least(inst, starts, set())
    starts = running_steps(inst)
    # a tail bound priced where a job runs (planner.sim.tail_bound) is void where the round does not keep it there
    return _at_least(inst, starts, {j.id for j in inst.jobs if j.current is not None and j.id not in starts})


def _at_least(inst: Instance, starts: Mapping[str, float], unbound: set[str]) -> Instance:
    """``inst`` with each job of ``starts`` bound to at least its steps there, and the ``unbound`` jobs to none."""
    if not starts and not unbound:
        return inst

    def bound(j: Job) -> Job:
        if j.id in unbound:
            return replace(j, min_steps=0.0) if j.min_steps > 0 else j
        return replace(j, min_steps=max(j.min_steps, starts[j.id])) if j.id in starts else j

    return replace(inst, jobs=tuple(bound(j) for j in inst.jobs))


def _counts(state: JobState, slurm_starts: bool) -> tuple[int, ...]:
    """The job's allowed GPU counts; under the Slurm start rule none above its request (its current one kept).

    Slurm gives a job the GPUs it asked for; a job given more would hold GPUs that Slurm gives to the next arrival,
    so under the rule (:mod:`planner.sim.slurm_starts`) a job runs on at most its requested count.
    """
    allowed = state.spec.allowed_gpus
    if not slurm_starts:
        return allowed
    now = state.current.gpus if state.current is not None else None
    return tuple(n for n in allowed if n <= state.spec.requested_gpus or n == now)


def rate_floors(
    profiles: Sequence[Profile], queued: Sequence[JobState], max_slowdown: float | None
) -> dict[str, float]:
    """Each job's slowdown limit ``min_rate`` (steps/s) under ``max_slowdown`` ``x`` (None: none, an empty map).

    ``min_rate_j = min_g max_s X(type_j, g, n_j, s) / (1 + x)``: the job's whole-job rate at its requested count
    ``n_j`` at the best setting (full power), on the slowest GPU type that profiles that count, shrunk by ``1 + x``.
    A job then never runs slower than ``1 / (1 + x)`` of what its request would give it on any GPU type Slurm
    could hand it, alone or in a pair: a count below the request, a lower setting or a pair are taken only while
    the rate keeps that. A job whose type profiles its requested count on no GPU type gets none.
    """
    if max_slowdown is None:
        return {}
    best: dict[tuple[str, str, int], float] = {}
    for p in profiles:
        key = (p.type, p.gpu_type, p.gpus)
        best[key] = max(best.get(key, 0.0), p.steps_per_s)
    slowest: dict[tuple[str, int], float] = {}
    for (job_type, _, n), rate in best.items():
        slowest[(job_type, n)] = min(slowest.get((job_type, n), rate), rate)
    floors = {}
    for s in queued:
        rate = slowest.get((s.spec.type, s.spec.requested_gpus), 0.0)
        if rate > 0:
            floors[s.id] = rate / (1.0 + max_slowdown)
    return floors


def workload_instance(ctx: ClusterContext, states: Sequence[JobState], by_job: bool = False) -> Instance:
    """Every job of ``states`` with its remaining steps as one instance: the energy floor's input.

    No job gets a slowdown limit (``min_rate``) or the start rule's ``min_steps``: the floor bounds every schedule
    compared with it, including those that run a job slower than ``--max-slowdown`` allows or start it later.
    With ``by_job`` each job keeps what the by-job mode lets it run (the rules' ``slurm_starts`` and
    ``max_slowdown``): counts up to its request (:func:`_counts`) at rates of at least its slowdown limit
    (:func:`rate_floors`), so a floor of it bounds only the schedules that keep both.
    """
    unlimited = replace(ctx.rules, max_slowdown=None, slurm_starts=False, pin_running=False)
    free = ctx if unlimited == ctx.rules else replace(ctx, rules=unlimited)
    live = [s for s in states if not s.done]
    inst = round_instance(free, 0, 0.0, live, None)
    if not by_job:
        return inst
    floors = rate_floors(inst.profiles, live, ctx.rules.max_slowdown)
    kept = {s.id: _counts(s, ctx.rules.slurm_starts) for s in live}
    return replace(inst, jobs=tuple(replace(j, gpus=kept[j.id], min_rate=floors.get(j.id, 0.0)) for j in inst.jobs))
