"""``wattplan bench``'s options, declared once: :class:`BenchOptions`.

``wattplan bench`` generates its options from the record (``planner.cli.faces``), ``wattplan.bench`` takes the same
keywords and checks them with :meth:`BenchOptions.checked`, and :func:`planner.bench.session.bench_config` reads the
typed record. The options that are the same quantity as ``wattplan plan``'s (the time limit, the gap, the threads,
the node limit) take their unit and range from :class:`planner.planning.SolveOptions`, so a bench refuses what a
plan refuses, in the same words. What depends on the set or on the solvers named (a solver that cannot load, a
node limit for a solver without one, a missing set) is checked by :func:`planner.bench.runner.config_problems`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from wattplan.planner import planning
from wattplan.planner.bench.runner import GRACE_SHARE, MAX_SEEDS, MIN_GRACE_S
from wattplan.planner.contracts.defaults import FIGURE_DPI
from wattplan.planner.contracts.figures import DPI_RANGE, PLOT_FORMATS
from wattplan.planner.contracts.options import OptionRecord, option, range_of
from wattplan.planner.contracts.request import DEFAULT_REQUEST
from wattplan.planner.executor import RAY_HELP

DEFAULT_SOLVERS = "cbc,highs,cpsat,greedy"
"""The solvers a bench compares unless told (``--solvers``)."""

SOLVERS_HELP = (
    "Solvers to compare, comma-separated: "
    + ", ".join([*planning.SOLVER_NAMES, *planning.SOLVER_PATTERNS])
    + ', a plug-in\'s name (entry points of wattplan.solvers); quote a command: cmd:"x {mps} {sol}".'
)


@dataclass(frozen=True, kw_only=True)
class BenchOptions(OptionRecord):
    """``wattplan bench`` and ``wattplan.bench``: what runs, how each run is limited, and the report's figures.

    The set (``SET``) and the output folder (``--out``; the API's ``out``, a temporary folder when None) are each
    face's own parameters, not options of the record.
    """

    solvers: str = option(DEFAULT_SOLVERS, SOLVERS_HELP)
    time_limit: float = option(
        10.0, "Seconds per run, the whole planning call.", **range_of(planning.SolveOptions, "time_limit_s")
    )
    seeds: int = option(1, "Runs per instance and solver, seeds 0 .. K-1.", low=1, high=MAX_SEEDS)
    workers: int | None = option(
        None, "Runs at once, each a fresh process (default 1, with --ray as many as Ray places).", low=1
    )
    ray: str | None = option(None, RAY_HELP)
    gap: float = option(
        DEFAULT_REQUEST.rel_gap,
        "Relative gap at which a solve stops and a run counts as solved.",
        **range_of(planning.SolveOptions, "rel_gap"),
    )
    threads: int = option(1, "Solver threads per run.", **range_of(planning.SolveOptions, "threads"))
    memory_limit_mb: int | None = option(
        None, "Address-space cap of each run (RLIMIT_AS); over it a run is oom.", unit="MiB", low=1
    )
    grace: float | None = option(
        None,
        f"Seconds past the limit before a run is killed (default max({MIN_GRACE_S:g}, {GRACE_SHARE:g} x limit)).",
        unit="s",
        low=0.0,
        low_open=True,
    )
    node_limit: int | None = option(
        None,
        f"Branch-and-bound nodes per MIP stage of every run ({', '.join(planning.solvers_with('node_limit'))}; "
        "greedy runs as it is): runs that stop on nodes, not on the clock, repeat on any machine and load.",
        **range_of(planning.SolveOptions, "node_limit"),
    )
    plot_format: str = option(
        "png", "Also write profile.pdf or profile.svg (profile.png is always written).", choices=PLOT_FORMATS
    )
    dpi: int = option(FIGURE_DPI, "Resolution of PNG figures.", unit="dpi", low=DPI_RANGE[0], high=DPI_RANGE[1])

    @classmethod
    def checked(cls, values: Mapping[str, Any] | None = None, **more: Any) -> Self:
        """The record of ``values`` and ``more``, checked (:meth:`OptionRecord.checked`), as the API takes them.

        ``solvers`` may be a list of names (joined with commas, the command line's text), and ``gap=None`` keeps the
        default gap (the Python API's spelling of "the planner's default" before the record).
        """
        given = {**(values or {}), **more}
        solvers = given.get("solvers")
        if isinstance(solvers, list | tuple) and all(isinstance(name, str) for name in solvers):
            given["solvers"] = ",".join(solvers)
        if "gap" in given and given["gap"] is None:
            del given["gap"]
        return super().checked(given)
