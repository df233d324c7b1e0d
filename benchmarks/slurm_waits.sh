#!/usr/bin/env bash
# The replay's Slurm waits against live (benchmarks/RESULTS.md, "The replay's Slurm waits"): every live run of the
# steered mode without restarts with the tail bound (pinned_tail_live a, b; fidelity_live c, and d for philly_shape)
# and of the by-job default with pairs (pairs_live a, b; power_up_live c), replayed with the simulated Slurm's
# measured waits (replays/) and without them
# (replays-none/, --no-slurm-waits), each compared with its live run, and the replays' Slurm with power saving with
# the live runs of it; then each setting's repeated runs pooled (--repeats).
# Usage: bash benchmarks/slurm_waits.sh [OUT]   (about 3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/issue44/slurm_waits}
R=benchmarks/results/issue44
PY=${PYTHON:-.venv/bin/python}
STEERED=(--gpus v100:32 --power-save --power-down --pinned 10 --tail-bound 10)
BYJOB=(--gpus v100:32 --power-save --power-down --max-slowdown 10 --pairs)
for waits in replays replays-none; do
  extra=(); [ "$waits" = replays-none ] && extra=(--no-slurm-waits)
  for fam in philly_shape two_waves gavel_mix; do
    for t in a b c d; do
      [ -d $R/pinned_tail_live/$fam-pinned10tail-$t ] || [ -d $R/fidelity_live/$fam-pinned10tail-$t ] || continue
      "$PY" benchmarks/live_compare.py instances/live/$fam.trace "${STEERED[@]}" --tag=-pinned10tail-$t \
        --out "$OUT/$waits" --only simulate "${extra[@]}" > /dev/null
    done
  done
  for run in philly_shape-pairs-a philly_shape-pairs-b two_waves-pairs-a gavel_mix-pairs-a gavel_mix-pairs-b \
    philly_shape-pairs-c two_waves-pairs-c gavel_mix-pairs-c; do
    fam=${run%-pairs-?}
    "$PY" benchmarks/live_compare.py instances/live/$fam.trace "${BYJOB[@]}" --tag=${run#$fam} \
      --out "$OUT/$waits" --only simulate "${extra[@]}" > /dev/null
  done
done
RUNS=($R/pinned_tail_live/*-pinned10tail-[ab] $R/fidelity_live/*-pinned10tail-[cd] $R/pairs_live/*-pairs-[ab]
  $R/power_up_live/*-pairs-c)
UNMANAGED=(--unmanaged philly_shape-pairs=$R/../issue43/lead/live-a/philly_shape/unmanaged.json
  --unmanaged gavel_mix-pairs=$R/../issue43/lead/live-a/gavel_mix/unmanaged.json
  --unmanaged two_waves-pairs=$R/../issue43/lead/live-b/two_waves/unmanaged.json)
for waits in replays-none replays; do
  echo "## $waits"
  "$PY" benchmarks/replay_vs_live.py --replays "$OUT/$waits" "${RUNS[@]}" "${UNMANAGED[@]}" --repeats
done | tee "$OUT/replay_vs_live.txt"
