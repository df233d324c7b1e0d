"""A "measured-like" truth library: the shipped profiles bent the way real measurements differ from them.

Replays that test learning need a truth that differs from what the planner believes in the ways an
8x V100-32GB node's nvidia-smi logs differed from the shipped library (issue 14). Starting from a
prior library (exclusive profiles ``X(n, s)``, ``P(n, s)``, pair rates ``rho``, idle ``Pidle``), the
truth is, for every job type and GPU type (parameters in :class:`TruthParams`, defaults measured):

* **Saturating scaling.** ``X_true(n, s) = X(1, s) * S(n)`` with
  ``S(n) = min(n / (1 + alpha (n - 1)), cap)``: Amdahl-like loss ``alpha`` and a data-loading
  ceiling ``cap``. The measured VGG-16 speedups 1.85 / 3.24 / 3.28 at 2 / 4 / 8 GPUs give
  ``alpha = 2 / 1.85 - 1 = 0.081`` and ``(4 / 3.24 - 1) / 3 = 0.078`` (so 0.08) and ``cap = 3.3``.
  ``S(2) = 1.852``, ``S(4) = 3.226``, ``S(8) = 3.3``. One GPU is unchanged (energy per step held
  within about 1% in the logs).
* **Utilisation-dependent power.** The GPUs of a job compute a fraction ``u(n) = S(n) / n`` of the
  time and wait otherwise, so the power per GPU is
  ``P_true(n, s) = Pidle_true + (P(1, s) - Pidle) * u(n)`` (W). At 8 GPUs ``u = 0.41``: a 220 W
  profile becomes 117 W, the 42-47% drop per GPU the logs showed from 1 to 8 GPUs. The dynamic
  energy per step, ``n (P_true - Pidle_true) / X_true = (P(1, s) - Pidle) / X(1, s)``, is then the
  same at every count: more GPUs cost only the idle and node power of the GPUs held. The profile
  entry gets ``utilisation = u(n)``.
  With ``cap_spread > 0`` each job family gets its own ceiling (a truth where scaling differs by model).
* **Lower pair rates.** ``rho_true = pair_factor * rho`` per side, ``pair_factor = 1.07 / 1.71 =
  0.626`` (the measured pair's rates summed to 1.07 where Gavel's closest pair sums to 1.71).
* **Idle and node power.** ``Pidle_true = 41 W`` per GPU and ``Pnode_true = 230 W`` (the logs: 41 W
  idle, 220-235 W for the node); the GPU type entries carry ``node_power_w``.

Every profile keeps ``power_w >= Pidle_true`` (a job cannot draw less than idle): the dynamic part
is never negative. Entries carry ``basis`` ``{"kind": "truth", ...}`` naming the transform.
"""

from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.profile_checks import MAX_GPU_POWER_W, MAX_PAIR_RATE, library_problems
from wattplan.planner.profile_library.library import library_from_doc


@dataclass(frozen=True, slots=True)
class TruthParams:
    """How the truth differs from the prior (defaults: the issue's measurements, see the module docstring)."""

    alpha: float = 0.08
    """Amdahl loss per extra GPU in ``S(n) = n / (1 + alpha (n - 1))``."""
    cap: float = 3.3
    """Data-loading ceiling of the speedup ``S(n)``."""
    pair_factor: float = 1.07 / 1.71
    """``rho_true = pair_factor * rho`` (each side of a pair)."""
    idle_power_w: float = 41.0
    """True idle power of a GPU (W)."""
    node_power_w: float = 230.0
    """True node power without its GPUs (W)."""
    cap_spread: float = 0.0
    """Per-family spread of the ceiling: a job family ``f`` gets ``cap * 2 ** (cap_spread * h(f))`` with
    ``h(f)`` in [-1, 1] from the SHA-256 of its name (0: one curve for every type, as measured)."""


def family_factor(job_type: str, spread: float) -> float:
    """``2 ** (spread * h)``, ``h`` in [-1, 1] fixed by the SHA-256 of the job type's family name."""
    family = job_type.split(" (batch size")[0]
    h = int(hashlib.sha256(family.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * 2.0 - 1.0
    return float(2.0 ** (spread * h))


MAX_ALPHA = 1.0
"""Largest ``alpha``: at 1, ``S(n) = 1`` (no gain from more GPUs); more would mean a slowdown, which the
speedup's floor of 1 hides."""
MAX_CAP = 1024.0
"""Largest speedup ceiling: no job in the library runs on more than a few hundred GPUs."""
MAX_CAP_SPREAD = 8.0
"""Largest ``cap_spread``: a family's ceiling varies by at most ``2 ** 8`` either way."""


def params_problems(p: TruthParams) -> list[Problem]:
    """Every parameter that is not finite or out of its range, named by its command-line option.

    Ranges: ``--alpha`` [0, 1]; ``--cap`` (0, 1024]; ``--pair-factor`` (0, 1.5] (a truth's pair rate
    is at most 1.5, :data:`planner.contracts.profile_checks.MAX_PAIR_RATE`); ``--idle-power-w`` [0, 5000] W and
    ``--node-power-w`` [0, 100000] W; ``--cap-spread`` [0, 8].
    """
    checks = (
        ("--alpha", p.alpha, 0.0, False, MAX_ALPHA),
        ("--cap", p.cap, 0.0, True, MAX_CAP),
        ("--pair-factor", p.pair_factor, 0.0, True, MAX_PAIR_RATE),
        ("--idle-power-w", p.idle_power_w, 0.0, False, MAX_GPU_POWER_W),
        ("--node-power-w", p.node_power_w, 0.0, False, 100_000.0),
        ("--cap-spread", p.cap_spread, 0.0, False, MAX_CAP_SPREAD),
    )
    problems = []
    for name, value, low, open_low, high in checks:
        if not math.isfinite(value):
            problems.append(Problem("bad-option", name, f"must be a finite number, got {value}"))
        elif value < low or (open_low and value == low) or value > high:
            bracket = "(" if open_low else "["
            problems.append(Problem("bad-option", name, f"must be in {bracket}{low:g}, {high:g}], got {value}"))
    return problems


def truth_from_file(path: Path, params: TruthParams) -> dict[str, Any]:
    """:func:`truth_library` of the library at ``path`` (``InputError``: bad parameters, another schema)."""
    if problems := params_problems(params):
        raise InputError("options", problems)
    prior = read_json(Path(path))
    library_from_doc(prior, str(path))  # the schema check, with the file named
    doc = truth_library(prior, params)
    if problems := library_problems(doc):  # e.g. a pair rate above 1.5 from a prior's high rate
        raise InputError(f"the truth of {path} with these options", problems)
    return doc


def speedup(n: int, p: TruthParams, job_type: str = "") -> float:
    """``S(n) = min(n / (1 + alpha (n - 1)), cap_f)``, at least 1 for ``n >= 1`` (``cap_f``: see ``cap_spread``)."""
    cap = p.cap * family_factor(job_type, p.cap_spread) if p.cap_spread else p.cap
    return max(1.0, min(n / (1.0 + p.alpha * (n - 1)), cap)) if n > 1 else 1.0


def truth_library(prior: dict[str, Any], params: TruthParams | None = None) -> dict[str, Any]:
    """The truth library document of ``prior`` (a ``wattplan.profiles/1`` document), see the module docstring.

    Profiles of a (type, GPU type, setting) with no 1-GPU entry keep their throughput and power
    (there is nothing to scale from) apart from the idle shift.
    """
    p = params or TruthParams()
    doc = copy.deepcopy(prior)
    idle_prior = {g["name"]: float(g["idle_power_w"]) for g in prior["gpu_types"]}
    one_gpu = {(q["type"], q["gpu_type"], q["setting"]): q for q in prior["profiles"] if q["gpus"] == 1}
    basis: dict[str, Any] = {"kind": "truth", "points": [], "rel_error": None, "reason": f"truth {asdict(p)}"}
    profiles = []
    for q in doc["profiles"]:
        base = one_gpu.get((q["type"], q["gpu_type"], q["setting"]))
        dyn_prior = max(0.0, (base or q)["power_w"] - idle_prior[q["gpu_type"]])
        if base is None:
            s_n, util = 1.0, 1.0
            rate = q["steps_per_s"]
        else:
            s_n = speedup(q["gpus"], p, q["type"])
            util = s_n / q["gpus"]
            rate = base["steps_per_s"] * s_n
        q.update(
            steps_per_s=rate,
            power_w=p.idle_power_w + dyn_prior * util,
            utilisation=util,
            basis=basis,
        )
        profiles.append(q)
    doc["profiles"] = profiles
    for pair in doc["pairs"]:
        pair.update(rho_a=pair["rho_a"] * p.pair_factor, rho_b=pair["rho_b"] * p.pair_factor, basis=basis)
    for g in doc["gpu_types"]:
        g.update(idle_power_w=p.idle_power_w, node_power_w=p.node_power_w)
    doc.pop("measurements", None)
    doc.setdefault("notes", {})
    if isinstance(doc["notes"], dict):
        doc["notes"]["truth"] = basis["reason"]
    return doc
