"""What a spec-based prior (docs/design.md §9.8) gets wrong, measured where both sides are known.

1. **V100 <-> P100 on the shipped library**: the prior rule of :mod:`planner.profile_library.priors` predicts
   every P100 profile and pair entry from the V100 ones (and the reverse), for each speed rule (``fp32``, the one
   used is ``fp16_tensor``; ``fp32``; ``bandwidth``); median and 90th percentile of ``|predicted / measured - 1|``.
2. **V100 -> A40 on the Zeus summaries** (``instances/sources/zeus/summary_power_{v100,a40}.csv``, optimizer rows
   averaged): per workload and batch size measured on both, at each A40 limit whose reference limit
   ``s * 250 / 300`` lies in the V100 sweep, the rule's throughput ``r / t_v100(s_ref)`` (epochs/s) against
   ``1 / t_a40(s)`` and its power against the measured A40 power; and the idle rule (``round(0.134 TDP)``)
   against the floor of the A40 file's lowest power (the library's idle rule, §9.2).

Prints markdown (benchmarks/RESULTS.md, "Priors for GPU types without measurements") and, with ``--write``,
stores the expected error of the rule used (``fp16_tensor``: throughput from the A40 check, power the worse of
both, pair rates from P100; :func:`planner.profile_library.priors.expected_error`) as ``prior_error`` in the spec
file (the figures every prior's basis carries)::

    PYTHONPATH=. .venv/bin/python benchmarks/prior_error.py [--write]
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
from wattplan.planner.files.resources import source_dir
from wattplan.planner.profile_library.build import load_zeus
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.profile_library.priors import (
    SPEED_RULES,
    GpuSpecs,
    expected_error_doc,
    gpu_specs_path,
    load_gpu_specs,
    measure_expected_error,
    rule_error,
    zeus_rule_error,
)


def _pct(q: tuple[float, float]) -> str:
    return f"{q[0]:.1%} / {q[1]:.1%}"


def library_table(specs: GpuSpecs) -> list[str]:
    """Markdown rows of study 1."""
    lib = load_profile_library()
    lines = [
        "| reference -> target | speed rule | profiles | throughput median / p90 | power median / p90 "
        "| pairs | pair rates median / p90 |",
        "|---|---|---|---|---|---|---|",
    ]
    for a, b in (("v100", "p100"), ("p100", "v100")):
        for rule in SPEED_RULES:
            e = rule_error(lib, specs, a, b, rule)
            lines.append(
                f"| {a} -> {b} | {rule} | {e.profiles} | {_pct(e.throughput)} | {_pct(e.power)} | {e.pairs} "
                f"| {_pct(e.pair)} |"
            )
    return lines


def a40_table(specs: GpuSpecs) -> list[str]:
    """Markdown rows of study 2."""
    a40 = specs.types["a40"]
    _, lowest = load_zeus(source_dir(), "a40")
    lines = ["| speed rule | A40 cells | throughput median / p90 | power median / p90 |", "|---|---|---|---|"]
    for rule in SPEED_RULES:
        e = zeus_rule_error(specs, "v100", "a40", rule)
        lines.append(f"| {rule} | {e.profiles} | {_pct(e.throughput)} | {_pct(e.power)} |")
    lines.append("")
    lines.append(
        f"A40 idle: rule round(0.134 x {a40.tdp_w:g} W) = {a40.idle_power_w:g} W; the floor of the A40 file's "
        f"lowest power (the library's idle rule) = {math.floor(lowest)} W."
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the v100 -> p100 fp32 figures in the spec file")
    args = parser.parse_args()
    specs = load_gpu_specs()
    print("\n".join(library_table(specs)))
    print()
    print("\n".join(a40_table(specs)))
    if args.write:
        doc: dict[str, Any] = read_json(gpu_specs_path())
        expected = measure_expected_error(load_profile_library(), specs)
        doc["prior_error"] = expected_error_doc(expected)
        print(f"\n{expected.summary()}")
        write_json_atomic(gpu_specs_path(), doc)
        print(f"\nwrote prior_error to {gpu_specs_path()}")


if __name__ == "__main__":
    main()
