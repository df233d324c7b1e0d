"""``wattplan cluster up`` and ``down``: start and stop an emulated GPU cluster (docs/design.md §11.7).

``up`` starts, in order, each in a session of its own so that they outlive the command: munged, slurmctld and
one slurmd per node (:mod:`planner.cluster.slurm_daemons`, with the node scripts of
``planner/agent/node_files`` as ``Prolog``, ``Epilog`` and ``TaskProlog``, ``PrologFlags=Alloc``), the GPU
emulator and its DCGM-compatible endpoint (:mod:`planner.cluster.emulator`), one node agent per node
(``apply_settings.sh --every``) and a real Prometheus scraping the endpoint every second
(:mod:`planner.cluster.prometheus_server`). Every PID goes to the manifest (``cluster.json``) with the program
it runs; ``down`` stops exactly those (a PID now running another program is left alone), last started first,
after stopping the submitter and cancelling every job of the cluster, every user's (by id, through the
cluster's own ``SLURM_CONF``: another Slurm on the host is never asked).

``up`` checks every option and the folder (:mod:`planner.cluster.owned`: new, empty, or marked as a cluster
folder by an earlier ``up``) before it deletes or writes anything, and deletes only the entries an earlier ``up``
recorded in its marker.

The node scripts find ``nvidia-smi`` (the stand-in, :mod:`planner.cluster.nvidia_smi`) and their folders
through small wrappers in ``bin/``: the same scripts an operator installs on a real cluster run here unchanged.
The emulated clock starts (``t0_unix``) once everything is up.

With ``--power-save`` Slurm powers idle nodes down after ``--suspend-s`` emulated seconds and boots them for work
in ``--resume-s`` (:mod:`planner.cluster.power`, whose programs are ``bin/suspend``, ``bin/resume`` and
``bin/power_ready``); the manifest's ``power_save`` records both (null without it) and Slurm's real times. The
slurmds and boot helpers the power programs start are recorded in ``emu/power/`` and stopped by ``down`` as the
manifest's processes are.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import wattplan.planner.cluster.owned as owned
import wattplan.planner.cluster.power as power
import wattplan.planner.cluster.prometheus_server as prometheus_server
import wattplan.planner.cluster.slurm_root as slurm_root
from wattplan.planner.cluster.layout import (
    MANIFEST_FORMAT,
    ClusterLayout,
    slurm_env,
    write_json_atomic,
    write_text_atomic,
)
from wattplan.planner.cluster.options import RESUME_S, SUSPEND_S, UpOptions
from wattplan.planner.cluster.processes import alive, start_ticks, stop_pid
from wattplan.planner.cluster.slurm_daemons import (
    PowerSave,
    SlurmCluster,
    SlurmNode,
    free_ports,
    nodes_of,
    step_socket_path,
)
from wattplan.planner.contracts.defaults import RESTART_S
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.profile_library.library import ProfileLibrary

NODE_AGENT_EVERY_S = 1.0
"""How often each node agent re-applies the settings of running jobs (real s)."""


class ClusterError(ValueError):
    """The cluster cannot be started or stopped; the message says why and what to do."""


def node_files_dir() -> Path:
    """The shipped node scripts (``planner/agent/node_files``)."""
    return Path(str(importlib.resources.files("wattplan.planner.agent") / "node_files"))


STOP_ORDER = ("prometheus", "node-agent", "emulator", "power-boot", "slurmd", "slurmctld", "munged", "slurm-root")
"""``down`` stops the manifest's processes last started first (the manifest's JSON keys are sorted)."""


def _started(pid: int, match: str) -> dict[str, Any]:
    """A manifest entry: the process's PID, the program it runs and its start time (a reused PID differs)."""
    return {"pid": pid, "match": match, "started": start_ticks(pid)}


def _stop_rank(name: str) -> int:
    """Where a manifest process comes in :data:`STOP_ORDER`."""
    for i, prefix in enumerate(STOP_ORDER):
        if name == prefix or name.startswith(f"{prefix}-"):
            return i
    return 0


def _processes(layout: ClusterLayout, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's processes and those its power programs recorded (:func:`planner.cluster.power.recorded`)."""
    nodes = [str(n["name"]) for n in manifest.get("nodes", []) if isinstance(n, dict) and "name" in n]
    return {**manifest.get("processes", {}), **power.recorded(layout, nodes)}


def _alive(processes: dict[str, dict[str, Any]]) -> list[str]:
    """Names of ``processes`` still running the program they were started with, in stop order."""
    out = []
    for name, p in processes.items():
        started = p.get("started")
        if alive(int(p["pid"]), str(p["match"]), None if started is None else int(started)):
            out.append(name)
    return sorted(out, key=_stop_rank)


def gpu_limits(library: ProfileLibrary, gpu_type: str) -> dict[str, float]:
    """A GPU type's power-limit range and default (W): the library's settings when they are power limits.

    The default limit is the largest setting (the GPU's TDP in the shipped profiles); SM-clock types get a
    nominal 100..300 W range, the stand-in only records their clock locks.
    """
    g = library.gpu_types[gpu_type]
    settings = [float(s) for s in g.get("settings", [])]
    if g.get("setting_unit", "power_limit_w") == "power_limit_w" and settings:
        return {"default_limit_w": max(settings), "min_limit_w": min(settings), "max_limit_w": max(settings)}
    return {"default_limit_w": 300.0, "min_limit_w": 100.0, "max_limit_w": 300.0}


def _wrapper(path: Path, env: dict[str, str], argv: Sequence[str], log: Path | None = None) -> None:
    """A ``/bin/sh`` script that exports ``env`` and execs ``argv``; every word quoted (``shlex.quote``).

    Slurm runs these as root: a path or value is always one literal word, never shell syntax. ``log``: stdin
    from ``/dev/null`` and stdout and stderr appended to ``log`` (slurmctld runs its power programs with all
    three closed).
    """
    lines = ["#!/bin/sh", "# written by wattplan cluster up"]
    if log is not None:
        lines.append(f"exec </dev/null >>{shlex.quote(str(log))} 2>&1")
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append("exec " + " ".join(shlex.quote(a) for a in argv) + ' "$@"')
    write_text_atomic(path, "\n".join(lines) + "\n")
    path.chmod(0o755)


def _write_bin(layout: ClusterLayout) -> dict[str, str]:
    """The ``bin/`` wrappers; the environment the node scripts run with."""
    layout.bin_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "WATTPLAN_CLUSTER_DIR": str(layout.root),
        "WATTPLAN_SETTINGS_DIR": str(layout.settings_dir),
        "WATTPLAN_NODE_DIR": str(layout.node_dir),
        "PATH": f"{layout.bin_dir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    }
    _wrapper(
        layout.bin_dir / "nvidia-smi",
        {"WATTPLAN_CLUSTER_DIR": str(layout.root)},
        [sys.executable, "-m", "wattplan.planner.cluster.nvidia_smi"],
    )
    # The node scripts are installed into the cluster's own folder, as an operator installs them on every node: the
    # task prolog runs as the job's user, who may not be able to read the package's folder (a checkout in a
    # private folder: a job of user nobody then failed at its task prolog and never ran).
    scripts = layout.bin_dir / "node_files"
    scripts.mkdir(exist_ok=True)
    for source in sorted(node_files_dir().glob("*.sh")):
        write_text_atomic(scripts / source.name, source.read_text())
        (scripts / source.name).chmod(0o644)
    for name in ("prolog", "epilog", "task_prolog", "apply_settings"):
        _wrapper(layout.bin_dir / name, env, ["/bin/bash", str(scripts / f"{name}.sh")])
    return env


def _write_power_bin(layout: ClusterLayout, env: dict[str, str], times: tuple[int, int, int]) -> PowerSave:
    """``bin/suspend``, ``bin/resume`` and ``bin/power_ready`` (:mod:`planner.cluster.power`); Slurm's settings.

    ``times``: :meth:`PowerSave.real_times`. ``power_ready`` waits for a job's nodes up to the ResumeTimeout
    and a little more.
    """
    suspend_time, suspend_timeout, resume_timeout = times
    programs = {}
    for name in ("suspend", "resume"):
        programs[name] = layout.bin_dir / name
        argv = [sys.executable, "-m", "wattplan.planner.cluster.power", "--dir", str(layout.root), name]
        _wrapper(programs[name], {**env, "SLURM_CONF": str(layout.slurm_conf)}, argv, log=layout.log_dir / "power.log")
    ready = layout.bin_dir / "power_ready"
    write_text_atomic(ready, power.ready_script(layout, resume_timeout + 10))
    ready.chmod(0o755)
    return PowerSave(suspend_time, suspend_timeout, resume_timeout, programs["suspend"], programs["resume"], ready)


def check_options(
    gpus: Sequence[tuple[str, int]],
    gpus_per_node: int,
    library: ProfileLibrary,
    time_scale: float,
    restart_s: float,
    power_save: bool = False,
    suspend_s: float = SUSPEND_S,
    resume_s: float = RESUME_S,
) -> tuple[SlurmNode, ...]:
    """The cluster's nodes; InputError naming every bad option (each number by :class:`UpOptions`' ranges).

    Reads nothing, changes nothing.
    """
    problems = UpOptions.value_problems(gpus_per_node, time_scale, restart_s, power_save, suspend_s, resume_s)
    label = UpOptions.label("gpus")
    for gpu_type, _ in gpus:
        if gpu_type not in library.gpu_types:
            problems.append(
                Problem(
                    "bad-option",
                    label,
                    f"the truth library has no GPU type {gpu_type!r} (it has {sorted(library.gpu_types)})",
                )
            )
    nodes: tuple[SlurmNode, ...] = ()
    if not any(p.path == UpOptions.label("gpus_per_node") for p in problems):
        try:
            nodes = nodes_of(gpus, gpus_per_node)
        except ValueError as e:
            problems.append(Problem("bad-option", label, str(e)))
    if not nodes and not problems:
        problems.append(Problem("bad-option", label, "no GPUs: give TYPE:COUNT, e.g. v100:16"))
    if problems:
        raise InputError("wattplan cluster up", problems)
    return nodes


def cluster_up(
    root: Path,
    gpus: Sequence[tuple[str, int]],
    gpus_per_node: int,
    library: ProfileLibrary,
    truth: Path | None,
    time_scale: float,
    restart_s: float = RESTART_S,
    log: Callable[[str], None] = print,
    power_save: bool = False,
    suspend_s: float = SUSPEND_S,
    resume_s: float = RESUME_S,
    agent_metrics_port: int | None = None,
    slurm_rootfs: Path | None = None,
) -> dict[str, Any]:
    """Start the cluster under ``root`` (module docstring); its manifest.

    Every option and the folder are checked before anything is touched (InputError); the folder rules are
    :mod:`planner.cluster.owned`'s. ClusterError when a cluster already runs there or the cluster cannot start.
    ``power_save``: Slurm powers idle nodes down after ``suspend_s`` and boots them in ``resume_s`` (emulated s).
    ``slurm_rootfs``: Slurm runs from that root filesystem (:mod:`planner.cluster.slurm_root`); None: the host's.
    """
    root = root.absolute()
    nodes = check_options(gpus, gpus_per_node, library, time_scale, restart_s, power_save, suspend_s, resume_s)
    problems: list[Problem] = []
    longest = max((step_socket_path(ClusterLayout(root).slurm_dir / "spool", n.name) for n in nodes), key=len)
    if len(longest.encode()) > owned.SOCKET_PATH_MAX:
        problems.append(
            Problem(
                "bad-option",
                "--dir",
                f"{root} is too long: Slurm's step sockets under it ({longest}, {len(longest.encode())} bytes) exceed "
                f"the {owned.SOCKET_PATH_MAX} a Unix socket allows and every job would fail to launch; "
                "choose a shorter path",
            )
        )
    if slurm_rootfs is not None:
        found = slurm_root.rootfs_problems(slurm_rootfs)
        inside = slurm_rootfs.resolve().is_relative_to(root.resolve()) or root.resolve().is_relative_to(
            slurm_rootfs.resolve()
        )
        if inside and not found:  # the cluster's folder is emptied on every up: a root inside it could go
            found = [f"{slurm_rootfs} and the cluster's folder {root} must not lie one inside the other"]
        problems += [Problem("bad-option", UpOptions.label("slurm_root"), text) for text in found]
    if problems:
        raise InputError("wattplan cluster up", problems)
    folder = owned.claim(root)
    layout = ClusterLayout(root)
    if not folder.create and layout.manifest.exists():
        try:
            running = _alive(_processes(layout, layout.read_manifest()))
        except (OSError, ValueError, KeyError, TypeError):
            running = []
        if running:
            raise ClusterError(
                f"{root} already runs a cluster ({', '.join(running)}): wattplan cluster down --dir {root}"
            )
    if not folder.create and (holder := owned.agent_using(root)):
        raise ClusterError(
            f"a wattplan agent ({holder}) still runs on {root / 'agent.db'}, which a new cluster replaces: "
            "stop it first"
        )
    owned.prepare(folder)  # a new Slurm numbers jobs from 1 again: the old state (agent.db) goes too
    for path in (layout.settings_dir, layout.node_dir, layout.emu_dir, layout.work_dir, layout.log_dir):
        path.mkdir(parents=True, exist_ok=True)
    if note := owned.searchable_note(root):
        log(note)
    env = _write_bin(layout)
    saving: PowerSave | None = None
    if power_save:
        saving = _write_power_bin(layout, env, PowerSave.real_times(time_scale, suspend_s, resume_s))
        layout.power_dir.mkdir(parents=True, exist_ok=True)
    (exporter_port,) = free_ports(1)
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "time_scale": time_scale,
        "t0_unix": time.time(),
        "gpus_per_node": gpus_per_node,
        "restart_s": restart_s,
        "truth": None if truth is None else str(truth.resolve()),
        "nodes": [
            {"name": n.name, "gpu_type": n.gpu_type, "gpus": n.gpus, **gpu_limits(library, n.gpu_type)} for n in nodes
        ],
        "power_save": None
        if saving is None
        else {
            "suspend_s": suspend_s,
            "resume_s": resume_s,
            "slurm_suspend_time_s": saving.suspend_time_s,
            "slurm_suspend_timeout_s": saving.suspend_timeout_s,
            "slurm_resume_timeout_s": saving.resume_timeout_s,
        },
        "exporter_port": exporter_port,
        "slurm_conf": str(layout.slurm_conf),
        "settings_dir": str(layout.settings_dir),
        "idle_marker": str(layout.submit_dir / "done"),
        "slurm_root": None if slurm_rootfs is None else str(slurm_rootfs.resolve()),
        "slurm_bin": None,
        "processes": {},
    }
    write_json_atomic(layout.manifest, manifest)
    procs: dict[str, dict[str, Any]] = manifest["processes"]
    try:
        if slurm_rootfs is not None:
            log(f"entering {slurm_rootfs.resolve()} (Slurm from another root filesystem)")
            holder_pid = slurm_root.start_holder(slurm_rootfs, root, layout.log_dir / "slurm-root.log")
            procs["slurm-root"] = _started(holder_pid, slurm_root.HOLDER_MATCH)
            slurm_root.write_wrappers(root / slurm_root.BIN_DIR, slurm_rootfs, holder_pid)
            manifest["slurm_bin"] = str(root / slurm_root.BIN_DIR)
            write_json_atomic(layout.manifest, manifest)
    except slurm_root.SlurmRootError as e:
        write_json_atomic(layout.manifest, manifest)
        cluster_down(root, log=lambda _m: None)
        raise ClusterError(str(e)) from None
    slurm = SlurmCluster(
        layout.slurm_dir,
        nodes,
        extra_conf=(
            f"Prolog={layout.bin_dir / 'prolog'}",
            f"Epilog={layout.bin_dir / 'epilog'}",
            f"TaskProlog={layout.bin_dir / 'task_prolog'}",
            "PrologFlags=Alloc",
            "JobRequeue=1",
        ),
        power_save=saving,
        path=slurm_env(manifest)["PATH"] if manifest["slurm_bin"] else None,
    )
    try:
        log(f"starting Slurm: {len(nodes)} nodes ({', '.join(f'{t}:{c}' for t, c in gpus)})")
        slurm.start()
        for name, pid in slurm.pids().items():
            procs[name] = _started(pid, name.split("-")[0])
        write_json_atomic(layout.manifest, manifest)
        log(f"starting the GPU emulator on 127.0.0.1:{exporter_port}")
        argv = [
            sys.executable,
            "-m",
            "wattplan.planner.cluster.emulator",
            "--dir",
            str(root),
            "--port",
            str(exporter_port),
        ]
        if truth is not None:
            argv += ["--truth", str(truth.resolve())]
        procs["emulator"] = _started(
            _spawn(layout, "emulator", argv, os.environ.copy()), "wattplan.planner.cluster.emulator"
        )
        write_json_atomic(layout.manifest, manifest)
        _wait_http(f"http://127.0.0.1:{exporter_port}/healthz", 20.0, layout.log_dir / "emulator.log")
        for n in nodes:
            node_env = {**os.environ, **env, "SLURMD_NODENAME": n.name}
            pid = _spawn(
                layout,
                f"node-agent-{n.name}",
                [str(layout.bin_dir / "apply_settings"), "--node", n.name, "--every", f"{NODE_AGENT_EVERY_S:g}"],
                node_env,
            )
            procs[f"node-agent-{n.name}"] = _started(pid, "apply_settings")
        write_json_atomic(layout.manifest, manifest)
        log("starting Prometheus")
        prom = prometheus_server.start(layout, exporter_port, agent_port=agent_metrics_port)
        procs["prometheus"] = _started(prom.pid, "prometheus")
        manifest["prometheus_url"] = prom.url
    except Exception:
        write_json_atomic(layout.manifest, manifest)
        cluster_down(root, log=lambda _m: None)
        raise
    manifest["t0_unix"] = time.time()
    write_json_atomic(layout.manifest, manifest)
    return manifest


def _spawn(layout: ClusterLayout, name: str, argv: Sequence[str], env: dict[str, str]) -> int:
    with open(layout.log_dir / f"{name}.log", "ab") as out:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return proc.pid


def _wait_http(url: str, timeout_s: float, log_file: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1.0) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else "(no log)"
    raise ClusterError(f"{url} did not answer within {timeout_s:g} s; {log_file}:\n{tail}")


def cluster_down(root: Path, log: Callable[[str], None] = print) -> list[str]:
    """Stop what ``up`` started under ``root`` (module docstring); the names stopped."""
    layout = ClusterLayout(root)
    try:
        manifest = layout.read_manifest()
    except FileNotFoundError:
        raise ClusterError(f"{root}: no cluster.json here; nothing was started by wattplan cluster up") from None
    except json.JSONDecodeError as e:
        raise ClusterError(f"{layout.manifest}: not JSON ({e})") from None
    pid_file = layout.submit_dir / "submitter.pid"
    if pid_file.exists():
        text = pid_file.read_text().strip()
        if text.isdigit() and int(text) > 1:
            stop_pid(int(text), "wattplan.planner.cluster.submit")
    procs: dict[str, dict[str, Any]] = manifest.get("processes", {})
    running = _alive(procs)
    if "slurmctld" in running:
        left = SlurmCluster(
            layout.slurm_dir,
            [SlurmNode(n["name"], n["gpu_type"], n["gpus"]) for n in manifest["nodes"]],
            path=slurm_env(manifest).get("PATH"),
        ).cancel_all(timeout_s=30.0)
        if left:
            log(f"warning: jobs {', '.join(left)} did not end within 30 s of scancel; their slurmd are stopped now")
    # The power programs' boot helpers and slurmds are stopped under each node's lock, never half-way through a
    # boot; once more after slurmctld stopped, for what a boot started meanwhile (planner.cluster.power).
    nodes = [str(n["name"]) for n in manifest.get("nodes", []) if isinstance(n, dict) and "name" in n]
    stopped = power.stop_recorded(layout, nodes)
    for name in running:
        p = procs[name]
        if stop_pid(int(p["pid"]), str(p["match"]), started=None if p.get("started") is None else int(p["started"])):
            stopped.append(name)
    stopped += power.stop_recorded(layout, nodes)
    log(f"stopped {len(stopped)} processes" + (f": {', '.join(stopped)}" if stopped else ""))
    return stopped
