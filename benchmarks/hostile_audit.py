"""The hostile-input audit of issues 22 and 41: N generated malformed inputs per surface, classified.

Each case is drawn from ``(surface, seed)`` by :mod:`tests.hostile` (a valid seed input with one mutation: a JSON
field, a YAML scalar, key or structure, a CSV cell, row or column, a Slurm or Prometheus answer, the file's bytes
or kind, an option's or keyword's value, the output set against an input or an earlier output), run in-process and
classified (:mod:`tests.hostile.oracle`): ok, traceback, internal error, unlocated (exit 2 naming neither the
mutated file nor the option), bad exit (not 0 or 2; 1 only for an invalid plan), destroyed (an input or protected
file changed), injected, previous output lost, written on failure, unsafe agent action, raw control characters,
bad script, accepted (a must-refuse input read), YAML 1.1 typed, leftover child, or hang. Writes one CSV row per
case (atomically) and prints a table per surface.

Usage: python benchmarks/hostile_audit.py --per-surface 500 --out benchmarks/results/hostile_audit.csv
       python benchmarks/hostile_audit.py --new --per-surface 300   # the surfaces of issue 41 only
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile.inprocess import ALL_BY_NAME as BY_NAME  # noqa: E402
from tests.hostile.inprocess import ALL_SURFACES as SURFACES  # noqa: E402
from tests.hostile.inprocess import NEW_SURFACES  # noqa: E402
from tests.hostile.oracle import run_case  # noqa: E402
from tests.hostile.surfaces import draw_case  # noqa: E402
from wattplan.planner.contracts.jsonio import write_text_atomic  # noqa: E402

COLUMNS = ["surface", "seed", "mutation", "kind", "class", "exit_code", "first_line", "seconds"]
CLASS_COLUMNS = [
    ("ok", "ok"),
    ("traceback", "tracebacks"),
    ("internal-error", "internal errors"),
    ("unlocated", "unlocated"),
    ("bad-exit", "bad exit"),
    ("destroyed", "destroyed"),
    ("written-on-failure", "written on failure"),
    ("hang", "hangs"),
    ("injected", "injected"),
    ("previous-lost", "previous lost"),
    ("unsafe-action", "unsafe actions"),
    ("raw-control", "raw control"),
    ("bad-script", "bad scripts"),
    ("accepted", "accepted"),
    ("yaml11-typed", "YAML 1.1 typed"),
    ("leftover-child", "leftover children"),
]


def audit(names: list[str], per_surface: int, first_seed: int, console: Console) -> list[dict[str, object]]:
    """Run ``per_surface`` cases (seeds ``first_seed`` ..) of each named surface; one row per case."""
    rows: list[dict[str, object]] = []
    root = Path(tempfile.mkdtemp(prefix="wattplan-hostile-audit-"))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, TextColumn("ETA"), TimeRemainingColumn(), console=console) as bar:
            task = bar.add_task("hostile", total=len(names) * per_surface)
            for name in names:
                surface = BY_NAME[name]
                for seed in range(first_seed, first_seed + per_surface):
                    bar.update(task, description=f"{name} #{seed}")
                    case = draw_case(surface, seed, root)
                    started = time.perf_counter()
                    verdict = run_case(case)
                    if verdict.exit_code in (130, 143):  # the command caught our SIGINT/SIGTERM: stop the audit
                        raise KeyboardInterrupt
                    row = {
                        "surface": name,
                        "seed": seed,
                        "mutation": case.mutation,
                        "kind": case.kind,
                        "class": verdict.cls,
                        "exit_code": "" if verdict.exit_code is None else verdict.exit_code,
                        "first_line": verdict.first_line,
                        "seconds": f"{time.perf_counter() - started:.3f}",
                    }
                    rows.append(row)
                    if verdict.cls != "ok":
                        bar.console.print(f"{verdict.cls}: {name} seed {seed} {case.mutation!r}: {verdict.first_line}",
                                          markup=False, highlight=False, soft_wrap=True)  # fmt: skip
                    shutil.rmtree(case.folder, ignore_errors=True)
                    bar.advance(task)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def csv_text(rows: list[dict[str, object]]) -> str:
    """The rows as CSV text (columns :data:`COLUMNS`)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def summary(rows: list[dict[str, object]]) -> Table:
    """Per surface: cases, the count of each class, and the mutation kinds covered."""
    table = Table(title="hostile inputs per surface", title_justify="left")
    for header in ["surface", "cases", *(label for _, label in CLASS_COLUMNS), "mutation kinds"]:
        table.add_column(header, justify="left" if header in ("surface", "mutation kinds") else "right")
    by_surface: dict[str, list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        by_surface[str(row["surface"])].append(row)
    totals: Counter[str] = Counter()
    for name, items in by_surface.items():
        counts = Counter(str(r["class"]) for r in items)
        totals.update(counts)
        kinds = len({r["kind"] for r in items})
        table.add_row(name, str(len(items)), *(str(counts[c]) for c, _ in CLASS_COLUMNS), str(kinds))
    kinds_all = len({r["kind"] for r in rows})
    table.add_row("all", str(len(rows)), *(str(totals[c]) for c, _ in CLASS_COLUMNS), str(kinds_all), style="bold")
    return table


def main() -> None:
    """Parse the options, run the audit, write the CSV and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-surface", type=int, default=500, help="cases per surface (seeds 0 .. N-1)")
    parser.add_argument("--first-seed", type=int, default=0, help="first seed of every surface")
    parser.add_argument("--surface", action="append", choices=sorted(BY_NAME), help="only these (repeatable)")
    parser.add_argument("--new", action="store_true", help="only the surfaces of issue 41")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/hostile_audit.csv"))
    args = parser.parse_args()
    console = Console(stderr=True)
    names = args.surface or [s.name for s in (NEW_SURFACES if args.new else SURFACES)]
    started = time.perf_counter()
    rows = audit(names, args.per_surface, args.first_seed, console)
    write_text_atomic(args.out, csv_text(rows))
    wide = Console(width=220)
    wide.print(summary(rows))
    kinds = sorted({str(r["kind"]) for r in rows})
    wide.print(f"{len(kinds)} mutation kinds: {', '.join(kinds)}", soft_wrap=True)
    wide.print(f"{len(rows)} cases in {time.perf_counter() - started:.0f} s; rows written to {args.out}")


if __name__ == "__main__":
    main()
