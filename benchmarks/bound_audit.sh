#!/usr/bin/env bash
# Honest-bounds audit (issue 21): rounds of three families built differently (trace queues, i.i.d. sampled
# jobs, long jobs with tiny per-round progress), budgets 0.3 and 0.6, every backend through `wattplan bench`
# (each run in its own process, its plan re-checked, wrong results flagged), then bound_audit_table.py.
# Usage: benchmarks/bound_audit.sh OUT [SIZES] [TIME_LIMIT] [SOLVERS]
set -euo pipefail
out=${1:?usage: bound_audit.sh OUT [SIZES] [TIME_LIMIT] [SOLVERS]}
sizes=${2:-30,60,500,2000}
limit=${3:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
venv_bin="$here/.venv/bin"
wattplan=${WATTPLAN:-$( [ -x "$venv_bin/wattplan" ] && echo "$venv_bin/wattplan" || echo wattplan )}
python=${PYTHON:-$( [ -x "$venv_bin/python" ] && echo "$venv_bin/python" || echo python3 )}
# default: every built-in backend of the registry (formulations/backends/registry.py)
solvers=${4:-$(PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$python" -c \
  'from wattplan.formulations.backends import BUILTIN; print(",".join(BUILTIN))')}
for family in trace sampled long; do
  "$wattplan" instance sweep --family "$family" --sizes "$sizes" --budgets 0.3,0.6 --out "$out/sets/$family"
  "$wattplan" bench "$out/sets/$family" --solvers "$solvers" --gap 1e-4 --time-limit "$limit" \
    --workers "${WORKERS:-1}" --quiet --out "$out/bench/$family"
done
"$python" "$here/benchmarks/bound_audit_table.py" "$out"/bench/*/runs.csv
