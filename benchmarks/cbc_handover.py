"""The ``cbc`` backend against CBC through PuLP's objects: the same CBC binary, two ways of handing it the model.

``cbc`` writes wattplan's own MPS file and reads CBC's solution file by index (``formulations/backends/cbc.py``);
``pulp:PULP_CBC_CMD`` builds PuLP's objects, lets PuLP write its MPS file and read the answer back. Each round is
planned through the front door (``planner.planning.plan``: the LP bound, the heuristics, the progress stage, the
energy stage) by each backend, several times, one thread, a time limit far above what CBC needs to end its search
(PuLP's backend takes no node limit), so that the clock stops no stage and only the handover differs. Two rounds
built differently: 60 queued jobs of Gavel's ``6c71a0`` at t = 1,900,000 s on ``v100:32,p100:16`` without a budget
(``wattplan instance from-trace``) and a 137-job round of a Philly replay (``tests/data``). Prints one Markdown
row per round and backend: the median and worst wall seconds of a plan, and the plan's status (``feasible``: CBC
reports no bound of its own), progress and energy (J).

Usage: ``python benchmarks/cbc_handover.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import load_instance, parse_instance
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.planning import plan

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT / "tests" / "data" / "replay_round_philly_6214e9_r1.json.gz"
GAVEL = ["6c71a0.trace", "--cluster", "v100:32,p100:16", "--at", "1900000", "--max-jobs", "60", "--no-budget"]
SOLVERS = ("cbc", "pulp:PULP_CBC_CMD")
TIME_LIMIT_S = 300.0
"""Far above either backend's proof on these rounds (a few seconds): the limit never stops a stage."""


def rounds(folder: Path) -> dict[str, Instance]:
    """The two rounds by label (the Gavel one written into ``folder`` by ``wattplan instance from-trace``)."""
    gavel = folder / "gavel.json"
    argv = [sys.executable, "-m", "wattplan", "instance", "from-trace", *GAVEL, "--out", str(gavel)]
    subprocess.run(argv, check=True, capture_output=True)
    philly = parse_instance(json.loads(gzip.decompress(PHILLY.read_bytes())), PHILLY.name)
    return {"Gavel 6c71a0, 60 jobs, no budget": load_instance(gavel), "Philly 6214e9 replay round, 137 jobs": philly}


def main() -> None:
    """Plan both rounds with both backends and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| round | solver | plan wall s, median | worst | status | progress | energy J |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for label, inst in rounds(Path(scratch)).items():
            for solver in SOLVERS:
                request = PlanRequest(solver=solver, time_limit_s=TIME_LIMIT_S, threads=1)
                seconds = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    result = plan(inst, request)
                    seconds.append(time.perf_counter() - t0)
                r = result.round
                print(
                    f"| {label} | {solver} | {statistics.median(seconds):.2f} | {max(seconds):.2f} | {r.status} | "
                    f"{r.progress:.6g} | {r.energy_j:.6g} |"
                )


if __name__ == "__main__":
    main()
