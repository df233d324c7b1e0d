"""How much of the saving any schedule could capture under JCT limits: the deadline floor on the six slices (issue 25).

For each slice of ``benchmarks/slices.py`` (cluster ``v100:32,p100:16``, the truth's profiles) it replays the
reference on the simulated Slurm (Slurm alone, :func:`planner.control.slurm_replay.replay_on_slurm`: ``fifo-max`` in
continuous time, the reference the agent's governor and tail bound steer by, every node on), then solves three lower
bounds on energy (:func:`planner.planning.deadline_floor`, capacity relaxed) and prints the largest captured share
``(E_ref - LB) / (E_ref - E_floor)`` each allows.

*Every node on*, as on the simulated Slurm and live: every schedule draws the idle cluster's power
``I = sum_g N_g (Pnode_g + K_g Pidle_g)`` (W) over its whole window ``W`` and its jobs' draw above idle on top, so
the deadline floor is solved on the workload seen with nodes staying on (:func:`planner.sim.round_instance.
nodes_stay_on`: node and idle power 0, each profile's power its draw above idle), a lower bound ``D`` on that
draw above idle (J), and a schedule's window is at least ``W_min = max_j (a_j + R_j / X_j) - min_j a_j`` (``X_j``
the job's fastest rate over the floor's columns). So ``LB = max(E_floor, I W_min + D)``, with ``E_floor`` the
powered floor (:func:`planner.planning.powered_floor`, no JCT limit), each a lower bound on every such schedule's
energy over its own window (first arrival to last completion, the replay's ``energy_kwh``). The shares are not
those of the round-based tables of ``benchmarks/RESULTS.md`` (idle nodes free, ``fifo-max`` replayed by rounds):

* ``floor``: no limit (the powered floor, §14);
* ``old rule``: every job within ``1.1 max(J_j, J_(k))`` of its arrival (the tail bound before 15a0474), LP;
* ``tail rule``: the shipped ``--tail-bound 10`` deadlines (:meth:`planner.sim.tail_bound.TailBound.from_reference`:
  ``k + 2`` jobs bound, ``N - k - 2`` free), LP; ``tail rule, JCT sum``: the same and the JCTs' sum within
  ``1.03 sum_j J_j`` (the average limit the replays also keep), LP;
* ``aim``: the issue's limits themselves, relaxed: every job within ``1.1 p95_ref`` except any ``N - k - 1`` of
  them, and the JCTs' sum within ``1.03 sum_j J_j`` (average at most +3%); a MILP, its solver's proven bound. A
  schedule's p95 lies between its own rank-``k`` and rank-``k + 1`` JCTs, so a p95 at most ``1.1 p95_ref`` needs
  its ``k + 1`` shortest JCTs within ``1.1 p95_ref``: at most ``N - k - 1`` jobs may exceed it. (The tail rule's
  ``k + 2`` bound jobs are a sufficient condition; this is the necessary one, so it is a relaxation.)

``aim by cases`` (with ``--cases E``, a timeline and LP rows only): the aim's p95 limit, sharper and without
binaries. numpy's p95 is ``(1 - f) J_(k) + f J_(k+1)`` (``f = 0.95 (N - 1) - k``), so a p95 within ``P = 1.1
p95_ref`` needs ``J_(k) <= P`` and, as ``J_(k)`` is at least ``m_(k)``, the rank-``k`` least JCT any job can have
(``m_j = R_j / X_j``, its fastest rate), ``J_(k+1) <= B = (P - (1 - f) m_(k)) / f``: at most ``N - k - 1`` jobs
later than ``P`` and at most ``N - k - 2`` later than ``B``. Take ``C``, the ``E`` jobs whose window costs the
most (``deadline_cost_j``), every other job free; for every way to pick ``N - k - 2`` jobs of ``C`` late and one
more within ``B``, the rest of ``C`` within ``P``, solve the LP (JCT sum too). Any schedule keeping the aim fits
one of these cases (more freedom only lowers an LP), so the least of them is a lower bound, each certified by its
duals. A job that cannot meet ``P`` (or ``B``) at its fastest rate is in every case's late set. With every node
on this is the aim's ceiling under the simulated Slurm's accounting. One case relaxes the ``tail rule, JCT sum`` LP
(its windows ``1.1 J_(k) <= P`` and ``1.1 J_(k+1) <= B``), so this share is never below that row's.

``aim by intervals`` (with ``--intervals R``, a timeline): the aim's p95 limit without freeing any job it does not
have to. :func:`planner.sim.p95_cases.p95_cases` splits ``J_(k)`` into intervals ``[a_(i-1), a_i]`` (cut at the long
jobs' least JCTs and at least every ``(P - m_(k)) / R`` seconds) and covers every schedule within the limit by cases:
the long jobs (least JCT at least ``m_(k)``) named late, within ``B(a_(i-1))`` or within ``a_i``, the others counted
(at most so many past ``a_i``, so many past ``B``: the deadline floor's keep binaries, hard windows for the named
ones). One LP per case when no other job may be late, else a MILP (HiGHS's proven bound); the JCT sum too. The
least over the cases is a lower bound on every schedule that keeps the aim.

``--cases-log FILE`` keeps each case's bound as it is proven (JSON lines) and a rerun reads them back; ``--shard I/N``
lets N processes share the cases (each claims nothing; a last run without it reads them all back).

``--slot-h H`` adds capacity per slot of ``H`` hours and an overflow slot after the last deadline; ``--whole-nodes``
charges static power by the node kept on (with every node on the static power is ``I W`` already: it changes no
bound); ``--block-h`` prints each LP solution's draw above idle per block of hours beside that of every replay of
the slice under ``--replays`` (``REPLAYS/<slice>/<policy>/power.csv``, as ``energy_mode_slurm.py`` writes them; the
draw less ``I``, every node on).

``J_j`` are the reference's JCTs, ``k = floor(0.95 (N - 1))``. A share below 80% proves the issue's aim out of reach on
that slice for every schedule (``aim``) or for the rule (``tail rule``).

    PYTHONPATH=. .venv/bin/python benchmarks/deadline_floor.py [--slices a,b] [--time-limit 300] \
        [--slot-h 1 [--whole-nodes] [--cases 5] [--intervals 3 [--cases-log F [--shard 0/2]]] [--block-h 10 \
        [--replays DIR]]] [--rules 'tail rule;aim by cases']
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.slices import SLICES, Slice, spec_of
from wattplan.planner import planning
from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.floor import DeadlineFloor
from wattplan.planner.control.slurm_replay import SLURM_ALONE, SimulatedCluster, replay_on_slurm
from wattplan.planner.sim.p95_cases import P95Case, p95_cases
from wattplan.planner.sim.replay import prepare
from wattplan.planner.sim.round_instance import nodes_stay_on, workload_instance
from wattplan.planner.sim.state import JobState
from wattplan.planner.sim.tail_bound import P95Limits, TailBound, deadline_cost_j, p95_limits, reference_ranks

TOLERANCE = 0.10
"""The p95 limit (+10%) and the tail bound's ``x``."""
AVERAGE = 0.03
"""The average JCT limit (+3%)."""
J_PER_KWH = 3.6e6
REPLAYS = Path("benchmarks/results/issue43/energy_mode3")
"""The replays of the six slices on the simulated Slurm (``energy_mode_slurm.py``) that ``--block-h`` profiles."""


@dataclass(frozen=True)
class Powered:
    """What every node on adds to a bound on the draw above idle (module docstring).

    The idle cluster's draw ``I`` (W), the least window ``W_min`` (s) and the powered floor ``E_floor`` (kWh).
    """

    idle_w: float
    min_window_s: float
    floor_kwh: float

    def bound_kwh(self, above_idle_j: float | None) -> float | None:
        """``max(E_floor, I W_min + D)`` (kWh) for a bound ``D`` (J) on the draw above idle; None when unsolved."""
        if above_idle_j is None:
            return None
        return max(self.floor_kwh, (self.idle_w * self.min_window_s + above_idle_j) / J_PER_KWH)


def _share(e_ref: float, floor: float, bound_kwh: float | None, unsolved: str = "not solved") -> str:
    if bound_kwh is None:
        return unsolved
    return f"{bound_kwh:.2f} kWh, **{(e_ref - bound_kwh) / (e_ref - floor):.1%}**"


def _paired(bound: DeadlineFloor) -> str:
    return "-" if bound.paired_step_share is None else f"{bound.paired_step_share:.0%}"


def _blocks(slot_kwh: Sequence[float], per_block: int) -> str:
    """Energy (kWh) per block of ``per_block`` slots from the first arrival, then the overflow slot's."""
    regular = slot_kwh[:-1]
    blocks = [sum(regular[i : i + per_block]) for i in range(0, len(regular), max(per_block, 1))]
    return ", ".join(f"{b:.1f}" for b in blocks) + f"; after the last deadline {slot_kwh[-1]:.1f} kWh"


def replay_blocks(power_csv: Path, t0_s: float, block_h: float, idle_w: float) -> str:
    """A replay's draw above ``idle_w`` per block of ``block_h`` hours from ``t0_s`` (kWh), from its ``power.csv``.

    Block ``k`` gets ``sum (P - idle_w) |[t0, t1] & [t0_s + k B, t0_s + (k + 1) B]|`` over the steps of constant
    power ``P`` (W) from ``t0`` to ``t1`` (s), ``B = 3600 block_h``; the steps before ``t0_s`` (an idle lead) count
    in no block.
    """
    span = block_h * 3600.0
    per: dict[int, float] = {}
    for a, b, w in pd.read_csv(power_csv)[["t0_s", "t1_s", "power_w"]].itertuples(index=False):
        a = max(float(a), t0_s)
        while a < b:
            k = int((a - t0_s) // span)
            end = min(float(b), t0_s + (k + 1) * span)
            per[k] = per.get(k, 0.0) + (w - idle_w) * (end - a)
            a = end
    return ", ".join(f"{per.get(i, 0.0) / J_PER_KWH:.1f}" for i in range(max(per, default=-1) + 1))


def powered(inst: Instance, fresh_real: Instance, arrival: dict[str, float], idle_w: float) -> Powered:
    """The slice's :class:`Powered`: ``W_min`` over ``inst``'s fastest rates, the powered floor of ``fresh_real``."""
    rates = planning.deadline_floor_rates(inst)
    ends = [arrival[j.id] + j.remaining_steps / x for j in inst.jobs if (x := rates.get(j.id, 0.0)) > 0]
    first = min(arrival.values())
    floor = planning.powered_floor(fresh_real, arrival).energy_kwh
    if floor is None:
        raise SystemExit("the powered floor LP was not solved")
    return Powered(idle_w, max(max(ends, default=first) - first, 0.0), floor)


def slice_rows(
    sl: Slice,
    time_limit_s: float,
    slot_h: float | None = None,
    whole_nodes: bool = False,
    rules_wanted: str = "all",
    cases: int | None = None,
    block_h: float | None = None,
    profiles: list[str] | None = None,
    intervals: int | None = None,
    cases_log: Path | None = None,
    shard: tuple[int, int] = (0, 1),
    replays: Path = REPLAYS,
) -> list[str]:
    """The slice's table rows (module docstring)."""
    spec = spec_of(sl)
    wl, ctx = prepare(spec)
    ref = replay_on_slurm(spec, SLURM_ALONE, SimulatedCluster(), prepared=(wl, ctx))
    unfinished = [r["job_id"] for r in ref.jobs if r["finish_s"] is None]
    if unfinished:
        raise SystemExit(f"{sl.name}: Slurm alone left {len(unfinished)} jobs unfinished ({unfinished[:5]})")
    e_ref = float(ref.summary["energy_kwh"])
    arrival = {r["job_id"]: float(r["arrival_s"]) for r in ref.jobs}
    finish = {r["job_id"]: float(r["finish_s"]) for r in ref.jobs}
    jct, ranked, k = reference_ranks(finish, arrival)
    order = [jct[j] for j in ranked]
    n = len(order)
    fresh = {s.id: JobState.new(s) for s in wl.jobs}
    inst = workload_instance(nodes_stay_on(ctx.real), list(fresh.values()))
    idle_w = sum(g.nodes * g.powered_node_w for g in ctx.real.gpu_types)
    pw = powered(inst, workload_instance(ctx.real, list(fresh.values())), arrival, idle_w)
    floor = pw.floor_kwh
    tail = TailBound.from_reference(
        finish, arrival, TOLERANCE, deadline_cost=lambda j, a: deadline_cost_j(ctx, fresh[j], a)
    )
    tail_windows = {j: (1 + TOLERANCE) * y for j, y in (tail.allowed_jct_s or {}).items()}
    rules = {
        "old rule": ({j: (1 + TOLERANCE) * max(v, order[k]) for j, v in jct.items()}, 0, None),
        "tail rule": (tail_windows, 0, None),
        "tail rule, JCT sum": (tail_windows, 0, (1 + AVERAGE) * sum(order)),
        "aim": (
            dict.fromkeys(jct, (1 + TOLERANCE) * float(np.percentile(order, 95))),
            max(n - k - 1, 0),
            (1 + AVERAGE) * sum(order),
        ),
    }
    aim_cases = None
    if (cases is not None or intervals is not None) and slot_h is not None:
        fastest = planning.deadline_floor_rates(inst)
        least_s = {
            j.id: j.remaining_steps / x if (x := fastest[j.id]) > 0 else math.inf for j in inst.jobs if j.id in fastest
        }
        aim = p95_limits(
            n, (1 + TOLERANCE) * float(np.percentile(order, 95)), [least_s[j] for j in jct if j in least_s]
        )
        aim_cases = (aim, least_s, {j: deadline_cost_j(ctx, fresh[j], aim.within_p_s) for j in jct})
    if rules_wanted != "all":
        rules = {name: rule for name, rule in rules.items() if name in rules_wanted.split(";")}
    elif slot_h is not None:  # the aim's MILP over slots (766,454 columns on heavy Philly) found nothing in 1,200 s
        rules.pop("aim")
    if slot_h is not None:
        label = f"{slot_h:g} h slots" + (", whole nodes" if whole_nodes else "")
        rules = {f"{name}, {label}": rule for name, rule in rules.items()}
    rows = []
    profiles = [] if profiles is None else profiles
    if block_h is not None:
        for power_csv in sorted((replays / sl.name).glob("*/power.csv")):
            blocks = replay_blocks(power_csv, min(arrival.values()), block_h, idle_w)
            profiles.append(f"- {sl.name}, replay {power_csv.parent.name}: {blocks}")
    run = (
        None
        if slot_h is None
        else FloorRun((1 + AVERAGE) * sum(order), time_limit_s, arrival, slot_h * 3600.0, whole_nodes)
    )
    if (
        aim_cases is not None
        and cases is not None
        and (rules_wanted == "all" or "aim by cases" in rules_wanted.split(";"))
    ):
        assert run is not None
        begin = time.perf_counter()
        aim, least_s, cost = aim_cases
        free = aim.late_p
        energy_j, note = aim_by_cases(inst, aim, least_s, cost, cases, run)
        label = f"aim by cases, {slot_h:g} h slots" + (", whole nodes" if whole_nodes else "")
        kwh = pw.bound_kwh(energy_j)
        share = _share(e_ref, floor, kwh, "no claim (see the last column)")
        rows.append(
            f"| {sl.name} | {n} | {e_ref:.2f} | {floor:.2f} | {label} | {n - free} of {n} | {share} | - | "
            f"LPs, duals | - | {time.perf_counter() - begin:.0f} | {note} |"
        )
    if aim_cases is not None and intervals is not None:
        assert run is not None and slot_h is not None
        begin = time.perf_counter()
        energy_j, note, per_interval = aim_by_intervals(
            inst, p95_cases(aim_cases[0].within_p_s, aim_cases[1], intervals), run, cases_log, shard
        )
        label = f"aim by intervals, {slot_h:g} h slots" + (", whole nodes" if whole_nodes else "")
        kwh = pw.bound_kwh(energy_j)
        rows.append(
            f"| {sl.name} | {n} | {e_ref:.2f} | {floor:.2f} | {label} | - | "
            f"{_share(e_ref, floor, kwh, 'no claim (see the last column)')} | - | LPs and MILPs | - | "
            f"{time.perf_counter() - begin:.0f} | {note} |"
        )
        profiles += [
            f"- {sl.name}, aim by intervals, J_(k) in [{a:,.0f}, {b:,.0f}] s: least "
            f"{_share(e_ref, floor, pw.bound_kwh(v))}"
            for (a, b), v in per_interval.items()
        ]
    for name, (windows, free, total) in rules.items():
        begin = time.perf_counter()
        slot_s = None if slot_h is None else slot_h * 3600.0
        bound = planning.deadline_floor(inst, windows, free, total, time_limit_s, arrival, slot_s, whole_nodes)
        rows.append(
            f"| {sl.name} | {n} | {e_ref:.2f} | {floor:.2f} | {name} | {len(windows) - free} of {n} | "
            f"{_share(e_ref, floor, pw.bound_kwh(bound.energy_j))} | {_paired(bound)} | "
            f"{'LP, duals' if bound.certified else 'MILP bound'} | "
            f"{bound.columns:,} | {time.perf_counter() - begin:.0f} | {bound.note} |"
        )
        if block_h is not None and slot_h is not None and bound.slot_kwh:
            profiles.append(f"- {sl.name}, {name} (LP): {_blocks(bound.slot_kwh, round(block_h / slot_h))}")
    return rows


@dataclass(frozen=True)
class FloorRun:
    """How a slice's deadline floors are solved.

    The JCT sum's limit (s), seconds per solve, every job's arrival (s), the slot length (s), the node accounting.
    """

    total_s: float
    time_limit_s: float
    arrival: dict[str, float]
    slot_s: float
    whole_nodes: bool

    def bound(self, inst: Instance, windows: dict[str, float], free: int = 0, **extra: Any) -> DeadlineFloor:
        """:func:`planning.deadline_floor` of ``inst`` with these settings (``extra``: outer and hard windows)."""
        return planning.deadline_floor(
            inst, windows, free, self.total_s, self.time_limit_s, self.arrival, self.slot_s, self.whole_nodes, **extra
        )


def aim_by_cases(
    inst: Instance, aim: P95Limits, least_s: dict[str, float], cost: dict[str, float], cases: int, run: FloorRun
) -> tuple[float | None, str]:
    """The least of the certified LPs of the module docstring (J) and what it took; None: no claim.

    ``least_s``: each job's least JCT ``m_j`` (s) over the floor's columns, the jobs with steps left.
    """
    past_b = sorted(j for j in least_s if least_s[j] > aim.within_b_s)
    past_p = sorted(j for j in least_s if least_s[j] > aim.within_p_s)
    if len(past_b) > aim.late_b or len(past_p) > aim.late_p:
        return None, "no schedule keeps the aim: more jobs cannot meet the windows than may be late"
    others = sorted((j for j in least_s if j not in past_p), key=lambda j: (-cost[j], j))
    chosen = past_p + others[: max(cases - len(past_p), 0)]
    late_b = min(aim.late_b, len(chosen))
    late_p = min(aim.late_p, len(chosen))
    least: tuple[float, tuple[str, ...], tuple[str, ...]] | None = None
    runs = 0
    for a2 in itertools.combinations(chosen, late_b):
        if not set(past_b) <= set(a2):
            continue
        for a1_extra in itertools.combinations([j for j in chosen if j not in a2], late_p - late_b):
            a1 = set(a2) | set(a1_extra)
            if not set(past_p) <= a1:
                continue
            windows = {j: aim.within_p_s for j in chosen if j not in a1}
            if aim.within_b_s < math.inf:
                windows |= dict.fromkeys(a1_extra, aim.within_b_s)
            bound = run.bound(inst, windows)
            runs += 1
            if bound.energy_j is None:
                return None, f"case late {sorted(a2)}, within B {sorted(a1_extra)} not solved ({bound.note})"
            if least is None or bound.energy_j < least[0]:
                least = (bound.energy_j, tuple(sorted(a2)), tuple(sorted(a1_extra)))
    assert least is not None
    return least[0], (
        f"{runs} certified LPs over {len(chosen)} jobs, B = {aim.within_b_s:,.0f} s; least with "
        f"{', '.join(least[1])} late and {', '.join(least[2])} within B"
    )


def aim_by_intervals(
    inst: Instance,
    cases: Sequence[P95Case],
    run: FloorRun,
    log: Path | None = None,
    shard: tuple[int, int] = (0, 1),
) -> tuple[float | None, str, dict[tuple[float, float], float]]:
    """The least bound over ``cases`` (J; None: a case without one, no claim), a note, and the least per interval.

    Cases run from the highest interval down (where the limit binds most), a progress line each on standard error.
    With ``log`` (JSON lines), each case's bound is appended as it is proven and a case already there (same case,
    slots, node accounting, time limit and JCT sum) is read back instead of solved: an interrupted run resumes.
    ``shard = (i, n)`` solves only every ``n``-th case from the ``i``-th (processes sharing one log) and claims nothing.
    """
    if not cases:
        return None, "no schedule keeps the aim: the rank-k least JCT is above the limit", {}
    jobs = [j.id for j in inst.jobs if j.remaining_steps > 0]
    per: dict[tuple[float, float], float] = {}
    least: tuple[float, P95Case] | None = None
    done: dict[str, float] = {}
    if log is not None and log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["case"]] = row["energy_j"]
    order = sorted(cases, key=lambda c: (-c.interval_s[0], c.short_late))
    begin = time.perf_counter()
    for i, case in enumerate(order, 1):
        if (i - 1) % shard[1] != shard[0]:
            continue
        named = {j: w for j, w in case.within_s.items() if w < math.inf}
        key = json.dumps(
            [
                case.interval_s,
                sorted(named.items()),
                sorted(case.free),
                case.short_late,
                case.short_outer_late,
                case.short_outer_s,
                float(run.slot_s),
                run.whole_nodes,
                float(run.time_limit_s),
                round(run.total_s, 3),
            ]
        )
        if key in done:
            energy_j = done[key]
        else:
            solved, note = _case_bound(inst, case, jobs, named, run)
            if solved is None:
                return None, f"a case of J_(k) in {case.interval_s} not solved ({note})", per
            energy_j = solved
            if log is not None:
                with log.open("a") as f:
                    f.write(json.dumps({"case": key, "energy_j": energy_j, "note": note}) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
        elapsed = time.perf_counter() - begin
        print(
            f"aim by intervals: case {i}/{len(order)}, J_(k) in [{case.interval_s[0]:,.0f}, {case.interval_s[1]:,.0f}] "
            f"s: {energy_j / 3.6e6:.2f} kWh ({'read back' if key in done else 'solved'}; {elapsed:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        per[case.interval_s] = min(per.get(case.interval_s, math.inf), energy_j)
        if least is None or energy_j < least[0]:
            least = (energy_j, case)
    if shard[1] > 1:
        return None, f"shard {shard[0]} of {shard[1]} only: no claim (run again without --shard to read all back)", per
    assert least is not None
    milps = sum(c.short_late > 0 for c in cases)
    c = least[1]
    late = sorted(set(c.free) | {j for j, w in c.within_s.items() if w > c.short_window_s})
    return (
        least[0],
        (
            f"{len(cases)} cases ({len(cases) - milps} LPs, {milps} MILPs) over {len(per)} intervals; least with "
            f"J_(k) in [{c.interval_s[0]:,.0f}, {c.interval_s[1]:,.0f}] s, {', '.join(late) or 'no long job'} past it "
            f"({', '.join(c.free) or 'none'} free), {c.short_late} other job(s) past it"
        ),
        dict(sorted(per.items())),
    )


def _case_bound(
    inst: Instance, case: P95Case, jobs: list[str], named: dict[str, float], run: FloorRun
) -> tuple[float | None, str]:
    """One case's bound (J; None: not solved) and the solver's note: an LP when no short job may be late."""
    short = [j for j in jobs if j not in case.within_s and j not in case.free]
    windows = named | dict.fromkeys(short, case.short_window_s)
    outer = None
    if case.short_late > 0 and case.short_outer_late < case.short_late and case.short_outer_s < math.inf:
        outer = dict.fromkeys(short, case.short_outer_s)
    bound = run.bound(
        inst, windows, case.short_late, outer_windows_s=outer, outer_late=case.short_outer_late, hard=tuple(named)
    )
    return bound.energy_j, bound.note


HEAD = (
    "| slice | jobs | Slurm alone kWh | powered floor kWh | limits | jobs held | lower bound, largest captured share | "
    "paired steps | proof | columns | s | solver |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", default="all", help="comma-separated slice names of slices.py, or all")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per LP or MILP")
    ap.add_argument("--slot-h", type=float, help="add capacity per slot of this many hours")
    ap.add_argument("--whole-nodes", action="store_true", help="with --slot-h: static power by the node kept on")
    ap.add_argument("--cases", type=int, help="with --slot-h: the aim by cases over this many costliest windows")
    ap.add_argument("--intervals", type=int, help="with --slot-h: the aim by intervals, cut at least this often")
    ap.add_argument("--cases-log", type=Path, help="with --intervals: append each case's bound here; resume from it")
    ap.add_argument("--shard", default="0/1", help="with --cases-log: I/N solves every N-th case from the I-th")
    ap.add_argument("--block-h", type=float, help="with --slot-h: print each LP's energy per block of these hours")
    ap.add_argument("--replays", type=Path, default=REPLAYS, help="with --block-h: the replays' folder")
    ap.add_argument(
        "--rules",
        default="all",
        help="rule names separated by ; (old rule;tail rule;...), or all (with --slot-h: all but the aim's MILP)",
    )
    args = ap.parse_args(argv)
    by_name = {s.name: s for s in SLICES}
    chosen = list(SLICES) if args.slices == "all" else [by_name[n] for n in args.slices.split(",")]
    print(HEAD, flush=True)
    profiles: list[str] = []
    for sl in chosen:
        rows = slice_rows(
            sl,
            args.time_limit,
            args.slot_h,
            args.whole_nodes,
            args.rules,
            args.cases,
            args.block_h,
            profiles,
            args.intervals,
            args.cases_log,
            (int(args.shard.split("/")[0]), int(args.shard.split("/")[1])),
            args.replays,
        )
        for row in rows:
            print(row, flush=True)
    if profiles:
        blocks = ""
        if args.block_h:  # formatted only when given: None has no :g (a run with --intervals alone crashed here)
            blocks = (
                f"Draw above the idle cluster's per {args.block_h:g} h from the first arrival (kWh; the replays "
                f"under {args.replays}/<slice>/<policy>); "
            )
        print(f"\n{blocks}the aim by intervals' least per interval, if asked:\n")
        print("\n".join(profiles))


if __name__ == "__main__":
    main()
