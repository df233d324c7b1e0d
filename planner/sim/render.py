"""Rich rendering for ``wattplan simulate``: a progress bar per policy (or, quiet, a log line), a summary table."""

from __future__ import annotations

from typing import Any

from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

WORK_STEPS = 1000
"""A progress task's total: the bar advances by thousandths of the workload's reference work."""


def progress_display(console: Any) -> Progress:
    """Per policy: rounds and jobs done, a bar of the reference work done, elapsed time and the ETA.

    The bar follows the work done (GPU-seconds at reference speed, so a long job counts for what it costs;
    :class:`planner.control.slurm_replay.ReplayProgress`) and rich estimates the time left from its recent speed.
    """
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=16),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
