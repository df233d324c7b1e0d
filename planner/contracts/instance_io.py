"""Load, check and write ``wattplan.instance/1`` documents.

Loading runs three passes and reports every problem of a pass together:
JSON syntax, then structure (the shipped JSON Schema), then meaning
(:mod:`planner.contracts.instance_checks`). Only a document that passes all three becomes an
:class:`~planner.contracts.domain.Instance`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.defaults import DELTA, MIN_PAIR_RATE, OBJECTIVE, RESTART_S
from wattplan.planner.contracts.domain import (
    CurrentConfig,
    GpuType,
    Instance,
    Job,
    NodeGpus,
    PairSlowdown,
    Profile,
    RoundSpec,
)
from wattplan.planner.contracts.instance_checks import instance_problems
from wattplan.planner.contracts.jsonio import non_finite_numbers, read_json, write_json_atomic
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.schema_check import INSTANCE_SCHEMA, schema_problems

SCHEMA_ID = "wattplan.instance/1"


def load_instance(path: Path) -> Instance:
    """Read and check an instance file; raises :class:`InputError` listing every problem."""
    return parse_instance(read_json(Path(path)), str(path))


def parse_instance(doc: Any, source: str = "instance") -> Instance:
    """Check a parsed document and build the :class:`Instance`."""
    problems = schema_problems(doc, INSTANCE_SCHEMA, "schema") + non_finite_numbers(doc)
    if problems:
        raise InputError(source, problems)
    problems = instance_problems(doc)
    if problems:
        raise InputError(source, problems)
    return _build(doc)


def _placement(raw: list[dict] | None) -> tuple[NodeGpus, ...] | None:
    if not raw:
        return None
    return tuple(NodeGpus(p["node"], tuple(sorted(p["gpu_indices"]))) for p in raw)


def _job(raw: dict) -> Job:
    cur = raw.get("current")
    current = None
    if cur:
        current = CurrentConfig(
            gpu_type=cur["gpu_type"],
            gpus=cur["gpus"],
            setting=cur["setting"],
            shares_with=cur.get("shares_with"),
            placement=_placement(cur.get("placement")),
        )
    env = raw.get("env")
    return Job(
        id=raw["id"],
        type=raw["type"],
        remaining_steps=float(raw["remaining_steps"]),
        gpus=tuple(raw["gpus"]),
        weight=float(raw.get("weight", 1.0)),
        current=current,
        min_steps=float(raw.get("min_steps", 0.0)),
        min_rate=float(raw.get("min_rate", 0.0)),
        pair_only=bool(raw.get("pair_only", False)),
        requested_gpus=raw.get("requested_gpus"),
        command=tuple(raw["command"]) if raw.get("command") else None,
        workdir=raw.get("workdir"),
        env=tuple(sorted(env.items())) if env else None,
        user=raw.get("user"),
    )


def _build(doc: dict) -> Instance:
    r = doc["round"]
    known = {"schema", "round", "gpu_types", "jobs", "profiles", "pairs"}
    return Instance(
        round=RoundSpec(
            index=r["index"],
            duration_s=float(r["duration_s"]),
            budget_j=None if r["budget_j"] is None else float(r["budget_j"]),
            objective=r.get("objective", OBJECTIVE),
            delta=float(r.get("delta", DELTA)),
            restart_s=float(r.get("restart_s", RESTART_S)),
            min_pair_rate=float(r.get("min_pair_rate", MIN_PAIR_RATE)),
            credit_weight=float(r.get("credit_weight", 1.0)),
        ),
        gpu_types=tuple(
            GpuType(
                name=g["name"],
                nodes=g["nodes"],
                gpus_per_node=g["gpus_per_node"],
                idle_power_w=float(g["idle_power_w"]),
                node_power_w=float(g["node_power_w"]),
                setting_unit=g["setting_unit"],
                settings=tuple(sorted(g["settings"])),
            )
            for g in doc["gpu_types"]
        ),
        jobs=tuple(_job(j) for j in doc["jobs"]),
        profiles=tuple(
            Profile(
                p["type"],
                p["gpu_type"],
                p["gpus"],
                p["setting"],
                float(p["steps_per_s"]),
                float(p["power_w"]),
                p.get("basis") if isinstance(p.get("basis"), dict) else None,
            )
            for p in doc["profiles"]
        ),
        pairs=tuple(
            PairSlowdown(p["a"], p["b"], p["gpu_type"], p["gpus"], float(p["rho_a"]), float(p["rho_b"]))
            for p in doc["pairs"]
        ),
        extra={k: v for k, v in doc.items() if k not in known},
    )


def placement_doc(placement: tuple[NodeGpus, ...]) -> list[dict]:
    """A placement as JSON: ``[{"node": ..., "gpu_indices": [...]}, ...]``, in the given order."""
    return [{"node": p.node, "gpu_indices": list(p.gpu_indices)} for p in placement]


def _job_doc(job: Job) -> dict:
    out: dict[str, Any] = {
        "id": job.id,
        "type": job.type,
        "remaining_steps": job.remaining_steps,
        "gpus": list(job.gpus),
        "weight": job.weight,
        "current": None,
    }
    if job.min_steps > 0:
        out["min_steps"] = job.min_steps
    if job.min_rate > 0:
        out["min_rate"] = job.min_rate
    if job.pair_only:
        out["pair_only"] = True
    if job.requested_gpus is not None:
        out["requested_gpus"] = job.requested_gpus
    if job.current:
        c = job.current
        out["current"] = {"gpu_type": c.gpu_type, "gpus": c.gpus, "setting": c.setting, "shares_with": c.shares_with}
        if c.placement:
            out["current"]["placement"] = placement_doc(c.placement)
    if job.command:
        out["command"] = list(job.command)
    if job.workdir:
        out["workdir"] = job.workdir
    if job.env:
        out["env"] = dict(job.env)
    if job.user:
        out["user"] = job.user
    return out


def _head_doc(inst: Instance) -> dict:
    """The instance document up to its jobs: everything but ``profiles`` and ``pairs``."""
    r = inst.round
    return {
        "schema": SCHEMA_ID,
        **inst.extra,
        "round": {
            "index": r.index,
            "duration_s": r.duration_s,
            "budget_j": r.budget_j,
            "objective": r.objective,
            "delta": r.delta,
            "restart_s": r.restart_s,
            "min_pair_rate": r.min_pair_rate,
            "credit_weight": r.credit_weight,
        },
        "gpu_types": [
            {
                "name": g.name,
                "nodes": g.nodes,
                "gpus_per_node": g.gpus_per_node,
                "idle_power_w": g.idle_power_w,
                "node_power_w": g.node_power_w,
                "setting_unit": g.setting_unit,
                "settings": list(g.settings),
            }
            for g in inst.gpu_types
        ],
        "jobs": [_job_doc(j) for j in inst.jobs],
    }


def _profile_doc(p: Profile) -> dict[str, Any]:
    """One entry of the ``profiles`` array of the instance document."""
    return {
        "type": p.type,
        "gpu_type": p.gpu_type,
        "gpus": p.gpus,
        "setting": p.setting,
        "steps_per_s": p.steps_per_s,
        "power_w": p.power_w,
        **({"basis": dict(p.basis)} if p.basis else {}),
    }


def _pair_doc(p: PairSlowdown) -> dict[str, Any]:
    """One entry of the ``pairs`` array of the instance document."""
    return {"a": p.a, "b": p.b, "gpu_type": p.gpu_type, "gpus": p.gpus, "rho_a": p.rho_a, "rho_b": p.rho_b}


def instance_to_doc(inst: Instance) -> dict:
    """The ``wattplan.instance/1`` document of an instance (inverse of :func:`parse_instance`)."""
    doc = _head_doc(inst)
    doc["profiles"] = [_profile_doc(p) for p in inst.profiles]
    doc["pairs"] = [_pair_doc(p) for p in inst.pairs]
    return doc


def _canonical(value: object) -> str:
    """Canonical JSON: keys sorted, compact separators, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_ITEM_TEXT: dict[int, tuple[object, str]] = {}
"""``id(entry) -> (entry, canonical JSON)`` of profile and pair entries already serialised. A replay builds a new
instance every round from the same profile and pair objects; holding the entry keeps its id from being reused
while the cache entry lives."""

ITEM_TEXT_LIMIT = 200_000
"""Entries kept before the cache starts over (a learner makes new profiles all the time)."""


_ARRAY_TEXT: dict[int, tuple[tuple[Any, ...], str]] = {}
"""``id(tuple) -> (tuple, canonical JSON)`` of the last few arrays (consecutive replay rounds share a tuple)."""


def _array_text(items: tuple[Any, ...], doc: Any) -> str:
    """The canonical JSON of ``[doc(i) for i in items]``: once per tuple object, each entry's text once per object."""
    hit = _ARRAY_TEXT.get(id(items))
    if hit is not None and hit[0] is items:
        return hit[1]
    text = _join_entries(items, doc)
    if len(_ARRAY_TEXT) >= 64:
        _ARRAY_TEXT.clear()
    _ARRAY_TEXT[id(items)] = (items, text)
    return text


def _join_entries(items: tuple[Any, ...], doc: Any) -> str:
    """``[doc(i) for i in items]`` as canonical JSON, each entry's text computed once per object."""
    texts = []
    for item in items:
        hit = _ITEM_TEXT.get(id(item))
        if hit is None or hit[0] is not item:
            if len(_ITEM_TEXT) >= ITEM_TEXT_LIMIT:
                _ITEM_TEXT.clear()
            hit = (item, _canonical(doc(item)))
            _ITEM_TEXT[id(item)] = hit
        texts.append(hit[1])
    return "[" + ",".join(texts) + "]"


def instance_sha256(inst: Instance) -> str:
    """The identity a plan records of its instance (``round.instance_sha256``, docs/design.md §7.2).

    The SHA-256 (64 lowercase hex digits) of the canonical JSON of :func:`instance_to_doc`: keys
    sorted, compact separators, UTF-8, non-ASCII kept. The same instance gives the same digest
    whether it was read from a file (whatever the file's spacing or key order) or built in memory.
    The text is assembled key by key, exactly as ``json.dumps(doc, sort_keys=True)`` writes it, with the
    ``profiles`` and ``pairs`` entries serialised once per object (a replay's rounds share them). Kept in
    ``inst.derived`` once computed (a replay round asks for it several times).
    """
    digest = inst.derived.get("sha256")
    if isinstance(digest, str):
        return digest
    parts: dict[str, str] = {k: _canonical(v) for k, v in _head_doc(inst).items()}
    parts["profiles"] = _array_text(inst.profiles, _profile_doc)
    parts["pairs"] = _array_text(inst.pairs, _pair_doc)
    text = "{" + ",".join(f"{_canonical(k)}:{parts[k]}" for k in sorted(parts)) + "}"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    inst.derived["sha256"] = digest
    return digest


def write_instance(inst: Instance, path: Path) -> None:
    """Write an instance atomically."""
    write_json_atomic(path, instance_to_doc(inst))
