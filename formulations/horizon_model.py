"""The receding-horizon round model: the queue planned over ``H`` rounds as one model (docs/design.md §5.14).

Round ``h = 0`` is today's round model (:func:`formulations.round_model.build_round_model`), unchanged and
first: its columns and rows open the model, so ``H = 1`` *is* the round model. Rounds ``h = 1 .. H-1``
look ahead; each is one copy of a *look-ahead round*, the round model built on two option sets
(:func:`formulations.options.enumerate_options`, enumerated once, shared by all look-ahead rounds):

* a *start* copy of every option: the job (re)starts in round ``h`` and loses ``tau`` (s), steps
  ``sigma = min(R_j, rho X (T - tau))``, as if nothing ran before (the instance with no ``current``);
* a *continue* copy: full time ``T`` (the instance with ``tau = 0``), allowed only when the job ran on
  the same GPU type and count in round ``h - 1`` (the restart rule, §2.1: a new setting or partner
  does not restart a job).

Both copies of a job sit in the same job row, capacity, balance and budget rows of their round, so a
continuing job may pair with a starting one. A tail bound (``min_steps``) holds in round 0 only.

Linking rows (``c`` a column of an option, ``(g, n)`` its configuration, ``sigma_c`` its steps):

* continue  ``sum_{continue c of j on (g, n) in h} c - sum_{all c of j on (g, n) in h-1} c <= 0``
  (``h{h}.continue[j,g,n]``);
* remaining steps, only for a job whose best steps over the horizon could exceed ``R_j``:
  ``sum_{c of j in round 0} sigma_c c + sum_{h >= 1} sum_{c of j in h} y_c <= R_j`` (steps,
  ``steps[j]``), where ``y_c`` (continuous, steps, ``0 <= y_c``) are the steps the job does
  on option ``c`` of a look-ahead round and ``y_c - sigma_c c <= 0`` (``h{h}.steps[...]``). Such a job
  may stop early in a look-ahead round (it finishes); its progress and energy there are carried by
  ``y_c``: ``w_j y_c / R_j`` and ``e_c y_c / sigma_c`` (J; dynamic energy per step is fixed, §2.3).
  The look-ahead round's budget row counts its full ``e_c`` (conservative).

Objective vectors are the sums over the rounds of each round's vectors, later rounds weighted so that a
tie between doing work now and the same work later goes to now: progress (dimensionless)
``P_H = sum_h gamma^h progress_h`` with ``gamma`` = :data:`LOOKAHEAD_DISCOUNT` (0.99), ``energy`` and
``excess_energy`` (J) ``sum_h mu^h E_h`` with ``mu`` = :data:`LATER_ENERGY_MARKUP` (1.01). So ``P*_H``
is the best (discounted) horizon progress and the target stage asks ``P_H >= (1 - delta) P*_H``. Only
round 0 is decoded into a plan (receding horizon); :meth:`RoundModel.encode` puts a plan in round 0 and
waits in every later round (always feasible).

Row names of look-ahead rounds are the round model's with a ``h{h}.`` prefix; their budget rows are
``energy@h{h}`` (:func:`formulations.round_model.budget_rows` lists every budget row, for the stage without budget).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from wattplan.formulations.ir import INF, LazyNames, LinearModel
from wattplan.formulations.options import OptionSet, PairSideTable, enumerate_options
from wattplan.formulations.round_model import ENERGY_ROW, RoundModel, build_round_model
from wattplan.planner.contracts.domain import Instance

LOOKAHEAD_DISCOUNT = 0.99
"""``gamma``: round ``h``'s progress counts ``gamma^h`` in the horizon's progress (work now before the same work later).

Without it the horizon is indifferent to *when* a job runs: a job that fits in one round gives the same horizon
progress in round 0 or round 1, so the solver may defer it every round (a replay of one queued job stalled)."""
LATER_ENERGY_MARKUP = 1.01
"""``mu``: round ``h``'s joules count ``mu^h`` in the horizon's energy objectives (the same tie, for the least-energy
stage: the same work at the same energy is done now, not deferred). Both are 1% a round: a plan that waits or
stays to save energy still wins when it saves more than that."""
Y_BOUND_ROOM = 1e-6
"""Relative room on a steps column's bound ``sigma_c`` (the row ``y_c - sigma_c c <= 0`` is the real bound)."""
STEP_SLACK = 1e-9
"""Relative margin (of ``R_j``) under which a job's best horizon steps count as not reaching ``R_j``."""


@dataclass
class HorizonModel(RoundModel):
    """The ``H``-round model: a :class:`RoundModel` of round 0 whose ``lm`` is the whole horizon model.

    Round 0's columns open ``lm``, so the round model's ``decode`` reads round 0 (the plan that runs
    now) and ``encode`` puts a plan in round 0 with every later round waiting. ``lookahead`` is the
    model of one look-ahead round (None when ``horizon = 1``).
    """

    horizon: int = 1
    lookahead: RoundModel | None = None


def _horizon_of(first: RoundModel, lm: LinearModel, horizon: int, lookahead: RoundModel | None) -> HorizonModel:
    """Round 0's maps with the horizon model ``lm``."""
    return HorizonModel(
        first.instance,
        first.options,
        lm,
        first.x_cols,
        first.z_cols,
        first.w_cols,
        first.u_cols,
        first.ordered_slots,
        first.job_rows,
        horizon=horizon,
        lookahead=lookahead,
    )


def lookahead_instances(instance: Instance) -> tuple[Instance, Instance]:
    """The instances whose options are the look-ahead rounds' start and continue copies.

    Start: no job has a current configuration (every run restarts, ``t = T - tau``); continue: ``tau = 0``
    (``t = T``). Neither has a tail bound.
    """
    free = tuple(replace(j, current=None, min_steps=0.0) for j in instance.jobs)
    start = replace(instance, jobs=free)
    cont = replace(start, round=replace(instance.round, restart_s=0.0))
    return start, cont


def merge_options(start: OptionSet, cont: OptionSet) -> tuple[OptionSet, np.ndarray, np.ndarray]:
    """One option set holding both copies, slots unified by value; per exclusive and per pair side: is continue."""
    slot_list = list(start.slot_list)
    index = {s: i for i, s in enumerate(slot_list)}
    for s in cont.slot_list:
        if s not in index:
            index[s] = len(slot_list)
            slot_list.append(s)
    remap = np.array([index[s] for s in cont.slot_list], dtype=np.int64)
    a, b = start.pair_table, cont.pair_table
    pairs = PairSideTable(
        np.concatenate([a.job, b.job]),
        np.concatenate([a.partner, b.partner]),
        np.concatenate([a.slot, remap[b.slot] if len(b) else b.slot]).astype(np.int64),
        np.concatenate([a.side, b.side]),
        np.concatenate([a.progress, b.progress]),
        np.concatenate([a.energy_j, b.energy_j]),
    )
    xa, xb = start.exclusive_table, cont.exclusive_table
    exclusive = type(xa)(*(np.concatenate([getattr(xa, f), getattr(xb, f)]) for f in _EXCLUSIVE_FIELDS))
    merged = OptionSet(start.gpu_names, start.types, exclusive, pairs, tuple(slot_list), start.ordered | cont.ordered)
    x_cont = np.r_[np.zeros(len(xa), dtype=bool), np.ones(len(xb), dtype=bool)]
    z_cont = np.r_[np.zeros(len(a), dtype=bool), np.ones(len(b), dtype=bool)]
    return merged, x_cont, z_cont


_EXCLUSIVE_FIELDS = ("job", "gpu", "gpus", "setting", "progress", "energy_j")


@dataclass(frozen=True)
class _OptionColumns:
    """A round's option columns (x then z, model positions), their job, configuration key and steps."""

    cols: np.ndarray
    job: np.ndarray
    config: np.ndarray  # gpu index * (max count + 1) + count
    steps: np.ndarray  # sigma_c (steps)
    cont: np.ndarray  # continue copy (look-ahead rounds)


def _option_columns(rm: RoundModel, cont_x: np.ndarray, cont_z: np.ndarray, radix: int) -> _OptionColumns:
    """The option columns of ``rm`` with their steps ``sigma = progress R_j / w_j``."""
    opts = rm.options
    xt, zt = opts.exclusive_table, opts.pair_table
    slot_gpu = np.array([opts.gpu_names.index(s.gpu_type) for s in opts.slot_list] or [0], dtype=np.int64)
    slot_n = np.array([s.gpus for s in opts.slot_list] or [0], dtype=np.int64)
    job = np.concatenate([xt.job, zt.job]).astype(np.int64)
    config = np.concatenate([xt.gpu * radix + xt.gpus, slot_gpu[zt.slot] * radix + slot_n[zt.slot]]).astype(np.int64)
    jobs = rm.instance.jobs
    per_step = np.array([j.remaining_steps / j.weight if j.weight > 0 else 0.0 for j in jobs])
    progress = np.concatenate([xt.progress, zt.progress])
    steps = progress * per_step[job] if len(job) else np.zeros(0)
    cols = np.concatenate([rm.x_cols, rm.z_cols]).astype(np.int64)
    return _OptionColumns(cols, job, config, steps, np.concatenate([cont_x, cont_z]))


def build_horizon_model(instance: Instance, horizon: int) -> HorizonModel:
    """The ``horizon``-round model of the module docstring (``horizon >= 1``; 1 is the round model)."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    first = build_round_model(instance)
    if horizon == 1:
        return _horizon_of(first, first.lm, 1, None)
    start, cont = lookahead_instances(instance)
    merged, x_cont, z_cont = merge_options(enumerate_options(start), enumerate_options(cont))
    look = build_round_model(start, merged)
    radix = max((n for j in instance.jobs for n in j.gpus), default=1) + 1
    n0, nl = first.lm.num_cols, look.lm.num_cols
    opt0 = _option_columns(first, np.zeros(len(first.x_cols), bool), np.zeros(len(first.z_cols), bool), radix)
    optl = _option_columns(look, x_cont, z_cont, radix)
    offsets = [0] + [n0 + (h - 1) * nl for h in range(1, horizon)]
    finishing = _finishing_jobs(instance, opt0, optl, horizon)
    y_mask = finishing[optl.job] if len(optl.job) else np.zeros(0, dtype=bool)
    y_per_round = int(y_mask.sum())
    y_start = n0 + (horizon - 1) * nl
    ncols = y_start + (horizon - 1) * y_per_round

    blocks = [(first.lm, 0, "")] + [(look.lm, offsets[h], f"h{h}.") for h in range(1, horizon)]
    rows_r: list[np.ndarray] = []
    rows_c: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    names: list[str] = []
    kinds: list[str] = []
    for lm, off, prefix in blocks:
        rows_r.append(lm.a_rows + len(lo))
        rows_c.append(lm.a_cols + off)
        rows_v.append(lm.a_vals)
        lo.extend(lm.row_lo.tolist())
        hi.extend(lm.row_hi.tolist())
        names.extend(_row_name(n, prefix) for n in lm.row_names)
        kinds.extend(lm.row_kind)

    def add_row(cols: np.ndarray, vals: np.ndarray, low: float, high: float, name: str, kind: str) -> None:
        rows_r.append(np.full(len(cols), len(lo), dtype=np.int64))
        rows_c.append(np.asarray(cols, dtype=np.int64))
        rows_v.append(np.asarray(vals, dtype=float))
        lo.append(low)
        hi.append(high)
        names.append(name)
        kinds.append(kind)

    job_ids = [j.id for j in instance.jobs]
    gpu_names = first.options.gpu_names
    # Continue rows: a continue copy in round h needs the same (g, n) in round h - 1.
    for h in range(1, horizon):
        prev, prev_off = (opt0, 0) if h == 1 else (optl, offsets[h - 1])
        prev_key = prev.job * (radix * (len(gpu_names) + 1)) + prev.config
        key = optl.job * (radix * (len(gpu_names) + 1)) + optl.config
        for k in np.unique(key[optl.cont]).tolist():
            mine = optl.cols[optl.cont & (key == k)] + offsets[h]
            before = prev.cols[prev_key == k] + prev_off
            j = int(optl.job[optl.cont & (key == k)][0])
            g, n = divmod(int(optl.config[optl.cont & (key == k)][0]), radix)
            add_row(
                np.r_[mine, before],
                np.r_[np.ones(len(mine)), -np.ones(len(before))],
                -INF,
                0.0,
                f"h{h}.continue[{job_ids[j]},{gpu_names[g]},{n}]",
                "count",
            )

    lb, ub = np.zeros(ncols), np.ones(ncols)
    is_int = np.ones(ncols, dtype=bool)
    for lm, off, _ in blocks:
        lb[off : off + lm.num_cols], ub[off : off + lm.num_cols] = lm.lb, lm.ub
        is_int[off : off + lm.num_cols] = lm.is_int
    objectives = {name: np.zeros(ncols) for name in first.lm.objectives}
    for name, vec in objectives.items():
        for h, (lm, off, _) in enumerate(blocks):
            scale = (LOOKAHEAD_DISCOUNT if name == "progress" else LATER_ENERGY_MARKUP) ** h
            vec[off : off + lm.num_cols] = scale * lm.objectives[name]

    # Steps columns of finishing jobs in look-ahead rounds, and their steps rows.
    y_src = np.flatnonzero(y_mask)
    for h in range(1, horizon):
        y_cols = y_start + (h - 1) * y_per_round + np.arange(y_per_round)
        src = optl.cols[y_src] + offsets[h]
        sigma = optl.steps[y_src]
        # The row y_c - sigma_c c <= 0 bounds y_c; the column bound has room for a solver's rounding of
        # large step counts (CBC through PuLP wrote 1393.634 for sigma = 1393.63398...).
        ub[y_cols], is_int[y_cols] = sigma * (1 + Y_BOUND_ROOM), False
        for vec in objectives.values():
            vec[y_cols] = np.divide(vec[src], sigma, out=np.zeros(len(sigma)), where=sigma > 0)
            vec[src] = 0.0
        for y, c, s in zip(y_cols.tolist(), src.tolist(), sigma.tolist(), strict=True):
            add_row(np.array([y, c]), np.array([1.0, -s]), -INF, 0.0, f"h{h}.steps[{c - offsets[h]}]", "energy")
    for j in np.flatnonzero(finishing).tolist():
        cols0 = opt0.cols[opt0.job == j]
        mine = y_src[optl.job[y_src] == j]
        ys = [y_start + (h - 1) * y_per_round + np.searchsorted(y_src, mine) for h in range(1, horizon)]
        add_row(
            np.concatenate([cols0, *ys]),
            np.concatenate([opt0.steps[opt0.job == j], *([np.ones(len(mine))] * (horizon - 1))]),
            -INF,
            instance.jobs[j].remaining_steps,
            f"steps[{job_ids[j]}]",
            "energy",
        )

    lm = LinearModel(
        lb=lb,
        ub=ub,
        is_int=is_int,
        col_names=LazyNames(ncols, _HorizonNamer(first.lm, look.lm, n0, nl, y_start, y_per_round)),
        a_rows=np.concatenate(rows_r),
        a_cols=np.concatenate(rows_c),
        a_vals=np.concatenate(rows_v),
        row_lo=np.array(lo, dtype=float),
        row_hi=np.array(hi, dtype=float),
        row_names=tuple(names),
        row_kind=tuple(kinds),
        objectives=objectives,
    )
    return _horizon_of(first, lm, horizon, look)


def _row_name(name: str, prefix: str) -> str:
    """A look-ahead round's row name: ``energy@h<h>`` for its budget, else ``h<h>.<name>``; round 0's unchanged."""
    if not prefix:
        return name
    return f"{ENERGY_ROW}@{prefix[:-1]}" if name == ENERGY_ROW else prefix + name


def _finishing_jobs(instance: Instance, opt0: _OptionColumns, optl: _OptionColumns, horizon: int) -> np.ndarray:
    """A mask of the jobs whose most steps over the horizon could exceed ``R_j`` (steps)."""
    njobs = len(instance.jobs)
    best0 = np.zeros(njobs)
    bestl = np.zeros(njobs)
    if len(opt0.job):
        np.maximum.at(best0, opt0.job, opt0.steps)
    if len(optl.job):
        np.maximum.at(bestl, optl.job, optl.steps)
    remaining = np.array([j.remaining_steps for j in instance.jobs])
    return best0 + (horizon - 1) * bestl > remaining * (1 - STEP_SLACK)


@dataclass(frozen=True)
class _HorizonNamer:
    """Column names: round 0's as the round model's, look-ahead rounds' with ``h<h>.``, steps columns ``y[...]``.

    A class rather than a closure, so the model pickles to a solver worker.
    """

    first: LinearModel
    look: LinearModel
    n0: int
    nl: int
    y_start: int
    y_per_round: int

    def __call__(self, c: int) -> str:
        """The name of column ``c``."""
        if c < self.n0:
            return self.first.col_names[c]
        if c < self.y_start:
            h, i = divmod(c - self.n0, self.nl)
            return f"h{h + 1}.{self.look.col_names[i]}"
        h, i = divmod(c - self.y_start, self.y_per_round)
        return f"h{h + 1}.y[{i}]"
