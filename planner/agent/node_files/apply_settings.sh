#!/usr/bin/env bash
# wattplan's node agent: re-applies the settings of running jobs, so the agent can change a job's setting
# without restarting it (it rewrites $WATTPLAN_SETTINGS_DIR/JOBID.conf; this script brings the GPUs along).
#
#     apply_settings.sh [--node NAME] [--every SECONDS]
#
# One pass: for every job in $WATTPLAN_NODE_DIR/NODE/gpus/ (the jobs running here, as the prolog wrote them)
# that has a settings file, each of its GPUs whose current value differs from the setting gets it:
# power.limit against a power_limit_w setting (then -pl), clocks.sm against a sm_clock_mhz setting (then
# -lgc), one nvidia-smi call for all of a job's GPUs to change. A guest's file is skipped: the pair's GPUs run
# at the host's setting. The current values come from one
# `nvidia-smi --query-gpu=index,power.limit,clocks.sm` per pass, made only when a job has a setting: one call per
# GPU held the node's lock for much of every second on a busy emulated node (eight process starts), so a
# starting job's prolog waited for it (a median 2.9 s from start to launch on a burst, benchmarks/RESULTS.md).
# On a real GPU clocks.sm is the clock now, which an idle GPU may hold below its lock: such a pass locks the
# clock again, which changes nothing.
#
# NODE is --node, else $SLURMD_NODENAME, else `hostname -s`. With --every it repeats a pass every SECONDS
# until SIGTERM or SIGINT (then exits 0), as a systemd service (README.md); without it, one pass and exit.
# A pass holds the node's lock (as the prolog and epilog do), so it never races a job's start or end.
# Exit status: 0, or 1 when nvidia-smi is not on PATH, the node's folder cannot be locked or common.sh is
# missing, 2 on bad usage. The helpers are in common.sh, sourced from the script's own folder (README.md).
# The settings file is read line by line (key=value), never evaluated; every value is checked before use.
# Environment: WATTPLAN_SETTINGS_DIR, WATTPLAN_NODE_DIR, WATTPLAN_LOCK_TIMEOUT (as prolog.sh), SLURMD_NODENAME.
set -euo pipefail

# The helpers (log, is_id, read_setting, lock_node, ...) are common.sh, beside this script once symlinks are
# resolved; without it the node is broken (exit 1).
if ! self=$(readlink -f -- "${BASH_SOURCE[0]}") || [[ ! -f ${self%/*}/common.sh ]]; then
  echo "wattplan ${0##*/}: no common.sh beside ${BASH_SOURCE[0]}: install the whole folder" >&2; exit 1
fi
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${self%/*}/common.sh"

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

# read_current: every GPU's power.limit (whole W) and clocks.sm into cur_power and cur_clock, by index, from one
# nvidia-smi call (lines "INDEX, POWER, CLOCK"); returns 1, logged, when nvidia-smi fails.
declare -A cur_power=() cur_clock=()
read_current() {
  local out idx power clock
  cur_power=()
  cur_clock=()
  out=$(nvidia-smi --query-gpu=index,power.limit,clocks.sm --format=csv,noheader,nounits 2>&1) || {
    log "cannot read the GPUs' power.limit and clocks.sm: $out"
    return 1
  }
  while IFS=', ' read -r idx power clock; do
    [[ $idx =~ ^[0-9]{1,4}$ ]] || continue
    cur_power[$idx]=${power%%.*}
    cur_clock[$idx]=${clock%%.*}
  done <<<"$out"
}

# current_value INDEX: the GPU's value in the unit of the setting read last (read_current's); 1 when unknown.
current_value() {
  local value
  if [[ $s_unit == power_limit_w ]]; then
    value=${cur_power[$1]-}
  else
    value=${cur_clock[$1]-}
  fi
  [[ -n $value ]] || { log "GPU $1: nvidia-smi did not list it"; return 1; }
  printf '%s' "$value"
}

# one_pass: every running job's GPUs brought to its setting; returns 1 when the node cannot be locked.
one_pass() {
  local f job gpus i k current read=0
  local -a todo was
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
    if ((!read)); then
      read_current || break
      read=1
    fi
    IFS=, read -r -a indices <<<"$gpus"
    todo=() was=()
    for i in "${indices[@]}"; do
      current=$(current_value "$i") || continue
      [[ $current != "$s_setting" ]] || continue
      todo+=("$i")
      was+=("$current")
    done
    ((${#todo[@]})) || continue
    if apply_setting "$(IFS=,; printf '%s' "${todo[*]}")"; then
      for k in "${!todo[@]}"; do
        log "job $job GPU ${todo[k]}: $s_unit $(printf %q "${was[k]}") -> $s_setting"
      done
    fi
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
