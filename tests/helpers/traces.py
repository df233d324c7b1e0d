"""Gavel traces written by the length of each job, for the live tests on the emulated cluster."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wattplan.planner.profile_library.library import load_profile_library


def write_minutes_trace(path: Path, jobs: Sequence[tuple[str, int, float, float]]) -> None:
    """A Gavel trace of ``(job type, GPUs, minutes alone at the top setting on V100, arrival s)`` rows.

    Each job's steps are its minutes at the shipped library's fastest V100 setting for its GPU count.
    """
    lib = load_profile_library(None)
    lines = []
    for job_type, gpus, minutes, arrival in jobs:
        rate = max(
            (p for p in lib.profiles if (p.type, p.gpu_type, p.gpus) == (job_type, "v100", gpus)),
            key=lambda p: p.setting,
        ).steps_per_s
        lines.append(f"{job_type}\tcmd\t-n\t1\t{int(rate * minutes * 60)}\t{arrival:.6f}\t{gpus}")
    path.write_text("\n".join(lines) + "\n")
