"""What the learner was shown, kept in the agent's state, so that a restarted agent believes what it had learned.

The learner's estimates are a function of the observations it was fed, in order (:mod:`planner.sim.learning`:
weighted means of log ratios to the prior, shrunk to their parents). So the state keeps each round's feed, the
jobs' observations (steps/s, W per GPU, weight in round-equivalents) and each GPU type's idle power (W), in the
``learner_feed`` table (:mod:`planner.agent.store`), and a restarted agent feeds them again, in round order, to a
fresh learner over its first round's prior. The observations are absolute (steps/s and W, not ratios), so a
restart with other profiles derives the ratios again against the new prior; a job type or GPU type the new prior
lacks is skipped, as the learner skips any observation it has no prior for.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from wattplan.planner.agent.store import AgentStore, StoreError
from wattplan.planner.sim.learning import ProfileLearner
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.telemetry import GpuObservation, JobObservation

_Obs = TypeVar("_Obs", JobObservation, GpuObservation)


def save_feed(store: AgentStore, rnd: int, jobs: Sequence[JobObservation], gpus: Sequence[GpuObservation]) -> None:
    """Keep what the learner is shown in round ``rnd`` (call it with what :meth:`ProfileLearner.observe` gets)."""
    store.add_learner_feed(rnd, [dataclasses.asdict(o) for o in jobs], [dataclasses.asdict(o) for o in gpus])


def _checked(kind: type[_Obs], row: Any) -> _Obs:
    """``row`` (a JSON object) as ``kind``, each field of its annotated type; a :class:`TypeError` says which not.

    A ``float`` field takes a JSON integer too; ``X | None`` takes null; no field takes a boolean.
    """
    if not isinstance(row, dict):
        raise TypeError(f"{row!r} is not an object")
    made = kind(**row)
    hints = typing.get_type_hints(kind)
    for f in dataclasses.fields(kind):
        value, hint = row[f.name], hints[f.name]
        kinds: tuple[Any, ...] = typing.get_args(hint) or (hint,)
        if float in kinds:
            kinds = (*kinds, int)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise TypeError(f"{f.name} is {value!r}, not {f.type}")
    return made


def _parsed(kind: type[_Obs], rows: Any, path: Path, rnd: int) -> list[_Obs]:
    """``rows`` (a JSON list of objects) as ``kind``; a :class:`StoreError` naming the round when one does not fit."""
    try:
        if not isinstance(rows, list):
            raise TypeError("not a list")
        return [_checked(kind, row) for row in rows]
    except TypeError as err:
        raise StoreError(
            f"{path}: learner_feed round {rnd} holds no list of {kind.__name__} ({err}): give another --state",
            "bad-state",
        ) from None


def parsed_feed(path: Path, rnd: int, jobs: Any, gpus: Any) -> tuple[list[JobObservation], list[GpuObservation]]:
    """One round's feed as the state file ``path`` keeps it (parsed JSON), as observations; checked."""
    return _parsed(JobObservation, jobs, path, rnd), _parsed(GpuObservation, gpus, path, rnd)


def restored_learner(ctx: ClusterContext, store: AgentStore) -> tuple[ProfileLearner, int]:
    """A learner over the prior ``ctx`` that has seen every feed the state keeps, and how many rounds they were."""
    learner = ProfileLearner(ctx)
    feeds = store.learner_feeds()
    for rnd, jobs, gpus in feeds:
        learner.observe(*parsed_feed(store.path, rnd, jobs, gpus))
    return learner, len(feeds)
