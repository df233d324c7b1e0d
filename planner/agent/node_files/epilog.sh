#!/usr/bin/env bash
# wattplan's Slurm epilog (slurm.conf: Epilog=/path/epilog.sh): runs as root on every node of a job after it
# ends, undoing what prolog.sh did.
#
# 1. The job's GPU indices on this node: $WATTPLAN_NODE_DIR/NODE/gpus/JOBID as the prolog wrote it (for a
#    guest: its host's GPUs), else SLURM_JOB_GPUS.
# 2. The job id leaves $WATTPLAN_NODE_DIR/NODE/jobmap/INDEX of each; a file left empty is deleted.
# 3. Each GPU no job remains on is reset: power limit back to nvidia-smi's power.default_limit (-pl) and
#    its SM clock lock released (-rgc). A GPU another job still runs on (the host of a guest that ends first,
#    or the guest of a host that ends first) keeps its setting: the last of the two resets it.
# 4. $WATTPLAN_NODE_DIR/NODE/gpus/JOBID is removed.
#
# Exit status: Slurm drains a node whose epilog fails, so the epilog exits 0 on everything that concerns one
# job or one GPU (logged to stderr), and 1 only when a GPU must be reset and nvidia-smi is not on PATH, or
# the node's folder cannot be locked.
#
# Environment: as prolog.sh (SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_GPUS, WATTPLAN_SETTINGS_DIR,
# WATTPLAN_NODE_DIR, WATTPLAN_LOCK_TIMEOUT).
set -euo pipefail

# --- helpers (each function is the same in every node script that has it; tests check) ---
umask 022
node_root=${WATTPLAN_NODE_DIR:-/var/lib/wattplan/node}
script_name=${0##*/}

log() { printf 'wattplan %s%s: %s\n' "$script_name" "${SLURM_JOB_ID:+ (job $SLURM_JOB_ID)}" "$*" >&2; }

# A job id or node name: a token of [A-Za-z0-9_.-] that does not start with a dot (never "." or "..").
is_id() { [[ $1 =~ ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$ ]]; }
# GPU indices as Slurm and the gpus/ files write them: "0", "0,1,3".
is_indices() { [[ $1 =~ ^[0-9]{1,3}(,[0-9]{1,3})*$ ]]; }

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

# --- end of helpers ---

# reset_gpu INDEX: the default power limit back (only when it differs) and the clock lock released.
reset_gpu() {
  local limits default_w current_w out
  if ! limits=$(nvidia-smi -i "$1" --query-gpu=power.default_limit,power.limit --format=csv,noheader,nounits 2>&1); then
    log "GPU $1: cannot read its power limits: $limits"
    return 1
  fi
  IFS=', ' read -r default_w current_w <<<"$limits"
  if [[ ! $default_w =~ ^[0-9]{1,5}(\.[0-9]+)?$ || ! $current_w =~ ^[0-9]{1,5}(\.[0-9]+)?$ ]]; then
    log "GPU $1: unexpected power limits $(printf %q "$limits")"
    return 1
  fi
  if [[ ${default_w%.*} != "${current_w%.*}" ]]; then
    out=$(nvidia-smi -i "$1" -pl "${default_w%.*}" 2>&1) || log "GPU $1: nvidia-smi -pl ${default_w%.*} failed: $out"
  fi
  out=$(nvidia-smi -i "$1" -rgc 2>&1) || log "GPU $1: nvidia-smi -rgc failed: $out"
}

job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-}
if ! is_id "$job" || ! is_id "$node"; then
  log "SLURM_JOB_ID or SLURMD_NODENAME is missing or not a name; nothing to do"
  exit 0
fi
node_dir=$node_root/$node
[[ -d $node_dir ]] || exit 0
lock_node || { log "cannot lock $node_dir/.lock"; exit 1; }

gpus=$(read_indices "$node_dir/gpus/$job")
if [[ -z $gpus && ! -f $node_dir/gpus/$job ]]; then
  gpus=${SLURM_JOB_GPUS:-}
  if [[ -n $gpus ]] && ! is_indices "$gpus"; then
    log "SLURM_JOB_GPUS is not GPU indices: $(printf %q "$gpus")"
    gpus=''
  fi
fi

free=()
if [[ -n $gpus ]]; then
  IFS=, read -r -a indices <<<"$gpus"
  for i in "${indices[@]}"; do
    map=$node_dir/jobmap/$i
    remaining=$(grep -vxF -- "$job" "$map" 2>/dev/null || true)
    if [[ -n $remaining ]]; then
      [[ $remaining$'\n' == "$(cat "$map")"$'\n' ]] || write_atomic "$map" "$remaining"$'\n'
    else
      rm -f "$map"
      free+=("$i")
    fi
  done
fi

status=0
if ((${#free[@]})); then
  if command -v nvidia-smi >/dev/null 2>&1; then
    for i in "${free[@]}"; do
      reset_gpu "$i" || true
    done
  else
    log "nvidia-smi is not on PATH; cannot reset GPUs ${free[*]}"
    status=1
  fi
fi
rm -f "$node_dir/gpus/$job"
exit "$status"
