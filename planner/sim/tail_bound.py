"""The per-job tail bound: each job's deadline from the reference schedule, kept by the round model.

With ``--tail-bound x`` (a fraction), the reference (``fifo-max``, no budget) gives job ``j``, arrived at ``a_j``,
the JCT ``J_j = f_j - a_j``. Sorted ascending (0-based) over the ``N`` jobs it finishes, with
``k = floor(0.95 (N - 1))``, the p95 JCT is read from ranks ``k`` and ``k + 1`` (numpy's linear
interpolation), so a schedule has a p95 JCT at most ``(1 + x)`` times the reference's as soon as

    #{j : JCT_j <= (1 + x) J_(k)} >= k + 1   and   #{j : JCT_j <= (1 + x) J_(k+1)} >= k + 2        (*)

(then its own ranks ``k`` and ``k + 1`` are at most ``(1 + x) J_(k)`` and ``(1 + x) J_(k+1)``). So only
``k + 2`` jobs need a deadline, and any ``m = N - k - 2`` jobs may take as long as they like. The bound
keeps free the ``m`` jobs whose deadline would cost the most energy (:func:`deadline_cost_j`: the job's
steps at the least-energy exclusive option fast enough to finish within ``(1 + x) J_(k)``, against its
least-energy option), ties broken by the longer reference JCT. The other ``k + 2`` jobs get

    D_j = a_j + (1 + x) y_j,   y_j = J_(k), except y_j = J_(k+1) for the one of them with the longest J_j   (s)

which meets (*) when every bound job meets its deadline. ``m`` is 2 of 51 jobs and 7 of 150. The first
rule gave every job ``max(J_j, J_(k))``: the reference's slowest jobs kept their own JCT, and the long
multi-GPU jobs, whose deadlines cost the most, were all bound. A deadline of ``(1 + x) J_j`` for every job,
tried before that, cut the captured share on the Gavel 6c71a0 slice from 84% to 35%: it holds every job near
full speed.

At a round starting at ``t`` (length ``T``, restart ``tau``), a queued job with ``R_j`` steps left and
fastest rate ``X_j`` (over the GPU types, counts and settings it may use, :func:`fastest_steps_per_s`)
still meets ``D_j`` from the next round on, at full speed and after a restart, only if this round gives it

    sigma_j >= R_j - X_j (D_j - t - T - tau)                                             (steps)

With ``pace = "steady"`` (the default) the job is instead held to the even pace that meets its deadline,
``r_j = R_j / (D_j - t - tau)`` (steps/s), once that pace is above the rate of its least-energy exclusive
option (least ``n (P + Pnode_g / K_g) / X``, :func:`efficient_steps_per_s`): it is bound to
``sigma_j >= r_j (T - tau)`` this round, and never to less than the ``fastest`` rule's steps (a job shorter
than a round needs those when waiting one more round would already be too late). It runs a little above its
most efficient rate for longer instead of waiting until only its fastest option meets the deadline (for an
energy per step convex in the rate, the even pace costs least). A deadline already passed asks for the most
the job can make. A third rule, the least-energy option's rate in place of ``X_j`` in the formula above,
was measured and dropped: once behind it asks for the fastest option, like ``fastest``, but sooner.

When that is above 0 the round's instance gives the job ``min_steps = min(that, 0.999999 sigma_max)``
(``sigma_max``: the most steps any of its options gives it this round), and the model must run the
job with an option that gives it at least ``min_steps`` (:mod:`formulations.round_model`). Jobs are
admitted least slack first (``D_j - t - R_j / X_j``), each only while *every* GPU type on which it has an
option that meets the bound still has room for the largest such count: then any choice of options for the
admitted jobs fits, so the bound rows stay jointly feasible and the greedy plan, which takes bound jobs
first, meets them all. A job not admitted (no room) may wait and is late. Rounds with an energy budget get
no tail bound (the bound could contradict the budget).

Under the no-restart rule (the rules' ``pin_running``, :mod:`planner.sim.pinned`) a running job keeps its GPUs:
its options are its current GPU type and count at every setting, with no restart, and it takes no room (it holds
its GPUs already; a running pair's two jobs get no bound: they run on as they are). A job that starts must fit
where the running jobs leave room, and buddy placement puts an allocation of ``n`` GPUs in aligned blocks
(:mod:`planner.core.kept_blocks`): so the room is counted per block size ``b = 1, 2, 4, ..., K``, the aligned
``b``-blocks the running jobs leave free on every node, of which an admitted job takes ``n / b`` for each ``b <= n``
(its largest count ``n``; :class:`~planner.core.kept_blocks.FreeBlocks`). The model's rows ``blocks[g,b]`` count
the same blocks, and a choice of smaller counts takes no more of any, so the admitted jobs' bounds stay jointly
feasible. Without pinned jobs every block count is implied by the GPU count (``b = 1``): the rule above.

It is a rule, not a proof of the outcome: a job whose deadline is already lost runs as fast as it
can, and a job the round cannot admit waits. ``benchmarks/energy_gap.py`` measures the p95 reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from wattplan.planner.contracts.domain import GpuType, Profile
from wattplan.planner.core.economics import exclusive_power_w
from wattplan.planner.core.kept_blocks import FreeBlocks, held_gpus
from wattplan.planner.sim.round_instance import ClusterContext
from wattplan.planner.sim.state import JobState

TailPace = Literal["fastest", "steady"]
"""The rate a bound job is assumed to keep after this round (:attr:`TailBound.pace`)."""
MIN_STEPS_SHARE = 0.999999
"""A bound is at most this share of the most steps the job can make this round (rounding margin)."""


def reference_ranks(
    finish_s: Mapping[str, float | None], arrival_s: Mapping[str, float], q: float = 95.0
) -> tuple[dict[str, float], list[str], int]:
    """The reference's JCTs, their ranks and ``k``: what the p95 of the module docstring is read from.

    Returns ``J_j = f_j - a_j`` (s) of the jobs the reference finishes, their ids ascending by ``J_j`` (ties by
    id), and ``k = floor(q/100 (N - 1))``: the ``q``-th percentile lies between ranks ``k`` and ``k + 1``.
    """
    jct = {j: f - arrival_s[j] for j, f in finish_s.items() if f is not None}
    order = sorted(jct, key=lambda j: (jct[j], j))
    return jct, order, math.floor(q / 100.0 * (len(order) - 1)) if order else 0


@dataclass(frozen=True)
class P95Limits:
    """What any schedule with a p95 JCT within ``P`` must meet (:func:`p95_limits`): JCTs in seconds."""

    within_p_s: float
    late_p: int
    """At most this many jobs take longer than ``within_p_s``."""
    within_b_s: float
    late_b: int
    """At most this many jobs take longer than ``within_b_s`` (``inf`` when the p95 is a single rank)."""


def p95_limits(n: int, limit_s: float, least_jct_s: Sequence[float], q: float = 95.0) -> P95Limits:
    """Necessary conditions for a p95 JCT (numpy's linear interpolation) of ``n`` jobs at most ``limit_s``.

    With ``k = floor(q/100 (n - 1))`` and ``f = q/100 (n - 1) - k`` the p95 is ``(1 - f) J_(k) + f J_(k+1)``, at
    least ``J_(k)``: so ``J_(k) <= P`` (at most ``n - k - 1`` jobs above ``P``). Every job's JCT is at least
    ``m_j`` (``least_jct_s``, e.g. its steps at its fastest rate), so ``J_(k) >= m_(k)`` and ``J_(k+1) <= B =
    (P - (1 - f) m_(k)) / f`` (at most ``n - k - 2`` jobs above ``B``; ``B = inf`` when ``f = 0``).
    """
    rank = q / 100.0 * (n - 1)
    k = math.floor(rank)
    f = rank - k
    least = sorted(least_jct_s)
    m_k = least[k] if k < len(least) else math.inf
    within_b = (limit_s - (1.0 - f) * m_k) / f if f > 0 else math.inf
    return P95Limits(limit_s, max(n - k - 1, 0), max(within_b, limit_s), max(n - k - 2, 0))


@dataclass(frozen=True)
class TailBound:
    """Deadlines ``D_j = a_j + (1 + x) y_j`` (module docstring); :meth:`from_reference` builds them.

    Built directly, ``y_j = max(f_j - a_j, floor_jct_s)`` for every job the reference finishes (no job free).
    """

    reference_finish_s: Mapping[str, float | None]
    tolerance: float
    floor_jct_s: float = 0.0
    """``J_(k)`` (s): with no ``allowed_jct_s``, every deadline allows at least ``(1 + x)`` times it."""
    pace: TailPace = "steady"
    """``fastest``: a job may wait until only its fastest rate meets the deadline; ``steady``: it is held to the
    even pace that meets its deadline once that pace is above its least-energy option's rate (module docstring)."""
    allowed_jct_s: Mapping[str, float] | None = None
    """``y_j`` (s) of the bound jobs; a job not in it has no deadline. None: ``max(f_j - a_j, floor_jct_s)``."""

    @classmethod
    def from_reference(
        cls,
        finish_s: Mapping[str, float | None],
        arrival_s: Mapping[str, float],
        tolerance: float,
        pace: TailPace = "steady",
        q: float = 95.0,
        deadline_cost: Callable[[str, float], float] | None = None,
    ) -> TailBound:
        """The bound of the module docstring over the jobs the reference finishes, ``k = floor(q/100 (N - 1))``.

        ``deadline_cost(job id, allowed JCT s)`` ranks the jobs to keep free (J; most first); without it, the
        reference's slowest jobs are free.
        """
        jct, order, k = reference_ranks(finish_s, arrival_s, q)
        if not order:
            return cls(finish_s, tolerance, 0.0, pace, {})
        n = len(order)
        j_k, j_k1 = jct[order[k]], jct[order[min(k + 1, n - 1)]]
        free_count = max(n - k - 2, 0)

        def cost(j: str) -> float:
            return 0.0 if deadline_cost is None else deadline_cost(j, (1.0 + tolerance) * j_k)

        free = set(sorted(order, key=lambda j: (-cost(j), -jct[j], j))[:free_count])
        bound = [j for j in order if j not in free]
        allowed = dict.fromkeys(bound, j_k)
        allowed[bound[-1]] = j_k1  # the bound job with the longest reference JCT
        return cls(finish_s, tolerance, j_k, pace, allowed)

    def deadline_s(self, state: JobState) -> float | None:
        """``D_j`` (s), or None when the reference does not finish the job."""
        a = state.spec.arrival_s
        if self.allowed_jct_s is not None:
            y = self.allowed_jct_s.get(state.id)
            return None if y is None else a + (1.0 + self.tolerance) * y
        f = self.reference_finish_s.get(state.id)
        if f is None:
            return None
        return a + (1.0 + self.tolerance) * max(f - a, self.floor_jct_s)

    @property
    def free_jobs(self) -> frozenset[str]:
        """The jobs the reference finishes that have no deadline (module docstring)."""
        if self.allowed_jct_s is None:
            return frozenset()
        return frozenset(j for j, f in self.reference_finish_s.items() if f is not None) - set(self.allowed_jct_s)

    def min_steps(
        self, ctx: ClusterContext, queued: Sequence[JobState], now_s: float, budget_j: float | None
    ) -> dict[str, float]:
        """``{job id: min_steps}`` for the round starting at ``now_s`` (module docstring); empty under a budget."""
        if budget_j is not None:
            return {}
        T, tau = ctx.rules.duration_s, ctx.rules.restart_s
        held = [s for s in queued if s.current is not None] if ctx.rules.pin_running else None
        urgent: list[tuple[float, JobState, float, dict[str, int]]] = []
        out: dict[str, float] = {}
        for s in queued:
            d = self.deadline_s(s)
            rate = fastest_steps_per_s(ctx, s)
            if d is None or rate <= 0:
                continue
            need = self._need(ctx, s, d, now_s, rate)
            keeps = ctx.rules.pin_running and s.current is not None
            paired = s.current is not None and s.current.shares_with is not None
            if need <= 0 or (keeps and paired):
                continue
            options = _options(ctx, s, T, tau, keeps)
            most = max((steps for opts in options.values() for steps, _ in opts), default=0.0)
            if most <= 0:
                continue
            bound = min(need, MIN_STEPS_SHARE * most)
            if keeps:
                out[s.id] = bound  # it runs on its own GPUs: no room to admit
                continue
            room = {g: max((n for steps, n in opts if steps >= bound), default=0) for g, opts in options.items()}
            room = {g: n for g, n in room.items() if n > 0}
            urgent.append((d - now_s - s.remaining_steps / rate, s, bound, room))
        if not urgent:
            return out
        blocks = FreeBlocks.around(ctx.gpu_types, None if held is None else held_gpus(h.current for h in held))
        for _, s, bound, room in sorted(urgent, key=lambda u: (u[0], u[1].id)):
            if room and blocks.take(room):
                out[s.id] = bound
        return out

    def _need(self, ctx: ClusterContext, s: JobState, deadline_s: float, now_s: float, fastest: float) -> float:
        """Steps the job must make this round under the pace rule (module docstring); at most 0: none."""
        T, tau = ctx.rules.duration_s, ctx.rules.restart_s
        last_chance = s.remaining_steps - fastest * (deadline_s - now_s - T - tau)
        if self.pace == "fastest":
            return last_chance
        left = deadline_s - now_s - tau
        if left <= 0:
            return s.remaining_steps
        pace = s.remaining_steps / left
        steady = pace * max(T - tau, 0.0) if pace > efficient_steps_per_s(ctx, s) else 0.0
        return max(steady, last_chance)


def _usable(ctx: ClusterContext, s: JobState) -> list[tuple[GpuType, Profile]]:
    """The job's exclusive profiles on the cluster: allowed count, within the pool, a setting of the grid."""
    out = []
    for p in ctx.profiles_by_type.get(s.spec.type, ()):
        g = next((g for g in ctx.gpu_types if g.name == p.gpu_type), None)
        if g is not None and p.gpus in s.spec.allowed_gpus and p.gpus <= g.total_gpus and p.setting in g.settings:
            if p.steps_per_s > 0:
                out.append((g, p))
    return out


def fastest_steps_per_s(ctx: ClusterContext, s: JobState) -> float:
    """``X_j``: the job's fastest exclusive throughput over GPU types, allowed counts and settings (steps/s)."""
    return max((p.steps_per_s for _, p in _usable(ctx, s)), default=0.0)


def efficient_steps_per_s(ctx: ClusterContext, s: JobState) -> float:
    """The throughput of the job's least-energy exclusive option, ``min n (P + Pnode_g / K_g) / X`` (steps/s)."""
    best = min(
        _usable(ctx, s), key=lambda gp: (exclusive_power_w(*gp) / gp[1].steps_per_s, -gp[1].steps_per_s), default=None
    )
    return 0.0 if best is None else best[1].steps_per_s


def _options(
    ctx: ClusterContext, s: JobState, T: float, tau: float, pinned: bool = False
) -> dict[str, list[tuple[float, int]]]:
    """Per GPU type, ``(steps this round, GPUs)`` of every exclusive option of the job (restart included).

    ``pinned``: only the options where it runs now (its GPU type and count, every setting), as the no-restart rule
    leaves it (module docstring).
    """
    out: dict[str, list[tuple[float, int]]] = {}
    cur = s.current
    for g, p in _usable(ctx, s):
        keeps = cur is not None and cur.gpu_type == g.name and cur.gpus == p.gpus
        if pinned and not keeps:
            continue
        t = T if keeps else max(T - tau, 0.0)
        out.setdefault(g.name, []).append((min(s.remaining_steps, p.steps_per_s * t), p.gpus))
    return out


def deadline_cost_j(ctx: ClusterContext, state: JobState, allowed_s: float) -> float:
    """What finishing within ``allowed_s`` costs the job above its least-energy option (J; ranks free jobs).

    ``R (e_d - e_min)`` with ``e = n (P + Pnode_g / K_g) / X`` (J/step) over the job's exclusive options,
    ``e_min`` the least, ``e_d`` the least among options with ``X >= R / allowed_s`` (the fastest option's when
    none is that fast). Queueing and pairs are ignored: it is a ranking, not a bound.
    """
    usable = _usable(ctx, state)
    if not usable or allowed_s <= 0:
        return 0.0
    per_step = [(exclusive_power_w(g, p) / p.steps_per_s, p.steps_per_s) for g, p in usable]
    least = min(e for e, _ in per_step)
    need = state.remaining_steps / allowed_s
    fast_enough = [e for e, x in per_step if x >= need]
    at_deadline = min(fast_enough) if fast_enough else min(per_step, key=lambda ex: (-ex[1], ex[0]))[0]
    return state.remaining_steps * (at_deadline - least)
