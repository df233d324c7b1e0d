"""A round instance from an operator's job list, cluster file and profile library (``wattplan instance from-jobs``).

Rules (docs/design.md §9.9):

* GPU types: one per group of the cluster file, in file order, with ``N_g`` = its usable hosts (not down, no GPU
  held by an unmanaged job; :mod:`planner.rounds.cluster_file`), its ``K_g`` and node power; idle power, setting
  unit and settings from the library (:func:`~planner.rounds.builder.library_gpu_type`).
* Jobs, in list order: allowed counts ``A_j`` = ``allowed_gpus`` if given, else the request alone (a 4-GPU job
  gets 4 GPUs, never 1 or 8, unless the operator says it is elastic); each count must be profiled for the job's type
  on at least one of the cluster's GPU types. ``remaining_steps`` as given, or ``remaining_s * X`` with ``X`` the
  whole-job throughput (steps/s) of the type on ``gpus`` GPUs of ``measured_on`` (default: the first GPU type of
  the cluster with such a profile) at its top setting. ``requested_gpus``, command, workdir, user and env are
  carried into the instance. Jobs are waiting (``current`` null): the first round is a cold start; later rounds
  follow a plan (:mod:`planner.rounds.next_round`).
* Profiles and pairs: the library's entries of the listed job types on the cluster's types
  (:func:`~planner.rounds.builder.library_tables`).
* Round: length ``T`` = ``round_s``; budget ``B = cap * 1000 * T`` (J) from ``power_cap_kw``, else none; the
  objective from the file if given.
* ``extra``: ``hosts`` (plan node -> host, which ``wattplan launch`` uses when no ``--node-map`` is given),
  ``left_out`` (host -> why it is not planned), ``source`` (the two files).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.domain import GpuType, Instance, Job, RoundSpec
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.profile_library.library import ProfileLibrary
from wattplan.planner.rounds.builder import library_gpu_type, library_tables
from wattplan.planner.rounds.cluster_file import ClusterFile, read_cluster_file
from wattplan.planner.rounds.job_list import JobRequest, read_job_list

UNKNOWN_GPU_HINT = (
    "measure it (`wattplan profiles ingest` then `wattplan profiles fit`), or add its public specification to "
    "a copy of instances/profiles/gpu_specs.json and build a prior (`wattplan profiles prior --gpu NAME`)"
)


def cluster_gpu_types(cluster: ClusterFile, lib: ProfileLibrary, source: str) -> tuple[GpuType, ...]:
    """The instance's GPU types (module docstring); ``unknown-gpu-type`` naming the group and the next step."""
    problems = [
        Problem(
            "unknown-gpu-type",
            f"gpu_types[{k}].name",
            f"no profiles for GPU type {g.name!r} (the library has {', '.join(sorted(lib.gpu_types))}): "
            + UNKNOWN_GPU_HINT,
        )
        for k, g in enumerate(cluster.groups)
        if g.name not in lib.gpu_types
    ]
    if problems:
        raise InputError(source, problems)
    return tuple(
        library_gpu_type(lib, g.name, len(g.usable_hosts), g.gpus_per_node, g.node_power_w) for g in cluster.groups
    )


def _remaining_steps(job: JobRequest, lib: ProfileLibrary, types: Sequence[str]) -> tuple[float | None, Problem | None]:
    """``remaining_steps``, or ``remaining_s`` times the top-setting throughput on ``measured_on`` (steps)."""
    if job.remaining_steps is not None:
        return job.remaining_steps, None
    assert job.remaining_s is not None
    candidates = [job.measured_on] if job.measured_on else list(types)
    for g in candidates:
        rate = lib.top_throughput(job.type, g, job.gpus)
        if rate:
            return job.remaining_s * rate, None
    where = f"{job.where}.measured_on" if job.measured_on else f"{job.where}.remaining_s"
    on = repr(job.measured_on) if job.measured_on else f"any of {', '.join(types)}"
    return None, Problem(
        "no-profile", where, f"no profile of {job.type!r} on {job.gpus} GPUs of {on} to turn seconds into steps"
    )


def _job(job: JobRequest, lib: ProfileLibrary, gpu_types: Sequence[GpuType]) -> tuple[Job | None, list[Problem]]:
    names = [g.name for g in gpu_types]
    if lib.max_count(job.type) == 0:
        known = ", ".join(sorted({p.type for p in lib.profiles}))
        return None, [
            Problem("unknown-job-type", f"{job.where}.type", f"{job.type!r} is not in the library (types: {known})")
        ]
    problems: list[Problem] = []
    profiled = lib.counts(job.type, names)
    for n in job.counts:
        if n not in profiled:
            have = ", ".join(map(str, sorted(profiled))) or "none"
            path = f"{job.where}.gpus" if job.allowed_gpus is None else f"{job.where}.allowed_gpus"
            problems.append(
                Problem(
                    "no-profile",
                    path,
                    f"{job.type!r} has no profile on {n} GPUs of {', '.join(names)} (profiled counts: {have})",
                )
            )
    steps, missing = _remaining_steps(job, lib, names)
    if missing is not None:
        problems.append(missing)
    if problems or steps is None:
        return None, problems
    return (
        Job(
            id=job.id,
            type=job.type,
            remaining_steps=steps,
            gpus=job.counts,
            weight=job.weight,
            requested_gpus=job.gpus,
            command=job.command,
            workdir=job.workdir,
            env=job.env,
            user=job.user,
        ),
        [],
    )


def instance_from_jobs(
    jobs: Sequence[JobRequest],
    cluster: ClusterFile,
    lib: ProfileLibrary,
    rules: RoundRules | None = None,
    sources: tuple[str, str] = ("jobs", "cluster"),
) -> Instance:
    """The round instance of ``jobs`` on ``cluster`` with ``lib`` (module docstring).

    ``rules`` gives the round's restart cost, least pair rate and ``delta`` (its length and objective come from the
    cluster file when it sets them). Raises :class:`InputError` naming the job-list file (``sources[0]``) with every
    job it cannot plan, or the cluster file (``sources[1]``) for a GPU type the library lacks.
    """
    gpu_types = cluster_gpu_types(cluster, lib, sources[1])
    built: list[Job] = []
    problems: list[Problem] = []
    for request in jobs:
        job, found = _job(request, lib, gpu_types)
        problems += found
        if job is not None:
            built.append(job)
    if problems:
        raise InputError(sources[0], capped(problems))
    base = rules or RoundRules()
    rules = dataclasses.replace(base, duration_s=cluster.round_s, objective=cluster.objective or base.objective)
    budget = (
        None if cluster.power_cap_kw is None else float(math.floor(cluster.power_cap_kw * 1000.0 * cluster.round_s))
    )
    profiles, pairs = library_tables(lib, {j.type for j in built}, gpu_types)
    extra: dict[str, Any] = {
        "source": {"jobs": sources[0], "cluster": sources[1]},
        "hosts": cluster.host_map(),
    }
    if cluster.left_out():
        extra["left_out"] = cluster.left_out()
    return Instance(RoundSpec.from_rules(0, rules, budget), gpu_types, tuple(built), profiles, pairs, extra)


def read_operator_instance(
    jobs_path: Path, cluster_path: Path, profiles_path: Path | None, rules: RoundRules | None = None
) -> tuple[Instance, list[str]]:
    """Read a job list, a cluster file and a profile library (None: the shipped one) and make the instance.

    A GPU type of the cluster that the library lacks but the shipped spec table knows is planned from its prior
    (:func:`planner.profile_library.priors.with_prior_types`, design §9.8); the second value names those types.
    """
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profile_library.priors import with_prior_types

    cluster = read_cluster_file(cluster_path)
    requests = read_job_list(jobs_path)
    lib, added = with_prior_types(load_profile_library(profiles_path), [g.name for g in cluster.groups])
    return instance_from_jobs(requests, cluster, lib, rules, (str(jobs_path), str(cluster_path))), added
