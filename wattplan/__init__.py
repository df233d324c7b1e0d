"""wattplan from Python: plan a round, replay a trace, sweep the energy knob, benchmark solvers, read results.

    import wattplan

    result = wattplan.plan(time_limit_s=10)              # the shipped default round
    result.jobs                                            # DataFrame: one row per job, running or waiting (why)
    replay = wattplan.simulate("6c71a0.trace", cluster="v100:8,p100:8", policies=["fifo-max", "wattplan"],
                               max_jobs=20)
    replay.summary[["policy", "energy_kwh", "avg_jct_s"]]   # one row per policy
    replay.rounds.groupby("policy").energy_j.sum()          # one row per round and policy
    wattplan.read_results("out/")                          # the same frames from any output folder

Every function is the command line's own code path (``wattplan plan``, ``simulate``, ``frontier``, ``bench``); the
results are tidy pandas DataFrames with a ``policy`` column (:mod:`wattplan.results`). docs/python.md has a longer
example. Register your own policy or solver with :func:`register_policy` / :func:`register_solver`.

Bad input raises :class:`InputError` (``wattplan.InputError``) listing every problem, each naming its file and field
or its keyword, as the command line prints them (exit 2 there): a missing or malformed file, an
:class:`~planner.contracts.domain.Instance` that ``wattplan instance check`` would refuse, a keyword of the wrong kind
or out of its range, an output path that is one of the inputs (or an output folder that holds one). An unknown
keyword is a ``TypeError``. A sweep's replay that fails raises :class:`ReplayFailed` (``wattplan.ReplayFailed``)
naming each failed point, once the others have run.

``workers=1`` runs the replays in this process; more start that many Python processes, each of which runs the
calling script again from its top (multiprocessing's ``spawn``): a script must call wattplan under ``if __name__ ==
"__main__":`` then, and one that does not gets an :class:`InputError` naming ``workers`` before any worker starts.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "InputError",
    "PlanResult",
    "ReplayFailed",
    "Results",
    "bench",
    "default_instance",
    "frontier",
    "plan",
    "read_results",
    "register_policy",
    "register_solver",
    "simulate",
    "unregister_policy",
    "unregister_solver",
]

_WHERE = {
    "InputError": "wattplan.planner.contracts.problems",
    "plan": "wattplan.planning_api",
    "PlanResult": "wattplan.planning_api",
    "ReplayFailed": "wattplan.planner.sim.frontier",
    "simulate": "wattplan.replay_api",
    "frontier": "wattplan.replay_api",
    "bench": "wattplan.replay_api",
    "read_results": "wattplan.results",
    "default_instance": "wattplan.planner.files.resources",
    "Results": "wattplan.results",
    "register_policy": "wattplan.planner.sim.policies",
    "register_solver": "wattplan.planner.planning",
    "unregister_solver": "wattplan.planner.planning",
    "unregister_policy": "wattplan.planner.sim.policies",
}


def __getattr__(name: str) -> Any:
    """Import on first use, so ``import wattplan`` loads no solver and no pandas."""
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'wattplan' has no attribute {name!r}")
