"""The six replay slices of the energy-mode benchmarks, and the rule that picked the four 150-job ones.

``SLICES`` (cluster ``v100:32,p100:16``): four 150-job slices, three Gavel traces and Philly virtual cluster 6214e9
(job types drawn with seed 0, as ``wattplan instance from-trace`` draws them), bursts of 1-GPU jobs, and the two
heavy slices of ``benchmarks/heavy_slices.py`` (two days of multi-GPU arrivals at load above 1: Gavel ee9e8c and
Philly 2869ce). Each slice is its ``wattplan simulate`` selection (trace, ``--vc``, ``--start-s``, ``--max-jobs``
or ``--end-s``); ``energy_mode_slurm.py`` replays them on the simulated Slurm, ``deadline_floor.py`` bounds them.

The 150-job rule looks only at the trace, never at a policy's result: among windows of ``N`` consecutive arrivals
(a window starts at the first of the jobs that share its first arrival time, so ``--start-s S --max-jobs N``
reproduces it) whose *reference makespan* ``max_j (a_j + d_j) - a_first`` is at most ``H`` hours (``d_j`` the job
alone at its requested count on the fastest GPU at its top setting, s), take the one whose reference work
``sum_j n_j d_j`` (GPU-s) is closest to ``W`` GPU-hours. With ``N = 150``, ``H = 8``, ``W = 150`` on
``v100:32,p100:16`` every slice is about three hours of the whole cluster's work arriving within an hour or so.
Three Gavel traces have such a window (the other twelve have none).

    PYTHONPATH=. .venv/bin/python benchmarks/slices.py    # the windows the rule picks, one line per source
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.files.resources import GAVEL_TRACES, PHILLY_TRACE, resolve_trace, shipped
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.traces import read_trace
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.state import JobSpec
from wattplan.planner.sim.workload import build_workload, select_jobs

CLUSTER = "v100:32,p100:16"
"""The slices' cluster: 48 GPUs, six 8-GPU nodes."""


@dataclass(frozen=True)
class Slice:
    """A slice's name and its ``simulate`` selection (trace, then option-value pairs)."""

    name: str
    args: tuple[str, ...]


SLICES = (
    Slice("gavel-6214e9", ("6214e9.trace", "--start-s", "4180536", "--max-jobs", "150")),
    Slice("gavel-6c71a0", ("6c71a0.trace", "--start-s", "2510560", "--max-jobs", "150")),
    Slice("gavel-b436b2", ("b436b2.trace", "--start-s", "2716761", "--max-jobs", "150")),
    Slice("philly-6214e9", ("philly.csv", "--vc", "6214e9", "--start-s", "2320523", "--max-jobs", "150")),
    Slice("heavy-gavel-ee9e8c", ("ee9e8c.trace", "--start-s", "896743", "--end-s", "1069543")),
    Slice("heavy-philly-2869ce", ("philly.csv", "--vc", "2869ce", "--start-s", "685120", "--end-s", "857920")),
)


def spec_of(sl: Slice) -> ReplaySpec:
    """The slice's replay spec from its ``simulate`` arguments (trace, ``--vc``, ``--start-s``, ...)."""
    args = list(sl.args)
    trace, opts = args[0], dict(zip(args[1::2], args[2::2], strict=True))
    return ReplaySpec(
        trace=resolve_trace(Path(trace)),
        cluster=CLUSTER,
        virtual_cluster=opts.get("--vc"),
        start_s=float(opts["--start-s"]) if "--start-s" in opts else None,
        end_s=float(opts["--end-s"]) if "--end-s" in opts else None,
        max_jobs=int(opts["--max-jobs"]) if "--max-jobs" in opts else None,
    )


@dataclass(frozen=True)
class Window:
    """The window the 150-job rule picks.

    Its first job's index in the trace's jobs, its reference makespan (s), work (GPU-s) and arrival span (s).
    """

    index: int
    makespan_s: float
    work_gpu_s: float
    arrival_span_s: float


def pick_window(specs: Sequence[JobSpec], n: int, max_makespan_s: float, target_gpu_s: float) -> Window | None:
    """The rule's window of ``n`` jobs of ``specs`` (sorted by arrival), or None when no window qualifies."""
    best: tuple[float, Window] | None = None
    for i in range(len(specs) - n + 1):
        if i > 0 and specs[i - 1].arrival_s == specs[i].arrival_s:
            continue  # a window starts at the first job of its arrival time
        window = specs[i : i + n]
        t0 = window[0].arrival_s
        makespan = max(j.arrival_s + j.reference_duration_s for j in window) - t0
        if makespan > max_makespan_s:
            continue
        work = sum(j.requested_gpus * j.reference_duration_s for j in window)
        if best is None or abs(work - target_gpu_s) < best[0]:
            best = (abs(work - target_gpu_s), Window(i, makespan, work, window[-1].arrival_s - t0))
    return None if best is None else best[1]


def main(argv: Sequence[str] | None = None) -> None:
    """Print the window the 150-job rule picks in every shipped Gavel trace and in one Philly virtual cluster."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=150, help="N: jobs per slice")
    ap.add_argument("--max-makespan-h", type=float, default=8.0, help="H: reference makespan bound (h)")
    ap.add_argument("--target-gpu-h", type=float, default=150.0, help="W: reference work target (GPU-h)")
    ap.add_argument("--philly-vc", default="6214e9")
    args = ap.parse_args(argv)
    lib = load_profile_library()
    gavel = sorted(shipped(GAVEL_TRACES).glob("*.trace"))
    sources: list[tuple[str, Path, str | None]] = [(p.stem, p, None) for p in gavel]
    sources.append((f"philly-{args.philly_vc}", shipped(PHILLY_TRACE), args.philly_vc))
    print("| source | start s | reference makespan h | work GPU-h | arrivals over h |\n|---|---|---|---|---|")
    for name, path, vc in sources:
        trace = read_trace(path, lib, seed=0, virtual_cluster=vc)
        specs = list(build_workload(select_jobs(trace), lib, ("v100", "p100")).jobs)
        found = pick_window(specs, args.jobs, args.max_makespan_h * 3600, args.target_gpu_h * 3600)
        if found is not None:
            print(
                f"| {name} | {specs[found.index].arrival_s:.0f} | {found.makespan_s / 3600:.2f} | "
                f"{found.work_gpu_s / 3600:.1f} | {found.arrival_span_s / 3600:.2f} |"
            )


if __name__ == "__main__":
    main()
