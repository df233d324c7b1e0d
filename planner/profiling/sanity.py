"""Sanity pass over a profile library: entries no real job can have, flagged with a reason, optionally repaired.

Profiles are compared within one (job type, GPU type, setting) across the profiled counts ``n_0 < n_1 < ...``
(``X`` whole-job steps/s, ``P`` W per GPU, ``tol`` = :data:`TOLERANCE` for measurement noise):

* ``superlinear``: speedup above linear, ``X(n_k) / X(n_0) > (n_k / n_0)(1 + tol)`` or, between adjacent counts,
  ``X(n_k) / X(n_(k-1)) > (n_k / n_(k-1))(1 + tol)``: more GPUs cannot do more than their share of the work;
* ``slower-with-more-gpus``: ``X(n_k) < X(n_(k-1))``: a scheduler never has to give a job more GPUs, so a
  profile that runs slower on more is a measurement of something else (issue 14: LM on 4 V100s slower than on 2);
* ``power-below-idle``: ``P < P_idle`` of the GPU type (the instance checks reject it);
* ``power-rising-while-slower``: ``P(n_k) > P(n_(k-1))(1 + tol)`` while ``X(n_k) < X(n_(k-1))``: a GPU less busy
  draws less (:mod:`planner.profiling.power_model`), not more;
* ``pair-rate-above-one``: a pair entry with ``rho_a > 1`` or ``rho_b > 1`` (so also any sum above 2): sharing
  GPUs cannot make a job faster than running alone.

Repair (entries whose basis is ``measured`` are flagged but never changed): within each flagged (type, GPU type,
setting) the rates become non-decreasing and at most linear between adjacent counts
(:func:`planner.profiling.scaling.monotone_sublinear`); power rising while slower becomes non-increasing,
``P(n_k) = min(P(n_k), P(n_(k-1)))``; power below idle is raised to idle; pair rates are capped at 1. A changed
entry gets ``basis.kind = "repaired"``, the reason, and ``rel_error = max(previous, |new / old - 1|)``: the
change is a lower bound on how wrong the entry was.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wattplan.planner.profiling.basis import make_basis, worst
from wattplan.planner.profiling.scaling import monotone_sublinear

TOLERANCE = 0.05
"""Relative slack of the superlinear and rising-power checks (5%, measurement noise)."""

FINDING_KINDS: tuple[str, ...] = (
    "superlinear",
    "slower-with-more-gpus",
    "power-below-idle",
    "power-rising-while-slower",
    "pair-rate-above-one",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One suspicious entry.

    ``kind`` (:data:`FINDING_KINDS`), ``entry`` ("profile" or "pair"), its ``key`` (``(type, gpu_type, gpus,
    setting)`` or ``(a, b, gpu_type, gpus)``), the offending ``value`` against its ``limit``, a ``reason`` in words.
    """

    kind: str
    entry: str
    key: tuple[Any, ...]
    value: float
    limit: float
    reason: str


def _profile_key(p: dict[str, Any]) -> tuple[str, str, int, int]:
    return (p["type"], p["gpu_type"], p["gpus"], p["setting"])


def _groups(doc: dict[str, Any]) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """Profiles by (type, GPU type, setting), each list in ascending count."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for p in doc["profiles"]:
        groups[(p["type"], p["gpu_type"], p["setting"])].append(p)
    return {k: sorted(v, key=lambda p: p["gpus"]) for k, v in groups.items()}


def _scaling_findings(rows: list[dict[str, Any]], tol: float) -> list[Finding]:
    out = []
    n0, x0 = rows[0]["gpus"], rows[0]["steps_per_s"]
    for prev, cur in zip(rows, rows[1:], strict=False):
        key = _profile_key(cur)
        n, x, pn, px = cur["gpus"], cur["steps_per_s"], prev["gpus"], prev["steps_per_s"]
        speedup, step = x / x0, x / px
        if speedup > (n / n0) * (1 + tol) or step > (n / pn) * (1 + tol):
            out.append(
                Finding(
                    "superlinear",
                    "profile",
                    key,
                    speedup,
                    n / n0,
                    f"{speedup:.3g}x on {n} GPUs against {n0} ({step:.3g}x against {pn}): above linear",
                )
            )
        if x < px:
            out.append(
                Finding(
                    "slower-with-more-gpus", "profile", key, x, px, f"{x:.4g} steps/s on {n} GPUs < {px:.4g} on {pn}"
                )
            )
            if cur["power_w"] > prev["power_w"] * (1 + tol):
                out.append(
                    Finding(
                        "power-rising-while-slower",
                        "profile",
                        key,
                        cur["power_w"],
                        prev["power_w"],
                        f"{cur['power_w']:.4g} W per GPU on {n} GPUs > {prev['power_w']:.4g} W on {pn} while slower",
                    )
                )
    return out


def sanity_check(doc: dict[str, Any], tol: float = TOLERANCE) -> list[Finding]:
    """Every finding of the module docstring over a ``wattplan.profiles/1`` document (profiles, then pairs)."""
    idle = {g["name"]: g["idle_power_w"] for g in doc["gpu_types"]}
    out: list[Finding] = []
    for _, rows in sorted(_groups(doc).items()):
        out += _scaling_findings(rows, tol)
    for p in doc["profiles"]:
        floor = idle.get(p["gpu_type"])
        if floor is not None and p["power_w"] < floor:
            msg = f"{p['power_w']:.4g} W per GPU below {p['gpu_type']}'s idle {floor:.4g} W"
            out.append(Finding("power-below-idle", "profile", _profile_key(p), p["power_w"], floor, msg))
    for q in doc["pairs"]:
        if q["rho_a"] > 1 or q["rho_b"] > 1:
            total = q["rho_a"] + q["rho_b"]
            out.append(
                Finding(
                    "pair-rate-above-one",
                    "pair",
                    (q["a"], q["b"], q["gpu_type"], q["gpus"]),
                    max(q["rho_a"], q["rho_b"]),
                    1.0,
                    f"rho_a {q['rho_a']:.3g}, rho_b {q['rho_b']:.3g} (sum {total:.3g}): faster shared than alone",
                )
            )
    return out


def count_by_kind(findings: Sequence[Finding]) -> dict[str, int]:
    """Findings per kind, every kind listed (0 when none)."""
    counts = Counter(f.kind for f in findings)
    return {k: counts.get(k, 0) for k in FINDING_KINDS}


def _mark(entry: dict[str, Any], field: str, new: float, why: str) -> None:
    """Set ``entry[field] = new`` and mark the entry repaired (module docstring)."""
    old = entry[field]
    entry[field] = new
    prev = entry.get("basis") or make_basis("prior", [], None, "prior")
    change = abs(new / old - 1.0) if old else None
    reason = f"{prev['reason']}; repaired {why}: {field} {old:.6g} -> {new:.6g}"
    entry["basis"] = make_basis("repaired", prev["points"], worst(prev["rel_error"], change), reason)


def repair(doc: dict[str, Any], findings: Sequence[Finding]) -> tuple[dict[str, Any], int]:
    """A copy of ``doc`` with the findings repaired (module docstring) and how many entries changed."""
    out = copy.deepcopy(doc)
    groups = _groups(out)
    changed: set[tuple[str, tuple[Any, ...]]] = set()

    def measured(entry: dict[str, Any]) -> bool:
        return (entry.get("basis") or {}).get("kind") == "measured"

    kinds_by_group: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    for f in findings:
        if f.entry == "profile":
            kinds_by_group[(f.key[0], f.key[1], f.key[3])].add(f.kind)
    for gkey, kinds in sorted(kinds_by_group.items()):
        rows = groups.get(gkey, [])
        if kinds & {"superlinear", "slower-with-more-gpus"}:
            fixed = monotone_sublinear({r["gpus"]: r["steps_per_s"] for r in rows})
            for r in rows:
                if not measured(r) and fixed[r["gpus"]] != r["steps_per_s"]:
                    _mark(r, "steps_per_s", fixed[r["gpus"]], "to non-decreasing, at most linear scaling")
                    changed.add(("profile", _profile_key(r)))
        if "power-rising-while-slower" in kinds:
            for prev, cur in zip(rows, rows[1:], strict=False):
                if not measured(cur) and cur["power_w"] > prev["power_w"]:
                    _mark(cur, "power_w", prev["power_w"], "to power per GPU not rising with the count")
                    changed.add(("profile", _profile_key(cur)))
    idle = {g["name"]: g["idle_power_w"] for g in out["gpu_types"]}
    for p in out["profiles"]:
        floor = idle.get(p["gpu_type"])
        if floor is not None and p["power_w"] < floor and not measured(p):
            _mark(p, "power_w", float(floor), "to the GPU type's idle power")
            changed.add(("profile", _profile_key(p)))
    for q in out["pairs"]:
        for side in ("rho_a", "rho_b"):
            if q[side] > 1 and not measured(q):
                _mark(q, side, 1.0, "to a pair rate of at most 1")
                changed.add(("pair", (q["a"], q["b"], q["gpu_type"], q["gpus"])))
    return out, len(changed)
