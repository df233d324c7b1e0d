"""``wattplan cluster up`` and ``down``: start and stop an emulated GPU cluster (docs/design.md §11.7).

``up`` starts, in order, each in a session of its own so that they outlive the command: munged, slurmctld and
one slurmd per node (:mod:`planner.cluster.slurm_daemons`, with the node scripts of
``planner/agent/node_files`` as ``Prolog``, ``Epilog`` and ``TaskProlog``, ``PrologFlags=Alloc``), the GPU
emulator and its DCGM-compatible endpoint (:mod:`planner.cluster.emulator`), one node agent per node
(``apply_settings.sh --every``) and a real Prometheus scraping the endpoint every second
(:mod:`planner.cluster.prometheus_server`). Every PID goes to the manifest (``cluster.json``) with the program
it runs; ``down`` stops exactly those (a PID now running another program is left alone), last started first,
after cancelling the cluster's jobs and the submitter.

The node scripts find ``nvidia-smi`` (the stand-in, :mod:`planner.cluster.nvidia_smi`) and their folders
through small wrappers in ``bin/``: the same scripts an operator installs on a real cluster run here unchanged.
The emulated clock starts (``t0_unix``) once everything is up.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import wattplan.planner.cluster.prometheus_server as prometheus_server
from wattplan.planner.cluster.layout import MANIFEST_FORMAT, ClusterLayout, write_json_atomic
from wattplan.planner.cluster.processes import alive, stop_pid
from wattplan.planner.cluster.slurm_daemons import SlurmCluster, SlurmNode, free_ports, nodes_of
from wattplan.planner.contracts.defaults import RESTART_S
from wattplan.planner.profile_library.library import ProfileLibrary

NODE_AGENT_EVERY_S = 1.0
"""How often each node agent re-applies the settings of running jobs (real s)."""


class ClusterError(ValueError):
    """The cluster cannot be started or stopped; the message says why and what to do."""


def node_files_dir() -> Path:
    """The shipped node scripts (``planner/agent/node_files``)."""
    return Path(str(importlib.resources.files("wattplan.planner.agent") / "node_files"))


def _alive(manifest: dict[str, Any]) -> list[str]:
    """Names of the manifest's processes still running the program they were started with."""
    out = []
    for name, p in manifest.get("processes", {}).items():
        if alive(int(p["pid"]), str(p["match"])):
            out.append(name)
    return out


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


def _wrapper(path: Path, env: dict[str, str], argv: Sequence[str]) -> None:
    lines = ["#!/bin/sh", "# written by wattplan cluster up"]
    lines += [f"export {k}='{v}'" for k, v in env.items()]
    lines.append("exec " + " ".join(f"'{a}'" for a in argv) + ' "$@"')
    path.write_text("\n".join(lines) + "\n")
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
    scripts = node_files_dir()
    for name in ("prolog", "epilog", "task_prolog", "apply_settings"):
        _wrapper(layout.bin_dir / name, env, ["/bin/bash", str(scripts / f"{name}.sh")])
    return env


def cluster_up(
    root: Path,
    gpus: Sequence[tuple[str, int]],
    gpus_per_node: int,
    library: ProfileLibrary,
    truth: Path | None,
    time_scale: float,
    restart_s: float = RESTART_S,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Start the cluster under ``root`` (module docstring); its manifest. ClusterError when it cannot."""
    layout = ClusterLayout(root)
    if layout.manifest.exists():
        alive = _alive(layout.read_manifest())
        if alive:
            raise ClusterError(
                f"{root} already runs a cluster ({', '.join(alive)}): wattplan cluster down --dir {root}"
            )
    for name in ("settings", "node", "emu", "work", "submit", "log", "prometheus", "slurm"):
        shutil.rmtree(root / name, ignore_errors=True)
    for state in root.glob("agent.db*"):  # a new Slurm numbers jobs from 1 again: an old state would mislead
        state.unlink()
    for folder in (layout.settings_dir, layout.node_dir, layout.emu_dir, layout.work_dir, layout.log_dir):
        folder.mkdir(parents=True, exist_ok=True)
    for gpu_type, _ in gpus:
        if gpu_type not in library.gpu_types:
            raise ClusterError(
                f"--gpus {gpu_type}: the truth library has no GPU type {gpu_type!r} "
                f"(it has {sorted(library.gpu_types)})"
            )
    try:
        nodes = nodes_of(gpus, gpus_per_node)
    except ValueError as e:
        raise ClusterError(f"--gpus: {e}") from None
    root.chmod(0o755)
    env = _write_bin(layout)
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
        "exporter_port": exporter_port,
        "slurm_conf": str(layout.slurm_conf),
        "settings_dir": str(layout.settings_dir),
        "idle_marker": str(layout.submit_dir / "done"),
        "processes": {},
    }
    write_json_atomic(layout.manifest, manifest)
    procs: dict[str, dict[str, Any]] = manifest["processes"]
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
    )
    try:
        log(f"starting Slurm: {len(nodes)} nodes ({', '.join(f'{t}:{c}' for t, c in gpus)})")
        slurm.start()
        for name, pid in slurm.pids().items():
            procs[name] = {"pid": pid, "match": name.split("-")[0]}
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
        procs["emulator"] = {
            "pid": _spawn(layout, "emulator", argv, os.environ.copy()),
            "match": "wattplan.planner.cluster.emulator",
        }
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
            procs[f"node-agent-{n.name}"] = {"pid": pid, "match": "apply_settings"}
        write_json_atomic(layout.manifest, manifest)
        log("starting Prometheus")
        prom = prometheus_server.start(layout, exporter_port)
        procs["prometheus"] = {"pid": prom.pid, "match": "prometheus"}
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
        pid = int(pid_file.read_text().strip() or 0)
        if pid:
            stop_pid(pid, "wattplan.planner.cluster.submit")
    procs: dict[str, dict[str, Any]] = manifest.get("processes", {})
    alive = set(_alive(manifest))
    if "slurmctld" in alive:
        SlurmCluster(
            layout.slurm_dir, [SlurmNode(n["name"], n["gpu_type"], n["gpus"]) for n in manifest["nodes"]]
        ).cancel_all()
    stopped = []
    for name in reversed(list(procs)):
        if name in alive:
            stop_pid(int(procs[name]["pid"]), str(procs[name]["match"]))
            stopped.append(name)
    log(f"stopped {len(stopped)} processes" + (f": {', '.join(stopped)}" if stopped else ""))
    return stopped
