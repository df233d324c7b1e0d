"""``wattplan agent`` put together: Slurm's environment, the state file, Prometheus, the loop (docs/design.md §11.6).

On a real cluster the agent runs where ``squeue``/``scontrol`` work (``SLURM_CONF`` as usual) and reads the
Prometheus that scrapes the DCGM exporters (``--prometheus URL``). With ``--cluster DIR`` (an emulated cluster,
:mod:`planner.cluster`) everything comes from the cluster's manifest: ``SLURM_CONF``, the Prometheus URL, the
settings folder, the submitter's done marker and the clock (the manifest's ``slurm_conf``, ``prometheus_url``,
``settings_dir``, ``idle_marker``, ``t0_unix``, ``time_scale``); nothing else changes.

``--dry-run`` plays one round on a snapshot of the state file (SQLite's backup API: what is still in the
write-ahead log included, consistent while an agent runs) and prints the calls it would send; nothing is written
to Slurm, the nodes or the state, and it takes no lock. Otherwise the state file is opened first, with its lock
(one agent per state file, :class:`~planner.agent.store.AgentStore`), before Slurm is asked anything.

Prometheus is read within a budget per round (:data:`OBSERVE_BUDGET_S`, at most half a round): every HTTP
timeout is the time left in it, so a Prometheus that accepts connections and never answers costs a round that
budget, not ``attempts`` times the client's timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner import planning
from wattplan.planner.agent.cap_endpoint import PATH as CAP_PATH
from wattplan.planner.agent.cap_endpoint import CapEndpoint, read_token
from wattplan.planner.agent.check import CheckTarget
from wattplan.planner.agent.commands import runner, slurm_env
from wattplan.planner.agent.loop import Agent, AgentConfig, Observed
from wattplan.planner.agent.metrics import AgentMetrics
from wattplan.planner.agent.node_settings import Clock
from wattplan.planner.agent.observations import observe
from wattplan.planner.agent.options import AGENT_BASELINES, AgentOptions
from wattplan.planner.agent.prometheus import PrometheusClient, with_retries
from wattplan.planner.agent.slurm_version import require_supported
from wattplan.planner.agent.store import AgentStore, snapshot
from wattplan.planner.console.terminal import plain
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.sim.policies.registry import policy_names, unknown_policy_message
from wattplan.planner.sim.signals import SignalClock, SignalKind, signal_clock

OBSERVE_BUDGET_S = 5.0
"""Most real seconds one round spends reading Prometheus, retries and their waits included."""


@dataclass
class PrometheusObserver:
    """Reads each round's window from Prometheus (:func:`planner.agent.observations.observe`), with retries."""

    url: str
    from_zero: bool = False
    attempts: int = 3
    budget_s: float = OBSERVE_BUDGET_S
    """Real seconds one window's reading may take in all; each request's timeout is what is left of it."""

    def __post_init__(self) -> None:
        self.client = PrometheusClient(self.url)

    def window(self, t0_unix: float, t1_unix: float) -> Observed:
        """Steps done at ``t1`` and energy over the window per job; raises PrometheusError when it cannot read.

        Bounded by ``budget_s``: past it, no request is sent and no retry waited for.
        """
        deadline = time.monotonic() + self.budget_s
        client = self.client.bounded(deadline)
        seen = with_retries(
            lambda: observe(client, t0_unix, t1_unix, from_zero=self.from_zero),
            attempts=self.attempts,
            base_s=0.5,
            max_s=2.0,
            max_total_s=self.budget_s,
            deadline=deadline,
        )
        if not seen.scrape.ok:
            raise RuntimeError(f"Prometheus has no fresh data for the last round ({seen.scrape.reason})")
        steps = {j.job_id: j.steps_t1 for j in seen.jobs if j.steps_t1 is not None}
        energy = {j.job_id: j.energy_j for j in seen.jobs}
        return Observed(steps, energy, seen.cluster_energy_j, seen.idle_by_node())


@dataclass(frozen=True)
class Environment:
    """Where the agent's Slurm, Prometheus, settings and clock are."""

    slurm_env: dict[str, str]
    prometheus_url: str | None
    settings_dir: Path | None
    clock: Clock
    idle_marker: Path | None
    from_zero: bool
    cluster_id: str | None = None
    """What identifies the cluster the state belongs to (an emulated cluster's start time); None: not checked."""
    power_cycle_s: float | None = None
    """An emulated cluster's off-and-on cycle with power saving (s): its shutdown and its boot; None: not known."""


def environment(cluster_dir: Path | None, prometheus_url: str | None, settings_dir: Path | None) -> Environment:
    """The environment of a real cluster (the options) or of an emulated one (its manifest)."""
    if cluster_dir is None:
        return Environment(dict(os.environ), prometheus_url, settings_dir, Clock(), None, False)
    manifest_path = cluster_dir / "cluster.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        return Environment(
            slurm_env(manifest),
            prometheus_url or manifest.get("prometheus_url"),
            settings_dir or Path(manifest["settings_dir"]),
            Clock(float(manifest["t0_unix"]), float(manifest["time_scale"])),
            Path(manifest["idle_marker"]),
            True,
            f"emulated cluster {cluster_dir.resolve()} started at {float(manifest['t0_unix']):.3f}",
            _power_cycle_s(manifest),
        )
    except FileNotFoundError:
        raise ValueError(f"--cluster {cluster_dir}: no cluster.json; start one with wattplan cluster up") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"--cluster {cluster_dir}: cluster.json cannot be read ({e!r})") from None


def _power_cycle_s(manifest: dict[str, Any]) -> float | None:
    """An emulated cluster's off-and-on cycle (emulated s): its shutdown (``SuspendTimeout``) and its boot."""
    saving = manifest.get("power_save")
    if not isinstance(saving, dict):
        return None
    shutdown_real = float(saving.get("slurm_suspend_timeout_s", 0.0))
    return float(saving["resume_s"]) + shutdown_real * float(manifest["time_scale"])


def open_state(state: Path, dry_run: bool) -> tuple[AgentStore, Path | None]:
    """The agent's store and, in a dry run, the scratch folder of its snapshot (the caller deletes it).

    A real run opens ``state`` itself, locked (a second agent is a :class:`~planner.agent.store.StoreError`
    naming the first one's pid). A dry run opens a private snapshot taken with SQLite's backup API, unlocked.
    """
    if not dry_run:
        return AgentStore(state), None
    scratch = Path(tempfile.mkdtemp(prefix="wattplan-dry-"))
    try:
        path = scratch / "state.db"
        if state.exists():
            snapshot(state, path)
        return AgentStore(path, exclusive=False), scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def serve_metrics(port: int, address: str) -> AgentMetrics:
    """The agent's metrics, served on ``address:port``; :class:`InputError` naming ``--metrics-port`` if it cannot."""
    metrics = AgentMetrics()
    try:
        metrics.serve(port, address)
    except OSError as exc:
        why = f"cannot serve on {address}:{port}: {exc.strerror or exc}"
        raise InputError("--metrics-port", [Problem("metrics-port", "--metrics-port", why)]) from None
    return metrics


def cap_token(options: AgentOptions) -> str | None:
    """The token ``--power-cap-port`` asks for (:func:`~planner.agent.cap_endpoint.read_token`), else None.

    None without the port, or in a dry run (which serves nothing). :class:`InputError` naming
    ``--power-cap-token-file`` when the file cannot be used.
    """
    if options.power_cap_port is None or options.power_cap_token_file is None or options.dry_run:
        return None
    try:
        return read_token(options.power_cap_token_file)
    except ValueError as e:
        raise InputError("--power-cap-token-file", [Problem("token-file", "--power-cap-token-file", str(e))]) from None


def serve_cap(config: AgentConfig, token: str, log: Callable[[str], None]) -> CapEndpoint:
    """The cap endpoint on ``--power-cap-address``, ``--power-cap-port``; :class:`InputError` naming the port if not."""
    assert config.power_cap_port is not None and config.power_cap_file is not None
    try:
        return CapEndpoint(config.power_cap_file, token, log, config.power_cap_port, config.power_cap_address)
    except OSError as exc:
        why = f"cannot serve on {config.power_cap_address}:{config.power_cap_port}: {exc.strerror or exc}"
        raise InputError("--power-cap-port", [Problem("power-cap-port", "--power-cap-port", why)]) from None


def check_target(options: AgentOptions) -> CheckTarget:
    """What ``wattplan agent check`` looks at: the Slurm, Prometheus and settings folder ``options`` name."""
    env = environment(options.cluster, options.prometheus, options.settings_path())
    prometheus = PrometheusClient(env.prometheus_url, timeout_s=10.0) if env.prometheus_url else None
    return CheckTarget(
        runner(env.slurm_env, timeout_s=60.0),
        prometheus,
        env.prometheus_url,
        env.settings_dir,
        options.powers_down(),
        cap_port=options.power_cap_port,
        cap_file=options.power_cap_file,
        cap_token_file=options.power_cap_token_file,
    )


def run_agent(
    config: AgentConfig, env: Environment, state: Path, log: Callable[[str], None], token: str | None = None
) -> int:
    """Open the state (locked; a snapshot in a dry run), check Slurm's version, run the loop; the exit code.

    ``token``: :func:`cap_token`'s; with it the cap endpoint is served while the loop runs.
    """
    config.clock = env.clock
    config.settings_dir = env.settings_dir
    config.idle_marker = env.idle_marker
    store, scratch = open_state(state, config.dry_run)
    endpoint: CapEndpoint | None = None
    try:
        if env.cluster_id is not None:
            store.bind("cluster", env.cluster_id)
        run = runner(env.slurm_env, timeout_s=60.0)
        version, generation = require_supported(run)
        prom = env.prometheus_url or "(none: progress not observed)"
        log(
            f"Slurm {version[0]}.{version[1]:02d}.{version[2]} (JSON {generation.name}); state {state}; "
            f"Prometheus {prom}"
        )
        log(f"acting on opted-in jobs of {config.allowed.describe()} only (--allow-user, --allow-account)")
        observer = None
        if env.prometheus_url:
            budget = min(OBSERVE_BUDGET_S, 0.5 * config.clock.real_s(config.rules.duration_s))
            observer = PrometheusObserver(env.prometheus_url, env.from_zero, budget_s=budget)
        agent = Agent(config, store, run, observer, log, generation=generation)
        if config.metrics_port is not None and not config.dry_run:
            agent.metrics = serve_metrics(config.metrics_port, config.metrics_address)
            log(f"metrics: http://{config.metrics_address}:{config.metrics_port}/metrics")
        if token is not None:
            endpoint = serve_cap(config, token, log)
            url = f"http://{config.power_cap_address}:{endpoint.port}{CAP_PATH}"
            log(f"power cap: {url} (writes {config.power_cap_file})")
        return agent.run_loop()
    finally:
        if endpoint is not None:
            endpoint.close()
        store.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def agent_signal(options: AgentOptions, now_s: float) -> SignalClock | None:
    """The signal the agent follows (``--carbon``, else ``--price``), its hour ``--signal-start`` at ``now_s``.

    ``now_s``: the agent's start on its clock (s). A bad file or hour raises :class:`InputError` naming it.
    """
    kind: SignalKind = "carbon" if options.carbon is not None else "price"
    path = options.carbon if options.carbon is not None else options.price
    return None if path is None else signal_clock(kind, path, now_s, options.signal_start)


def start_agent(options: AgentOptions, log: Callable[[str], None] | None = None) -> int:
    """``wattplan agent`` with its checked ``options`` (:meth:`AgentOptions.checked`); the exit code.

    The solve request is checked first (a solver that cannot load, a node limit it does not take: InputError),
    before any daemon is asked; then the cluster's environment, the profiles and the loop (:func:`run_agent`).
    ``log``: where the loop writes (default: standard error, only notes and faults with ``quiet``).
    """
    if problems := planning.request_problems(options.request()):
        raise InputError("options", problems)
    token = cap_token(options)
    if options.decision_policy() not in policy_names():
        known = ", ".join(AGENT_BASELINES)
        why = f"{unknown_policy_message(options.policy)}, or a baseline: {known}"
        raise InputError("--policy", [Problem("unknown-policy", "--policy", why)])
    env = environment(options.cluster, options.prometheus, options.settings_path())
    config = AgentConfig.of(options, load_profile_library(options.profiles))
    if env.power_cycle_s is not None:
        config.power_cycle_s = env.power_cycle_s
    config.signal = agent_signal(options, env.clock.at(time.time()))
    return run_agent(config, env, options.state_path(), log or stderr_log(options.quiet), token)


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline written as a visible escape (as ``plain`` does).

    Slurm's messages, job types and user names reach the operator's terminal: an escape sequence in them must not
    act on it. The same rule as every other command's output (:func:`planner.console.terminal.plain`).
    """
    return plain(text)


def stderr_log(quiet: bool) -> Callable[[str], None]:
    """A logger writing time-stamped lines to standard error (only warnings and notes when ``quiet``)."""

    def log(text: str) -> None:
        if quiet and not text.startswith(("restart", "signal", "round skipped")) and "\n" not in text:
            return
        stamp = time.strftime("%H:%M:%S")
        sys.stderr.write(f"{stamp} {printable(text)}\n")
        sys.stderr.flush()

    return log
