#!/usr/bin/env bash
# wattplan's Slurm task prolog (slurm.conf: TaskProlog=/path/task_prolog.sh): runs as the job's user before
# each task; every "export NAME=value" line it prints lands in the task's environment.
#
# For the guest of a co-located pair (its settings file $WATTPLAN_SETTINGS_DIR/JOBID.conf names a host_job;
# Slurm ran it with --gres=gpu:0 on the host's node) it prints
#     export CUDA_VISIBLE_DEVICES=<the host's GPU indices>
#     export CUDA_DEVICE_ORDER=PCI_BUS_ID
# (the indices from $WATTPLAN_NODE_DIR/NODE/gpus/JOBID, which the prolog wrote, else the host's own file),
# so the guest's processes use the host's GPUs, numbered as nvidia-smi numbers them. For every other job it
# prints nothing: Slurm sets CUDA_VISIBLE_DEVICES itself.
#
# It never fails the task: a missing or malformed file (common.sh included) is logged to stderr and nothing
# is printed. The helpers are in common.sh, sourced from the script's own folder (README.md). The settings
# file is read line by line (key=value), never evaluated; every value is checked before use.
# Environment: SLURM_JOB_ID, SLURMD_NODENAME (from Slurm); WATTPLAN_SETTINGS_DIR, WATTPLAN_NODE_DIR.
set -euo pipefail

# The helpers (log, is_id, read_setting, lock_node, ...) are common.sh, beside this script once symlinks are
# resolved; without it the task still runs (exit 0).
if ! self=$(readlink -f -- "${BASH_SOURCE[0]}") || [[ ! -f ${self%/*}/common.sh ]]; then
  echo "wattplan ${0##*/}: no common.sh beside ${BASH_SOURCE[0]}: install the whole folder" >&2; exit 0
fi
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${self%/*}/common.sh"

job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-}
is_id "$job" && is_id "$node" || exit 0
node_dir=$node_root/$node
conf=$settings_dir/$job.conf
[[ -f $conf ]] || exit 0
read_setting "$conf" "$job" || exit 0
[[ -n $s_host_job ]] || exit 0
[[ -z ${SLURM_JOB_GPUS:-} ]] || exit 0 # Slurm gave it GPUs of its own: not a guest, whatever the file says

gpus=$(read_indices "$node_dir/gpus/$job")
[[ -n $gpus ]] || gpus=$(read_indices "$node_dir/gpus/$s_host_job")
if [[ -z $gpus ]]; then
  log "guest of $s_host_job: the host's GPUs on $node are unknown; CUDA_VISIBLE_DEVICES left as Slurm set it"
  exit 0
fi
printf 'export CUDA_VISIBLE_DEVICES=%s\n' "$gpus"
printf 'export CUDA_DEVICE_ORDER=PCI_BUS_ID\n'
exit 0
