"""An energy budget per period, paced round by round: the arithmetic of the loop's share (J).

The loop (``wattplan agent``, and ``wattplan simulate``, which replays it) knows no work still to arrive: its budget
is ``E`` per period of ``P`` seconds, paced by :func:`period_share_j` over the time left in the period; the ledger of
what was drawn is :mod:`planner.agent.energy_budget`. :func:`one_node_round_j` is the least share a round gets while
energy is left: one node of the most power-hungry GPU type at full power for the round, so that a pacing too
cautious cannot stop every job while energy remains.

(The round-based replay's budget over the whole replay, paced by the work still to arrive, with reserve prices
from the energy floor's dual, was removed with that replay; benchmarks/RESULTS.md labels its figures.)
"""

from __future__ import annotations

from wattplan.planner.sim.round_instance import ClusterContext


def one_node_round_j(ctx: ClusterContext) -> float:
    """``B_min = T * max_g (Pnode_g + K_g * Pmax_g)``, ``Pmax_g`` the highest profiled power on ``g`` (J)."""
    best = 0.0
    for g in ctx.gpu_types:
        pmax = max(
            (p.power_w for ps in ctx.profiles_by_type.values() for p in ps if p.gpu_type == g.name),
            default=g.idle_power_w,
        )
        best = max(best, g.node_power_w + g.gpus_per_node * pmax)
    return ctx.rules.duration_s * best


def period_share_j(
    left_j: float, now_s: float, period_end_s: float, duration_s: float, floor_j: float, committed_w: float = 0.0
) -> float:
    """The paced share of a round under an energy budget over a period (the live loop's; J).

    ``S_r = max(E_left * T / max(T, t_end - t), min(E_left - I * max(0, t_end - t - T), B_min))``: ``E_left`` (J)
    spread evenly over the period's time left ``t_end - t`` (s) in rounds of ``T`` (s), so energy a quiet stretch
    left unspent is spent later, and never less than one node's round ``B_min`` (J, :func:`one_node_round_j`) while
    that much is left beyond what the rest of the period will draw anyway: ``I`` (``committed_w``, W) is the draw no
    plan avoids, the powered nodes' idle power when every node stays on. The last round of a period
    (``t_end - t <= T``) gets all of ``E_left``; ``S_r <= E_left`` always; 0 once the period's budget is spent.

    Why ``I``: with every node on the cluster draws ``I`` whatever runs, and a round spends at most ``I dt`` plus
    ``S_r - I T`` over the next ``dt <= T`` seconds. While ``E_left >= I (t_end - t)`` at a round, each term of
    ``S_r`` keeps it so at the next (the even share because ``E_left / (t_end - t) >= I``, the floor by its
    reserve), so a period whose budget is at least its idle draw ``I P`` draws at most ``E``; one below it runs
    nothing and draws ``I P``. Without the reserve (``I = 0``) a floor round spent what the idle draw needed later:
    on three jobs of one V100 node the period drew 20% over its budget.
    """
    if left_j <= 0.0:
        return 0.0
    even = left_j * duration_s / max(duration_s, period_end_s - now_s)
    reserve = committed_w * max(0.0, period_end_s - now_s - duration_s)
    return max(even, min(left_j - reserve, floor_j))
