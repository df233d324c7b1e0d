"""Profile fidelity (issue 14): what the shipped library's borrowed power-limit curves cost, on data they did not use.

Two studies, printed as markdown tables (the ones in benchmarks/RESULTS.md), with CSVs under
``benchmarks/results/profile_fidelity/``:

1. Leave-one-out over the Zeus power-limit summaries of V100, P100, A40 and RTX 6000
   (:mod:`planner.profiling.leave_one_out`): each workload held out, its curve borrowed from the
   nearest other batch size of the same model (``batch``) or from every other model (``model``);
   errors of the time ratio, power and energy per epoch at each limit, and the energy regret of
   running at the limit the borrowed curve calls optimal. Files: ``loo_limits.csv`` (each limit of
   each ``batch`` case: one per held-out workload), ``loo_cases.csv`` (one line per case of both
   rules, worst errors over its limits), ``loo_summary.csv``.
2. The shipped library's V100 curves against the real Zeus profile windows
   (``instances/sources/zeus/profile_data/``, read by :func:`planner.profiling.zeus_windows.read_zeus_windows`),
   compared in shape mode (:func:`planner.profiling.check.check`): each measured model mapped to every
   library type of its family, grouped by the Zeus curve those types borrow. The files do not say how
   many steps a window holds; Zeus's ``GlobalPowerLimitOptimizer`` profiles ``profile_steps = 40`` by
   default, used for every file: shape ratios do not depend on it, the 1- vs 2-GPU speedup assumes the
   two files' windows hold the same steps. A40 windows have no A40 library to compare with (counted as
   unmatched). Files: ``windows_rows.csv`` (every compared row), ``windows_summary.csv``.

    .venv/bin/python benchmarks/profile_fidelity.py [--out benchmarks/results/profile_fidelity]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.files.resources import profile_library, source_dir
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.profiling.check import FidelityReport, check
from wattplan.planner.profiling.leave_one_out import HeldOutCase, LooSummary, leave_one_out, summarise
from wattplan.planner.profiling.points import MeasuredPoint
from wattplan.planner.profiling.zeus_windows import names_from_file, read_zeus_windows

OUT = Path(__file__).resolve().parent / "results" / "profile_fidelity"
STEPS_PER_WINDOW = 40  # Zeus GlobalPowerLimitOptimizer's default profile_steps (the files do not record it)
# Measured Zeus model -> the library families whose types it is compared with (the family whose curve
# it is, or which borrows its curve: ResNet-18 and A3C borrow ShuffleNet-v2's).
FAMILIES = {
    "resnet50": ("ResNet-50",),
    "resnet18": ("ResNet-18",),
    "shufflenetv2": ("ResNet-18", "A3C"),
    "bert-base-uncased": ("Transformer",),
}
SHAPES = ("throughput_shape", "power_shape", "energy_shape", "speedup")


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV text; floats with 4 significant digits."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows([format(v, ".4g") if isinstance(v, float) else v for v in row] for row in rows)
    return buf.getvalue()


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _abs(x: float) -> str:
    return f"{x:.1%}"


def _w(w: tuple[str, str, int]) -> str:
    return f"{w[1]}/{w[0]} b{w[2]}"


def loo_csvs(cases: Sequence[HeldOutCase], summaries: Sequence[LooSummary], out: Path) -> None:
    """Write loo_limits.csv, loo_cases.csv and loo_summary.csv."""
    limits = [
        (c.gpu_type, c.scheme, _w(c.workload), _w(c.donor), x.limit, x.time_ratio_error, x.power_error, x.energy_error)
        for c in cases
        if c.scheme == "batch"  # one donor per workload; the 1,040 ``model`` cases x limits would be 0.7 MB
        for x in c.result.limits
    ]
    write_text_atomic(
        out / "loo_limits.csv",
        _csv(
            ("gpu_type", "scheme", "held_out", "donor", "limit_w", "time_ratio_error", "power_error", "energy_error"),
            limits,
        ),
    )
    head = ("gpu_type", "scheme", "dataset", "network", "batch", "donor_dataset", "donor_network", "donor_batch")
    per_case = []
    for c in cases:
        xs = c.result.limits
        per_case.append(
            (
                c.gpu_type,
                c.scheme,
                *c.workload,
                *c.donor,
                len(xs),
                max((x.time_ratio_error for x in xs), key=abs),
                max((x.power_error for x in xs), key=abs),
                max((x.energy_error for x in xs), key=abs),
                c.result.s_true_opt,
                c.result.s_borrowed_opt,
                c.result.regret,
            )
        )
    write_text_atomic(
        out / "loo_cases.csv",
        _csv(
            (
                *head,
                "limits",
                "worst_time_ratio_error",
                "worst_power_error",
                "worst_energy_error",
                "true_opt_w",
                "borrowed_opt_w",
                "regret",
            ),
            per_case,
        ),
    )
    write_text_atomic(
        out / "loo_summary.csv",
        _csv(
            (
                "gpu_type",
                "scheme",
                "cases",
                "workloads",
                "median_time_ratio_error",
                "worst_time_ratio_error",
                "median_power_error",
                "worst_power_error",
                "median_energy_error",
                "worst_energy_error",
                "median_regret",
                "worst_regret",
                "worst_workload",
                "worst_donor",
            ),
            [
                (
                    s.gpu_type,
                    s.scheme,
                    s.cases,
                    s.workloads,
                    s.median_time_ratio_error,
                    s.worst_time_ratio_error,
                    s.median_power_error,
                    s.worst_power_error,
                    s.median_energy_error,
                    s.worst_energy_error,
                    s.median_regret,
                    s.worst_regret,
                    _w(s.worst_case.workload),
                    _w(s.worst_case.donor),
                )
                for s in summaries
            ],
        ),
    )


def loo_markdown(summaries: Sequence[LooSummary]) -> str:
    """The leave-one-out table: one line per (GPU type, scheme)."""
    lines = [
        "| GPU | borrowed from | held out / cases | time ratio: median / worst | power: median / worst "
        "| energy per epoch: median / worst | regret: median / worst | worst case (held out <- donor, W) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    label = {"batch": "same model, nearest batch", "model": "another model"}
    for s in summaries:
        w = s.worst_case
        lines.append(
            f"| {s.gpu_type} | {label[s.scheme]} | {s.workloads} / {s.cases} "
            f"| {_abs(s.median_time_ratio_error)} / {_pct(s.worst_time_ratio_error)} "
            f"| {_abs(s.median_power_error)} / {_pct(s.worst_power_error)} "
            f"| {_abs(s.median_energy_error)} / {_pct(s.worst_energy_error)} "
            f"| {_abs(s.median_regret)} / {_abs(s.worst_regret)} "
            f"| {_w(w.workload)} <- {_w(w.donor)}: {w.result.s_borrowed_opt} instead of {w.result.s_true_opt} |"
        )
    return "\n".join(lines)


def window_points() -> list[MeasuredPoint]:
    """Every window of the 12 shipped Zeus profile-window files, job type and GPU type from the file name."""
    points = []
    for path in sorted((source_dir() / "zeus" / "profile_data").glob("*.csv")):
        gpu_type, model = names_from_file(path)
        assert gpu_type is not None and model is not None, path
        points += read_zeus_windows(path, model, gpu_type, STEPS_PER_WINDOW)
    return points


def windows_study(lib_path: Path) -> tuple[list[dict[str, Any]], list[tuple[str, str, FidelityReport]], int]:
    """Shape checks of every V100 window model against each library type of its families.

    Returns summary lines (one per model and borrowed Zeus curve, library types with identical curves
    merged), every (model, library type, report), and the number of windows no library GPU type matches.
    """
    lib = load_profile_library(lib_path)
    mapping_doc = json.loads(lib_path.read_text())["mapping"]
    borrowed = {m["type"]: f"{m['zeus_network']} b{m['zeus_batch_size']}" for m in mapping_doc}
    points = window_points()
    no_gpu = sum(p.gpu_type not in lib.gpu_types for p in points)
    reports = []
    groups: dict[tuple[str, str], list[tuple[str, FidelityReport]]] = {}
    for model, families in FAMILIES.items():
        mine = [p for p in points if p.job_type == model and p.gpu_type in lib.gpu_types]
        for t in sorted({p.type for p in lib.profiles}):
            if not any(t == f or t.startswith(f + " (") for f in families):
                continue
            report = check(lib, mine, {model: t}, shape=True)
            reports.append((model, t, report))
            groups.setdefault((model, borrowed[t]), []).append((t, report))
    lines = []
    for (model, curve), members in groups.items():
        line: dict[str, Any] = {
            "model": model,
            "gpus": sorted({p.gpus for p in points if p.job_type == model and p.gpu_type == "v100"}),
            "curve": curve,
            "types": [t for t, _ in members],
        }
        for q in SHAPES:
            # speedup differs per library type (Gavel throughputs); the shape rows of one curve are the same
            errs = [[r.rel_error for r in rep.rows if r.quantity == q] for _, rep in members]
            if q != "speedup":
                errs = errs[:1]
            flat = [e for es in errs for e in es]
            line[q] = (len(flat), statistics.median(abs(e) for e in flat), max(flat, key=abs)) if flat else None
        lines.append(line)
    return lines, reports, no_gpu


def _cell(v: tuple[int, float, float] | None) -> str:
    return "-" if v is None else f"{_abs(v[1])} / {_pct(v[2])} ({v[0]})"


def windows_markdown(lines: Sequence[dict[str, Any]]) -> str:
    """The windows table: one line per measured model and borrowed Zeus curve."""
    out = [
        "| Zeus windows (V100) | GPUs | library types (borrowed Zeus curve) | X(s)/X(top): median / worst (rows) "
        "| P(s)/P(top) | e(s)/e(top) | speedup X(2)/X(1) |",
        "|---|---|---|---|---|---|---|",
    ]
    for ln in lines:
        types = ", ".join(t.replace(" (batch size ", " b").rstrip(")") for t in ln["types"])
        out.append(
            f"| {ln['model']} | {','.join(map(str, ln['gpus']))} | {types} ({ln['curve']}) | "
            + " | ".join(_cell(ln[q]) for q in SHAPES)
            + " |"
        )
    return "\n".join(out)


def windows_csvs(
    lines: Sequence[dict[str, Any]], reports: Sequence[tuple[str, str, FidelityReport]], out: Path
) -> None:
    """Write windows_rows.csv and windows_summary.csv."""
    rows = [
        (model, t, r.quantity, r.gpu_type, r.gpus, r.setting, r.predicted, r.measured, r.rel_error, " ".join(r.points))
        for model, t, rep in reports
        for r in rep.rows
    ]
    write_text_atomic(
        out / "windows_rows.csv",
        _csv(
            (
                "model",
                "library_type",
                "quantity",
                "gpu_type",
                "gpus",
                "setting",
                "predicted",
                "measured",
                "rel_error",
                "points",
            ),
            rows,
        ),
    )
    summary = [
        (ln["model"], ln["curve"], " | ".join(ln["types"]), q, *(ln[q] or ("", "", ""))) for ln in lines for q in SHAPES
    ]
    write_text_atomic(
        out / "windows_summary.csv",
        _csv(
            ("model", "borrowed_curve", "library_types", "quantity", "rows", "median_abs_error", "worst_error"), summary
        ),
    )


def main() -> None:
    """Run both studies, write the CSVs and print the markdown."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT, help="folder for the CSVs")
    ap.add_argument("--library", type=Path, default=profile_library(), help="profile library to check")
    args = ap.parse_args()
    cases = leave_one_out()
    summaries = summarise(cases)
    loo_csvs(cases, summaries, args.out)
    lines, reports, no_gpu = windows_study(args.library)
    windows_csvs(lines, reports, args.out)
    print("### Leave-one-out over the Zeus power-limit summaries\n")
    print(loo_markdown(summaries))
    print(f"\n### The library's V100 curves against the Zeus profile windows ({STEPS_PER_WINDOW} steps per window)\n")
    print(windows_markdown(lines))
    print(f"\n{no_gpu} windows (A40) have no GPU type in the library: unmatched. CSVs in {args.out}")


if __name__ == "__main__":
    main()
