"""Measured points: the one record every measurement source is turned into, with its provenance.

A *point* is what one window of one measurement says about one configuration. Every ingest path
(nvidia-smi query logs, Zeus profile windows, Zeus power-limit summaries) produces points; the fit
(:mod:`planner.profiling.fit`), the fidelity check and the online learner consume them. A point
never holds a prediction: predictions live in a profile library's ``profiles`` with a ``basis``
naming the points they came from.

Kinds and the fields each one fills (units in the names):

* ``exclusive``: a job of ``job_type`` alone on ``gpus`` GPUs of ``gpu_type`` at ``setting``.
  ``steps_per_s`` is the whole job's training steps per second over the window
  (``steps / duration_s``), ``power_w`` the mean power *per GPU* of the job's GPUs while it ran
  (W), ``utilisation`` the mean ``utilization.gpu`` of those GPUs as a fraction in [0, 1] (None
  when the source has none), ``energy_j`` the GPU energy of all the job's GPUs over the window.
* ``pair``: the same for one side of a co-located pair; ``partner_type`` names the other job's
  type. ``steps_per_s`` is this job's rate *while sharing*; the fit divides it by an exclusive
  rate to get ``rho``.
* ``idle``: ``power_w`` is the mean power of a GPU no process holds (W per GPU).
* ``held_idle``: ``power_w`` of a GPU a job holds but does not compute on (W per GPU).
* ``node``: ``power_w`` of one node without its GPUs (W), when a source measures it.
* ``top_limit``: ``power_w`` is the GPU's highest power limit (``power.max_limit``, W).

``provenance`` says where the point comes from: the file name, the SHA-256 of its bytes and the
window inside it (rows and times, or a Zeus window name), so any prediction built on it can be
traced back to bytes on disk. ``id`` is derived from the provenance and the configuration, so the
same window of the same file always gives the same id (ingesting twice adds nothing).

Documents: a measurements file is ``{"schema": "wattplan.measurements/1", "points": [...]}``; a
profile library (``wattplan.profiles/1``) may carry the same list under ``"measurements"``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
from wattplan.planner.contracts.problems import InputError, Problem

MEASUREMENTS_SCHEMA = "wattplan.measurements/1"
PointKind = Literal["exclusive", "pair", "idle", "held_idle", "node", "top_limit"]
POINT_KINDS: tuple[str, ...] = ("exclusive", "pair", "idle", "held_idle", "node", "top_limit")
RUN_KINDS: tuple[str, ...] = ("exclusive", "pair")


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a point was measured: ``file`` (its name), ``sha256`` of its bytes, the ``window`` in it."""

    file: str
    sha256: str
    window: str


@dataclass(frozen=True, slots=True)
class MeasuredPoint:
    """One measured configuration (see the module docstring for each kind's fields and units)."""

    kind: PointKind
    gpu_type: str
    provenance: Provenance
    job_type: str | None = None
    gpus: int | None = None
    setting: int | None = None
    setting_unit: str | None = None
    partner_type: str | None = None
    steps_per_s: float | None = None
    power_w: float | None = None
    utilisation: float | None = None
    duration_s: float | None = None
    steps: float | None = None
    energy_j: float | None = None
    id: str = field(default="")

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", point_id(self))

    @property
    def config(self) -> tuple[str | None, str, int | None, int | None]:
        """``(job_type, gpu_type, gpus, setting)``: the configuration the point measures."""
        return (self.job_type, self.gpu_type, self.gpus, self.setting)


def point_id(p: MeasuredPoint) -> str:
    """``pt-`` and 16 hex digits of SHA-256 over the provenance, kind and configuration."""
    key = json.dumps(
        [p.kind, p.gpu_type, p.job_type, p.gpus, p.setting, p.partner_type, asdict(p.provenance)],
        sort_keys=True,
    )
    return "pt-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def point_to_doc(p: MeasuredPoint) -> dict[str, Any]:
    """A point as JSON: every field, ``None`` fields left out, provenance as an object."""
    doc: dict[str, Any] = {"id": p.id, "kind": p.kind, "gpu_type": p.gpu_type}
    for name in ("job_type", "gpus", "setting", "setting_unit", "partner_type"):
        value = getattr(p, name)
        if value is not None:
            doc[name] = value
    for name in ("steps_per_s", "power_w", "utilisation", "duration_s", "steps", "energy_j"):
        value = getattr(p, name)
        if value is not None:
            doc[name] = float(value)
    doc["provenance"] = asdict(p.provenance)
    return doc


_NUMBERS = ("steps_per_s", "power_w", "utilisation", "duration_s", "steps", "energy_j")
_TEXTS = ("id", "job_type", "setting_unit", "partner_type")
_POINT_FIELDS = frozenset({"kind", "gpu_type", "provenance", "gpus", "setting", *_TEXTS, *_NUMBERS})
_PROVENANCE_FIELDS = ("file", "sha256", "window")


def _point_problems(raw: Any, path: str) -> list[Problem]:
    """What is wrong with one point document (empty when it is a valid point)."""
    if not isinstance(raw, dict):
        return [Problem("bad-point", path, "a point must be an object")]
    out = []
    if raw.get("kind") not in POINT_KINDS:
        out.append(Problem("bad-point", f"{path}.kind", f"must be one of {', '.join(POINT_KINDS)}"))
    if not isinstance(raw.get("gpu_type"), str) or not raw.get("gpu_type"):
        out.append(Problem("bad-point", f"{path}.gpu_type", "must be a non-empty string"))
    out.extend(Problem("bad-point", f"{path}.{k}", "unknown field") for k in raw if k not in _POINT_FIELDS)
    for name in _TEXTS:
        v = raw.get(name)
        if v is not None and (not isinstance(v, str) or not v):
            out.append(Problem("bad-point", f"{path}.{name}", f"must be a non-empty string, got {v!r}"))
    prov = raw.get("provenance")
    if not isinstance(prov, dict) or not all(isinstance(prov.get(k), str) for k in _PROVENANCE_FIELDS):
        out.append(Problem("bad-point", f"{path}.provenance", "needs file, sha256 and window (strings)"))
    else:
        extra = [k for k in prov if k not in _PROVENANCE_FIELDS]
        out.extend(Problem("bad-point", f"{path}.provenance.{k}", "unknown field") for k in extra)
    for name in _NUMBERS:
        v = raw.get(name)
        if v is not None and (not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0):
            out.append(Problem("bad-point", f"{path}.{name}", f"must be a finite number >= 0, got {v!r}"))
    for name in ("gpus", "setting"):
        v = raw.get(name)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            out.append(Problem("bad-point", f"{path}.{name}", f"must be a positive integer, got {v!r}"))
    if raw.get("kind") in RUN_KINDS:
        for name in ("job_type", "gpus", "setting", "steps_per_s", "power_w"):
            if raw.get(name) is None:
                out.append(Problem("bad-point", f"{path}.{name}", f"a {raw['kind']} point needs {name}"))
        if raw.get("kind") == "pair" and not raw.get("partner_type"):
            out.append(Problem("bad-point", f"{path}.partner_type", "a pair point needs partner_type"))
    elif raw.get("kind") in POINT_KINDS and raw.get("power_w") is None:
        out.append(Problem("bad-point", f"{path}.power_w", f"a {raw['kind']} point needs power_w"))
    return out


def points_from_docs(docs: Any, source: str, path: str = "points") -> list[MeasuredPoint]:
    """Parse a list of point documents; every bad field is reported (``InputError``) before any is used."""
    if not isinstance(docs, list):
        raise InputError(source, [Problem("bad-point", path, "must be a list of points")])
    problems = [q for k, raw in enumerate(docs) for q in _point_problems(raw, f"{path}[{k}]")]
    if problems:
        raise InputError(source, problems)
    out = []
    for raw in docs:
        fields = {k: v for k, v in raw.items() if k not in ("provenance", "id")}
        for name in _NUMBERS:
            if fields.get(name) is not None:
                fields[name] = float(fields[name])
        p = MeasuredPoint(provenance=Provenance(**raw["provenance"]), **fields)
        out.append(replace(p, id=raw.get("id") or p.id))
    return out


def merge_points(old: Sequence[MeasuredPoint], new: Iterable[MeasuredPoint]) -> tuple[list[MeasuredPoint], int]:
    """``old`` plus the points of ``new`` whose id is not there yet; returns (merged, added)."""
    seen = {p.id for p in old}
    merged = list(old)
    added = 0
    for p in new:
        if p.id not in seen:
            seen.add(p.id)
            merged.append(p)
            added += 1
    return merged, added


def read_points(path: Path) -> list[MeasuredPoint]:
    """Points of a measurements file or of a profile library's ``measurements`` (none: empty)."""
    doc = read_json(Path(path))
    if not isinstance(doc, dict):
        raise InputError(str(path), [Problem("schema", "(root)", "not a measurements file or profile library")])
    if doc.get("schema") == MEASUREMENTS_SCHEMA:
        return points_from_docs(doc.get("points"), str(path))
    if doc.get("schema") == "wattplan.profiles/1":
        return points_from_docs(doc.get("measurements", []), str(path), "measurements")
    raise InputError(str(path), [Problem("schema", "schema", "not wattplan.measurements/1 or wattplan.profiles/1")])


def write_points(path: Path, points: Sequence[MeasuredPoint]) -> None:
    """Write a ``wattplan.measurements/1`` file atomically."""
    write_json_atomic(path, {"schema": MEASUREMENTS_SCHEMA, "points": [point_to_doc(p) for p in points]})
