r"""Learning live: the share of the blind-to-oracle gap ``--learn`` recovers, from three ``live_compare.py`` runs.

Reads ``OUT/FAMILY-none``, ``-learn`` and ``-oracle`` (``managed.json``: the emulated cluster's report of the agent
planning with the shipped profiles, with ``--learn``, or with the truth itself; the GPUs run by the truth in all
three). Energies are compared over the three runs' common window, to the latest end: a run that ended sooner is
charged the idle cluster's draw until then, ``I = Pnode + G Pidle`` (W: the nodes' own draw as the run measured it,
``node_energy / window``, and the truth's idle power per GPU; docs/design.md §10.8). Beside it the energy of the
GPUs while they held jobs (``gpu_energy - gpu_idle_energy``, kWh), which no window changes. Share recovered
``(M_none - M_learn) / (M_none - M_oracle)`` per metric, ``-`` when the oracle is not 0.5% better than blind.

    python benchmarks/learning_live.py benchmarks/results/issue44/learning-live gavel_mix \
        --truth benchmarks/results/issue44/learning-live/truth-steep.json --gpus 16
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import read_json, write_json_atomic

MODES = ("none", "learn", "oracle")
J_PER_KWH = 3.6e6


def recovered(none: float, learn: float, oracle: float) -> float | None:
    """``(none - learn) / (none - oracle)``; None unless the oracle is better than blind by more than 0.5%."""
    gap = none - oracle
    return (none - learn) / gap if gap > 0.005 * abs(none) else None


def common_energies(reports: list[dict[str, Any]], idle_gpu_w: float, gpus: int) -> list[float]:
    """Each run's energy to the latest end of the three (kWh), its idle cluster charged after its own end."""
    end = max(r["window"]["end_s"] for r in reports)
    out = []
    for r in reports:
        own_s = r["window"]["end_s"] - r["window"]["start_s"]
        idle_w = r["node_energy_kwh"] * J_PER_KWH / own_s + gpus * idle_gpu_w
        out.append(r["energy_kwh"] + idle_w * (end - r["window"]["end_s"]) / J_PER_KWH)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("family")
    ap.add_argument("--truth", type=Path, required=True, help="The truth library the GPUs ran by (its idle power).")
    ap.add_argument("--gpus", type=int, required=True, help="The cluster's GPUs (live_compare.py's --gpus count).")
    ap.add_argument("--gpu-type", default="v100")
    args = ap.parse_args()
    truth = read_json(args.truth)
    idle_gpu_w = next(float(g["idle_power_w"]) for g in truth["gpu_types"] if g["name"] == args.gpu_type)
    reports = [read_json(args.out / f"{args.family}-{m}" / "managed.json") for m in MODES]
    common = common_energies(reports, idle_gpu_w, args.gpus)
    jobs_gpu = [r["gpu_energy_kwh"] - r["gpu_idle_energy_kwh"] for r in reports]
    jct = [r["avg_jct_s"] for r in reports]
    p95 = [r["p95_jct_s"] for r in reports]
    row = {
        "family": args.family,
        "energy_own_kwh": [r["energy_kwh"] for r in reports],
        "energy_common_kwh": common,
        "jobs_gpu_kwh": jobs_gpu,
        "avg_jct_s": jct,
        "p95_jct_s": p95,
        "completed": [r["jobs_completed"] for r in reports],
        "recovered": {
            "energy_common": recovered(*common),
            "jobs_gpu": recovered(*jobs_gpu),
            "avg_jct": recovered(*jct),
        },
    }
    write_json_atomic(args.out / f"{args.family}-learning.json", row)

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.0f}%"

    print("| metric | none / learn / oracle | recovered |")
    print("|---|---|---|")
    for label, values, share in (
        ("energy, common window kWh", common, row["recovered"]["energy_common"]),
        ("GPUs' energy while holding jobs kWh", jobs_gpu, row["recovered"]["jobs_gpu"]),
        ("avg JCT s", jct, row["recovered"]["avg_jct"]),
    ):
        print(f"| {label} | {' / '.join(f'{v:,.3f}' for v in values)} | {pct(share)} |")
    print(f"| p95 JCT s | {' / '.join(f'{v:,.0f}' for v in p95)} | |")


if __name__ == "__main__":
    main()
