"""A replay's summary numbers.

* energy (kWh; 1 kWh = 3.6e6 J): total and its node, idle and dynamic parts, summed over
  the simulated rounds (skipped rounds with nothing queued draw nothing);
* JCT (s) = ``finish_s - arrival_s`` of the completed jobs: mean, median, p95, p99
  (linear interpolation between order statistics, numpy's default);
* makespan (s) = last finish - replay start ``t0`` (None unless every job completed);
* GPU utilisation = busy GPU-seconds / powered GPU-seconds (a GPU is busy while a job on it
  computes; powered = every GPU of every powered-on node for the whole round);
* energy if idle nodes were never suspended (kWh, a sensitivity figure): the dynamic energy plus
  every node of the cluster powered for every simulated round, ``dynamic + rounds * T * sum_g N_g *
  (Pnode_g + K_g * Pidle_g)``;
* energy per million steps (kWh) = total energy / steps done * 1e6 (steps of different job
  types are not the same work: compare it across policies on the same trace only);
* solver seconds per simulated round (``solver_s_*``: wall clock of the policy's ``decide``, the solver
  time for ``wattplan``): mean and max;
* ``rounds_on_clock``: rounds whose plan had a solver stage stop on the clock (None for a heuristic): 0 means the
  same command replays to the same rounds (docs/design.md §5.15);
* ``delta_mean``: the runtime-bounded mode's mean per-round ``delta`` (:mod:`planner.sim.governor`).

Against the workload's energy floor ``E_floor`` (:mod:`formulations.energy_floor`) and the
reference schedule (``fifo-max``, no budget) with energy ``E_ref`` and average JCT ``J_ref``,
:func:`with_reference` adds:

* ``energy_floor_kwh``: ``E_floor``;
* ``captured_share = (E_ref - E) / (E_ref - E_floor)``: the share of the achievable saving a
  replay captured (1: at the floor, 0: no better than the reference, < 0: worse);
* ``jct_increase = J / J_ref - 1``: the average JCT against the reference's (fraction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

J_PER_KWH = 3.6e6
TIMING_KEYS = ("solver_s_mean", "solver_s_max", "solver_s_total", "rounds_on_clock")
"""Summary keys that depend on the machine's speed and load, not on the replay's inputs."""


def jct_stats(jcts: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and 95th percentile (numpy's linear interpolation, the replay's definition) of JCTs; None when empty.

    ``cluster report`` and ``agent report`` use it, so a p95 means one thing in every report.
    """
    if not jcts:
        return None, None
    return _stat(list(jcts), "mean"), _stat(list(jcts), "pct", 95)


def _stat(values: list[float], fn: str, q: float | None = None) -> float | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=float)
    if fn == "mean":
        return float(arr.mean())
    return float(np.percentile(arr, q))  # type: ignore[arg-type]


def captured_share(energy_kwh: float, reference_kwh: float, floor_kwh: float) -> float | None:
    """``(E_ref - E) / (E_ref - E_floor)``; None when the reference is at the floor."""
    span = reference_kwh - floor_kwh
    return (reference_kwh - energy_kwh) / span if span > 1e-12 else None


def with_reference(summary: dict[str, Any], reference: dict[str, Any], floor_kwh: float | None) -> dict[str, Any]:
    """``summary`` plus the floor, the captured share and the JCT increase (module docstring)."""
    ref_e, ref_j, jct = reference["energy_kwh"], reference["avg_jct_s"], summary["avg_jct_s"]
    return {
        **summary,
        "energy_floor_kwh": floor_kwh,
        "reference": {
            "policy": reference["policy"],
            "energy_kwh": ref_e,
            "avg_jct_s": ref_j,
            "p95_jct_s": reference.get("p95_jct_s"),
        },
        "captured_share": None if floor_kwh is None else captured_share(summary["energy_kwh"], ref_e, floor_kwh),
        "jct_increase": None if jct is None or not ref_j else jct / ref_j - 1.0,
    }


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (energy, JCT) points that no other point beats on both, by increasing energy.

    Along the front JCT strictly decreases as energy increases.
    """
    front: list[tuple[float, float]] = []
    for e, j in sorted(points):
        if not front or j < front[-1][1]:
            front.append((e, j))
    return front


def without_timing(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary minus wall-clock fields (what must be identical for the same seed)."""
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}
