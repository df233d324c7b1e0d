"""Domain types of one scheduling round (docs/design.md §1.2 and §7.1).

Every type is a frozen dataclass: the instance loader builds them once, after the
structural (JSON Schema) and semantic checks have passed, and nothing mutates them.

Units are part of the names: ``_s`` seconds, ``_j`` joules, ``_w`` watts,
``steps_per_s`` training steps per second of the whole job (all its GPUs together).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from wattplan.planner.contracts.defaults import DELTA, MIN_PAIR_RATE, RESTART_S
from wattplan.planner.contracts.rules import Objective, RoundRules

SettingUnit = Literal["power_limit_w", "sm_clock_mhz"]


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, 8, ... (n > 0 and n & (n - 1) == 0)."""
    return n > 0 and n & (n - 1) == 0


def gpu_count_fits_type(n: int, gpus_per_node: int) -> bool:
    """A count a buddy allocator can place without fragmentation on nodes of ``gpus_per_node``.

    Allowed: a power of two no larger than one node (``n <= K`` and ``n = 2^i``), or a
    whole multiple of the node size (``n = m*K``). With ``K`` itself a power of two these
    sizes nest, so ``sum n <= K*u`` is enough to place every job on ``u`` nodes.
    """
    if n <= 0:
        return False
    if n <= gpus_per_node:
        return is_power_of_two(n)
    return n % gpus_per_node == 0


@dataclass(frozen=True, slots=True)
class RoundSpec:
    """The round: its index, its rules, energy budget ``B`` = ``budget_j`` (None: none) and credit weight.

    The rules' fields stay flat here, as the instance file's ``round`` object has them (``inst.round.delta``);
    :attr:`rules` is them as one :class:`~planner.contracts.rules.RoundRules`, :meth:`from_rules` the spec of one.
    """

    index: int
    duration_s: float
    budget_j: float | None
    objective: Objective = "progress"
    delta: float = DELTA
    restart_s: float = RESTART_S
    min_pair_rate: float = MIN_PAIR_RATE
    credit_weight: float = 1.0
    """``w`` of the ``efficiency`` objective, ``min E - w sum_j e_j sigma_j``: the value of a step
    in units of its best energy. 1 values work at its least energy; above 1 (a clean or cheap hour)
    buys steps that cost up to ``w`` times their best, below 1 (a dirty or dear hour) defers them."""

    @classmethod
    def from_rules(cls, index: int, rules: RoundRules, budget_j: float | None, credit_weight: float = 1.0) -> RoundSpec:
        """Round ``index`` played by ``rules`` with budget ``budget_j`` (J, None: none) and credit weight ``w``."""
        fields = asdict(rules)
        del fields["max_slowdown"]  # carried by each job's min_rate (Job.min_rate), not by the round
        del fields["slurm_starts"]  # carried by the min_steps of the jobs that must run
        del fields["pin_running"]  # carried by the pinned types and the min_steps of the running jobs
        return cls(index=index, budget_j=budget_j, credit_weight=credit_weight, **fields)

    @property
    def rules(self) -> RoundRules:
        """The round's rules: duration, restart cost, least pair rate, objective and ``delta``."""
        return RoundRules(self.duration_s, self.restart_s, self.min_pair_rate, self.objective, self.delta)


@dataclass(frozen=True, slots=True)
class GpuType:
    """A homogeneous pool: ``nodes`` nodes of ``gpus_per_node`` GPUs.

    A powered-on node draws ``node_power_w + gpus_per_node * idle_power_w`` whether busy or
    not; a GPU running a job draws ``power_w`` of its profile, i.e. ``power_w - idle_power_w``
    on top of its idle power.
    """

    name: str
    nodes: int
    gpus_per_node: int
    idle_power_w: float
    node_power_w: float
    setting_unit: SettingUnit
    settings: tuple[int, ...]

    @property
    def total_gpus(self) -> int:
        """GPUs of the pool: ``N * K`` (nodes times GPUs per node)."""
        return self.nodes * self.gpus_per_node

    @property
    def powered_node_w(self) -> float:
        """Power of one powered-on node with all GPUs idle: ``Pnode + K * Pidle`` (W)."""
        return self.node_power_w + self.gpus_per_node * self.idle_power_w

    @property
    def powered_share_w(self) -> float:
        """One GPU's share of a powered node: ``Pnode / K + Pidle`` (W)."""
        return self.node_power_w / self.gpus_per_node + self.idle_power_w

    def node_names(self) -> list[str]:
        """Node names as plans use them: ``<type>-0`` .. ``<type>-(N-1)``."""
        return [node_name(self.name, i) for i in range(self.nodes)]


def node_name(gpu_type: str, index: int) -> str:
    """The plan's name of node ``index`` of ``gpu_type``: ``<type>-<index>``."""
    return f"{gpu_type}-{index}"


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """GPU indices (0-based, within the node) that one allocation uses on one node."""

    node: str
    gpu_indices: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CurrentConfig:
    """What a running job has now; a change of ``gpu_type`` or ``gpus`` restarts it."""

    gpu_type: str
    gpus: int
    setting: int
    shares_with: str | None = None
    placement: tuple[NodeGpus, ...] | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """A queued or running job: ``remaining_steps`` > 0, allowed GPU counts ``gpus``."""

    id: str
    type: str
    remaining_steps: float
    gpus: tuple[int, ...]
    weight: float = 1.0
    current: CurrentConfig | None = None
    min_steps: float = 0.0
    """Tail bound (steps): when above 0 the plan must run the job this round and give it at least this
    many steps (a replay's per-job deadline sets it, :mod:`planner.sim.tail_bound`); 0: the job may wait."""
    requested_gpus: int | None = None
    """GPUs the user asked for (informational: the model plans over ``gpus``; ``plan`` shows requested against
    given). None when unknown (instances cut from traces keep their normalised request in ``gpus``)."""
    min_rate: float = 0.0
    """Slowdown limit (steps/s): when above 0 every option the job runs in, alone or in a pair, gives it at least
    this rate ``rho X`` (a replay's or the agent's ``--max-slowdown`` sets it); 0: any rate. The job may still
    wait."""
    pair_only: bool = False
    """The job runs only in a pair, never alone (a running pair's guest on Slurm holds no GPU of its own, so
    running alone would restart it; :mod:`planner.sim.pinned` sets it). It may still wait."""
    # Launch fields (optional; used by launch renderers, ignored by the model).
    command: tuple[str, ...] | None = None
    workdir: str | None = None
    env: tuple[tuple[str, str], ...] | None = None
    user: str | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    """Exclusive run of a job type: whole-job ``steps_per_s`` and ``power_w`` per GPU."""

    type: str
    gpu_type: str
    gpus: int
    setting: int
    steps_per_s: float
    power_w: float
    basis: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    """Where the numbers come from, when the library says (``{"kind": "measured" | "fitted" | "prior" |
    "repaired", "points": [ids], "rel_error": ..., "reason": ...}``, :mod:`planner.profiling`); plans copy it."""


@dataclass(frozen=True, slots=True)
class PairSlowdown:
    """Two job types sharing the same ``gpus`` GPUs of ``gpu_type``.

    ``rho_a`` = throughput of type ``a`` when shared / its exclusive throughput (same for b).
    Holds for both orders and every setting of the GPU type.
    """

    a: str
    b: str
    gpu_type: str
    gpus: int
    rho_a: float
    rho_b: float


ProfileKey = tuple[str, str, int, int]  # (job type, gpu type, gpus, setting)
PairKey = tuple[str, str, str, int]  # (type a, type b, gpu type, gpus)


def _profile_map(profiles: tuple[Profile, ...]) -> dict[ProfileKey, Profile]:
    """``(type, gpu_type, gpus, setting) -> profile``."""
    return {(p.type, p.gpu_type, p.gpus, p.setting): p for p in profiles}


def _pair_map(pairs: tuple[PairSlowdown, ...]) -> dict[PairKey, tuple[float, float]]:
    """``(a, b, gpu_type, gpus) -> (rho_a, rho_b)``, each entry serving both orders (the first listed wins)."""
    out: dict[PairKey, tuple[float, float]] = {}
    for p in pairs:
        out[(p.a, p.b, p.gpu_type, p.gpus)] = (p.rho_a, p.rho_b)
        out.setdefault((p.b, p.a, p.gpu_type, p.gpus), (p.rho_b, p.rho_a))
    return out


_LOOKUPS: dict[int, tuple[tuple[Any, ...], dict[Any, Any]]] = {}
"""``id(tuple) -> (tuple, map)``: the lookup maps of recent profile and pair tuples. Instances built from the same
tuple (a replay's consecutive rounds) share one read-only map; holding the tuple keeps its id from being reused."""


def _lookup(items: tuple[Any, ...], build: Callable[[Any], dict[Any, Any]]) -> dict[Any, Any]:
    """``build(items)``, kept for the tuple object ``items`` among the last few seen (never mutated by readers)."""
    hit = _LOOKUPS.get(id(items))
    if hit is not None and hit[0] is items:
        return hit[1]
    table = build(items)
    if len(_LOOKUPS) >= 64:
        _LOOKUPS.clear()
    _LOOKUPS[id(items)] = (items, table)
    return table


@dataclass(frozen=True)
class Instance:
    """One round: cluster, queue, profiles. Built only by ``planner.contracts.instance_io``."""

    round: RoundSpec
    gpu_types: tuple[GpuType, ...]
    jobs: tuple[Job, ...]
    profiles: tuple[Profile, ...]
    pairs: tuple[PairSlowdown, ...]
    extra: dict = field(default_factory=dict, compare=False)
    # Lookup tables, filled by __post_init__ from the fields above.
    _gpu_by_name: dict[str, GpuType] = field(init=False, repr=False, compare=False)
    _job_by_id: dict[str, Job] = field(init=False, repr=False, compare=False)
    _profile_by_key: dict[ProfileKey, Profile] = field(init=False, repr=False, compare=False)
    _pair_by_key: dict[PairKey, tuple[float, float]] = field(init=False, repr=False, compare=False)
    derived: dict[str, object] = field(init=False, repr=False, compare=False)
    """Values computed from the fields above, kept by whoever computed them (e.g. the instance's digest): the
    instance is immutable, so they stay true; ``dataclasses.replace`` starts a new, empty one."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", {})
        object.__setattr__(self, "_gpu_by_name", {g.name: g for g in self.gpu_types})
        object.__setattr__(self, "_job_by_id", {j.id: j for j in self.jobs})
        object.__setattr__(self, "_profile_by_key", _lookup(self.profiles, _profile_map))
        object.__setattr__(self, "_pair_by_key", _lookup(self.pairs, _pair_map))

    def gpu_type(self, name: str) -> GpuType:
        """The GPU type called ``name`` (``KeyError`` if the instance has none)."""
        return self._gpu_by_name[name]

    def has_gpu_type(self, name: str) -> bool:
        """True when the instance has a GPU type called ``name``."""
        return name in self._gpu_by_name

    def job(self, job_id: str) -> Job:
        """The job with id ``job_id`` (``KeyError`` if the instance has none)."""
        return self._job_by_id[job_id]

    def has_job(self, job_id: str) -> bool:
        """True when the instance has a job with id ``job_id``."""
        return job_id in self._job_by_id

    def profile(self, job_type: str, gpu_type: str, gpus: int, setting: int) -> Profile | None:
        """The exclusive profile of ``job_type`` on ``gpus`` GPUs of ``gpu_type`` at ``setting``; None if unprofiled."""
        return self._profile_by_key.get((job_type, gpu_type, gpus, setting))

    def pair_rates(self, type_j: str, type_k: str, gpu_type: str, gpus: int) -> tuple[float, float] | None:
        """``(rho_j, rho_k)`` for job types ``type_j`` and ``type_k`` sharing, in that order.

        An entry ``(a, b)`` serves both orders; for two jobs of the same type the job listed
        first gets ``rho_a`` (the caller passes them in instance order).
        """
        return self._pair_by_key.get((type_j, type_k, gpu_type, gpus))
