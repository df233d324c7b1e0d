"""``wattplan profiles fit``: a profile library (the prior) and measured points in, the full table out.

Steps, in order:

1. The sanity pass (:mod:`planner.profiling.sanity`) over the prior; with ``repair`` its findings are repaired
   (entries marked ``repaired``).
2. GPU types: ``idle_power_w`` becomes the mean of the type's ``idle`` points, ``held_idle_power_w`` and
   ``node_power_w`` the means of ``held_idle`` / ``node`` points, ``top_limit_w`` the largest ``top_limit``
   point (W), with ``idle_basis`` naming the points; a setting of an exclusive point the type's ``settings`` lack
   joins them (same unit). A GPU type only points name gets the settings of its
   exclusive points and, without ``idle`` points, the floor of the lowest power among them as idle (the rule of
   :mod:`planner.profile_library.build`: a GPU running a job cannot draw less than idle).
3. Each (job type, GPU type) with exclusive points is fitted (:mod:`planner.profiling.job_model`) and its prior
   entries are replaced by the table over its counts (the prior's, else 1, 2, 4, ... up to a node) and the GPU
   type's settings; a job type the prior lacks gets a table of its own.
4. Pairs (:mod:`planner.profiling.pair_rates`) against the exclusive rates of the new table (the points' mean at
   a measured configuration).
5. Every profile's power is raised to its GPU type's idle power where below (the idle power may have changed),
   with the reason; entries untouched by points keep the prior's basis or get ``prior``; the sanity pass runs
   again on the result.

The output is a ``wattplan.profiles/1`` document with the prior's keys (``sources``, ``mapping``, ``notes``), every
entry carrying a ``basis``, ``measurements`` holding every point used, and ``notes.fit`` the fitted models and
what was left out.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.defaults import GPUS_PER_NODE
from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.profile_library.library import library_from_doc
from wattplan.planner.profiling.basis import BASIS_KINDS, BasisKind, make_basis
from wattplan.planner.profiling.job_model import GpuContext, JobModel, fit_job, table_entries
from wattplan.planner.profiling.pair_rates import Exclusive, ExclusiveLookup, fit_pairs
from wattplan.planner.profiling.points import MeasuredPoint, merge_points, point_to_doc, points_from_docs, read_points
from wattplan.planner.profiling.power_model import borrowed_curve_error
from wattplan.planner.profiling.sanity import Finding, repair, sanity_check
from wattplan.planner.profiling.scaling import SPEEDUP_PRIOR_ERROR, population_alpha

PROFILE_KEYS = ("type", "gpu_type", "gpus", "setting")


@dataclass
class FitResult:
    """A fitted library document and what the fit found on the way."""

    doc: dict[str, Any]
    input_findings: list[Finding]
    output_findings: list[Finding]
    repaired: int
    models: list[JobModel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def kinds(self, entries: str) -> dict[str, int]:
        """Entries (``profiles`` or ``pairs``) per basis kind."""
        counts = Counter(e["basis"]["kind"] for e in self.doc[entries])
        return {k: counts.get(k, 0) for k in BASIS_KINDS}

    def worst_errors(self, k: int = 5) -> list[dict[str, Any]]:
        """The ``k`` entries (profiles and pairs) with the largest expected relative error."""
        known = [e for e in self.doc["profiles"] + self.doc["pairs"] if e["basis"]["rel_error"] is not None]
        return sorted(known, key=lambda e: -e["basis"]["rel_error"])[:k]


def _prior_basis(entry: dict[str, Any]) -> dict[str, Any]:
    """The basis of a prior profile entry untouched by points."""
    if entry["gpus"] > 1:
        return make_basis(
            "prior",
            [],
            SPEEDUP_PRIOR_ERROR,
            f"prior, no point of this job type on this GPU type; expected error {SPEEDUP_PRIOR_ERROR}: issue 14's "
            "worst measured speedup error of the shipped library (8 V100s: 4.12 predicted, 3.28 measured)",
        )
    return make_basis("prior", [], None, "prior, no point of this job type on this GPU type; error not estimated")


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values)


def _update_gpu_types(doc: dict[str, Any], points: Sequence[MeasuredPoint]) -> list[str]:
    """Step 2 of the module docstring, in place; returns notes."""
    by_gpu: dict[str, dict[str, list[MeasuredPoint]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        by_gpu[p.gpu_type][p.kind].append(p)
    known = {g["name"]: g for g in doc["gpu_types"]}
    notes = []
    for name, kinds in sorted(by_gpu.items()):
        runs = kinds["exclusive"]
        if name not in known:
            if not runs:
                notes.append(f"GPU type {name}: not in the library and no exclusive point, left out")
                continue
            lowest = min(p.power_w or 0.0 for p in runs)
            entry = {
                "name": name,
                "idle_power_w": math.floor(lowest),
                "setting_unit": runs[0].setting_unit or "power_limit_w",
                "settings": sorted({p.setting for p in runs if p.setting is not None}),
                "idle_basis": make_basis(
                    "fitted",
                    [],
                    None,
                    f"no idle point: floor of the lowest power among its points ({lowest:.2f} W), the largest "
                    "integer idle power consistent with them",
                ),
            }
            doc["gpu_types"].append(entry)
            known[name] = entry
            measured = {p.job_type for p in runs}
            types = {row["type"] for row in doc["profiles"]} - measured
            if types:
                notes.append(
                    f"GPU type {name} is not in the prior: only the {len(measured)} job type(s) measured on it can "
                    f"run there, not the other {len(types)}; add it first with `wattplan profiles prior --gpu "
                    f"{name}` and fit on that library (docs/operators.md, 4)"
                )
        entry = known[name]
        notes += _join_settings(entry, runs)
        said, ids = [], []
        for kind, key, pick in (
            ("idle", "idle_power_w", _mean),
            ("held_idle", "held_idle_power_w", _mean),
            ("node", "node_power_w", _mean),
            ("top_limit", "top_limit_w", max),
        ):
            got = kinds[kind]
            if got:
                entry[key] = pick([p.power_w or 0.0 for p in got])
                said.append(f"{key} {entry[key]:.4g} W from {len(got)} {kind} point(s)")
                ids += [p.id for p in got]
        if said:
            rule = "means of the points" + ("; top_limit_w: the largest" if kinds["top_limit"] else "")
            entry["idle_basis"] = make_basis("measured", ids, None, f"{'; '.join(said)} ({rule})")
        if kinds["idle"]:
            entry["idle_power_source"] = f"mean of {len(kinds['idle'])} measured idle point(s), see idle_basis"
    return notes


def _join_settings(entry: dict[str, Any], runs: Sequence[MeasuredPoint]) -> list[str]:
    """Settings of exclusive points missing from the GPU type's grid join it (sorted), in place; returns notes.

    A point in another setting unit than the type's is left out of the grid (and noted): its number is not one of
    the type's settings. Without this a measured setting off the grid (the V100's 300 W default limit against
    the 100-250 W grid) was fitted but never tabled.
    """
    unit = entry["setting_unit"]
    grid = set(entry["settings"])
    new, notes = set(), []
    for p in runs:
        if p.setting is None or p.setting in grid:
            continue
        if p.setting_unit not in (None, unit):
            notes.append(f"point {p.id}: setting {p.setting} in {p.setting_unit}, {entry['name']} uses {unit}")
            continue
        new.add(p.setting)
    if new:
        entry["settings"] = sorted(grid | new)
        notes.append(f"GPU type {entry['name']}: measured settings {sorted(new)} joined its settings")
    return notes


def _gpu_context(doc: dict[str, Any], name: str) -> GpuContext:
    """The fit's view of a GPU type, with the library's borrowed-curve error and median alpha (step 3)."""
    g = next(t for t in doc["gpu_types"] if t["name"] == name)
    curves: dict[tuple[str, str], dict[int, tuple[float, float]]] = defaultdict(dict)
    scal: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    smallest: dict[tuple[str, str], int] = {}
    top: dict[tuple[str, str], int] = {}
    for p in doc["profiles"]:
        k = (p["type"], p["gpu_type"])
        smallest[k] = min(smallest.get(k, p["gpus"]), p["gpus"])
        top[k] = max(top.get(k, p["setting"]), p["setting"])
    for p in doc["profiles"]:
        k = (p["type"], p["gpu_type"])
        if p["gpus"] == smallest[k]:
            curves[k][p["setting"]] = (p["steps_per_s"], p["power_w"])
        if p["setting"] == top[k]:
            scal[k][p["gpus"]] = p["steps_per_s"]
    own = [k for k in curves if k[1] == name]
    pick = own if len(own) >= 2 else list(curves)
    return GpuContext(
        name=name,
        idle_w=float(g["idle_power_w"]),
        settings=tuple(g["settings"]),
        power_limit=g["setting_unit"] == "power_limit_w",
        gpus_per_node=int(g.get("gpus_per_node", GPUS_PER_NODE)),
        borrowed=borrowed_curve_error([curves[k] for k in pick]),
        alpha=population_alpha([scal[k] for k in pick]),
    )


def _usable_runs(points: Sequence[MeasuredPoint]) -> tuple[list[MeasuredPoint], list[str]]:
    """Exclusive points with a positive rate and power; notes for the others."""
    keep, notes = [], []
    for p in points:
        if p.kind != "exclusive":
            continue
        if (p.steps_per_s or 0.0) > 0 and (p.power_w or 0.0) > 0:
            keep.append(p)
        else:
            notes.append(f"exclusive point {p.id}: steps_per_s or power_w is 0, not used")
    return keep, notes


def _exclusive_lookup(doc: dict[str, Any], models: dict[tuple[str, str], JobModel]) -> ExclusiveLookup:
    """(type, GPU type, n, s) -> :class:`Exclusive`: a measured cell, the model, else the table's entry."""
    table = {tuple(p[k] for k in PROFILE_KEYS): p for p in doc["profiles"]}

    def lookup(job_type: str, gpu_type: str, n: int, s: int) -> Exclusive | None:
        model = models.get((job_type, gpu_type))
        if model is not None:
            cell = model.cells.get((n, s))
            if cell:
                rel = table.get((job_type, gpu_type, n, s), {}).get("basis", {}).get("rel_error")
                return Exclusive(model.rate(n, s), rel, tuple(p.id for p in cell), True)
            try:
                ex, _ = model.errors(n, s)
                return Exclusive(model.rate(n, s), ex, tuple(p.id for p in model.points), False)
            except KeyError:
                pass
        row = table.get((job_type, gpu_type, n, s))
        if row is None:
            return None
        basis = row.get("basis", {})
        return Exclusive(row["steps_per_s"], basis.get("rel_error"), tuple(basis.get("points", [])), False)

    return lookup


def fit_library(
    prior: dict[str, Any], points: Sequence[MeasuredPoint] = (), repair_prior: bool = True, source: str = "library"
) -> FitResult:
    """The fitted library (module docstring) from a prior document and extra points (merged with its own)."""
    library_from_doc(prior, source)  # the schema and its entries, or InputError
    own = points_from_docs(prior.get("measurements", []), source, "measurements")
    everything, _ = merge_points(own, points)
    doc = copy.deepcopy(prior)
    found = sanity_check(doc)
    repaired = 0
    if repair_prior:
        doc, repaired = repair(doc, found)
    notes = _update_gpu_types(doc, everything)
    runs, skipped = _usable_runs(everything)
    notes += skipped
    groups: dict[tuple[str, str], list[MeasuredPoint]] = defaultdict(list)
    for p in runs:
        groups[(p.job_type or "", p.gpu_type)].append(p)
    prior_rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in doc["profiles"]:
        prior_rows[(row["type"], row["gpu_type"])].append(row)
    contexts = {g: _gpu_context(doc, g) for g in sorted({g for _, g in groups})}
    models: dict[tuple[str, str], JobModel] = {}
    new_rows: list[dict[str, Any]] = []
    for key, pts in sorted(groups.items()):
        if key[1] not in contexts or not any(t["name"] == key[1] for t in doc["gpu_types"]):
            continue
        model = fit_job(key[0], contexts[key[1]], pts, prior_rows.get(key, []))
        models[key] = model
        rows, left = table_entries(model)
        new_rows += rows
        notes += left
    kept = [r for r in doc["profiles"] if (r["type"], r["gpu_type"]) not in models]
    for r in kept:
        r.setdefault("basis", _prior_basis(r))
    doc["profiles"] = sorted(kept + new_rows, key=lambda r: tuple(r[k] for k in PROFILE_KEYS))
    pair_points = [p for p in everything if p.kind == "pair"]
    doc["pairs"], pair_notes = fit_pairs(doc["pairs"], pair_points, _exclusive_lookup(doc, models))
    notes += pair_notes
    _raise_to_idle(doc)
    doc["measurements"] = [point_to_doc(p) for p in everything]
    doc.setdefault("notes", {})["fit"] = {
        "models": [m.describe() for m in models.values()],
        "left_out": notes,
        "repaired_prior_entries": repaired,
        "rules": "docs/design.md §9.6 and planner/profiling/fit.py",
    }
    return FitResult(doc, found, sanity_check(doc), repaired, list(models.values()), notes)


def _raise_to_idle(doc: dict[str, Any]) -> None:
    """Raise every profile's power to its GPU type's idle power, with the reason in its basis (step 5)."""
    idle = {g["name"]: float(g["idle_power_w"]) for g in doc["gpu_types"]}
    for p in doc["profiles"]:
        floor = idle.get(p["gpu_type"])
        if floor is not None and p["power_w"] < floor:
            basis = p["basis"]
            kind: BasisKind = "repaired" if basis["kind"] == "prior" else basis["kind"]
            reason = f"{basis['reason']}; power {p['power_w']:.4g} W raised to {p['gpu_type']}'s idle {floor:.4g} W"
            p["basis"] = make_basis(kind, basis["points"], basis["rel_error"], reason)
            p["power_w"] = floor


def fit_files(library: Path, measurements: Sequence[Path] = (), repair_prior: bool = True) -> FitResult:
    """:func:`fit_library` on a library file and measurement files (or libraries with ``measurements``)."""
    prior = read_json(Path(library))
    if not isinstance(prior, dict):
        raise InputError(str(library), [Problem("schema", "(root)", "not a wattplan.profiles/1 file")])
    points: list[MeasuredPoint] = []
    for path in measurements:
        points, _ = merge_points(points, read_points(Path(path)))
    return fit_library(prior, points, repair_prior, str(library))


def write_fitted(result: FitResult, path: Path) -> None:
    """Write the fitted library atomically."""
    write_json_atomic(Path(path), result.doc)


def sanity_file(library: Path) -> list[Finding]:
    """The sanity findings of a library file (:func:`planner.profiling.sanity.sanity_check`)."""
    doc = read_json(Path(library))
    library_from_doc(doc, str(library))
    return sanity_check(doc)
