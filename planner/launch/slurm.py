"""Slurm target: one ``sbatch`` script per unit, node setup/reset steps, and ``submit.sh``.

Layout of the output folder::

    submit.sh                 submits everything below, in order; records submitted.tsv and jobs.tsv
    jobs/NAME.sbatch          one per unit: a job alone, or a pair (both jobs in one allocation)
    nodes/HOST.setup.sh       power limits, and clocks of shared GPUs, for one node (root)
    nodes/HOST.reset.sh       default power limits and unlocked clocks again (root)

Why a pair is one allocation: Slurm chooses GPU indices itself and never gives one ``gpu`` GRES to
two jobs; the ``shard`` GRES of Slurm 22.05 cannot span GPUs nor be steered to a given GPU. Running
both jobs inside one ``--gres=gpu:N`` allocation puts them on exactly the same GPU indices.

Every job script checks that Slurm gave it the plan's GPU indices (``SLURM_JOB_GPUS`` on its node)
and stops with exit code 3 if not (``WATTPLAN_GPU_CHECK=warn`` only warns, ``off`` skips the check),
because the node step set the power limits and clocks of the plan's indices.

``submit.sh`` records each submission in ``submitted.tsv`` (id, kind, name: a second run submits nothing
recorded there) and ``jobs.tsv`` (id, Slurm job name, user), the only way a later round's ``apply.sh``
finds this round's jobs: by id, never by name. Run as root, it refuses jobs that name no user (Slurm would
run them as root) unless ``WATTPLAN_ROOT_JOBS=allow``. A job's ``env`` never sets the launcher's own
variables (:func:`planner.launch.render.is_launcher_env`).
"""

from __future__ import annotations

from dataclasses import dataclass

from wattplan.planner.launch import nvidia
from wattplan.planner.launch.limits import CHECKPOINT_SIGNAL, NO_LIMITS, RoundLimits
from wattplan.planner.launch.quoting import (
    SHELLCHECK_SINGLE_QUOTES,
    checked_token,
    comment_text,
    safe_name,
    sh_quote,
    sh_words,
)
from wattplan.planner.launch.render import (
    NAME_LEN,
    GpuSetting,
    LaunchFile,
    LaunchModel,
    Member,
    Unit,
    member_comment,
    root_guard,
)

GPU_MISMATCH_EXIT = 3
SBATCH_AS_ROOT = "Slurm would run them as root (a job's user is submitted with --uid)."
"""What submitting a job without a user as root does (:func:`planner.launch.render.root_guard`)."""


@dataclass(frozen=True, slots=True)
class SlurmOptions:
    """Options of the Slurm target: the partition, the form of ``--gres``, the jobs' time limit and signal.

    ``partition``: ``--partition`` for every job (None: the default); ``gres_type``: write
    ``--gres=gpu:TYPE:N`` (True) or ``--gres=gpu:N`` when the cluster's GRES types differ from the plan's;
    ``limits``: ``--time`` and ``--signal`` of every job (:mod:`planner.launch.limits`; default none).
    """

    partition: str | None = None
    gres_type: bool = True
    limits: RoundLimits = NO_LIMITS


def slurm_name(job_ids: tuple[str, ...]) -> str:
    """The Slurm job name of an allocation of ``job_ids``, the same in every round.

    ``wattplan-`` (or ``wattplan-pair-``) + slugs of the ids + a hash: no round index, so it names the same
    allocation in every round (``changes.json``, ``jobs.tsv``); a pair's ids are sorted, so member order does
    not matter. Anyone can give a job this name: scripts act on the job ids they recorded, and check the name
    and user Slurm shows for such an id, never look a job up by name.
    """
    ids = sorted(job_ids)
    return safe_name("wattplan-" if len(ids) == 1 else "wattplan-pair-", *ids, max_len=NAME_LEN)


def slurm_job_name(unit: Unit) -> str:
    """The unit's Slurm job name (:func:`slurm_name` of its job ids)."""
    return slurm_name(unit.job_ids)


def limitdirective_lines(limits: RoundLimits) -> list[tuple[str, str]]:
    """``--time=MINUTES`` and ``--signal=B:USR1@LEAD`` (to the batch shell, LEAD s before the limit), if set."""
    out: list[tuple[str, str]] = []
    if limits.time_limit_min is not None:
        out.append(("time", str(limits.time_limit_min)))
    if limits.signal_lead_s is not None:
        out.append(("signal", f"B:{CHECKPOINT_SIGNAL}@{limits.signal_lead_s}"))
    return out


def node_step_settings(model: LaunchModel, host: str) -> list[GpuSetting]:
    """GPUs of ``host`` whose setting a node step applies: every power limit, and clocks of shared GPUs.

    An exclusive job with a clock setting gets it from ``--gpu-freq`` instead (Slurm resets it at the end).
    """
    return [s for s in model.settings(host) if s.unit == "power_limit_w" or s.shared]


def gres(gpu_type: str, count: int, opts: SlurmOptions) -> str:
    """The ``--gres`` value for ``count`` GPUs per node: ``gpu:TYPE:N``, or ``gpu:N`` without ``gres_type``."""
    return f"gpu:{gpu_type}:{count}" if opts.gres_type else f"gpu:{count}"


def directive_lines(pairs: list[tuple[str, str]]) -> list[str]:
    """``#SBATCH --name=value`` lines; every value must be a plain token (sbatch, not a shell, reads them)."""
    return [f"#SBATCH --{checked_token(k)}={checked_token(v)}" for k, v in pairs]


def _member_function(index: int, m: Member) -> list[str]:
    lines = member_comment(m)
    lines.append(f"job_{index}() {{")
    # The job's variables first, the launcher's after (the model leaves the launcher's names out of a job's env).
    lines += [f"  export {sh_quote(f'{k}={v}')}" for k, v in m.env]
    lines.append(f"  export WATTPLAN_JOB_ID={sh_quote(m.job_id)}")
    if m.partner is not None:
        lines.append(f"  export WATTPLAN_SHARES_WITH={sh_quote(m.partner)}")
    if m.workdir:
        lines.append(f"  cd -- {sh_quote(m.workdir)}")
    lines.append(f"  exec -- {sh_words(m.command)}")
    lines.append("}")
    return lines


def _gpu_check(unit: Unit) -> list[str]:
    lines = [
        "# Slurm picks GPU indices itself: check it picked the plan's (the node step set those GPUs).",
        "planned_gpus=''",
        'case "${SLURMD_NODENAME:-}" in',
    ]
    lines += [f"  {sh_quote(p.host)}) planned_gpus={sh_quote(p.indices_text)} ;;" for p in unit.parts]
    lines += [
        "esac",
        'given_gpus="${SLURM_JOB_GPUS:-}"',
        'if [ "${WATTPLAN_GPU_CHECK:-strict}" != off ] && [ "$given_gpus" != "$planned_gpus" ]; then',
        '  echo "wattplan: the plan puts this job on GPUs $planned_gpus of ${SLURMD_NODENAME:-?}; '
        'Slurm gave $given_gpus" >&2',
        '  if [ "${WATTPLAN_GPU_CHECK:-strict}" = strict ]; then',
        f"    exit {GPU_MISMATCH_EXIT}",
        "  fi",
        "fi",
    ]
    return lines


def _setting_comment(unit: Unit) -> str:
    what = f"power limit {unit.setting} W" if unit.setting_unit == "power_limit_w" else f"SM clock {unit.setting} MHz"
    if unit.setting_unit == "sm_clock_mhz" and not unit.shared:
        how = "--gpu-freq"
    else:
        how = " and ".join(f"nodes/{h}.setup.sh" for h in unit.hosts)
    return f"# Setting: {what}, applied by {how}."


def _limit_comment(limits: RoundLimits) -> list[str]:
    if limits.time_limit_min is None:
        return []
    lines = [f"# Time limit: {limits.time_limit_min} min (the round plus a grace); a later round may extend it."]
    if limits.signal_lead_s is not None:
        lines.append(
            f"# SIG{CHECKPOINT_SIGNAL} comes about {limits.signal_lead_s} s before the limit (or when a later round "
            "ends the job): write a checkpoint and exit."
        )
    return lines


def job_script(model: LaunchModel, unit: Unit, opts: SlurmOptions) -> str:
    """The ``sbatch`` script of one unit: directives, the GPU check, then the job (or both jobs of a pair)."""
    directives: list[tuple[str, str]] = [
        ("job-name", slurm_job_name(unit)),
        ("nodes", str(len(unit.parts))),
        ("ntasks-per-node", "1"),
        ("nodelist", ",".join(unit.hosts)),
        ("gres", gres(unit.gpu_type, unit.gpus_per_part, opts)),
    ]
    if unit.setting_unit == "sm_clock_mhz" and not unit.shared:
        directives.append(("gpu-freq", str(int(unit.setting))))
    if opts.partition:
        directives.append(("partition", opts.partition))
    directives += limitdirective_lines(opts.limits)
    directives.append(("output", f"logs/{unit.name}.%j.out"))
    where = "; ".join(f"{p.host} GPUs {p.indices_text}" for p in unit.parts)
    jobs = " and ".join(comment_text(j) for j in unit.job_ids)
    lines = [
        "#!/usr/bin/env bash",
        *directive_lines(directives),
        SHELLCHECK_SINGLE_QUOTES,
        f"# wattplan round {model.round_index}: {'pair ' if unit.shared else 'job '}{jobs}",
        f"# on {where} ({unit.gpus} x {unit.gpu_type}).",
        _setting_comment(unit),
        *_limit_comment(opts.limits),
        "set -euo pipefail",
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
        f"export WATTPLAN_ROUND={int(model.round_index)}",
        "",
        *_gpu_check(unit),
        "",
    ]
    for k, m in enumerate(unit.members):
        lines += [*_member_function(k, m), ""]
    if not unit.shared:
        lines.append("job_0")
    else:
        lines += [
            "# Both jobs of the pair run side by side on the same GPUs; each writes its own log.",
            'log_dir="${SLURM_SUBMIT_DIR:-$PWD}/logs"',
            'mkdir -p -- "$log_dir"',
        ]
        for k, m in enumerate(unit.members):
            lines += [f'job_{k} > "$log_dir/{m.name}.${{SLURM_JOB_ID:-local}}.out" 2>&1 &', f"pid_{k}=$!"]
        pids = " ".join(f'"$pid_{k}"' for k in range(len(unit.members)))
        lines += [
            f"# {CHECKPOINT_SIGNAL} (from --signal, or scancel --batch --signal) goes to both jobs: each checkpoints.",
            f"trap 'kill -{CHECKPOINT_SIGNAL} {pids} 2>/dev/null || true' {CHECKPOINT_SIGNAL}",
            "# wait_for PID: its exit status; a wait cut short by the trap is resumed.",
            "wait_for() {",
            "  local s=0",
            '  wait "$1" || s=$?',
            '  while [ "$s" -gt 128 ] && kill -0 "$1" 2>/dev/null; do',
            "    s=0",
            '    wait "$1" || s=$?',
            "  done",
            '  return "$s"',
            "}",
            "status=0",
        ]
        lines += [f'wait_for "$pid_{k}" || status=$?' for k in range(len(unit.members))]
        lines.append('exit "$status"')
    return "\n".join(lines) + "\n"


def _node_step(model: LaunchModel, host: str, opts: SlurmOptions, kind: str) -> str:
    settings = node_step_settings(model, host)
    gpu_type = model.host_gpu_type(host)
    per_node = model.gpus_per_node[gpu_type]
    directives: list[tuple[str, str]] = [
        ("job-name", step_job_name(model.round_index, kind, host)),
        ("nodes", "1"),
        ("ntasks", "1"),
        ("nodelist", host),
        ("gres", gres(gpu_type, per_node, opts)),
    ]
    if opts.partition:
        directives.append(("partition", opts.partition))
    directives.append(("output", f"logs/{kind}-{host}.%j.out"))
    if kind == "setup":
        purpose = "give the GPUs their settings before the round's jobs start"
    else:
        purpose = "take the settings back (default power limit, unlocked clocks) after the round's jobs"
    lines = [
        "#!/usr/bin/env bash",
        *directive_lines(directives),
        f"# wattplan round {model.round_index}, node {host}: {purpose}.",
        "# Run as root on the node: submit.sh submits it as a Slurm job holding every GPU of the node;",
        "# it works as well as a Slurm Prolog/Epilog or over ssh.",
        "set -euo pipefail",
        nvidia.REQUIRE_NVIDIA_SMI.rstrip("\n"),
        nvidia.SMI_FUNCTIONS.rstrip("\n"),
        *(f"# {nvidia.describe(s)}" for s in settings),
        *(nvidia.set_lines(settings) if kind == "setup" else nvidia.reset_lines(settings)),
    ]
    return "\n".join(lines) + "\n"


def submission_order(model: LaunchModel) -> list[Unit]:
    """Units node by node, each node's by first GPU index.

    On free nodes Slurm hands out the lowest free GPU indices in submission order, which then
    reproduces the plan's (buddy-aligned) indices.
    """
    hosts = model.hosts()
    return sorted(model.units, key=lambda u: (hosts.index(u.parts[0].host), u.parts[0].gpu_indices[0]))


SUBMIT_HELPERS = """\
# submit KIND NAME SLURM-NAME USER SBATCH-ARGS...: print the job id; submits only if this folder did not already
# (submitted.tsv: id, kind, name), and records id, Slurm job name and user in jobs.tsv, which a later round's
# apply.sh reads to act on this job by its id (never by its name: anyone may name a job alike).
submit() {
  local kind="$1" name="$2" slurm_name="$3" user="$4" id
  shift 4
  if [ -z "$user" ]; then
    user=$(id -un)
  fi
  id=$(awk -F '\\t' -v k="$kind" -v n="$name" '$2 == k && $3 == n { print $1; exit }' submitted.tsv)
  if [ -z "$id" ]; then
    id=$(sbatch --parsable "$@")
    id="${id%%;*}"
    printf '%s\\t%s\\t%s\\n' "$id" "$kind" "$name" >> submitted.tsv
    printf '%s\\t%s\\t%s\\n' "$id" "$slurm_name" "$user" >> jobs.tsv
  fi
  printf '%s\\n' "$id"
}
"""


def step_job_name(round_index: int, kind: str, host: str) -> str:
    """The Slurm job name of a node step (``setup`` or ``reset``) of ``host`` in round ``round_index``."""
    return f"wattplan-r{round_index}-{kind}-{host}"


def unit_user(unit: Unit) -> str | None:
    """The user the unit's allocation runs as (``--uid``), None for the submitting user; a pair needs one user."""
    users = {m.user for m in unit.members}
    if len(users) > 1:
        raise ValueError(
            f"pair {' and '.join(comment_text(j) for j in unit.job_ids)} has two users; "
            "one Slurm allocation runs as one user"
        )
    return users.pop()


def _submit_script(model: LaunchModel, step_hosts: list[str]) -> str:
    host_var = {h: f"setup_{k}" for k, h in enumerate(step_hosts)}
    lines = [
        "#!/usr/bin/env bash",
        SHELLCHECK_SINGLE_QUOTES,
        f"# wattplan round {model.round_index}: submit the node setup steps, the jobs (node by node, by GPU index),",
        "# then the node resets. A job whose instance entry names a user is submitted with --uid (needs root).",
        "# Paths are relative to this folder. WATTPLAN_NODE_STEPS=skip leaves out nodes/*.sh (run them as",
        "# root yourself, e.g. as a Slurm Prolog/Epilog). Records submissions in submitted.tsv (Slurm job id, kind,",
        "# name) and jobs.tsv (id, Slurm job name, user); a second run submits nothing recorded there again.",
        "set -euo pipefail",
        "shopt -s inherit_errexit",
        'cd -- "$(dirname -- "${BASH_SOURCE[0]}")"',
        *root_guard(list(model.units), SBATCH_AS_ROOT),
        "mkdir -p logs",
        "touch submitted.tsv jobs.tsv",
        'node_steps="${WATTPLAN_NODE_STEPS:-submit}"',
        'case "$node_steps" in',
        "  submit | skip) ;;",
        '  *) echo "WATTPLAN_NODE_STEPS must be submit or skip" >&2; exit 2 ;;',
        "esac",
        "",
        SUBMIT_HELPERS,
    ]
    lines += [f"{var}=''" for var in host_var.values()]
    if step_hosts:
        lines.append('if [ "$node_steps" = submit ]; then')
        for h, var in host_var.items():
            step = sh_words(["setup", h, step_job_name(model.round_index, "setup", h), "", f"nodes/{h}.setup.sh"])
            lines.append(f"  {var}=$(submit {step})")
        lines.append("fi")
    lines.append("")
    unit_var: dict[str, str] = {}
    order = submission_order(model)
    for k, unit in enumerate(order):
        var = f"unit_{k}"
        unit_var[unit.name] = var
        args: list[str] = []
        deps = [host_var[h] for h in unit.hosts if h in host_var]
        if deps:
            after = ":".join(f"${v}" for v in deps)
            args.append(f'${{{deps[0]}:+"--dependency=afterok:{after}"}}')
        user = unit_user(unit)
        if user:
            args.append(sh_quote(f"--uid={user}"))
        args.append(sh_quote(f"jobs/{unit.name}.sbatch"))
        jobs = " and ".join(comment_text(j) for j in unit.job_ids)
        lines.append(f"# {jobs}")
        head = sh_words(["job", unit.name, slurm_job_name(unit), user or ""])
        lines.append(f"{var}=$(submit {head} {' '.join(args)})")
    if step_hosts:
        lines += ["", 'if [ "$node_steps" = submit ]; then']
        for h in step_hosts:
            after = ":".join(f"${unit_var[u.name]}" for u in order if h in u.hosts)
            head = sh_words(["reset", h, step_job_name(model.round_index, "reset", h), ""])
            lines.append(
                f'  submit {head} "--dependency=afterany:{after}" {sh_quote(f"nodes/{h}.reset.sh")} > /dev/null'
            )
        lines.append("fi")
    lines.append(
        'echo "submitted: $(wc -l < submitted.tsv) Slurm jobs recorded in submitted.tsv (not submitted again)"'
    )
    return "\n".join(lines) + "\n"


def render_slurm(model: LaunchModel, opts: SlurmOptions | None = None) -> list[LaunchFile]:
    """Every file of the Slurm target (see the module docstring); scripts are executable."""
    opts = opts or SlurmOptions()
    if opts.partition is not None:
        checked_token(opts.partition)
    files = [LaunchFile(f"jobs/{u.name}.sbatch", job_script(model, u, opts), True) for u in model.units]
    step_hosts = [h for h in model.hosts() if node_step_settings(model, h)]
    for h in step_hosts:
        files.append(LaunchFile(f"nodes/{h}.setup.sh", _node_step(model, h, opts, "setup"), True))
        files.append(LaunchFile(f"nodes/{h}.reset.sh", _node_step(model, h, opts, "reset"), True))
    files.append(LaunchFile("submit.sh", _submit_script(model, step_hosts), True))
    return files
