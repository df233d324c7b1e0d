"""Learning replays: no learning, learning and an oracle, on a truth that differs from the planner's library.

The truth is ``wattplan profiles truth`` of the shipped library with its defaults (planner/profiling/
truth.py: saturating scaling S(n) = min(n / (1 + 0.08 (n - 1)), 3.3), power that follows utilisation,
pair rates x 1.07 / 1.71, idle 41 W, node 230 W). Per slice and policy, three replays of
``wattplan simulate`` (the agent's loop on the simulated Slurm, every node on; the agent learns from the steps and
power it observes each round, as live):

* ``none``: plans with the shipped library, jobs run by the truth (``--truth``);
* ``learn``: the same with ``--learn``;
* ``oracle``: plans with the truth (``--profiles truth --truth truth``).

The share of the gap that learning recovers, per metric ``M`` (energy kWh, average JCT):
``(M_none - M_learn) / (M_none - M_oracle)``; undefined (``-``) when the oracle is not better than no
learning on ``M`` by more than 0.5%, since a ratio of two differences within noise means nothing. Energies are over
the three replays' common window (to the longest of their makespans, docs/design.md §10.8: a replay that ends
sooner is charged the idle cluster's draw until then), so a slower schedule is not charged idle power the others
draw too. The replay reports no learner's statistics, so the table has no columns for the learned profiles'
errors (the round-based replay's ``learning`` summary).
``--cap-spread 1`` gives each job family its own scaling ceiling (``cap x 2^h``, ``h`` in [-1, 1]): a
truth where scaling differs by model, so that pooling across types is not exact.

    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --workers 2
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --workers 2 --cap-spread 1
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --workers 2 --objective efficiency
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --workers 2 --repaired-prior
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --slices gavel-6c71a0 --max-jobs 20   # a smoke run
    # the live families on the steep truth of "Learning live" (RESULTS), steered as the live runs were:
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --slices gavel_mix philly_shape --cluster v100:32 \
        --alpha 0.3 --cap 2.0 --objective efficiency --max-jct-increase 3
    # the same in the agent's default, by-job mode (each job at most 10% slower than alone at full power):
    PYTHONPATH=. .venv/bin/python benchmarks/learning_replay.py --slices gavel_mix philly_shape --cluster v100:32 \
        --alpha 0.3 --cap 2.0 --max-slowdown 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slices import SLICES as ENERGY_SLICES
from slices import Slice

from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
from wattplan.planner.control.common_window import common_window_s, energy_over
from wattplan.planner.files.resources import profile_library
from wattplan.planner.profiling.fit import fit_library, write_fitted
from wattplan.planner.profiling.truth import TruthParams, truth_library

ROOT = Path(__file__).resolve().parent.parent


LEARNING_SLICES = ("gavel-6c71a0", "philly-6214e9", "heavy-gavel-ee9e8c")
"""The slices of :mod:`slices` replayed by default: two of the 150-job bursts and one heavy slice."""
SLICES = (
    *(s for s in ENERGY_SLICES if s.name in LEARNING_SLICES),
    # The live families of benchmarks/live_compare.py (instances/live/), built apart from the slices above.
    Slice("gavel_mix", ("instances/live/gavel_mix.trace",)),
    Slice("philly_shape", ("instances/live/philly_shape.trace",)),
)
MODES = ("none", "learn", "oracle")


def mode_args(mode: str, truth: Path, prior: Path | None) -> list[str]:
    believed = [] if prior is None else ["--profiles", str(prior)]
    if mode == "none":
        return [*believed, "--truth", str(truth)]
    if mode == "learn":
        return [*believed, "--truth", str(truth), "--learn"]
    return ["--profiles", str(truth), "--truth", str(truth)]


def run(
    sl: Slice, mode: str, policy: str, truth: Path, prior: Path | None, out: Path, extra: list[str], cluster: str
) -> dict:
    """One replay of ``sl`` by ``policy`` in ``mode`` (reused when its summary exists); its summary.

    A summary with ``rounds_simulated`` was written by the round-based replay: refused, naming ``--out``.
    """
    folder = out / sl.name / policy / mode
    summary = folder / policy / "summary.json"  # simulate writes each policy's files to out/<policy>/
    if not summary.exists():
        cmd = [sys.executable, str(ROOT / "cli.py"), "simulate", *sl.args, "--cluster", cluster]
        cmd += ["-p", policy, "-q", "--no-plots", "-o", str(folder), *mode_args(mode, truth, prior), *extra]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    found = read_json(summary)
    if "rounds_simulated" in found:
        raise SystemExit(f"{summary} was written by the round-based replay: give a new --out")
    return found


def common_energies(summaries: list[dict]) -> list[float]:
    """Each replay's energy over the replays' common window (kWh); their own when one left a job unfinished."""
    window = common_window_s(summaries)
    if window is None:
        return [s["energy_kwh"] for s in summaries]
    return [energy_over(s, window) for s in summaries]


def first_jobs(sl: Slice, n: int) -> Slice:
    """``sl`` cut to its first ``n`` jobs by arrival: ``--max-jobs n`` in place of its own, or added."""
    args = list(sl.args)
    if "--max-jobs" in args:
        args[args.index("--max-jobs") + 1] = str(n)
    else:
        args += ["--max-jobs", str(n)]
    return Slice(sl.name, tuple(args))


def recovered(none: float, learn: float, oracle: float) -> float | None:
    gap = none - oracle
    return (none - learn) / gap if gap > 0.005 * abs(none) else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/learning-loop")
    ap.add_argument("--slices", nargs="*", default=list(LEARNING_SLICES))
    ap.add_argument("--policies", nargs="*", default=["wattplan"])
    ap.add_argument("--time-limit", default="2")
    ap.add_argument("--objective", default="progress")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cap-spread", type=float, default=0.0, help="per-family spread of the truth's ceiling")
    ap.add_argument("--alpha", type=float, default=TruthParams().alpha, help="the truth's Amdahl loss per extra GPU")
    ap.add_argument("--cap", type=float, default=TruthParams().cap, help="the truth's ceiling of the speed-up S(n)")
    ap.add_argument("--cluster", default="v100:32,p100:16")
    ap.add_argument("--max-jct-increase", help="wattplan's runtime-bounded mode, percent (the live runs' steering)")
    ap.add_argument(
        "--max-slowdown",
        help="wattplan's by-job mode, the agent's default: Slurm's starts, each job at most this %% slower "
        "(--slurm-starts --max-slowdown X --objective energy --delta 0.9, as benchmarks/live_compare.py runs it)",
    )
    ap.add_argument("--repeat", default="", help="a label: run again into OUT/repeat-LABEL (the run-to-run spread)")
    ap.add_argument("--max-jobs", type=int, help="only each slice's first N jobs, into OUT/max-jobs-N (a smoke run)")
    ap.add_argument(
        "--repaired-prior",
        action="store_true",
        help="plan (none, learn) with the shipped library after `wattplan profiles fit`'s sanity repair",
    )
    args = ap.parse_args()
    if args.cap_spread:
        args.out = args.out / f"cap-spread-{args.cap_spread:g}"
    if (args.alpha, args.cap) != (TruthParams().alpha, TruthParams().cap):
        args.out = args.out / f"alpha-{args.alpha:g}-cap-{args.cap:g}"
    if args.objective != "progress":
        args.out = args.out / f"objective-{args.objective}"
    if args.repaired_prior:
        args.out = args.out / "repaired-prior"
    if args.max_jct_increase is not None and args.max_slowdown is not None:
        raise SystemExit("--max-jct-increase (the steered mode) and --max-slowdown (the by-job mode) are exclusive")
    if args.max_jct_increase is not None:
        args.out = args.out / f"max-jct-increase-{args.max_jct_increase}"
    if args.max_slowdown is not None:
        args.out = args.out / f"max-slowdown-{args.max_slowdown}"
    if args.repeat:
        args.out = args.out / f"repeat-{args.repeat}"
    slices = [s for s in SLICES if s.name in args.slices]
    if args.max_jobs is not None:
        args.out = args.out / f"max-jobs-{args.max_jobs}"
        slices = [first_jobs(s, args.max_jobs) for s in slices]
    args.out.mkdir(parents=True, exist_ok=True)
    prior = None
    if args.repaired_prior:
        prior = args.out / "repaired.json"
        if not prior.exists():
            write_fitted(fit_library(json.loads(profile_library().read_text()), repair_prior=True), prior)
    truth = args.out / "truth.json"
    if not truth.exists():
        params = TruthParams(alpha=args.alpha, cap=args.cap, cap_spread=args.cap_spread)
        write_json_atomic(truth, truth_library(json.loads(profile_library().read_text()), params))
    extra = ["--time-limit", args.time_limit]
    if args.max_slowdown is not None:
        extra += ["--slurm-starts", "--max-slowdown", args.max_slowdown, "--objective", "energy", "--delta", "0.9"]
    else:
        extra += ["--objective", args.objective]
    if args.max_jct_increase is not None:
        extra += ["--max-jct-increase", args.max_jct_increase]
    jobs = [(s, m, p) for s in slices for p in args.policies for m in MODES]
    with ThreadPoolExecutor(args.workers) as pool:
        results = list(
            pool.map(lambda job: run(job[0], job[1], job[2], truth, prior, args.out, extra, args.cluster), jobs)
        )
    table = {(s.name, p, m): r for (s, m, p), r in zip(jobs, results, strict=True)}
    lines = [
        "| slice | policy | energy kWh none / learn / oracle | recovered | avg JCT h none / learn / oracle | "
        "recovered |",
        "|---|---|---|---|---|---|",
    ]
    rows = []
    for sl in slices:
        for p in args.policies:
            n, lr, o = (table[(sl.name, p, m)] for m in MODES)
            e = common_energies([n, lr, o])
            j = [x["avg_jct_s"] / 3600 for x in (n, lr, o)]
            re, rj = recovered(*e), recovered(*j)
            lines.append(
                f"| {sl.name} | {p} | {e[0]:.2f} / {e[1]:.2f} / {e[2]:.2f} | {_pct(re)} | "
                f"{j[0]:.3f} / {j[1]:.3f} / {j[2]:.3f} | {_pct(rj)} |"
            )
            rows.append({"slice": sl.name, "policy": p, "energy_kwh": e, "avg_jct_h": j, "recovered": [re, rj]})
    write_json_atomic(args.out / "learning.json", rows)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
