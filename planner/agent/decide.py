"""A round's plan turned into the fewest Slurm calls and the nodes' setting files (docs/design.md §11.6).

For each managed job of the round instance, against what Slurm shows now:

* planned to **wait**: a running job is requeued and held (``requeuehold``); a pending job that is not held is
  held; a held one is left alone.
* planned to **run** with the configuration it runs now (same GPU type and count, same nodes, same role in a pair,
  same host job): it keeps running; only its setting file is rewritten when the setting changes, and the node agent
  re-applies it without a restart (as the round model assumes: a setting change costs no restart).
* planned to **run** otherwise: a running job is requeued and held first, a pending job that is not held (released
  by an earlier round, Slurm may start it any moment) is held first; then ``scontrol update`` gives it
  ``Gres=gpu:N`` per node (``gpu:TYPE:N`` when it was submitted typed), the plan's hosts (``NodeList``,
  ``NumNodes``), its setting file is written and it is released. A released pending job that already asks for the
  plan's hosts and GPUs gets no call: Slurm starts it once they are free. ``update`` only ever reaches a held job:
  Slurm 22.05 takes ``NodeList=`` on a job that started meanwhile as a shrink of the running job, and its resize
  accounting leaves the job without a database index under ``accounting_storage/none``; every later update or
  hold of that job then waits 5 s in slurmctld and is refused (``the DB index is being set``), seen live as
  26-second rounds and reproduced on the test cluster (``benchmarks/slurm_update_race.sh``). A hold Slurm refuses
  (the job started) stops that job's update and release (:meth:`planner.agent.loop.Agent._send`).

Co-located pairs: Slurm never gives one GPU to two jobs, so the pair's *host* job holds the GPUs and the *guest*
runs with ``Gres=gpu:TYPE:0`` on the same hosts, using the host's GPU indices (the prolog and task prolog read
them; :mod:`planner.agent.node_settings`). The host is the partner that already runs with the planned GPUs (so it
need not restart), else the one expected to run longer (a guest restarts when its host ends first). A guest
starts only after its host runs: its release is returned separately (:attr:`Decision.guest_releases`) for the
loop to send once the host is seen running; a guest whose host restarts or stops is requeued with it.

Slurm's calls are grouped by :func:`planner.agent.slurm_actions.calls` (cancel, requeue-hold, hold, update,
release), one call per verb and one ``update`` per distinct set of fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattplan.planner.agent.node_settings import JobSetting
from wattplan.planner.agent.slurm_actions import Action, Hold, Release, RequeueHold, Update
from wattplan.planner.agent.store import Desired
from wattplan.planner.contracts.domain import CurrentConfig, Instance
from wattplan.planner.contracts.plan import Plan, PlannedJob


@dataclass(frozen=True, slots=True)
class SlurmJobNow:
    """A managed job as Slurm shows it at the round start.

    ``running``: Slurm runs it; ``held``: it is pending and held; ``hosts``: where it runs (empty while pending);
    ``gpus_per_node``: the GPUs it holds per node (0 for a pair's guest); ``host_job``: the job whose GPUs it
    uses, when it is a guest (from the agent's last decision); ``typed``: its GRES names a GPU type
    (``--gres=gpu:TYPE:N``): updates keep the form it was submitted with, Slurm refuses the other.
    ``stalled``: why a running job must restart whatever the plan says (it made no progress for too long),
    None when it runs as it should.
    """

    job_id: str
    running: bool
    held: bool
    hosts: tuple[str, ...] = ()
    gpus_per_node: int = 0
    host_job: str | None = None
    typed: bool = False
    stalled: str | None = None
    requested_hosts: tuple[str, ...] = ()
    """The hosts a pending job asks for (its ``NodeList=``; empty: any)."""
    gpu_type: str | None = None
    """The GPU type its GRES names (None: untyped)."""


@dataclass
class Decision:
    """What the loop sends and writes for one round."""

    actions: list[Action] = field(default_factory=list)
    guest_releases: dict[str, str] = field(default_factory=dict)
    """``{guest job id: host job id}``: release each guest once its host runs."""
    settings: list[JobSetting] = field(default_factory=list)
    desired: list[Desired] = field(default_factory=list)
    requeued: list[str] = field(default_factory=list)
    """Running jobs this round stops (to wait, or to restart elsewhere)."""
    why: dict[str, str] = field(default_factory=dict)
    """Why each requeued job stops: ``waits``, ``2 -> 4 GPUs``, ``v100 -> p100``, ``moves to HOSTS``,
    ``becomes guest of J``, ``leaves its pair``, ``its host J restarts``, or the job's ``stalled`` reason."""
    kept: list[str] = field(default_factory=list)


def hostlist(hosts: Sequence[str]) -> str:
    """Hosts joined with commas, as ``NodeList=`` takes them."""
    return ",".join(hosts)


def _pair_hosts(instance: Instance, plan: Plan, keepable: Mapping[str, bool]) -> dict[str, str]:
    """``{job id: host job id}`` for every job of a planned pair (the host maps to itself).

    The host is the partner that can keep running as it runs; when neither can, the one expected to run longer
    in the pair (steps left over the plan's rate; ties: the first in instance order), so that the guest, which
    restarts if its host ends first, is expected to end first.
    """
    order = {j.id: i for i, j in enumerate(instance.jobs)}
    entries = {e.job_id: e for e in plan.running()}
    out: dict[str, str] = {}
    for e in plan.running():
        if e.shares_with is None or e.job_id in out:
            continue
        a, b = sorted((e.job_id, e.shares_with), key=lambda j: order.get(j, 0))
        if keepable.get(a) or keepable.get(b):
            host = b if keepable.get(b) and not keepable.get(a) else a
        else:
            host = b if _seconds_left(instance, entries.get(b)) > _seconds_left(instance, entries.get(a)) else a
        out[a] = out[b] = host
    return out


def _seconds_left(instance: Instance, e: PlannedJob | None) -> float:
    """The planned job's steps left over its planned rate (s); 0 when the plan gives no rate."""
    if e is None or e.steps_per_s <= 0 or not instance.has_job(e.job_id):
        return 0.0
    return instance.job(e.job_id).remaining_steps / e.steps_per_s


def _why(
    cur: CurrentConfig | None,
    e: PlannedJob,
    hosts: tuple[str, ...],
    s: SlurmJobNow,
    guest_of: str | None,
    kept: set[str],
) -> str:
    """Why a running job planned to run must restart (see :attr:`Decision.why`)."""
    if s.stalled is not None:
        return s.stalled
    if cur is None:
        return "runs where the round cannot plan it"
    if cur.gpu_type != e.gpu_type:
        return f"{cur.gpu_type} -> {e.gpu_type}"
    if cur.gpus != e.gpus:
        return f"{cur.gpus} -> {e.gpus} GPUs"
    if guest_of is not None and s.host_job != guest_of:
        return f"becomes guest of {guest_of}"
    if guest_of is None and s.host_job is not None:
        return "leaves its pair"
    if guest_of is not None and guest_of not in kept:
        return f"its host {guest_of} restarts"
    return f"moves to {hostlist(hosts)}"


def decide(
    instance: Instance,
    plan: Plan,
    now: Mapping[str, SlurmJobNow],
    host_of: Mapping[str, str],
    round_index: int,
) -> Decision:
    """The calls, setting files and desired configurations of one round (module docstring).

    ``now``: the managed jobs of the instance as Slurm shows them; ``host_of``: plan node name -> Slurm host.
    """
    entries: dict[str, PlannedJob] = {e.job_id: e for e in plan.jobs}
    units = {g.name: g.setting_unit for g in instance.gpu_types}
    jobs = {j.id: j for j in instance.jobs}

    def same_shape(job_id: str) -> bool:
        e, j, s = entries.get(job_id), jobs[job_id], now.get(job_id)
        cur = j.current
        return bool(
            e is not None
            and e.state == "run"
            and s is not None
            and s.running
            and cur is not None
            and (cur.gpu_type, cur.gpus) == (e.gpu_type, e.gpus)
        )

    keepable_host = {jid: same_shape(jid) and now[jid].host_job is None for jid in jobs}
    pair_host = _pair_hosts(instance, plan, keepable_host)
    d = Decision()
    kept: set[str] = set()
    # hosts and exclusive jobs first: a guest is kept only when its host is
    for jid in sorted(jobs, key=lambda j: pair_host.get(j, j) != j):
        e = entries.get(jid)
        s = now.get(jid)
        if e is None or s is None:
            continue
        num = int(jid)
        if e.state != "run":
            if s.running:
                d.actions.append(RequeueHold(num))
                d.requeued.append(jid)
                d.why[jid] = "waits"
            elif not s.held:
                d.actions.append(Hold(num))
            d.desired.append(Desired(jid, round_index, "wait"))
            continue
        gpu_type, gpus, setting = e.gpu_type or "", int(e.gpus or 0), int(e.setting or 0)
        host_job = pair_host.get(jid)
        guest_of = host_job if host_job is not None and host_job != jid else None
        hosts = tuple(host_of[ng.node] for ng in e.placement)
        unit = units[gpu_type]
        d.settings.append(JobSetting(jid, round_index, gpu_type, gpus, setting, unit, guest_of))
        d.desired.append(Desired(jid, round_index, "run", gpu_type, gpus, setting, unit, guest_of, hosts))
        keep = (
            same_shape(jid)
            and s.stalled is None
            and s.host_job == guest_of
            and (guest_of is None or guest_of in kept)
            and sorted(hosts) == sorted(s.hosts)
        )
        if keep:
            kept.add(jid)
            d.kept.append(jid)
            continue
        if s.running:
            d.actions.append(RequeueHold(num))
            d.requeued.append(jid)
            d.why[jid] = _why(jobs[jid].current, e, hosts, s, guest_of, kept)
        per_node = 0 if guest_of is not None else gpus // max(len(hosts), 1)
        released = not s.running and not s.held  # pending and free to start: Slurm may start it any moment
        if released and _asks_for(s, gpu_type, per_node, hosts):
            continue  # it already asks for the plan's nodes and GPUs: Slurm starts it when they are free
        if released:
            d.actions.append(Hold(num))  # an update of a job that has just started would resize it (docstring)
        gres = f"gpu:{gpu_type}:{per_node}" if s.typed else f"gpu:{per_node}"
        d.actions.append(Update(num, gres=gres, nodelist=hostlist(hosts), numnodes=len(hosts)))
        if guest_of is not None and guest_of not in kept:
            d.guest_releases[jid] = guest_of
        else:
            d.actions.append(Release(num))
    return d


def _asks_for(s: SlurmJobNow, gpu_type: str, per_node: int, hosts: Sequence[str]) -> bool:
    """A pending job already asks for the plan's hosts, GPUs per node and (when its GRES is typed) GPU type."""
    same_type = not s.typed or s.gpu_type == gpu_type
    return sorted(s.requested_hosts) == sorted(hosts) and s.gpus_per_node == per_node and same_type
