"""``simulate``'s and ``frontier``'s checked options to a replay spec, without a command line.

``wattplan simulate`` and :func:`wattplan.simulate` both check their options with one record,
:class:`~planner.sim.options.SimulateOptions`, and call :func:`replay_spec` with it
(:func:`planner.control.session.slurm_replays` runs the replays); ``wattplan frontier`` and :func:`wattplan.frontier`
check :class:`~planner.sim.options.FrontierOptions` and call :func:`frontier_sweep`
(:func:`planner.control.frontier.run_slurm_frontier` runs it). Percent options (``max_jct_increase``,
``tail_bound``) are fractions in the spec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.rules import Objective, RoundRules
from wattplan.planner.sim.governor import GovernorRule
from wattplan.planner.sim.options import LIVE_GOVERNOR, FrontierOptions, ReplayOptions, SimulateOptions
from wattplan.planner.sim.replay import ReplaySpec


def resolve_trace(path: str | Path) -> Path:
    """The trace a user named: a file, or a shipped trace by name (``6c71a0.trace``).

    Neither: :class:`InputError` naming ``path`` (from Python a bare ``FileNotFoundError`` came out of
    ``wattplan.simulate``; the command line said the same in its own words).
    """
    from wattplan.planner.files.resources import resolve_trace as resolve

    try:
        return resolve(Path(path))
    except FileNotFoundError:
        raise InputError(str(path), [Problem("no-such-file", "(file)", "no such file or shipped trace")]) from None


def cluster_option(text: str) -> str:
    """``--cluster`` as given, once its items passed the list rules: no empty item, no GPU type twice.

    The counts are :func:`planner.rounds.cluster_spec.parse_cluster_spec`'s to check (whole nodes).
    """
    from wattplan.planner.console.list_options import split_list

    split_list(text, "--cluster", key=lambda item: item.partition(":")[0].strip().lower())
    return text


def _replay_spec(
    trace: str | Path,
    cluster: str,
    policies: Sequence[str] | None,
    options: ReplayOptions,
    rules: RoundRules,
    max_jct_increase: float | None,
) -> ReplaySpec:
    """The replay spec of ``simulate`` and ``frontier`` from their checked options.

    ``trace`` resolved (or a shipped name), ``cluster`` through the list rules and ``policies`` (the ``--policy``
    values; None: the spec's default) expanded, in that order; wattplan's request is
    :meth:`ReplayOptions.request`. ``max_jct_increase`` and ``tail_bound`` are percent here, fractions in the spec.
    """
    from wattplan.planner.console.list_options import repeated_list
    from wattplan.planner.sim.policies import PolicyOptions
    from wattplan.planner.sim.replay import expand_policies

    resolved, cluster = resolve_trace(trace), cluster_option(cluster)
    chosen = None if policies is None else expand_policies(repeated_list(list(policies), "--policy"))
    spec = ReplaySpec(
        trace=resolved,
        cluster=cluster,
        fmt=options.trace_format,  # type: ignore[arg-type]  # one of TRACE_FORMATS (the record's choices)
        virtual_cluster=options.vc,
        start_s=options.start_s,
        end_s=options.end_s,
        max_jobs=options.max_jobs,
        rules=rules,
        power_cap_w=options.power_cap_w,
        energy_budget_kwh=options.energy_budget_kwh,
        policy_options=PolicyOptions(options.zeus_eta, options.request()),
        seed=options.seed,
        profiles=options.profiles,
        carbon=options.carbon,
        price=options.price,
        signal_start=options.signal_start,
        signal_aware=options.signal_aware,
        noise=options.noise,
        max_rounds=options.max_rounds,
        gpus_per_node=options.gpus_per_node,
        node_power_w=options.node_power_w,
        max_jct_increase=None if max_jct_increase is None else max_jct_increase / 100.0,
        tail_bound=None if options.tail_bound is None else options.tail_bound / 100.0,
        governor=governor_rule(options),
        tail_pace=options.tail_pace,  # type: ignore[arg-type]  # one of TAIL_PACES
        delta_max=options.delta_max,
        truth=options.truth,
        learn=options.learn,
    )
    return spec if chosen is None else dataclasses.replace(spec, policies=chosen)


def _restart_s(options: ReplayOptions) -> float:
    """``--restart-s``, else :data:`~planner.contracts.defaults.RESTART_S`.

    Without ``--restart-s`` the simulated Slurm sets what a restart costs there
    (:func:`planner.control.session.with_restart_cost`).
    """
    return options.restart_s if options.restart_s is not None else defaults.RESTART_S


def replay_rules(options: ReplayOptions, objective: Objective, delta: float) -> RoundRules:
    """The rules a replay plays by, from its options and the ``objective`` and ``delta`` its command sets.

    ``--round-s``, the restart cost, ``--min-pair-rate``, ``--max-slowdown`` (percent here, a fraction in the rules)
    and ``--slurm-starts``; ``simulate`` and ``frontier`` set the objective and ``delta`` differently.
    """
    slowdown = None if options.max_slowdown is None else options.max_slowdown / 100.0
    return RoundRules(
        options.round_s,
        _restart_s(options),
        options.min_pair_rate,
        objective,
        delta,
        slowdown,
        options.slurm_starts,
        options.pin_running,
    )


def replay_spec(
    trace: str | Path, cluster: str, options: SimulateOptions, policies: Sequence[str] = ("wattplan",)
) -> ReplaySpec:
    """The spec of ``wattplan simulate``: ``trace`` on ``cluster`` with ``policies`` (``--policy``) and ``options``.

    ``options`` is the checked record (:meth:`SimulateOptions.checked`); its ``objective`` None is ``progress``.
    A trace that is no file or shipped trace, a bad ``--cluster`` list or an unknown policy raises
    :class:`InputError`; what no option's range says (the signal hour, the solver on this machine) is checked by
    :func:`planner.sim.replay.check_spec` when the replay is prepared.
    """
    objective: Objective = options.objective or "progress"  # type: ignore[assignment]  # one of OBJECTIVES
    rules = replay_rules(options, objective, options.delta)
    return _replay_spec(trace, cluster, list(policies), options, rules, options.max_jct_increase)


@dataclass(frozen=True)
class FrontierSweep:
    """A checked ``frontier``: the base spec, the swept deltas and JCT increases (fractions), the baselines."""

    base: ReplaySpec
    deltas: tuple[float, ...]
    jct_increases: tuple[float, ...]
    baselines: tuple[str, ...]


def frontier_sweep(trace: str | Path, cluster: str, options: FrontierOptions) -> FrontierSweep:
    """The sweep of ``wattplan frontier``: ``trace`` on ``cluster`` with the checked ``options``.

    ``options.deltas`` (each in [0, 1)), ``options.max_jct_increase`` (percent) and ``options.baselines`` are the
    command line's comma-separated lists (:meth:`FrontierOptions.checked` joins a Python list); each bad item raises
    :class:`InputError` naming the option and the item (``--deltas[1]``). ``options.objective`` is that of the
    swept points; every point sets its own JCT increase.
    """
    from wattplan.planner.console.list_options import number_list, split_list
    from wattplan.planner.sim.replay import DELTA_BOUNDS, JCT_INCREASE_BOUNDS

    objective: Objective = options.objective  # type: ignore[assignment]  # one of OBJECTIVES
    rules = replay_rules(options, objective, defaults.DELTA)
    base = _replay_spec(trace, cluster, None, options, rules, None)
    knob_deltas = number_list(options.deltas, "--deltas", DELTA_BOUNDS)
    increases = number_list(options.max_jct_increase, "--max-jct-increase", JCT_INCREASE_BOUNDS)
    names = split_list(options.baselines, "--baselines")
    return FrontierSweep(base, tuple(knob_deltas), tuple(x / 100.0 for x in increases), tuple(names))


def governor_rule(options: ReplayOptions) -> GovernorRule:
    """``--governor``, or the live loop's default (:data:`LIVE_GOVERNOR`)."""
    given = options.governor or LIVE_GOVERNOR
    rule: GovernorRule = "projected" if given == "projected" else "accrued"
    return rule
