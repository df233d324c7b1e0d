"""``wattplan agent``: the control loop on a live Slurm cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattplan.planner import planning
from wattplan.planner.cli.app import app, handles_errors
from wattplan.planner.cli.options_common import (
    MinPairRateOpt,
    NodeLimitOpt,
    ObjectiveChoice,
    ReplaySolverOpt,
    ReplayTimeLimitOpt,
    RestartOpt,
    RoundSOpt,
    _library_path,
)
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.contracts.request import REPLAY_REQUEST, PlanRequest


@app.command()
@handles_errors
def agent(
    cluster_dir: Annotated[
        Path | None,
        typer.Option(
            "--cluster",
            help="An emulated cluster's folder (wattplan cluster up): its Slurm, Prometheus, settings folder and "
            "clock. Without it: the Slurm of SLURM_CONF and --prometheus.",
        ),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option(help="SQLite state file (default: agent.db in --cluster, else ./wattplan-agent.db)."),
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option(help="Prometheus URL scraping the DCGM exporters (http://HOST:PORT).")
    ] = None,
    settings_dir: Annotated[
        Path | None,
        typer.Option(help="Shared folder the node scripts read settings from (default /var/lib/wattplan/settings)."),
    ] = None,
    profiles: Annotated[
        Path | None,
        typer.Option(help="Profile library (default: the shipped one).", parser=_library_path, metavar="<path>"),
    ] = None,
    learn: Annotated[
        bool, typer.Option(help="Correct the profiles from each round's observed steps and power.")
    ] = False,
    objective: Annotated[
        ObjectiveChoice | None,
        typer.Option(help="Objective (default: efficiency with the JCT bound, progress without it)."),
    ] = None,
    max_jct_increase: Annotated[
        float,
        typer.Option(
            help="Runtime-bounded energy mode: least energy with an average JCT at most this many percent above "
            "what Slurm's first-come-first-served scheduling at full power would give (estimated by fifo-max over "
            "the jobs seen so far: in continuous time, as Slurm starts jobs, or with --no-event-rounds round by "
            "round, as the replay does)."
        ),
    ] = 3.0,
    jct_bound: Annotated[
        bool, typer.Option(help="Steer each round's delta by the JCT bound (--no-jct-bound: a fixed --delta).")
    ] = True,
    delta: Annotated[float, typer.Option(help="Progress given up per round without the JCT bound.")] = defaults.DELTA,
    round_s: RoundSOpt = defaults.ROUND_S,
    restart_s: RestartOpt = defaults.RESTART_S,
    min_pair_rate: MinPairRateOpt = defaults.MIN_PAIR_RATE,
    solver: ReplaySolverOpt = REPLAY_REQUEST.solver,
    time_limit: ReplayTimeLimitOpt = REPLAY_REQUEST.time_limit_s,
    threads: Annotated[int, typer.Option(help="Solver threads (>= 1).")] = REPLAY_REQUEST.threads,
    seed: Annotated[int, typer.Option(help="Solver seed.")] = REPLAY_REQUEST.seed,
    node_limit: NodeLimitOpt = REPLAY_REQUEST.node_limit,
    node_power_w: Annotated[
        float | None, typer.Option(help="A node's power besides its GPUs (W; default: the library's or 300).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option(help="Play one round on a copy of the state; print the Slurm calls, send none.")
    ] = False,
    until_idle: Annotated[
        bool, typer.Option(help="Stop once every managed job has ended (and, with --cluster, all were submitted).")
    ] = False,
    max_rounds: Annotated[int | None, typer.Option(help="Stop after this many rounds.")] = None,
    pairs: Annotated[
        bool,
        typer.Option(
            help="Co-locate pairs on shared GPUs (off: on Slurm a pair change restarts the guest, which the round "
            "model does not price; see docs/design.md 11.6)."
        ),
    ] = False,
    event_rounds: Annotated[
        bool,
        typer.Option(help="Also start a round when a managed job arrives or leaves (--no-event-rounds: fixed rounds)."),
    ] = True,
    start_s: Annotated[
        float,
        typer.Option(
            help="A job's own start-up time before its first step (s), for the JCT reference (a requeue costs "
            "--restart-s)."
        ),
    ] = 0.0,
    allow_user: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-user",
            metavar="NAME",
            help="Act on opted-in jobs of this Slurm user (repeatable). With no --allow-user and no "
            "--allow-account: the user the agent runs as, and no one else.",
        ),
    ] = None,
    allow_account: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-account", metavar="NAME", help="Act on opted-in jobs of this Slurm account (repeatable)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Log only notes and faults.")] = False,
) -> None:
    """Run the control loop on a Slurm cluster: read the queue, observe, plan, apply; every --round-s.

    A job opts in with sbatch --hold --comment='wattplan:type=TYPE;steps=STEPS' and is managed only if its user
    or account is allowed (--allow-user, --allow-account); no other job is touched, and no administrator's hold
    is ever released.

    Install the node scripts (planner/agent/node_files) so that power limits reach the GPUs.
    """
    from wattplan.planner.agent.loop import AgentConfig
    from wattplan.planner.agent.run import environment, run_agent, stderr_log
    from wattplan.planner.agent.trust import Allowed, name_problem
    from wattplan.planner.contracts.rules import RoundRules, rules_problems
    from wattplan.planner.profile_library.library import load_profile_library

    bound = max_jct_increase / 100.0 if jct_bound else None
    if bound is not None and not 0 <= bound <= 10:
        raise InputError("--max-jct-increase", [Problem("bad-option", "--max-jct-increase", "must be in [0, 1000]")])
    if not 0 <= start_s < 1e7:
        raise InputError("--start-s", [Problem("bad-option", "--start-s", "must be a number of seconds >= 0")])
    names = [("--allow-user", n) for n in allow_user or []] + [("--allow-account", n) for n in allow_account or []]
    if problems := [Problem("bad-option", o, m) for o, n in names if (m := name_problem(n)) is not None]:
        raise InputError("options", problems)
    if objective is not None:
        rules = RoundRules(round_s, restart_s, min_pair_rate, objective.value, delta)
    else:
        rules = RoundRules(round_s, restart_s, min_pair_rate, "efficiency" if bound is not None else "progress", delta)
    options = {"duration_s": "--round-s", "restart_s": "--restart-s", "delta": "--delta"}
    if problems := rules_problems(rules, options):
        raise InputError("options", problems)
    request = PlanRequest(
        solver=solver, time_limit_s=time_limit, threads=threads, seed=seed, node_limit=node_limit, lp_bound=False
    )
    if problems := planning.request_problems(request):  # before any daemon is asked: not at the first round
        raise InputError("options", problems)
    env = environment(
        cluster_dir, prometheus, settings_dir or (None if cluster_dir else Path("/var/lib/wattplan/settings"))
    )
    config = AgentConfig(
        library=load_profile_library(profiles),
        rules=rules,
        request=request,
        max_jct_increase=bound,
        learn=learn,
        dry_run=dry_run,
        until_idle=until_idle,
        max_rounds=max_rounds,
        node_power_w=node_power_w,
        event_rounds=event_rounds,
        pairs=pairs,
        start_s=start_s,
        allowed=Allowed.of(allow_user or [], allow_account or []),
    )
    default_state = (cluster_dir / "agent.db") if cluster_dir else Path("wattplan-agent.db")
    code = run_agent(config, env, state or default_state, stderr_log(quiet))
    raise typer.Exit(code)
