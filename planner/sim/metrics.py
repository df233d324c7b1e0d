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

from wattplan.planner.sim.engine import RoundRecord, SimResult

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


def summarise(result: SimResult) -> dict[str, Any]:
    """The summary of one replay (``summary.json``); see the module docstring for definitions."""
    rounds = result.rounds
    jcts = [s.jct_s for s in result.jobs if s.jct_s is not None]
    node = sum(r.node_j for r in rounds)
    idle = sum(r.idle_j for r in rounds)
    dynamic = sum(r.dynamic_j for r in rounds)
    total = node + idle + dynamic
    steps = sum(s.steps_done for s in result.jobs)
    busy = sum(r.busy_gpu_s for r in rounds)
    powered = sum(r.powered_gpu_s for r in rounds)
    decide = [r.decide_s for r in rounds]
    completed = len(jcts)
    finishes = [s.finish_s for s in result.jobs if s.finish_s is not None]
    unfinished = [s.id for s in result.jobs if not s.done]
    statuses: dict[str, int] = {}
    for r in rounds:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return {
        "policy": result.policy,
        "budget": result.budget_label,
        "stop_reason": result.stop_reason,
        "energy_kwh": total / J_PER_KWH,
        "energy_node_kwh": node / J_PER_KWH,
        "energy_idle_kwh": idle / J_PER_KWH,
        "energy_dynamic_kwh": dynamic / J_PER_KWH,
        "energy_all_nodes_on_kwh": (
            dynamic + len(rounds) * result.duration_s * result.info.get("cluster_powered_w", 0.0)
        )
        / J_PER_KWH,
        "avg_jct_s": _stat(jcts, "mean"),
        "median_jct_s": _stat(jcts, "pct", 50),
        "p95_jct_s": _stat(jcts, "pct", 95),
        "p99_jct_s": _stat(jcts, "pct", 99),
        "makespan_s": (max(finishes) - result.t0_s) if finishes and not unfinished else None,
        "jobs_total": len(result.jobs),
        "jobs_completed": completed,
        "jobs_unfinished": len(unfinished),
        "unfinished_ids": unfinished,
        "gpu_utilisation": busy / powered if powered > 0 else None,
        "energy_kwh_per_million_steps": total / J_PER_KWH / steps * 1e6 if steps > 0 else None,
        "steps_done": steps,
        "rounds_simulated": len(rounds),
        "round_s": result.duration_s,
        "restarts": sum(s.restarts for s in result.jobs),
        "shared_job_rounds": sum(r.shared for r in rounds),
        "rounds_nothing_ran": sum(1 for r in rounds if r.running == 0),
        "plan_status_rounds": statuses,
        "rounds_on_clock": _rounds_on_clock(rounds),
        "solver_s_mean": _stat(decide, "mean"),
        "solver_s_max": max(decide) if decide else None,
        "solver_s_total": sum(decide),
        "delta_mean": _stat([r.delta for r in rounds if r.delta is not None], "mean"),
        **result.info,
    }


def _rounds_on_clock(rounds: Sequence[RoundRecord]) -> int | None:
    """Rounds whose plan had a solver stage stop on the clock; None when no round reports stages (a heuristic).

    0 for a replay whose every stage stopped on its own: the same command replays it to the same rounds.
    """
    counted = [r.clock_stops for r in rounds if r.clock_stops is not None]
    return sum(n > 0 for n in counted) if counted else None


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
