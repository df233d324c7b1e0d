"""Writing a replay: per-round log (CSV), per-job table (CSV), ``summary.json``; all atomic.

Files in a policy's folder:

* ``rounds.csv``: one row per simulated round (:class:`planner.sim.engine.RoundRecord`), ``policy`` first;
  energies in J, ``power_w = energy_j / T``, ``nodes_on_<type>`` the nodes on of each GPU type, ``note`` why
  a ``wattplan`` round's plan is not the solver's for its objective: ``PlanRound.notes``; ``phase``
  and the energy by lever ``base_j`` ... ``restarts_j``: :mod:`planner.sim.energy_levers`);
* ``jobs.csv``: one row per job, ``policy`` first: arrival, first start, finish, JCT (s), restarts, rounds run
  and shared, compute seconds, dynamic energy (J), steps done and total;
* ``summary.json``: :func:`planner.sim.metrics.summarise`.

A comparison of several replays (``comparison.csv``) has one row per replay with the main
summary numbers. ``dropped.csv`` (next to it, or to a frontier's files) lists the selected trace jobs
not replayed because their job type has no profile on the cluster's GPU types: ``job_id, type``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_json_atomic, write_text_atomic
from wattplan.planner.sim.energy_levers import LEVERS
from wattplan.planner.sim.engine import RoundRecord, SimResult
from wattplan.planner.sim.state import JobState

ROUND_COLUMNS = (
    "policy",
    "round",
    "start_s",
    "queued",
    "running",
    "shared",
    "restarted",
    "arrived",
    "finished",
    "gpus_used",
    "powered_gpus",
    "nodes_on",
    "budget_j",
    "predicted_j",
    "energy_j",
    "node_j",
    "idle_j",
    "dynamic_j",
    "power_w",
    "busy_gpu_s",
    "powered_gpu_s",
    "steps",
    "solver_s",
    "solver",
    "status",
    "note",
    "clock_stops",
    "delta",
    "credit_weight",
    "unobserved",
    "bounded",
    "phase",
    "base_j",
    "setting_j",
    "count_j",
    "gpu_type_j",
    "pairing_j",
    "idle_gpus_j",
    "restarts_j",
)
DECISION_COLUMNS = (
    "round",
    "job_id",
    "type",
    "gpu_type",
    "gpus",
    "setting",
    "partner",
    "basis",
    "predicted_steps_per_s",
    "observed_steps_per_s",
    "predicted_power_w",
    "observed_power_w",
)
JOB_COLUMNS = (
    "policy",
    "job_id",
    "type",
    "arrival_s",
    "requested_gpus",
    "first_start_s",
    "finish_s",
    "jct_s",
    "restarts",
    "rounds_run",
    "rounds_shared",
    "compute_s",
    "dynamic_j",
    "steps_done",
    "total_steps",
)
COMPARISON_COLUMNS = (
    "policy",
    "budget",
    "stop_reason",
    "energy_kwh",
    "energy_node_kwh",
    "energy_idle_kwh",
    "energy_dynamic_kwh",
    "avg_jct_s",
    "median_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "makespan_s",
    "jobs_completed",
    "jobs_total",
    "gpu_utilisation",
    "energy_kwh_per_million_steps",
    "rounds_simulated",
    "solver_s_mean",
    "solver_s_max",
)


def _csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _num(x: float | None, digits: int = 6) -> str:
    return "" if x is None else f"{x:.{digits}g}"


NODES_ON = "nodes_on"
"""The place in :data:`ROUND_COLUMNS` that becomes one ``nodes_on_<type>`` column per GPU type."""


def round_columns(gpu_types: Sequence[str]) -> tuple[str, ...]:
    """The ``rounds.csv`` header: :data:`ROUND_COLUMNS` with ``nodes_on`` spread into ``nodes_on_<type>``."""
    spread = tuple(f"{NODES_ON}_{g}" for g in gpu_types)
    k = ROUND_COLUMNS.index(NODES_ON)
    return ROUND_COLUMNS[:k] + spread + ROUND_COLUMNS[k + 1 :]


def round_gpu_types(result: SimResult) -> tuple[str, ...]:
    """The GPU types of ``result``'s ``nodes_on_<type>`` columns: the cluster's, else every type a round had on."""
    if result.gpu_types:
        return tuple(result.gpu_types)
    return tuple(sorted({g for r in result.rounds for g in r.nodes_on}))


def round_row(r: RoundRecord, duration_s: float, policy: str, gpu_types: Sequence[str]) -> tuple[Any, ...]:
    """One ``rounds.csv`` row of ``policy`` (energies in J, ``power_w = energy_j / T`` in W with ``T = duration_s``).

    The nodes on are one count per type of ``gpu_types`` (0 for a type with none on).
    """
    return (
        policy,
        r.index,
        _num(r.start_s, 12),
        r.queued,
        r.running,
        r.shared,
        r.restarted,
        r.arrived,
        r.finished,
        r.gpus_used,
        r.powered_gpus,
        *(r.nodes_on.get(g, 0) for g in gpu_types),
        _num(r.budget_j, 10),
        _num(r.predicted_j, 10),
        _num(r.energy_j, 10),
        _num(r.node_j, 10),
        _num(r.idle_j, 10),
        _num(r.dynamic_j, 10),
        _num(r.energy_j / duration_s, 8),
        _num(r.busy_gpu_s, 10),
        _num(r.powered_gpu_s, 10),
        _num(r.steps, 10),
        f"{r.decide_s:.4f}",
        r.solver,
        r.status,
        r.note,
        "" if r.clock_stops is None else r.clock_stops,
        _num(r.delta),
        _num(r.credit_weight),
        "" if r.unobserved is None else r.unobserved,
        r.bounded,
        r.phase,
        *(_num(getattr(r.levers, name), 10) for name in ("base", *LEVERS)),
    )


def rounds_csv(result: SimResult) -> str:
    """The ``rounds.csv`` text: one row per round (:func:`round_row`)."""
    types = round_gpu_types(result)
    rows = [round_row(r, result.duration_s, result.policy, types) for r in result.rounds]
    return _csv_text(round_columns(types), rows)


def decisions_csv(result: SimResult) -> str:
    """The ``decisions.csv`` text of a learning replay: per running job-round, belief against observation."""
    rows = [
        (
            d.round,
            d.job_id,
            d.job_type,
            d.gpu_type,
            d.gpus,
            d.setting,
            d.partner or "",
            d.basis,
            _num(d.predicted_steps_per_s, 8),
            _num(d.observed_steps_per_s, 8),
            _num(d.predicted_power_w, 8),
            _num(d.observed_power_w, 8),
        )
        for d in result.decisions
    ]
    return _csv_text(DECISION_COLUMNS, rows)


def job_row(s: JobState, policy: str) -> tuple[Any, ...]:
    """One ``jobs.csv`` row of ``policy`` (times in s, dynamic energy in J)."""
    return (
        policy,
        s.id,
        s.spec.type,
        _num(s.spec.arrival_s, 12),
        s.spec.requested_gpus,
        _num(s.first_start_s, 12),
        _num(s.finish_s, 12),
        _num(s.jct_s, 12),
        s.restarts,
        s.rounds_run,
        s.rounds_shared,
        _num(s.compute_s, 10),
        _num(s.dynamic_energy_j, 10),
        _num(s.steps_done, 12),
        _num(s.spec.total_steps, 12),
    )


def jobs_csv(result: SimResult) -> str:
    """The ``jobs.csv`` text: one row per job (:func:`job_row`)."""
    return _csv_text(JOB_COLUMNS, [job_row(s, result.policy) for s in result.jobs])


def csv_lines(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """``rows`` (after ``header`` when given) as CSV text, as the files above write them."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header is not None:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def write_result(result: SimResult, summary: dict[str, Any], folder: Path) -> None:
    """``rounds.csv``, ``jobs.csv``, ``summary.json`` (and a learning replay's ``decisions.csv``) in ``folder``."""
    folder = Path(folder)
    write_text_atomic(folder / "rounds.csv", rounds_csv(result))
    if result.decisions:
        write_text_atomic(folder / "decisions.csv", decisions_csv(result))
    write_text_atomic(folder / "jobs.csv", jobs_csv(result))
    write_json_atomic(folder / "summary.json", summary)


DROPPED_FILE = "dropped.csv"
DROPPED_COLUMNS = ("job_id", "type")


def dropped_csv(by_type: Mapping[str, Sequence[str]]) -> str:
    """The ``dropped.csv`` text: one row per dropped job, grouped by job type."""
    return _csv_text(DROPPED_COLUMNS, [(job_id, t) for t, ids in by_type.items() for job_id in ids])


def write_dropped(folder: Path, by_type: Mapping[str, Sequence[str]]) -> Path | None:
    """Write ``folder/dropped.csv`` when a job was dropped and return it; else remove an older one, return None."""
    path = Path(folder) / DROPPED_FILE
    if not any(by_type.values()):
        path.unlink(missing_ok=True)
        return None
    write_text_atomic(path, dropped_csv(by_type))
    return path


def comparison_csv(summaries: Sequence[dict[str, Any]], columns: Sequence[str] = COMPARISON_COLUMNS) -> str:
    """One row per summary with ``columns`` (missing values empty)."""
    rows = [[("" if s.get(c) is None else s.get(c)) for c in columns] for s in summaries]
    return _csv_text(columns, rows)
