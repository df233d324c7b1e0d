"""Build the job-profile library from Gavel throughputs and Zeus power-limit traces.

Inputs live in ``instances/sources`` (copied unchanged from upstream, see instances/README.md):

* Gavel ``gavel/simulation_throughputs.json``: ``X(type, g, n)`` = whole-job steps/s of a job
  type on ``n`` GPUs of type ``g`` at the default (top) power limit, alone (key ``"null"``) and
  when sharing the GPUs with another type (``"('B', n)": [A shared, B shared]``, steps/s).
* Zeus ``zeus/summary_power_<g>.csv``: per workload, batch size, optimizer and power limit
  ``s`` (W), the time per epoch ``t(s)`` (s) and the average power per GPU ``P(s)`` (W).
  Rows of one (workload, batch size, limit) that differ only by optimizer are averaged.

Exclusive profile of Gavel type ``A`` on ``n`` GPUs of type ``g`` at power limit ``s``, with the
Zeus workload and batch size of :mod:`planner.profile_library.mapping`, ``s_max`` its highest limit:

* ``steps_per_s = X(A, g, n) * t(s_max) / t(s)`` (steps/s, whole job): Gavel measured at
  ``s_max``; a lower limit stretches every step by the Zeus ratio ``t(s) / t(s_max)``.
* ``power_w = P(s)`` (W per GPU, the same on every GPU of a multi-GPU job).

Pair ``{a, b}`` on ``n`` GPUs of ``g`` (``a <= b`` as strings, from Gavel's entry of ``a``):
``rho_a = a_shared / X(a, g, n)`` and ``rho_b = b_shared / X(b, g, n)`` (dimensionless), capped
at 1.0; pairs with a shared throughput of 0 (Gavel's marker of impossible pairs) are dropped.

Idle power of ``g``: ``floor(min P)`` over the whole Zeus file of ``g`` (W per GPU).
"""

from __future__ import annotations

import ast
import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.files.resources import source_dir
from wattplan.planner.profile_library import mapping as pm

SCHEMA = "wattplan.profiles/1"
DEFAULT_SOURCE_DIR = source_dir()

GAVEL_FILE = "gavel/simulation_throughputs.json"
GAVEL_UPSTREAM = (
    "stanford-futuredata/gavel@c4fa40097339e9608ab71fd64c8bdea96a5e4a4c:scheduler/simulation_throughputs.json"
)
GAVEL_LICENCE = "MIT (Copyright 2020 Stanford Future Data Systems)"
ZEUS_UPSTREAM = (
    "ml-energy/zeus@75a8b9398034eb9baf74ca0a830c2c31bcce52cd:"
    "examples/research_reproducibility/zeus_nsdi23/trace/summary_power_{g}.csv"
)
ZEUS_LICENCE = "Apache-2.0"

# (dataset, network, batch size) -> power limit (W) -> (mean time per epoch (s), mean power (W))
ZeusCurves = dict[tuple[str, str, int], dict[int, tuple[float, float]]]
# One row of a Zeus power summary: dataset, network, batch size, power limit (W), time per epoch (s), power (W)
ZeusRow = tuple[str, str, int, int, float, float]


def zeus_file(gpu_type: str) -> str:
    """Path of the Zeus power-sweep CSV of ``gpu_type``, relative to the sources folder."""
    return f"zeus/summary_power_{gpu_type}.csv"


def load_gavel(source_dir: Path) -> dict[str, dict[tuple[str, int], dict[str, Any]]]:
    """Gavel throughputs keyed ``[gpu type][(job type, n)]``; inner keys stay Gavel's strings."""
    raw = json.loads((source_dir / GAVEL_FILE).read_text())
    return {g: {_parse_key(k): v for k, v in by_key.items()} for g, by_key in raw.items()}


def _parse_key(key: str) -> tuple[str, int]:
    job_type, n = ast.literal_eval(key)
    return str(job_type), int(n)


def gavel_key(job_type: str, n: int) -> str:
    """Gavel's string key of a (job type, GPU count): ``"('ResNet-50 (batch size 64)', 2)"``."""
    return str((job_type, n))


def load_zeus(source_dir: Path, gpu_type: str) -> tuple[ZeusCurves, float]:
    """Zeus curves of one GPU type (optimizer rows averaged) and the file's lowest power (W)."""
    with open(source_dir / zeus_file(gpu_type), newline="") as f:
        rows = [
            (
                row["dataset"],
                row["network"],
                int(row["batch_size"]),
                int(row["power_limit"]),
                float(row["time_per_epoch"]),
                float(row["average_power"]),
            )
            for row in csv.DictReader(f)
        ]
    if not rows:
        raise ValueError(f"{zeus_file(gpu_type)} has no rows")
    return zeus_curves(rows)


def zeus_curves(rows: Iterable[ZeusRow]) -> tuple[ZeusCurves, float]:
    """Curves from parsed summary rows (at least one), optimizers averaged, and the lowest power (W).

    Rows of one ``(dataset, network, batch size, power limit)`` are averaged: ``t = fsum(t_i) / k`` (s per
    epoch) and ``P = fsum(P_i) / k`` (W), in file order; the lowest power is ``min P_i`` over every row.
    """
    groups: dict[tuple[str, str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for dataset, network, batch, limit, t, p in rows:
        groups[(dataset, network, batch, limit)].append((t, p))
    curves: ZeusCurves = defaultdict(dict)
    for (dataset, network, batch, limit), vals in groups.items():
        mean_t = math.fsum(t for t, _ in vals) / len(vals)
        mean_p = math.fsum(p for _, p in vals) / len(vals)
        curves[(dataset, network, batch)][limit] = (mean_t, mean_p)
    min_power = min(p for vals in groups.values() for _, p in vals)
    return dict(curves), min_power


def _mapping_entries(
    job_types: list[str], zeus: dict[str, ZeusCurves], gpu_types: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One mapping entry per Gavel job type, its Zeus batch size measured on every GPU type."""
    entries = []
    for job_type in job_types:
        w = pm.zeus_workload(job_type)
        per_gpu = [{b for (d, n, b) in zeus[g] if (d, n) == (w.dataset, w.network)} for g in gpu_types]
        common = set.intersection(*per_gpu)
        batch, rule = pm.choose_zeus_batch_size(job_type, common)
        entries.append(
            {
                "type": job_type,
                "family": pm.job_family(job_type),
                "zeus_dataset": w.dataset,
                "zeus_network": w.network,
                "zeus_batch_size": batch,
                "batch_rule": rule,
                "why": w.why,
            }
        )
    return entries


def _profiles(
    gavel: dict[tuple[str, int], dict[str, Any]], curves: ZeusCurves, mapping: list[dict[str, Any]], g: str
) -> list[dict[str, Any]]:
    """Exclusive profiles of GPU type ``g``: ``X * t(s_max) / t(s)`` steps/s, ``P(s)`` W."""
    out = []
    for m in mapping:
        curve = curves[(m["zeus_dataset"], m["zeus_network"], m["zeus_batch_size"])]
        t_max = curve[max(curve)][0]
        for n in sorted(n for (t, n) in gavel if t == m["type"]):
            x = float(gavel[(m["type"], n)]["null"])
            if x <= 0:
                continue
            for s in sorted(curve):
                t_s, p_s = curve[s]
                row = {"type": m["type"], "gpu_type": g, "gpus": n, "setting": s}
                out.append(row | {"steps_per_s": x * (t_max / t_s), "power_w": p_s})
    return out


def _pairs(gavel: dict[tuple[str, int], dict[str, Any]], g: str, notes: dict[str, Any]) -> list[dict[str, Any]]:
    """Pair slowdowns of GPU type ``g``; updates the drop/cap counters in ``notes``."""
    out = []
    for n in sorted({n for (_, n) in gavel}):
        types = sorted(t for (t, k) in gavel if k == n and float(gavel[(t, k)]["null"]) > 0)
        for i, a in enumerate(types):
            for b in types[i:]:
                shared = gavel[(a, n)].get(gavel_key(b, n))
                if shared is None:
                    notes["pairs_missing_in_gavel"] += 1
                    continue
                if float(shared[0]) <= 0 or float(shared[1]) <= 0:
                    notes["pairs_dropped_impossible"][g] += 1
                    continue
                rhos = []
                for t, x_shared in ((a, shared[0]), (b, shared[1])):
                    rho = float(x_shared) / float(gavel[(t, n)]["null"])
                    if rho > 1.0:
                        notes["rho_capped_at_1"][g] += 1
                        rho = 1.0
                    rhos.append(rho)
                out.append({"a": a, "b": b, "gpu_type": g, "gpus": n, "rho_a": rhos[0], "rho_b": rhos[1]})
    return out


def build_profile_library(
    source_dir: Path = DEFAULT_SOURCE_DIR, gpu_types: tuple[str, ...] = ("v100", "p100")
) -> dict[str, Any]:
    """The profile library (schema ``wattplan.profiles/1``) as a JSON-able dict.

    Only Gavel's consolidated keys (not ``*_unconsolidated``) of ``gpu_types`` are used.
    Raises ValueError when a profile would draw less than its GPU type's idle power.
    """
    source_dir = Path(source_dir)
    gavel_all = load_gavel(source_dir)
    gavel = {g: gavel_all[g] for g in gpu_types}
    zeus: dict[str, ZeusCurves] = {}
    sources = [{"file": GAVEL_FILE, "upstream": GAVEL_UPSTREAM, "licence": GAVEL_LICENCE}]
    gpu_entries: list[dict[str, Any]] = []
    for g in gpu_types:
        zeus[g], min_power = load_zeus(source_dir, g)
        sources.append({"file": zeus_file(g), "upstream": ZEUS_UPSTREAM.format(g=g), "licence": ZEUS_LICENCE})
        idle = math.floor(min_power)
        settings = sorted({s for curve in zeus[g].values() for s in curve})
        gpu_entries.append(
            {
                "name": g,
                "idle_power_w": idle,
                "idle_power_source": (
                    f"floor of the lowest average power in {zeus_file(g)} ({min_power:.2f} W): a GPU "
                    "running a job cannot draw less than its idle power, so this is the largest "
                    "integer idle power (W per GPU) consistent with every Zeus measurement."
                ),
                "setting_unit": "power_limit_w",
                "settings": settings,
            }
        )
    for s in sources:
        s["sha256"] = file_sha256(source_dir / s["file"])
    job_types = sorted({t for g in gpu_types for (t, _) in gavel[g]})
    mapping = _mapping_entries(job_types, zeus, gpu_types)
    notes: dict[str, Any] = {
        "pairs_dropped_impossible": {g: 0 for g in gpu_types},
        "rho_capped_at_1": {g: 0 for g in gpu_types},
        "pairs_missing_in_gavel": 0,
        "profiles_faster_than_top_limit": {g: 0 for g in gpu_types},
    }
    profiles: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    for entry in gpu_entries:
        g = entry["name"]
        rows = _profiles(gavel[g], zeus[g], mapping, g)
        low = [r for r in rows if r["power_w"] < entry["idle_power_w"]]
        if low:
            raise ValueError(f"{len(low)} {g} profiles draw less than idle power, e.g. {low[0]}")
        profiles += rows
        pairs += _pairs(gavel[g], g, notes)
        # rows ascend in setting within (type, gpus), so the last row kept is the top limit's
        top = {(r["type"], r["gpus"]): r["steps_per_s"] for r in rows}
        notes["profiles_faster_than_top_limit"][g] = sum(
            r["steps_per_s"] > top.get((r["type"], r["gpus"]), math.inf) for r in rows
        )
    notes |= {
        "profiles": len(profiles),
        "pairs": len(pairs),
        "zeus_optimizers": "Zeus rows of one (workload, batch size, power limit) that differ only "
        "by optimizer are averaged: mean time_per_epoch (s) and mean average_power (W).",
        "steps_per_s": "X_gavel(type, gpu, n) * t_zeus(s_max) / t_zeus(s); s_max = highest Zeus limit "
        "of that workload and batch size on that GPU (Gavel measured at the default, top limit).",
        "power_w": "mean Zeus average_power at the limit (W per GPU, also per GPU of multi-GPU jobs).",
        "faster_than_top_limit": "profiles whose Zeus epoch at a lower limit was shorter than at the top "
        "limit (light workloads that never reach the limit; kept as measured, not capped).",
        "pairs_rule": "rho = shared steps/s / exclusive steps/s at the same n; a <= b as strings, from "
        "Gavel's entry of a; dropped when a shared throughput is 0 (impossible); capped at 1.0.",
    }
    return {
        "schema": SCHEMA,
        "sources": sources,
        "gpu_types": gpu_entries,
        "mapping": mapping,
        "profiles": profiles,
        "pairs": pairs,
        "notes": notes,
    }


def write_profile_library(lib: dict[str, Any], path: Path) -> None:
    """Write ``lib`` as deterministic JSON (sorted keys, indent 1), atomically."""
    write_text_atomic(Path(path), json.dumps(lib, indent=1, sort_keys=True, allow_nan=False) + "\n")
