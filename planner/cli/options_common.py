"""Options more than one command takes: the choices, the help texts and the ``Annotated`` option types.

Also the converters of their values (a profile library's path, a trace named by the user) and the ranges of the
number options of ``instance from-trace``, which ``plan`` shares. ``simulate`` and ``frontier`` take theirs from
their records (:mod:`planner.sim.options`), as ``plan`` does from its own.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from wattplan.planner.console.formats import OutputFormat
from wattplan.planner.contracts import defaults
from wattplan.planner.plan_options import MAX_BUDGET_J, MAX_POWER_CAP_W
from wattplan.planner.rounds.cluster_spec import MAX_NODE_POWER_W
from wattplan.planner.sim.options import library_path

OutputFormatOpt = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        metavar="FMT",
        help="Print as table, json (one document) or csv (a block per table, blank line between).",
    ),
]
"""The shared ``--format table|json|csv`` of every command that prints tables (planner.console.formats)."""


class TraceFormat(StrEnum):
    """Trace formats: ``auto`` chooses by file extension (``.csv`` is Philly)."""

    auto = "auto"
    gavel = "gavel"
    philly = "philly"


TRACE_HELP = (
    "Gavel .trace file or Philly-derived CSV, or the name of a shipped trace "
    "(e.g. 6c71a0.trace, b436b2.trace, philly.csv)."
)

# Options shared by the commands that build rounds from a trace.
TraceArg = Annotated[Path, typer.Argument(help=TRACE_HELP)]
FormatOpt = Annotated[
    TraceFormat,
    typer.Option("--trace-format", metavar="FMT", help="Trace format: auto (.csv is Philly), gavel, philly."),
]
RoundSOpt = Annotated[float, typer.Option(help="Round length T (s).")]
RestartOpt = Annotated[float, typer.Option(help="Restart cost tau (s).")]
MinPairRateOpt = Annotated[float, typer.Option(help="Least slowdown either job of a pair may have.")]
GpusPerNodeOpt = Annotated[int, typer.Option(help="GPUs per node.")]
NodePowerOpt = Annotated[
    float, typer.Option(help="Node base power (CPU, memory, fans) in W; an assumption, not measured data.")
]
VcOpt = Annotated[str | None, typer.Option(help="Philly virtual cluster id to keep (e.g. 6214e9).")]


def _library_path(text: str) -> Path:
    """A profile library's path as given (:func:`planner.sim.options.library_path`), a refusal naming the option."""
    try:
        return library_path(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


ProfilesOpt = Annotated[
    Path | None,
    typer.Option(help="Profile library (default: the shipped Gavel+Zeus one).", parser=_library_path, metavar="<path>"),
]
PowerCapOpt = Annotated[float | None, typer.Option(help="Power cap (W): a round's budget is cap x T.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


SWEEP_ONLY_OPTIONS = ("--policy", "--delta", "--fresh")
"""``simulate`` options ``frontier`` has not: it replays wattplan and --baselines, sweeps --deltas and resumes per
point (a point whose spec and inputs are unchanged is reused; delete its ``runs/<label>`` to redo it). It has the
simulated Slurm's options, as ``simulate`` declares them."""


FROM_TRACE_RANGES: dict[str, tuple[float, float]] = {
    "--at": (-1e9, 1e9),
    "--round-s": defaults.ROUND_S_RANGE,
    "--budget-fraction": (0.0, 1.0),
    "--budget-j": (0.0, MAX_BUDGET_J),
    "--power-cap-w": (1e-3, MAX_POWER_CAP_W),
    "--node-power-w": (0.0, MAX_NODE_POWER_W),
    "--restart-s": (0.0, 86_400.0),
    "--min-pair-rate": (0.0, 1.0),
}
"""The range (both ends included) of each number option of ``instance from-trace``: seconds, a fraction
of full power, joules, watts, a slowdown. Wide enough for any real round (``--at`` within a trace's
1e9 s, :data:`planner.rounds.traces.MAX_TRACE_S`; a round of at most a day; 1e15 J, 1e10 W), narrow enough
that no product overflows: NaN, infinity or 1e308 ended in an internal error or in
``Out of range float values are not JSON compliant`` naming no option."""


def _trace(path: Path) -> Path:
    """The trace a user named: a file, or a shipped trace by name."""
    from wattplan.planner.files.resources import resolve_trace

    return resolve_trace(path)
