#!/usr/bin/env bash
# Can Slurm start a pair's guest (benchmarks/RESULTS.md, "Pairs on Slurm: a guest keeps its GPUs")? On an emulated
# one-node v100:8 cluster: eight 1-GPU jobs fill the node's GPUs; then a job submitted held with --gres=gpu:1 is
# updated to Gres=gpu:0 on that node (as the agent makes a guest) and released, beside a job submitted with
# --gres=gpu:0 from the start. The script prints each job's state and the GPUs Slurm allocated it before and after
# one GPU frees. Run as root, once per Slurm: bash benchmarks/guest_gres.sh [--slurm-root DIR] > OUT
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
dir=$(mktemp -d /tmp/wpg-XXXXXX)
chmod 755 "$dir"
trap '"$PY" -m wattplan cluster down --dir "$dir/c" > /dev/null 2>&1 || true; rm -rf "$dir"' EXIT
"$PY" -m wattplan cluster up --dir "$dir/c" --gpus v100:8 --time-scale 30 "$@" > /dev/null 2>&1
export SLURM_CONF=$dir/c/slurm/etc/slurm.conf
[ -d "$dir/c/slurm-bin" ] && export PATH=$dir/c/slurm-bin:$PATH
echo "# $(sinfo -V)"
for _ in 1 2 3 4 5 6 7 8; do sbatch -o /dev/null --gres=gpu:1 --wrap "sleep 600" > /dev/null; done
guest=$(sbatch --parsable -o /dev/null -H --gres=gpu:1 --wrap "sleep 600")
scontrol update "JobId=$guest" Gres=gpu:0 NodeList=v100-0 NumNodes=1
scontrol release "$guest"
fresh=$(sbatch --parsable -o /dev/null --gres=gpu:0 -w v100-0 --wrap "sleep 600")
show() {
  for j in "$guest" "$fresh"; do
    what=$([ "$j" = "$guest" ] && echo "updated to gpu:0" || echo "submitted gpu:0")
    state=$(squeue -h -j "$j" -o "%T %r %b")
    gpus=$(scontrol show job "$j" -d | grep -E "^ +Nodes=" | grep -oE "GRES=[^ ]*" || true)
    echo "$1: job $j ($what): $state, allocated ${gpus:-no node yet}"
  done
}
sleep 8
show "node's 8 GPUs busy"
scancel 1
sleep 8
show "one GPU freed"
