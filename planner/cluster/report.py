"""What one run on an emulated cluster cost and how long its jobs took: ``wattplan cluster report``.

Sources (module docstring of :mod:`planner.cluster.layout` for the folder):

- ``submit/submitted.csv`` (written by the submitter): one row per job sent, columns :data:`SUBMITTED_COLUMNS`;
  ``arrival_s`` is the trace arrival the submitter honoured (emulated s), ``submit_unix`` when ``sbatch`` ran;
- ``emu/done/JOBID.json`` (written by the stand-in trainer when a job completes): ``{"end_unix": ..., "steps": ...}``;
- Prometheus, over the run ``[start_unix, end_unix]`` (default: the manifest's ``t0_unix`` to now): the energy
  counters (:mod:`planner.agent.observations`) and the first sample of ``wattplan_job_steps_done`` of each job.

Definitions (times in emulated seconds through the cluster's :class:`~planner.cluster.layout.Clock`):

- ``start_s``: the time of the job's first ``wattplan_job_steps_done`` sample (its trainer's first scrape; later
  than the Slurm start by at most one scrape interval). Not Slurm's ``start_time``, which a requeue resets;
- ``end_s``: the done file's ``end_unix``; ``jct_s = end_s - arrival_s`` (as :mod:`planner.sim.metrics`);
- ``avg_jct_s``, ``p95_jct_s``: the mean and the 95th percentile (linear interpolation between order statistics,
  numpy's default, the definition of :mod:`planner.sim.metrics`) of the completed jobs' JCTs;
- ``gpu_energy_kwh``: the increase of every GPU's ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (mJ) over the run,
  ``node_energy_kwh`` that of every ``wattplan_node_energy_joules_total`` (J), ``energy_kwh`` their sum;
  emulated J / 3.6e6. By default the counters are taken to start at 0 when the emulator starts
  (``counters_from_zero``), so energy before Prometheus' first scrape counts too; a counter reset counts from 0;
- a job's ``energy_kwh``: its apportioned GPU energy over the run, i.e. over its life (the energy of each GPU
  while the job is in its ``hpc_job`` label, split among co-located jobs by ``weights``, equally by default);
- ``state``: ``completed`` (a done file), ``running`` (a steps sample at the end of the run), ``interrupted``
  (seen running once, neither now nor done: requeued, preempted, cancelled or failed), ``not-started``.

Missing data is never filled in: a field that cannot be known is null and ``warnings`` says why.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.agent.observations import STEPS_DONE, Observation, job_ids, observe
from wattplan.planner.agent.prometheus import PrometheusClient, PrometheusError, Queries, Series, with_retries
from wattplan.planner.cluster.layout import Clock, ClusterLayout
from wattplan.planner.cluster.submit import SUBMITTED_COLUMNS
from wattplan.planner.sim.metrics import J_PER_KWH, jct_stats

REPORT_FORMAT = "wattplan-cluster-report/1"
MAX_WARNINGS = 200


class ReportError(Exception):
    """The folder holds no readable cluster manifest: nothing can be reported; the message says why."""


@dataclass(frozen=True, slots=True)
class Submitted:
    """One row of ``submit/submitted.csv``; a field that did not read is None (and warned about)."""

    slurm_job_id: str
    trace_job_id: str | None
    job_type: str | None
    gpus: int | None
    total_steps: int | None
    arrival_s: float | None
    submit_unix: float | None
    managed: bool | None


@dataclass(frozen=True, slots=True)
class Done:
    """One ``emu/done/JOBID.json``: when the job completed (Unix s) and its steps; None where unreadable."""

    end_unix: float | None
    steps: float | None


# ---------------------------------------------------------------------------------------------- files


def _number(text: str, integer: bool = False) -> float | int | None:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_submitted(path: Path, warnings: list[str]) -> list[Submitted]:
    """The rows of ``submitted.csv``; unreadable fields are None, a row without a job id is skipped (warned)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
            header = rows[0].keys() if rows else set()
    except FileNotFoundError:
        warnings.append(f"{path} is missing: no job is known (was anything submitted?)")
        return []
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        warnings.append(f"{path} cannot be read: {err}")
        return []
    missing = [c for c in SUBMITTED_COLUMNS if c not in header]
    if rows and missing:
        warnings.append(f"{path}: columns missing: {', '.join(missing)}")
    out: list[Submitted] = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):

        def field(name: str, parse: Callable[[str], Any], row: dict[str, str] = row, line: int = line) -> Any:
            raw = (row.get(name) or "").strip()
            value = parse(raw) if raw else None
            if value is None and name in header:
                warnings.append(f"{path}:{line}: {name} {raw[:40]!r} does not read")
            return value

        job = (row.get("slurm_job_id") or "").strip()
        if not job:
            warnings.append(f"{path}:{line}: no slurm_job_id; row skipped")
            continue
        if job in seen:
            warnings.append(f"{path}:{line}: job {job} listed again; row skipped")
            continue
        seen.add(job)
        out.append(
            Submitted(
                job,
                field("trace_job_id", str),
                field("job_type", str),
                field("gpus", lambda s: _number(s, True)),
                field("total_steps", lambda s: _number(s, True)),
                field("arrival_s", _number),
                field("submit_unix", _number),
                field("managed", lambda s: {"1": True, "true": True, "0": False, "false": False}.get(s.lower())),
            )
        )
    return out


def done_file(layout: ClusterLayout, job_id: str) -> Path:
    """``emu/done/JOBID.json``."""
    return layout.emu_dir / "done" / f"{job_id}.json"


def read_done(path: Path, warnings: list[str]) -> Done | None:
    """The done file of a job, None when absent (the job has not completed); bad fields are None (warned)."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        warnings.append(f"{path} cannot be read: {err}")
        return Done(None, None)
    if not isinstance(doc, dict):
        warnings.append(f"{path} is not a JSON object")
        return Done(None, None)
    values: list[float | None] = []
    for key in ("end_unix", "steps"):
        v = doc.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            values.append(float(v))
        else:
            warnings.append(f"{path}: {key} {json.dumps(v)[:40]} is not a number")
            values.append(None)
    return Done(values[0], values[1])


# ---------------------------------------------------------------------------------------------- pure parts


def first_seen(series: Iterable[Series]) -> dict[str, float]:
    """Per job id (``hpc_job`` label) the Unix time of its first sample among ``series``."""
    out: dict[str, float] = {}
    for s in series:
        if not s.points:
            continue
        for job in job_ids(s.labels.get("hpc_job")):
            out[job] = min(out.get(job, math.inf), s.points[0][0])
    return out


def _kwh(joules: float | None) -> float | None:
    return None if joules is None else joules / J_PER_KWH


def _job_energy(observation: Observation | None, job: str, state: str) -> float | None:
    """A job's apportioned energy (J): None without Prometheus or when no energy sample names a job that ran."""
    if observation is None:
        return None
    win = observation.job(job)
    if win is not None:
        return win.energy_j
    return 0.0 if state == "not-started" else None


def build_report(
    clock: Clock,
    submitted: list[Submitted],
    done: Mapping[str, Done],
    observation: Observation | None,
    starts_unix: Mapping[str, float],
    running: set[str],
    start_unix: float,
    end_unix: float,
    warnings: list[str],
) -> dict[str, Any]:
    """The report document from what was read (pure; module docstring). ``observation`` None: Prometheus failed."""
    jobs: list[dict[str, Any]] = []
    jcts: list[float] = []
    for sub in submitted:
        job = sub.slurm_job_id
        d = done.get(job)
        start = starts_unix.get(job)
        end_s = clock.at(d.end_unix) if d is not None and d.end_unix is not None else None
        jct = end_s - sub.arrival_s if end_s is not None and sub.arrival_s is not None else None
        if d is not None and jct is None:
            warnings.append(f"job {job} completed but its JCT is unknown (end or arrival missing)")
        if jct is not None:
            jcts.append(jct)
        if d is not None:
            state = "completed"
        elif job in running:
            state = "running"
        elif start is not None:
            state = "interrupted"
        else:
            state = "not-started"
        win = observation.job(job) if observation is not None else None
        if observation is not None and win is None and state != "not-started":
            warnings.append(f"job {job}: no GPU energy sample names it in hpc_job")
        steps = d.steps if d is not None and d.steps is not None else (win.steps_t1 if win is not None else None)
        jobs.append(
            {
                "id": job,
                "trace_job_id": sub.trace_job_id,
                "job_type": sub.job_type,
                "gpus": sub.gpus,
                "managed": sub.managed,
                "arrival_s": sub.arrival_s,
                "submit_s": clock.at(sub.submit_unix) if sub.submit_unix is not None else None,
                "start_s": clock.at(start) if start is not None else None,
                "end_s": end_s,
                "jct_s": jct,
                "energy_kwh": _kwh(_job_energy(observation, job, state)),
                "steps": steps,
                "total_steps": sub.total_steps,
                "state": state,
            }
        )
    known = {s.slurm_job_id for s in submitted}
    if observation is not None:
        strangers = [j.job_id for j in observation.jobs if j.job_id not in known]
        if strangers:
            warnings.append(f"jobs seen in Prometheus but not in submitted.csv: {', '.join(strangers[:20])}")
        warnings.extend(observation.notes)
        if not observation.scrape.ok:
            warnings.append(f"at the end of the run: {observation.scrape.reason}")
        if not observation.gpus:
            warnings.append("Prometheus has no GPU energy samples for the run")
        if not observation.nodes:
            warnings.append("Prometheus has no node energy samples for the run")
    gpu_j = observation.gpu_energy_j if observation is not None and observation.gpus else None
    node_j = observation.node_energy_j if observation is not None and observation.nodes else None
    idle_j = observation.idle_gpu_j if observation is not None and observation.gpus else None
    total_j = gpu_j + node_j if gpu_j is not None and node_j is not None else None
    avg, p95 = jct_stats(jcts)
    return {
        "format": REPORT_FORMAT,
        "window": {
            "start_unix": start_unix,
            "end_unix": end_unix,
            "start_s": clock.at(start_unix),
            "end_s": clock.at(end_unix),
        },
        "energy_kwh": _kwh(total_j),
        "gpu_energy_kwh": _kwh(gpu_j),
        "node_energy_kwh": _kwh(node_j),
        "gpu_idle_energy_kwh": _kwh(idle_j),
        "avg_jct_s": avg,
        "p95_jct_s": p95,
        "jobs_total": len(submitted),
        "jobs_completed": sum(1 for j in jobs if j["state"] == "completed"),
        "jobs": jobs,
        "warnings": warnings[:MAX_WARNINGS]
        + ([f"... and {len(warnings) - MAX_WARNINGS} more warnings"] if len(warnings) > MAX_WARNINGS else []),
    }


# ---------------------------------------------------------------------------------------------- the report


def cluster_report(
    layout: ClusterLayout,
    prometheus_url: str,
    client: Queries | None = None,
    start_unix: float | None = None,
    end_unix: float | None = None,
    weights: Mapping[str, float] | None = None,
    counters_from_zero: bool = True,
    attempts: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The report of the run in ``layout`` (module docstring) as a JSON-ready dict.

    ``client`` defaults to a :class:`~planner.agent.prometheus.PrometheusClient` of ``prometheus_url``; the run is
    ``[start_unix, end_unix]`` (default: the manifest's ``t0_unix`` to now). Prometheus failing (after
    ``attempts`` tries) leaves the energies and starts null with a warning. Raises :class:`ReportError` when the
    folder has no readable manifest.
    """
    try:
        clock = layout.clock()
    except FileNotFoundError:
        raise ReportError(f"{layout.manifest} is missing: no cluster was started in {layout.root}") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ReportError(f"{layout.manifest} cannot be read: {err!r}") from None
    start = clock.t0_unix if start_unix is None else start_unix
    warnings: list[str] = []
    submitted = read_submitted(layout.submit_dir / "submitted.csv", warnings)
    done = {s.slurm_job_id: d for s in submitted if (d := read_done(done_file(layout, s.slurm_job_id), warnings))}
    if end_unix is not None:
        end = end_unix
    elif submitted and len(done) == len(submitted) and all(d.end_unix is not None for d in done.values()):
        end = max(d.end_unix or 0.0 for d in done.values())  # the run ends with its last job, not with the report
    else:
        end = time.time()
    observation: Observation | None = None
    starts: dict[str, float] = {}
    running: set[str] = set()
    try:
        queries = client if client is not None else PrometheusClient(prometheus_url)
        observation = with_retries(
            lambda: observe(queries, start, end, weights, from_zero=counters_from_zero),
            attempts=attempts,
            sleep=sleep,
        )
        starts = first_seen(with_retries(lambda: queries.raw(STEPS_DONE, start, end), attempts=attempts, sleep=sleep))
        running = {j.job_id for j in observation.jobs if j.steps_t1 is not None}
    except PrometheusError as err:
        warnings.append(f"{err}: energies and start times are unknown")
        observation = None
    return build_report(clock, submitted, done, observation, starts, running, start, end, warnings)
