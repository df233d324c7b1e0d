"""``wattplan agent report``: what the agent did over a period, from its SQLite state (read-only, while it runs).

The state (:mod:`planner.agent.store`) keeps every round, every Slurm call with its outcome, every managed job
with its arrival, restarts and end, and each round's observations. From them, over the rounds that started in
``[since_s, until_s]`` and the jobs that arrived in it (seconds since the agent's first round; a job that arrived
before it counts as arriving at it):

* rounds by status, the solve's and the loop's own time per round (median and max, real s);
* Slurm calls by verb (``requeuehold``, ``uhold``, ``update``, ``power_down``, ``release``) and outcome (ok,
  refused, failed);
* jobs seen, ended by Slurm's end state, still waiting or running; restarts (requeues the agent made);
* JCT of the completed jobs, ``ended_s - arrival_s`` (average and p95, s);
* the agent's own latency: for each job the round that first saw it released (the agent's part of a start when
  the job fits; not a job submitted before the agent's first round), from its arrival (Slurm's submit time) to
  that release, in the agent's clock and in real seconds:
  the wait for the next ``squeue`` read and the round itself (:func:`release_latency`). Slurm's own start after the
  release is not in it. On an emulated cluster the agent's clock runs ``--time-scale`` times faster than real
  time: the scale is read off the rounds' two clocks;
* GPU energy measured: DCGM's, apportioned to the managed jobs, summed over the observed windows (kWh);
* with an energy budget (``--energy-budget-kwh``, :mod:`planner.agent.energy_budget`): the budget, its period and
  the whole cluster's energy charged to each period since the agent's first round (kWh), whatever the window;
* with ``--learn``: what the learner was shown over the period (:mod:`planner.agent.learned_state`): per GPU type
  the idle power its GPUs no job held showed (W, weighted by idle GPU-rounds), and per job type, GPU type, count and
  setting the rate (steps/s) and GPU power (W per GPU, jobs alone) the whole windows showed, weighted by their
  length in rounds: measured figures to set beside the profiles';
* the completed jobs against the agent's reference, Slurm alone at full power (``fifo-max`` in continuous time over
  the jobs seen, :func:`planner.agent.reference.slurm_reference_runs`, kept per job in the state): their measured
  GPU energy against the reference's (each job's GPUs at the top setting's profiled power for the time its steps
  take there, start-up not counted), and their JCT against the reference's (:func:`against_reference`). The
  reference is a model of Slurm on the profiles, not a second run: ``cluster report --against`` compares two runs.

The file is opened read-only (SQLite's ``mode=ro``), so a report never blocks or changes a running agent. JCT
statistics are :func:`planner.sim.metrics.jct_stats`, as in every report.
"""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from wattplan.planner.agent.energy_budget import BudgetPeriods, energy_by_period
from wattplan.planner.agent.learned_state import parsed_feed
from wattplan.planner.agent.slurm_actions import SlurmCall
from wattplan.planner.agent.store import StoreError
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.sim.metrics import J_PER_KWH, jct_stats


@dataclass(frozen=True, slots=True)
class RoundPoint:
    """One round for the plot: its time (agent clock, s), jobs running and waiting, and GPU energy measured (J).

    The energy is the managed jobs' over the window that ended at the round.
    """

    t_s: float
    running: int
    waiting: int
    measured_j: float


@dataclass(frozen=True, slots=True)
class AgainstReference:
    """The completed jobs that have a reference run, measured against it (module docstring); J and s."""

    jobs: int = 0
    measured_j: float = 0.0
    reference_j: float = 0.0
    avg_jct_s: float | None = None
    p95_jct_s: float | None = None
    reference_avg_jct_s: float | None = None
    reference_p95_jct_s: float | None = None

    @property
    def saved_fraction(self) -> float | None:
        """``1 - measured / reference`` GPU energy (None without a reference energy)."""
        return None if self.reference_j <= 0 else 1.0 - self.measured_j / self.reference_j


class Queries(Protocol):
    """What :func:`against_reference` needs of a database: a connection, or the agent's guarded one."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        ...


def against_reference(db: Queries, job_ids: Collection[str] | None = None) -> AgainstReference:
    """The completed jobs (of ``job_ids``; None: all) against the reference.

    A job's measured energy is the sum of its observed windows (DCGM, J); its reference energy and finish are the
    state's ``ref_energy_j`` and ``ref_finish_s``; a JCT is the end (or reference finish) less the arrival.
    """
    rows = db.execute(
        "SELECT j.job_id, j.arrival_s, j.ended_s, j.ref_finish_s, j.ref_energy_j,"
        " (SELECT COALESCE(SUM(o.energy_j), 0) FROM observations o WHERE o.job_id = j.job_id)"
        " FROM jobs j WHERE j.end_state = 'COMPLETED' AND j.ended_s IS NOT NULL"
        " AND j.ref_finish_s IS NOT NULL AND j.ref_energy_j IS NOT NULL"
    ).fetchall()
    rows = [r[1:] for r in rows if job_ids is None or r[0] in job_ids]
    if not rows:
        return AgainstReference()
    avg, p95 = jct_stats([r[1] - r[0] for r in rows])
    ref_avg, ref_p95 = jct_stats([r[2] - r[0] for r in rows])
    return AgainstReference(len(rows), sum(r[4] for r in rows), sum(r[3] for r in rows), avg, p95, ref_avg, ref_p95)


@dataclass
class ReferenceTally:
    """:func:`against_reference` over all completed jobs, recomputed only when the completed jobs change.

    Its query sums every completed job's observations; the agent's metrics want it each round. It is recomputed
    when the number of completed jobs differs from the last round's and on the round after (a job's last window
    may be recorded the round after its end is seen); otherwise the last figures stand.
    """

    completed: int = -1
    fresh_rounds: int = 0
    last: AgainstReference = field(default_factory=AgainstReference)

    def update(self, db: Queries) -> AgainstReference:
        """This round's figures (module docstring); one count query when nothing ended."""
        count = int(db.execute("SELECT COUNT(*) FROM jobs WHERE end_state = 'COMPLETED'").fetchone()[0])
        if count != self.completed:
            self.completed, self.fresh_rounds = count, 2
        if self.fresh_rounds > 0:
            self.fresh_rounds -= 1
            self.last = against_reference(db)
        return self.last


@dataclass(frozen=True, slots=True)
class ReleaseLatency:
    """The agent's own latency (module docstring): median, 90th percentile and max over ``jobs``, agent-clock s.

    ``time_scale`` agent-clock seconds pass per real second (1 on a real cluster), so a real-second figure is the
    agent-clock one over it.
    """

    jobs: int = 0
    median_s: float | None = None
    p90_s: float | None = None
    max_s: float | None = None
    time_scale: float = 1.0


def release_waits(
    db: Queries,
    at_s: Callable[[float], float],
    job_ids: Collection[str] | None = None,
    rounds: Collection[int] | None = None,
) -> list[float]:
    """Each job's wait from its ``arrival_s`` to its release by the round that first saw it (agent-clock s).

    ``at_s`` turns a Unix time into the agent's clock; only the jobs of ``job_ids`` and the rounds of ``rounds``
    count (None: all). Left out, as not the agent's latency: a job released later than its first round (it waited
    for GPUs or was held) and a job submitted before the agent's first round (it waited for the agent to start). A
    wait is floored at 0.
    """
    started = db.execute("SELECT MIN(started_s) FROM rounds").fetchone()[0]
    only = "" if rounds is None else f" AND {{col}} IN ({', '.join(str(int(r)) for r in rounds) or 'NULL'})"
    first_seen = {
        str(j): (arrival, seen)
        for j, arrival, seen in db.execute(
            "SELECT job_id, arrival_s, first_seen_round FROM jobs WHERE 1" + only.format(col="first_seen_round")
        ).fetchall()
    }
    released: dict[str, float] = {}
    rows = db.execute(
        "SELECT round, jobs, sent_unix FROM actions WHERE status = 'ok' AND argv LIKE '[\"scontrol\", \"release\"%'"
        + only.format(col="round")
    ).fetchall()
    for rnd, jobs, sent in rows:
        if sent is None:
            continue
        for job in json.loads(jobs):
            key = str(job)
            if key not in first_seen or (job_ids is not None and key not in job_ids):
                continue
            arrival, seen = first_seen[key]
            if seen == rnd and started is not None and arrival >= started:
                released[key] = min(released.get(key, math.inf), at_s(sent))
    return sorted(max(0.0, at - first_seen[j][0]) for j, at in released.items())


def release_latency(db: Queries, job_ids: Collection[str] | None = None) -> ReleaseLatency:
    """The agent's latency over the jobs (of ``job_ids``; None: all) released by the round that first saw them.

    A release sent at Unix time ``u`` happened at ``s_0 + (u - u_0) k`` on the agent's clock, where ``u_0`` and
    ``s_0`` are the first round's start on both clocks and ``k`` the time scale: the slope of the agent's clock
    against Unix time over the rounds (1 with fewer than two rounds apart). A job's latency is that time less its
    ``arrival_s`` (:func:`release_waits`). Slurm keeps submit times in whole seconds, so each figure may be up to
    one real second (``k`` agent-clock seconds) high: ``benchmarks/slurm_latency.py`` reads the same to the
    millisecond from ``slurmctld``'s log.
    """
    starts = sorted(db.execute("SELECT round, started_unix, started_s FROM rounds").fetchall())
    if not starts:
        return ReleaseLatency()
    (_, u0, t0), (_, u1, t1) = starts[0], starts[-1]
    scale = (t1 - t0) / (u1 - u0) if u1 - u0 > 1e-6 and t1 > t0 else 1.0
    waits = release_waits(db, lambda u: t0 + (u - u0) * scale, job_ids)
    if not waits:
        return ReleaseLatency(time_scale=scale)
    return ReleaseLatency(len(waits), statistics.median(waits), float(np.percentile(waits, 90)), waits[-1], scale)


@dataclass(frozen=True)
class LearnedRate:
    """One configuration's measured rate over the whole windows the learner took (``--learn``)."""

    job_type: str
    gpu_type: str
    gpus: int
    setting: int
    windows: int
    rounds: float
    """The windows' length in rounds (the weights the learner gave them)."""
    steps_per_s: float
    """The windows' rate, weighted by their length (steps/s)."""
    power_w: float | None
    """The GPUs' power per GPU, weighted the same, over the windows of a job alone on its GPUs (W); None: none."""


@dataclass
class AgentReport:
    """The period's summary (module docstring); times in s, energy in kWh."""

    state: str
    first_round_unix: float | None = None
    last_round_unix: float | None = None
    rounds: dict[str, int] = field(default_factory=dict)
    solve_s_median: float | None = None
    solve_s_max: float | None = None
    overhead_s_median: float | None = None
    overhead_s_max: float | None = None
    calls: dict[str, dict[str, int]] = field(default_factory=dict)
    jobs_seen: int = 0
    jobs_ended: dict[str, int] = field(default_factory=dict)
    jobs_active: int = 0
    restarts: int = 0
    avg_jct_s: float | None = None
    p95_jct_s: float | None = None
    measured_kwh: float = 0.0
    against: AgainstReference = field(default_factory=AgainstReference)
    latency: ReleaseLatency = field(default_factory=ReleaseLatency)
    points: list[RoundPoint] = field(default_factory=list)
    budget_kwh: float | None = None
    budget_period_s: float | None = None
    period_kwh: list[float] = field(default_factory=list)
    """The cluster's energy charged to each period of the energy budget, from the first (kWh)."""
    learned_rounds: int = 0
    """Rounds of the period whose observations the learner took (``--learn``)."""
    learned_idle_w: dict[str, float] = field(default_factory=dict)
    """Per GPU type, the idle power its GPUs no job held showed (W per GPU), weighted by idle GPU-rounds."""
    learned_rates: list[LearnedRate] = field(default_factory=list)
    """Per job type, GPU type, count and setting, what the learner's windows showed."""

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values (the round points as lists)."""
        return asdict(self)


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise InputError(str(path), [Problem("no-state", str(path), "no agent state file here (--state, --cluster)")])
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
        db.execute("SELECT round FROM rounds LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise InputError(str(path), [Problem("bad-state", str(path), f"not an agent state file: {exc}")]) from None
    return db


def agent_report(path: Path, since_s: float | None = None, until_s: float | None = None) -> AgentReport:
    """The report of the state file ``path`` over ``[since_s, until_s]`` (s since the first round; None: open)."""
    db = _open(path)
    try:
        low, high = -math.inf if since_s is None else since_s, math.inf if until_s is None else until_s
        out = AgentReport(str(path))
        every = db.execute(
            "SELECT round, started_unix, started_s, status, running, waiting, overhead_s, solve_s "
            "FROM rounds ORDER BY round"
        ).fetchall()
        t0 = every[0][2] if every else 0.0
        rounds = [r for r in every if low <= r[2] - t0 <= high]
        chosen = {r[0] for r in rounds}
        out.rounds = dict(Counter(r[3] for r in rounds))
        if rounds:
            out.first_round_unix, out.last_round_unix = rounds[0][1], rounds[-1][1]
        solve = [r[7] for r in rounds if r[7] is not None]
        overhead = [r[6] for r in rounds if r[6] is not None]
        if solve:
            out.solve_s_median, out.solve_s_max = statistics.median(solve), max(solve)
        if overhead:
            out.overhead_s_median, out.overhead_s_max = statistics.median(overhead), max(overhead)
        calls: dict[str, Counter[str]] = {}
        for rnd, argv, status in db.execute("SELECT round, argv, status FROM actions").fetchall():
            if rnd in chosen:
                verb = SlurmCall(tuple(json.loads(argv)), ()).verb
                calls.setdefault(verb, Counter())[status] += 1
        out.calls = {verb: dict(count) for verb, count in sorted(calls.items())}
        measured: Counter[int] = Counter()
        for rnd, energy in db.execute("SELECT round, energy_j FROM observations").fetchall():
            if rnd in chosen and energy is not None:
                measured[rnd] += energy
        out.measured_kwh = sum(measured.values()) / J_PER_KWH
        out.points = [RoundPoint(r[2], r[4] or 0, r[5] or 0, measured.get(r[0], 0.0)) for r in rounds]
        jobs = [
            j
            for j in db.execute("SELECT job_id, arrival_s, restarts, end_state, ended_s FROM jobs").fetchall()
            if low <= max(j[1] - t0, 0.0) <= high
        ]
        out.jobs_seen = len(jobs)
        out.jobs_ended = dict(Counter(j[3] for j in jobs if j[3] is not None))
        out.jobs_active = sum(1 for j in jobs if j[3] is None)
        out.restarts = sum(j[2] for j in jobs)
        out.avg_jct_s, out.p95_jct_s = jct_stats(
            [j[4] - j[1] for j in jobs if j[3] == "COMPLETED" and j[4] is not None]
        )
        out.against = against_reference(db, {j[0] for j in jobs})
        out.latency = release_latency(db, {str(j[0]) for j in jobs})
        _budget_periods(db, out)
        _learned(db, path, chosen, out)
        return out
    finally:
        db.close()


def _learned(db: sqlite3.Connection, path: Path, chosen: Collection[int], out: AgentReport) -> None:
    """What the learner was shown in the ``chosen`` rounds (module docstring); nothing when the state keeps none.

    A damaged feed is a :class:`StoreError` naming its round.
    """
    try:
        rows = db.execute("SELECT round, jobs, gpus FROM learner_feed ORDER BY round").fetchall()
    except sqlite3.OperationalError:  # a state written before the table existed, opened read-only
        return
    idle: dict[str, list[float]] = {}
    rates: dict[tuple[str, str, int, int], list[float]] = {}
    for rnd, jobs_text, gpus_text in rows:
        if rnd not in chosen:
            continue
        try:
            jobs, gpus = parsed_feed(path, rnd, json.loads(jobs_text), json.loads(gpus_text))
        except ValueError as err:
            raise StoreError(f"{path}: learner_feed round {rnd} is not JSON ({err})", "bad-state") from None
        out.learned_rounds += 1
        for g in gpus:
            if g.idle_power_w is not None and g.idle_weight > 0:
                sums = idle.setdefault(g.gpu_type, [0.0, 0.0])
                sums[0] += g.idle_power_w * g.idle_weight
                sums[1] += g.idle_weight
        for o in jobs:
            if o.partner_type is not None or o.weight <= 0:
                continue
            acc = rates.setdefault((o.job_type, o.gpu_type, o.gpus, o.setting), [0.0, 0.0, 0.0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += o.weight
            acc[2] += o.steps_per_s * o.weight
            if o.power_w is not None:
                acc[3] += o.power_w * o.weight
                acc[4] += o.weight
    out.learned_idle_w = {g: w / n for g, (w, n) in sorted(idle.items())}
    out.learned_rates = [
        LearnedRate(jt, g, n, s, int(acc[0]), acc[1], acc[2] / acc[1], acc[3] / acc[4] if acc[4] > 0 else None)
        for (jt, g, n, s), acc in sorted(rates.items())
    ]


def _budget_periods(db: sqlite3.Connection, out: AgentReport) -> None:
    """The energy budget the state keeps (none: nothing set) and the energy charged to each of its periods."""
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'budget_%'").fetchall())
    if not {"budget_origin_s", "budget_period_s", "budget_energy_j"} <= meta.keys():
        return
    periods = BudgetPeriods(
        float(meta["budget_energy_j"]), float(meta["budget_period_s"]), float(meta["budget_origin_s"])
    )
    windows = db.execute("SELECT start_s, end_s, energy_j FROM energy_windows ORDER BY end_s").fetchall()
    drawn = energy_by_period(windows, periods)
    out.budget_kwh, out.budget_period_s = periods.energy_j / J_PER_KWH, periods.period_s
    out.period_kwh = [drawn.get(k, 0.0) / J_PER_KWH for k in range(max(drawn, default=-1) + 1)]


def report_rows(report: AgentReport) -> list[tuple[str, str]]:
    """The report as ``(what, value with its unit)`` rows for a table."""

    def secs(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f} s"

    rows = [
        ("rounds", ", ".join(f"{n} {status}" for status, n in sorted(report.rounds.items())) or "none"),
        ("solve per round (median / max)", f"{secs(report.solve_s_median)} / {secs(report.solve_s_max)}"),
        ("loop per round (median / max)", f"{secs(report.overhead_s_median)} / {secs(report.overhead_s_max)}"),
    ]
    for verb, outcomes in report.calls.items():
        rows.append((f"Slurm calls: {verb}", ", ".join(f"{n} {s}" for s, n in sorted(outcomes.items()))))
    ended = ", ".join(f"{n} {state.lower()}" for state, n in sorted(report.jobs_ended.items())) or "none"
    rows += [
        ("managed jobs seen", f"{report.jobs_seen} ({ended}; {report.jobs_active} waiting or running)"),
        ("restarts (requeues)", str(report.restarts)),
        ("completed jobs' JCT (avg / p95)", f"{secs(report.avg_jct_s)} / {secs(report.p95_jct_s)}"),
        ("GPU energy of the managed jobs (DCGM)", f"{report.measured_kwh:,.3f} kWh"),
    ]
    lat = report.latency
    if lat.jobs and lat.median_s is not None and lat.p90_s is not None:
        real = ""
        if abs(lat.time_scale - 1.0) > 1e-3:  # an emulated cluster's clock: say the real seconds too
            k = lat.time_scale
            real = f" (real: {secs(lat.median_s / k)} / {secs(lat.p90_s / k)} at time scale {k:,.3g})"
        rows.append(
            (
                f"submission to release, {lat.jobs} jobs released by their first round (median / p90)",
                f"{secs(lat.median_s)} / {secs(lat.p90_s)}{real}",
            )
        )
    if report.budget_kwh is not None and report.budget_period_s is not None:
        drawn = report.period_kwh
        said = f"most {max(drawn):,.3f} kWh, the last {drawn[-1]:,.3f} kWh" if drawn else "none charged yet"
        rows.append(
            (
                f"energy budget {report.budget_kwh:,.3f} kWh per {report.budget_period_s:,.0f} s",
                f"{len(drawn)} period(s) drawn: {said}",
            )
        )
    if report.learned_rounds:
        windows = sum(r.windows for r in report.learned_rates)
        rows.append(
            (
                "what the learner was shown (--learn)",
                f"{report.learned_rounds} round(s): {windows} whole job windows over {len(report.learned_rates)} "
                "configuration(s) (--json has each)",
            )
        )
        rows += [(f"idle power seen, {g}", f"{w:,.1f} W per GPU") for g, w in report.learned_idle_w.items()]
    a = report.against
    if a.jobs:
        saved = a.saved_fraction
        rows += [
            (
                f"against Slurm alone at full power ({a.jobs} completed jobs): GPU energy",
                f"{a.measured_j / J_PER_KWH:,.3f} kWh measured, {a.reference_j / J_PER_KWH:,.3f} kWh modelled"
                + ("" if saved is None else f" ({100 * saved:+.1f}% saved)"),
            ),
            (
                "against Slurm alone: JCT (avg / p95)",
                f"{secs(a.avg_jct_s)} / {secs(a.p95_jct_s)}, modelled {secs(a.reference_avg_jct_s)} / "
                f"{secs(a.reference_p95_jct_s)}",
            ),
        ]
    return rows


def report_figure(report: AgentReport) -> Any:
    """The period's figure (a :class:`matplotlib.figure.Figure`), hours since its first round on the x axis.

    Two panels: managed jobs running and waiting; the managed jobs' GPU power measured over each window (kW).
    """
    from wattplan.planner.sim.plots import new_figure

    fig, top = new_figure(7.0, 5.0)
    top.remove()
    upper, lower = fig.subplots(2, 1, sharex=True)
    t0 = report.points[0].t_s if report.points else 0.0
    hours = [(p.t_s - t0) / 3600.0 for p in report.points]
    upper.step(hours, [p.running for p in report.points], where="post", label="running")
    upper.step(hours, [p.waiting for p in report.points], where="post", label="waiting", linestyle="--")
    upper.set_ylabel("managed jobs")
    upper.legend(loc="upper right")
    power = [
        0.0 if i == 0 else p.measured_j / max(p.t_s - report.points[i - 1].t_s, 1e-9) / 1000.0
        for i, p in enumerate(report.points)
    ]
    lower.step(hours, power, where="pre")
    lower.set_ylabel("managed jobs' GPU power (kW)")
    lower.set_xlabel("hours since the first round")
    return fig
