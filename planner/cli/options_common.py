"""Options more than one command takes: the choices, the help texts and the ``Annotated`` option types.

Also the converters of their values (a profile library's path, the figure options, a trace named by the user)
and the ranges of the number options of ``instance from-trace``, which ``plan`` shares.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wattplan.planner import planning
from wattplan.planner.console.formats import OutputFormat
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.request import DEFAULT_REQUEST, REPLAY_REQUEST

if TYPE_CHECKING:
    from wattplan.planner.sim.plots import FigureOptions

OutputFormatOpt = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        metavar="FMT",
        help="Print as table, json (one document) or csv (a block per table, blank line between).",
    ),
]
"""The shared ``--format table|json|csv`` of every command that prints tables (planner.console.formats)."""


class ObjectiveChoice(StrEnum):
    """The objectives of the round model."""

    progress = "progress"
    energy = "energy"
    efficiency = "efficiency"


class GovernorChoice(StrEnum):
    """How the runtime-bounded mode compares JCTs (planner.sim.governor)."""

    accrued = "accrued"
    projected = "projected"


class PlotFormatChoice(StrEnum):
    """File formats of figures (planner.sim.plots)."""

    png = "png"
    pdf = "pdf"
    svg = "svg"


class TailPaceChoice(StrEnum):
    """The rate the tail bound assumes a job keeps (planner.sim.tail_bound)."""

    fastest = "fastest"
    steady = "steady"


class ReplanChoice(StrEnum):
    """When a replay asks its policies again (planner.sim.decision_memo.ReplanOn)."""

    rounds = "rounds"
    events = "events"


class TraceFormat(StrEnum):
    """Trace formats: ``auto`` chooses by file extension (``.csv`` is Philly)."""

    auto = "auto"
    gavel = "gavel"
    philly = "philly"


SOLVERS_HELP = planning.solver_help() + "."
SOLVER_HELP = (
    f"{SOLVERS_HELP} Default {DEFAULT_REQUEST.solver}: its own bound proves every plan of the bound audit "
    "within the gap (benchmarks/RESULTS.md)."
)
REPLAY_SOLVER_HELP = f"{SOLVERS_HELP} Default {REPLAY_REQUEST.solver}: fastest to its plan; a replay reads no bound."
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
    """A profile library's path as given; an empty value (Path("") is ".") or a NUL is refused, naming the option."""
    if not text.strip():
        raise typer.BadParameter("must name a profile library file, not an empty value")
    if "\x00" in text:
        raise typer.BadParameter("a file name cannot hold a NUL character")
    return Path(text)


ProfilesOpt = Annotated[
    Path | None,
    typer.Option(help="Profile library (default: the shipped Gavel+Zeus one).", parser=_library_path, metavar="<path>"),
]
PowerCapOpt = Annotated[float | None, typer.Option(help="Power cap (W): a round's budget is cap x T.")]

# Options shared by ``simulate`` and ``frontier``.
ClusterOpt = Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")]
EnergyBudgetOpt = Annotated[float | None, typer.Option(help="Energy budget over the replay (kWh), paced per round.")]
ReplaySolverOpt = Annotated[str, typer.Option(help="wattplan's solver: " + REPLAY_SOLVER_HELP)]
ReplayTimeLimitOpt = Annotated[float, typer.Option(help="wattplan's seconds per round (> 0).")]
HorizonOpt = Annotated[
    int,
    typer.Option(help="Rounds planned as one model, the first one run (1-8; 1: this round alone; design §5.14)."),
]
MaxJobsOpt = Annotated[int | None, typer.Option(help="Replay the first N jobs (by arrival) of the window.")]
StartSOpt = Annotated[float | None, typer.Option(help="Window start: jobs arriving from here (trace s).")]
EndSOpt = Annotated[float | None, typer.Option(help="Window end: jobs arriving before this (trace s).")]
CarbonOpt = Annotated[
    Path | None,
    typer.Option(help="Hourly carbon intensity CSV (gCO2/kWh), e.g. the shipped CISO_2022.csv: report kgCO2."),
]
PriceOpt = Annotated[Path | None, typer.Option(help="Hourly electricity price CSV ($/MWh): report energy cost.")]
SignalStartOpt = Annotated[
    str | None, typer.Option(help="Signal hour (ISO 8601, UTC) at which the replay starts; default the file's first.")
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run on Ray: a cluster address (auto, HOST:6379, ray://HOST:10001) or local (a Ray instance started "
        "for this run); an address is refused when nothing answers there within 5 s; needs the ray extra "
        "(pip install 'wattplan[ray]').",
    ),
]
SignalAwareOpt = Annotated[
    bool,
    typer.Option(
        help="wattplan follows the carbon (else price) signal against the day before: defers work in dirty or "
        "dear hours and runs harder in clean or cheap ones (efficiency objective); an energy budget is paced by it."
    ),
]

ThreadsOpt = Annotated[int, typer.Option(help="Solver threads (>= 1).")]
NodeLimitOpt = Annotated[
    int | None,
    typer.Option(
        help="Branch-and-bound nodes per MIP stage (>= 1; cbc, highs, scip). With --threads 1 and a time limit "
        "never reached, the same inputs give the same plans on any machine and load."
    ),
]
ReplaySeedOpt = Annotated[int, typer.Option(help="Seed: solver, Philly job types, --noise.")]
ZeusEtaOpt = Annotated[float, typer.Option(help="Zeus's weight of energy against time, in [0, 1].")]
NoiseOpt = Annotated[
    float, typer.Option(help="Throughput error: each job and round runs at U[1-x, 1+x] x the profile.")
]
GovernorOpt = Annotated[
    GovernorChoice,
    typer.Option(
        help="How --max-jct-increase compares JCTs: accrued (time in system so far) or projected (whole "
        "JCTs, unfinished work at full speed)."
    ),
]
DeltaMaxOpt = Annotated[float, typer.Option(help="Largest delta --max-jct-increase sets per round, in [0, 1).")]
TailBoundOpt = Annotated[
    float | None,
    typer.Option(
        help="Tail bound: wattplan gives the jobs the p95 reads the steps they need to finish within this many "
        "percent of fifo-max's JCT just below the 95th percentile, which bounds the p95 JCT the same way; the "
        "few others (2 of 51 jobs), those whose deadline costs the most energy, get none (rounds with an energy "
        "budget excepted)."
    ),
]
TailPaceOpt = Annotated[
    TailPaceChoice,
    typer.Option(
        help="How --tail-bound paces a job: steady (held to the even pace that meets its deadline, once that "
        "pace is above its least-energy rate) or fastest (it may wait until only full speed meets it)."
    ),
]
ReplanOpt = Annotated[
    ReplanChoice,
    typer.Option(
        help="When policies re-plan: rounds (every round that changed; exact) or events (only at an arrival, "
        "a completion, a budget, delta or profile change; faster, an approximation for wattplan)."
    ),
]
MaxRoundsOpt = Annotated[int, typer.Option(help="Stop after this many simulated rounds.")]
BelievedProfilesOpt = Annotated[
    Path | None,
    typer.Option(
        help="Profile library the planner and the baselines believe (default: the shipped one).",
        parser=_library_path,
        metavar="<path>",
    ),
]
TruthOpt = Annotated[
    Path | None,
    typer.Option(
        help="Profile library jobs really run and draw power by (default: the same as --profiles); "
        "make one with `wattplan profiles truth`."
    ),
]
LearnOpt = Annotated[
    bool,
    typer.Option(
        help="Each policy corrects its profiles from every round's observed steps, power and utilisation "
        "(writes decisions.csv and a learning block in summary.json)."
    ),
]
PlotsOpt = Annotated[bool, typer.Option(help="Write the figures (see --plot-format).")]
PlotFormatOpt = Annotated[
    PlotFormatChoice,
    typer.Option("--plot-format", help="Figure files: png (raster, --dpi), pdf or svg (vector, for a paper)."),
]
DpiOpt = Annotated[int, typer.Option(help="Resolution of PNG figures, dots per inch (50 to 1200).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
SWEEP_ONLY_OPTIONS = ("--policy", "--delta", "--fresh")
"""``simulate`` options ``frontier`` has not: it replays wattplan and --baselines, sweeps --deltas, and resumes per
point (a point whose spec and inputs are unchanged is reused; delete its ``runs/<label>`` to redo it)."""


FROM_TRACE_RANGES: dict[str, tuple[float, float]] = {
    "--at": (-1e9, 1e9),
    "--round-s": defaults.ROUND_S_RANGE,
    "--budget-fraction": (0.0, 1.0),
    "--budget-j": (0.0, 1e15),
    "--power-cap-w": (1e-3, 1e10),
    "--node-power-w": (0.0, 1e6),
    "--restart-s": (0.0, 86_400.0),
    "--min-pair-rate": (0.0, 1.0),
}
"""The range (both ends included) of each number option of ``instance from-trace``: seconds, a fraction
of full power, joules, watts, a slowdown. Wide enough for any real round (``--at`` within a trace's
1e9 s, :data:`planner.rounds.traces.MAX_TRACE_S`; a round of at most a day; 1e15 J, 1e10 W), narrow enough
that no product overflows: NaN, infinity or 1e308 ended in an internal error or in
``Out of range float values are not JSON compliant`` naming no option."""


def _figure_options(plot_format: PlotFormatChoice, dpi: int) -> FigureOptions:
    """``--plot-format`` and ``--dpi`` as figure options, checked (a bad ``--dpi`` raises :class:`InputError`)."""
    from wattplan.planner.sim.plots import FigureOptions, check_figure_options

    options = FigureOptions(plot_format.value, dpi)
    check_figure_options(options)
    return options


def _trace(path: Path) -> Path:
    """The trace a user named: a file, or a shipped trace by name."""
    from wattplan.planner.files.resources import resolve_trace

    return resolve_trace(path)
