#!/usr/bin/env bash
# wattplan's Slurm prolog (slurm.conf: Prolog=/path/prolog.sh with PrologFlags=Alloc): runs as root on every
# node of a job before it starts.
#
# 1. The job's GPU indices on this node: SLURM_JOB_GPUS, or, for the guest of a co-located pair (its
#    settings file names a host_job and Slurm gave it no GPU: --gres=gpu:0), the host's indices from
#    $WATTPLAN_NODE_DIR/NODE/gpus/HOST_JOB.
# 2. $WATTPLAN_NODE_DIR/NODE/gpus/JOBID = those indices (comma separated) and a line run=N (N: Slurm's restart
#    count of this run), the same indices in runs/JOBID.N (this run's own record, for the epilog: a requeued
#    job's new run can start here before the epilog of its previous run, seen live), and the job id appended to
#    $WATTPLAN_NODE_DIR/NODE/jobmap/INDEX of each: dcgm-exporter's --hpc-job-mapping-dir.
# 3. A managed job (one with $WATTPLAN_SETTINGS_DIR/JOBID.conf) gets its setting on each GPU:
#    nvidia-smi -i INDICES -pl WATTS (unit power_limit_w) or -lgc MHZ,MHZ (unit sm_clock_mhz), one call for
#    all of the job's GPUs on the node (one per GPU if that call fails). A guest sets nothing: the pair's GPUs
#    run at the host's setting.
#
# Exit status: Slurm drains a node whose prolog fails, so every problem that concerns one job only (no
# settings file, a malformed one, a host whose GPUs are unknown, an nvidia-smi call that refuses a value)
# is logged to stderr and the prolog exits 0: the job runs at the GPUs' current setting and only its
# mapping is written. It exits 1 only for a broken node: nvidia-smi missing from PATH while a setting must
# be applied, the node's folder cannot be written or locked, or common.sh is missing.
#
# The helpers (reading and checking a settings file, the lock, atomic writes) are in common.sh, which the
# script sources from its own folder: install the whole node_files folder (README.md).
# The settings file is read line by line (key=value) and never evaluated; every value is checked before use.
# Environment: SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_GPUS, SLURM_JOB_RESTART_COUNT (from Slurm);
# WATTPLAN_SETTINGS_DIR (default /var/lib/wattplan/settings), WATTPLAN_NODE_DIR (default /var/lib/wattplan/node),
# WATTPLAN_LOCK_TIMEOUT (s).
set -euo pipefail

# The helpers (log, is_id, read_setting, lock_node, ...) are common.sh, beside this script once symlinks are
# resolved; without it the node is broken (exit 1).
if ! self=$(readlink -f -- "${BASH_SOURCE[0]}") || [[ ! -f ${self%/*}/common.sh ]]; then
  echo "wattplan ${0##*/}: no common.sh beside ${BASH_SOURCE[0]}: install the whole folder" >&2; exit 1
fi
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${self%/*}/common.sh"

job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-}
if ! is_id "$job" || ! is_id "$node"; then
  log "SLURM_JOB_ID or SLURMD_NODENAME is missing or not a name; nothing to do"
  exit 0
fi
node_dir=$node_root/$node
gpus=${SLURM_JOB_GPUS:-}
if [[ -n $gpus ]] && ! is_indices "$gpus"; then
  log "SLURM_JOB_GPUS is not GPU indices: $(printf %q "$gpus"); nothing mapped"
  exit 0
fi

managed=0
conf=$settings_dir/$job.conf
if [[ -f $conf ]]; then
  if read_setting "$conf" "$job"; then
    managed=1
  else
    log "ignoring $conf: the job runs at the GPUs' current setting"
  fi
fi

run=${SLURM_JOB_RESTART_COUNT:-0}
[[ $run =~ ^[0-9]{1,6}$ ]] || run=0

lock_node || { log "cannot lock $node_dir/.lock"; exit 1; }
mkdir -p "$node_dir/gpus" "$node_dir/jobmap" "$node_dir/runs"

guest=0
if ((managed)) && [[ -n $s_host_job ]] && [[ -z $gpus ]]; then
  guest=1 # a guest holds no GPU of its own; one that Slurm gave GPUs runs on them, whatever the file says
  gpus=$(read_indices "$node_dir/gpus/$s_host_job")
  [[ -n $gpus ]] || log "host job $s_host_job holds no known GPUs on $node; the guest is not mapped"
fi
if [[ -z $gpus ]]; then
  exit 0
fi

write_atomic "$node_dir/runs/$job.$run" "$gpus"$'\n'
write_atomic "$node_dir/gpus/$job" "$gpus"$'\n'"run=$run"$'\n'
IFS=, read -r -a indices <<<"$gpus"
for i in "${indices[@]}"; do
  map=$node_dir/jobmap/$i
  if ! grep -qxF -- "$job" "$map" 2>/dev/null; then
    existing=$(cat "$map" 2>/dev/null || true)
    write_atomic "$map" "${existing:+$existing$'\n'}$job"$'\n'
  fi
done

if ((managed)) && ((!guest)); then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    log "nvidia-smi is not on PATH; cannot give job $job its setting"
    exit 1
  fi
  apply_setting "$gpus" || true
fi
exit 0
