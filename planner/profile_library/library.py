"""The profile library (``wattplan.profiles/1``): its type, its loader and the shipped library's path.

A library holds per (job type, GPU type, count, setting) a throughput and a power, per (type a, type b,
GPU type, count) the pair slowdowns, and per GPU type its idle power and settings. Every load runs every
check of :mod:`planner.contracts.profile_checks`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.domain import PairSlowdown, Profile
from wattplan.planner.contracts.jsonio import parse_json_text, read_text
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.profile_checks import library_problems
from wattplan.planner.files.resources import profile_library

ProfileKey = tuple[str, str, int, int]  # (job type, GPU type, GPU count, setting)
PairKey = tuple[str, str, str, int]  # (type a, type b, GPU type, GPU count)
_PROFILE_FIELDS = ("type", "gpu_type", "gpus", "setting", "steps_per_s", "power_w")
_PAIR_FIELDS = ("a", "b", "gpu_type", "gpus", "rho_a", "rho_b")


@dataclass(frozen=True)
class ProfileLibrary:
    """Profiles built by ``wattplan profiles build`` or ``fit`` (schema ``wattplan.profiles/1``).

    ``profile_extras`` / ``pair_extras`` keep the optional keys of an entry (``basis``,
    ``utilisation``; :mod:`planner.profiling`) by its key; ``measurements`` the library's measured
    points as documents (parsed by :mod:`planner.profiling.points` where needed).
    """

    gpu_types: dict[str, dict[str, Any]]
    profiles: tuple[Profile, ...]
    pairs: tuple[PairSlowdown, ...]
    sources: list[Any]
    profile_extras: dict[ProfileKey, dict[str, Any]] = field(default_factory=dict)
    pair_extras: dict[PairKey, dict[str, Any]] = field(default_factory=dict)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    # Lookup tables, filled by __post_init__: the top-setting profile per (type, GPU type, count)
    # and the largest profiled count per job type.
    _top: dict[tuple[str, str, int], Profile] = field(init=False, repr=False, compare=False)
    _max_count: dict[str, int] = field(init=False, repr=False, compare=False)
    _counts: dict[tuple[str, tuple[str, ...]], frozenset[int]] = field(init=False, repr=False, compare=False)
    """:meth:`counts` by ``(job type, GPU types)``, filled as asked: ``_top`` is made once from the immutable
    ``profiles``, so an answer never changes."""

    def __post_init__(self) -> None:
        top: dict[tuple[str, str, int], Profile] = {}
        for p in self.profiles:
            key = (p.type, p.gpu_type, p.gpus)
            if key not in top or p.setting > top[key].setting:
                top[key] = p
        object.__setattr__(self, "_top", top)
        n_max: dict[str, int] = {}
        for t, _, n in top:
            n_max[t] = max(n_max.get(t, 0), n)
        object.__setattr__(self, "_max_count", n_max)
        object.__setattr__(self, "_counts", {})

    def max_count(self, job_type: str) -> int:
        """The largest GPU count profiled for ``job_type`` on any GPU type (0 if none)."""
        return self._max_count.get(job_type, 0)

    def counts(self, job_type: str, gpu_types: Sequence[str]) -> set[int]:
        """GPU counts profiled for ``job_type`` on at least one of ``gpu_types`` (a new set at every call)."""
        key = (job_type, tuple(gpu_types))
        hit = self._counts.get(key)
        if hit is None:
            hit = frozenset(n for (t, g, n) in self._top if t == job_type and g in key[1])
            self._counts[key] = hit
        return set(hit)

    def top_throughput(self, job_type: str, gpu_type: str, gpus: int) -> float | None:
        """Throughput at the highest setting profiled for (type, GPU type, count)."""
        p = self._top.get((job_type, gpu_type, gpus))
        return None if p is None else p.steps_per_s


def profile_key(p: Profile) -> ProfileKey:
    """``(type, gpu_type, gpus, setting)`` of a profile."""
    return (p.type, p.gpu_type, p.gpus, p.setting)


def pair_key(p: PairSlowdown) -> PairKey:
    """``(a, b, gpu_type, gpus)`` of a pair entry."""
    return (p.a, p.b, p.gpu_type, p.gpus)


def library_from_doc(doc: Any, source: str) -> ProfileLibrary:
    """A library from its ``wattplan.profiles/1`` document; optional keys go to the extras.

    ``InputError`` naming ``source`` (the file) with every problem of
    :func:`planner.profile_checks.library_problems` unless the document passes them all.
    """
    if not isinstance(doc, dict) or doc.get("schema") != "wattplan.profiles/1":
        raise InputError(source, [Problem("schema", "schema", "not a wattplan.profiles/1 file")])
    if problems := library_problems(doc):
        raise InputError(source, problems)
    profiles, pairs = [], []
    profile_extras: dict[ProfileKey, dict[str, Any]] = {}
    pair_extras: dict[PairKey, dict[str, Any]] = {}
    for raw in doc["profiles"]:
        p = Profile(**{k: raw[k] for k in _PROFILE_FIELDS}, basis=raw.get("basis"))
        profiles.append(p)
        if extra := {k: v for k, v in raw.items() if k not in _PROFILE_FIELDS}:
            profile_extras[profile_key(p)] = extra
    for raw in doc["pairs"]:
        q = PairSlowdown(**{k: raw[k] for k in _PAIR_FIELDS})
        pairs.append(q)
        if extra := {k: v for k, v in raw.items() if k not in _PAIR_FIELDS}:
            pair_extras[pair_key(q)] = extra
    return ProfileLibrary(
        gpu_types={g["name"]: g for g in doc["gpu_types"]},
        profiles=tuple(profiles),
        pairs=tuple(pairs),
        sources=doc.get("sources", []),
        profile_extras=profile_extras,
        pair_extras=pair_extras,
        measurements=list(doc.get("measurements", [])),
    )


LOADED_LIBRARIES = 4
"""Libraries :func:`load_profile_library` keeps parsed, by their text's SHA-256 (the least recently read go first)."""
_loaded: OrderedDict[str, ProfileLibrary] = OrderedDict()
_loaded_lock = threading.Lock()


def load_profile_library(path: Path | None = None) -> ProfileLibrary:
    """Read a ``wattplan.profiles/1`` file, by default (None) the shipped library (``InputError`` for another schema).

    The shipped library's path is :func:`planner.files.resources.profile_library`'s, nowhere else. The file is read
    each time; a text read before (its SHA-256) gives the library it gave then, without parsing and checking it
    again (0.1-0.15 s for the shipped library, which a frontier read twice per replay point). A library is never
    changed once made, so the one object may serve every caller.
    """
    if path is None:
        path = profile_library()
    text = read_text(Path(path))
    digest = hashlib.sha256(text.encode()).hexdigest()
    with _loaded_lock:
        if (known := _loaded.get(digest)) is not None:
            _loaded.move_to_end(digest)
            return known
    library = library_from_doc(parse_json_text(text, str(path)), str(path))
    with _loaded_lock:
        _loaded[digest] = library
        while len(_loaded) > LOADED_LIBRARIES:
            _loaded.popitem(last=False)
    return library
