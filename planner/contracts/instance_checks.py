"""Semantic checks of a structurally valid instance document (docs/design.md §7.3).

Each check returns problems with the offending path; :func:`instance_problems` runs them
all so a user sees every problem at once. Codes are stable:

=========================  ====================================================================
code                       meaning
=========================  ====================================================================
duplicate-gpu-type         two GPU types share a name
duplicate-setting          a setting is listed twice for one GPU type
node-size                  ``gpus_per_node`` is not a power of two (buddy placement needs it)
duplicate-job-id           two jobs share an id
duplicate-gpu-count        a job lists a GPU count twice
bad-gpu-count              a count is neither a power of two up to a node nor a multiple of one
unknown-job-type           a job (or pair) names a type that no profile describes
no-profiles                the instance has jobs or pairs but no profile at all
no-profile                 no GPU type has a profile for this job type at this count
unknown-gpu-type           a profile, pair or current configuration names an unknown GPU type
setting-not-listed         a setting is not in its GPU type's ``settings``
duplicate-profile          two profiles share (type, gpu type, gpus, setting)
duplicate-pair             two pair entries describe the same two types on the same GPUs
power-below-idle           a profile's ``power_w`` is below its GPU type's ``idle_power_w``
unknown-partner            ``current.shares_with`` names no other job of the instance
bad-placement              ``current.placement`` names unknown nodes or GPUs, or the wrong count
bad-command                ``command`` starts with an empty word, or a launch field holds a NUL
bad-workdir                ``workdir`` is not an absolute path
bad-env-name               an ``env`` name is not a shell variable name (``[A-Za-z_][A-Za-z0-9_]*``)
bad-user                   ``user`` is not a user name or numeric id (``[A-Za-z0-9_][A-Za-z0-9._-]*``)
min-steps-above-remaining  a job's tail bound ``min_steps`` is more than its ``remaining_steps``
not-finite                 a number is NaN or infinite
more-problems              more problems than are listed (see :data:`~planner.contracts.problems.MAX_REPORTED_PROBLEMS`)
=========================  ====================================================================

Every check is linear in the size of the document (sets and maps, never a search of a list per
entry), so ten thousand jobs check in well under a second; array sizes are bounded by the schema.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from wattplan.planner.contracts.domain import gpu_count_fits_type, is_power_of_two
from wattplan.planner.contracts.problems import Problem, capped
from wattplan.planner.contracts.profile_checks import profile_entry_problems

Doc = dict[str, Any]


def _repeats(values: list[Any]) -> Iterator[tuple[int, Any]]:
    """``(index, value)`` of every entry that repeats an earlier one."""
    seen: set[Any] = set()
    for k, v in enumerate(values):
        if v in seen:
            yield k, v
        seen.add(v)


def check_gpu_types(doc: Doc) -> Iterator[Problem]:
    """Unique names, power-of-two node sizes, no setting listed twice."""
    seen: set[str] = set()
    for i, g in enumerate(doc["gpu_types"]):
        if g["name"] in seen:
            yield Problem("duplicate-gpu-type", f"gpu_types[{i}].name", f"GPU type {g['name']!r} is defined twice")
        seen.add(g["name"])
        if not is_power_of_two(g["gpus_per_node"]):
            yield Problem(
                "node-size",
                f"gpu_types[{i}].gpus_per_node",
                f"{g['gpus_per_node']} is not a power of two; buddy placement needs nodes of 1, 2, 4, 8, ... GPUs",
            )
        for k, s in _repeats(g["settings"]):
            yield Problem("duplicate-setting", f"gpu_types[{i}].settings[{k}]", f"setting {s} is listed twice")


def _gpu_types(doc: Doc) -> dict[str, Doc]:
    return {g["name"]: g for g in doc["gpu_types"]}


def _settings(types: dict[str, Doc]) -> dict[str, set[int]]:
    """Each GPU type's settings as a set, for membership tests."""
    return {name: set(g["settings"]) for name, g in types.items()}


def check_profiles(doc: Doc) -> Iterator[Problem]:
    """Known GPU types and settings, power at least idle, no profile twice (as a library's), placeable counts."""
    types = _gpu_types(doc)
    if not doc["profiles"] and (doc["jobs"] or doc.get("pairs")):
        yield Problem("no-profiles", "profiles", "is empty: every job type of the jobs and pairs needs profiles")
    yield from profile_entry_problems(doc["profiles"], types)
    for i, p in enumerate(doc["profiles"]):
        g = types.get(p["gpu_type"])
        if g is not None and not gpu_count_fits_type(p["gpus"], g["gpus_per_node"]):
            yield Problem(
                "bad-gpu-count",
                f"profiles[{i}].gpus",
                f"{p['gpus']} GPUs is neither a power of two up to a node's {g['gpus_per_node']} nor a multiple of it",
            )


def check_pairs(doc: Doc) -> Iterator[Problem]:
    """Known job and GPU types, placeable counts, no pair twice."""
    types = _gpu_types(doc)
    job_types = {p["type"] for p in doc["profiles"]}
    seen: set[tuple] = set()
    for i, p in enumerate(doc["pairs"]):
        path = f"pairs[{i}]"
        for side in ("a", "b"):
            if p[side] not in job_types:
                yield Problem("unknown-job-type", f"{path}.{side}", f"no profile describes job type {p[side]!r}")
        g = types.get(p["gpu_type"])
        if g is None:
            yield Problem("unknown-gpu-type", f"{path}.gpu_type", f"unknown GPU type {p['gpu_type']!r}")
        elif not gpu_count_fits_type(p["gpus"], g["gpus_per_node"]):
            yield Problem("bad-gpu-count", f"{path}.gpus", f"{p['gpus']} GPUs cannot be placed on {g['name']} nodes")
        key = (*sorted((p["a"], p["b"])), p["gpu_type"], p["gpus"])
        if key in seen:
            yield Problem(
                "duplicate-pair",
                path,
                f"types {p['a']!r} and {p['b']!r} on {p['gpus']} {p['gpu_type']} GPUs are listed twice",
            )
        seen.add(key)


def check_jobs(doc: Doc) -> Iterator[Problem]:
    """Unique ids, known types, usable GPU counts, a consistent ``current`` and launch fields."""
    types = _gpu_types(doc)
    settings = _settings(types)
    node_sizes = sorted({g["gpus_per_node"] for g in types.values()})
    profiled_counts: dict[str, set[int]] = {}
    for p in doc["profiles"]:
        profiled_counts.setdefault(p["type"], set()).add(p["gpus"])
    ids = {j["id"] for j in doc["jobs"]}
    seen: set[str] = set()
    for i, job in enumerate(doc["jobs"]):
        path = f"jobs[{i}]"
        if job["id"] in seen:
            yield Problem("duplicate-job-id", f"{path}.id", f"job id {job['id']!r} is used twice")
        seen.add(job["id"])
        known_type = job["type"] in profiled_counts
        if not known_type:
            yield Problem("unknown-job-type", f"{path}.type", f"no profile describes job type {job['type']!r}")
        yield from _check_gpu_counts(job, path, node_sizes, profiled_counts.get(job["type"]))
        if job.get("current"):
            yield from _check_current(job["current"], f"{path}.current", job["id"], ids, types, settings)
        yield from _check_launch_fields(job, path)
        if job.get("min_steps", 0) > job["remaining_steps"]:
            msg = f"min_steps {job['min_steps']:g} is more than the job's remaining steps {job['remaining_steps']:g}"
            yield Problem("min-steps-above-remaining", f"{path}.min_steps", msg)


def _check_gpu_counts(job: Doc, path: str, node_sizes: list[int], profiled: set[int] | None) -> Iterator[Problem]:
    """A job's GPU counts: none twice, each placeable on some node size, each profiled (for a known type)."""
    repeated = dict(_repeats(job["gpus"]))
    for k, n in enumerate(job["gpus"]):
        if k in repeated:
            yield Problem("duplicate-gpu-count", f"{path}.gpus[{k}]", f"GPU count {n} is listed twice")
        elif not any(gpu_count_fits_type(n, size) for size in node_sizes):
            yield Problem(
                "bad-gpu-count",
                f"{path}.gpus[{k}]",
                f"{n} GPUs is neither a power of two up to a node ({node_sizes} GPUs per node) nor a multiple of one",
            )
        elif profiled is not None and n not in profiled:
            yield Problem(
                "no-profile", f"{path}.gpus[{k}]", f"no GPU type has a profile for {job['type']!r} on {n} GPUs"
            )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_NODE_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")  # as node_name writes it: no sign, no leading zero


def _check_launch_fields(job: Doc, path: str) -> Iterator[Problem]:
    """The optional fields a launcher needs: ``command``, ``workdir``, ``env``, ``user``."""
    command = job.get("command") or []
    if command and command[0] == "":
        yield Problem("bad-command", f"{path}.command[0]", "the program to run is empty")
    for k, word in enumerate(command):
        if "\0" in word:
            yield Problem("bad-command", f"{path}.command[{k}]", "holds a NUL character, which no argv can carry")
    workdir = job.get("workdir")
    if workdir is not None and (not workdir.startswith("/") or "\0" in workdir):
        yield Problem("bad-workdir", f"{path}.workdir", f"{workdir!r} is not an absolute path")
    for name, value in (job.get("env") or {}).items():
        if not _ENV_NAME.fullmatch(name):
            yield Problem("bad-env-name", f"{path}.env.{name}", f"{name!r} is not a shell variable name")
        elif "\0" in value:
            yield Problem("bad-command", f"{path}.env.{name}", "holds a NUL character, which no environment can carry")
    user = job.get("user")
    if user is not None and not _USER.fullmatch(user):
        yield Problem("bad-user", f"{path}.user", f"{user!r} is not a user name or numeric user id")


def _check_current(
    cur: Doc, path: str, job_id: str, ids: set[str], types: dict[str, Doc], settings: dict[str, set[int]]
) -> Iterator[Problem]:
    """A running job's GPU type, setting, count, partner and placement."""
    g = types.get(cur["gpu_type"])
    if g is None:
        yield Problem("unknown-gpu-type", f"{path}.gpu_type", f"unknown GPU type {cur['gpu_type']!r}")
        return
    if cur["setting"] not in settings[g["name"]]:
        yield Problem(
            "setting-not-listed",
            f"{path}.setting",
            f"setting {cur['setting']} is not among {g['name']}'s settings {g['settings']}",
        )
    if not gpu_count_fits_type(cur["gpus"], g["gpus_per_node"]):
        yield Problem("bad-gpu-count", f"{path}.gpus", f"{cur['gpus']} GPUs cannot be placed on {g['name']} nodes")
    partner = cur.get("shares_with")
    if partner is not None and (partner == job_id or partner not in ids):
        yield Problem("unknown-partner", f"{path}.shares_with", f"{partner!r} is not another job of this instance")
    if cur.get("placement"):
        yield from _check_current_placement(cur, path, g)


def _is_node_of(node: str, g: Doc) -> bool:
    """Whether ``node`` names a node of GPU type ``g``: ``<type>-0`` .. ``<type>-(N-1)``.

    Names as :func:`planner.contracts.domain.node_name` writes them; the type's nodes are not listed (they may be many).
    """
    prefix = f"{g['name']}-"
    if not node.startswith(prefix):
        return False
    index = node[len(prefix) :]
    return _NODE_INDEX.fullmatch(index) is not None and int(index) < g["nodes"]


def _check_current_placement(cur: Doc, path: str, g: Doc) -> Iterator[Problem]:
    """Each part names a node of the type and GPUs that exist on it; the parts hold the job's GPU count."""
    total = 0
    for k, part in enumerate(cur["placement"]):
        if not _is_node_of(part["node"], g):
            yield Problem(
                "bad-placement", f"{path}.placement[{k}].node", f"no node {part['node']!r} of type {g['name']}"
            )
        for m, idx in enumerate(part["gpu_indices"]):
            if idx >= g["gpus_per_node"]:
                yield Problem(
                    "bad-placement",
                    f"{path}.placement[{k}].gpu_indices[{m}]",
                    f"GPU index {idx} does not exist on a {g['gpus_per_node']}-GPU node",
                )
        total += len(set(part["gpu_indices"]))
    if total != cur["gpus"]:
        yield Problem("bad-placement", f"{path}.placement", f"places {total} GPUs but the job has {cur['gpus']}")


def instance_problems(doc: Doc) -> list[Problem]:
    """All semantic problems of a document that already passed the JSON Schema.

    At most :data:`~planner.contracts.problems.MAX_REPORTED_PROBLEMS`, then one ``more-problems`` entry.
    """
    return capped(itertools.chain(check_gpu_types(doc), check_profiles(doc), check_pairs(doc), check_jobs(doc)))
