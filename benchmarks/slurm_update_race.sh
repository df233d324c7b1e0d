#!/usr/bin/env bash
# Slurm 22.05 and an update of a job that has just started (benchmarks/RESULTS.md, "The replay against live").
# On a fresh emulated cluster (root, Slurm, munge and Prometheus installed): a held job is updated and released
# (accepted), then, once RUNNING, updated with NodeList= (Slurm takes it as a shrink and refuses the rest), then
# updated and held again: each of the last two waits 5 s inside slurmctld and is refused, "the DB index is being
# set". Prints each call's exit status and seconds, and slurmctld's lines about the job.
# Usage: bash benchmarks/slurm_update_race.sh [CLUSTER_DIR]   (default /tmp/wp-race; taken down at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/wp-race}
py=${PYTHON:-.venv/bin/python}
"$py" -m wattplan cluster down --dir "$dir" >/dev/null 2>&1 || true
"$py" -m wattplan cluster up --dir "$dir" --gpus v100:8 --time-scale 30 >/dev/null
trap '"$py" -m wattplan cluster down --dir "$dir" >/dev/null 2>&1 || true' EXIT
SLURM_CONF=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["slurm_conf"])' "$dir/cluster.json")
export SLURM_CONF
timed() {  # timed WHAT CMD...: the command's exit status and seconds
  local t0 rc=0
  t0=$(date +%s.%N)
  "${@:2}" || rc=$?
  echo "$1: exit $rc, $(echo "$(date +%s.%N) - $t0" | bc) s"
}
job=$(sbatch --parsable --hold --gres=gpu:1 --ntasks=1 --output=/dev/null --wrap "sleep 120")
timed "update of the held job" scontrol update "JobId=$job" Gres=gpu:1 NodeList=v100-0 NumNodes=1
scontrol release "$job"
for _ in $(seq 1 40); do
  [[ $(squeue -h -j "$job" -o %T) == RUNNING ]] && break
  sleep 0.5
done
echo "state: $(squeue -h -j "$job" -o %T)"
timed "update of the running job" scontrol update "JobId=$job" Gres=gpu:1 NodeList=v100-0 NumNodes=1
timed "next update" scontrol update "JobId=$job" Gres=gpu:1 NodeList=v100-0 NumNodes=1
timed "hold" scontrol hold "$job"
grep -h "JobId=$job\b" "$dir/slurm/log/slurmctld.log" | tail -6
scancel "$job"
