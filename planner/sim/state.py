"""The state of one replayed job between rounds.

Units: seconds (``_s``, on the replay clock, i.e. the trace's clock), training steps,
joules (``_j``). A job is *queued* once ``arrival_s <= now`` until it finishes; it is
*running* in a round when the round's plan runs it, and carries that configuration
(``current``, with its placement) into the next round, where keeping the same GPU type
and count avoids the restart cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattplan.planner.contracts.domain import CurrentConfig


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A trace job as the replay sees it (immutable).

    ``requested_gpus`` is the trace's request normalised to the profiled counts
    (:func:`planner.rounds.traces.normalise_request`); ``allowed_gpus`` the counts a policy may
    use (:func:`planner.rounds.builder.allowed_counts`: profiled powers of two up to twice the
    request); ``reference_steps_per_s`` the whole-job throughput at the requested count on the
    fastest GPU type of the cluster at its top setting (used only for budget pacing).
    """

    id: str
    type: str
    arrival_s: float
    total_steps: float
    requested_gpus: int
    allowed_gpus: tuple[int, ...]
    reference_steps_per_s: float

    @property
    def reference_duration_s(self) -> float:
        """``total_steps / reference_steps_per_s``: the job's length alone at full speed (s)."""
        return self.total_steps / self.reference_steps_per_s


@dataclass(slots=True)
class JobState:
    """Mutable progress of one job during a replay.

    ``remaining_steps`` only decreases; ``finish_s`` is set in the round in which the last
    step is done (mid-round: round start + restart loss + steps / rate). The job keeps its
    GPUs until the next round starts, where it is no longer queued.
    """

    spec: JobSpec
    remaining_steps: float
    current: CurrentConfig | None = None
    first_start_s: float | None = None
    finish_s: float | None = None
    restarts: int = 0
    rounds_run: int = 0
    rounds_shared: int = 0
    compute_s: float = 0.0  # seconds actually computing (restart loss excluded)
    dynamic_energy_j: float = 0.0

    @classmethod
    def new(cls, spec: JobSpec) -> JobState:
        """A job that has not started: all ``total_steps`` remaining, no configuration."""
        return cls(spec=spec, remaining_steps=spec.total_steps)

    @property
    def id(self) -> str:
        """The trace job's id."""
        return self.spec.id

    @property
    def done(self) -> bool:
        """True once the job has finished (``finish_s`` is set)."""
        return self.finish_s is not None

    @property
    def steps_done(self) -> float:
        """Steps completed so far: ``total_steps - remaining_steps``."""
        return self.spec.total_steps - self.remaining_steps

    def queued_at(self, now_s: float) -> bool:
        """Arrived by ``now_s`` and not finished."""
        return self.spec.arrival_s <= now_s and self.finish_s is None

    @property
    def jct_s(self) -> float | None:
        """Job completion time ``finish_s - arrival_s`` (s), None while unfinished."""
        return None if self.finish_s is None else self.finish_s - self.spec.arrival_s
