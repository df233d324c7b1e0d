"""Fidelity check: what a profile library predicts against what was measured, per quantity.

:func:`check` takes a library and measured points (:mod:`planner.profiling.points`) and, for every
configuration the points measure, looks up the library's prediction for the *same* configuration
(job type, GPU type, GPU count ``n``, setting ``s``; measured job types renamed by ``mapping``). Points
of one configuration are pooled: the measured value is the mean over them and the row lists every
point id. Each row's relative error is ``(predicted - measured) / measured``.

Quantities (``X`` whole-job steps/s, ``P`` W per GPU):

* ``throughput``: ``X(n, s)`` (steps/s) of ``exclusive`` points against the library's profile.
* ``speedup``: ``X(n, s) / X(1, s)`` for ``n > 1`` when a 1-GPU point of the same job type, GPU type
  and setting was measured; predicted from the library's two profiles.
* ``power``: ``P(n, s)`` (W per GPU).
* ``energy_per_step``: ``n * P / X`` (J per step, all the job's GPUs), from the pooled means.
* ``pair_rate``: ``rho = X_shared / X_exclusive`` (dimensionless), the pair point's steps/s over the
  *measured* exclusive steps/s of the same job type at the same ``(g, n, s)``; predicted: the
  library's pair entry (``rho_a`` or ``rho_b``, whichever names the job).
* ``pair_power``: W per GPU of a pair point against the planner's pair model
  ``Pidle + rho_a (P_a - Pidle) + rho_b (P_b - Pidle)`` (:mod:`planner.core.economics`) at setting ``s``.
* ``idle``: mean power of ``idle`` points of a GPU type against its ``idle_power_w``.
* ``held_idle``: ``held_idle`` points against ``held_idle_power_w`` when the library has one, else
  against ``idle_power_w`` (the planner knows no other power for a GPU that computes nothing).
* ``node_power``: ``node`` points against ``node_power_w``, else the planner's default
  (:data:`planner.contracts.defaults.NODE_POWER_W`).
* ``top_limit``: ``top_limit`` points against ``top_limit_w``, else the highest power-limit setting.

Shape mode (``shape=True``), for points whose steps are not the library's steps (a Zeus window's
steps are not Gavel's): ``throughput``, ``power``, ``energy_per_step`` and ``pair_power`` are replaced
by ratios to the same job's *top* measured setting ``s_top`` at the same ``(g, n)``:

* ``throughput_shape``: ``X(s) / X(s_top)``; ``power_shape``: ``P(s) / P(s_top)``;
* ``energy_shape``: ``e(s) / e(s_top)`` with ``e = P / X`` (the ``n`` cancels).

The top setting's own row (ratio 1 on both sides) is not a row. The other quantities are ratios or
GPU-level powers and stay as they are.

Nothing is dropped silently: a point (or pool) without a prediction for its configuration (unknown
job or GPU type, a count or setting the library lacks, a pair with no measured exclusive rate, a
shape with one setting, a measured value of 0) is an :class:`Unmatched` entry with the reason.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from wattplan.planner.contracts.defaults import NODE_POWER_W
from wattplan.planner.contracts.domain import PairSlowdown, Profile
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library
from wattplan.planner.profiling.points import MeasuredPoint, read_points

QUANTITIES: tuple[str, ...] = (
    "throughput",
    "speedup",
    "power",
    "energy_per_step",
    "throughput_shape",
    "power_shape",
    "energy_shape",
    "pair_rate",
    "pair_power",
    "idle",
    "held_idle",
    "node_power",
    "top_limit",
)
"""Every quantity, in report order; a report holds those its points and mode give."""

UNITS: dict[str, str] = {
    "throughput": "steps/s",
    "speedup": "x",
    "power": "W/GPU",
    "energy_per_step": "J/step",
    "throughput_shape": "X/X(s_top)",
    "power_shape": "P/P(s_top)",
    "energy_shape": "e/e(s_top)",
    "pair_rate": "rho",
    "pair_power": "W/GPU",
    "idle": "W/GPU",
    "held_idle": "W/GPU",
    "node_power": "W/node",
    "top_limit": "W",
}

_Config = tuple[str, str, int, int]  # (job type as in the library, GPU type, GPU count, setting)
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class FidelityRow:
    """One compared quantity of one configuration; ``predicted`` and ``measured`` in :data:`UNITS`."""

    quantity: str
    job_type: str | None
    gpu_type: str
    gpus: int | None
    setting: int | None
    partner: str | None
    predicted: float
    measured: float
    points: tuple[str, ...]
    note: str = ""

    @property
    def rel_error(self) -> float:
        """``(predicted - measured) / measured`` (``measured`` is never 0: such pools are unmatched)."""
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True, slots=True)
class Unmatched:
    """Points the check could not compare for ``quantity``, the configuration in words and why."""

    quantity: str
    points: tuple[str, ...]
    config: str
    reason: str


@dataclass(frozen=True, slots=True)
class QuantitySummary:
    """Per quantity: ``count`` rows, median ``|error|``, the worst error (signed) and its row, unmatched."""

    quantity: str
    count: int
    median_abs_error: float | None
    worst_error: float | None
    worst: FidelityRow | None
    unmatched: int


@dataclass(frozen=True)
class FidelityReport:
    """Rows, unmatched points, the mode and the job-type mapping a check ran with."""

    rows: tuple[FidelityRow, ...]
    unmatched: tuple[Unmatched, ...]
    shape: bool = False
    mapping: dict[str, str] = field(default_factory=dict)

    def quantities(self) -> list[str]:
        """Quantities with a row or an unmatched entry, in :data:`QUANTITIES` order."""
        present = {r.quantity for r in self.rows} | {u.quantity for u in self.unmatched}
        return [q for q in QUANTITIES if q in present]

    def summary(self) -> list[QuantitySummary]:
        """One :class:`QuantitySummary` per quantity present."""
        out = []
        for q in self.quantities():
            rows = [r for r in self.rows if r.quantity == q]
            worst = max(rows, key=lambda r: abs(r.rel_error), default=None)
            out.append(
                QuantitySummary(
                    quantity=q,
                    count=len(rows),
                    median_abs_error=statistics.median(abs(r.rel_error) for r in rows) if rows else None,
                    worst_error=None if worst is None else worst.rel_error,
                    worst=worst,
                    unmatched=sum(u.quantity == q for u in self.unmatched),
                )
            )
        return out


def parse_type_map(items: Sequence[str], library_types: Iterable[str] | None = None) -> dict[str, str]:
    """``["MEASURED=LIBRARY", ...]`` as a dict; every bad item is an ``InputError`` naming ``--map[k]``.

    With ``library_types``, a target that is not one of them is a problem too (a typo would
    otherwise leave every point of that type unmatched).
    """
    known = None if library_types is None else set(library_types)
    out: dict[str, str] = {}
    problems = []
    for k, item in enumerate(items):
        measured, sep, target = (part.strip() for part in item.partition("="))
        path = f"--map[{k}]"
        if not sep or not measured or not target:
            problems.append(Problem("bad-map", path, f"{item!r} is not MEASURED=LIBRARY"))
        elif measured in out and out[measured] != target:
            problems.append(Problem("bad-map", path, f"{measured!r} is already mapped to {out[measured]!r}"))
        elif known is not None and target not in known:
            problems.append(Problem("unknown-job-type", path, f"the library has no job type {target!r}"))
        else:
            out[measured] = target
    if problems:
        raise InputError("--map", problems)
    return out


def _mean(values: Iterable[float]) -> float:
    return statistics.fmean(values)


def _ids(points: Iterable[MeasuredPoint]) -> tuple[str, ...]:
    return tuple(p.id for p in points)


def _words(config: _Config) -> str:
    t, g, n, s = config
    return f"{t} on {n} {g} at {s}"


@dataclass
class _Checker:
    """The lookups of one check and the rows and unmatched entries it collects."""

    library: ProfileLibrary
    mapping: Mapping[str, str]
    shape: bool
    rows: list[FidelityRow] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    _profiles: dict[_Config, Profile] = field(default_factory=dict)
    _pairs: dict[tuple[str, str, str, int], PairSlowdown] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._profiles = {(p.type, p.gpu_type, p.gpus, p.setting): p for p in self.library.profiles}
        self._pairs = {(q.a, q.b, q.gpu_type, q.gpus): q for q in self.library.pairs}

    def name(self, job_type: str | None) -> str:
        """The library's name of a measured job type."""
        assert job_type is not None
        return self.mapping.get(job_type, job_type)

    def count(self, p: MeasuredPoint) -> int:
        """A run point's GPU count (validated points always have one)."""
        assert p.gpus is not None
        return p.gpus

    def level(self, p: MeasuredPoint) -> int:
        """A run point's setting (validated points always have one)."""
        assert p.setting is not None
        return p.setting

    def miss(self, quantity: str, pts: Iterable[MeasuredPoint], config: str, reason: str) -> None:
        """Record points without a prediction."""
        self.unmatched.append(Unmatched(quantity, _ids(pts), config, reason))

    def profile(self, config: _Config) -> Profile | str:
        """The library's profile of ``config``, or why there is none."""
        t, g, n, s = config
        if g not in self.library.gpu_types:
            return f"the library has no GPU type {g!r}"
        if not any(p.type == t for p in self.library.profiles):
            return f"the library has no job type {t!r} (map it with --map MEASURED=LIBRARY)"
        prof = self._profiles.get(config)
        return prof if prof is not None else f"the library has no profile of {_words(config)}"

    def setting_clash(self, pts: Sequence[MeasuredPoint], g: str) -> str | None:
        """Why points measured in another setting unit than the library's GPU type cannot match (None: they can)."""
        unit = self.library.gpu_types.get(g, {}).get("setting_unit")
        units = {p.setting_unit for p in pts if p.setting_unit is not None}
        if unit is not None and units - {unit}:
            return f"points are in setting unit {sorted(units)}, the library's {g} settings are {unit}"
        return None

    def add(
        self,
        quantity: str,
        config: _Config,
        predicted: float,
        measured: float,
        pts: Sequence[MeasuredPoint],
        partner: str | None = None,
        note: str = "",
    ) -> None:
        """A row, or an unmatched entry when the measured value is 0 (no relative error)."""
        if measured == 0:
            self.miss(quantity, pts, _words(config), "the measured value is 0: no relative error")
            return
        t, g, n, s = config
        self.rows.append(FidelityRow(quantity, t, g, n, s, partner, predicted, measured, _ids(pts), note))


def _pool(points: Iterable[MeasuredPoint], key_of: Callable[[MeasuredPoint], K]) -> dict[K, list[MeasuredPoint]]:
    """Points grouped by ``key_of``."""
    groups: dict[K, list[MeasuredPoint]] = defaultdict(list)
    for p in points:
        groups[key_of(p)].append(p)
    return dict(groups)


def _exclusive(c: _Checker, pools: dict[_Config, list[MeasuredPoint]]) -> dict[_Config, Profile]:
    """Throughput, power and energy per step rows (absolute mode); the configs that matched."""
    matched: dict[_Config, Profile] = {}
    for config, pts in sorted(pools.items()):
        clash = c.setting_clash(pts, config[1])
        prof = clash or c.profile(config)
        if isinstance(prof, str):
            for q in ("throughput", "power", "energy_per_step") if not c.shape else ("throughput_shape",):
                c.miss(q, pts, _words(config), prof)
            continue
        matched[config] = prof
        if c.shape:
            continue
        x = _mean(p.steps_per_s or 0.0 for p in pts)
        w = _mean(p.power_w or 0.0 for p in pts)
        n = config[2]
        c.add("throughput", config, prof.steps_per_s, x, pts)
        c.add("power", config, prof.power_w, w, pts)
        if x > 0:
            c.add("energy_per_step", config, n * prof.power_w / prof.steps_per_s, n * w / x, pts)
        else:
            c.miss("energy_per_step", pts, _words(config), "the measured throughput is 0")
    return matched


def _speedup(c: _Checker, pools: dict[_Config, list[MeasuredPoint]], matched: dict[_Config, Profile]) -> None:
    """``X(n)/X(1)`` rows where a 1-GPU pool of the same (type, GPU type, setting) exists."""
    for config, pts in sorted(pools.items()):
        t, g, n, s = config
        base = (t, g, 1, s)
        if n == 1 or base not in pools:
            continue
        both = [*pts, *pools[base]]
        if config not in matched or base not in matched:
            missing = base if base not in matched else config
            c.miss("speedup", both, _words(config), f"no library profile of {_words(missing)}")
            continue
        x1 = _mean(p.steps_per_s or 0.0 for p in pools[base])
        if x1 == 0:
            c.miss("speedup", both, _words(config), "the measured 1-GPU throughput is 0")
            continue
        measured = _mean(p.steps_per_s or 0.0 for p in pts) / x1
        predicted = matched[config].steps_per_s / matched[base].steps_per_s
        c.add("speedup", config, predicted, measured, both)


def _shape(c: _Checker, pools: dict[_Config, list[MeasuredPoint]], matched: dict[_Config, Profile]) -> None:
    """Ratios to the top measured setting of the same (type, GPU type, count)."""
    by_run: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for t, g, n, s in pools:
        by_run[(t, g, n)].append(s)
    for (t, g, n), settings in sorted(by_run.items()):
        top = max(settings)
        ref = (t, g, n, top)
        if len(settings) == 1:
            if ref in matched:
                c.miss("throughput_shape", pools[ref], _words(ref), "one setting measured: no shape to compare")
            continue
        if ref not in matched:
            for s in settings:
                if s != top and (t, g, n, s) in matched:
                    c.miss(
                        "throughput_shape",
                        pools[(t, g, n, s)],
                        _words((t, g, n, s)),
                        f"the top measured setting {top} has no library profile",
                    )
            continue
        x_top = _mean(p.steps_per_s or 0.0 for p in pools[ref])
        w_top = _mean(p.power_w or 0.0 for p in pools[ref])
        lib_top = matched[ref]
        for s in sorted(settings):
            config = (t, g, n, s)
            if s == top or config not in matched:
                continue
            pts = [*pools[config], *pools[ref]]
            x = _mean(p.steps_per_s or 0.0 for p in pools[config])
            w = _mean(p.power_w or 0.0 for p in pools[config])
            prof = matched[config]
            if x_top == 0 or w_top == 0 or x == 0:
                c.miss("throughput_shape", pts, _words(config), "a measured throughput or power is 0")
                continue
            c.add("throughput_shape", config, prof.steps_per_s / lib_top.steps_per_s, x / x_top, pts)
            c.add("power_shape", config, prof.power_w / lib_top.power_w, w / w_top, pts)
            e_pred = (prof.power_w / prof.steps_per_s) / (lib_top.power_w / lib_top.steps_per_s)
            c.add("energy_shape", config, e_pred, (w / x) / (w_top / x_top), pts)


def _pair_entry(c: _Checker, a: str, b: str, g: str, n: int) -> tuple[float, float] | None:
    """``(rho of a, rho of b)`` from the library's entry of the pair, in either order."""
    q = c._pairs.get((a, b, g, n))
    if q is not None:
        return q.rho_a, q.rho_b
    q = c._pairs.get((b, a, g, n))
    return None if q is None else (q.rho_b, q.rho_a)


def _pairs(c: _Checker, points: Sequence[MeasuredPoint], exclusive: dict[_Config, list[MeasuredPoint]]) -> None:
    """Pair-rate rows (and pair-power rows in absolute mode)."""
    pools = _pool(points, lambda p: (c.name(p.job_type), c.name(p.partner_type), p.gpu_type, c.count(p), c.level(p)))
    for (t, partner, g, n, s), pts in sorted(pools.items()):
        config: _Config = (t, g, n, s)
        words = f"{_words(config)} with {partner}"
        rhos = _pair_entry(c, t, partner, g, n)
        if rhos is None:
            c.miss("pair_rate", pts, words, f"the library has no pair entry of {t} and {partner} on {n} {g}")
            continue
        x_shared = _mean(p.steps_per_s or 0.0 for p in pts)
        alone = exclusive.get(config)
        if not alone:
            c.miss("pair_rate", pts, words, f"no measured exclusive point of {_words(config)} to divide by")
        else:
            x_alone = _mean(p.steps_per_s or 0.0 for p in alone)
            if x_alone == 0:
                c.miss("pair_rate", [*pts, *alone], words, "the measured exclusive throughput is 0")
            else:
                c.add("pair_rate", config, rhos[0], x_shared / x_alone, [*pts, *alone], partner)
        if c.shape:
            continue
        mine, theirs = c.profile(config), c.profile((partner, g, n, s))
        if isinstance(mine, str) or isinstance(theirs, str):
            reason = mine if isinstance(mine, str) else theirs
            c.miss("pair_power", pts, words, str(reason))
            continue
        idle = float(c.library.gpu_types[g]["idle_power_w"])
        predicted = idle + rhos[0] * (mine.power_w - idle) + rhos[1] * (theirs.power_w - idle)
        c.add(
            "pair_power",
            config,
            predicted,
            _mean(p.power_w or 0.0 for p in pts),
            pts,
            partner,
            "Pidle + rho_a (P_a - Pidle) + rho_b (P_b - Pidle)",
        )


def _gpu_level(c: _Checker, points: Sequence[MeasuredPoint]) -> None:
    """Idle, held-idle, node and top-limit rows, pooled per GPU type."""
    quantity = {"idle": "idle", "held_idle": "held_idle", "node": "node_power", "top_limit": "top_limit"}
    for (kind, g), pts in sorted(_pool(points, lambda p: (p.kind, p.gpu_type)).items()):
        q = quantity[kind]
        gt = c.library.gpu_types.get(g)
        if gt is None:
            c.miss(q, pts, g, f"the library has no GPU type {g!r}")
            continue
        note = ""
        if q == "idle":
            predicted = float(gt["idle_power_w"])
        elif q == "held_idle":
            predicted = float(gt.get("held_idle_power_w", gt["idle_power_w"]))
            note = "" if "held_idle_power_w" in gt else "no held_idle_power_w: the library's idle power"
        elif q == "node_power":
            predicted = float(gt.get("node_power_w", NODE_POWER_W))
            note = "" if "node_power_w" in gt else "no node_power_w: the planner's default --node-power-w"
        elif "top_limit_w" in gt:
            predicted = float(gt["top_limit_w"])
        elif gt.get("setting_unit") == "power_limit_w" and gt.get("settings"):
            predicted, note = float(max(gt["settings"])), "no top_limit_w: the highest power-limit setting"
        else:
            c.miss(q, pts, g, f"the library's {g} settings are not power limits")
            continue
        c.rows.append(
            FidelityRow(q, None, g, None, None, None, predicted, _mean(p.power_w or 0.0 for p in pts), _ids(pts), note)
        )


def check(
    library: ProfileLibrary,
    points: Sequence[MeasuredPoint],
    mapping: Mapping[str, str] | None = None,
    shape: bool = False,
) -> FidelityReport:
    """Compare ``library``'s predictions with ``points`` per quantity (see the module docstring)."""
    c = _Checker(library, dict(mapping or {}), shape)
    runs = [p for p in points if p.kind == "exclusive"]
    pools = _pool(runs, lambda p: (c.name(p.job_type), p.gpu_type, c.count(p), c.level(p)))
    matched = _exclusive(c, pools)
    _speedup(c, pools, matched)
    if shape:
        _shape(c, pools, matched)
    _pairs(c, [p for p in points if p.kind == "pair"], pools)
    _gpu_level(c, [p for p in points if p.kind not in ("exclusive", "pair")])
    order = {q: k for k, q in enumerate(QUANTITIES)}
    rows = sorted(
        c.rows,
        key=lambda r: (order[r.quantity], r.job_type or "", r.gpu_type, r.gpus or 0, r.setting or 0, r.partner or ""),
    )
    return FidelityReport(tuple(rows), tuple(c.unmatched), shape, dict(mapping or {}))


def check_files(
    library_path: Path, measurement_paths: Sequence[Path], maps: Sequence[str] = (), shape: bool = False
) -> FidelityReport:
    """:func:`check` of a library file against the points of measurement files (``InputError`` if none)."""
    library = load_profile_library(library_path)
    mapping = parse_type_map(maps, {p.type for p in library.profiles})
    points = [p for path in measurement_paths for p in read_points(Path(path))]
    if not points:
        names = ", ".join(str(p) for p in measurement_paths) or "(no file given)"
        raise InputError(names, [Problem("no-points", "points", "no measured points to check against")])
    return check(library, points, mapping, shape)
