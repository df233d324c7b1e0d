#!/usr/bin/env bash
# The test suite while another CPU-heavy process runs beside it (issue 42: "green three times in a row while
# another CPU-heavy process runs beside it").
# Usage: benchmarks/suite_under_load.sh RUNS [HOGS] [COMMAND...]
#   RUNS    how many times to run the suite, one after the other (it stops at the first red run)
#   HOGS    busy processes beside it (default 1: each a Python loop that keeps one core at 100%)
#   COMMAND what to run (default: make test)
# Prints one line per run: its number, exit status and wall seconds; each run's output is in
# /tmp/suite-under-load-N.log. Bytecode caches are removed before each run, as on a fresh clone.
set -uo pipefail
runs=${1:?usage: suite_under_load.sh RUNS [HOGS] [COMMAND...]}
hogs=${2:-1}
shift $(($# >= 2 ? 2 : 1))
command=("$@")
[ ${#command[@]} -gt 0 ] || command=(make test)
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
  python3 -c 'while True: pass' &
  pids+=($!)
done
echo "hogs: $hogs busy process(es) (pids ${pids[*]}), command: ${command[*]}, machine: $(nproc) cores"
for n in $(seq "$runs"); do
  find planner formulations tests wattplan benchmarks -name __pycache__ -type d -prune -exec rm -rf {} + 2> /dev/null
  rm -rf .pytest_cache
  start=$(date +%s)
  "${command[@]}" > "/tmp/suite-under-load-$n.log" 2>&1
  status=$?
  echo "run $n: exit $status in $(($(date +%s) - start)) s ($(grep -E '(passed|failed)' "/tmp/suite-under-load-$n.log" | tr '\n' ' '))"
  [ "$status" -eq 0 ] || exit "$status"
done
