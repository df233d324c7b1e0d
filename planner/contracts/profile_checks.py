"""Every check a profile library (``wattplan.profiles/1``) must pass before anything uses it.

Run by :func:`planner.profile_library.library.library_from_doc`, so on every load: ``simulate --profiles`` and
``--truth``, ``profiles fit|check|truth|ingest --library``, ``instance from-trace``, ``frontier``.
First the structure (``planner/schemas/profiles.schema.json``), then the meaning:

====================  ==========================================================================
code                  meaning
====================  ==========================================================================
bad-library           the document breaks the schema (a missing key, a wrong type, a value out
                      of the ranges below)
not-finite            a number is NaN or infinite
duplicate-gpu-type    two GPU types share a name
unknown-gpu-type      a profile or pair names a GPU type the library's ``gpu_types`` lacks
setting-not-listed    a profile's setting is not among its GPU type's ``settings``
power-below-idle      a profile's ``power_w`` is below its GPU type's ``idle_power_w`` (as
                      instances require: dynamic power is never negative)
duplicate-profile     two profiles share (type, gpu_type, gpus, setting)
duplicate-pair        two pairs share (a, b, gpu_type, gpus)
====================  ==========================================================================

Ranges: ``steps_per_s`` > 0; ``power_w`` (W per GPU) in (0, :data:`MAX_GPU_POWER_W`];
``idle_power_w`` and ``node_power_w`` >= 0 (W); ``gpus`` an integer >= 1; pair rates ``rho_a``,
``rho_b`` in (0, :data:`MAX_PAIR_RATE`].
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wattplan.planner.contracts.jsonio import non_finite_numbers
from wattplan.planner.contracts.problems import Problem, capped
from wattplan.planner.contracts.schema_check import schema_problems

PROFILES_SCHEMA = "profiles.schema.json"
MAX_GPU_POWER_W = 5000.0
"""Most power (W) one GPU may draw: the largest accelerator modules draw about 1.2-1.5 kW (2025);
5 kW leaves room for the next generations while refusing values off by a unit (mW read as W)."""
MAX_PAIR_RATE = 1.5
"""Largest pair rate ``rho`` (rate beside a partner over the rate alone): sharing a GPU rarely speeds
a job up, and never by half; above that a value is taken for an error, not a measurement."""


def _gpu_type_problems(gpu_types: list[dict[str, Any]]) -> Iterator[Problem]:
    """GPU types that share a name."""
    seen: set[str] = set()
    for k, g in enumerate(gpu_types):
        if g["name"] in seen:
            yield Problem("duplicate-gpu-type", f"gpu_types[{k}].name", f"GPU type {g['name']!r} is already listed")
        seen.add(g["name"])


def profile_entry_problems(profiles: list[dict[str, Any]], types: dict[str, dict[str, Any]]) -> Iterator[Problem]:
    """Profiles on unknown GPU types, at unlisted settings, below idle power, or listed twice.

    One home for the checks a profile entry needs in a library and in an instance (``profiles[k]``
    paths; ``types`` maps a GPU type's name to its entry).
    """
    seen: set[tuple[str, str, int, int]] = set()
    for k, p in enumerate(profiles):
        path = f"profiles[{k}]"
        g = types.get(p["gpu_type"])
        if g is None:
            yield Problem(
                "unknown-gpu-type",
                f"{path}.gpu_type",
                f"unknown GPU type {p['gpu_type']!r} (not in gpu_types {sorted(types)})",
            )
        else:
            if p["setting"] not in g["settings"]:
                yield Problem(
                    "setting-not-listed",
                    f"{path}.setting",
                    f"setting {p['setting']} is not among {g['name']}'s settings {g['settings']}",
                )
            if p["power_w"] < g["idle_power_w"]:
                yield Problem(
                    "power-below-idle",
                    f"{path}.power_w",
                    f"{p['power_w']} W is below {g['name']}'s idle power {g['idle_power_w']} W "
                    f"(dynamic power P - Pidle must be >= 0)",
                )
        key = (p["type"], p["gpu_type"], p["gpus"], p["setting"])
        if key in seen:
            yield Problem(
                "duplicate-profile", path, f"a profile for (type, gpu_type, gpus, setting) {key} is already listed"
            )
        seen.add(key)


def _pair_problems(pairs: list[dict[str, Any]], types: dict[str, dict[str, Any]]) -> Iterator[Problem]:
    """Pairs on unknown GPU types or listed twice."""
    seen: set[tuple[str, str, str, int]] = set()
    for k, q in enumerate(pairs):
        path = f"pairs[{k}]"
        if q["gpu_type"] not in types:
            yield Problem(
                "unknown-gpu-type",
                f"{path}.gpu_type",
                f"GPU type {q['gpu_type']!r} is not in gpu_types {sorted(types)}",
            )
        key = (q["a"], q["b"], q["gpu_type"], q["gpus"])
        if key in seen:
            yield Problem("duplicate-pair", path, f"a pair for (a, b, gpu_type, gpus) {key} is already listed")
        seen.add(key)


def library_problems(doc: Any) -> list[Problem]:
    """Every problem of a profile library document (module docstring); empty if it may be used.

    The meaning checks run only on a document that passes the schema (they rely on its types).
    """
    structural = non_finite_numbers(doc) or schema_problems(doc, PROFILES_SCHEMA, "bad-library")
    if structural:
        return structural
    types = {g["name"]: g for g in doc["gpu_types"]}
    found = (
        *_gpu_type_problems(doc["gpu_types"]),
        *profile_entry_problems(doc["profiles"], types),
        *_pair_problems(doc["pairs"], types),
    )
    return capped(found)
