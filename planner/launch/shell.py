"""Shell target: one bash script per node, for hosts without a workload manager.

``HOST.sh start`` (the default) sets persistence mode and each planned GPU's power limit or
clock, starts one MPS control daemon per shared GPU set, then starts every job of the node in the
background with ``CUDA_VISIBLE_DEVICES`` (``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so indices mean what
``nvidia-smi`` shows), writing ``NAME.pid`` and ``NAME.log`` under ``$WATTPLAN_RUN_DIR`` (default
``run/HOST`` next to the script). ``HOST.sh stop`` stops those jobs, quits the MPS daemons and
puts the GPUs' default power limits and clocks back.

Privileges: the script runs as root (``nvidia-smi -pl``/``-lgc`` and MPS need it), so nothing of a job
(its ``env``, such as ``PATH`` or ``LD_PRELOAD``, its ``workdir``, its command) is used before the switch
to the job's user: ``as_user`` runs ``runuser -u USER -- bash -c JOB_STEP`` with the job's variables,
folder and command as arguments, and the fixed ``JOB_STEP`` exports them, enters the folder and execs the
command as that user. The launcher's own variables (``CUDA_VISIBLE_DEVICES``, ``WATTPLAN_*``, ``CUDA_MPS_*``)
are never taken from a job's ``env`` (:func:`planner.launch.render.is_launcher_env`). A job that names no
user would run as root: ``start`` as root refuses such jobs unless ``WATTPLAN_ROOT_JOBS=allow``.

MPS clients see the GPUs the daemon was started with, renumbered from 0, so the jobs of a pair get
the GPUs' UUIDs in ``CUDA_VISIBLE_DEVICES`` (NVIDIA's advice). ``WATTPLAN_MPS=0`` at start time
skips MPS: the pair then time-slices the GPUs with plain indices.
"""

from __future__ import annotations

from wattplan.planner.launch import nvidia
from wattplan.planner.launch.quoting import SHELLCHECK_SINGLE_QUOTES, sh_quote, sh_words
from wattplan.planner.launch.render import LaunchFile, LaunchModel, Member, Unit, member_comment, root_guard

HELPERS = """\
# The job's part, run as the job's user once root is gone: arguments WORKDIR N NAME=VALUE... COMMAND...;
# exports the job's N variables, enters WORKDIR (if any) and execs COMMAND. Fixed text: nothing of the job in it.
job_step='workdir="$1"; count="$2"; shift 2
while [ "$count" -gt 0 ]; do export -- "$1"; shift; count=$((count - 1)); done
if [ -n "$workdir" ]; then cd -- "$workdir" || exit 1; fi
exec -- "$@"'

# as_user USER WORKDIR N NAME=VALUE... COMMAND...: become USER first (unless USER is empty or already us),
# then, as USER, take the job's variables, folder and program (job_step). Until the switch nothing of the
# job is used: not its PATH or LD_PRELOAD (runuser and bash are found as root), not its folder.
as_user() {
  local user="$1"
  shift
  if [ -z "$user" ] || [ "$(id -un)" = "$user" ] || [ "$(id -u)" = "$user" ]; then
    exec -- "$BASH" -c "$job_step" wattplan-job "$@"
  fi
  exec runuser -u "$user" -- "$BASH" -c "$job_step" wattplan-job "$@"
}

# gpu_uuids INDICES: the UUIDs of GPUs "2,3", comma-separated (what MPS clients need).
gpu_uuids() {
  nvidia-smi -i "$1" --query-gpu=uuid --format=csv,noheader | paste -s -d, -
}

# start_mps DIR INDICES: one MPS control daemon for these GPUs, with its pipe and log folders in DIR.
start_mps() {
  mkdir -p -- "$1/pipe" "$1/log"
  CUDA_VISIBLE_DEVICES=$(gpu_uuids "$2") CUDA_MPS_PIPE_DIRECTORY="$1/pipe" CUDA_MPS_LOG_DIRECTORY="$1/log" \\
    nvidia-cuda-mps-control -d
}

# stop_mps DIR: quit the MPS control daemon started in DIR, if any.
stop_mps() {
  if [ -d "$1/pipe" ]; then
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$1/pipe" nvidia-cuda-mps-control || true
  fi
}

# launch NAME FUNCTION: run FUNCTION in the background, output to NAME.log, its PID to NAME.pid.
launch() {
  "$2" > "$run_dir/$1.log" 2>&1 < /dev/null &
  echo "$!" > "$run_dir/$1.pid"
  echo "started $1 (pid $!), log $run_dir/$1.log"
}

# stop_jobs: TERM every process whose PID file is in the run folder.
stop_jobs() {
  local pid_file pid
  for pid_file in "$run_dir"/*.pid; do
    [ -e "$pid_file" ] || continue
    pid=$(cat -- "$pid_file")
    kill -- "$pid" 2> /dev/null || true
    rm -f -- "$pid_file"
  done
}
"""


def _mps_dir(unit: Unit, sub: str = "") -> str:
    """The MPS folder of a pair's GPUs as a double-quoted shell word (the unit name is a safe name)."""
    return f'"$run_dir/mps-{unit.name}{"/" + sub if sub else ""}"'


def _job_function(index: int, m: Member, unit: Unit, rank: int) -> list[str]:
    indices = unit.parts[rank].indices_text
    lines = member_comment(m)
    lines += [f"job_{index}() {{", f"  export WATTPLAN_JOB_ID={sh_quote(m.job_id)}"]
    if m.partner is not None:
        lines.append(f"  export WATTPLAN_SHARES_WITH={sh_quote(m.partner)}")
    if unit.shared:
        lines += [
            '  if [ "${WATTPLAN_MPS:-1}" = 1 ]; then',
            f"    export CUDA_MPS_PIPE_DIRECTORY={_mps_dir(unit, 'pipe')}",
            f"    export CUDA_MPS_LOG_DIRECTORY={_mps_dir(unit, 'log')}",
            f"    CUDA_VISIBLE_DEVICES=$(gpu_uuids {sh_quote(indices)})",
            "    export CUDA_VISIBLE_DEVICES",
            "  else",
            f"    export CUDA_VISIBLE_DEVICES={sh_quote(indices)}",
            "  fi",
        ]
    else:
        lines.append(f"  export CUDA_VISIBLE_DEVICES={sh_quote(indices)}")
    lines.append(f"  export WATTPLAN_GPUS={sh_quote(indices)}")
    if len(unit.parts) > 1:
        lines.append(f"  export WATTPLAN_NODE_RANK={rank} WATTPLAN_NUM_NODES={len(unit.parts)}")
    job_env = [f"{k}={v}" for k, v in m.env]
    args = [m.user or "", m.workdir or "", str(len(job_env)), *job_env, *m.command]
    lines += [f"  as_user {sh_words(args)}", "}"]
    return lines


def node_script(model: LaunchModel, host: str) -> str:
    """The script of one node: settings, MPS, jobs on ``start``; the reverse on ``stop``."""
    settings = model.settings(host)
    units = model.units_on(host)
    lines = [
        "#!/usr/bin/env bash",
        SHELLCHECK_SINGLE_QUOTES,
        f"# wattplan round {model.round_index}, node {host}: GPU settings, MPS for shared GPUs, then the jobs.",
        f"# Usage: {host}.sh [start|stop]. Run as root (nvidia-smi -pl/-lgc and MPS need it).",
        "# Logs and PID files go to $WATTPLAN_RUN_DIR (default: run/HOST next to this script).",
        "set -euo pipefail",
        "shopt -s inherit_errexit",
        'here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)',
        f'run_dir="${{WATTPLAN_RUN_DIR:-$here/run/{host}}}"',
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
        f"export WATTPLAN_ROUND={int(model.round_index)}",
        "",
        HELPERS.rstrip("\n"),
        "",
        nvidia.SMI_FUNCTIONS.rstrip("\n"),
        "",
        "set_gpus() {",
    ]
    lines += [f"  # {nvidia.describe(s)}" for s in settings]
    lines += [f"  {line}" for line in nvidia.set_lines(settings)]
    lines += ["  :", "}", "", "reset_gpus() {"]
    lines += [f"  {line}" for line in nvidia.reset_lines(settings)]
    lines += ["  :", "}", ""]
    starts: list[str] = []
    stops: list[str] = []
    k = 0
    for unit in units:
        rank = unit.hosts.index(host)
        part = unit.parts[rank]
        if unit.shared:
            start = f"start_mps {_mps_dir(unit)} {sh_quote(part.indices_text)}"
            starts.append(f'  if [ "${{WATTPLAN_MPS:-1}}" = 1 ]; then {start}; fi')
            stops.append(f"  stop_mps {_mps_dir(unit)}")
        for m in unit.members:
            lines += [*_job_function(k, m, unit, rank), ""]
            starts.append(f"  launch {sh_quote(m.name)} job_{k}")
            k += 1
    lines += [
        "start() {",
        *root_guard(units, "it runs a job's command only as the job's user.", "  "),
        '  mkdir -p -- "$run_dir"',
        "  set_gpus",
        *starts,
        "}",
        "",
        "stop() {",
        "  stop_jobs",
        *stops,
        "  reset_gpus",
        "}",
        "",
        'case "${1:-start}" in',
        "  start) start ;;",
        "  stop) stop ;;",
        '  *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;',
        "esac",
    ]
    return "\n".join(lines) + "\n"


def render_shell(model: LaunchModel) -> list[LaunchFile]:
    """One executable ``HOST.sh`` per node the plan uses."""
    return [LaunchFile(f"{host}.sh", node_script(model, host), True) for host in model.hosts()]
