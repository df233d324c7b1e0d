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
# It never fails the task: a missing or malformed file is logged to stderr and nothing is printed. The
# settings file is read line by line (key=value), never evaluated; every value is checked before use.
# Environment: SLURM_JOB_ID, SLURMD_NODENAME (from Slurm); WATTPLAN_SETTINGS_DIR, WATTPLAN_NODE_DIR.
set -euo pipefail

# --- helpers (each function is the same in every node script that has it; tests check) ---
umask 022
settings_dir=${WATTPLAN_SETTINGS_DIR:-/var/lib/wattplan/settings}
node_root=${WATTPLAN_NODE_DIR:-/var/lib/wattplan/node}
script_name=${0##*/}

log() { printf 'wattplan %s%s: %s\n' "$script_name" "${SLURM_JOB_ID:+ (job $SLURM_JOB_ID)}" "$*" >&2; }

# A job id or node name: a token of [A-Za-z0-9_.-] that does not start with a dot (never "." or "..").
is_id() { [[ $1 =~ ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$ ]]; }
# GPU indices as Slurm and the gpus/ files write them: "0", "0,1,3".
is_indices() { [[ $1 =~ ^[0-9]{1,3}(,[0-9]{1,3})*$ ]]; }

# read_setting FILE JOB: read settings/JOB.conf without evaluating it into s_unit, s_setting, s_host_job.
# Every value is checked before it is kept; returns 1 (after logging why) on a malformed file.
read_setting() {
  local k v
  s_job_id='' s_setting='' s_unit='' s_host_job=''
  while IFS='=' read -r k v || [[ -n $k ]]; do
    case $k in
      job_id) is_id "$v" || { log "$1: bad job_id $(printf %q "$v")"; return 1; }; s_job_id=$v ;;
      round | gpus) [[ $v =~ ^[0-9]{1,9}$ ]] || { log "$1: bad $k $(printf %q "$v")"; return 1; } ;;
      gpu_type) [[ $v =~ ^[A-Za-z0-9_.-]{1,64}$ ]] || { log "$1: bad gpu_type $(printf %q "$v")"; return 1; } ;;
      setting) [[ $v =~ ^[1-9][0-9]{0,4}$ ]] || { log "$1: bad setting $(printf %q "$v")"; return 1; }; s_setting=$v ;;
      unit) [[ $v == power_limit_w || $v == sm_clock_mhz ]] || { log "$1: bad unit $(printf %q "$v")"; return 1; }; s_unit=$v ;;
      host_job) [[ -z $v ]] || is_id "$v" || { log "$1: bad host_job $(printf %q "$v")"; return 1; }; s_host_job=$v ;;
      *) log "$1: unknown key $(printf %q "$k")"; return 1 ;;
    esac
  done <"$1"
  if [[ $s_job_id != "$2" || -z $s_setting || -z $s_unit ]]; then
    log "$1: job_id is not $2, or setting or unit is missing"
    return 1
  fi
}

# read_indices FILE: the GPU indices a gpus/ file holds (empty, after logging, when it is missing or malformed).
read_indices() {
  local line=''
  [[ -f $1 ]] && { IFS= read -r line <"$1" || true; }
  if [[ -n $line ]] && ! is_indices "$line"; then
    log "$1: not GPU indices: $(printf %q "$line")"
    line=''
  fi
  printf '%s' "$line"
}

# --- end of helpers ---

job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-}
is_id "$job" && is_id "$node" || exit 0
node_dir=$node_root/$node
conf=$settings_dir/$job.conf
[[ -f $conf ]] || exit 0
read_setting "$conf" "$job" || exit 0
[[ -n $s_host_job ]] || exit 0

gpus=$(read_indices "$node_dir/gpus/$job")
[[ -n $gpus ]] || gpus=$(read_indices "$node_dir/gpus/$s_host_job")
if [[ -z $gpus ]]; then
  log "guest of $s_host_job: the host's GPUs on $node are unknown; CUDA_VISIBLE_DEVICES left as Slurm set it"
  exit 0
fi
printf 'export CUDA_VISIBLE_DEVICES=%s\n' "$gpus"
printf 'export CUDA_DEVICE_ORDER=PCI_BUS_ID\n'
exit 0
