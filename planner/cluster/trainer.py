"""The stand-in trainer a Slurm batch job runs on the emulated cluster: it counts steps at the emulator's speed.

``python -m wattplan.planner.cluster.trainer --dir DIR --job-type T --steps N [--restart-s TAU] [--fail-at-step K]``,
with ``SLURM_JOB_ID`` (and ``SLURMD_NODENAME``) from Slurm. Files, all written atomically:

* ``work/JOBID/checkpoint.json``: ``{"steps": done}``, the job's checkpoint; a (re)started trainer resumes
  from it (Slurm requeues a job under the same id);
* ``emu/jobs/JOBID.json``: the registration the emulator reads, ``{"job_id", "job_type", "total_steps",
  "phase": "loading" | "running", "pid", "node", "started_unix"}``; removed when the trainer ends, however;
* ``emu/progress/JOBID``: the steps done, one number as text, rewritten with the checkpoint; the emulator
  exports it as ``wattplan_job_steps_done``;
* ``emu/done/JOBID.json``: ``{"end_unix", "steps"}`` once all ``N`` steps are done (``end_unix`` the Unix time
  the last step finished, interpolated within the last tick).

Time is the cluster's emulated clock (:class:`planner.cluster.layout.Clock`). On every (re)start the trainer
spends ``restart_s`` emulated seconds in phase ``loading`` (``restart_s / time_scale`` real seconds; default the
manifest's ``restart_s``, else the replay's restart cost), then ``running``: every tick (0.2 s real) it reads
its speed ``v`` (steps per emulated second) from ``emu/rates.json`` and adds ``v * dt`` steps for the ``dt``
emulated seconds since the last tick. A missing job, a missing or unreadable rates file, or one whose ``emulated_s`` is
more than :data:`STALE_REAL_S` real seconds old reads as speed 0: the trainer waits.

SIGTERM or SIGINT (a requeue, ``scancel``): checkpoint, unregister, exit 0 within a tick. ``--fail-at-step K``
exits 1 with a message once the steps pass ``K`` in this run, unregistered and without a new checkpoint (a
crash: the last tick's checkpoint stands, so a requeued run fails at ``K`` again).

It imports the standard library and :mod:`planner.cluster.layout` only (which loads
:mod:`planner.contracts.defaults`, where the restart cost's default comes from), so it starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from wattplan.planner.cluster.layout import Clock, ClusterLayout, write_json_atomic, write_text_atomic
from wattplan.planner.contracts.defaults import RESTART_S

TICK_S = 0.2
"""Real seconds between two steps updates."""
STALE_REAL_S = 2.0
"""A rates file older than this many real seconds (by its ``emulated_s``) reads as speed 0."""


def checkpoint_path(layout: ClusterLayout, job_id: str) -> Path:
    """``work/JOBID/checkpoint.json``."""
    return layout.work_dir / job_id / "checkpoint.json"


def progress_path(layout: ClusterLayout, job_id: str) -> Path:
    """``emu/progress/JOBID``: the steps done, as text."""
    return layout.emu_dir / "progress" / job_id


def done_path(layout: ClusterLayout, job_id: str) -> Path:
    """``emu/done/JOBID.json``: ``{"end_unix", "steps"}`` of a finished job."""
    return layout.emu_dir / "done" / f"{job_id}.json"


def read_speed(layout: ClusterLayout, clock: Clock, job_id: str, now_s: float) -> float:
    """The job's speed in ``emu/rates.json`` (steps per emulated s); 0 when missing, unreadable or stale."""
    try:
        doc = json.loads(layout.rates_file.read_text())
        speed = float(doc["jobs"].get(job_id, 0.0))
        age_real_s = clock.real_s(now_s - float(doc["emulated_s"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0.0
    return speed if age_real_s <= STALE_REAL_S and speed > 0 else 0.0


def _read_checkpoint(path: Path) -> float:
    try:
        return max(0.0, float(json.loads(path.read_text())["steps"]))
    except FileNotFoundError:
        return 0.0


class Trainer:
    """One run of the stand-in trainer (module docstring)."""

    def __init__(
        self,
        layout: ClusterLayout,
        job_id: str,
        job_type: str,
        total_steps: float,
        restart_s: float,
        fail_at_step: float | None = None,
        tick_s: float = TICK_S,
    ) -> None:
        self.layout, self.job_id, self.job_type = layout, job_id, job_type
        self.total_steps, self.restart_s, self.fail_at_step, self.tick_s = total_steps, restart_s, fail_at_step, tick_s
        self.clock = layout.clock()
        self.stop = threading.Event()
        self.started_unix = time.time()
        self.steps = _read_checkpoint(checkpoint_path(layout, job_id))

    def _register(self, phase: str) -> None:
        doc: dict[str, Any] = {
            "job_id": self.job_id,
            "job_type": self.job_type,
            "total_steps": self.total_steps,
            "phase": phase,
            "pid": os.getpid(),
            "node": os.environ.get("SLURMD_NODENAME", ""),
            "started_unix": self.started_unix,
        }
        write_json_atomic(self.layout.trainer_file(self.job_id), doc)

    def _save(self) -> None:
        """Checkpoint and progress, rewritten every tick: atomic, not flushed to disk (emulated state)."""
        write_json_atomic(checkpoint_path(self.layout, self.job_id), {"steps": self.steps}, durable=False)
        write_text_atomic(progress_path(self.layout, self.job_id), f"{self.steps!r}\n", durable=False)

    def _unregister(self) -> None:
        self.layout.trainer_file(self.job_id).unlink(missing_ok=True)
        progress_path(self.layout, self.job_id).unlink(missing_ok=True)

    def _log(self, text: str) -> None:
        print(f"trainer {self.job_id}: {text}", file=sys.stderr, flush=True)

    def run(self) -> int:
        """Load, then count steps until done (0), stopped (0) or failed (1)."""
        try:
            return self._run()
        finally:
            self._unregister()

    def _run(self) -> int:
        self._save()
        if self.steps >= self.total_steps:
            return self._finish(time.time())
        self._log(f"{self.job_type} from step {self.steps:.0f} of {self.total_steps:.0f}")
        self._register("loading")
        if self.stop.wait(max(0.0, self.clock.real_s(self.restart_s))):
            self._log(f"stopped while loading at step {self.steps:.0f}")
            return 0
        self._register("running")
        last = self.clock.now_s()
        while not self.stop.wait(self.tick_s):
            now = self.clock.now_s()
            speed = read_speed(self.layout, self.clock, self.job_id, now)
            before, self.steps = self.steps, self.steps + speed * max(0.0, now - last)
            last = now
            if self.fail_at_step is not None and before < self.fail_at_step <= self.steps:
                self._log(f"failing at step {self.steps:.0f} (--fail-at-step {self.fail_at_step:g})")
                return 1
            if self.steps >= self.total_steps:
                over_s = (self.steps - self.total_steps) / speed if speed > 0 else 0.0
                return self._finish(self.clock.unix_at(now - over_s))
            if self.steps != before:
                self._save()
        self._save()
        self._log(f"stopped at step {self.steps:.0f}: checkpointed")
        return 0

    def _finish(self, end_unix: float) -> int:
        self.steps = self.total_steps
        self._save()
        write_json_atomic(done_path(self.layout, self.job_id), {"end_unix": end_unix, "steps": self.steps})
        self._log(f"done: {self.steps:.0f} steps")
        return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m wattplan.planner.cluster.trainer", description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, type=Path, help="the emulated cluster's folder")
    p.add_argument("--job-type", required=True, help="the job type (a type of the truth library)")
    p.add_argument("--steps", required=True, type=float, help="total steps of the job")
    p.add_argument(
        "--restart-s",
        type=float,
        default=None,
        help="emulated seconds lost at each (re)start (default: the manifest's)",
    )
    p.add_argument("--fail-at-step", type=float, default=None, help="exit 1 when passing this step (tests)")
    p.add_argument("--tick-s", type=float, default=TICK_S, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the trainer for ``$SLURM_JOB_ID``; the exit status (2 without a job id or with bad options)."""
    args = _parser().parse_args(argv)
    job_id = os.environ.get("SLURM_JOB_ID", "")
    if not job_id:
        print("trainer: SLURM_JOB_ID is not set", file=sys.stderr)
        return 2
    layout = ClusterLayout(args.dir)
    restart_s = args.restart_s
    if restart_s is None:
        restart_s = float(layout.read_manifest().get("restart_s", RESTART_S))
    if args.steps <= 0 or restart_s < 0 or args.tick_s <= 0:
        print("trainer: --steps must be > 0, --restart-s >= 0, --tick-s > 0", file=sys.stderr)
        return 2
    trainer = Trainer(layout, job_id, args.job_type, args.steps, restart_s, args.fail_at_step)
    trainer.tick_s = args.tick_s

    def _stop(signum: int, frame: FrameType | None) -> None:
        trainer.stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    return trainer.run()


if __name__ == "__main__":
    sys.exit(main())
