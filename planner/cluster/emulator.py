"""The emulated GPUs: a daemon that turns the cluster folder into job speeds, GPU powers and DCGM-style metrics.

``python -m wattplan.planner.cluster.emulator --dir DIR --port P [--truth LIB] [--tick-s 0.2]``. Every tick (real
seconds) it reads the folder (:mod:`planner.cluster.layout`):

* the manifest ``cluster.json``: at start ``nodes`` (``[{"name", "gpu_type", "gpus"}]``, optional
  ``default_limit_w``), optional ``truth`` (a library path, relative to the folder; absent or null: the shipped
  library; ``--truth`` overrides it) and optional ``node_power_w`` (the cluster's ``--node-power-w``); every
  tick (when the file changed) ``t0_unix`` and ``time_scale``, since ``cluster up`` sets ``t0_unix`` again
  once everything runs;
* DCGM's job mapping ``node/NODE/jobmap/INDEX`` (job ids on the GPU, one a line), the GPU states
  ``emu/gpus/NODE/INDEX.json`` (``{"power_limit_w": W or null, "sm_clock_lock_mhz": MHz, [MIN, MAX] (read as
  MAX, the clock a busy GPU runs at) or null}``; no file: the defaults) and the trainers' registrations
  ``emu/jobs/JOBID.json`` and progress ``emu/progress/JOBID`` (:mod:`planner.cluster.trainer`). A job is on the GPUs
  when it is registered (its type and phase come from there) and mapped; a mapped job no trainer registered is not
  running yet (or any more) and is ignored; a registered job mapped nowhere is a fault (speed 0). So when one job
  of a pair ends, its partner runs alone from the next tick on (the replay keeps the pair's rates to the round's
  end: the emulator is the physical side of that assumption).

It evaluates them with :mod:`planner.control.truth_model` (the replay's arithmetic) and writes
``emu/rates.json`` ``{"emulated_s", "jobs": {JOBID: steps per emulated s}, "reasons": {JOBID: why 0}}``.

Energy is integrated in **emulated** time: between two ticks ``dt = (unix_now - unix_last) * time_scale``
emulated seconds (the emulated clock's advance; a new ``t0_unix`` does not make it jump), each GPU's counter
gains ``P * dt * 1000`` mJ at the power ``P`` (W) of the earlier tick, each node's ``Pnode * dt`` J. ``Pnode`` is the
node's draw besides its GPUs (the replay's ``node_power_w``): the truth library's ``gpu_types[].node_power_w`` when
present, else the manifest's ``node_power_w``, else :data:`planner.contracts.defaults.NODE_POWER_W`, as
:func:`planner.sim.round_instance.cluster_context` chooses. A node is powered unless Slurm's power saving (``cluster up
--power-save``, :mod:`planner.cluster.power`) says otherwise in ``emu/power/NODE``, read every tick: ``off``, the node
and its GPUs draw 0 W (their counters stand still, a job mapped there runs at speed 0); ``resuming``, a booting
server, they draw ``Pnode`` and the GPUs' idle power and no job computes; ``off`` since less than a server's
shutdown (the file's ``since=`` line, :data:`~planner.agent.node_power.SHUTDOWN_S` emulated seconds), a server
shutting down (``stopping``), the same as booting, as the replay's simulated Slurm charges it. Counters go to
``emu/counters.json`` every :data:`PERSIST_S` real seconds and on SIGTERM; a restarted emulator continues them (the
time it was down is not counted), so they never go down.

``GET /metrics`` on 127.0.0.1:P is Prometheus text in dcgm-exporter's names, per GPU with labels ``gpu="IDX"``,
``UUID="GPU-<uuid5 of node and index>"``, ``device="nvidiaIDX"``, ``modelName`` (the GPU type's name),
``Hostname="NODE"`` and, when jobs are mapped to it, ``hpc_job`` (several jobs: their ids comma-joined, in
numeric order):

* ``DCGM_FI_DEV_POWER_USAGE`` (gauge, W), ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (counter, emulated mJ),
  ``DCGM_FI_DEV_GPU_UTIL`` (gauge, %: 100 while a job computes on it, else 0), ``DCGM_FI_PROF_SM_ACTIVE``
  (gauge, 0..1, :mod:`planner.control.truth_model`), ``DCGM_FI_DEV_POWER_MGMT_LIMIT`` (gauge, W: the set limit,
  else the node's ``default_limit_w`` from the manifest, else the type's largest power-limit setting or the
  library's ``top_limit_w``; absent when none is known);
* ``wattplan_job_steps_done`` and ``wattplan_job_steps_total`` (gauges, labels ``hpc_job``, ``job_type``) of
  the registered jobs; ``wattplan_node_power_watts`` and ``wattplan_node_energy_joules_total`` (emulated J,
  label ``Hostname``) of the node besides its GPUs (0 W while it is off); ``wattplan_node_powered`` (gauge,
  label ``Hostname``: 1 while the node is on or booting, 0 while it is off); ``wattplan_emulated_time_seconds``.

``GET /healthz`` answers ``ok``. SIGTERM or SIGINT: persist the counters, exit 0. The log (stderr) has one line
per job start, stop, change of configuration and fault. Unchanged files are not reread (their inode, size and
modification time are remembered), and the truth library is indexed once.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any, TypeGuard

from wattplan.planner.agent.node_power import SHUTDOWN_S
from wattplan.planner.cluster.layout import (
    POWER_OFF,
    POWER_ON,
    POWER_STOPPING,
    Clock,
    ClusterLayout,
    parse_power_state,
    power_off_since,
    write_json_atomic,
)
from wattplan.planner.cluster.trainer import progress_path
from wattplan.planner.contracts.defaults import NODE_POWER_W
from wattplan.planner.control.truth_model import (
    GpuId,
    GpuPower,
    GpuState,
    JobRate,
    Phase,
    RunningJob,
    Snapshot,
    default_power_limit_w,
    evaluate,
    id_order,
)
from wattplan.planner.profile_library.index import LibraryIndex, index_library
from wattplan.planner.profile_library.library import load_profile_library

TICK_S = 0.2
"""Real seconds between two ticks."""
PERSIST_S = 5.0
"""Real seconds between two writes of ``emu/counters.json``."""
RECENT_S = 2.0
"""A file modified less than this many seconds ago is reread every tick (its timestamp may not show a rewrite)."""


@dataclass(frozen=True, slots=True)
class Node:
    """A node of the manifest: its name, GPU type and GPU count."""

    name: str
    gpu_type: str
    gpus: int


class FileCache:
    """File texts, reread only when a file's inode, size or modification time changed (or it changed lately)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, int, int], str]] = {}
        self._touched: set[str] = set()

    def read(self, path: str, now_unix: float) -> str | None:
        """The text of ``path``; None when it does not exist or cannot be read."""
        self._touched.add(path)
        try:
            st = os.stat(path)
        except OSError:
            self._seen.pop(path, None)
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        hit = self._seen.get(path)
        if hit is not None and hit[0] == key and now_unix - st.st_mtime_ns / 1e9 > RECENT_S:
            return hit[1]
        try:
            with open(path) as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            self._seen.pop(path, None)
            return None
        self._seen[path] = (key, text)
        return text

    def sweep(self) -> None:
        """Forget the files not read since the last sweep (files that went away)."""
        for p in [p for p in self._seen if p not in self._touched]:
            del self._seen[p]
        self._touched = set()


def _number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def gpu_uuid(node: str, index: int) -> str:
    """A stable UUID for GPU ``index`` of ``node``: ``GPU-`` and the UUID5 of ``wattplan-emu/NODE/INDEX``."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'wattplan-emu/{node}/{index}')}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()) + "}"


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else ("+Inf" if x > 0 else "-Inf" if x < 0 else "NaN")


@dataclass
class Registration:
    """A trainer's registration (``emu/jobs/JOBID.json``) and its progress."""

    job_id: str
    job_type: str
    phase: Phase
    total_steps: float
    steps_done: float = 0.0


@dataclass
class View:
    """What the last tick saw and computed; ``/metrics`` renders it."""

    emulated_s: float = 0.0
    snapshot: Snapshot = field(default_factory=lambda: Snapshot({}, {}))
    limits_w: dict[GpuId, float | None] = field(default_factory=dict)
    energy_mj: dict[GpuId, float] = field(default_factory=dict)
    node_j: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, Registration] = field(default_factory=dict)
    node_power_w: dict[str, float] = field(default_factory=dict)
    """Each node's draw besides its GPUs (W): its ``Pnode``, 0 while it is off."""
    power_states: dict[str, str] = field(default_factory=dict)
    """Each node's power state (``on``, ``off``, ``resuming``, ``stopping``)."""


_NOT_ON_WHY = {POWER_OFF: "powered off", POWER_STOPPING: "shutting down"}
"""Why a job on a node that is not on computes nothing, by the node's state (``resuming``: booting)."""


class Emulator:
    """The emulated GPUs of one cluster folder (module docstring); :meth:`tick` is one step of the daemon."""

    def __init__(self, layout: ClusterLayout, truth: Path | None = None) -> None:
        self.layout = layout
        manifest = layout.read_manifest()
        self.clock = Clock(float(manifest["t0_unix"]), float(manifest["time_scale"]))
        self.nodes = tuple(Node(str(n["name"]), str(n["gpu_type"]), int(n["gpus"])) for n in manifest["nodes"])
        self.default_limit_w = {
            str(n["name"]): float(n["default_limit_w"]) for n in manifest["nodes"] if _number(n.get("default_limit_w"))
        }
        if truth is None and manifest.get("truth"):
            truth = layout.root / str(manifest["truth"])
        self.index: LibraryIndex = index_library(load_profile_library(truth))
        cluster_node_w = float(manifest.get("node_power_w", NODE_POWER_W))
        self.node_power_w: dict[str, float] = {}
        for node in self.nodes:
            info = self.index.gpu_types.get(node.gpu_type)
            own = info.node_power_w if info else None
            self.node_power_w[node.name] = cluster_node_w if own is None else own
        self.gpu_ids: tuple[GpuId, ...] = tuple((n.name, i) for n in self.nodes for i in range(n.gpus))
        self.gpu_type: dict[GpuId, str] = {(n.name, i): n.gpu_type for n in self.nodes for i in range(n.gpus)}
        self.idle_w: dict[GpuId, float] = {
            g: info.idle_power_w if (info := self.index.gpu_types.get(t)) else 0.0 for g, t in self.gpu_type.items()
        }
        self.cache = FileCache()
        self.jobmap_paths = {g: str(layout.jobmap_file(*g)) for g in self.gpu_ids}
        self.state_paths = {g: str(layout.gpu_state_file(*g)) for g in self.gpu_ids}
        self.power_paths = {n.name: str(layout.power_file(n.name)) for n in self.nodes}
        self.jobs_dir = str(layout.emu_dir / "jobs")
        self.manifest_path = str(layout.manifest)
        self.progress_dir = str(progress_path(layout, "x").parent)
        self.counters_file = layout.emu_dir / "counters.json"
        self.energy_mj: dict[GpuId, float] = dict.fromkeys(self.gpu_ids, 0.0)
        self.node_j: dict[str, float] = {n.name: 0.0 for n in self.nodes}
        self._load_counters()
        self.power_w: dict[GpuId, float] = {}
        self.node_draw_w: dict[str, float] = {}
        self.last_unix: float | None = None
        self.last_emulated_s: float | None = None
        self.last_persist_unix = 0.0
        self.view = View()
        self._logged: dict[str, tuple[Any, ...]] = {}
        self._power_logged: dict[str, str] = {}

    # -- counters ---------------------------------------------------------------------------------------------
    def _load_counters(self) -> None:
        try:
            doc = json.loads(self.counters_file.read_text())
        except FileNotFoundError:
            return
        except ValueError as e:
            self._log(f"ignoring unreadable {self.counters_file}: {e}")
            return
        for key, mj in doc.get("gpus_mj", {}).items():
            node, _, idx = key.rpartition("/")
            if (node, int(idx)) in self.energy_mj:
                self.energy_mj[(node, int(idx))] = float(mj)
        for node, j in doc.get("nodes_j", {}).items():
            if node in self.node_j:
                self.node_j[node] = float(j)

    def persist(self) -> None:
        """Write the counters to ``emu/counters.json``."""
        doc = {
            "emulated_s": self.last_emulated_s,
            "gpus_mj": {f"{n}/{i}": v for (n, i), v in self.energy_mj.items()},
            "nodes_j": dict(self.node_j),
        }
        write_json_atomic(self.counters_file, doc)

    # -- reading the folder -----------------------------------------------------------------------------------
    def _json(self, path: str, now_unix: float) -> Any:
        text = self.cache.read(path, now_unix)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def _gpu_state(self, gpu: GpuId, now_unix: float) -> GpuState:
        doc = self._json(self.state_paths[gpu], now_unix)
        limit = lock = None
        if isinstance(doc, dict):
            lw, lk = doc.get("power_limit_w"), doc.get("sm_clock_lock_mhz")
            limit = float(lw) if _number(lw) else None
            if isinstance(lk, list) and lk and all(_number(x) for x in lk):
                lock = float(max(lk))
            elif _number(lk):
                lock = float(lk)
        return GpuState(self.gpu_type[gpu], limit, lock)

    def _registrations(self, now_unix: float) -> dict[str, Registration]:
        regs: dict[str, Registration] = {}
        try:
            entries = list(os.scandir(self.jobs_dir))
        except OSError:
            return regs
        for e in entries:
            if not e.name.endswith(".json") or e.name.startswith("."):
                continue
            doc = self._json(e.path, now_unix)
            if not isinstance(doc, dict):
                continue
            try:
                job_id = str(doc["job_id"])
                phase: Phase = "loading" if doc.get("phase") == "loading" else "running"
                reg = Registration(job_id, str(doc["job_type"]), phase, float(doc["total_steps"]))
            except (KeyError, TypeError, ValueError):
                continue
            text = self.cache.read(os.path.join(self.progress_dir, job_id), now_unix)
            try:
                reg.steps_done = float(text) if text else 0.0
            except ValueError:
                pass
            regs[job_id] = reg
        return regs

    def _mapping(self, now_unix: float) -> dict[str, list[GpuId]]:
        held: dict[str, list[GpuId]] = {}
        for gpu in self.gpu_ids:
            text = self.cache.read(self.jobmap_paths[gpu], now_unix)
            for line in (text or "").split():
                held.setdefault(line.strip(), []).append(gpu)
        return held

    # -- one tick ---------------------------------------------------------------------------------------------
    def tick(self, now_unix: float | None = None) -> View:
        """Integrate the energy since the last tick, read the folder, recompute, write ``emu/rates.json``."""
        now_unix = time.time() if now_unix is None else now_unix
        self._reread_clock(now_unix)
        emulated_s = self.clock.at(now_unix)
        if self.last_unix is not None:
            dt = max(0.0, now_unix - self.last_unix) * self.clock.time_scale
            for gpu, p in self.power_w.items():
                self.energy_mj[gpu] += p * dt * 1000.0
            for node, p in self.node_draw_w.items():
                self.node_j[node] += p * dt
        self.last_unix, self.last_emulated_s = now_unix, emulated_s

        states = {gpu: self._gpu_state(gpu, now_unix) for gpu in self.gpu_ids}
        regs = self._registrations(now_unix)
        held = self._mapping(now_unix)
        powered = {
            n.name: self._power_state(self.cache.read(self.power_paths[n.name], now_unix), now_unix) for n in self.nodes
        }
        jobs = [RunningJob(r.job_id, r.job_type, r.phase, tuple(held.get(r.job_id, ()))) for r in regs.values()]
        self.cache.sweep()
        snap = self._powered(evaluate(self.index, jobs, states), powered)
        self.power_w = {gpu: gp.power_w for gpu, gp in snap.gpus.items()}
        self.node_draw_w = {n: 0.0 if powered[n] == POWER_OFF else p for n, p in self.node_power_w.items()}
        rates = {
            "emulated_s": emulated_s,
            "jobs": {j: r.steps_per_s for j, r in snap.jobs.items()},
            "reasons": {j: r.reason for j, r in snap.jobs.items() if r.reason},
        }
        write_json_atomic(self.layout.rates_file, rates, durable=False)  # rewritten every tick
        limits: dict[GpuId, float | None] = {}
        for gpu, st in states.items():
            info = self.index.gpu_types.get(st.gpu_type)
            default = self.default_limit_w.get(gpu[0]) or (default_power_limit_w(info) if info else None)
            limits[gpu] = st.power_limit_w if st.power_limit_w is not None else default
        self._log_changes(snap.jobs, regs)
        self._log_power(powered)
        self.view = View(
            emulated_s, snap, limits, dict(self.energy_mj), dict(self.node_j), regs, dict(self.node_draw_w), powered
        )
        if now_unix - self.last_persist_unix >= PERSIST_S:
            self.persist()
            self.last_persist_unix = now_unix
        return self.view

    def _power_state(self, text: str | None, now_unix: float) -> str:
        """A node's power state from its file's ``text``: ``off`` since under a shutdown reads ``stopping``."""
        state = parse_power_state(text)
        since = power_off_since(text) if state == POWER_OFF else None
        if since is not None and (now_unix - since) * self.clock.time_scale < SHUTDOWN_S:
            return POWER_STOPPING
        return state

    def _powered(self, snap: Snapshot, powered: Mapping[str, str]) -> Snapshot:
        """``snap`` with the GPUs of nodes off (0 W), booting or shutting down (idle power), their jobs stopped."""
        if all(state == POWER_ON for state in powered.values()):
            return snap
        gpus, jobs = dict(snap.gpus), dict(snap.jobs)
        for gpu, gp in snap.gpus.items():
            state = powered.get(gpu[0], POWER_ON)
            if state == POWER_ON:
                continue
            gpus[gpu] = GpuPower(0.0 if state == POWER_OFF else self.idle_w[gpu], gp.jobs, False, 0.0)
            why = f"node {gpu[0]} is {_NOT_ON_WHY.get(state, 'booting')}"
            for job_id in gp.jobs:
                if job_id in jobs and jobs[job_id].reason is None:
                    jobs[job_id] = replace(jobs[job_id], steps_per_s=0.0, reason=why, computing=False)
        return Snapshot(jobs, gpus)

    def _log_power(self, powered: Mapping[str, str]) -> None:
        """One log line per change of a node's power state (the first tick logs the nodes that are not on)."""
        for node, state in powered.items():
            if self._power_logged.get(node, POWER_ON) != state:
                self._power_logged[node] = state
                self._log(f"node {node} now {state}")

    def _reread_clock(self, now_unix: float) -> None:
        """Follow the manifest's clock: ``cluster up`` sets ``t0_unix`` again once everything runs."""
        doc = self._json(self.manifest_path, now_unix)
        if isinstance(doc, dict) and _number(doc.get("t0_unix")) and _number(doc.get("time_scale")):
            clock = Clock(float(doc["t0_unix"]), float(doc["time_scale"]))
            if clock != self.clock and clock.time_scale > 0:
                self._log(f"clock now t0_unix {clock.t0_unix:.3f}, time scale {clock.time_scale:g}")
                self.clock = clock

    def _log(self, text: str) -> None:
        print(f"emulator: {text}", file=sys.stderr, flush=True)

    def _log_changes(self, rates: Mapping[str, JobRate], regs: dict[str, Registration]) -> None:
        for job_id in sorted(set(self._logged) - set(rates), key=id_order):
            del self._logged[job_id]
            self._log(f"job {job_id} stopped")
        for job_id in sorted(rates, key=id_order):
            r = rates[job_id]
            state = (r.reason, r.gpu_type, r.gpus, r.setting, r.partner, regs[job_id].phase)
            before = self._logged.get(job_id)
            if before == state:
                continue
            self._logged[job_id] = state
            if r.reason:
                self._log(f"job {job_id} ({regs[job_id].job_type}) fault: {r.reason}")
                continue
            what = "started" if before is None else "now"
            shared = f" with {r.partner} (rho {r.rho:.3f})" if r.partner else ""
            self._log(
                f"job {job_id} ({regs[job_id].job_type}) {what} {regs[job_id].phase} on {r.gpus} {r.gpu_type} "
                f"at {r.setting}{shared}: {r.steps_per_s:.4g} steps/s"
            )

    # -- metrics ----------------------------------------------------------------------------------------------
    def metrics_text(self) -> str:
        """The last tick's view in Prometheus text exposition format (module docstring)."""
        return "".join(self._metric_lines(self.view))

    def _metric_lines(self, v: View) -> Iterator[str]:
        base: dict[GpuId, dict[str, str]] = {}
        for gpu in self.gpu_ids:
            node, idx = gpu
            labels = {
                "gpu": str(idx),
                "UUID": gpu_uuid(node, idx),
                "device": f"nvidia{idx}",
                "modelName": self.gpu_type[gpu],
                "Hostname": node,
            }
            gp = v.snapshot.gpus.get(gpu)
            if gp is not None and gp.jobs:
                labels["hpc_job"] = ",".join(gp.jobs)
            base[gpu] = labels

        def family(name: str, kind: str, help_text: str, rows: list[tuple[dict[str, str], float]]) -> Iterator[str]:
            yield f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"
            for labels, value in rows:
                yield f"{name}{_labels(labels)} {_num(value)}\n"

        gpus = v.snapshot.gpus
        yield from family(
            "DCGM_FI_DEV_POWER_USAGE",
            "gauge",
            "Power draw (in W).",
            [(base[g], gpus[g].power_w if g in gpus else self.idle_w[g]) for g in self.gpu_ids],
        )
        yield from family(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ, emulated time).",
            [(base[g], v.energy_mj.get(g, self.energy_mj[g])) for g in self.gpu_ids],
        )
        yield from family(
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %).",
            [(base[g], 100.0 if g in gpus and gpus[g].computing else 0.0) for g in self.gpu_ids],
        )
        yield from family(
            "DCGM_FI_PROF_SM_ACTIVE",
            "gauge",
            "Ratio of cycles an SM has at least 1 warp assigned (0..1).",
            [(base[g], gpus[g].sm_active if g in gpus else 0.0) for g in self.gpu_ids],
        )
        limit_rows = [(base[g], lim) for g in self.gpu_ids if (lim := v.limits_w.get(g)) is not None]
        yield from family("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).", limit_rows)
        jobs = sorted(v.jobs.values(), key=lambda r: id_order(r.job_id))
        yield from family(
            "wattplan_job_steps_done",
            "gauge",
            "Steps a stand-in trainer has done (its checkpoint).",
            [({"hpc_job": r.job_id, "job_type": r.job_type}, r.steps_done) for r in jobs],
        )
        yield from family(
            "wattplan_job_steps_total",
            "gauge",
            "Total steps of a stand-in trainer's job.",
            [({"hpc_job": r.job_id, "job_type": r.job_type}, r.total_steps) for r in jobs],
        )
        yield from family(
            "wattplan_node_power_watts",
            "gauge",
            "A node's power besides its GPUs (W).",
            [({"Hostname": n.name}, v.node_power_w.get(n.name, self.node_power_w[n.name])) for n in self.nodes],
        )
        yield from family(
            "wattplan_node_energy_joules_total",
            "counter",
            "A node's energy besides its GPUs (J, emulated time).",
            [({"Hostname": n.name}, v.node_j.get(n.name, 0.0)) for n in self.nodes],
        )
        yield from family(
            "wattplan_node_powered",
            "gauge",
            "1 while a node is on, booting or shutting down, 0 while Slurm's power saving has it off.",
            [({"Hostname": n.name}, 0.0 if v.power_states.get(n.name) == POWER_OFF else 1.0) for n in self.nodes],
        )
        yield from family("wattplan_emulated_time_seconds", "gauge", "The emulated clock (s).", [({}, v.emulated_s)])


def _handler(emulator: Emulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            if self.path.split("?")[0] == "/metrics":
                self._send(200, emulator.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            elif self.path == "/healthz":
                self._send(200, "ok\n", "text/plain; charset=utf-8")
            else:
                self._send(404, "not found\n", "text/plain; charset=utf-8")

        def _send(self, code: int, text: str, content_type: str) -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
            pass

    return Handler


def serve(emulator: Emulator, port: int) -> ThreadingHTTPServer:
    """Serve ``/metrics`` and ``/healthz`` on 127.0.0.1:``port`` in a daemon thread (port 0: any free port)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(emulator))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def run(emulator: Emulator, port: int, tick_s: float, stop: threading.Event) -> None:
    """Tick every ``tick_s`` real seconds until ``stop`` is set, serving the metrics; persist the counters then."""
    emulator.tick()
    server = serve(emulator, port)
    emulator._log(f"{len(emulator.gpu_ids)} GPUs on {len(emulator.nodes)} nodes, metrics on 127.0.0.1:{port}")
    try:
        next_at = time.monotonic()
        while True:
            next_at += tick_s
            if stop.wait(max(0.0, next_at - time.monotonic())):
                break
            if time.monotonic() - next_at > tick_s:
                next_at = time.monotonic()
            try:
                emulator.tick()
            except Exception as e:  # noqa: BLE001 (one bad tick must not stop the cluster's GPUs)
                emulator._log(f"tick failed: {type(e).__name__}: {e}")
    finally:
        server.shutdown()
        emulator.persist()
        emulator._log("stopped; counters saved")


def main(argv: list[str] | None = None) -> int:
    """Run the emulator daemon (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m wattplan.planner.cluster.emulator", description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, type=Path, help="the emulated cluster's folder")
    p.add_argument("--port", required=True, type=int, help="the metrics port on 127.0.0.1")
    p.add_argument("--truth", type=Path, default=None, help="the truth profile library (default: the manifest's)")
    p.add_argument("--tick-s", type=float, default=TICK_S, help="real seconds between two ticks")
    args = p.parse_args(argv)
    if args.tick_s <= 0:
        p.error("--tick-s must be > 0")
    emulator = Emulator(ClusterLayout(args.dir), args.truth)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    run(emulator, args.port, args.tick_s, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
