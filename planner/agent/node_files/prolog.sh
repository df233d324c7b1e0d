#!/usr/bin/env bash
# wattplan's Slurm prolog (slurm.conf: Prolog=/path/prolog.sh with PrologFlags=Alloc): runs as root on every
# node of a job before it starts.
#
# 1. The job's GPU indices on this node: SLURM_JOB_GPUS, or, for the guest of a co-located pair (its
#    settings file names a host_job; Slurm ran it with --gres=gpu:0), the host's indices from
#    $WATTPLAN_NODE_DIR/NODE/gpus/HOST_JOB.
# 2. $WATTPLAN_NODE_DIR/NODE/gpus/JOBID = those indices (comma separated), and the job id appended to
#    $WATTPLAN_NODE_DIR/NODE/jobmap/INDEX of each: dcgm-exporter's --hpc-job-mapping-dir.
# 3. A managed job (one with $WATTPLAN_SETTINGS_DIR/JOBID.conf) gets its setting on each GPU:
#    nvidia-smi -i INDEX -pl WATTS (unit power_limit_w) or -lgc MHZ,MHZ (unit sm_clock_mhz). A guest sets
#    nothing: the pair's GPUs run at the host's setting.
#
# Exit status: Slurm drains a node whose prolog fails, so every problem that concerns one job only (no
# settings file, a malformed one, a host whose GPUs are unknown, an nvidia-smi call that refuses a value)
# is logged to stderr and the prolog exits 0: the job runs at the GPUs' current setting and only its
# mapping is written. It exits 1 only for a broken node: nvidia-smi missing from PATH while a setting must
# be applied, or the node's folder cannot be written or locked.
#
# The settings file is read line by line (key=value) and never evaluated; every value is checked before use.
# Environment: SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_GPUS (from Slurm); WATTPLAN_SETTINGS_DIR (default
# /var/lib/wattplan/settings), WATTPLAN_NODE_DIR (default /var/lib/wattplan/node), WATTPLAN_LOCK_TIMEOUT (s).
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

# write_atomic FILE TEXT: readers (dcgm-exporter, the task prolog) never see half a file.
write_atomic() {
  local tmp
  mkdir -p "$node_dir/tmp"
  tmp=$(mktemp "$node_dir/tmp/write.XXXXXX")
  printf '%s' "$2" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$1"
}

# lock_node: hold the node's lock on fd 9 until the script exits (prologs, epilogs and passes never interleave).
lock_node() {
  mkdir -p "$node_dir"
  exec 9>>"$node_dir/.lock"
  flock -w "${WATTPLAN_LOCK_TIMEOUT:-120}" 9
}

# apply_setting INDEX: give one GPU the setting read by read_setting.
apply_setting() {
  local out
  if [[ $s_unit == power_limit_w ]]; then
    out=$(nvidia-smi -i "$1" -pl "$s_setting" 2>&1) || { log "GPU $1: nvidia-smi -pl $s_setting failed: $out"; return 1; }
  else
    out=$(nvidia-smi -i "$1" -lgc "$s_setting,$s_setting" 2>&1) ||
      { log "GPU $1: nvidia-smi -lgc $s_setting,$s_setting failed: $out"; return 1; }
  fi
}

# --- end of helpers ---

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

lock_node || { log "cannot lock $node_dir/.lock"; exit 1; }
mkdir -p "$node_dir/gpus" "$node_dir/jobmap"

if ((managed)) && [[ -n $s_host_job ]]; then
  gpus=$(read_indices "$node_dir/gpus/$s_host_job")
  [[ -n $gpus ]] || log "host job $s_host_job holds no known GPUs on $node; the guest is not mapped"
fi
if [[ -z $gpus ]]; then
  exit 0
fi

write_atomic "$node_dir/gpus/$job" "$gpus"$'\n'
IFS=, read -r -a indices <<<"$gpus"
for i in "${indices[@]}"; do
  map=$node_dir/jobmap/$i
  if ! grep -qxF -- "$job" "$map" 2>/dev/null; then
    existing=$(cat "$map" 2>/dev/null || true)
    write_atomic "$map" "${existing:+$existing$'\n'}$job"$'\n'
  fi
done

if ((managed)) && [[ -z $s_host_job ]]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    log "nvidia-smi is not on PATH; cannot give job $job its setting"
    exit 1
  fi
  for i in "${indices[@]}"; do
    apply_setting "$i" || true
  done
fi
exit 0
