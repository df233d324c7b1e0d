"""The simulated Slurm's test constants: the shipped library as truth, a node's power, the load and the delay.

``x`` and ``p`` are a V100 profile's steps per second and power per GPU (W) at a setting, for hand-computed
expectations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wattplan.planner.agent.node_settings import Clock
from wattplan.planner.control.sim_slurm import SimJob, SimNode, SimulatedSlurm
from wattplan.planner.profile_library.index import index_library
from wattplan.planner.profile_library.library import load_profile_library

TRUTH = index_library(load_profile_library(None))
R18 = "ResNet-18 (batch size 64)"
IDLE = 34.0  # the shipped V100's idle power (W)
NODE_W = 100.0
LOAD = 30.0
DELAY = 7.0
CLOCK = Clock(t0_unix=1_800_000_000.0)


def simulated(jobs: list[SimJob], gpus: Sequence[int] = (8,), **options: Any) -> SimulatedSlurm:
    """A simulated Slurm of V100 nodes ``v100-0``, ``v100-1``... with ``gpus`` GPUs each, running ``jobs``.

    ``NODE_W`` per node besides its GPUs, ``LOAD`` s per start, ``DELAY`` s per requeue, no settings folder unless
    ``options`` (:class:`SimulatedSlurm`'s keywords) say otherwise.
    """
    nodes = [SimNode(f"v100-{i}", "v100", k) for i, k in enumerate(gpus)]
    kwargs: dict[str, Any] = {"settings_dir": None, **options}
    return SimulatedSlurm(
        nodes, TRUTH, {"v100": NODE_W}, jobs, clock=CLOCK, load_s=LOAD, requeue_delay_s=DELAY, **kwargs
    )


def x(job_type: str, gpus: int = 1, setting: int = 250) -> float:
    """Steps per second of ``job_type`` on ``gpus`` V100s at ``setting`` (W)."""
    return TRUTH.profiles[(job_type, "v100", gpus, setting)].steps_per_s


def p(job_type: str, gpus: int = 1, setting: int = 250) -> float:
    """Power per GPU (W) of ``job_type`` on ``gpus`` V100s at ``setting`` (W)."""
    return TRUTH.profiles[(job_type, "v100", gpus, setting)].power_w
