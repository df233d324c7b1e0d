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
* Checked before anything is written (issue 41): the instance made is checked by every check of ``wattplan
  instance check`` (the JSON Schema, finite numbers, :mod:`planner.contracts.instance_checks`), and each problem
  is reported against the file and field it came from: ``jobs[3].weight`` as the job list's ``line 5.weight``
  (or ``jobs[3].weight (line 12)`` of a YAML list), ``gpu_types[0].nodes`` and ``round.budget_j`` as the cluster
  file's ``gpu_types[0].nodes`` and ``power_cap_kw``, a profile or pair as the library's. An instance that
  ``instance check`` would refuse is never made, so ``launch`` never refuses it later naming only the instance.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.domain import GpuType, Instance, Job, RoundSpec
from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
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
            cluster.at(f"gpu_types[{k}].name"),
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
    where = job.at("measured_on") if job.measured_on else job.at("remaining_s")
    on = repr(job.measured_on) if job.measured_on else f"any of {', '.join(types)}"
    return None, Problem(
        "no-profile", where, f"no profile of {job.type!r} on {job.gpus} GPUs of {on} to turn seconds into steps"
    )


def _job(job: JobRequest, lib: ProfileLibrary, gpu_types: Sequence[GpuType]) -> tuple[Job | None, list[Problem]]:
    names = [g.name for g in gpu_types]
    if lib.max_count(job.type) == 0:
        known = ", ".join(sorted({p.type for p in lib.profiles}))
        return None, [
            Problem("unknown-job-type", job.at("type"), f"{job.type!r} is not in the library (types: {known})")
        ]
    problems: list[Problem] = []
    profiled = lib.counts(job.type, names)
    path = job.at("gpus") if job.allowed_gpus is None else job.at("allowed_gpus")
    for n in job.counts:
        if n not in profiled:
            have = ", ".join(map(str, sorted(profiled))) or "none"
            problems.append(
                Problem(
                    "no-profile",
                    path,
                    f"{job.type!r} has no profile on {n} GPUs of {', '.join(names)} (profiled counts: {have})",
                )
            )
        elif not any(n <= g.total_gpus and n in lib.counts(job.type, [g.name]) for g in gpu_types):
            usable = ", ".join(f"{g.name}: {g.total_gpus}" for g in gpu_types)
            problems.append(
                Problem(
                    "no-capacity",
                    path,
                    f"{job.type!r} on {n} GPUs fits no GPU type of the cluster: usable GPUs (hosts not down and "
                    f"without unmanaged GPUs) are {usable}",
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


_INSTANCE_PATH = re.compile(r"(jobs|gpu_types|profiles|pairs)\[(\d+)\]\.?([A-Za-z_]*)(.*)|round\.(\w+)(.*)")
_ROUND_KEYS = {"duration_s": "round_s", "budget_j": "power_cap_kw", "objective": "objective"}
_CLUSTER_TYPE_KEYS = ("name", "nodes", "gpus_per_node", "node_power_w")


@dataclasses.dataclass(frozen=True)
class InstanceOrigins:
    """Where the parts of a made instance came from: the job list's requests, the cluster file, the library."""

    requests: Sequence[JobRequest]
    cluster: ClusterFile
    sources: tuple[str, str]
    library: str

    def job_field(self, request: JobRequest, field: str, rest: str) -> str:
        """The job list's path of instance field ``field`` (``rest``: what follows it, ``[1]`` or ``.NAME``)."""
        if field in ("gpus", "requested_gpus"):
            return request.at("allowed_gpus" if field == "gpus" and request.allowed_gpus else "gpus")
        if field == "remaining_steps":
            return request.at("remaining_steps" if request.remaining_steps is not None else "remaining_s")
        if field in ("command", "env") and rest:
            return request.at(field).replace(f".{field}", f".{field}{rest}", 1)
        return request.at(field) if field else request.where

    def place(self, problem: Problem) -> tuple[str, Problem]:
        """The file ``problem`` (about the made instance) belongs to, and the problem with that file's path."""
        found = _INSTANCE_PATH.fullmatch(problem.path)
        jobs, cluster, library = self.sources[0], self.sources[1], self.library
        if found is None:
            return jobs, problem
        table, index, field, rest, round_key, _ = found.groups()
        if round_key is not None:
            key = _ROUND_KEYS.get(round_key)
            path = self.cluster.at(key) if key else f"round.{round_key} (the round's rules)"
            return cluster, dataclasses.replace(problem, path=path)
        k = int(index)
        if table == "jobs" and k < len(self.requests):
            return jobs, dataclasses.replace(problem, path=self.job_field(self.requests[k], field, rest))
        if table == "gpu_types" and field in _CLUSTER_TYPE_KEYS:
            return cluster, dataclasses.replace(problem, path=self.cluster.at(f"gpu_types[{k}].{field}"))
        return library, problem


def check_made_instance(inst: Instance, origins: InstanceOrigins) -> None:
    """Run every check of ``instance check`` on ``inst``; :class:`InputError` naming the files at fault.

    Problems are grouped by the file they belong to (:meth:`InstanceOrigins.place`); when more than one file is at fault
    the error names them all and each path starts with its file's name.
    """
    try:
        parse_instance(instance_to_doc(inst), "instance")
    except InputError as exc:
        placed = [origins.place(p) for p in exc.problems]
    else:
        return
    files = list(dict.fromkeys(source for source, _ in placed))
    if len(files) == 1:
        raise InputError(files[0], capped(p for _, p in placed))
    named = (dataclasses.replace(p, path=f"{Path(source).name}: {p.path}") for source, p in placed)
    raise InputError(" and ".join(files), capped(named))


def instance_from_jobs(
    jobs: Sequence[JobRequest],
    cluster: ClusterFile,
    lib: ProfileLibrary,
    rules: RoundRules | None = None,
    sources: tuple[str, str] = ("jobs", "cluster"),
    library: str = "the profile library",
) -> Instance:
    """The round instance of ``jobs`` on ``cluster`` with ``lib`` (module docstring).

    ``rules`` gives the round's restart cost, least pair rate and ``delta`` (its length and objective come from the
    cluster file when it sets them). Raises :class:`InputError` naming the job-list file (``sources[0]``) with every
    job it cannot plan, or the cluster file (``sources[1]``) for a GPU type the library lacks; then every problem
    ``instance check`` would find in the instance, against the file (``library`` names the profile library) and
    field it came from (:func:`check_made_instance`).
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
    made = Instance(RoundSpec.from_rules(0, rules, budget), gpu_types, tuple(built), profiles, pairs, extra)
    check_made_instance(made, InstanceOrigins(jobs, cluster, sources, library))
    return made


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
    library = "the shipped profile library" if profiles_path is None else str(profiles_path)
    made = instance_from_jobs(requests, cluster, lib, rules, (str(jobs_path), str(cluster_path)), library)
    return made, added
