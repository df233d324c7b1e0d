"""The seconds each test module takes, for ordering the suite's modules longest first (``tests/conftest.py``).

``make test`` runs the modules on two pytest-xdist workers, one whole module at a time (``--dist loadfile``), in
the order the suite is collected. Handed out longest first, no long module starts last while the other worker
idles (the greedy longest-processing-time rule; by default xdist orders modules by their number of tests, which
put the 106-second live-agent module, one test, at the very end). The weights are measured, not guessed::

    python -m pytest -n 2 --dist loadfile --junitxml=/tmp/suite.xml
    python -m tests.helpers.module_seconds /tmp/suite.xml     # rewrites tests/module_seconds.json

A module missing from the file (a new one) weighs :data:`UNKNOWN_S`; stale weights cost time, never a result.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

WEIGHTS_FILE = Path(__file__).resolve().parent.parent / "module_seconds.json"
"""Module name (``test_cli``) to its measured seconds (setup, call and teardown of all its tests)."""
UNKNOWN_S = 1.0
"""The weight of a module the file does not list (s)."""


def module_seconds(junit_xml: Path) -> dict[str, float]:
    """Each module's seconds summed over its test cases in a pytest JUnit XML report, longest first."""
    totals: Counter[str] = Counter()
    for case in ET.parse(junit_xml).iter("testcase"):
        module = (case.get("classname") or "").split(".")[-1]
        if module.startswith("test_"):
            totals[module] += float(case.get("time") or 0.0)
    return {module: round(seconds, 1) for module, seconds in totals.most_common()}


def load_weights(path: Path = WEIGHTS_FILE) -> dict[str, float]:
    """The committed weights; empty when the file is missing or unreadable (every module then weighs the same)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def main(argv: list[str]) -> int:
    """Rewrite :data:`WEIGHTS_FILE` from the JUnit XML report named in ``argv``."""
    if len(argv) != 1:
        print("usage: python -m tests.helpers.module_seconds JUNIT.xml", file=sys.stderr)
        return 2
    weights = module_seconds(Path(argv[0]))
    tmp = WEIGHTS_FILE.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(weights, indent=1) + "\n")
    tmp.replace(WEIGHTS_FILE)
    print(f"{len(weights)} modules, {sum(weights.values()):.0f} s in all: {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
