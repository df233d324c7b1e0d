"""Priors for GPU types without measurements: a measured reference type scaled by public specs (docs/design.md §9.8).

A GPU type ``g`` with a spec (``instances/profiles/gpu_specs.json``: TDP, power-limit range, idle power, memory
bandwidth, peak compute) but no profiles borrows the measured reference type's (``ref``, V100) table:

* **Settings**: 7 evenly spaced integer power limits over ``[max(min_limit_g, f_lo TDP_g), TDP_g]`` (W), with
  ``f_lo = s_lo,ref / TDP_ref`` the reference's lowest setting as a fraction of its TDP (V100: 100 / 250 = 0.4),
  so every setting maps inside the reference's measured range.
* **Throughput** (steps/s, whole job): ``X_g(t, n, s) = r_g X_ref(t, n, s_ref)``, ``s_ref = s TDP_ref / TDP_g``
  (the reference setting at the same fraction of TDP, linearly interpolated between the reference's settings,
  held at its ends), ``r_g = sqrt((C_g / C_ref) (B_g / B_ref))`` the geometric mean of the peak dense FP16/BF16
  tensor compute ratio ``C`` and the memory bandwidth ratio ``B`` (other rules: :data:`SPEED_RULES`).
* **Power** (W per GPU): the reference's dynamic power stretched between idle and TDP,
  ``P_g = idle_g + (P_ref(s_ref) - idle_ref) (TDP_g - idle_g) / (TDP_ref - idle_ref)``, at most the setting
  ``s`` (a power limit) and at least ``idle_g``.
* **Pairs**: ``rho_a``, ``rho_b`` of the reference at the same ``(a, b, n)``. Pair slowdowns measure how two
  jobs share one GPU's compute and memory; with nothing measured on ``g`` the reference's contention is the
  best guess (the check below measures what that costs between V100 and P100).

Every entry's ``basis`` is ``{"kind": "prior", "rel_error": e, ...}`` with ``e`` the larger of the median
relative errors of throughput and power when the same rule predicts the measured P100 table from the V100
one (:func:`rule_error`; the figures are kept in the spec file's ``prior_error``, written by
``benchmarks/prior_error.py``). No solver, no :mod:`planner.profiling` (a lower layer).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from wattplan.planner.contracts.domain import PairSlowdown, Profile
from wattplan.planner.contracts.jsonio import read_json
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.files.resources import shipped, source_dir
from wattplan.planner.profile_library.build import load_zeus
from wattplan.planner.profile_library.library import PairKey, ProfileKey, ProfileLibrary, pair_key, profile_key

GPU_SPECS_NAME = "profiles/gpu_specs.json"
GRID_POINTS = 7
"""Settings of a prior type (the V100's 100..250 W in 25 W steps are 7)."""
SpeedRule = Literal["fp32", "fp16_tensor", "bandwidth"]
SPEED_RULES: tuple[SpeedRule, ...] = ("fp32", "fp16_tensor", "bandwidth")
"""``fp16_tensor``: geometric mean of the dense FP16/BF16 tensor compute and bandwidth ratios (the rule used);
``fp32``: the same with the FP32 figure; ``bandwidth``: the bandwidth ratio alone."""
_NUMBERS = (
    "tdp_w",
    "min_limit_w",
    "idle_power_w",
    "memory_gb",
    "memory_bandwidth_gb_s",
    "fp32_tflops",
    "fp16_tensor_tflops",
)


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """Public figures of one GPU type: power in W, memory in GB, bandwidth in GB/s, compute in TFLOPS (dense)."""

    name: str
    part: str
    tdp_w: float
    min_limit_w: float
    idle_power_w: float
    memory_gb: float
    memory_bandwidth_gb_s: float
    fp32_tflops: float
    fp16_tensor_tflops: float


@dataclass(frozen=True, slots=True)
class RuleError:
    """How far the prior rule lands from a measured table: ``|predicted / measured - 1|`` quantiles.

    ``throughput`` and ``power`` over every profile of ``target`` the rule can predict from ``reference``,
    ``pair`` over both sides of every pair entry both types have; each ``(median, 90th percentile)``.
    """

    reference: str
    target: str
    rule: str
    profiles: int
    pairs: int
    throughput: tuple[float, float]
    power: tuple[float, float]
    pair: tuple[float, float]

    @property
    def rel_error(self) -> float:
        """A profile entry's expected relative error: the larger of the throughput and power medians."""
        return max(self.throughput[0], self.power[0])

    def summary(self) -> str:
        """One line: median and 90th percentile of each quantity, in percent."""
        t, p, q = self.throughput, self.power, self.pair
        return (
            f"{self.reference} -> {self.target} ({self.rule}): throughput {t[0]:.0%} median, {t[1]:.0%} p90; "
            f"power {p[0]:.0%} median, {p[1]:.0%} p90; pair rates {q[0]:.0%} median, {q[1]:.0%} p90"
        )


@dataclass(frozen=True, slots=True)
class ExpectedError:
    """The prior's expected relative errors, each the median of a check where that part of the rule applies.

    ``throughput`` from the tensor-core check (V100 -> A40, Zeus: the P100 has no tensor cores, so the tensor
    speed rule says nothing about it), ``power`` the worse of both checks (the power rule does not depend on the
    speed rule), ``pair`` from V100 -> P100 (the only type with measured pairs besides the reference).
    """

    throughput: float
    power: float
    pair: float
    checks: tuple[RuleError, ...]

    @property
    def profile(self) -> float:
        """A profile entry's expected relative error: the larger of throughput's and power's."""
        return max(self.throughput, self.power)

    def summary(self) -> str:
        """One line, in percent."""
        return (
            f"median error where the rule was checked (V100 -> A40, V100 -> P100): throughput "
            f"{self.throughput:.0%}, power {self.power:.0%}, pair rates {self.pair:.0%}; a newer GPU, further from "
            "the V100, may err more (docs/design.md §9.8)"
        )


def expected_error(library_check: RuleError, zeus_check: RuleError) -> ExpectedError:
    """:class:`ExpectedError` from the V100 -> P100 library check and the V100 -> A40 Zeus check."""
    return ExpectedError(
        throughput=zeus_check.throughput[0],
        power=max(library_check.power[0], zeus_check.power[0]),
        pair=library_check.pair[0],
        checks=(library_check, zeus_check),
    )


@dataclass(frozen=True, slots=True)
class GpuSpecs:
    """The spec file: its reference type, the specs by name and the rule's expected error (None: not measured)."""

    reference: str
    types: Mapping[str, GpuSpec]
    error: ExpectedError | None

    def require(self, name: str, where: str) -> GpuSpec:
        """The spec of ``name``; ``InputError`` at ``where`` naming the known types when there is none."""
        if name not in self.types:
            raise InputError(
                where,
                [Problem("unknown-gpu-type", where, f"no spec for GPU type {name!r} (have {sorted(self.types)})")],
            )
        return self.types[name]


def gpu_specs_path() -> Path:
    """The shipped spec file."""
    return shipped(GPU_SPECS_NAME)


def _spec(raw: Any, k: int) -> tuple[GpuSpec | None, list[Problem]]:
    """One ``gpu_types[k]`` entry, or the problems naming its bad fields."""
    where = f"gpu_types[{k}]"
    if not isinstance(raw, dict):
        return None, [Problem("bad-spec", where, "not an object")]
    problems = []
    if not isinstance(raw.get("name"), str) or not raw.get("name"):
        problems.append(Problem("bad-spec", f"{where}.name", "must be a non-empty string"))
    for key in _NUMBERS:
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            problems.append(Problem("bad-spec", f"{where}.{key}", f"must be a positive number, got {value!r}"))
    if problems:
        return None, problems
    spec = GpuSpec(name=raw["name"], part=str(raw.get("part", "")), **{key: float(raw[key]) for key in _NUMBERS})
    if not spec.idle_power_w < spec.min_limit_w <= spec.tdp_w:
        problems.append(
            Problem(
                "bad-spec",
                where,
                "needs idle_power_w < min_limit_w <= tdp_w (W), got "
                f"{spec.idle_power_w:g}, {spec.min_limit_w:g}, {spec.tdp_w:g}",
            )
        )
    return spec, problems


def _expected(raw: Any) -> ExpectedError | None:
    """The ``prior_error`` block (None when absent): its two checks, library then Zeus."""
    if raw is None:
        return None
    try:
        library_check, zeus_check = (_check(c) for c in raw["checks"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("prior_error", [Problem("bad-spec", "prior_error", f"malformed: {exc}")]) from None
    return expected_error(library_check, zeus_check)


def _check(raw: Any) -> RuleError:
    """One check of the ``prior_error`` block."""
    try:
        return RuleError(
            reference=str(raw["reference"]),
            target=str(raw["target"]),
            rule=str(raw["rule"]),
            profiles=int(raw["profiles"]),
            pairs=int(raw["pairs"]),
            throughput=(float(raw["throughput"]["median"]), float(raw["throughput"]["p90"])),
            power=(float(raw["power"]["median"]), float(raw["power"]["p90"])),
            pair=(float(raw["pair"]["median"]), float(raw["pair"]["p90"])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("prior_error", [Problem("bad-spec", "prior_error", f"malformed: {exc}")]) from None


def expected_error_doc(err: ExpectedError) -> dict[str, Any]:
    """The ``prior_error`` block of the spec file (fractions rounded to 4 decimals)."""
    return {
        "throughput": round(err.throughput, 4),
        "power": round(err.power, 4),
        "pair": round(err.pair, 4),
        "rule": "medians of |predicted / measured - 1|: throughput from the V100 -> A40 check (tensor cores on both), "
        "power the worse of both checks, pair rates from V100 -> P100 (planner/profile_library/priors.py)",
        "checks": [rule_error_doc(c) for c in err.checks],
    }


def rule_error_doc(err: RuleError) -> dict[str, Any]:
    """One check as a document (fractions rounded to 4 decimals)."""

    def q(pair: tuple[float, float]) -> dict[str, float]:
        return {"median": round(pair[0], 4), "p90": round(pair[1], 4)}

    return {
        "reference": err.reference,
        "target": err.target,
        "rule": err.rule,
        "profiles": err.profiles,
        "pairs": err.pairs,
        "throughput": q(err.throughput),
        "power": q(err.power),
        "pair": q(err.pair),
    }


def load_gpu_specs(path: Path | None = None) -> GpuSpecs:
    """Read a ``wattplan.gpu_specs/1`` file (default: the shipped one); ``InputError`` naming every bad field."""
    source = Path(path) if path is not None else gpu_specs_path()
    doc = read_json(source)
    if not isinstance(doc, dict) or doc.get("schema") != "wattplan.gpu_specs/1":
        raise InputError(str(source), [Problem("schema", "schema", "not a wattplan.gpu_specs/1 file")])
    raw_types = doc.get("gpu_types")
    if not isinstance(raw_types, list) or not raw_types:
        raise InputError(str(source), [Problem("bad-spec", "gpu_types", "must be a non-empty list")])
    types: dict[str, GpuSpec] = {}
    problems: list[Problem] = []
    for k, raw in enumerate(raw_types):
        spec, found = _spec(raw, k)
        problems += found
        if spec is not None:
            if spec.name in types:
                problems.append(Problem("bad-spec", f"gpu_types[{k}].name", f"{spec.name!r} is listed twice"))
            types[spec.name] = spec
    reference = doc.get("reference")
    if reference not in types:
        problems.append(Problem("bad-spec", "reference", f"{reference!r} is not among gpu_types {sorted(types)}"))
    if problems:
        raise InputError(str(source), problems)
    return GpuSpecs(str(reference), types, _expected(doc.get("prior_error")))


# --- the rule ----------------------------------------------------------------------------------------------------


def speed_ratio(spec: GpuSpec, ref: GpuSpec, rule: SpeedRule = "fp16_tensor") -> float:
    """``r_g``: ``sqrt((C_g / C_ref) (B_g / B_ref))`` (``C`` FP32 or FP16-tensor TFLOPS, ``B`` GB/s), or ``B`` alone."""
    bandwidth = spec.memory_bandwidth_gb_s / ref.memory_bandwidth_gb_s
    if rule == "bandwidth":
        return bandwidth
    compute = spec.fp32_tflops / ref.fp32_tflops if rule == "fp32" else spec.fp16_tensor_tflops / ref.fp16_tensor_tflops
    return math.sqrt(compute * bandwidth)


def settings_grid(spec: GpuSpec, ref: GpuSpec, ref_settings: Sequence[int], points: int = GRID_POINTS) -> list[int]:
    """``points`` evenly spaced integer limits (W) over ``[max(min_limit, f_lo TDP), TDP]`` (module docstring)."""
    f_lo = min(ref_settings) / ref.tdp_w
    low = max(spec.min_limit_w, f_lo * spec.tdp_w)
    high = spec.tdp_w
    grid = sorted({round(low + (high - low) * k / (points - 1)) for k in range(points)})
    return [int(s) for s in grid]


def reference_setting(s: float, spec: GpuSpec, ref: GpuSpec) -> float:
    """``s_ref = s TDP_ref / TDP_g`` (W): the reference's limit at the same fraction of its TDP."""
    return s * ref.tdp_w / spec.tdp_w


def interpolate(curve: Mapping[int, tuple[float, float]], s: float) -> tuple[float, float]:
    """``(X, P)`` at setting ``s`` on a curve of setting -> (X, P): linear between knots, held at the ends."""
    knots = sorted(curve)
    if s <= knots[0]:
        return curve[knots[0]]
    if s >= knots[-1]:
        return curve[knots[-1]]
    hi = next(k for k in knots if k >= s)
    lo = max(k for k in knots if k <= s)
    if hi == lo:
        return curve[lo]
    w = (s - lo) / (hi - lo)
    (x0, p0), (x1, p1) = curve[lo], curve[hi]
    return x0 + w * (x1 - x0), p0 + w * (p1 - p0)


def mapped_power(p_ref: float, idle_ref: float, spec: GpuSpec, ref: GpuSpec, limit: float | None) -> float:
    """``P_g = idle_g + (P_ref - idle_ref)(TDP_g - idle_g)/(TDP_ref - idle_ref)`` (W), within ``[idle_g, limit]``."""
    p = spec.idle_power_w + (p_ref - idle_ref) * (spec.tdp_w - spec.idle_power_w) / (ref.tdp_w - idle_ref)
    if limit is not None:
        p = min(p, limit)
    return max(p, spec.idle_power_w)


def reference_curves(lib: ProfileLibrary, ref: str) -> dict[tuple[str, int], dict[int, tuple[float, float]]]:
    """(job type, count) -> setting -> (steps/s, W per GPU) of the reference type's profiles."""
    curves: dict[tuple[str, int], dict[int, tuple[float, float]]] = defaultdict(dict)
    for p in lib.profiles:
        if p.gpu_type == ref:
            curves[(p.type, p.gpus)][p.setting] = (p.steps_per_s, p.power_w)
    return dict(curves)


def predict(
    curve: Mapping[int, tuple[float, float]],
    s: int,
    spec: GpuSpec,
    ref: GpuSpec,
    idle_ref: float,
    rule: SpeedRule = "fp16_tensor",
) -> tuple[float, float]:
    """``(X_g, P_g)`` at setting ``s`` (W) of ``spec`` from a reference curve (module docstring)."""
    x_ref, p_ref = interpolate(curve, reference_setting(s, spec, ref))
    return speed_ratio(spec, ref, rule) * x_ref, mapped_power(p_ref, idle_ref, spec, ref, float(s))


@dataclass(frozen=True, slots=True)
class PriorType:
    """A GPU type's prior: its ``gpu_types`` entry, profiles and pairs with their bases."""

    gpu_type: dict[str, Any]
    profiles: tuple[Profile, ...]
    pairs: tuple[PairSlowdown, ...]
    basis: dict[str, Any]
    pair_basis: dict[str, Any]


def _basis(spec: GpuSpec, ref: GpuSpec, err: ExpectedError | None, pairs: bool = False) -> dict[str, Any]:
    """The ``prior`` basis of ``spec``'s profile entries (or, ``pairs``, of its pair entries)."""
    r = speed_ratio(spec, ref)
    told = err.summary() if err is not None else "expected error not measured"
    what = (
        f"pair rates of {ref.name} at the same (a, b, n)"
        if pairs
        else f"X = {r:.4g} X_{ref.name}(s {ref.tdp_w:g}/{spec.tdp_w:g}), P scaled between idle and TDP"
    )
    return {
        "kind": "prior",
        "points": [],
        "rel_error": None if err is None else (err.pair if pairs else err.profile),
        "reason": f"prior for {spec.name} from {ref.name} and public specs: {what}; {told}",
    }


def prior_type(lib: ProfileLibrary, spec: GpuSpec, specs: GpuSpecs) -> PriorType:
    """The prior of ``spec``'s GPU type from the library's reference type (``InputError`` if the library lacks it)."""
    ref = specs.types[specs.reference]
    if ref.name not in lib.gpu_types:
        raise InputError(
            "profiles",
            [Problem("unknown-gpu-type", "reference", f"the library has no reference type {ref.name!r} to scale")],
        )
    ref_entry = lib.gpu_types[ref.name]
    idle_ref = float(ref_entry["idle_power_w"])
    settings = settings_grid(spec, ref, ref_entry["settings"])
    basis = _basis(spec, ref, specs.error)
    profiles = []
    for (job_type, n), curve in sorted(reference_curves(lib, ref.name).items()):
        for s in settings:
            x, p = predict(curve, s, spec, ref, idle_ref)
            profiles.append(Profile(job_type, spec.name, n, s, x, p, basis=basis))
    pairs = tuple(dataclasses.replace(q, gpu_type=spec.name) for q in lib.pairs if q.gpu_type == ref.name)
    entry = {
        "name": spec.name,
        "idle_power_w": spec.idle_power_w,
        "setting_unit": "power_limit_w",
        "settings": settings,
        "idle_power_source": f"spec file ({spec.part}): see instances/profiles/gpu_specs.json",
        "prior": {"reference": ref.name, "speed_ratio": speed_ratio(spec, ref), "part": spec.part},
    }
    return PriorType(entry, tuple(profiles), pairs, basis, _basis(spec, ref, specs.error, pairs=True))


def missing_types(lib: ProfileLibrary, names: Iterable[str], specs: GpuSpecs) -> list[str]:
    """The ``names`` the library lacks but the spec file knows (in order, once each)."""
    return [g for g in dict.fromkeys(names) if g not in lib.gpu_types and g in specs.types]


def with_prior_types(
    lib: ProfileLibrary, names: Iterable[str], specs: GpuSpecs | None = None
) -> tuple[ProfileLibrary, list[str]]:
    """The library with a prior added for each of ``names`` it lacks and the specs know; and those names.

    A name neither has is left out (the caller's own check names it). ``instance from-trace`` calls this with
    the cluster's GPU types.
    """
    specs = specs or load_gpu_specs()
    added = missing_types(lib, names, specs)
    if not added:
        return lib, []
    gpu_types = dict(lib.gpu_types)
    profiles, pairs = list(lib.profiles), list(lib.pairs)
    profile_extras: dict[ProfileKey, dict[str, Any]] = dict(lib.profile_extras)
    pair_extras: dict[PairKey, dict[str, Any]] = dict(lib.pair_extras)
    for name in added:
        prior = prior_type(lib, specs.types[name], specs)
        gpu_types[name] = prior.gpu_type
        profiles += prior.profiles
        pairs += prior.pairs
        profile_extras |= {profile_key(p): {"basis": prior.basis} for p in prior.profiles}
        pair_extras |= {pair_key(q): {"basis": prior.pair_basis} for q in prior.pairs}
    return (
        ProfileLibrary(
            gpu_types, tuple(profiles), tuple(pairs), lib.sources, profile_extras, pair_extras, lib.measurements
        ),
        added,
    )


def add_prior_types_doc(doc: dict[str, Any], lib: ProfileLibrary, names: Sequence[str], specs: GpuSpecs) -> None:
    """Append the priors of ``names`` to a library document in place (every name needs a spec, no profiles).

    ``InputError`` on ``--gpu`` naming each type that has no spec or already has profiles.
    """
    problems = []
    for k, name in enumerate(names):
        if name in lib.gpu_types:
            problems.append(Problem("has-profiles", f"--gpu[{k}]", f"{name!r} already has profiles in the library"))
        elif name not in specs.types:
            problems.append(
                Problem("unknown-gpu-type", f"--gpu[{k}]", f"no spec for {name!r} (have {sorted(specs.types)})")
            )
    if problems:
        raise InputError("--gpu", problems)
    for name in dict.fromkeys(names):
        prior = prior_type(lib, specs.types[name], specs)
        doc["gpu_types"].append(prior.gpu_type)
        doc["profiles"] += [
            {
                "type": p.type,
                "gpu_type": p.gpu_type,
                "gpus": p.gpus,
                "setting": p.setting,
                "steps_per_s": p.steps_per_s,
                "power_w": p.power_w,
                "basis": prior.basis,
            }
            for p in prior.profiles
        ]
        doc["pairs"] += [
            {
                "a": q.a,
                "b": q.b,
                "gpu_type": q.gpu_type,
                "gpus": q.gpus,
                "rho_a": q.rho_a,
                "rho_b": q.rho_b,
                "basis": prior.pair_basis,
            }
            for q in prior.pairs
        ]


# --- its measured error ------------------------------------------------------------------------------------------


def _quantiles(values: Sequence[float]) -> tuple[float, float]:
    """(median, 90th percentile, linear interpolation) of ``values`` (0, 0 when empty)."""
    if not values:
        return 0.0, 0.0
    if len(values) == 1:
        return values[0], values[0]
    return statistics.median(values), statistics.quantiles(values, n=10, method="inclusive")[8]


def rule_error(
    lib: ProfileLibrary, specs: GpuSpecs, reference: str, target: str, rule: SpeedRule = "fp16_tensor"
) -> RuleError:
    """The rule's error predicting ``target``'s measured table from ``reference``'s (module docstring).

    Every ``target`` profile whose (job type, count) ``reference`` has is predicted at its own setting with the
    target's spec (its idle power the library's); pair entries both types have are compared side by side.
    """
    spec, ref = specs.types[target], specs.types[reference]
    idle_ref = float(lib.gpu_types[reference]["idle_power_w"])
    spec = dataclasses.replace(spec, idle_power_w=float(lib.gpu_types[target]["idle_power_w"]))
    curves = reference_curves(lib, reference)
    ex, ep = [], []
    for p in lib.profiles:
        curve = curves.get((p.type, p.gpus))
        if p.gpu_type != target or curve is None:
            continue
        x, w = predict(curve, p.setting, spec, ref, idle_ref, rule)
        ex.append(abs(x / p.steps_per_s - 1.0))
        ep.append(abs(w / p.power_w - 1.0))
    ref_pairs = {(q.a, q.b, q.gpus): q for q in lib.pairs if q.gpu_type == reference}
    er = []
    for q in lib.pairs:
        borrowed = ref_pairs.get((q.a, q.b, q.gpus))
        if q.gpu_type == target and borrowed is not None:
            er += [abs(borrowed.rho_a / q.rho_a - 1.0), abs(borrowed.rho_b / q.rho_b - 1.0)]
    return RuleError(reference, target, rule, len(ex), len(er) // 2, _quantiles(ex), _quantiles(ep), _quantiles(er))


def zeus_rule_error(specs: GpuSpecs, reference: str, target: str, rule: SpeedRule = "fp16_tensor") -> RuleError:
    """The rule's error on the shipped Zeus summaries (1 GPU): ``reference`` -> ``target`` per workload and batch.

    At each ``target`` limit ``s`` whose reference limit ``s TDP_ref / TDP_g`` lies in the reference's sweep:
    throughput ``r / t_ref(s_ref)`` (epochs/s) against ``1 / t_g(s)``, power mapped as in :func:`mapped_power`
    (the reference's idle the floor of its file's lowest power, §9.2) against the measured power. No pairs.
    """
    ref_curves, ref_lowest = load_zeus(source_dir(), reference)
    target_curves, _ = load_zeus(source_dir(), target)
    spec, ref = specs.types[target], specs.types[reference]
    r = speed_ratio(spec, ref, rule)
    ex, ep = [], []
    for workload, curve in sorted(target_curves.items()):
        if workload not in ref_curves:
            continue
        rates = {s: (1.0 / t, p) for s, (t, p) in ref_curves[workload].items()}
        for s, (t, p) in sorted(curve.items()):
            s_ref = reference_setting(s, spec, ref)
            if min(rates) <= s_ref <= max(rates):
                x_ref, p_ref = interpolate(rates, s_ref)
                ex.append(abs(r * x_ref * t - 1.0))
                ep.append(abs(mapped_power(p_ref, math.floor(ref_lowest), spec, ref, float(s)) / p - 1.0))
    return RuleError(reference, target, rule, len(ex), 0, _quantiles(ex), _quantiles(ep), (0.0, 0.0))


def measure_expected_error(lib: ProfileLibrary, specs: GpuSpecs) -> ExpectedError:
    """Both checks of the rule used (V100 -> P100 on the library, V100 -> A40 on Zeus) and the expected error."""
    return expected_error(rule_error(lib, specs, "v100", "p100"), zeus_rule_error(specs, "v100", "a40"))
