"""The deadline floor: the least energy any schedule could spend when jobs must finish in time (docs/design.md §14).

The energy floor (:mod:`formulations.energy_floor`) leaves time free, so it may be out of reach of a schedule
held to JCT limits. This LP adds them. Each job ``j`` with steps left ``R_j`` is a class of its own (no pooling:
windows differ), and the columns are the floor's configuration *times* (s): every exclusive configuration of a
job, and every pair configuration of two different jobs (:func:`formulations.energy_floor.floor_columns`). Rows:

* steps: ``sum_c X_cj t_c >= R_j`` for every job;
* time: ``sum_{c serving j} t_c <= W_j`` for every job with a window ``W_j`` (s, from its arrival to its
  deadline): a job runs in one configuration at a time and not before it arrives, so whatever it ran by its
  deadline took at most ``W_j`` of configuration time;
* processing (optional): ``sum_j sum_{c serving j} t_c <= S`` (a pair counts for both jobs): a job's JCT is at
  least its configuration time, so a schedule with ``sum_j JCT_j <= S`` meets it.

Minimised: ``sum_c power_c t_c`` (J), the floor's accounting. Capacity is left out (relaxed), as in the floor, so
the value is a lower bound on the energy of every schedule whose jobs meet their windows under the replay's
accounting; it is certified from the duals (:func:`formulations.energy_floor.certified_bound`, rows written
``A t >= b``).

**Free jobs** (``free_jobs = m > 0``): a p95 limit lets any ``m`` jobs take as long as they like. Binary ``u_j``
(1: job ``j`` keeps its window), ``sum_j u_j >= n - m`` over the ``n`` jobs with windows (but those named
``hard``, which keep theirs), and the time row
``sum t - M_j (1 - u_j) <= W_j`` with ``M_j = R_j / x_j - W_j`` (``x_j`` the slowest rate any column gives
``j``, so a free job never needs more). This is a MILP; its value is the solver's proven bound, not
certified by duals here, and the result says so.

**Outer windows** (``outer``, :class:`OuterWindows`): a second, later window ``V_j >= W_j`` per job, of which at
most ``m'`` jobs may miss theirs (a p95 interpolated between two ranks limits two of them: ``k + 1`` jobs within
one time, ``k + 2`` within a later one). A second binary ``v_j`` per job, ``sum_j v_j >= n' - m'``, and the time row
``sum t - M'_j (1 - v_j) <= V_j``. No row ties ``v`` to ``u``: a job that keeps ``W_j`` keeps ``V_j`` too.

**Timeline** (optional, :class:`Timeline`): a column per configuration and slot, capacity rows per slot
(:func:`_timeline_rows`), slots up to the last deadline and then one overflow slot without capacity. With
``whole_nodes`` static power is charged by the node kept on, not by each GPU's share (:func:`_node_rows`): a job
alone keeps its whole node on, which the floor's accounting never charges.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from wattplan.formulations.backends.base import SolveParams, SolverResult, SolveStatus
from wattplan.formulations.backends.registry import backend_with
from wattplan.formulations.energy_floor import (
    FLOOR_METHODS,
    FLOOR_OBJECTIVE,
    DemandClass,
    FloorColumn,
    certified_bound,
    floor_columns,
    run_floor_lp,
)
from wattplan.formulations.ir import INF, LinearModel, ModelBuilder
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.domain import Instance, Job
from wattplan.planner.contracts.floor import DeadlineFloor

DEADLINE_FLOOR_TIME_LIMIT_S = 120.0
"""Wall seconds the LP (or MILP) may take."""
J_PER_KWH = 3.6e6
PRIMAL_TOLERANCE = 1e-6
"""A method's answer counts only when its primal meets every (scaled) row within this."""


@dataclass(frozen=True, slots=True)
class _Built:
    """The model and its rows' right-hand sides ``b`` (rows ``A t >= b``, for the certificate)."""

    lm: LinearModel
    rhs: np.ndarray
    steps_per_value: np.ndarray
    """Steps (all jobs) per unit of each model column's value; 0 for the keep binaries."""
    paired: np.ndarray
    """True for the columns of pair configurations."""
    slot: np.ndarray
    """Each model column's slot (-1: none, the keep binaries or no timeline)."""
    slots: int
    """Slots of the timeline, the overflow included (0 without one)."""


@dataclass(frozen=True, slots=True)
class OuterWindows:
    """Later windows (s from arrival, each at least the job's window) of which at most ``late`` may be missed."""

    windows_s: Mapping[str, float]
    late: int


@dataclass(frozen=True, slots=True)
class Timeline:
    """Slots of ``slot_s`` seconds from the first arrival, for the capacity rows (module docstring)."""

    arrivals_s: Mapping[str, float]
    slot_s: float
    whole_nodes: bool = False
    """Charge static power by the node (node rows, module docstring) instead of each GPU's share of it."""


def _overlap(lo: float, hi: float, a: float, b: float) -> float:
    """Length (s) of ``[lo, hi] & [a, b]``."""
    return max(0.0, min(hi, b) - max(lo, a))


def _job_columns(instance: Instance) -> tuple[list[Job], list[DemandClass], list[FloorColumn]]:
    """The jobs with steps left, one class each (windows differ), and every configuration serving them.

    A configuration that gives a job less than its ``min_rate`` (its slowdown limit, steps/s) is left out, as the
    round model leaves it out: no schedule that keeps the limit runs it.
    """
    jobs = [j for j in instance.jobs if j.remaining_steps > 0]
    classes = [DemandClass(j.type, tuple(sorted(j.gpus)), j.remaining_steps, 1) for j in jobs]
    columns = floor_columns(instance, classes, self_pairs=False)
    return jobs, classes, [c for c in columns if all(rate >= jobs[k].min_rate for k, rate in c.rates)]


def _build(
    instance: Instance,
    windows_s: Mapping[str, float],
    free_jobs: int,
    processing_sum_s: float | None,
    timeline: Timeline | None = None,
    outer: OuterWindows | None = None,
    hard: frozenset[str] = frozenset(),
) -> _Built:
    """The model of the module docstring, rows as ``A t >= b`` scaled to ``b`` in {1, -1, ...}, costs in kWh.

    Without a timeline a model column is a configuration; with one it is a configuration in a slot.
    """
    jobs, classes, columns = _job_columns(instance)
    scale = np.array([max(rate / classes[k].steps for k, rate in c.rates) for c in columns])
    slowest = [INF] * len(jobs)
    for col in columns:
        for k, rate in col.rates:
            slowest[k] = min(slowest[k], rate)
    bound_jobs = [k for k, j in enumerate(jobs) if j.id in windows_s and slowest[k] < INF]
    soft = [k for k in bound_jobs if jobs[k].id not in hard] if free_jobs > 0 else []
    outer_s: Mapping[str, float] = {} if outer is None else outer.windows_s
    outer_jobs = [k for k in soft if jobs[k].id in outer_s]
    # copies: (configuration, slot) pairs; slot -1 without a timeline
    copies: list[tuple[int, int]] = [(c, -1) for c in range(len(columns))]
    lines: _Lines | None = None
    if timeline is not None:
        arrive = [timeline.arrivals_s[j.id] for j in jobs]
        due = [arrive[k] + windows_s[j.id] if k in bound_jobs else INF for k, j in enumerate(jobs)]
        t0 = min(arrive)
        due_outer = [arrive[k] + outer_s[jobs[k].id] if k in outer_jobs else due[k] for k in range(len(jobs))]
        end = max([max(arrive) + timeline.slot_s] + [d for d in due_outer if d < INF])
        n_slots = max(int(np.ceil((end - t0) / timeline.slot_s)), 1)
        end = t0 + n_slots * timeline.slot_s
        slots = [(t0 + i * timeline.slot_s, t0 + (i + 1) * timeline.slot_s) for i in range(n_slots)]
        slots.append((end, INF))  # the overflow slot: no capacity row, so every schedule fits
        # where a job may compute: to its deadline, or on without end when it has none or may go free
        reach = [INF if k in soft or due[k] == INF else due[k] for k in range(len(jobs))]
        copies = []
        for c, col in enumerate(columns):
            lo = max(arrive[k] for k, _ in col.rates)
            hi = min(reach[k] for k, _ in col.rates)
            copies += [(c, i) for i, (a, b) in enumerate(slots) if _overlap(lo, hi, a, b) > 0]
        most = [classes[k].steps / slowest[k] if slowest[k] < INF else 0.0 for k in range(len(jobs))]
        lines = _Lines(slots, arrive, [min(d, end) for d in due], end, most, [min(d, end) for d in due_outer])
    mb = ModelBuilder()
    for c, i in copies:
        mb.add_col(columns[c].name if i < 0 else f"{columns[c].name}@{i}", 0.0, INF, False)
    serving: list[list[tuple[int, float]]] = [[] for _ in jobs]  # (model column, rate)
    for m, (c, _) in enumerate(copies):
        for k, rate in columns[c].rates:
            serving[k].append((m, rate))
    sc = np.array([scale[c] for c, _ in copies])
    rhs: list[float] = []
    for k, entries in enumerate(serving):
        if entries:
            cols = [m for m, _ in entries]
            mb.add_row(
                cols, [rate / classes[k].steps / sc[m] for m, rate in entries], 1.0, INF, f"steps[{k}]", "progress"
            )
            rhs.append(1.0)
    u_start = len(copies)
    keep_col: dict[int, int] = {}
    for k in soft:
        keep_col[k] = mb.add_col(f"keep[{jobs[k].id}]", 0.0, 1.0, True)
    outer_col: dict[int, int] = {}
    if outer is not None:
        for k in outer_jobs:
            outer_col[k] = mb.add_col(f"keep_outer[{jobs[k].id}]", 0.0, 1.0, True)
    for k in bound_jobs:
        most_s = classes[k].steps / slowest[k]
        _time_row(mb, rhs, serving[k], sc, windows_s[jobs[k].id], most_s, keep_col.get(k), f"time[{k}]")
        if k in outer_col:
            _time_row(mb, rhs, serving[k], sc, outer_s[jobs[k].id], most_s, outer_col[k], f"outer[{k}]")
    for name, cols_kept, late in (
        ("kept", keep_col, free_jobs),
        ("kept_outer", outer_col, 0 if outer is None else outer.late),
    ):
        if cols_kept:
            keep = max(len(cols_kept) - late, 0)
            mb.add_row(list(cols_kept.values()), [1.0] * len(cols_kept), keep, INF, name, "count")
            rhs.append(float(keep))
    if processing_sum_s is not None:
        cols = list(range(len(copies)))
        coefs = [-len(columns[c].rates) / processing_sum_s / sc[m] for m, (c, _) in enumerate(copies)]
        mb.add_row(cols, coefs, -1.0, INF, "processing", "progress")
        rhs.append(-1.0)
    power = np.array([columns[c].power_w for c, _ in copies])
    node_cost: dict[int, float] = {}
    node_slot: dict[int, int] = {}
    if lines is not None:
        draft = _Draft(mb, rhs, instance, columns, copies, sc, lines)
        _timeline_rows(draft, keep_col, outer_col)
        if timeline is not None and timeline.whole_nodes:
            static = {g.name: g.node_power_w / g.gpus_per_node + g.idle_power_w for g in instance.gpu_types}
            power = power - np.array([columns[c].gpus * static[columns[c].gpu_type] for c, _ in copies])
            node_cost, node_slot = _node_rows(draft)
    cost = np.zeros(mb.num_cols)
    cost[:u_start] = power / sc / J_PER_KWH
    for m, kwh in node_cost.items():
        cost[m] = kwh
    steps = np.zeros(mb.num_cols)
    steps[:u_start] = np.array([sum(rate for _, rate in columns[c].rates) for c, _ in copies]) / sc
    paired = np.zeros(mb.num_cols, dtype=bool)
    paired[:u_start] = [columns[c].paired for c, _ in copies]
    slot = np.full(mb.num_cols, -1, dtype=int)
    slot[:u_start] = [i for _, i in copies]
    for m, i in node_slot.items():
        slot[m] = i
    slot_count = 0 if lines is None else len(lines.slots)
    return _Built(mb.build({FLOOR_OBJECTIVE: cost}), np.array(rhs), steps, paired, slot, slot_count)


@dataclass(frozen=True, slots=True)
class _Lines:
    """The timeline's slots and each job's arrival, deadline (the end when it has none) and the end (s)."""

    slots: list[tuple[float, float]]
    """The slots, the last ``(end, INF)``: the overflow, without capacity."""
    arrive: list[float]
    due: list[float]
    end: float
    most_s: list[float]
    """``R_j / x_j``: the longest any job computes (s, its slowest rate), the overflow's big-M."""
    outer_due: list[float]
    """Each job's outer deadline (its deadline when it has no outer window; the end when it has none)."""


@dataclass(frozen=True, slots=True)
class _Draft:
    """The timeline model being built, as its row writers need it.

    Its builder and right-hand sides so far, the configurations, their copies ``(configuration, slot)`` with each
    copy's scale, and the slots.
    """

    mb: ModelBuilder
    rhs: list[float]
    instance: Instance
    columns: list[FloorColumn]
    copies: list[tuple[int, int]]
    sc: np.ndarray
    lines: _Lines


def _time_row(
    mb: ModelBuilder,
    rhs: list[float],
    serving: list[tuple[int, float]],
    sc: np.ndarray,
    window_s: float,
    most_s: float,
    keep: int | None,
    name: str,
) -> None:
    """``sum_{c serving j} t_c <= W`` (s), or ``<= W + M (1 - u)`` with ``M = most_s - W`` and ``u`` column ``keep``."""
    w = max(window_s, 1e-9)
    cols = [m for m, _ in serving]
    coefs = [-1.0 / w / sc[m] for m in cols]
    if keep is None:
        mb.add_row(cols, coefs, -1.0, INF, name, "progress")
        rhs.append(-1.0)
        return
    m_rel = max(most_s - w, 0.0) / w
    # sum t <= W + M (1 - u)   <=>   -sum t / W - (M/W) u >= -1 - M/W
    mb.add_row(cols + [keep], coefs + [-m_rel], -1.0 - m_rel, INF, name, "progress")
    rhs.append(-1.0 - m_rel)


def _timeline_rows(d: _Draft, keep_col: Mapping[int, int], outer_col: Mapping[int, int]) -> None:
    """Per slot: each job runs at most the slot's part of its window; each GPU type's GPU-seconds fit the slot.

    A job ``j`` in slot ``s``: ``sum_{c serving j} t_cs <= |s & [a_j, d_j]|``, plus ``|s & [d_j, e_j]| (1 - u_j)
    + |s & [e_j, end]| (1 - v_j)`` when it may go free (``u_j`` its keep binary; ``e_j`` and ``v_j`` its outer
    deadline and binary, or ``end`` and ``u_j`` without one). Type ``g`` in slot ``s``: ``sum_{c on g} n_c t_cs <=
    N_g K_g |s|``. Both hold for every schedule whose jobs keep their windows (a job computes in one configuration
    at a time, between its arrival and its deadline, after ``d_j`` only when it misses it, after ``e_j`` only when
    it misses that; a type has its GPUs).
    """
    mb, rhs, columns, copies, sc, lines = d.mb, d.rhs, d.columns, d.copies, d.sc, d.lines
    by_job_slot: dict[tuple[int, int], list[int]] = {}
    by_type_slot: dict[tuple[str, int], list[int]] = {}
    for m, (c, i) in enumerate(copies):
        for k, _ in columns[c].rates:
            by_job_slot.setdefault((k, i), []).append(m)
        by_type_slot.setdefault((columns[c].gpu_type, i), []).append(m)
    for (k, i), ms in sorted(by_job_slot.items()):
        a, b = lines.slots[i]
        inside = _overlap(lines.arrive[k], lines.due[k], a, b)
        late: dict[int, float] = {}  # keep binary -> the slot's seconds the job may compute only if it misses it
        if k in keep_col:
            last = outer_col.get(k, keep_col[k])
            late[keep_col[k]] = _overlap(lines.due[k], lines.outer_due[k], a, b)
            late[last] = late.get(last, 0.0) + _overlap(lines.outer_due[k], lines.end, a, b)
        if b == INF:  # the overflow: only a job without a deadline, or one that may go free, computes there
            if k not in keep_col:
                continue
            inside, late = 0.0, {outer_col.get(k, keep_col[k]): max(lines.most_s[k], 1e-9)}
        late = {u: s for u, s in late.items() if s > 0}
        cap = inside + sum(late.values())
        # sum t <= inside + sum_u late_u (1 - u)   <=>   -sum t / cap - sum_u (late_u / cap) u >= -1
        coefs = [-1.0 / cap / sc[m] for m in ms] + [-s / cap for s in late.values()]
        mb.add_row(ms + list(late), coefs, -1.0, INF, f"slot[{k},{i}]", "progress")
        rhs.append(-1.0)
    total = {g.name: g.total_gpus for g in d.instance.gpu_types}
    for (g, i), ms in sorted(by_type_slot.items()):
        a, b = lines.slots[i]
        if b == INF:
            continue
        cap = total[g] * (b - a)
        mb.add_row(ms, [-columns[copies[m][0]].gpus / cap / sc[m] for m in ms], -1.0, INF, f"gpus[{g},{i}]", "progress")
        rhs.append(-1.0)


def _node_rows(d: _Draft) -> tuple[dict[int, float], dict[int, int]]:
    """Node-seconds ``y_gs`` per GPU type and slot, with their rows; ``{model column: kWh per unit}``, its slot.

    Every schedule keeps ``N_g(t)`` whole nodes of type ``g`` on, drawing ``Pnode_g + K_g Pidle_g`` each, and
    its GPUs at work draw ``P - Pidle`` more. ``y_gs = int_s N_g(t) dt`` meets ``K_g y_gs >= sum_{c on g} n_c
    t_cs`` (GPUs at work are on) and, for each job ``j``, ``y_gs >= sum_{c on g serving j} ceil(n_c / K_g) t_cs``
    (while ``j`` runs on ``g`` its nodes are on: a job alone keeps a whole node on). The model's unit of ``y`` is
    one slot (an hour in the overflow).
    """
    mb, rhs, columns, copies, sc, lines = d.mb, d.rhs, d.columns, d.copies, d.sc, d.lines
    gpu = {g.name: g for g in d.instance.gpu_types}
    by_type_slot: dict[tuple[str, int], list[int]] = {}
    by_job_type_slot: dict[tuple[int, str, int], list[int]] = {}
    for m, (c, i) in enumerate(copies):
        g = columns[c].gpu_type
        by_type_slot.setdefault((g, i), []).append(m)
        for k, _ in columns[c].rates:
            by_job_type_slot.setdefault((k, g, i), []).append(m)
    cost: dict[int, float] = {}
    y: dict[tuple[str, int], int] = {}
    for (g, i), ms in sorted(by_type_slot.items()):
        a, b = lines.slots[i]
        unit = (b - a) if b < INF else 3600.0
        y[g, i] = mb.add_col(f"nodes[{g},{i}]", 0.0, INF, False)
        cost[y[g, i]] = (gpu[g].node_power_w + gpu[g].gpus_per_node * gpu[g].idle_power_w) * unit / J_PER_KWH
        k_g = gpu[g].gpus_per_node
        coefs = [-columns[copies[m][0]].gpus / (k_g * unit) / sc[m] for m in ms]
        mb.add_row([y[g, i], *ms], [1.0, *coefs], 0.0, INF, f"nodes[{g},{i}]", "progress")
        rhs.append(0.0)
    for (k, g, i), ms in sorted(by_job_type_slot.items()):
        a, b = lines.slots[i]
        unit = (b - a) if b < INF else 3600.0
        k_g = gpu[g].gpus_per_node
        coefs = [-float(np.ceil(columns[copies[m][0]].gpus / k_g)) / unit / sc[m] for m in ms]
        mb.add_row([y[g, i], *ms], [1.0, *coefs], 0.0, INF, f"job_nodes[{k},{g},{i}]", "progress")
        rhs.append(0.0)
    return cost, {m: i for (_, i), m in y.items()}


def _solve_lp(built: _Built, time_limit_s: float) -> SolverResult:
    """The LP's certified bound (kWh, ``bound``) and the primal's value (``objective``).

    The first method of :data:`formulations.energy_floor.FLOOR_METHODS` whose two agree within 1e-4, else the
    tightest bound found.
    """
    begin = time.perf_counter()
    best = SolverResult("no_solution", message="no method found a schedule that meets the windows")
    for label, method in FLOOR_METHODS:
        answer = run_floor_lp(built.lm, method, time_limit_s)
        if answer is None:
            continue
        t, duals = answer
        if float(np.max(built.lm.row_lo - built.lm.row_activity(t), initial=0.0)) > PRIMAL_TOLERANCE:
            continue  # no schedule (an infeasible LP's "duals" bound anything)
        value = float(built.lm.objectives[FLOOR_OBJECTIVE] @ t)
        bound = certified_bound(built.lm, duals, built.rhs)
        gap = (value - bound) / max(abs(value), 1e-12)
        if best.bound is None or bound > best.bound:
            status: SolveStatus = "optimal" if gap <= 1e-4 else "feasible"
            best = SolverResult(
                status, values=t, objective=value, bound=bound, message=f"LP ({label}), certified gap {gap:.1e}"
            )
        if gap <= 1e-4:
            break
    best.solve_s = time.perf_counter() - begin
    return best


def _solve_milp(built: _Built, time_limit_s: float) -> SolverResult:
    """The MILP's proven ``bound`` and best value, from a backend with a bound of its own and continuous columns.

    That is HiGHS: CP-SAT's bound would be one of the model with every column restricted to integers.
    """
    r = backend_with("bound", "continuous").solve(built.lm, "energy", False, SolveParams(time_limit_s, rel_gap=1e-6))
    r.message = f"MILP {r.status}, not certified by duals" + (f" ({r.message})" if r.message else "")
    return r


def fastest_rates(instance: Instance) -> dict[str, float]:
    """Each job's fastest rate over the deadline floor's own columns, exclusive and paired (steps/s; 0: none)."""
    jobs, _, columns = _job_columns(instance)
    fastest = dict.fromkeys((j.id for j in jobs), 0.0)
    for col in columns:
        for k, rate in col.rates:
            fastest[jobs[k].id] = max(fastest[jobs[k].id], rate)
    return fastest


def deadline_floor(
    instance: Instance,
    windows_s: Mapping[str, float],
    free_jobs: int = 0,
    processing_sum_s: float | None = None,
    time_limit_s: float = DEADLINE_FLOOR_TIME_LIMIT_S,
    timeline: Timeline | None = None,
    outer: OuterWindows | None = None,
    hard: frozenset[str] = frozenset(),
) -> DeadlineFloor:
    """A lower bound on the energy of every schedule that finishes each job of ``windows_s`` within its window.

    ``windows_s``: job id -> seconds from its arrival to its deadline (a job not in it has none); any
    ``free_jobs`` of them may ignore theirs; ``processing_sum_s`` bounds the JCTs' sum; a ``timeline`` (every
    job's arrival, a slot length) adds the capacity rows; ``outer`` (with ``free_jobs > 0``) later windows of
    which fewer may be missed (module docstring); the jobs of ``hard`` keep their windows, whatever ``free_jobs``.
    """
    if outer is not None:
        if free_jobs <= 0:
            raise ValueError("outer windows need free_jobs > 0: without it every job keeps its (earlier) window")
        for jid, v in outer.windows_s.items():
            if jid not in windows_s or v < windows_s[jid]:
                raise ValueError(f"job {jid}: an outer window needs a window of its own, at most the outer one")
    begin = time.perf_counter()
    built = _build(instance, windows_s, free_jobs, processing_sum_s, timeline, outer, hard)
    jobs = sum(1 for j in instance.jobs if j.remaining_steps > 0)
    windows = sum(1 for j in instance.jobs if j.remaining_steps > 0 and j.id in windows_s)
    milp = free_jobs > 0 and bool(set(windows_s) - hard)
    solve = _solve_milp if milp else _solve_lp
    r = run_with_deadline(solve, (built, time_limit_s), time_limit_s + 10.0)
    value = "-" if r.objective is None else f"{r.objective:.4f}"
    share = None
    values = np.maximum(r.values, 0.0) if r.values is not None and len(r.values) == built.lm.num_cols else None
    if values is not None:
        steps = values * built.steps_per_value
        share = float(steps[built.paired].sum() / steps.sum()) if steps.sum() > 0 else None
    slot_kwh: tuple[float, ...] = ()
    if timeline is not None and values is not None:
        kwh = built.lm.objectives[FLOOR_OBJECTIVE] * values
        inside = built.slot >= 0
        per_slot = np.bincount(built.slot[inside], weights=kwh[inside], minlength=built.slots)
        slot_kwh = tuple(float(v) for v in per_slot)
    note = f"{r.message}; value {value} kWh; {time.perf_counter() - begin:.1f} s"
    return DeadlineFloor(
        None if r.bound is None else r.bound * J_PER_KWH,
        jobs,
        windows,
        free_jobs,
        built.lm.num_cols,
        not milp,
        note,
        share,
        slot_kwh,
    )
