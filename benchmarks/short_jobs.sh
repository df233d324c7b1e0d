#!/usr/bin/env bash
# Short jobs (issue 44, item 8; benchmarks/RESULTS.md, "Short jobs"): the held-out short_jobs workload (40 jobs of
# 2-20 minutes from Philly's virtual cluster 6c71a0) on an emulated v100:32 cluster with Slurm's power saving, the
# by-job default (--max-slowdown 10) with and without the agent's --power-down against Slurm alone with power
# saving. Replays at time scales 1, 5 and 20 (replay-[nopd-]tsS/), then live runs at time scales 20 and 5: per
# scale two with power-down and two of Slurm alone, one without power-down (live/short_jobs-[nopd-|alone-]tsS-X),
# each replayed after (its sim/; a live run already made is kept and only replayed again, so an interrupted run
# resumes). Prints start_delay.py's table of all.
# Usage: bash benchmarks/short_jobs.sh [OUT] [replay|live|table]...   (replays 2 minutes, live about 70 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/issue44/short_jobs}
shift || true
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(replay live table)
PY=${PYTHON:-.venv/bin/python}
TRACE=instances/live/short_jobs.trace
BYJOB=(--gpus v100:32 --power-save --max-slowdown 10)
for step in "${STEPS[@]}"; do
  case $step in
    replay)
      for s in 1 5 20; do
        rm -rf "$OUT/replay-ts$s/short_jobs/sim" "$OUT/replay-nopd-ts$s/short_jobs/sim"
        "$PY" benchmarks/live_compare.py $TRACE "${BYJOB[@]}" --power-down --time-scale $s --only simulate \
          --out "$OUT/replay-ts$s" > /dev/null
        "$PY" benchmarks/live_compare.py $TRACE "${BYJOB[@]}" --time-scale $s --only simulate \
          --out "$OUT/replay-nopd-ts$s" > /dev/null
      done ;;
    live)
      for run in ts20-a ts20-b ts5-a ts5-b; do
        s=${run%-?}; s=${s#ts}
        for pd in "" nopd-; do
          [ "$pd" = nopd- ] && [ "${run#*-}" = b ] && continue  # without power-down: one run per scale
          flags=("${BYJOB[@]}" --time-scale "$s"); [ -z "$pd" ] && flags+=(--power-down)
          dir=$OUT/live/short_jobs-$pd$run
          [ -f "$dir/managed.json" ] ||
            "$PY" benchmarks/live_compare.py $TRACE "${flags[@]}" --tag="-$pd$run" --out "$OUT/live" --only managed
          rm -rf "$dir/sim"  # the replay of the run, always made again
          "$PY" benchmarks/live_compare.py $TRACE "${flags[@]}" --tag="-$pd$run" --out "$OUT/live" --only simulate
        done
        [ -f "$OUT/live/short_jobs-alone-$run/unmanaged.json" ] ||
          "$PY" benchmarks/live_compare.py $TRACE "${BYJOB[@]}" --time-scale "$s" --tag="-alone-$run" \
            --out "$OUT/live" --only unmanaged
      done ;;
    table)
      "$PY" benchmarks/start_delay.py "$OUT"/replay-* "$OUT/live" ;;
    *) echo "unknown step $step (replay, live, table)" >&2; exit 2 ;;
  esac
done
