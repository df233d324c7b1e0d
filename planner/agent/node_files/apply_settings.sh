#!/usr/bin/env bash
# wattplan's node agent: re-applies the settings of running jobs, so the agent can change a job's setting
# without restarting it (it rewrites $WATTPLAN_SETTINGS_DIR/JOBID.conf; this script brings the GPUs along).
#
#     apply_settings.sh [--node NAME] [--every SECONDS]
#
# One pass: for every job in $WATTPLAN_NODE_DIR/NODE/gpus/ (the jobs running here, as the prolog wrote them)
# that has a settings file, each of its GPUs whose current value differs from the setting gets it:
# power.limit (nvidia-smi --query-gpu) against a power_limit_w setting (then -pl), clocks.sm against a
# sm_clock_mhz setting (then -lgc). A guest's file is skipped: the pair's GPUs run at the host's setting.
# On a real GPU clocks.sm is the clock now, which an idle GPU may hold below its lock: such a pass locks the
# clock again, which changes nothing.
#
# NODE is --node, else $SLURMD_NODENAME, else `hostname -s`. With --every it repeats a pass every SECONDS
# until SIGTERM or SIGINT (then exits 0), as a systemd service (README.md); without it, one pass and exit.
# A pass holds the node's lock (as the prolog and epilog do), so it never races a job's start or end.
# Exit status: 0, or 1 when nvidia-smi is not on PATH or the node's folder cannot be locked, 2 on bad usage.
# The settings file is read line by line (key=value), never evaluated; every value is checked before use.
# Environment: WATTPLAN_SETTINGS_DIR, WATTPLAN_NODE_DIR, WATTPLAN_LOCK_TIMEOUT (as prolog.sh), SLURMD_NODENAME.
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

usage() {
  echo "usage: ${0##*/} [--node NAME] [--every SECONDS]" >&2
  exit 2
}

node=''
every=''
while (($#)); do
  case $1 in
    --node) (($# >= 2)) || usage; node=$2; shift 2 ;;
    --every) (($# >= 2)) || usage; every=$2; shift 2 ;;
    -h | --help) usage ;;
    *) usage ;;
  esac
done
[[ -n $node ]] || node=${SLURMD_NODENAME:-$(hostname -s)}
is_id "$node" || { log "not a node name: $(printf %q "$node")"; exit 2; }
[[ -z $every || $every =~ ^[1-9][0-9]{0,5}$ ]] || { log "--every needs whole seconds >= 1"; exit 2; }
node_dir=$node_root/$node
command -v nvidia-smi >/dev/null 2>&1 || { log "nvidia-smi is not on PATH"; exit 1; }

# current_value INDEX: the GPU's value in the unit of the setting read last (power.limit in whole W, clocks.sm).
current_value() {
  local field=power.limit value
  [[ $s_unit == power_limit_w ]] || field=clocks.sm
  value=$(nvidia-smi -i "$1" --query-gpu="$field" --format=csv,noheader,nounits 2>&1) || {
    log "GPU $1: cannot read $field: $value"
    return 1
  }
  printf '%s' "${value%%.*}"
}

# one_pass: every running job's GPUs brought to its setting; returns 1 when the node cannot be locked.
one_pass() {
  local f job gpus i current
  [[ -d $node_dir/gpus ]] || return 0
  lock_node || { log "cannot lock $node_dir/.lock"; return 1; }
  for f in "$node_dir"/gpus/*; do
    job=${f##*/}
    if [[ ! -f $f ]] || ! is_id "$job" || [[ ! -f $settings_dir/$job.conf ]]; then
      continue
    fi
    read_setting "$settings_dir/$job.conf" "$job" || continue
    [[ -z $s_host_job ]] || continue
    gpus=$(read_indices "$f")
    [[ -n $gpus ]] || continue
    IFS=, read -r -a indices <<<"$gpus"
    for i in "${indices[@]}"; do
      current=$(current_value "$i") || continue
      [[ $current != "$s_setting" ]] || continue
      if apply_setting "$i"; then
        log "job $job GPU $i: $s_unit $(printf %q "$current") -> $s_setting"
      fi
    done
  done
  exec 9>&-
}

if [[ -z $every ]]; then
  one_pass
  exit
fi
sleeper=''
trap '[[ -z $sleeper ]] || kill "$sleeper" 2>/dev/null; exit 0' TERM INT
while true; do
  one_pass || true
  sleep "$every" &
  sleeper=$!
  wait "$sleeper" || true
  sleeper=''
done
