"""Slurm's power saving on the emulated cluster: the programs slurmctld runs to power nodes down and up (issue 44).

``cluster up --power-save`` gives Slurm (:class:`planner.cluster.slurm_daemons.PowerSave`) three programs of the
cluster's ``bin/``:

- ``bin/suspend HOSTLIST`` (``SuspendProgram``): each node's server goes off. Its pending boot, if any, is stopped,
  its slurmd is stopped (a server that is off runs no slurmd) and ``emu/power/NODE`` reads ``off`` since now: the
  emulator counts the node's idle power over a server's shutdown
  (:data:`~planner.agent.node_power.SHUTDOWN_S` emulated seconds, as the replay does), then no energy;
- ``bin/resume HOSTLIST`` (``ResumeProgram``): each node boots. ``emu/power/NODE`` reads ``resuming`` (the
  emulator counts the node's idle power, as a booting server draws) and a boot helper, in a session of its own,
  waits the boot (``--resume-s`` emulated seconds, ``resume_s / time_scale`` real ones) and starts the node's
  slurmd as ``cluster up`` did, with ``-b`` (Slurm takes the node for booted only if its slurmd reports a boot
  after the resume request), then removes ``emu/power/NODE``: the node is on. The program itself returns at
  once: slurmctld waits for its programs when it stops;
- ``bin/power_ready`` (``PrologSlurmctld``, a shell script, :func:`ready_script`): returns once a job's nodes are
  up, so that a job allocated a powered-down node starts when its node has booted, not at slurmctld's next
  30-second job pass (:mod:`planner.cluster.slurm_daemons`).

slurmctld runs the programs with the signal mask of its power-save thread (SIGTERM blocked); :func:`main` clears
it first, so that the helpers and slurmds started from here stop on SIGTERM. Each node's work is done under a lock
(``emu/power/NODE.lock``): a suspend and a boot of one node never interleave.

Which processes are whose. A slurmd is stopped only after its command line was read back as exactly the one
``cluster up`` or a boot started for that node (:func:`planner.cluster.slurm_daemons.slurmd_argv`), and by its
start time. Every boot helper and every slurmd a boot starts is recorded (``emu/power/NODE.boot.json``,
``NODE.slurmd.json``: PID, program, start time) for ``cluster down`` (:func:`recorded`, :func:`stop_recorded`),
which stops a recorded PID only while it runs what was started. A boot starts no slurmd once the cluster's
slurmctld has stopped (``cluster down`` stops slurmctld, then every recorded process under each node's lock).

``python -m wattplan.planner.cluster.power --dir DIR suspend|resume HOSTLIST`` and ``... boot NODE`` (the helper).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.agent.slurm_detail import expand_hostlist
from wattplan.planner.cluster.layout import (
    OFF_SINCE,
    POWER_OFF,
    POWER_ON,
    POWER_RESUMING,
    ClusterLayout,
    parse_power_state,
    write_json_atomic,
    write_text_atomic,
)
from wattplan.planner.cluster.processes import alive, command_line, start_ticks, stop_pid
from wattplan.planner.cluster.slurm_daemons import slurmctld_argv, slurmd_argv

OFF, RESUMING, ON = POWER_OFF, POWER_RESUMING, POWER_ON
STATES = (ON, OFF, RESUMING)
"""A node's power states (:mod:`planner.cluster.layout`)."""

BOOT_MATCH = "wattplan.planner.cluster.power"
"""What a boot helper's command line holds (its record's ``match``)."""
SLURMD_MATCH = "slurmd"
POLL_S = 0.5
"""Real seconds between two looks of a waiting boot at its node's state and at slurmctld."""
READY_POLL_S = 0.2
"""Real seconds between two looks of ``bin/power_ready`` at a job's nodes."""


def read_state(layout: ClusterLayout, node: str) -> str:
    """``node``'s power state (:func:`planner.cluster.layout.parse_power_state` of its file)."""
    try:
        return parse_power_state(layout.power_file(node).read_text())
    except (OSError, UnicodeDecodeError):
        return ON


def write_state(layout: ClusterLayout, node: str, state: str, since_unix: float | None = None) -> None:
    """Set ``node``'s power state: ``emu/power/NODE`` written atomically, or removed for ``on``.

    ``since_unix`` (with ``off``): when the node went off, a ``since=`` line from which the emulator counts its
    shutdown (:data:`planner.cluster.layout.POWER_STOPPING`); without it the node is off at once.
    """
    if state not in STATES:
        raise ValueError(f"{state!r} is not a power state ({', '.join(STATES)})")
    path = layout.power_file(node)
    if state == ON:
        path.unlink(missing_ok=True)
    else:
        layout.power_dir.mkdir(parents=True, exist_ok=True)
        since = f"{OFF_SINCE}{since_unix:.3f}\n" if state == OFF and since_unix is not None else ""
        write_text_atomic(path, state + "\n" + since)


def _log(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} power[{os.getpid()}]: {text}", flush=True)


@contextlib.contextmanager
def node_lock(layout: ClusterLayout, node: str) -> Iterator[None]:
    """Hold ``emu/power/NODE.lock`` (an exclusive ``flock``) for the block."""
    layout.power_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(layout.power_dir / f"{node}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- records of the processes started here --------------------------------------------------------------------


def record_file(layout: ClusterLayout, node: str, kind: str) -> Path:
    """``emu/power/NODE.KIND.json``: the boot helper (``boot``) or the slurmd it started (``slurmd``)."""
    return layout.power_dir / f"{node}.{kind}.json"


def _record(layout: ClusterLayout, node: str, kind: str, pid: int, match: str) -> None:
    write_json_atomic(record_file(layout, node, kind), {"pid": pid, "match": match, "started": start_ticks(pid)})


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("pid"), int) or not isinstance(doc.get("match"), str):
        return None
    if doc["pid"] <= 1 or not isinstance(doc.get("started"), int | None):
        return None
    return doc


def _record_alive(doc: dict[str, Any] | None) -> bool:
    return doc is not None and alive(int(doc["pid"]), str(doc["match"]), doc.get("started"))


def _stop_record(layout: ClusterLayout, node: str, kind: str) -> bool:
    """Stop the recorded process (only while it runs what was started) and drop its record; whether it ran."""
    path = record_file(layout, node, kind)
    doc = _read_record(path)
    ran = doc is not None and stop_pid(int(doc["pid"]), str(doc["match"]), started=doc.get("started"))
    path.unlink(missing_ok=True)
    return ran


def recorded(layout: ClusterLayout, nodes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The recorded boot helpers and resumed slurmds of ``nodes``, running or not, as manifest process entries.

    Named ``power-boot-NODE`` and ``slurmd-NODE-resumed``.
    """
    out: dict[str, dict[str, Any]] = {}
    for node in nodes:
        for kind, name in (("boot", f"power-boot-{node}"), ("slurmd", f"slurmd-{node}-resumed")):
            doc = _read_record(record_file(layout, node, kind))
            if doc is not None:
                out[name] = doc
    return out


def stop_recorded(layout: ClusterLayout, nodes: Sequence[str]) -> list[str]:
    """Stop every recorded boot helper and resumed slurmd of ``nodes``, each node under its lock; the names stopped.

    ``cluster down`` calls it once slurmctld is stopped: a boot that has not started its slurmd yet then never
    does (:func:`boot`).
    """
    stopped: list[str] = []
    if not layout.power_dir.is_dir():
        return stopped
    for node in nodes:
        with node_lock(layout, node):
            if _stop_record(layout, node, "boot"):
                stopped.append(f"power-boot-{node}")
            if _stop_record(layout, node, "slurmd"):
                stopped.append(f"slurmd-{node}-resumed")
    return stopped


# -- the daemons this cluster runs ----------------------------------------------------------------------------


def _exact(pid: int, argv: Sequence[Sequence[str]]) -> int | None:
    """``pid``'s start time when its command line is exactly one of ``argv``, else None."""
    started = start_ticks(pid)
    line = command_line(pid)
    if started is None or line is None or line not in {" ".join(a) for a in argv}:
        return None
    return started


def _pid_file(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 1 else None


def running_slurmds(layout: ClusterLayout, node: str) -> dict[int, int]:
    """``{pid: start time}`` of the slurmds of ``node`` this cluster started that run now.

    Candidates: Slurm's pid file (``slurm/run/slurmd-NODE.pid``), the manifest's ``slurmd-NODE`` and the boot's
    record; each counts only if its command line is exactly ``cluster up``'s or a boot's for ``node``.
    """
    conf = layout.slurm_conf
    forms = (slurmd_argv(conf, node), slurmd_argv(conf, node, rebooted=True))
    pids = {_pid_file(layout.slurm_dir / "run" / f"slurmd-{node}.pid")}
    try:
        entry = layout.read_manifest().get("processes", {}).get(f"slurmd-{node}")
        pids.add(int(entry["pid"]) if isinstance(entry, dict) else None)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    doc = _read_record(record_file(layout, node, "slurmd"))
    pids.add(None if doc is None else int(doc["pid"]))
    out = {}
    for pid in pids:
        if pid is not None and (started := _exact(pid, forms)) is not None:
            out[pid] = started
    return out


def slurmctld_running(layout: ClusterLayout) -> bool:
    """Whether this cluster's slurmctld runs (its pid file's PID, running exactly ``cluster up``'s command)."""
    pid = _pid_file(layout.slurm_dir / "run" / "slurmctld.pid")
    return pid is not None and _exact(pid, (slurmctld_argv(layout.slurm_conf),)) is not None


def _stop_slurmds(layout: ClusterLayout, node: str) -> list[int]:
    stopped = [
        pid for pid, started in running_slurmds(layout, node).items() if stop_pid(pid, "slurmd", started=started)
    ]
    record_file(layout, node, "slurmd").unlink(missing_ok=True)
    return stopped


# -- the programs ---------------------------------------------------------------------------------------------


def _nodes(layout: ClusterLayout, hostlist: str) -> list[str]:
    """The manifest's nodes named by ``hostlist`` (others are logged and left alone)."""
    known = {str(n["name"]) for n in layout.read_manifest()["nodes"]}
    named = list(expand_hostlist(hostlist))
    for node in named:
        if node not in known:
            _log(f"{node} is not a node of this cluster: left alone")
    return [n for n in named if n in known]


def suspend(layout: ClusterLayout, hostlist: str) -> None:
    """``SuspendProgram``: every node of ``hostlist`` off (module docstring)."""
    for node in _nodes(layout, hostlist):
        with node_lock(layout, node):
            boot_stopped = _stop_record(layout, node, "boot")
            stopped = _stop_slurmds(layout, node)
            write_state(layout, node, OFF, since_unix=time.time())
        what = f"slurmd {', '.join(map(str, stopped))} stopped" if stopped else "no slurmd ran"
        _log(f"suspend {node}: {what}{'; its boot stopped' if boot_stopped else ''}; off")


def resume(layout: ClusterLayout, hostlist: str) -> None:
    """``ResumeProgram``: every node of ``hostlist`` booting, each by a detached helper (module docstring)."""
    for node in _nodes(layout, hostlist):
        with node_lock(layout, node):
            if _record_alive(_read_record(record_file(layout, node, "boot"))):
                _log(f"resume {node}: already booting")
                continue
            write_state(layout, node, RESUMING)
            argv = [sys.executable, "-m", BOOT_MATCH, "--dir", str(layout.root), "boot", node]
            with open(layout.log_dir / "power.log", "ab") as log:
                helper = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            _record(layout, node, "boot", helper.pid, BOOT_MATCH)
        _log(f"resume {node}: resuming, boot helper {helper.pid}")


def boot_seconds(layout: ClusterLayout) -> float:
    """Real seconds a boot takes: the manifest's ``power_save.resume_s`` over its ``time_scale``."""
    manifest = layout.read_manifest()
    return float(manifest["power_save"]["resume_s"]) / float(manifest["time_scale"])


def boot(layout: ClusterLayout, node: str) -> int:
    """The boot helper of ``node``: wait the boot, start its slurmd, the node on; exit status (0: booted)."""
    deadline = time.monotonic() + boot_seconds(layout)
    while True:
        if read_state(layout, node) != RESUMING or not slurmctld_running(layout):
            _log(f"boot {node}: given up (the node is {read_state(layout, node)}, or slurmctld stopped)")
            return 1
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(POLL_S, left))
    with node_lock(layout, node):
        mine = _read_record(record_file(layout, node, "boot"))
        if mine is None or mine["pid"] != os.getpid() or read_state(layout, node) != RESUMING:
            _log(f"boot {node}: given up (suspended or booted by another helper meanwhile)")
            return 1
        if not slurmctld_running(layout):
            _log(f"boot {node}: given up (slurmctld stopped)")
            return 1
        if left_over := _stop_slurmds(layout, node):  # a slurmd of the server before it went off
            _log(f"boot {node}: stopped the slurmd left from before ({', '.join(map(str, left_over))})")
        argv = slurmd_argv(layout.slurm_conf, node, rebooted=True)
        env = {**os.environ, "SLURM_CONF": str(layout.slurm_conf)}
        with open(layout.slurm_dir / "log" / f"slurmd-{node}.stdout", "ab") as log:
            slurmd = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        _record(layout, node, "slurmd", slurmd.pid, SLURMD_MATCH)
        write_state(layout, node, ON)
        record_file(layout, node, "boot").unlink(missing_ok=True)
    _log(f"boot {node}: slurmd {slurmd.pid} started; on")
    return 0


def ready_script(layout: ClusterLayout, timeout_s: int) -> str:
    """``bin/power_ready``, the ``PrologSlurmctld``: exits 0 once no node of the job is powered down or booting.

    It asks ``sinfo`` for the short states of ``SLURM_JOB_NODELIST`` every :data:`READY_POLL_S` s: a state
    ending in ``~`` (powered down, not yet resumed) or ``#`` (powering up) waits, a DOWN or DRAINED one does not
    (Slurm requeues the job itself). After ``timeout_s`` it exits 0 anyway: Slurm's ResumeTimeout decides. A
    shell script, so that the jobs on powered nodes pass it in milliseconds.
    """
    env = f"PATH={shlex.quote(f'{layout.bin_dir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin')}"
    return "\n".join(
        [
            "#!/bin/sh",
            "# written by wattplan cluster up --power-save: Slurm's PrologSlurmctld (planner/cluster/power.py)",
            f"export {env}",
            f"export SLURM_CONF={shlex.quote(str(layout.slurm_conf))}",
            '[ -n "$SLURM_JOB_NODELIST" ] || exit 0',
            f"end=$(( $(date +%s) + {int(timeout_s)} ))",
            'while [ "$(date +%s)" -lt "$end" ]; do',
            '  states=$(sinfo -h -N -n "$SLURM_JOB_NODELIST" -o %t) || exit 0',
            "  wait=",
            "  for s in $states; do",
            "    case $s in",
            "      down*|drain*|fail*) ;;",
            "      *'~'|*'#') wait=1 ;;",
            "    esac",
            "  done",
            '  [ -n "$wait" ] || exit 0',
            f"  sleep {READY_POLL_S:g}",
            "done",
            "exit 0",
            "",
        ]
    )


def _clear_signals() -> None:
    """Undo slurmctld's signal mask and ignored signals (module docstring) for this process and its children."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    """Run one program (module docstring); exit status 0 unless the arguments are wrong or a boot gave up."""
    _clear_signals()
    p = argparse.ArgumentParser(prog=f"python -m {BOOT_MATCH}", description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, type=Path, help="the emulated cluster's folder")
    p.add_argument("program", choices=("suspend", "resume", "boot"))
    p.add_argument("hosts", help="Slurm's hostlist (suspend, resume) or one node (boot)")
    args = p.parse_args(argv)
    layout = ClusterLayout(args.dir)
    if args.program == "boot":
        return boot(layout, args.hosts)
    (suspend if args.program == "suspend" else resume)(layout, args.hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
