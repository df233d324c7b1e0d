"""The arithmetic of a replay's summary that does not depend on how it was replayed.

* :func:`jct_stats`: average and p95 of the completed jobs' JCTs (s; linear interpolation between order
  statistics, numpy's default);
* :func:`with_reference`: against the workload's energy floor ``E_floor`` and a reference schedule (Slurm alone,
  on the simulated Slurm) with energy ``E_ref`` and average JCT ``J_ref``:

  * ``energy_floor_kwh``: ``E_floor``;
  * ``captured_share = (E_ref - E) / (E_ref - E_floor)``: the share of the achievable saving a replay captured (1: at
    the floor, 0: no better than the reference, < 0: worse);
  * ``jct_increase = J / J_ref - 1``: the average JCT against the reference's (fraction);
* :func:`pareto_front`: the points no other beats on both axes.

Energies are in kWh (1 kWh = :data:`J_PER_KWH` J). The loop's replay writes the summary itself
(:func:`planner.control.slurm_replay.summarise`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

J_PER_KWH = 3.6e6


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
