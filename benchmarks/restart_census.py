"""Why the agent restarted jobs, and which jobs it restarted more than once, from its log (issue 44, item 7).

Reads each agent log given (a replay's ``OUT/FAMILY/sim/POLICY/agent.log`` or a live run's ``agent.log``), whose
round lines are followed by ``  requeued: ID (WHY), ...`` (:func:`planner.agent.decide.decide`'s reasons:
``waits``, ``A -> B GPUs``, ``TYPE -> TYPE``, ``moves to HOSTS``, pair changes), and prints per log the restarts by
reason and every job restarted twice or more with its rounds and reasons: a flap is a job resized one way and back.

Usage: ``python benchmarks/restart_census.py LOG [LOG...]``.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROUND = re.compile(r"round (\d+) ")
REQUEUED = "  requeued: "
ENTRY = re.compile(r"(\S+) \((.*)\)$")


def restarts(log: Path) -> dict[str, list[tuple[int, str]]]:
    """``{job id: [(round, why), ...]}`` of every restart ``log`` names, in order."""
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    rnd = -1
    for line in log.read_text().splitlines():
        if m := ROUND.match(line):
            rnd = int(m.group(1))
        elif line.startswith(REQUEUED):
            for part in line[len(REQUEUED) :].split("), "):
                part = part.strip()
                if m := ENTRY.match(part if part.endswith(")") else part + ")"):
                    out[m.group(1)].append((rnd, m.group(2)))
    return dict(out)


def reason(why: str) -> str:
    """The kind of a restart: ``moves`` for any move, else the reason as the log gives it."""
    return "moves" if why.startswith("moves to") else why


def report(log: Path) -> list[str]:
    """The lines printed for one log."""
    by_job = restarts(log)
    kinds = Counter(reason(w) for runs in by_job.values() for _, w in runs)
    total = sum(kinds.values())
    lines = [f"{log}: {total} restarts of {len(by_job)} jobs; by reason: " + ", ".join(
        f"{k} {n}" for k, n in kinds.most_common()
    )]  # fmt: skip
    again = {j: runs for j, runs in by_job.items() if len(runs) > 1}
    lines.append(f"  restarted twice or more: {len(again)} jobs")
    lines += [f"    {j}: " + "; ".join(f"round {r} {w}" for r, w in runs) for j, runs in sorted(again.items())]
    return lines


def main(argv: list[str]) -> int:
    """Print the census of every log in ``argv``; 2 with a usage line when none is given."""
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for arg in argv:
        print("\n".join(report(Path(arg))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
