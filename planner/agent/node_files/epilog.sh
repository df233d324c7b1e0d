#!/usr/bin/env bash
# wattplan's Slurm epilog (slurm.conf: Epilog=/path/epilog.sh): runs as root on every node of a job after it
# ends, undoing what prolog.sh did.
#
# 1. Which run of the job ends: Slurm has already counted a requeue when the epilog of the requeued run runs
#    (SLURM_JOB_RESTART_COUNT = N + 1 for run N), so the run ending is N - 1 when the prolog's record
#    $WATTPLAN_NODE_DIR/NODE/runs/JOBID.(N-1) is here, else N. A requeued job's new run may already run here
#    (its prolog came first: seen live); then gpus/JOBID says run=N and everything of that run stays.
# 2. The GPU indices of the run ending: its runs/ record as the prolog wrote it (for a guest: its host's GPUs),
#    else gpus/JOBID, else SLURM_JOB_GPUS. The job id leaves $WATTPLAN_NODE_DIR/NODE/jobmap/INDEX of each that
#    the new run does not use; a file left empty is deleted.
# 3. Each GPU no job remains on is reset: power limit back to nvidia-smi's power.default_limit (-pl) and
#    its SM clock lock released (-rgc), one nvidia-smi call of each kind for all of them. A GPU another job
#    still runs on (the host of a guest that ends first, or the guest of a host that ends first) keeps its
#    setting: the last of the two resets it.
# 4. The run's record is removed, and $WATTPLAN_NODE_DIR/NODE/gpus/JOBID unless a newer run wrote it.
#
# Exit status: Slurm drains a node whose epilog fails, so the epilog exits 0 on everything that concerns one
# job or one GPU (logged to stderr), and 1 only when a GPU must be reset and nvidia-smi is not on PATH, the
# node's folder cannot be locked, or common.sh is missing.
#
# The helpers are in common.sh, sourced from the script's own folder: install the whole folder (README.md).
# Environment: as prolog.sh (SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_GPUS, WATTPLAN_SETTINGS_DIR,
# WATTPLAN_NODE_DIR, WATTPLAN_LOCK_TIMEOUT).
set -euo pipefail

# The helpers (log, is_id, read_setting, lock_node, ...) are common.sh, beside this script once symlinks are
# resolved; without it the node is broken (exit 1).
if ! self=$(readlink -f -- "${BASH_SOURCE[0]}") || [[ ! -f ${self%/*}/common.sh ]]; then
  echo "wattplan ${0##*/}: no common.sh beside ${BASH_SOURCE[0]}: install the whole folder" >&2; exit 1
fi
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${self%/*}/common.sh"

# reset_gpus INDICES: each GPU's default power limit back (only where it differs) and its clock lock released,
# in one nvidia-smi call of each kind for all of them (a query, -pl per default limit, -rgc); a GPU whose limits
# cannot be read keeps its power limit. Returns 1 when a GPU was not reset.
reset_gpus() {
  local out idx default_w current_w w status=0
  local -a each
  local -A to_default=()
  local query=--query-gpu=index,power.default_limit,power.limit
  if ! out=$(nvidia-smi -i "$1" "$query" --format=csv,noheader,nounits 2>&1); then
    if [[ $1 != *,* ]]; then
      log "GPU $1: cannot read its power limits: $out"
      return 1
    fi
    IFS=, read -r -a each <<<"$1"
    for idx in "${each[@]}"; do
      reset_gpus "$idx" || status=1
    done
    return "$status"
  fi
  local read_ok=,
  while IFS=', ' read -r idx default_w current_w; do
    if [[ ! $idx =~ ^[0-9]{1,3}$ || ,$1, != *,$idx,* || ! $default_w =~ ^[0-9]{1,5}(\.[0-9]+)?$ ||
      ! $current_w =~ ^[0-9]{1,5}(\.[0-9]+)?$ ]]; then
      log "GPUs $1: unexpected power limits $(printf %q "$idx, $default_w, $current_w")"
      status=1
      continue
    fi
    read_ok+=$idx,
    [[ ${default_w%.*} == "${current_w%.*}" ]] || to_default[${default_w%.*}]+=,$idx
  done <<<"$out"
  for w in "${!to_default[@]}"; do
    smi_on "${to_default[$w]#,}" -pl "$w" || status=1
  done
  IFS=, read -r -a each <<<"$1"
  for idx in "${each[@]}"; do
    [[ $read_ok == *,$idx,* ]] || { log "GPU $idx: nvidia-smi did not list its power limits"; status=1; }
  done
  smi_on "$1" -rgc || status=1
  return "$status"
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

count=${SLURM_JOB_RESTART_COUNT:-0}
[[ $count =~ ^[0-9]{1,6}$ ]] || count=0
ending=$count
if ((count > 0)) && [[ -f $node_dir/runs/$job.$((count - 1)) ]]; then
  ending=$((count - 1))
fi
record=$node_dir/runs/$job.$ending
newer='' # the indices of a newer run of this job already started here (its files stay)
if ((ending < count)) && [[ -f $node_dir/gpus/$job ]] && (($(file_run "$node_dir/gpus/$job") == count)); then
  newer=$(read_indices "$node_dir/gpus/$job")
fi
if [[ -f $record ]]; then
  gpus=$(read_indices "$record")
elif [[ -f $node_dir/gpus/$job ]]; then
  gpus=$(read_indices "$node_dir/gpus/$job")
else
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
    [[ ,$newer, == *,$i,* ]] && continue # the new run holds this GPU: its mapping and setting stay
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
    reset_gpus "$(IFS=,; printf '%s' "${free[*]}")" || true
  else
    log "nvidia-smi is not on PATH; cannot reset GPUs ${free[*]}"
    status=1
  fi
fi
rm -f "$record"
[[ -n $newer ]] || rm -f "$node_dir/gpus/$job"
exit "$status"
