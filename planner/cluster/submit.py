"""``wattplan cluster submit``: a trace's jobs sent to the emulated cluster's Slurm at their arrival times.

The jobs are the replay's (:func:`planner.sim.replay.prepare` on the same trace, selection and cluster), so a
live run and ``wattplan simulate`` see the same workload: ids, types, arrivals, steps, requested GPUs. The first
job arrives when the submitter starts, or at ``--first-at-s`` on the cluster's clock (a fixed idle time after
``cluster up``, which ``simulate --up-before-s`` replays); the others follow at their trace offsets on the emulated
clock.

Each job is an ``sbatch`` of the stand-in trainer (:mod:`planner.cluster.trainer`), ``--requeue``, one task,
``--gres=gpu:N`` on one node (``N`` = the request) or ``gpu:K`` on ``N / K`` nodes for a request above a node's
``K`` GPUs. Managed jobs opt in with ``--comment=wattplan:type=T;steps=S`` and wait held (``--hold``) for the
agent; ``--unmanaged`` submits them as a user would, for Slurm's own scheduling (first come, first served with
backfill) at the GPUs' default power limit. With ``--maxq`` too, each unmanaged job runs at the ``maxq`` baseline's
setting for its type (:mod:`planner.core.maxq`, from the shipped profiles), set by the nodes' prolog when the job
starts, as a site's prolog sets NVIDIA's MaxQ profile: the job is submitted held, its ``settings/JOBID.conf`` is
written (the same file the agent writes for a managed job), then it is released. Only on a cluster of one GPU type
(a prolog table keyed by the node's type would be needed otherwise).

The submitter runs in the background (its PID in ``submit/submitter.pid``), appends one row per job to
``submit/submitted.csv`` as it goes (``slurm_job_id,trace_job_id,job_type,gpus,total_steps,arrival_s,
submit_unix,managed``; ``arrival_s`` on the emulated clock) and writes ``submit/done`` after the last one.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.cluster.layout import ClusterLayout, slurm_env, write_json_atomic
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.contracts.rules import RoundRules

if TYPE_CHECKING:
    from wattplan.planner.cluster.options import SubmitOptions  # the submitter process loads no solver

SUBMITTED_COLUMNS = (
    "slurm_job_id",
    "trace_job_id",
    "job_type",
    "gpus",
    "total_steps",
    "arrival_s",
    "submit_unix",
    "managed",
)


@dataclass(frozen=True, slots=True)
class Submission:
    """One job to submit: its trace id, type, requested GPUs, whole steps and offset after the first (s)."""

    trace_job_id: str
    job_type: str
    gpus: int
    total_steps: int
    offset_s: float


def submissions(
    root: Path, trace: Path, options: SubmitOptions, rules: RoundRules | None = None
) -> tuple[list[Submission], ClusterLayout]:
    """The replay's jobs of ``trace`` on the cluster in ``root`` (its GPUs and truth), as submissions.

    ``options``: the selection (``--trace-format``, ``--vc``, ``--start-s``, ``--end-s``, ``--max-jobs``,
    ``--seed``); ``rules``: the round's rules of the replay's selection (default :class:`RoundRules`).

    Raises ValueError when no cluster was started in ``root``; InputError for a bad trace or selection.
    """
    from wattplan.planner.sim.replay import ReplaySpec, prepare

    layout = ClusterLayout(root)
    try:
        manifest = layout.read_manifest()
    except FileNotFoundError:
        raise ValueError(f"--dir {root}: no cluster.json; start one with wattplan cluster up") from None
    counts: dict[str, int] = {}
    for n in manifest["nodes"]:
        counts[n["gpu_type"]] = counts.get(n["gpu_type"], 0) + int(n["gpus"])
    truth = manifest.get("truth")
    spec = ReplaySpec(
        trace=trace,
        cluster=",".join(f"{t}:{c}" for t, c in counts.items()),
        fmt=options.trace_format,  # type: ignore[arg-type]
        virtual_cluster=options.vc,
        start_s=options.start_s,
        end_s=options.end_s,
        max_jobs=options.max_jobs,
        rules=rules or RoundRules(),
        seed=options.seed,
        gpus_per_node=int(manifest["gpus_per_node"]),
        truth=None if truth is None else Path(truth),
    )
    workload, _ctx = prepare(spec)
    first = min(j.arrival_s for j in workload.jobs)
    jobs = [
        Submission(j.id, j.type, j.requested_gpus, max(1, math.ceil(j.total_steps)), j.arrival_s - first)
        for j in sorted(workload.jobs, key=lambda j: j.arrival_s)
    ]
    return jobs, layout


@dataclass(frozen=True, slots=True)
class PrologTable:
    """The setting an unmanaged job of each type starts at (``--maxq``), on the cluster's one GPU type."""

    gpu_type: str
    unit: str
    by_type: dict[str, int]

    def setting_of(self, job: Submission, slurm_id: str) -> JobSetting | None:
        """The job's settings file, None for a type the table does not hold (it runs at the default)."""
        value = self.by_type.get(job.job_type)
        if value is None:
            return None
        return JobSetting(slurm_id, 0, self.gpu_type, job.gpus, value, self.unit)  # type: ignore[arg-type]


def maxq_table(layout: ClusterLayout) -> PrologTable:
    """The ``maxq`` settings of the shipped profiles on the cluster's GPU type (ValueError naming a mixed cluster)."""
    from wattplan.planner.core.maxq import maxq_settings
    from wattplan.planner.profile_library.library import load_profile_library

    types = sorted({n["gpu_type"] for n in layout.read_manifest()["nodes"]})
    if len(types) != 1:
        raise ValueError(f"--maxq: the cluster has GPU types {', '.join(types)}; it needs one (a prolog table by type)")
    library = load_profile_library(None)
    unit = str(library.gpu_types.get(types[0], {}).get("setting_unit", "power_limit_w"))
    table = {t: s for (t, g), s in maxq_settings(library.profiles).items() if g == types[0]}
    return PrologTable(types[0], unit, table)


def sbatch_argv(
    layout: ClusterLayout, job: Submission, managed: bool, gpus_per_node: int, restart_s: float
) -> list[str]:
    """The ``sbatch`` command of one job (module docstring)."""
    nodes = max(1, math.ceil(job.gpus / gpus_per_node))
    per_node = job.gpus // nodes
    trainer = shlex.join(
        [
            sys.executable,
            "-m",
            "wattplan.planner.cluster.trainer",
            "--dir",
            str(layout.root),
            "--job-type",
            job.job_type,
            "--steps",
            str(job.total_steps),
            "--restart-s",
            f"{restart_s:g}",
        ]
    )
    argv = [
        "sbatch",
        "--parsable",
        "--requeue",
        f"--job-name=wp-{job.trace_job_id}",
        "--ntasks=1",
        f"--nodes={nodes}",
        f"--gres=gpu:{per_node}",
        f"--output={layout.work_dir}/slurm-%j.out",
        "--open-mode=append",
        f"--chdir={layout.work_dir}",
    ]
    if managed:
        argv += ["--hold", f"--comment=wattplan:type={job.job_type};steps={job.total_steps}"]
    return [*argv, "--wrap", f"exec {trainer}"]


def run_submitter(
    layout: ClusterLayout,
    jobs: Sequence[Submission],
    managed: bool,
    prolog: PrologTable | None = None,
    first_at_s: float | None = None,
) -> int:
    """Submit ``jobs`` at their offsets (blocking); 0 when every job was accepted, 1 otherwise.

    The offsets count from now, or from the cluster's emulated time ``first_at_s`` (s since ``cluster up``) when
    that is later. With ``prolog`` (unmanaged jobs only) each job is submitted held, its settings file written,
    then released.
    """
    manifest = layout.read_manifest()
    clock = layout.clock()
    env = slurm_env(manifest)
    out = layout.submit_dir / "submitted.csv"
    new = not out.exists()
    failures = 0
    start_unix = time.time()
    if first_at_s is not None:
        start_unix = max(start_unix, clock.unix_at(first_at_s))
    with out.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(SUBMITTED_COLUMNS)
        for job in sorted(jobs, key=lambda j: j.offset_s):
            due = start_unix + clock.real_s(job.offset_s)
            while (wait := due - time.time()) > 0:
                time.sleep(min(wait, 0.5))
            argv = sbatch_argv(
                layout, job, managed, int(manifest["gpus_per_node"]), float(manifest.get("restart_s", 0.0))
            )
            if prolog is not None:
                argv = [argv[0], "--hold", *argv[1:]]
            unix = time.time()
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                failures += 1
                print(f"submit {job.trace_job_id}: sbatch failed: {done.stderr.strip()}", file=sys.stderr, flush=True)
                continue
            slurm_id = done.stdout.strip().split(";")[0]
            if prolog is not None and not _released(layout, prolog, job, slurm_id, env):
                failures += 1
            writer.writerow(
                [
                    slurm_id,
                    job.trace_job_id,
                    job.job_type,
                    job.gpus,
                    job.total_steps,
                    f"{clock.at(unix):.3f}",
                    f"{unix:.3f}",
                    int(managed),
                ]
            )
            f.flush()
    (layout.submit_dir / "done").write_text(f"{time.time():.3f}\n")
    return 1 if failures else 0


def _released(layout: ClusterLayout, prolog: PrologTable, job: Submission, slurm_id: str, env: dict[str, str]) -> bool:
    """Write a held job's settings file (when its type has a setting) and release it; False when Slurm refused."""
    setting = prolog.setting_of(job, slurm_id)
    if setting is not None:
        layout.settings_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(layout.setting_file(slurm_id), setting.to_text())
    done = subprocess.run(["scontrol", "release", slurm_id], env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        print(f"submit {job.trace_job_id}: release failed: {done.stderr.strip()}", file=sys.stderr, flush=True)
    return done.returncode == 0


def start_submitter(
    layout: ClusterLayout,
    jobs: Sequence[Submission],
    managed: bool,
    prolog: PrologTable | None = None,
    first_at_s: float | None = None,
) -> int:
    """Write the job list (and ``prolog``'s table) and start the submitter in the background; its PID.

    ``first_at_s``: :func:`run_submitter`'s.
    """
    layout.submit_dir.mkdir(parents=True, exist_ok=True)
    layout.work_dir.mkdir(parents=True, exist_ok=True)
    layout.log_dir.mkdir(parents=True, exist_ok=True)
    (layout.submit_dir / "done").unlink(missing_ok=True)
    jobs_file = layout.submit_dir / "jobs.json"
    doc = {
        "managed": managed,
        "jobs": [asdict(j) for j in jobs],
        "prolog": None if prolog is None else asdict(prolog),
        "first_at_s": first_at_s,
    }
    write_json_atomic(jobs_file, doc)
    with open(layout.log_dir / "submitter.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wattplan.planner.cluster.submit", "--dir", str(layout.root)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    (layout.submit_dir / "submitter.pid").write_text(f"{proc.pid}\n")
    return proc.pid


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m wattplan.planner.cluster.submit --dir DIR``: submit ``submit/jobs.json``."""
    parser = argparse.ArgumentParser(description="Submit an emulated cluster's job list at its arrival times.")
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args(argv)
    layout = ClusterLayout(args.dir)
    doc = json.loads((layout.submit_dir / "jobs.json").read_text())
    jobs = [Submission(**j) for j in doc["jobs"]]
    prolog = PrologTable(**doc["prolog"]) if doc.get("prolog") else None
    first_at_s = doc.get("first_at_s")
    return run_submitter(layout, jobs, bool(doc["managed"]), prolog, None if first_at_s is None else float(first_at_s))


if __name__ == "__main__":
    sys.exit(main())
