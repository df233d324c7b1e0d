#!/usr/bin/env bash
# The scaling table of issue 13: three instance families, 100-2,000 jobs at 10 s and 5,000-10,000 jobs at 60 s,
# every run through `wattplan bench` (its own process, the wall time including reading the instance).
#   bash benchmarks/scale_families.sh [OUT_DIR]      (about 30 minutes on 2 cores)
# then: .venv/bin/python benchmarks/scale_table.py OUT_DIR > table.md
set -euo pipefail
out=${1:-bench-scale}
w=${WATTPLAN:-.venv/bin/wattplan}
small=100,500,1000,2000
large=5000,10000
mkdir -p "$out"
for fam in trace sampled v100; do
  args=(--family trace --gpu-mix v100:2,p100:1)
  [ "$fam" = sampled ] && args=(--family sampled --gpu-mix v100:2,p100:1)
  [ "$fam" = v100 ] && args=(--family trace --gpu-mix v100:1)
  "$w" instance sweep --out "$out/sets/$fam-small" "${args[@]}" --sizes "$small" --budgets 0.3 --seeds 0
  "$w" instance sweep --out "$out/sets/$fam-large" "${args[@]}" --sizes "$large" --budgets 0.3 --seeds 0
  "$w" bench "$out/sets/$fam-small" --solvers "${SMALL_SOLVERS:-highs,cbc,cpsat}" --time-limit 10 --threads 2 \
    --seeds 1 --workers 1 --out "$out/$fam-small" -q
  "$w" bench "$out/sets/$fam-large" --solvers "${LARGE_SOLVERS:-highs,cbc}" --time-limit 60 --threads 2 \
    --seeds 1 --workers 1 --out "$out/$fam-large" -q
done
