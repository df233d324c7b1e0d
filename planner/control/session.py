"""``wattplan simulate --engine slurm`` and ``wattplan.simulate(engine="slurm")``: every policy, one after another.

Each policy of ``--policy`` is replayed by :func:`planner.control.slurm_replay.replay_on_slurm` (the agent's loop
on the simulated Slurm); ``slurm`` is Slurm alone and ``all`` means Slurm alone and the five built-in policies.
``out/POLICY/`` gets each policy's ``summary.json``, ``jobs.csv`` and ``agent.log``, ``out/comparison.csv`` and
``comparison.json`` one row per policy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.control.slurm_replay import SLURM_ALONE, SimulatedCluster, SlurmReplayResult, replay_on_slurm
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.policies.registry import ALL
from wattplan.planner.sim.replay import ReplaySpec
from wattplan.planner.sim.session import replay_spec

COMPARISON_COLUMNS = (
    "policy",
    "jobs",
    "completed",
    "energy_kwh",
    "energy_dynamic_kwh",
    "energy_floor_kwh",
    "captured_share",
    "carbon_kg",
    "energy_cost_usd",
    "avg_jct_s",
    "p95_jct_s",
    "makespan_s",
    "requeues",
    "rounds",
    "wall_s",
    "cpu_s",
)
"""The columns of ``comparison.csv`` (and of the table ``simulate`` prints), in order."""


def setup_of(options: SimulateOptions) -> SimulatedCluster:
    """The simulated Slurm's constants from ``simulate``'s options."""
    return SimulatedCluster(
        options.time_scale, options.load_s, options.requeue_delay_s, options.event_rounds, options.periodic_rounds
    )


def split_policies(names: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether Slurm alone is asked for, and the other names (``all``: Slurm alone and the five built-ins)."""
    alone = any(n in (SLURM_ALONE, ALL) for n in names)
    return alone, [n for n in names if n != SLURM_ALONE]


def slurm_replays(
    trace: str | Path,
    cluster: str,
    options: SimulateOptions,
    policies: Sequence[str],
    out: Path,
    note: Callable[[str], None] | None = None,
) -> list[SlurmReplayResult]:
    """Replay ``trace`` on ``cluster`` with each policy on the simulated Slurm (module docstring), in order.

    ``options`` is the checked record; ``note`` hears one line per policy replayed.
    """
    from wattplan.planner.files.paths import refuse_overwriting_inputs

    alone, others = split_policies(policies)
    spec = replay_spec(trace, cluster, options, others or ["wattplan"])
    refuse_overwriting_inputs({"--out": out}, [spec.trace, spec.profiles, spec.truth], folders={"--out"})
    names = ([SLURM_ALONE] if alone else []) + (list(spec.policies) if others else [])
    setup = setup_of(options)
    results = []
    for name in names:
        result = replay_on_slurm(spec, name, setup, Path(out))
        results.append(result)
        if note is not None:
            s = result.summary
            note(
                f"{name}: {s['completed']} of {s['jobs']} jobs, {s['energy_kwh']:.3f} kWh, {s['rounds']} rounds, "
                f"{s['wall_s']:.1f} s"
            )
    results = with_floor(spec, results)
    for result in results:
        write_text_atomic(Path(out) / result.policy / "summary.json", json.dumps(result.summary, indent=2) + "\n")
    write_comparison(out, results)
    return results


def workload_powered_floor(spec: ReplaySpec) -> EnergyFloor:
    """The powered floor of every job of ``spec``'s workload under the truth (:func:`planner.planning.powered_floor`).

    Every node powered, as on this engine and live.
    """
    from wattplan.planner.planning import powered_floor
    from wattplan.planner.sim.replay import prepare
    from wattplan.planner.sim.round_instance import workload_instance
    from wattplan.planner.sim.state import JobState

    workload, ctx = prepare(spec)
    return powered_floor(
        workload_instance(ctx.real, [JobState.new(j) for j in workload.jobs]),
        {j.id: j.arrival_s for j in workload.jobs},
    )


def with_floor(spec: ReplaySpec, results: Sequence[SlurmReplayResult]) -> list[SlurmReplayResult]:
    """Each result with the workload's powered floor and, against the reference, the share of the saving captured.

    ``energy_floor_kwh``: :func:`workload_powered_floor`. The reference is Slurm alone when it was replayed, else
    ``fifo-max``; ``captured_share = (E_ref - E) / (E_ref - E_floor)`` (1: at the floor, 0: no better than the
    reference, < 0: worse). No floor when the LP is not solved; no share without a reference.
    """
    floor = workload_powered_floor(spec)
    by_name = {r.policy: r for r in results}
    ref = by_name.get(SLURM_ALONE) or by_name.get("fifo-max")
    out = []
    for r in results:
        extra: dict[str, Any] = {"energy_floor_kwh": floor.energy_kwh, "energy_floor_note": floor.note}
        if ref is not None and floor.energy_kwh is not None:
            saving = ref.summary["energy_kwh"] - floor.energy_kwh
            extra["reference_policy"] = ref.policy
            extra["captured_share"] = (
                (ref.summary["energy_kwh"] - r.summary["energy_kwh"]) / saving if saving > 0 else None
            )
        out.append(replace(r, summary={**r.summary, **extra}))
    return out


def comparison_rows(results: Sequence[SlurmReplayResult]) -> list[dict[str, Any]]:
    """One row per policy with :data:`COMPARISON_COLUMNS`."""
    return [{c: r.summary.get(c) for c in COMPARISON_COLUMNS} for r in results]


def write_comparison(out: Path, results: Sequence[SlurmReplayResult]) -> None:
    """``out/comparison.csv`` and ``out/comparison.json`` (atomic)."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    rows = comparison_rows(results)
    write_text_atomic(out / "comparison.csv", pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS)).to_csv(index=False))
    write_text_atomic(out / "comparison.json", json.dumps(rows, indent=2) + "\n")


TABLE_ROWS = (
    ("jobs done", "completed", "{:.0f}"),
    ("energy kWh", "energy_kwh", "{:.3f}"),
    ("  GPUs' dynamic", "energy_dynamic_kwh", "{:.3f}"),
    ("  floor", "energy_floor_kwh", "{:.3f}"),
    ("saving captured", "captured_share", "{:.1%}"),
    ("kgCO2", "carbon_kg", "{:.2f}"),
    ("energy cost $", "energy_cost_usd", "{:.2f}"),
    ("avg JCT s", "avg_jct_s", "{:,.0f}"),
    ("p95 JCT s", "p95_jct_s", "{:,.0f}"),
    ("makespan s", "makespan_s", "{:,.0f}"),
    ("requeues", "requeues", "{:.0f}"),
    ("rounds", "rounds", "{:.0f}"),
    ("wall s", "wall_s", "{:.1f}"),
    ("CPU s", "cpu_s", "{:.1f}"),
)
"""The rows of :func:`comparison_table`: label, summary key, format."""
SIGNAL_KEYS = frozenset({"carbon_kg", "energy_cost_usd"})
"""Rows shown only when the replay was given the signal (``--carbon``, ``--price``)."""


def comparison_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One row per figure, one column per policy (reads at 80 columns for up to six policies)."""
    table = Table(title="Replay on a simulated Slurm", title_justify="left")
    table.add_column("", justify="left", no_wrap=True)
    for r in rows:
        table.add_column(shown(str(r["policy"])), justify="right", overflow="fold")
    for label, key, fmt in TABLE_ROWS:
        if key in SIGNAL_KEYS and all(r.get(key) is None for r in rows):
            continue  # no signal given
        table.add_row(label, *("-" if r.get(key) is None else fmt.format(r[key]) for r in rows))
    return table
