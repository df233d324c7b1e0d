"""The agent's own Prometheus metrics (``wattplan agent --metrics-port PORT``): what it decided, as it goes.

Served at ``http://ADDRESS:PORT/metrics`` by ``prometheus_client`` from a thread of the agent, one registry per
agent (nothing global). Updated after every round (:meth:`AgentMetrics.observe`):

* ``wattplan_agent_rounds_total{status}``: rounds by how they ended (``done``, ``idle``, ``kept``,
  ``slurm-unreachable``, ``state-busy``, ...);
* ``wattplan_agent_round_seconds{part}``: the last round's solve and the loop's own time around it (real s);
* ``wattplan_agent_slurm_calls_total{verb, outcome}``: calls sent (``requeuehold``, ``uhold``, ``update``,
  ``power_down``, ``release``) by outcome (``ok``, ``refused``, ``failed``; ``planned`` in a dry run), one per call;
* ``wattplan_agent_managed_jobs{state}``: managed jobs ``running`` and ``waiting`` at the last round;
* ``wattplan_agent_delta``: the progress given up for energy in the last round (the governor's delta);
* ``wattplan_agent_planned_gpu_power_watts``: the last plan's GPU energy over its round, in W;
* ``wattplan_agent_measured_gpu_energy_joules_total``: GPU energy DCGM measured for the managed jobs (J);
* ``wattplan_agent_release_wait_seconds`` (a histogram): each job's wait from its submission to its release by the
  round that first saw it, in real s (the agent's own latency for a job that fits: the wait for the next ``squeue``
  read and the round; not for a job submitted before the agent started; Slurm keeps submit times in whole seconds,
  so up to a second high;
  :func:`planner.agent.report.release_waits`);
* ``wattplan_agent_notes_total``: lines the log added to a round (what was left alone, Slurm's refusals, an
  unreachable Prometheus);
* ``wattplan_agent_completed_jobs_gpu_energy_joules{source}`` and ``..._avg_jct_seconds{source}``: the completed
  jobs' GPU energy and average JCT, ``measured`` and as the agent's reference models Slurm alone at full power
  (``reference``; :func:`planner.agent.report.against_reference`): the energy saved is ``1 - measured /
  reference``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from wattplan.planner.agent.report import AgainstReference
from wattplan.planner.agent.slurm_actions import ActionOutcome

RELEASE_WAIT_BUCKETS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
"""The histogram's upper bounds (real s): a poll of 1 s and a round take about a second (benchmarks/RESULTS.md,
"Short jobs")."""

DEFAULT_ADDRESS = "127.0.0.1"
"""Where the metrics are served unless ``--metrics-address`` says otherwise: this host only."""


@dataclass(frozen=True, slots=True)
class RoundFigures:
    """What one round adds to the metrics (the loop's ``RoundReport``, in the terms of the metrics)."""

    outcome: str
    solve_s: float = 0.0
    overhead_s: float = 0.0
    calls: Sequence[ActionOutcome] = field(default_factory=tuple)
    running: int = 0
    waiting: int = 0
    delta: float | None = None
    planned_power_w: float | None = None
    measured_j: float = 0.0
    notes: int = 0
    against: AgainstReference | None = None
    """The completed jobs against the reference (None: not computed this round)."""
    release_waits_s: Sequence[float] = ()
    """Real seconds from submission to release of the jobs this round saw first and released."""


class AgentMetrics:
    """The agent's metrics in their own registry; :meth:`serve` publishes them over HTTP."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.rounds = Counter("wattplan_agent_rounds", "Rounds played, by status.", ["status"], registry=r)
        self.round_s = Gauge(
            "wattplan_agent_round_seconds", "The last round's time (s), by part.", ["part"], registry=r
        )
        self.calls = Counter(
            "wattplan_agent_slurm_calls", "Slurm calls, by verb and outcome.", ["verb", "outcome"], registry=r
        )
        self.jobs = Gauge(
            "wattplan_agent_managed_jobs", "Managed jobs at the last round, by state.", ["state"], registry=r
        )
        self.delta = Gauge("wattplan_agent_delta", "Progress given up for energy in the last round.", registry=r)
        self.planned_w = Gauge(
            "wattplan_agent_planned_gpu_power_watts", "The last plan's GPU energy over its round (W).", registry=r
        )
        self.measured_j = Counter(
            "wattplan_agent_measured_gpu_energy_joules", "GPU energy DCGM measured for managed jobs (J).", registry=r
        )
        self.notes = Counter("wattplan_agent_notes", "Notes the log added to rounds.", registry=r)
        self.release_wait = Histogram(
            "wattplan_agent_release_wait_seconds",
            "A job's wait from its submission to its release by the first round that saw it (real s).",
            buckets=RELEASE_WAIT_BUCKETS_S,
            registry=r,
        )
        self.completed_j = Gauge(
            "wattplan_agent_completed_jobs_gpu_energy_joules",
            "GPU energy of the completed jobs (J): measured by DCGM, and modelled for Slurm alone at full power.",
            ["source"],
            registry=r,
        )
        self.completed_jct = Gauge(
            "wattplan_agent_completed_jobs_avg_jct_seconds",
            "Average JCT of the completed jobs (s): their own, and modelled for Slurm alone at full power.",
            ["source"],
            registry=r,
        )

    def serve(self, port: int, address: str = DEFAULT_ADDRESS) -> None:
        """Serve ``/metrics`` on ``address:port`` from a daemon thread (OSError when the port is taken)."""
        start_http_server(port, addr=address, registry=self.registry)

    def observe(self, report: RoundFigures) -> None:
        """Count one round's outcome and set the gauges to it."""
        self.rounds.labels(report.outcome or "unknown").inc()
        self.round_s.labels("solve").set(report.solve_s)
        self.round_s.labels("overhead").set(report.overhead_s)
        for outcome in report.calls:
            status = (
                "planned" if not outcome.ran else ("ok" if outcome.ok else "refused" if outcome.refused else "failed")
            )
            self.calls.labels(outcome.call.verb, status).inc()
        self.jobs.labels("running").set(report.running)
        self.jobs.labels("waiting").set(report.waiting)
        if report.delta is not None:
            self.delta.set(report.delta)
        if report.planned_power_w is not None:
            self.planned_w.set(report.planned_power_w)
        self.measured_j.inc(max(report.measured_j, 0.0))
        self.notes.inc(report.notes)
        for wait in report.release_waits_s:
            self.release_wait.observe(wait)
        a = report.against
        if a is not None and a.jobs:
            self.completed_j.labels("measured").set(a.measured_j)
            self.completed_j.labels("reference").set(a.reference_j)
            if a.avg_jct_s is not None and a.reference_avg_jct_s is not None:
                self.completed_jct.labels("measured").set(a.avg_jct_s)
                self.completed_jct.labels("reference").set(a.reference_avg_jct_s)
