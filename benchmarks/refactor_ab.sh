#!/usr/bin/env bash
# A/B of a refactor: the same commands on two commits, then the figures side by side (benchmarks/RESULTS.md,
# "Layering refactor"). Each commit is checked out as a detached git worktree and run with this checkout's venv
# (PYTHONPATH puts the worktree's packages first), one after the other, on the same machine.
# Usage: benchmarks/refactor_ab.sh OLD_REV NEW_REV OUT
#   a 2,000-job round of two families built differently, trace (real queues) and sampled (i.i.d. draws) (instance
#   sweep: the files must be identical), bench greedy, highs and cbc at 20 s on each, and a 40-job replay of slice
#   6214e9 with every policy (wattplan on HiGHS, 20 s a round, one thread).
set -euo pipefail
declare -A revs=([old]=${1:?usage: refactor_ab.sh OLD_REV NEW_REV OUT} [new]=${2:?usage: refactor_ab.sh OLD_REV NEW_REV OUT})
out=${3:?usage: refactor_ab.sh OLD_REV NEW_REV OUT}
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
mkdir -p "$out"
cleanup() { for s in old new; do git -C "$here" worktree remove --force "$out/tree-$s" 2> /dev/null || true; done; }
trap cleanup EXIT
for side in old new; do
  rev=${revs[$side]}
  tree="$out/tree-$side"
  [ -d "$tree" ] || git -C "$here" worktree add --detach "$tree" "$rev" > /dev/null
  run() { (cd "$tree" && PYTHONPATH="$tree" "$python" -m wattplan.planner "$@"); }
  for family in trace sampled; do
    run instance sweep --family "$family" --sizes 2000 --budgets 0.3 --out "$out/$side/set-$family" \
      > "$out/$side.sweep-$family.log"
    run bench "$out/$side/set-$family" --solvers greedy,highs,cbc --time-limit 20 --workers 1 --quiet \
      --out "$out/$side/bench-$family" > "$out/$side.bench-$family.log"
  done
  run simulate 6214e9.trace --cluster v100:32,p100:16 --start-s 4180536 --max-jobs 40 --policy all \
    --solver highs --time-limit 20 --threads 1 --out "$out/$side/sim" --no-plots -q > "$out/$side.sim.log"
done
for family in trace sampled; do
  cmp "$out/old/set-$family/manifest.csv" "$out/new/set-$family/manifest.csv" &&
    echo "$family instance set: identical manifests (SHA-256 of every file)"
done
"$python" - "$out" <<'EOF'
import sys

import pandas as pd

out = sys.argv[1]
families = ("trace", "sampled")
bench = {
    (s, f): pd.read_csv(f"{out}/{s}/bench-{f}/runs.csv").set_index("solver") for s in ("old", "new") for f in families
}
sim = {s: pd.read_csv(f"{out}/{s}/sim/comparison.csv").set_index("policy") for s in ("old", "new")}
print("| run | old objective / bound | new objective / bound | same |")
print("|---|---|---|---|")
for family, solver in [(f, s) for f in families for s in bench[("old", f)].index]:
    o, n = bench[("old", family)].loc[solver], bench[("new", family)].loc[solver]
    same = o.objective == n.objective and (o.bound == n.bound or pd.isna(o.bound) and pd.isna(n.bound))
    ov, ob, nv, nb = (float(x) for x in (o.objective, o.bound, n.objective, n.bound))
    print(f"| bench {family} {solver} | {ov!r} / {ob!r} | {nv!r} / {nb!r} | {same} |")
cols = ["energy_kwh", "avg_jct_s", "p95_jct_s", "rounds", "completed"]
for policy in sim["old"].index:
    o, n = sim["old"].loc[policy, cols], sim["new"].loc[policy, cols]
    old_text = f"{float(o.energy_kwh)!r} kWh, {float(o.avg_jct_s)!r} s"
    new_text = f"{float(n.energy_kwh)!r} kWh, {float(n.avg_jct_s)!r} s"
    print(f"| replay {policy} | {old_text} | {new_text} | {bool((o == n).all())} |")
EOF
