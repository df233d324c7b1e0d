"""``wattplan agent check``: before the agent touches anything, whether it understands this cluster and can act.

Each check reads, never writes (no Slurm call changes a job or a node, nothing is written to the settings folder)
and ends in one :class:`Finding`: ``ok``, ``warn`` (the agent runs, without something it would use) or ``missing``
(the agent cannot do its work; the check exits 1). In order:

1. **Slurm's version**: ``sinfo --version`` is a release whose JSON the agent reads (:mod:`.slurm_version`).
2. **Its JSON**: ``squeue --json`` and ``sinfo --json`` are read by the agent's own readers, and every problem
   they find is named.
3. **Permissions**: ``scontrol requeuehold`` and ``update`` of other users' jobs need root or Slurm's
   ``SlurmUser`` (an operator's ``AdminLevel`` also does; not checked here).
4. **Power saving**: ``scontrol show config``'s ``SuspendTime``, ``SuspendProgram`` and ``ResumeProgram``
   against ``--power-save``: given on a cluster that powers nothing down, or left off on one that does.
5. **Node scripts**: ``Prolog``, ``Epilog`` and ``TaskProlog`` name wattplan's scripts (or wrappers that run
   them), ``PrologFlags`` holds ``Alloc``; the files are looked at on this host (a node-local install is the
   operator's to check on each node).
6. **The settings folder**: exists and this user may write it.
7. **Prometheus**: answers, holds DCGM's energy counters, and (when jobs run) their ``hpc_job`` labels, and
   the progress gauge ``wattplan_job_steps_done``.
8. **The power cap endpoint** (only with ``--power-cap-port``): its token file is one the agent accepts (its
   owner's only, one long token; :func:`~planner.agent.cap_endpoint.read_token`) and this user may write the cap
   file's folder.

:func:`run_checks` takes the ways to ask Slurm and Prometheus as parameters, so the tests run it on captured
answers as well as on a real cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from wattplan.planner.agent.cap_endpoint import read_token
from wattplan.planner.agent.commands import NOT_FOUND, Run, SlurmError, first_line
from wattplan.planner.agent.observations import GPU_ENERGY, STEPS_DONE
from wattplan.planner.agent.prometheus import PrometheusError, Queries
from wattplan.planner.agent.slurm_config import CONFIG_COMMAND, slurm_config
from wattplan.planner.agent.slurm_queue import read_nodes, read_queue
from wattplan.planner.agent.slurm_schema import Generation, generation_for
from wattplan.planner.agent.slurm_version import slurm_version, supported_problem
from wattplan.planner.contracts.problems import Problem

Verdict = Literal["ok", "warn", "missing"]


class _Answer(Protocol):
    """A reader's answer: what it read and the problems it found (``QueueRead``, ``NodesRead``)."""

    @property
    def problems(self) -> tuple[Problem, ...]: ...


R = TypeVar("R", bound=_Answer)
NODE_SCRIPTS = {"Prolog": "prolog.sh", "Epilog": "epilog.sh", "TaskProlog": "task_prolog.sh"}
"""``slurm.conf``'s key of each node script and the file of ``planner/agent/node_files`` it must run."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's verdict and what it found, in the operator's words."""

    check: str
    verdict: Verdict
    detail: str


@dataclass(frozen=True, slots=True)
class CheckTarget:
    """What the agent would use: its Slurm (a :data:`Run`), Prometheus, settings folder and power saving."""

    run: Run
    prometheus: Queries | None
    prometheus_url: str | None
    settings_dir: Path | None
    power_save: bool
    euid: int = -1
    """The effective user id the agent would run as (-1: this process's)."""
    user: str = ""
    """That user's name ("": this process's)."""
    cap_port: int | None = None
    """``--power-cap-port`` (None: no endpoint, no check)."""
    cap_file: Path | None = None
    cap_token_file: Path | None = None


def _version(target: CheckTarget) -> tuple[Finding, Generation | None]:
    """What ``sinfo --version`` says, and the JSON generation the agent would ask that release for."""
    try:
        version = slurm_version(target.run)
    except SlurmError as exc:
        return Finding("Slurm version", "missing", str(exc)), None
    shown = f"Slurm {version[0]}.{version[1]:02d}.{version[2]}"
    problem = supported_problem(version)
    generation = generation_for(version)
    if problem is not None or generation is None:
        return Finding("Slurm version", "missing", problem.message if problem else shown), None
    return Finding("Slurm version", "ok", f"{shown}, read as JSON {generation.name}"), generation


def _read(target: CheckTarget, argv: tuple[str, ...], read: Callable[[str], R], out: list[Finding]) -> R | None:
    """``argv``'s JSON read by the agent's own reader; None (and a finding in ``out``) if it fails or has problems."""
    name = " ".join(argv)
    result = target.run(argv)
    if not result.ok:
        out.append(Finding(name, "missing", f"exit {result.returncode}: {first_line(result.stderr)}"))
        return None
    try:
        answer = read(result.stdout)
    except SlurmError as exc:
        out.append(Finding(name, "missing", f"the agent cannot read it: {exc}"))
        return None
    if answer.problems:
        shown = "; ".join(str(p) for p in answer.problems[:3])
        out.append(Finding(name, "warn", f"{len(answer.problems)} problem(s), those left alone: {shown}"))
        return None
    return answer


def _json(target: CheckTarget, generation: Generation) -> list[Finding]:
    out: list[Finding] = []
    queue_name, nodes_name = " ".join(generation.queue_command), " ".join(generation.nodes_command)
    queue = _read(target, generation.queue_command, lambda text: read_queue(text, generation), out)
    if queue is not None:
        out.append(Finding(queue_name, "ok", f"read: {len(queue.jobs)} managed jobs, {queue.unmanaged} not"))
    nodes = _read(target, generation.nodes_command, lambda text: read_nodes(text, generation), out)
    if nodes is not None:
        out.append(Finding(nodes_name, "ok", f"read: {len(nodes.nodes)} nodes"))
    return out


def _permissions(target: CheckTarget, config: dict[str, str]) -> Finding:
    euid = os.geteuid() if target.euid < 0 else target.euid
    user = target.user or _user_name(euid)
    slurm_user = config.get("SlurmUser", "").split("(")[0]
    if euid == 0:
        return Finding("permissions", "ok", "root: scontrol may hold, release, requeue and update any job")
    if slurm_user and user == slurm_user:
        return Finding("permissions", "ok", f"{user} is Slurm's SlurmUser")
    return Finding(
        "permissions",
        "warn",
        f"{user} is neither root nor SlurmUser ({slurm_user or 'unknown'}): scontrol refuses to requeue or update "
        "other users' jobs unless Slurm's accounting gives it AdminLevel=Operator",
    )


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _power_saving(target: CheckTarget, config: dict[str, str]) -> Finding:
    suspend_time = config.get("SuspendTime", "NONE")
    programs = [config.get(k, "(null)") for k in ("SuspendProgram", "ResumeProgram")]
    powers_down = suspend_time.split()[0].upper() not in ("NONE", "INFINITE", "-1", "0") and all(
        p not in ("(null)", "") for p in programs
    )
    if powers_down and target.power_save:
        return Finding("power saving", "ok", f"Slurm powers idle nodes down (SuspendTime={suspend_time}); priced")
    if powers_down:
        return Finding(
            "power saving",
            "warn",
            f"Slurm powers idle nodes down (SuspendTime={suspend_time}) but --power-save is not given: the agent "
            "plans as if every node stayed on",
        )
    if target.power_save:
        return Finding(
            "power saving",
            "missing",
            f"--power-save is given but Slurm powers no node down (SuspendTime={suspend_time}, SuspendProgram="
            f"{programs[0]}, ResumeProgram={programs[1]}): set them in slurm.conf or leave --power-save off",
        )
    return Finding("power saving", "ok", "off, as --power-save says: every node stays on")


def _node_script(key: str, script: str, path: Path) -> Finding:
    """What one configured ``Prolog``/``Epilog``/``TaskProlog`` program is: wattplan's ``script`` or not."""
    if not path.is_file():
        return Finding(key, "warn", f"{path} is not on this host (a node-local install: check each node)")
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return Finding(key, "warn", f"{path} cannot be read here: {exc.strerror}")
    if path.name != script and script not in text:
        return Finding(key, "missing", f"{path} is not wattplan's {script} nor a wrapper that runs it")
    if not os.access(path, os.X_OK) and path.name == script:
        return Finding(key, "missing", f"{path} is not executable")
    return Finding(key, "ok", str(path))


def node_scripts(config: dict[str, str]) -> list[Finding]:
    """Each node-script key: ok when one of the programs it names is wattplan's script (or runs it)."""
    out = []
    flags = config.get("PrologFlags", "")
    for key, script in NODE_SCRIPTS.items():
        paths = [Path(p.strip()) for p in config.get(key, "").split(",") if p.strip() not in ("", "(null)")]
        if not paths:
            out.append(Finding(key, "missing", f"slurm.conf has no {key}=: install the node scripts ({script})"))
            continue
        found = [_node_script(key, script, path) for path in paths]
        out.append(next((f for f in found if f.verdict == "ok"), found[0]))
    if "alloc" not in flags.lower():
        out.append(Finding("PrologFlags", "missing", f"PrologFlags={flags or '(none)'}: add Alloc, so the setting is "
                           "in place before the job's first process"))  # fmt: skip
    return out


def _settings(target: CheckTarget) -> Finding:
    folder = target.settings_dir
    if folder is None:
        return Finding("settings folder", "missing", "none given (--settings-dir)")
    if not folder.is_dir():
        return Finding("settings folder", "missing", f"{folder} does not exist: create it where the nodes read it")
    if not os.access(folder, os.W_OK | os.X_OK):
        return Finding("settings folder", "missing", f"{folder}: this user may not write it")
    return Finding("settings folder", "ok", f"{folder}, writable")


def _prometheus(target: CheckTarget) -> list[Finding]:
    if target.prometheus is None:
        return [Finding("Prometheus", "missing", "none given (--prometheus URL): no energy, no progress")]
    try:
        targets = target.prometheus.instant("up")
        energy = target.prometheus.instant(GPU_ENERGY)
        steps = target.prometheus.instant(STEPS_DONE)
    except PrometheusError as exc:
        return [Finding("Prometheus", "missing", f"{target.prometheus_url}: {exc}")]
    scraped = sum(1 for s in targets if s.value == 1.0)
    if not scraped:  # none listed yet, or every scrape failing (an exporter not up yet, or down)
        why = (
            f"answers but none of its {len(targets)} scrape targets is up: check its scrape_configs and the "
            "exporters, or run this again a scrape later"
        )
        return [Finding("Prometheus", "missing", f"{target.prometheus_url} {why}")]
    out = [Finding("Prometheus", "ok", f"{target.prometheus_url} answers; {scraped} of {len(targets)} targets up")]
    if not energy:
        out.append(Finding("DCGM energy", "missing", f"no {GPU_ENERGY} series: is dcgm-exporter scraped?"))
        return out
    labelled = sum(1 for s in energy if s.labels.get("hpc_job"))
    out.append(Finding("DCGM energy", "ok", f"{len(energy)} GPUs report {GPU_ENERGY}"))
    if labelled:
        out.append(Finding("DCGM job labels", "ok", f"{labelled} of {len(energy)} GPUs carry jobs (hpc_job)"))
    else:
        out.append(Finding("DCGM job labels", "warn", "no GPU carries an hpc_job label: no job runs now, or "
                           "dcgm-exporter lacks --hpc-job-mapping-dir (the prolog's jobmap folder)"))  # fmt: skip
    if steps:
        out.append(Finding("job progress", "ok", f"{len(steps)} jobs export {STEPS_DONE}"))
    else:
        why = "the agent estimates steps from the profiles, and --learn has nothing to learn from"
        out.append(Finding("job progress", "warn", f"no job exports {STEPS_DONE}: {why} (docs/deploy-slurm.md, 3)"))
    return out


def _cap_endpoint(target: CheckTarget) -> Finding:
    name = "power cap endpoint"
    assert target.cap_token_file is not None and target.cap_file is not None  # the port's option rules need both
    try:
        read_token(target.cap_token_file)
    except ValueError as e:
        return Finding(name, "missing", f"--power-cap-token-file: {e}")
    folder = target.cap_file.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return Finding(name, "missing", f"{folder}: this user may not write the cap file there")
    return Finding(name, "ok", f"port {target.cap_port}, token file private, writes {target.cap_file}")


def run_checks(target: CheckTarget, progress: Callable[[str], None] | None = None) -> list[Finding]:
    """Every check of the module docstring, in order; what each found."""
    say = progress or (lambda _text: None)
    say("Slurm")
    version, generation = _version(target)
    found = [version]
    if version.verdict == "missing" and "not installed" in version.detail:
        return found
    if generation is not None:
        found += _json(target, generation)
    result = target.run(CONFIG_COMMAND)
    if result.ok:
        config = slurm_config(result.stdout)
        found += [_permissions(target, config), _power_saving(target, config), *node_scripts(config)]
    else:
        why = "not installed" if result.returncode == NOT_FOUND else first_line(result.stderr)
        found.append(Finding("scontrol show config", "missing", why))
    found.append(_settings(target))
    say("Prometheus")
    found += _prometheus(target)
    if target.cap_port is not None:
        found.append(_cap_endpoint(target))
    return found


def exit_code(found: Sequence[Finding]) -> int:
    """0 when nothing is missing (warnings allowed), 1 otherwise."""
    return 1 if any(f.verdict == "missing" for f in found) else 0
