# shellcheck shell=bash
# wattplan's node-script helpers, sourced (never run) by prolog.sh, epilog.sh, task_prolog.sh and
# apply_settings.sh from their own folder: install the whole node_files folder, common.sh beside the scripts
# (README.md). Root sources it from the prolog, epilog and node agent: keep it root-owned, mode 644.
#
# Sourcing it sets umask 022 and settings_dir, node_root and script_name (from $WATTPLAN_SETTINGS_DIR,
# $WATTPLAN_NODE_DIR and $0, the script that sources it), and defines the functions below; it runs nothing
# else and leaves the shell options to the script (each sets -euo pipefail first). lock_node and write_atomic
# use node_dir, which each script sets (to $node_root/NODE) before it calls them; read_setting sets s_job_id,
# s_setting, s_unit and s_host_job, which apply_setting and the scripts read.
#
# Settings files are read line by line (IFS='=' read), never evaluated or sourced; every value is checked
# before it is kept.

umask 022
# shellcheck disable=SC2034 # settings_dir and node_root are read by the scripts that source this file
settings_dir=${WATTPLAN_SETTINGS_DIR:-/var/lib/wattplan/settings}
# shellcheck disable=SC2034 # as settings_dir
node_root=${WATTPLAN_NODE_DIR:-/var/lib/wattplan/node}
script_name=${0##*/}

log() { printf 'wattplan %s%s: %s\n' "$script_name" "${SLURM_JOB_ID:+ (job $SLURM_JOB_ID)}" "$*" >&2; }

# A job id or node name: a token of [A-Za-z0-9_.-] that does not start with a dot (never "." or "..").
is_id() { [[ $1 =~ ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$ ]]; }
# GPU indices as Slurm and the gpus/ files write them: "0", "0,1,3".
is_indices() { [[ $1 =~ ^[0-9]{1,3}(,[0-9]{1,3})*$ ]]; }

# read_setting FILE JOB: read settings/JOB.conf without evaluating it into s_unit, s_setting, s_host_job.
# Every value is checked before it is kept; returns 1 (after logging why) on a malformed file.
# shellcheck disable=SC2034 # s_host_job is read by the scripts
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

# file_run FILE: the run (Slurm's restart count) a gpus/ file was written for: its "run=N" line, -1 without one.
file_run() {
  local line run=-1
  while IFS= read -r line; do
    [[ $line =~ ^run=([0-9]{1,6})$ ]] && run=${BASH_REMATCH[1]}
  done <"$1" 2>/dev/null || true
  printf '%s' "$run"
}

# write_atomic FILE TEXT: readers (dcgm-exporter, the task prolog) never see half a file.
# shellcheck disable=SC2154 # node_dir: set by the script before the call
write_atomic() {
  local tmp
  mkdir -p "$node_dir/tmp"
  tmp=$(mktemp "$node_dir/tmp/write.XXXXXX")
  printf '%s' "$2" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$1"
}

# lock_node: hold the node's lock on fd 9 until the script exits (prologs, epilogs and passes never interleave).
# shellcheck disable=SC2154 # node_dir: set by the script before the call
lock_node() {
  mkdir -p "$node_dir"
  exec 9>>"$node_dir/.lock"
  flock -w "${WATTPLAN_LOCK_TIMEOUT:-120}" 9
}

# smi_on INDICES ARG...: nvidia-smi -i INDICES ARG..., one call for all the GPUs (INDICES: "0" or "0,1,3";
# nvidia-smi takes such a list, and every call costs it a start and the driver's initialisation). When a call
# for several GPUs fails, the GPUs are called one by one, so that a refusal is logged by its GPU's index and
# leaves the others set. Returns 1 when a GPU refused.
smi_on() {
  local list=$1 out i status=0
  local -a each
  shift
  out=$(nvidia-smi -i "$list" "$@" 2>&1) && return 0
  if [[ $list != *,* ]]; then
    log "GPU $list: nvidia-smi $* failed: $out"
    return 1
  fi
  IFS=, read -r -a each <<<"$list"
  for i in "${each[@]}"; do
    out=$(nvidia-smi -i "$i" "$@" 2>&1) || { log "GPU $i: nvidia-smi $* failed: $out"; status=1; }
  done
  return "$status"
}

# apply_setting INDICES: give the GPUs (comma separated) the setting read by read_setting, in one call.
apply_setting() {
  if [[ $s_unit == power_limit_w ]]; then
    smi_on "$1" -pl "$s_setting"
  else
    smi_on "$1" -lgc "$s_setting,$s_setting"
  fi
}
