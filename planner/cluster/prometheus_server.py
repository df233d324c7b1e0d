"""Start and stop a real Prometheus (Debian's 2.42) that scrapes an emulated cluster's exporter.

:func:`write_config` writes ``prometheus/prometheus.yml``: ``scrape_interval`` and ``evaluation_interval`` of
``scrape_interval_s`` (1 s by default), one scrape job (``dcgm``) with the static target ``127.0.0.1:PORT`` of the
emulator's ``/metrics`` and ``honor_labels: true`` (the exporter's ``Hostname``, ``gpu`` and ``hpc_job`` labels are
kept as written). :func:`start` runs::

    prometheus --config.file=prometheus/prometheus.yml --storage.tsdb.path=prometheus/data
               --web.listen-address=127.0.0.1:PORT --storage.tsdb.retention.time=15d

as a child in its own session (``start_new_session``: a Ctrl-C in the terminal does not reach it), its output
appended to ``log/prometheus.log``, and waits until ``/-/ready`` answers 200; it returns the pid and the URL. It
never leaves a half-started Prometheus behind: on a time-out or an early exit it stops it and raises
:class:`PrometheusStartError` with the log's last lines. :func:`stop` stops one by its pid: SIGTERM, a wait, then
SIGKILL; it first checks (in ``/proc``) that the pid still runs a ``prometheus`` program, so a pid reused by
another program is never signalled.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.cluster.layout import ClusterLayout, write_text_atomic
from wattplan.planner.cluster.processes import alive, stop_pid

PROGRAM = "prometheus"
SCRAPE_JOB = "dcgm"
AGENT_SCRAPE_JOB = "wattplan-agent"
"""The scrape job of the agent's own metrics (``cluster up --agent-metrics-port``)."""
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""The Prometheus processes this process started, kept so :func:`stop` can reap them (no zombie)."""


class PrometheusStartError(RuntimeError):
    """Prometheus did not come up (or could not be stopped); the message carries the reason and the log's tail."""


@dataclass(frozen=True, slots=True)
class PrometheusProcess:
    """A started Prometheus: its pid, port, base URL and log file."""

    pid: int
    port: int
    url: str
    log: Path


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1 (bind port 0, as tests/slurm_cluster.py does)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def config_text(exporter_port: int, scrape_interval_s: float = 1.0, agent_port: int | None = None) -> str:
    """The ``prometheus.yml`` text (module docstring); with ``agent_port``, a second job scrapes the agent."""
    interval = f"{max(1, round(scrape_interval_s * 1000))}ms"
    agent = (
        ""
        if agent_port is None
        else f"  - job_name: {AGENT_SCRAPE_JOB}\n    static_configs:\n      - targets: ['127.0.0.1:{agent_port}']\n"
    )
    return (
        "# Written by wattplan (planner.cluster.prometheus_server): scrapes the GPU emulator's DCGM metrics.\n"
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  evaluation_interval: {interval}\n"
        f"  scrape_timeout: {interval}\n"
        "scrape_configs:\n"
        f"  - job_name: {SCRAPE_JOB}\n"
        "    honor_labels: true\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter_port}']\n"
        f"{agent}"
    )


def write_config(
    layout: ClusterLayout, exporter_port: int, scrape_interval_s: float = 1.0, agent_port: int | None = None
) -> Path:
    """Write ``prometheus/prometheus.yml`` for the emulator on ``exporter_port`` (and the agent's); its path."""
    path = layout.prometheus_dir / "prometheus.yml"
    write_text_atomic(path, config_text(exporter_port, scrape_interval_s, agent_port))
    return path


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file (a note when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        return f"(cannot read {path}: {err.strerror})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=1.0) as answer:
            return bool(answer.status == 200)
    except (OSError, ValueError):
        return False


def start(
    layout: ClusterLayout,
    exporter_port: int,
    port: int | None = None,
    scrape_interval_s: float = 1.0,
    retention: str = "15d",
    timeout_s: float = 30.0,
    program: str = PROGRAM,
    agent_port: int | None = None,
) -> PrometheusProcess:
    """Write the config, start Prometheus on ``127.0.0.1:port`` (None: a free port), wait until it is ready.

    Raises :class:`PrometheusStartError` (with the log's tail) when the program is missing, exits early or is not
    ready within ``timeout_s``; Prometheus is then stopped.
    """
    config = write_config(layout, exporter_port, scrape_interval_s, agent_port)
    data = layout.prometheus_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    layout.log_dir.mkdir(parents=True, exist_ok=True)
    log = layout.log_dir / "prometheus.log"
    port = free_port() if port is None else port
    url = f"http://127.0.0.1:{port}"
    argv = [
        program,
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--storage.tsdb.retention.time={retention}",
    ]
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        except OSError as err:
            raise PrometheusStartError(
                f"cannot run {program}: {err.strerror} (Debian: apt-get install prometheus)"
            ) from None
    _CHILDREN[proc.pid] = proc
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            _CHILDREN.pop(proc.pid, None)
            raise PrometheusStartError(
                f"Prometheus exited with status {proc.returncode} before it was ready; {log}:\n{log_tail(log)}"
            )
        if _ready(url):
            return PrometheusProcess(proc.pid, port, url, log)
        if time.monotonic() > deadline:
            stop(proc.pid)
            raise PrometheusStartError(f"Prometheus was not ready within {timeout_s:g} s; {log}:\n{log_tail(log)}")
        time.sleep(0.1)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not); reaps it when this process started it."""
    proc = _CHILDREN.get(pid)
    if proc is not None:
        if proc.poll() is None:
            return True
        _CHILDREN.pop(pid, None)
        return False
    return alive(pid)


def stop(pid: int, timeout_s: float = 10.0, program: str = PROGRAM) -> bool:
    """Stop the Prometheus of ``pid``: SIGTERM, wait up to ``timeout_s``, then SIGKILL; True if it was running.

    A pid that no longer runs ``program`` (it exited; the pid may now be another program's) is left alone and
    False returned. Raises :class:`PrometheusStartError` when even SIGKILL did not end it within 5 s.
    """
    running(pid)  # reaps a child of this process that has ended
    stopped = stop_pid(pid, os.path.basename(program), timeout_s)
    _CHILDREN.pop(pid, None)
    if alive(pid, os.path.basename(program)):
        raise PrometheusStartError(f"Prometheus (pid {pid}) still runs after SIGKILL")
    return stopped
