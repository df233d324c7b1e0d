"""The energy floor: the least energy any schedule could spend on a set of jobs (docs/design.md §14).

Under the replay's accounting (:mod:`planner.sim.accounting`), with time and capacity free
and every powered GPU busy (nodes always full, nothing idle, no restart loss), the cheapest way
to do each job's steps is a linear program over *configuration times*.

Jobs with the same type and allowed GPU counts are interchangeable here, so they form one
class ``k`` with demand ``d_k`` = the sum of their steps. Columns, all continuous, in seconds:

* ``t_c >= 0`` for an exclusive configuration ``c = (k, g, n, s)`` (``n`` an allowed count of
  ``k`` with ``n <= N_g K_g``, a profile ``(X, P)`` at setting ``s``): it does ``X t_c`` steps of
  class ``k`` and draws ``n (P + Pnode_g / K_g)`` W;
* ``t_q >= 0`` for a pair configuration ``q = (k_a, k_b, g, n, s)`` whose pair entry keeps
  ``min(rho_a, rho_b) >= min_pair_rate`` (the round model's rule): it does ``rho_a X_a t_q``
  steps of ``k_a`` and ``rho_b X_b t_q`` of ``k_b`` and draws
  ``n (Pidle_g + rho_a (P_a - Pidle_g) + rho_b (P_b - Pidle_g) + Pnode_g / K_g)`` W.

The floor is::

    E_floor = min  sum_c n_c (P_c + Pnode/K) t_c
                   + sum_q n_q (Pidle + rho_a (P_a - Pidle) + rho_b (P_b - Pidle) + Pnode/K) t_q     (J)
              s.t. sum_{c of k} X_c t_c + sum_{q with side k} rho X t_q >= d_k              for every class k
                   t >= 0

**Every node powered** (``powered``, :class:`PoweredCluster`): on a cluster whose nodes all stay on from the first
arrival to the last completion (a window of ``W`` s), each GPU draws ``Pidle`` and each node ``Pnode`` whatever
runs, so the schedule decides only ``W`` and the draw above idle. Each column then costs its power less its GPUs'
idle share (``n (P - Pidle)`` exclusive, ``n (rho_a (P_a - Pidle) + rho_b (P_b - Pidle))`` a pair), and one more
column ``W`` costs the cluster's idle draw ``I = sum_g N_g (Pnode_g + K_g Pidle_g)``::

    E_powered = min  I W + sum_c n_c (P_c - Pidle) t_c + sum_q (pair's draw above idle) t_q             (J)
                s.t. the demand rows above
                     N_g K_g W - sum_{c on g} n_c t_c >= 0          for every GPU type g (the work fits the window)
                     W >= W_min                                     (no job ends before its arrival and its work)

with ``W_min = max_j (a_j + S_j / Xmax_j) - min_j a_j`` given by the caller (:func:`planner.planning.powered_floor`).
The cluster's GPUs do every configuration's time inside the window, so a slow, frugal setting pays the whole
cluster's idle draw for as long as it stretches the window: this floor prices that trade, which the floor above (idle
nodes free) does not.

It is a lower bound on every replay's energy without profile noise: a replay's powered GPU
pays ``Pnode/K + Pidle`` for the whole round whether or not it computes, a restart loses compute
time at that cost, and a pair whose partner finished keeps its shared (slower) rate, so every
real schedule spends at least as much per step as some mix of these configurations. Pooling a
class also lets a class of one job pair with itself, which only lowers the floor. The LP has
one row per class and a few thousand columns whatever the number of jobs, and solves in well
under a second (``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from wattplan.formulations.backends.base import LpMethod, SolverResult
from wattplan.formulations.backends.registry import backend_with
from wattplan.formulations.ir import INF, LinearModel, ModelBuilder
from wattplan.formulations.watchdog import run_with_deadline
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.core.economics import exclusive_power_w, pair_power_w, profiled_options, usable_pair_rates

FLOOR_OBJECTIVE = "energy"
FLOOR_TIME_LIMIT_S = 60.0
"""Wall seconds the floor LP may take before it is reported as not solved."""


@dataclass(frozen=True, slots=True)
class DemandClass:
    """Interchangeable jobs: one type, one set of allowed GPU counts, their summed steps."""

    type: str
    gpus: tuple[int, ...]
    steps: float
    jobs: int


def demand_classes(instance: Instance) -> list[DemandClass]:
    """The instance's jobs pooled by ``(type, allowed counts)``, demand = their remaining steps."""
    steps: dict[tuple[str, tuple[int, ...]], float] = defaultdict(float)
    count: dict[tuple[str, tuple[int, ...]], int] = defaultdict(int)
    for job in instance.jobs:
        if job.remaining_steps > 0:
            key = (job.type, tuple(sorted(job.gpus)))
            steps[key] += job.remaining_steps
            count[key] += 1
    return [DemandClass(t, n, steps[(t, n)], count[(t, n)]) for t, n in sorted(steps)]


def certified_bound(lm: LinearModel, duals: np.ndarray, rhs: np.ndarray | None = None) -> float:
    """A lower bound on ``min c t  s.t.  A t >= b, t >= 0`` (``c >= 0``) from any row prices ``y`` (the cost's unit).

    Weak duality: with ``y >= 0`` and ``A^T y <= c`` every feasible ``t`` has
    ``c t >= y A t >= y b``. The solver's duals are clipped at 0 and scaled by
    ``min_c c_c / (A^T y)_c`` so that ``A^T y <= c`` holds exactly; the bound then does not
    depend on the solver's tolerances (or its word that it is optimal). ``b`` is all ones when not
    given (the floor's rows); a bound below 0 is reported as 0 (no energy is negative).
    """
    y = np.maximum(duals, 0.0)
    b = np.ones(len(y)) if rhs is None else rhs
    reduced = np.zeros(lm.num_cols)
    np.add.at(reduced, lm.a_cols, lm.a_vals * y[lm.a_rows])
    cost = lm.objectives[FLOOR_OBJECTIVE]
    mask = reduced > 0
    scale = float(np.min(cost[mask] / reduced[mask])) if mask.any() else 1.0
    return max(float(min(scale, 1.0) * (y @ b)), 0.0)


def run_floor_lp(lm: LinearModel, method: LpMethod, time_limit_s: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The floor LP solved by ``method``: (primal, row duals), or None without both.

    The solver is the first backend with ``features.lp_duals`` (HiGHS).
    """
    lp = backend_with("lp_duals").solve_lp(lm, lm.objectives[FLOOR_OBJECTIVE], False, method, time_limit_s)
    if not lp.primal_valid or not lp.dual_valid:
        return None
    return np.maximum(lp.values, 0.0), lp.row_duals


FLOOR_METHODS: tuple[tuple[str, LpMethod], ...] = (
    ("simplex", "simplex-no-presolve"),
    ("pdlp", "pdlp"),
)
"""LP methods tried in turn (label, method). HiGHS 1.14's simplex returned "optimal" with every row unmet
(presolve on) and "unknown" on 1,000-job floors (either way); PDLP solved them (docs/design.md §12)."""
CERTIFIED_GAP = 1e-4
"""A method's answer is taken when its scaled primal and its certified bound agree this closely."""


def _solve_floor_lp(lm: LinearModel, time_limit_s: float) -> SolverResult:
    """The floor LP, certified: ``bound`` from the duals (:func:`certified_bound`), a feasible primal.

    Nothing rests on the solver's status: the primal is scaled up by ``1 / min_k (A t)_k`` to meet
    every demand row (``rhs`` 1) exactly, and a window column (the powered floor's, the last; every other row has it
    with coefficient 1) is then raised until its rows hold; the bound is weak duality on clipped, rescaled duals, and
    the first method of :data:`FLOOR_METHODS` whose two agree within :data:`CERTIFIED_GAP` is taken (else the
    tightest bound found, with its gap in the message).
    """
    begin = time.perf_counter()
    best: SolverResult | None = None
    rhs = np.asarray(lm.row_lo, dtype=float)
    demand = np.array([name.startswith("steps[") for name in lm.row_names])
    for label, method in FLOOR_METHODS:
        answer = run_floor_lp(lm, method, time_limit_s)
        if answer is None:
            continue
        t, duals = answer
        met = float(lm.row_activity(t)[demand].min())
        if met <= 0:
            continue
        t = t / min(met, 1.0)
        if not demand.all():  # raise the window until it holds the work and its least length
            short = rhs[~demand] - lm.row_activity(t)[~demand]
            t[-1] += max(float(short.max()), 0.0)
        value = float(lm.objectives[FLOOR_OBJECTIVE] @ t)
        bound = certified_bound(lm, duals, rhs)
        gap = (value - bound) / max(abs(value), 1e-12)
        result = SolverResult(
            "optimal" if gap <= CERTIFIED_GAP else "feasible",
            values=t,
            objective=value,
            bound=bound,
            solve_s=time.perf_counter() - begin,
            message=f"{label}, certified gap {gap:.1e}",
        )
        if gap <= CERTIFIED_GAP:
            return result
        if best is None or best.bound is None or bound > best.bound:
            best = result
    return best or SolverResult("no_solution", solve_s=time.perf_counter() - begin, message="no method solved it")


@dataclass(frozen=True, slots=True)
class FloorColumn:
    """A configuration: its power (W), the steps per second it does of each class it serves, and what it holds."""

    name: str
    power_w: float
    rates: tuple[tuple[int, float], ...]  # (class, steps/s)
    paired: bool
    gpu_type: str
    gpus: int  # GPUs held (a pair holds them once)


def floor_columns(instance: Instance, classes: list[DemandClass], self_pairs: bool = True) -> list[FloorColumn]:
    """Every exclusive and pair configuration of the classes (module docstring).

    ``self_pairs=False`` leaves out a class paired with itself (classes of one job each: a job cannot share its
    GPUs with itself).
    """
    out: list[FloorColumn] = []
    for ki, k in enumerate(classes):
        for g, p in profiled_options(instance, k.type, k.gpus):
            name = f"x_{ki}_{g.name}_{p.gpus}_{p.setting}"
            out.append(FloorColumn(name, exclusive_power_w(g, p), ((ki, p.steps_per_s),), False, g.name, p.gpus))
    for ai, a in enumerate(classes):
        for bi in range(ai if self_pairs else ai + 1, len(classes)):
            b = classes[bi]
            for g in instance.gpu_types:
                for n in sorted(set(a.gpus) & set(b.gpus)):
                    rates = usable_pair_rates(instance, a.type, b.type, g, n)
                    if rates is None:
                        continue
                    orders = {rates, rates[::-1]} if a.type == b.type and ai != bi else {rates}
                    for s in g.settings:
                        pa = instance.profile(a.type, g.name, n, s)
                        pb = instance.profile(b.type, g.name, n, s)
                        if pa is None or pb is None:
                            continue
                        for ra, rb in sorted(orders):
                            power = pair_power_w(g, n, pa, pb, ra, rb)
                            served = ((ai, ra * pa.steps_per_s), (bi, rb * pb.steps_per_s))
                            out.append(
                                FloorColumn(f"q_{ai}_{bi}_{g.name}_{n}_{s}_{ra:g}", power, served, True, g.name, n)
                            )
    return out


@dataclass(frozen=True, slots=True)
class PoweredCluster:
    """A cluster whose every node stays on for the whole window: the window is at least ``min_window_s`` (s)."""

    min_window_s: float


def column_power_w(instance: Instance, col: FloorColumn, powered: bool) -> float:
    """``col``'s power (W): all of it, or (``powered``) what its GPUs draw above their idle share of the cluster."""
    if not powered:
        return col.power_w
    return max(col.power_w - col.gpus * instance.gpu_type(col.gpu_type).powered_share_w, 0.0)


def _add_window(
    mb: ModelBuilder, instance: Instance, columns: list[FloorColumn], scale: np.ndarray, powered: PoweredCluster
) -> tuple[float, float]:
    """The window column ``w = W / W_ref``, its lower-bound row and one capacity row per GPU type (module docstring).

    Every row is a ``>=`` row scaled so that ``w`` enters it with coefficient 1. Returns ``(W_ref, rhs of the window
    row)``; ``W_ref`` is ``W_min`` (1 s when that is below 1 s).
    """
    ref = max(powered.min_window_s, 1.0)
    w = mb.add_col("window", 0.0, INF, False)
    mb.add_row([w], [1.0], powered.min_window_s / ref, INF, "window", "progress")
    for g in instance.gpu_types:
        held = [
            (c, col.gpus / scale[c] / (g.total_gpus * ref)) for c, col in enumerate(columns) if col.gpu_type == g.name
        ]
        if held:
            cols, coefs = zip(*held, strict=True)
            mb.add_row([w, *cols], [1.0, *(-v for v in coefs)], 0.0, INF, f"capacity[{g.name}]", "progress")
    return ref, powered.min_window_s / ref


def energy_floor(
    instance: Instance, time_limit_s: float = FLOOR_TIME_LIMIT_S, powered: PoweredCluster | None = None
) -> EnergyFloor:
    """Build and solve the floor LP of the instance's jobs (module docstring); budget ignored.

    Without ``powered`` idle nodes cost nothing and capacity is ignored; with it, every node is on for a window of at
    least ``powered.min_window_s`` that holds all the work (module docstring).

    Scaled for the simplex: row ``k`` is divided by ``d_k`` (demands run from 1e2 to 1e9 steps)
    and each column by its largest entry, so every column's largest coefficient is 1; its cost
    is then in kWh. Values and the bound are mapped back to seconds and joules.
    """
    classes = demand_classes(instance)
    columns = floor_columns(instance, classes)
    served = {k for c in columns for k, _ in c.rates}
    unservable = tuple(sorted({k.type for ki, k in enumerate(classes) if ki not in served}))
    if not columns:
        return EnergyFloor(0.0, len(classes), 0, None, unservable, "no job has steps to do")
    mb = ModelBuilder()
    scale = np.empty(len(columns))
    entries: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for c, col in enumerate(columns):
        mb.add_col(col.name, 0.0, INF, False)
        by_class: dict[int, float] = defaultdict(float)  # a class paired with itself serves its row twice: one entry
        for k, rate in col.rates:
            by_class[k] += rate / classes[k].steps
        scale[c] = max(by_class.values())
        for k, coef in by_class.items():
            entries[k].append((c, coef / scale[c]))
    for k in sorted(entries):
        cols, coefs = zip(*entries[k], strict=True)
        mb.add_row(list(cols), list(coefs), 1.0, INF, f"steps[{k}]", "progress")
    cost_kwh = np.array([column_power_w(instance, col, powered is not None) for col in columns]) / scale / 3.6e6
    window_note = ""
    if powered is not None:
        ref, _ = _add_window(mb, instance, columns, scale, powered)
        idle_w = sum(g.nodes * g.powered_node_w for g in instance.gpu_types)
        cost_kwh = np.append(cost_kwh, idle_w * ref / 3.6e6)
    lm = mb.build({FLOOR_OBJECTIVE: cost_kwh})
    r = run_with_deadline(_solve_floor_lp, (lm, time_limit_s), time_limit_s + 5.0)
    if r.values is None or r.objective is None or r.bound is None:
        return EnergyFloor(None, len(classes), lm.num_cols, None, unservable, f"floor LP not solved: {r.message}")
    if powered is not None:
        window_note = (
            f"every node on ({idle_w:,.0f} W) for a window of {r.values[-1] * ref:,.0f} s "
            f"(at least {powered.min_window_s:,.0f} s); "
        )
    seconds = r.values[: len(columns)] / scale
    total_steps = sum(classes[k].steps for k in served)
    paired = sum(seconds[c] * sum(rate for _, rate in col.rates) for c, col in enumerate(columns) if col.paired)
    note = (
        window_note
        + f"HiGHS {r.message} in {r.solve_s:.2f} s, primal {r.objective:.6g} kWh"
        + (f"; no configuration for {', '.join(unservable)}" if unservable else "")
    )
    return EnergyFloor(
        r.bound * 3.6e6,
        len(classes),
        lm.num_cols,
        float(min(paired / total_steps, 1.0)) if total_steps > 0 else None,
        unservable,
        note,
    )
