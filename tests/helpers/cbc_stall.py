"""CBC's one-thread stall: how many CBC runs of a test's replays take 2 s or more, with and without ``-threads 1``.

CBC 2.10.3 given ``-threads 1`` starts a thread pool with one worker; now and then the solve waits exactly 10 s for
that worker to start (``formulations/backends/cbc.py``'s docstring). This runs the 18 small governed replays of
``tests/test_energy_floor.py::test_runtime_bounded_mode_keeps_its_bound`` (CBC, one thread, through the long-lived
solver worker) under pytest, timing every run of the CBC binary, and prints how many ran 2 s or more, their
seconds, and the test's wall time. ``--threads-one`` passes ``-threads 1`` as the backend did before (the stall);
without it, the backend's own arguments (no ``-threads`` at one thread).

Usage: ``python -m tests.helpers.cbc_stall [--threads-one]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest

import wattplan.formulations.backends.cbc as cbc

TEST = "tests/test_energy_floor.py::test_runtime_bounded_mode_keeps_its_bound"
SLOW_S = 2.0
"""A CBC run this long or longer counts as stalled (the test's models solve in milliseconds)."""


class Timing:
    """A pytest plugin that times every CBC run (and adds ``-threads 1`` when asked)."""

    def __init__(self, threads_one: bool) -> None:
        self.threads_one = threads_one
        self.seconds: list[float] = []
        self._run = cbc._run

    def pytest_configure(self, config: Any) -> None:
        """Wrap the backend's runner before any solver worker is forked (the workers inherit it)."""
        run = self._run

        def timed(argv: list[str], log: Path, timeout_s: float | None) -> str:
            if self.threads_one and "-threads" not in argv:
                argv = [*argv[:2], "-threads", "1", *argv[2:]]
            begin = time.perf_counter()
            try:
                return run(argv, log, timeout_s)
            finally:
                with open(RUNS, "a", encoding="ascii") as f:  # the worker is another process: through a file
                    f.write(f"{time.perf_counter() - begin:.3f}\n")

        cbc._run = timed


RUNS = Path("/tmp/wattplan-cbc-stall-runs.txt")


def main() -> None:
    """Run the test once under the plugin; print the stalls."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads-one", action="store_true", help="Pass -threads 1, as the backend did before.")
    args = p.parse_args()
    RUNS.unlink(missing_ok=True)
    begin = time.perf_counter()
    code = pytest.main(["-q", "-p", "no:cacheprovider", TEST], plugins=[Timing(args.threads_one)])
    wall = time.perf_counter() - begin
    runs = [float(line) for line in RUNS.read_text().split()]
    slow = sorted(s for s in runs if s >= SLOW_S)
    print(
        f"{'-threads 1' if args.threads_one else 'no -threads'}: {len(slow)} of {len(runs)} CBC runs took "
        f"{SLOW_S:g} s or more ({', '.join(f'{s:.2f}' for s in slow) or 'none'}); the test took {wall:.1f} s "
        f"(exit {code})"
    )


if __name__ == "__main__":
    main()
