"""``wattplan simulate --engine slurm`` and ``wattplan.simulate(engine="slurm")``: every policy, one after another.

Each policy of ``--policy`` is replayed by :func:`planner.control.slurm_replay.replay_on_slurm` (the agent's loop
on the simulated Slurm); ``slurm`` is Slurm alone and ``all`` means Slurm alone and the five built-in policies.
``out/POLICY/`` gets each policy's ``summary.json``, ``jobs.csv`` and ``agent.log``, ``out/comparison.csv`` and
``comparison.json`` one row per policy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.control.slurm_replay import SLURM_ALONE, SimulatedCluster, SlurmReplayResult, replay_on_slurm
from wattplan.planner.sim.options import SimulateOptions
from wattplan.planner.sim.policies.registry import ALL
from wattplan.planner.sim.session import replay_spec

COMPARISON_COLUMNS = (
    "policy",
    "jobs",
    "completed",
    "energy_kwh",
    "energy_dynamic_kwh",
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
    write_comparison(out, results)
    return results


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
