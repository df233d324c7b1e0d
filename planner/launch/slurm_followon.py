"""Slurm target of a follow-on round (``wattplan launch --from OLD_PLAN``): only what changes, and ``apply.sh``.

Layout of the output folder::

    apply.sh                  applies the change, in a safe order; may be run again (idempotent)
    jobs/NAME.sbatch          one per allocation to submit (new, or the new form of an ended one)
    nodes/HOST.setup.sh       frees ended GPUs' settings, sets new and re-set GPUs (root, holds no GPU)
    nodes/HOST.reset.sh       default power limits and unlocked clocks after this round's jobs (root)
    changes.md, changes.json  the actions (``wattplan diff``) and what apply.sh does for each

``apply.sh [PREVIOUS_FOLDER]`` acts only on jobs by their Slurm job id: the previous round's launch folder
(``launch --from-dir``, or the argument) records in ``jobs.tsv`` the id, Slurm job name and user of every job
of that round (submitted there, or kept there from an earlier round), and a job counts as the recorded one
only while Slurm shows that id with that name and user. A job is never looked up by name: names are
predictable and anyone may queue a job with one. It runs, in this order:

0. the ended allocations' ids; one the previous folder did not record stops everything (exit 1, nothing done);
1. kept allocations: ``scontrol update JobId=ID TimeLimit=+M`` (one round more; once, recorded in ``applied.tsv``),
   and their ids go into this folder's ``jobs.tsv`` for the next round (a kept job without a record is left
   alone, with a message);
2. the previous round's pending node resets of hosts this round resets again: ``scancel`` (by recorded id);
3. ended allocations: ``scancel --batch --signal=USR1`` (checkpoint), up to ``WATTPLAN_CHECKPOINT_WAIT_S`` (default
   the signal lead) for them to exit, then ``scancel``, and up to ``WATTPLAN_END_WAIT_S`` (120 s) until they left
   the queue (else exit 1: nothing new is started on GPUs still held);
4. node setup steps; 5. new allocations (after their nodes' setup); 6. node resets (after all of this round's jobs
   on the node, kept ones included).

Each submission is recorded in ``submitted.tsv`` and not repeated on a second run (a launch rendered again into
the folder keeps these records, :mod:`planner.launch.output`). Run as root, ``apply.sh`` refuses new jobs that
name no user unless ``WATTPLAN_ROOT_JOBS=allow``. A follow-on setup step requests no GPU, since kept jobs hold
some of the node's: it needs GPUs visible outside a job's allocation (no ``ConstrainDevices``), else run the
steps as root yourself (``WATTPLAN_NODE_STEPS=skip``).
"""

from __future__ import annotations

from typing import Any

from wattplan.planner.launch import nvidia
from wattplan.planner.launch.diff import diff_to_doc
from wattplan.planner.launch.followon import Changeover, OldUnit
from wattplan.planner.launch.quoting import SHELLCHECK_SINGLE_QUOTES, comment_text, sh_quote, sh_words
from wattplan.planner.launch.render import GpuSetting, LaunchFile, LaunchModel, root_guard
from wattplan.planner.launch.slurm import (
    SBATCH_AS_ROOT,
    SUBMIT_HELPERS,
    SlurmOptions,
    directive_lines,
    gres,
    job_script,
    node_step_settings,
    slurm_job_name,
    slurm_name,
    step_job_name,
    submission_order,
    unit_user,
)

CHANGES_SCHEMA = "wattplan.changes/1"
END_WAIT_S = 120


def old_slurm_name(unit: OldUnit) -> str:
    """The Slurm job name the previous round gave ``unit`` (:func:`planner.launch.slurm.slurm_name`)."""
    return slurm_name(unit.job_ids)


def _key(s: GpuSetting) -> tuple[str, int]:
    return (s.host, s.index)


def setup_settings(c: Changeover, model: LaunchModel, host: str) -> tuple[list[GpuSetting], list[GpuSetting]]:
    """``(free, give)``: the GPUs of ``host`` to reset and to set in this round's node setup step.

    ``free``: GPUs of ended allocations whose node-step setting no one takes over; ``give``: every
    node-step GPU of a submitted allocation and every GPU of a re-set one.
    """
    submitted = {u.name for u in c.submit}
    re_set = {u.name for u in c.reset}
    new_steps = node_step_settings(model, host)
    give = [s for s in model.settings(host) if s.unit_name in re_set]
    give += [s for s in new_steps if s.unit_name in submitted]
    taken = {_key(s) for s in new_steps} | {_key(s) for s in give}
    free = [
        s
        for u in c.end
        for s in u.settings
        if s.host == host and (s.unit == "power_limit_w" or s.shared) and _key(s) not in taken
    ]
    return sorted(free, key=_key), sorted(give, key=_key)


def reset_settings(c: Changeover, model: LaunchModel, host: str) -> list[GpuSetting]:
    """GPUs of ``host`` the round's reset takes back: the old round's node-step GPUs and this round's."""
    re_set = {u.name for u in c.reset}
    found: dict[tuple[str, int], GpuSetting] = {}
    for u in c.old_units:
        for s in u.settings:
            if s.host == host and (s.unit == "power_limit_w" or s.shared):
                found[_key(s)] = s
    for s in model.settings(host):
        if s in node_step_settings(model, host) or s.unit_name in re_set:
            found[_key(s)] = s
    return sorted(found.values(), key=_key)


def _hosts(c: Changeover, model: LaunchModel) -> list[str]:
    hosts = dict.fromkeys(model.hosts())
    for u in c.old_units:
        hosts.update(dict.fromkeys(u.hosts))
    return list(hosts)


def _step_script(model: LaunchModel, host: str, opts: SlurmOptions, kind: str, gpu_type: str, body: list[str]) -> str:
    directives: list[tuple[str, str]] = [
        ("job-name", step_job_name(model.round_index, kind, host)),
        ("nodes", "1"),
        ("ntasks", "1"),
        ("nodelist", host),
    ]
    if kind == "reset":  # runs when the node's GPUs are all free: after this round, whatever else queued
        directives.append(("gres", gres(gpu_type, model.gpus_per_node[gpu_type], opts)))
    if opts.partition:
        directives.append(("partition", opts.partition))
    directives.append(("output", f"logs/{kind}-{host}.%j.out"))
    purpose = (
        "free the ended jobs' GPUs, set the new and re-set ones (holds no GPU: kept jobs hold some)"
        if kind == "setup"
        else "take every setting back (default power limit, unlocked clocks) after this round's jobs"
    )
    lines = [
        "#!/usr/bin/env bash",
        *directive_lines(directives),
        f"# wattplan round {model.round_index}, node {host}: {purpose}.",
        "# Run as root on the node: apply.sh submits it as a Slurm job; it works over ssh as well.",
        "set -euo pipefail",
        nvidia.REQUIRE_NVIDIA_SMI.rstrip("\n"),
        nvidia.SMI_FUNCTIONS.rstrip("\n"),
        *body,
    ]
    return "\n".join(lines) + "\n"


def _setup_body(free: list[GpuSetting], give: list[GpuSetting]) -> list[str]:
    lines = [f"# {nvidia.describe(s)} ended: default again" for s in free] + nvidia.reset_lines(free)
    return lines + [f"# {nvidia.describe(s)}" for s in give] + nvidia.set_lines(give)


def _reset_body(settings: list[GpuSetting]) -> list[str]:
    return [f"# {nvidia.describe(s)}" for s in settings] + nvidia.reset_lines(settings)


HELPERS = (
    """\
# recorded NAME: "ID USER" of the previous round's Slurm job NAME, as its folder recorded it (jobs.tsv), if any.
recorded() {
  if [ -n "$prev" ] && [ -f "$prev/jobs.tsv" ]; then
    awk -F '\\t' -v n="$1" '$2 == n { row = $1 " " $3 } END { if (row != "") print row }' "$prev/jobs.tsv"
  fi
}

# queued_as ID NAME USER: whether Slurm still holds job ID, named NAME, of USER (an id alone is not trusted).
queued_as() {
  [ "$(squeue -h -o '%j %u' --states="$queued" -j "$1" 2>/dev/null || true)" = "$2 $3" ]
}

# still_queued ID...: those of the ids Slurm still holds (pending, running or ending).
still_queued() {
  local id
  for id in "$@"; do
    if [ -n "$(squeue -h -o %i --states="$queued" -j "$id" 2>/dev/null || true)" ]; then
      printf '%s\\n' "$id"
    fi
  done
}

# wait_gone SECONDS ID...: wait until none of the ids is queued, at most SECONDS.
wait_gone() {
  local limit="$1" waited=0
  shift
  while [ "$waited" -lt "$limit" ] && [ -n "$(still_queued "$@")" ]; do
    sleep 1
    waited=$((waited + 1))
  done
}
"""
    + SUBMIT_HELPERS
    + """
# done_before STEP: whether a run of this script did STEP; mark STEP: record that it did.
done_before() { grep -qxF -- "$1" applied.tsv; }
mark() { printf '%s\\n' "$1" >> applied.tsv; }

# adopt ID NAME USER: record a kept job in jobs.tsv (once), so that the next round finds it by its id too.
adopt() {
  if ! awk -F '\\t' -v i="$1" '$1 == i { found = 1 } END { exit !found }' jobs.tsv; then
    printf '%s\\t%s\\t%s\\n' "$1" "$2" "$3" >> jobs.tsv
  fi
}

# previous NAME: the id of the previous round's job NAME if Slurm still holds it as recorded; empty if it left.
# Exit status 3 when the previous folder recorded no such job: then nothing acts on it (never a search by name).
previous() {
  local row id user
  row=$(recorded "$1")
  if [ -z "$row" ]; then
    return 3
  fi
  id="${row%% *}"
  user="${row#* }"
  if queued_as "$id" "$1" "$user"; then
    printf '%s %s\\n' "$id" "$user"
  fi
}
"""
)


_NEEDS_PREV = (
    "wattplan: apply.sh needs the launch folder of round {round} (its jobs.tsv holds the Slurm job ids of the "
    "jobs this round keeps or ends): apply.sh PREVIOUS_FOLDER, or render with launch --from-dir"
)


def _found(var: str, name: str, what: str, missing: str) -> list[str]:
    """Shell lines: ``var`` = the id of the previous round's job ``name`` if still queued as recorded.

    A job the previous folder did not record is reported (``what``) and handled as ``missing`` says.
    """
    return [
        "status=0",
        f"row=$(previous {sh_quote(name)}) || status=$?",
        'if [ "$status" -eq 3 ]; then',
        f"  echo {sh_quote(f'wattplan: {what} {name}: no Slurm job id recorded in ')}"
        f'"$prev/jobs.tsv"{sh_quote(missing)} >&2',
        "fi",
        f'{var}="${{row%% *}}"',
    ]


def _apply_script(
    c: Changeover,
    model: LaunchModel,
    opts: SlurmOptions,
    setup_hosts: list[str],
    reset_hosts: list[str],
    from_dir: str | None = None,
) -> str:
    lead = opts.limits.signal_lead_s or 0
    needs_prev = bool(c.keep or c.end or reset_hosts)
    lines = [
        "#!/usr/bin/env bash",
        SHELLCHECK_SINGLE_QUOTES,
        f"# wattplan round {model.round_index} after round {c.diff.from_round}: change only what changes",
        "# (changes.md). Order: extend kept jobs, end the ended ones (USR1 first, to checkpoint), node setup",
        "# steps, new jobs, node resets. Safe to run again: submissions are recorded in submitted.tsv, other",
        "# steps in applied.tsv. WATTPLAN_NODE_STEPS=skip leaves out nodes/*.sh (run them as root yourself).",
        "# Usage: apply.sh [PREVIOUS_FOLDER]: the previous round's launch folder, whose jobs.tsv holds the Slurm",
        "# job ids of that round's jobs; apply.sh acts on those ids only (and only while Slurm holds them under",
        "# the recorded name and user), never on a job found by its name.",
        "set -euo pipefail",
        "shopt -s inherit_errexit",
        f"default_prev={sh_quote(from_dir or '')}  # launch --from-dir",
        'prev="${1:-$default_prev}"',
        'if [ -n "$prev" ] && ! prev=$(cd -- "$prev" 2>/dev/null && pwd -P); then',
        '  echo "wattplan: PREVIOUS_FOLDER ${1:-} is not a folder" >&2',
        "  exit 2",
        "fi",
        'cd -- "$(dirname -- "${BASH_SOURCE[0]}")"',
    ]
    if needs_prev:
        lines += [
            'if [ -z "$prev" ] || [ ! -f "$prev/MANIFEST.json" ]; then',
            f"  echo {sh_quote(_NEEDS_PREV.format(round=c.diff.from_round))} >&2",
            "  exit 2",
            "fi",
            'if [ "$(cd -- "$prev" && pwd -P)" = "$(pwd -P)" ]; then',
            f"  echo {sh_quote('wattplan: PREVIOUS_FOLDER is this folder; give the previous round folder')} >&2",
            "  exit 2",
            "fi",
        ]
    lines += [
        *root_guard(list(c.submit), SBATCH_AS_ROOT),
        "mkdir -p logs",
        "touch submitted.tsv applied.tsv jobs.tsv",
        "queued=PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING",
        'node_steps="${WATTPLAN_NODE_STEPS:-submit}"',
        'case "$node_steps" in',
        "  submit | skip) ;;",
        '  *) echo "WATTPLAN_NODE_STEPS must be submit or skip" >&2; exit 2 ;;',
        "esac",
        f'checkpoint_wait_s="${{WATTPLAN_CHECKPOINT_WAIT_S:-{int(lead)}}}"',
        f'end_wait_s="${{WATTPLAN_END_WAIT_S:-{END_WAIT_S}}}"',
        "",
        HELPERS,
        'squeue -h -o %i --states="$queued" -j 0 > /dev/null 2>&1 || squeue -h -o %i -u "$(id -un)" > /dev/null'
        "  # Slurm answers, or stop here",
        "",
        "# 0. The previous round's ended jobs, by their recorded ids: one the previous folder did not record stops",
        "#    everything here (its GPUs may be held; nothing is ended by name).",
        "ending=()",
        "unrecorded=0",
    ]
    for u in c.end:
        name = old_slurm_name(u)
        lines.append(f"# {' and '.join(comment_text(j) for j in u.job_ids)}")
        lines += _found("id", name, "ended job", ": not ended; end it yourself (scancel ID), then run apply.sh again")
        lines += ['if [ "$status" -eq 3 ]; then unrecorded=1; fi', 'if [ -n "$id" ]; then ending+=("$id"); fi']
    lines += [
        'if [ "$unrecorded" -ne 0 ]; then',
        "  exit 1",
        "fi",
        "",
        "# 1. Kept jobs run on: their recorded ids (a later step waits for them), one round more of time limit.",
    ]
    keep_var: dict[str, str] = {}
    for k, unit in enumerate(c.keep):
        var = f"keep_{k}"
        keep_var[unit.name] = var
        name = slurm_job_name(unit)
        lines.append(f"# {' and '.join(comment_text(j) for j in unit.job_ids)}")
        lines.append(f"{var}=()")
        lines += _found("id", name, "kept job", ": left alone (not extended)")
        lines.append('if [ -n "$id" ]; then')
        lines.append(f'  {var}=("$id")')
        lines.append(f'  adopt "$id" {sh_quote(name)} "${{row#* }}"')
        if opts.limits.extend_min is not None:
            step = f"extend {name}"
            lines.append(f"  if ! done_before {sh_quote(step)}; then")
            lines.append(f'    scontrol update JobId="$id" TimeLimit=+{int(opts.limits.extend_min)}')
            lines.append(f"    mark {sh_quote(step)}")
            lines.append("  fi")
        lines.append('elif [ "$status" -ne 3 ]; then')
        lines.append(f"  echo {sh_quote(f'wattplan: kept job {name} is not in the queue (ended?)')} >&2")
        lines.append("fi")
    lines += ["", "# 2. The previous round's node resets of the nodes this round resets: they would reset too early."]
    if reset_hosts:
        lines.append('if [ "$node_steps" = submit ]; then')
        for h in reset_hosts:
            old = step_job_name(c.diff.from_round, "reset", h)
            lines.append("  row=$(previous " + sh_quote(old) + ") || true")
            lines.append('  if [ -n "$row" ]; then scancel "${row%% *}"; fi')
        lines.append("fi")
    lines += [
        "",
        "# 3. Ended jobs: USR1 to checkpoint, a wait, then scancel; nothing new starts while they hold GPUs.",
        'if [ "${#ending[@]}" -gt 0 ]; then',
        "  # A pending job cannot be signalled (Slurm says so); scancel below ends it.",
        '  scancel --batch --signal=USR1 "${ending[@]}" 2>/dev/null || true',
        '  wait_gone "$checkpoint_wait_s" "${ending[@]}"',
        '  mapfile -t left < <(still_queued "${ending[@]}")',
        '  if [ "${#left[@]}" -gt 0 ]; then',
        '    scancel "${left[@]}"',
        '    wait_gone "$end_wait_s" "${left[@]}"',
        "  fi",
        '  mapfile -t left < <(still_queued "${ending[@]}")',
        '  if [ "${#left[@]}" -gt 0 ]; then',
        '    echo "wattplan: jobs ${left[*]} still hold their GPUs after scancel; nothing new submitted" >&2',
        "    exit 1",
        "  fi",
        "fi",
        "",
        "# 4. Node setup steps.",
    ]
    host_var = {h: f"setup_{k}" for k, h in enumerate(setup_hosts)}
    lines += [f"{var}=''" for var in host_var.values()]
    if setup_hosts:
        lines.append('if [ "$node_steps" = submit ]; then')
        for h, var in host_var.items():
            step = sh_words(["setup", h, step_job_name(model.round_index, "setup", h), "", f"nodes/{h}.setup.sh"])
            lines.append(f"  {var}=$(submit {step})")
        lines.append("fi")
    lines += ["", "# 5. New jobs, node by node in GPU-index order, each after its nodes' setup."]
    submitted = {u.name for u in c.submit}
    unit_var: dict[str, str] = {}
    for k, unit in enumerate(u for u in submission_order(model) if u.name in submitted):
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
        head = sh_words(["job", unit.name, slurm_job_name(unit), user or ""])
        lines.append(f"# {' and '.join(comment_text(j) for j in unit.job_ids)}")
        lines.append(f"{var}=$(submit {head} {' '.join(args)})")
    lines += ["", "# 6. Node resets, after every job of this round on the node (kept ones too)."]
    if reset_hosts:
        lines.append('if [ "$node_steps" = submit ]; then')
        for h in reset_hosts:
            parts = [f"${{{unit_var[u.name]}}}" for u in model.units_on(h) if u.name in unit_var]
            keeps = [keep_var[u.name] for u in model.units_on(h) if u.name in keep_var]
            lines.append(f'  after="{":".join(parts)}"')
            for var in keeps:
                lines.append(f'  for id in "${{{var}[@]}}"; do after="${{after:+$after:}}$id"; done')
            head = sh_words(["reset", h, step_job_name(model.round_index, "reset", h), ""])
            lines.append(
                f'  submit {head} ${{after:+"--dependency=afterany:$after"}} '
                f"{sh_quote(f'nodes/{h}.reset.sh')} > /dev/null"
            )
        lines.append("fi")
    lines.append(
        'echo "round applied: $(wc -l < submitted.tsv) Slurm job(s) submitted by this folder, in submitted.tsv"'
    )
    return "\n".join(lines) + "\n"


def changes_doc(c: Changeover, model: LaunchModel, opts: SlurmOptions) -> dict[str, Any]:
    """``changes.json``: the ``wattplan diff`` document plus what ``apply.sh`` does to each allocation."""
    return {
        "schema": CHANGES_SCHEMA,
        "diff": diff_to_doc(c.diff),
        "slurm": {
            "keep": [
                {
                    "slurm_name": slurm_job_name(u),
                    "jobs": list(u.job_ids),
                    "re_set": u in c.reset,
                    "extend_min": opts.limits.extend_min,
                }
                for u in c.keep
            ],
            "end": [{"slurm_name": old_slurm_name(u), "jobs": list(u.job_ids)} for u in c.end],
            "submit": [
                {
                    "slurm_name": slurm_job_name(u),
                    "file": f"jobs/{u.name}.sbatch",
                    "jobs": list(u.job_ids),
                    "restart": c.restarted(u),
                }
                for u in c.submit
            ],
        },
    }


def changes_markdown(c: Changeover, opts: SlurmOptions) -> str:
    """``changes.md``: the diff's actions, then what ``apply.sh`` does, allocation by allocation."""
    d = c.diff
    lines = [f"# wattplan round {d.from_round} -> {d.to_round}", "", "## Actions (`wattplan diff`)", ""]
    if d.actions:
        lines += ["| action | job | from | to |", "|---|---|---|---|"]
        for a in d.actions:
            old = "-" if a.old is None else a.old.summary().replace("|", "\\|")
            new = "-" if a.new is None else a.new.summary().replace("|", "\\|")
            lines.append(f"| {a.action}{' (restart)' if a.restart else ''} | {_cell(a.job_id)} | {old} | {new} |")
    else:
        lines.append("No job changes.")
    lines += ["", f"Unchanged: {len(d.unchanged)} job(s).", "", "## Slurm (`apply.sh`)", ""]
    extend = f"time limit +{opts.limits.extend_min} min" if opts.limits.extend_min is not None else "no time limit"
    for u in c.keep:
        what = "runs on, setting re-set in place" if u in c.reset else "runs on"
        lines.append(f"- keep `{slurm_job_name(u)}` ({_jobs(u.job_ids)}): {what}, {extend}")
    for o in c.end:
        lines.append(f"- end `{old_slurm_name(o)}` ({_jobs(o.job_ids)}): USR1, then scancel")
    for u in c.submit:
        lines.append(
            f"- submit `jobs/{u.name}.sbatch` ({_jobs(u.job_ids)}): {'restart' if c.restarted(u) else 'start'}"
        )
    if not (c.keep or c.end or c.submit):
        lines.append("Nothing runs in either round.")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Outside text as one markdown table cell: a JSON string, with ``|`` escaped."""
    return comment_text(text).replace("|", "\\|")


def _jobs(ids: tuple[str, ...]) -> str:
    return ", ".join(_cell(j) for j in ids)


def render_slurm_followon(
    c: Changeover, model: LaunchModel, opts: SlurmOptions | None = None, from_dir: str | None = None
) -> list[LaunchFile]:
    """Every file of a follow-on round (see the module docstring); scripts are executable.

    ``from_dir``: the previous round's launch folder (absolute), ``apply.sh``'s default PREVIOUS_FOLDER.
    """
    import json

    opts = opts or SlurmOptions()
    files = [LaunchFile(f"jobs/{u.name}.sbatch", job_script(model, u, opts), True) for u in c.submit]
    setup_hosts: list[str] = []
    reset_hosts: list[str] = []
    gpu_type_of = {h: u.gpu_type for u in c.old_units for h in u.hosts}
    gpu_type_of.update({h: u.gpu_type for u in model.units for h in u.hosts})
    for h in _hosts(c, model):
        gpu_type = gpu_type_of[h]
        free, give = setup_settings(c, model, h)
        if free or give:
            setup_hosts.append(h)
            body = _setup_body(free, give)
            files.append(LaunchFile(f"nodes/{h}.setup.sh", _step_script(model, h, opts, "setup", gpu_type, body), True))
        back = reset_settings(c, model, h)
        if back:
            reset_hosts.append(h)
            body = _reset_body(back)
            files.append(LaunchFile(f"nodes/{h}.reset.sh", _step_script(model, h, opts, "reset", gpu_type, body), True))
    files.append(LaunchFile("apply.sh", _apply_script(c, model, opts, setup_hosts, reset_hosts, from_dir), True))
    files.append(LaunchFile("changes.md", changes_markdown(c, opts)))
    files.append(LaunchFile("changes.json", json.dumps(changes_doc(c, model, opts), indent=1) + "\n"))
    return files
