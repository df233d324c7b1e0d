"""Publish a training job's progress for ``wattplan agent``: one call in the training loop, the standard library only.

    from report_steps import report_steps       # this file, copied beside the training script or on PYTHONPATH
    ...
    report_steps(step)                          # every few hundred steps; cheap (one small file rewritten)

It writes ``wattplan_job_steps_done{hpc_job="<SLURM_JOB_ID>"} <steps>`` in Prometheus' text format to
``$WATTPLAN_PROGRESS_DIR/wattplan_job_<id>.prom`` (default ``/var/lib/node_exporter/textfile_collector``), atomically
(a temporary file renamed), so node_exporter's textfile collector (``--collector.textfile.directory``) serves it and
the Prometheus that scrapes the node hands it to the agent, which then measures the job's progress instead of
estimating it (docs/deploy-slurm.md). ``remove_steps()`` at the job's end (or the epilog) removes the file.

Outside a Slurm job (no ``SLURM_JOB_ID``) and on any error writing, it does nothing and returns False: a training
run never fails for its progress report.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEFAULT_DIR = "/var/lib/node_exporter/textfile_collector"
"""node_exporter's textfile folder unless ``WATTPLAN_PROGRESS_DIR`` names another."""
METRIC = "wattplan_job_steps_done"


def _path(job_id: str, folder: str | None) -> Path:
    return Path(folder or os.environ.get("WATTPLAN_PROGRESS_DIR") or DEFAULT_DIR) / f"wattplan_job_{job_id}.prom"


def _job_id(job_id: str | None) -> str | None:
    """The Slurm job id (``SLURM_JOB_ID`` unless given), if it is one: digits (an array's ``12_3`` too)."""
    value = job_id if job_id is not None else os.environ.get("SLURM_JOB_ID")
    return value if value and value.replace("_", "").isdigit() else None


def report_steps(steps: float, job_id: str | None = None, folder: str | None = None) -> bool:
    """Publish ``steps`` done so far for the job; True when written (module docstring)."""
    job = _job_id(job_id)
    if job is None or not (steps >= 0) or steps == float("inf"):
        return False
    path = _path(job, folder)
    text = f'# TYPE {METRIC} gauge\n{METRIC}{{hpc_job="{job}"}} {float(steps)!r}\n'
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def remove_steps(job_id: str | None = None, folder: str | None = None) -> bool:
    """Remove the job's progress file; True when there was one."""
    job = _job_id(job_id)
    if job is None:
        return False
    try:
        _path(job, folder).unlink()
    except OSError:
        return False
    return True
