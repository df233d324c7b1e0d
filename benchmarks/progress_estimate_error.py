"""How far the agent's progress estimate is from the steps a job really made (issue 45, item 5).

Replays each live workload on the simulated Slurm with no job exporting its steps (``--no-progress-metric``), and
at every round compares each estimated job's steps with the simulated Slurm's, as a share of the job's total
steps: ``(estimate - real) / total``. ``--start-s load`` gives the agent the checkpoint load as a job's start-up,
as the replays and live runs do; ``whole`` the launch and the load the simulated Slurm charges (then the estimate is
exact with exact profiles). Prints one line per family::

    python benchmarks/progress_estimate_error.py instances/live/gavel_mix.trace instances/live/philly_shape.trace
        [--start-s load|whole] [--truth TRUTH.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
from pathlib import Path
from typing import Any

from wattplan.planner.agent import loop
from wattplan.planner.control import sim_slurm, slurm_replay
from wattplan.planner.control.session import setup_of
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.replay import ReplaySpec


def errors_of(trace: Path, whole_start_up: bool, truth: Path | None) -> list[float]:
    """``(estimate - real) / total`` of every estimated job at every round of one replay."""
    sims: list[sim_slurm.SimulatedSlurm] = []
    errors: list[float] = []
    made, estimated, configured = (
        sim_slurm.SimulatedSlurm.__init__,
        loop.Agent._estimated_steps,
        slurm_replay.agent_config,
    )

    def keep(self: sim_slurm.SimulatedSlurm, *args: Any, **kw: Any) -> None:
        made(self, *args, **kw)
        sims.append(self)

    def compare(self: loop.Agent, k: Any, *args: Any) -> float | None:
        steps = estimated(self, k, *args)
        if steps is not None:
            job = sims[-1]._jobs[int(k.job_id)]
            real = min(job.at(job.ss, job.rates[1], sims[-1].now_s), job.spec.total_steps)
            errors.append((steps - real) / k.total_steps)
        return steps

    def start_up(*args: Any, **kw: Any) -> loop.AgentConfig:
        config = configured(*args, **kw)
        return dataclasses.replace(config, start_s=args[4].start_cost_s) if whole_start_up else config

    sim_slurm.SimulatedSlurm.__init__ = keep  # type: ignore[method-assign]
    loop.Agent._estimated_steps = compare  # type: ignore[method-assign]
    slurm_replay.agent_config = start_up  # type: ignore[assignment]
    try:
        spec = ReplaySpec(trace=trace, cluster="v100:32", policies=("wattplan",), truth=truth)
        setup = setup_of(SimulateOptions(progress_metric=False, power_save=True, time_scale=30))
        with tempfile.TemporaryDirectory() as scratch:
            slurm_replay.replay_on_slurm(spec, "wattplan", setup, Path(scratch))
    finally:
        sim_slurm.SimulatedSlurm.__init__ = made  # type: ignore[method-assign]
        loop.Agent._estimated_steps = estimated  # type: ignore[method-assign]
        slurm_replay.agent_config = configured
    return errors


def main() -> None:
    """One line per trace: estimates compared, mean and largest error, as shares of a job's total steps."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--start-s", choices=("load", "whole"), default="load")
    p.add_argument("--truth", type=Path, help="Library the simulated GPUs run by (default: the planning library).")
    args = p.parse_args()
    for trace in args.traces:
        errors = errors_of(trace, args.start_s == "whole", args.truth)
        print(
            f"{trace.stem}: {len(errors)} estimates, error as a share of the job's steps: "
            f"mean {statistics.fmean(errors):+.4f}, largest {max(errors, key=abs):+.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
