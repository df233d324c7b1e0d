"""Live runs on the emulated cluster: wattplan's agent against Slurm's own scheduling, and both against the replay.

For each trace given: start an emulated cluster (``wattplan cluster up``), submit the trace managed, run
``wattplan agent --until-idle``, report, stop; start a fresh cluster, submit the same trace ``--unmanaged``
(Slurm's first-come-first-served with backfill at the GPUs' default power limit), wait until every job has ended,
report, stop; then replay the same trace with ``wattplan simulate`` on the simulated Slurm (the agent's loop with
``wattplan`` and the same JCT bound, and Slurm alone) with the same truth, time scale, round, load and restart
cost; in both runs and the replay the first job comes :data:`FIRST_SUBMIT_REAL_S` after the cluster's start.
``--power-save`` runs both clusters with Slurm's power saving (``cluster up --power-save``: the unmanaged run
is then ``slurm-powersave``) and the agent and the replay with ``--power-save``; ``--maxq`` runs the unmanaged jobs
at MaxQ's power limits (``cluster submit --unmanaged --maxq``: ``maxq`` with power saving). Writes
``OUT/FAMILY/{managed,unmanaged}.json`` (``cluster report``), ``OUT/FAMILY/agent.log``, the agent's per-round
overhead, ``OUT/FAMILY/sim/POLICY/summary.json`` and ``OUT/live_compare.json`` with one row per family (a part
that ``--only`` leaves out keeps the row's earlier value).

The restart cost the agent and the replay assume (``--restart-s``) is what a restart costs on the emulated
cluster: the stand-in trainer's checkpoint load (``--trainer-restart-s``) plus Slurm's own delay before a
requeued job runs again (measured 7 s real: ``cred_expire=5`` plus one scheduler pass), times the time scale.
A job's first start costs the checkpoint load only (``--start-s`` of the agent's JCT reference).

Usage: ``python benchmarks/live_compare.py TRACE [TRACE...] --out DIR [--time-scale 30] [--gpus v100:16]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from wattplan.planner.cluster.layout import ClusterLayout
from wattplan.planner.sim.options import SimulateOptions

WATTPLAN = [sys.executable, "-m", "wattplan"]
SLURM_REQUEUE_DELAY_S = 7.0
"""Real seconds from ``scontrol requeuehold`` + ``release`` to the job running again (cred_expire=5, 1 s passes)."""


def wattplan_cli(*args: str, timeout: float = 3600) -> str:
    """``wattplan ARGS``' output; a failure stops the benchmark with its output."""
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"wattplan {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _report(cluster: Path, out: Path) -> dict[str, Any]:
    wattplan_cli("cluster", "report", "--dir", str(cluster), "--json", str(out))
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


FIRST_SUBMIT_REAL_S = 10.0
"""Real seconds from the cluster's clock zero (``cluster up``'s start) to the first submission, in every run:
``cluster submit --first-at-s`` waits for it on the cluster's own clock, and the replay starts its cluster that
long before the first arrival (``simulate --up-before-s``). The agent starts and plays its first round within it.
With power saving the idle time before the first job decides which nodes are still on when it comes (a node powers
down ``--suspend-s`` after ``up``); the energy of both counts from the cluster's start."""


def lead_s(scale: float) -> float:
    """:data:`FIRST_SUBMIT_REAL_S` in emulated seconds at time scale ``scale``."""
    return FIRST_SUBMIT_REAL_S * scale


def _up(cluster: Path, gpus: str, scale: float, args: argparse.Namespace) -> None:
    """Start the emulated cluster."""
    if (cluster / "cluster.json").exists():
        wattplan_cli("cluster", "down", "--dir", str(cluster))
    truth = ["--truth", str(args.truth)] if args.truth else []
    argv = ["cluster", "up", "--dir", str(cluster), "--gpus", gpus, "--time-scale", f"{scale:g}"]
    wattplan_cli(*argv, "--restart-s", f"{args.trainer_restart_s:g}", *truth, *_power_save(args), timeout=300)


def _first_at(cluster: Path, what: str) -> list[str]:
    """``--first-at-s`` of :data:`FIRST_SUBMIT_REAL_S` on ``cluster``'s clock; fails when ``what`` took past it."""
    clock = ClusterLayout(cluster).clock()
    first_at = lead_s(clock.time_scale)
    if clock.now_s() > first_at:
        late = clock.real_s(clock.now_s())
        raise SystemExit(f"{what} took {late:.1f} s after cluster up, over {FIRST_SUBMIT_REAL_S:g} s")
    return ["--first-at-s", f"{first_at:g}"]


def _power_save(args: argparse.Namespace) -> list[str]:
    """``--power-save --suspend-s S --resume-s R`` when the runs power idle nodes down, else nothing."""
    if not args.power_save:
        return []
    return ["--power-save", "--suspend-s", f"{args.suspend_s:g}", "--resume-s", f"{args.resume_s:g}"]


def _wattplan_mode(args: argparse.Namespace, agent: bool) -> list[str]:
    """How wattplan trades energy for JCT, the same live and in the replay.

    By default the runtime-bounded mode (``--max-jct-increase``, ``--governor``; the agent's ``--mode steered``);
    with ``--max-slowdown X`` the mode whose JCT is bounded job by job (``--slurm-starts --max-slowdown X
    --objective energy --delta 0.9``, no governor: the agent's default ``--mode by-job``); with ``--pinned X`` the
    runtime-bounded mode without restarts (``--pin-running --max-slowdown X``); ``--tail-bound X`` adds the steered
    mode's per-job tail bound.
    """
    if args.agent_policy != "wattplan":
        return []  # a baseline decided by the loop: no energy mode to set
    if args.max_slowdown is None:
        governor = ["--governor", args.governor] if args.governor else []
        steered = ["--mode", "steered"] if agent else []
        pinned = [] if args.pinned is None else ["--pin-running", "--max-slowdown", f"{args.pinned:g}"]
        tail = [] if args.tail_bound is None else ["--tail-bound", f"{args.tail_bound:g}"]
        return [*steered, "--max-jct-increase", f"{args.max_jct_increase:g}", *governor, *pinned, *tail]
    mode = ["--slurm-starts", "--max-slowdown", f"{args.max_slowdown:g}", "--objective", "energy", "--delta", "0.9"]
    return [*(["--no-jct-bound"] if agent else []), *mode]


def _budget(args: argparse.Namespace) -> list[str]:
    """The energy budget per period (``--energy-budget-kwh``, ``--budget-period-s``), live and in the replay alike."""
    if args.energy_budget_kwh is None:
        return []
    return ["--energy-budget-kwh", f"{args.energy_budget_kwh:g}", "--budget-period-s", f"{args.budget_period_s:g}"]


def start_agent_and_submit(
    cluster: Path, trace: Path, agent_args: list[str], log: IO[str], log_path: Path, first_at: bool = False
) -> tuple[subprocess.Popen[bytes], float]:
    """Start ``wattplan agent --cluster CLUSTER AGENT_ARGS`` (output to ``log``), then submit ``trace``.

    The agent runs before the first job arrives, as on a cluster it serves (started after the submitter, its
    start-up of a few real seconds made the first jobs wait ~150 emulated seconds): the submission waits for its
    first round (``log_path`` says so, 120 s at most) and, with ``first_at``, submits the first job
    :data:`FIRST_SUBMIT_REAL_S` after the cluster's start. Returns the agent and the Unix time of the submission.
    """
    agent = subprocess.Popen([*WATTPLAN, "agent", "--cluster", str(cluster), *agent_args], stdout=log, stderr=log)
    deadline = time.monotonic() + 120
    while agent.poll() is None and " round 0 " not in log_path.read_text():
        if time.monotonic() > deadline:
            agent.kill()
            raise SystemExit(f"the agent played no round in 120 s: {log_path}")
        time.sleep(0.2)
    when = _first_at(cluster, "the agent's start") if first_at else []
    submitted_unix = time.time()
    wattplan_cli("cluster", "submit", str(trace), "--dir", str(cluster), *when)
    return agent, submitted_unix


PROGRESS_S = 30.0
"""Real seconds between two progress lines of a run."""


def _jobs_in(trace: Path) -> int:
    """The jobs of a trace file (its non-empty lines; a Philly CSV's header aside)."""
    lines = [line for line in trace.read_text().splitlines() if line.strip()]
    return len(lines) - (1 if trace.suffix == ".csv" else 0)


def _wait_with_progress(agent: subprocess.Popen[bytes], db: Path, trace: Path, t0: float) -> int:
    """The agent's exit status, with a line every :data:`PROGRESS_S` of how many jobs have ended (at most 4 h)."""
    total = _jobs_in(trace)
    while True:
        try:
            return agent.wait(timeout=PROGRESS_S)
        except subprocess.TimeoutExpired:
            if time.monotonic() - t0 > 4 * 3600:
                agent.kill()
                return agent.wait()
        ended = 0
        with contextlib.suppress(sqlite3.Error):
            with sqlite3.connect(db) as c:
                ended = int(c.execute("SELECT COUNT(*) FROM jobs WHERE end_state IS NOT NULL").fetchone()[0])
        print(f"  managed: {ended}/{total} jobs ended, {time.monotonic() - t0:.0f} s", flush=True)


def managed(trace: Path, cluster: Path, out: Path, gpus: str, scale: float, args: argparse.Namespace) -> dict[str, Any]:
    """One managed live run; its report plus the agent's wall time and per-round overhead."""
    _up(cluster, gpus, scale, args)
    try:
        t0 = time.monotonic()
        agent_args = [
            "--until-idle",
            "--round-s",
            f"{args.round_s:g}",
            "--restart-s",
            f"{args.restart_s:g}",
            "--start-s",
            f"{args.trainer_restart_s:g}",
            "--policy",
            args.agent_policy,
            *_wattplan_mode(args, agent=True),
            "--solver",
            args.solver,
            "--time-limit",
            f"{args.time_limit:g}",
            *(["--learn"] if args.learn else []),
            "--pairs" if args.pairs else "--no-pairs",  # said either way, whatever the agent's default
            *(["--power-save"] if args.power_save else []),
            *(["--power-down"] if args.power_down else []),
            *(["--power-up"] if args.power_up else []),
            *([] if args.event_rounds else ["--no-event-rounds"]),
            "--poll-s",
            f"{args.poll_s:g}",
            *(["--profiles", str(args.profiles)] if args.profiles else []),
            *_budget(args),
        ]
        with (out / "agent.log").open("w") as log:
            agent, _ = start_agent_and_submit(cluster, trace, agent_args, log, out / "agent.log", first_at=True)
            done = _wait_with_progress(agent, cluster / "agent.db", trace, t0)
        if done != 0:
            raise SystemExit(f"agent exited {done}: see {out / 'agent.log'}")
        wall = time.monotonic() - t0
        report = _report(cluster, out / "managed.json")
        with sqlite3.connect(cluster / "agent.db") as db:
            rows = db.execute("SELECT overhead_s, solve_s, status FROM rounds").fetchall()
            restarts = db.execute("SELECT SUM(restarts) FROM jobs").fetchone()[0] or 0
            calls = dict(db.execute("SELECT status, COUNT(*) FROM actions GROUP BY status").fetchall())
        overheads = [r[0] for r in rows if r[0] is not None]
        report["agent"] = {
            "wall_s": wall,
            "rounds": len(rows),
            "overhead_s_median": statistics.median(overheads) if overheads else None,
            "overhead_s_max": max(overheads) if overheads else None,
            "solve_s_median": statistics.median([r[1] for r in rows if r[1] is not None] or [0.0]),
            "restarts": restarts,
            "calls": calls,
        }
        (out / "managed.json").write_text(json.dumps(report, indent=1) + "\n")
        _keep_logs(cluster, out)
        return report
    finally:
        wattplan_cli("cluster", "down", "--dir", str(cluster))


def _keep_logs(cluster: Path, out: Path) -> None:
    """Copy the run's agent state (a managed run's) and Slurm's logs into ``out``.

    ``agent.db`` holds the rounds and calls with their real times, ``slurm-log/`` what
    ``benchmarks/slurm_latency.py`` reads.
    """
    if (cluster / "agent.db").is_file():  # an unmanaged run has no agent
        shutil.copy(cluster / "agent.db", out / "agent.db")
    logs = out / "slurm-log"
    logs.mkdir(exist_ok=True)
    for log in (cluster / "slurm" / "log").glob("slurm*.log"):
        shutil.copy(log, logs / log.name)


def unmanaged(
    trace: Path, cluster: Path, out: Path, gpus: str, scale: float, args: argparse.Namespace
) -> dict[str, Any]:
    """One run under Slurm's own scheduling; its report."""
    _up(cluster, gpus, scale, args)
    try:
        maxq = ["--maxq"] if args.maxq else []
        when = _first_at(cluster, "cluster up")
        wattplan_cli("cluster", "submit", str(trace), "--dir", str(cluster), "--unmanaged", *maxq, *when, "--wait")
        t0 = said = time.monotonic()
        while True:
            report = _report(cluster, out / "unmanaged.json")
            if report["jobs_completed"] == report["jobs_total"]:
                _keep_logs(cluster, out)
                return report
            if time.monotonic() - said >= PROGRESS_S:
                said = time.monotonic()
                done, total = report["jobs_completed"], report["jobs_total"]
                print(f"  unmanaged: {done}/{total} jobs completed, {said - t0:.0f} s", flush=True)
            time.sleep(5)
    finally:
        wattplan_cli("cluster", "down", "--dir", str(cluster))


def simulate(trace: Path, out: Path, gpus: str, args: argparse.Namespace) -> dict[str, Any]:
    """The replay of the same trace on the simulated Slurm: wattplan (the same bound) and Slurm alone, by policy."""
    alone = "maxq" if args.maxq else "slurm-powersave" if args.power_save else "slurm"
    wattplan_cli(
        "simulate",
        str(trace),
        "--cluster",
        gpus,
        "--policy",
        args.agent_policy,
        "--policy",
        alone,
        "--time-scale",
        f"{args.time_scale:g}",
        "--load-s",
        f"{args.trainer_restart_s:g}",
        "--up-before-s",
        f"{lead_s(args.time_scale):g}",
        *_power_save(args),
        *(["--power-down"] if args.power_down else []),
        *(["--power-up"] if args.power_up else []),
        *([] if args.event_rounds else ["--no-event-rounds"]),
        "--poll-s",
        f"{args.poll_s:g}",
        *_wattplan_mode(args, agent=False),
        "--round-s",
        f"{args.round_s:g}",
        "--restart-s",
        f"{args.restart_s:g}",
        "--solver",
        args.solver,
        "--time-limit",
        f"{args.time_limit:g}",
        "--out",
        str(out / "sim"),
        "--no-plots",
        "-q",
        *(["--learn"] if args.learn else []),
        *(["--profiles", str(args.profiles)] if args.profiles else []),
        *(["--truth", str(args.truth)] if args.truth else []),
        *_budget(args),
        *([] if args.progress_metric else ["--no-progress-metric"]),
        *(["--pairs"] if args.pairs else []),  # the replay's agent pairs as the live one
        *(["--pass-delay-s", "0", "--completing-s", "0"] if args.no_slurm_waits else []),
    )
    return {p: json.loads((out / "sim" / p / "summary.json").read_text()) for p in (args.agent_policy, alone)}


def main() -> None:
    """Run every trace (module docstring) and print the comparison."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--gpus", default="v100:16")
    p.add_argument("--time-scale", type=float, default=30.0)
    p.add_argument("--round-s", type=float, default=360.0)
    p.add_argument("--trainer-restart-s", type=float, default=30.0)
    p.add_argument("--max-jct-increase", type=float, default=3.0)
    p.add_argument(
        "--max-slowdown",
        type=float,
        help="Run wattplan in the by-job mode: Slurm's starts, no preemption, at most this %% slower (no governor).",
    )
    p.add_argument("--solver", default="highs")
    p.add_argument("--governor", choices=("accrued", "projected"), help="The governor's rule (default: the agent's).")
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--learn", action="store_true")
    p.add_argument("--pairs", action="store_true", help="Let the agent (and the replay) co-locate pairs.")
    p.add_argument(
        "--pinned",
        type=float,
        help="The steered mode without restarts, live and in the replay: --pin-running --max-slowdown this %%.",
    )
    p.add_argument("--tail-bound", type=float, help="The steered mode's tail bound (%%), live and in the replay.")
    p.add_argument(
        "--no-event-rounds", dest="event_rounds", action="store_false", help="The agent plays fixed rounds only."
    )
    p.add_argument(
        "--poll-s",
        type=float,
        default=SimulateOptions().poll_s,
        help="Real seconds between the agent's reads of Slurm's queue, live and in the replay (--time-scale times "
        "as long in emulated time).",
    )
    p.add_argument("--profiles", type=Path, help="Library the agent and the replay plan with (default: shipped).")
    p.add_argument("--truth", type=Path, help="Library the emulated GPUs run by (default: the shipped one).")
    p.add_argument("--tag", default="", help="Suffix of each family's output folder (e.g. -learn).")
    p.add_argument(
        "--no-progress-metric",
        dest="progress_metric",
        action="store_false",
        help="The replay only (--only simulate): no job exports its steps; the agent estimates them.",
    )
    p.add_argument(
        "--agent-policy",
        default="wattplan",
        help="The policy the managed run's agent decides by (e.g. fifo-maxq: the maxq baseline run by the agent).",
    )
    p.add_argument("--power-save", action="store_true", help="Slurm's power saving on both clusters and the replay.")
    p.add_argument(
        "--power-down", action="store_true", help="With --power-save: the agent (and its replay) power idle nodes down."
    )
    p.add_argument(
        "--power-up", action="store_true", help="With --power-down: they also boot nodes ahead of a burst's jobs."
    )
    p.add_argument("--suspend-s", type=float, default=600.0, help="With --power-save: idle s before power-down.")
    p.add_argument("--resume-s", type=float, default=300.0, help="With --power-save: a node's boot (s).")
    p.add_argument(
        "--maxq", action="store_true", help="The unmanaged run at MaxQ's power limits (cluster submit --maxq)."
    )
    p.add_argument("--energy-budget-kwh", type=float, help="The agent's (and the replay's) energy budget per period.")
    p.add_argument("--budget-period-s", type=float, default=3600.0, help="With --energy-budget-kwh: the period (s).")
    p.add_argument("--reuse-unmanaged", action="store_true", help="Keep an earlier unmanaged.json of a family.")
    p.add_argument(
        "--no-slurm-waits",
        action="store_true",
        help="The replay only: no scheduler pass delay and no COMPLETING time (the simulated Slurm before they were "
        "measured and modelled).",
    )
    p.add_argument("--only", choices=("managed", "unmanaged", "simulate"), action="append")
    p.add_argument(
        "--rescore", action="store_true", help="Run nothing: compare each family's managed.json and unmanaged.json."
    )
    args = p.parse_args()
    if not args.progress_metric and set(args.only or ["managed"]) != {"simulate"}:
        p.error("--no-progress-metric applies to the replay only: give --only simulate")
    if args.power_down and not args.power_save:
        p.error("--power-down acts through Slurm's power saving: give --power-save")
    if args.power_up and not args.power_down:
        p.error("--power-up is part of the agent's node power rule: give --power-down")
    if args.tail_bound is not None and args.max_slowdown is not None:
        p.error("--tail-bound steers the rounds, --max-slowdown is the by-job mode: give one")
    if args.pinned is not None and args.max_slowdown is not None:
        p.error("--pinned is the steered mode, --max-slowdown the by-job mode: give one")
    if args.maxq and not args.power_save:
        p.error("--maxq needs --power-save: the replay's maxq baseline is Slurm's power saving with MaxQ's limits")
    args.restart_s = args.trainer_restart_s + SLURM_REQUEUE_DELAY_S * args.time_scale
    before = args.out / "live_compare.json"
    old_rows = json.loads(before.read_text()) if before.exists() else []
    families = {trace.stem + args.tag for trace in args.traces}
    rows = [r for r in old_rows if r.get("family") not in families]  # other families' rows stay
    for trace in args.traces:
        family = trace.stem + args.tag
        out = args.out / family
        out.mkdir(parents=True, exist_ok=True)
        cluster = Path(f"/tmp/wattplan-live-{family}")
        steps = [] if args.rescore else (args.only or ["managed", "unmanaged", "simulate"])
        old_row: dict[str, Any] = next((r for r in old_rows if r.get("family") == family), {})
        m = managed(trace, cluster, out, args.gpus, args.time_scale, args) if "managed" in steps else None
        u = None
        if args.rescore:
            m, u = (json.loads((out / f"{k}.json").read_text()) for k in ("managed", "unmanaged"))
            m = {**(old_row.get("managed") or {}), **m}  # the run's restarts and overheads stay
        if "unmanaged" in steps:
            previous = out / "unmanaged.json"
            if args.reuse_unmanaged and previous.exists():  # Slurm alone does not depend on the agent's code
                u = json.loads(previous.read_text())
            else:
                u = unmanaged(trace, cluster, out, args.gpus, args.time_scale, args)
        s = simulate(trace, out, args.gpus, args) if "simulate" in steps else None
        m, u, s = (
            new if new is not None else old_row.get(k) for k, new in (("managed", m), ("unmanaged", u), ("simulate", s))
        )
        rows.append(
            {
                "family": family,
                "managed": m,
                "unmanaged": u,
                "simulate": s,
                "restart_s": args.restart_s,
                "time_scale": args.time_scale,
            }
        )
        (args.out / "live_compare.json").write_text(json.dumps(rows, indent=1) + "\n")
        if m and s and args.agent_policy in s:
            r = s[args.agent_policy]
            print(
                f"{family}: replay against live: energy {r['energy_kwh'] / m['energy_kwh'] - 1:+.1%}, avg JCT "
                f"{r['avg_jct_s'] / m['avg_jct_s'] - 1:+.1%}, p95 {r['p95_jct_s'] / m['p95_jct_s'] - 1:+.1%} "
                f"({r['energy_kwh']:.3f} against {m['energy_kwh']:.3f} kWh, own windows)"
            )
        if m and u:
            idle_for = args.suspend_s + 60.0 if args.power_save else float("inf")  # powered down after that
            rows[-1]["common_window"] = common = common_window(m, u, idle_cluster_w(args), idle_for)
            rows[-1]["start_delay"] = {"managed": start_delays(m), "unmanaged": start_delays(u)}
            (args.out / "live_compare.json").write_text(json.dumps(rows, indent=1) + "\n")
            de = m["energy_kwh"] / u["energy_kwh"] - 1
            dj = m["avg_jct_s"] / u["avg_jct_s"] - 1
            dp = m["p95_jct_s"] / u["p95_jct_s"] - 1
            print(
                f"{family}: managed {m['energy_kwh']:.3f} kWh, avg JCT {m['avg_jct_s']:.0f} s, p95 "
                f"{m['p95_jct_s']:.0f} s; unmanaged {u['energy_kwh']:.3f} kWh, {u['avg_jct_s']:.0f} s, p95 "
                f"{u['p95_jct_s']:.0f} s: energy {de:+.1%}, avg JCT {dj:+.1%}, p95 {dp:+.1%}; "
                f"over the same {common['end_s']:.0f} s: {common['managed_kwh']:.3f} against "
                f"{common['unmanaged_kwh']:.3f} kWh ({common['managed_kwh'] / common['unmanaged_kwh'] - 1:+.1%})"
            )


def start_delays(report: dict[str, Any]) -> dict[str, float]:
    """Emulated seconds from a job's submission to its first start over a run's jobs: median, p95 and mean.

    Live, the agent's own latency (a round on the arrival, its solve, the release) is in it, at the run's time scale;
    so is a node's boot under power saving and any wait for GPUs.
    """
    waits = sorted(j["start_s"] - j["submit_s"] for j in report["jobs"] if j.get("start_s") is not None)
    if not waits:
        return {}
    return {
        "median_s": statistics.median(waits),
        "p95_s": waits[min(len(waits) - 1, int(0.95 * (len(waits) - 1) + 0.5))],
        "mean_s": statistics.fmean(waits),
    }


def idle_cluster_w(args: argparse.Namespace) -> float:
    """The emulated cluster's draw with every GPU idle (W): ``sum_g N_g (Pnode_g + K_g Pidle_g)``.

    From the truth library (or the shipped one) as the emulator takes it (:func:`cluster_context`: the library's
    node power where it has one).
    """
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
    from wattplan.planner.sim.round_instance import cluster_context

    ctx = cluster_context(parse_cluster_spec(args.gpus), load_profile_library(args.truth), RoundRules())
    return sum(g.nodes * g.powered_node_w for g in ctx.gpu_types)


def common_window(m: dict[str, Any], u: dict[str, Any], idle_w: float, idle_for_s: float) -> dict[str, float]:
    """Both runs' energy over the same window, from the cluster's start to the later last end (kWh).

    Both runs start their clusters :data:`FIRST_SUBMIT_REAL_S` before their first submission.

    The run that ends first still draws the idle cluster's power until the other ends, for at most ``idle_for_s``
    (its nodes are powered down after that with power saving; ``inf`` without it):
    ``E + min(end_max - end, idle_for_s) P_idle``.
    """
    end = max(m["window"]["end_s"], u["window"]["end_s"])
    extra = {
        k: min(end - r["window"]["end_s"], idle_for_s) * idle_w / 3.6e6 for k, r in (("managed", m), ("unmanaged", u))
    }
    return {
        "end_s": end,
        "idle_cluster_w": idle_w,
        "managed_kwh": m["energy_kwh"] + extra["managed"],
        "unmanaged_kwh": u["energy_kwh"] + extra["unmanaged"],
    }


if __name__ == "__main__":
    main()
