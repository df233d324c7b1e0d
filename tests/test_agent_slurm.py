"""The agent's Slurm side (``planner/agent/``, docs/design.md §11.6).

Unit tests read JSON that Slurm 22.05.8 printed on the test cluster (``tests/data/agent/``, written by
``tests/data/agent/capture.py``), and hostile edits of it. The slow test runs the actions against the real
throwaway Slurm of ``tests/slurm_cluster.py``; without Slurm it skips, unless ``WATTPLAN_REQUIRE_SLURM=1``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.slurm_cluster import SlurmCluster, running_cluster
from wattplan.planner.agent.commands import CommandResult, SlurmError, run_command, runner
from wattplan.planner.agent.slurm_actions import (
    ActionOutcome,
    Cancel,
    Hold,
    Release,
    RequeueHold,
    SlurmCall,
    Update,
    apply,
    calls,
)
from wattplan.planner.agent.slurm_queue import (
    ManagedJob,
    opt_in_comment,
    parse_opt_in,
    query_nodes,
    query_queue,
    read_nodes,
    read_queue,
)
from wattplan.planner.agent.slurm_schema import LEGACY
from wattplan.planner.agent.slurm_version import parse_version, require_supported, slurm_version, supported_problem

DATA = Path(__file__).resolve().parent / "data" / "agent"


def _text(name: str) -> str:
    return (DATA / name).read_text()


def _doc(name: str) -> dict[str, Any]:
    doc = json.loads(_text(name))
    assert isinstance(doc, dict)
    return doc


def _fake(answers: dict[tuple[str, ...], CommandResult], seen: list[tuple[str, ...]] | None = None):
    def run(argv: Sequence[str]) -> CommandResult:
        if seen is not None:
            seen.append(tuple(argv))
        return answers.get(tuple(argv), CommandResult(tuple(argv), 0, "", ""))

    return run


# ---------------------------------------------------------------------------------------------- version


def test_version_of_the_captured_sinfo() -> None:
    text = _text("sinfo_version.txt")
    assert text.strip() == "slurm-wlm 22.05.8"
    assert parse_version(text) == (22, 5, 8)
    assert parse_version("slurm 22.05.11\n") == (22, 5, 11)
    assert supported_problem((22, 5, 8)) is None
    run = _fake({("sinfo", "--version"): CommandResult(("sinfo", "--version"), 0, text, "")})
    assert require_supported(run) == ((22, 5, 8), LEGACY)


@pytest.mark.parametrize("version", [(23, 2, 1), (21, 8, 8), (27, 5, 0)])
def test_other_versions_are_refused_by_name(version: tuple[int, int, int]) -> None:
    problem = supported_problem(version)
    assert problem is not None
    assert f"{version[0]}.{version[1]:02d}.{version[2]}" in problem.message
    assert "22.05 (v0.0.38)" in problem.message and "24.11 (v0.0.42)" in problem.message
    text = f"slurm {version[0]}.{version[1]:02d}.{version[2]}\n"
    run = _fake({("sinfo", "--version"): CommandResult(("sinfo", "--version"), 0, text, "")})
    with pytest.raises(SlurmError, match="not supported"):
        require_supported(run)


def test_missing_or_failing_sinfo_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="`sinfo` is not installed"):
        slurm_version(runner({"PATH": str(tmp_path)}))
    failing = CommandResult(("sinfo", "--version"), 1, "", "sinfo: fatal: Could not establish a configuration source\n")
    with pytest.raises(SlurmError, match="exit 1: sinfo: fatal: Could not establish"):
        slurm_version(_fake({("sinfo", "--version"): failing}))
    garbage = CommandResult(("sinfo", "--version"), 0, "hello\n", "")
    with pytest.raises(SlurmError, match="cannot read a Slurm version"):
        slurm_version(_fake({("sinfo", "--version"): garbage}))


# ---------------------------------------------------------------------------------------------- opt-in


def test_opt_in_syntax() -> None:
    assert parse_opt_in("not managed") is None
    assert parse_opt_in("") is None
    opt = parse_opt_in("wattplan:steps=1000; type=ResNet-50 (batch size 64)")
    assert opt is not None and (opt.job_type, opt.total_steps) == ("ResNet-50 (batch size 64)", 1000)
    assert parse_opt_in(opt_in_comment("bert", 5)) == parse_opt_in("wattplan:type=bert;steps=5")


@pytest.mark.parametrize(
    ("comment", "reason"),
    [
        ("wattplan:type=resnet18;steps=lots", "steps must be a whole number"),
        ("wattplan:type=resnet18;steps=0", "steps must be a whole number"),
        ("wattplan:type=resnet18;steps=-5", "steps must be a whole number"),
        ("wattplan:type=resnet18", "missing steps"),
        ("wattplan:", "is not key=value"),
        ("wattplan:type=;steps=3", "type must be non-empty"),
        ("wattplan:type=a;steps=3;steps=4", "given twice"),
        ("wattplan:type=a;steps=3;gpus=2", "unknown key 'gpus'"),
        ("wattplan:type=a\nb;steps=3", "control characters"),
    ],
)
def test_malformed_opt_in_says_why(comment: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_opt_in(comment)


# ---------------------------------------------------------------------------------------------- squeue


def test_queue_of_held_jobs() -> None:
    q = read_queue(_text("squeue_held.json"))
    assert q.unmanaged == 1  # "other": --comment='not managed', running
    assert [(j.job_id, j.name, j.state, j.held, j.gpus_per_node, j.gpu_type) for j in q.jobs] == [
        (1, "m0", "PENDING", True, 1, None),
        (2, "m1", "PENDING", True, 1, None),
        (3, "m2", "PENDING", True, 2, "v100"),
    ]
    m0 = q.jobs[0]
    assert (m0.job_type, m0.total_steps, m0.partition, m0.node_list, m0.start_time_s) == (
        "resnet18",
        1000,
        "gpu",
        "",
        None,
    )
    assert (q.jobs[2].job_type, q.jobs[2].total_steps) == ("bert", 500)
    assert m0.submit_time_s > 1_700_000_000
    assert [(p.code, p.path) for p in q.problems] == [("opt-in", "job 4.comment")]
    assert "steps=lots" in q.problems[0].message


def test_queue_running_and_requeued() -> None:
    running = {j.job_id: j for j in read_queue(_text("squeue_running.json")).jobs}
    m0 = running[1]
    assert (m0.state, m0.held, m0.gpus_per_node, m0.node_list, m0.node_count) == ("RUNNING", False, 2, "v100-0", 1)
    assert m0.start_time_s is not None and m0.start_time_s >= m0.submit_time_s
    assert (running[2].held, running[2].reason) == (True, "JobHeldAdmin")  # scontrol hold
    requeued = {j.job_id: j for j in read_queue(_text("squeue_requeued.json")).jobs}[1]
    assert (requeued.state, requeued.held, requeued.gpus_per_node, requeued.start_time_s) == ("PENDING", True, 2, None)


def _job_doc(doc: dict[str, Any], job_id: int) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["job_id"] == job_id)


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        (lambda j: j.pop("tres_per_node"), "job 2.tres_per_node", "missing"),
        (lambda j: j.update(tres_per_node=""), "job 2.tres_per_node", "asks GPUs per node"),
        (lambda j: j.update(tres_per_node="gres:gpu:two"), "job 2.tres_per_node", "cannot read one GPU request"),
        (lambda j: j.update(job_state=3), "job 2.job_state", "must be text, not int"),
        (lambda j: j.update(submit_time="yesterday"), "job 2.submit_time", "must be a whole number, not str"),
        (lambda j: j.update(node_count=True), "job 2.node_count", "must be a whole number, not bool"),
        (lambda j: j.update(start_time=-1), "job 2.start_time", "must be >= 0"),
        (lambda j: j.update(tres_per_job="gres:gpu:4"), "job 2.tres_per_job", "per node only"),
        (lambda j: j.pop("comment"), "job 2.comment", "missing"),
        (lambda j: j.update(comment=None), "job 2.comment", "must be text, not NoneType"),
        (lambda j: j.update(job_id="2"), "jobs[1].job_id", "must be a job id"),
    ],
)
def test_bad_job_fields_name_the_job_and_field(edit: Callable[[dict[str, Any]], Any], path: str, message: str) -> None:
    doc = _doc("squeue_held.json")
    edit(_job_doc(doc, 2))
    q = read_queue(json.dumps(doc))
    assert [j.job_id for j in q.jobs] == [1, 3]  # the bad job is left out, the others are read
    bad = [p for p in q.problems if p.code != "opt-in"]
    assert [p.path for p in bad] == [path], bad
    assert message in bad[0].message


def test_unmanaged_jobs_are_not_checked_beyond_their_comment() -> None:
    doc = _doc("squeue_held.json")
    other = _job_doc(doc, 5)
    for field in ("tres_per_node", "job_state", "submit_time"):
        other.pop(field)
    q = read_queue(json.dumps(doc))
    assert q.unmanaged == 1 and len(q.jobs) == 3 and len(q.problems) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("squeue: error: slurm_load_jobs error", "did not print JSON"),
        ("[]", "not an object"),
        ('{"meta": {}, "jobs": []}', "no meta.plugin"),
        ('{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": {}}', "no 'jobs' list"),
        ('{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [{"error": "x"}], "jobs": []}', "errors"),
    ],
)
def test_unreadable_documents_are_slurm_errors(text: str, message: str) -> None:
    with pytest.raises(SlurmError, match=message):
        read_queue(text)


def test_newer_schema_is_refused_by_name() -> None:
    doc = _doc("squeue_held.json")
    doc["meta"]["plugin"] = {"type": "", "name": "", "data_parser": "v0.0.40"}
    doc["meta"]["Slurm"]["release"] = "23.11.4"
    with pytest.raises(SlurmError, match=r"schema 'v0\.0\.40'.*Slurm 23\.11\.4.*openapi/v0\.0\.38"):
        read_queue(json.dumps(doc))


def test_query_queue_runs_squeue_json() -> None:
    seen: list[tuple[str, ...]] = []
    answer = CommandResult(("squeue", "--json"), 0, _text("squeue_held.json"), "")
    assert len(query_queue(_fake({("squeue", "--json"): answer}, seen)).jobs) == 3
    assert seen == [("squeue", "--json")]
    down = CommandResult(("squeue", "--json"), 1, "", "slurm_load_jobs error: Unable to contact slurm controller\n")
    with pytest.raises(SlurmError, match="exit 1: slurm_load_jobs error"):
        query_queue(_fake({("squeue", "--json"): down}))


# ---------------------------------------------------------------------------------------------- sinfo


def test_nodes_mixed_idle_drained() -> None:
    mixed = read_nodes(_text("sinfo_mixed.json"))
    assert mixed.problems == ()
    assert [(n.name, n.state, n.gpus, n.gpu_type, n.partitions) for n in mixed.nodes] == [
        ("v100-0", "mixed", 8, "v100", ("gpu",)),
        ("v100-1", "idle", 8, "v100", ("gpu",)),
    ]
    drained = {n.name: n for n in read_nodes(_text("sinfo_drained.json")).nodes}
    assert (drained["v100-1"].state, drained["v100-1"].slurm_state) == ("drained", "idle+DRAIN")
    assert drained["v100-0"].features == ("fast", "ib")


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        (lambda n: n.pop("gres"), "node v100-1.gres", "missing"),
        (lambda n: n.update(gres="gpu:v100:many"), "node v100-1.gres", "cannot read GPUs"),
        (lambda n: n.update(state="sleepy"), "node v100-1.state", "unknown node state"),
        (lambda n: n.update(state_flags="DRAIN"), "node v100-1.state_flags", "list of text"),
        (lambda n: n.update(name=7), "nodes[1].name", "must be a node name"),
    ],
)
def test_bad_node_fields_name_the_node_and_field(
    edit: Callable[[dict[str, Any]], Any], path: str, message: str
) -> None:
    doc = _doc("sinfo_mixed.json")
    edit(doc["nodes"][1])
    read = read_nodes(json.dumps(doc))
    assert [n.name for n in read.nodes] == ["v100-0"]
    assert [p.path for p in read.problems] == [path] and message in read.problems[0].message


def test_node_gres_with_sockets_and_shards() -> None:
    doc = _doc("sinfo_mixed.json")
    node = copy.deepcopy(doc["nodes"][0])
    node.update(gres="gpu:a100:4(S:0,1),gpu:a100:4(S:1),shard:64", state="down", state_flags=["NOT_RESPONDING"])
    doc["nodes"] = [node]
    (only,) = read_nodes(json.dumps(doc)).nodes
    assert (only.gpus, only.gpu_type, only.state) == (8, "a100", "down")


# ---------------------------------------------------------------------------------------------- actions


def test_calls_are_grouped_in_a_safe_order() -> None:
    actions = [
        Release(3),
        Update(3, gres="gpu:2"),
        RequeueHold(3),
        Update(4, gres="gpu:2"),
        Update(5, nodelist="v100-[0-1]", numnodes=2),
        Cancel(7),
        Hold(9),
        Cancel(8),
        Release(4),
        Release(4),
    ]
    assert [c.argv for c in calls(actions)] == [
        ("scancel", "7", "8"),
        ("scontrol", "requeuehold", "3"),
        ("scontrol", "uhold", "9"),  # a user hold: never mistaken for an administrator's
        ("scontrol", "update", "JobId=3", "Gres=gpu:2"),
        ("scontrol", "update", "JobId=4", "Gres=gpu:2"),
        ("scontrol", "update", "JobId=5", "NodeList=v100-[0-1]", "NumNodes=2"),
        ("scontrol", "release", "3,4"),
    ]
    assert calls([]) == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Update(3), "changes nothing"),
        (lambda: Update(3, gres="gpu:2 NodeList=x"), "gres must be"),
        (lambda: Update(3, gres="shard:2"), "gres must be"),
        (lambda: Update(3, nodelist="a b"), "not a Slurm host list"),
        (lambda: Update(3, numnodes=0), "numnodes"),
        (lambda: Release(0), "job id"),
        (lambda: Hold(True), "job id"),
        (lambda: calls([Update(3, gres="gpu:1"), Update(3, gres="gpu:2")]), "two different Update"),
        (lambda: calls([Cancel(3), Release(3)]), "cancelled and given other actions"),
        (lambda: calls([Hold(3), Release(3)]), "both held and released"),
    ],
)
def test_bad_actions_are_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_dry_run_runs_nothing() -> None:
    seen: list[tuple[str, ...]] = []
    outcomes = apply([Release(3), Update(3, gres="gpu:1")], dry_run=True, run=_fake({}, seen))
    assert seen == []
    assert [str(o) for o in outcomes] == [
        "would run: scontrol update JobId=3 Gres=gpu:1",
        "would run: scontrol release 3",
    ]
    assert not any(o.ran or o.ok for o in outcomes)


def test_refusals_are_outcomes() -> None:
    argv = ("scontrol", "requeuehold", "3,4")
    said = "Job is pending execution for job 4\n"
    seen: list[tuple[str, ...]] = []
    outcomes = apply(
        [RequeueHold(3), RequeueHold(4), Release(5)],
        dry_run=False,
        run=_fake({argv: CommandResult(argv, 1, "", said)}, seen),
    )
    assert seen == [argv, ("scontrol", "release", "5")]
    assert [(o.ran, o.returncode, o.ok) for o in outcomes] == [(True, 1, False), (True, 0, True)]
    assert outcomes[0].refused == {4: "Job is pending execution"}
    assert str(outcomes[0]) == "scontrol requeuehold 3,4: exit 1: Job is pending execution for job 4"
    assert ActionOutcome(SlurmCall(("scancel", "9"), (9,)), True, 0, "", "").refused == {}


def test_run_command_keeps_missing_programs_as_results(tmp_path: Path) -> None:
    result = run_command(["surely-not-a-program-wattplan"])
    assert (result.returncode, result.ok) == (127, False) and "not found" in result.stderr
    assert run_command(["sleep", "5"], timeout_s=0.2).returncode == 124


# ---------------------------------------------------------------------------------------------- real Slurm


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    """A running two-node cluster for this module; stopped (by PID) and deleted afterwards."""
    yield from running_cluster("wattplan-agent-slurm-")


def _pending_with_reason(job: ManagedJob) -> bool:
    """Whether ``job`` is pending with a reason Slurm's scheduler gave (not the ``None`` it shows before a pass)."""
    return job.state == "PENDING" and job.reason not in ("", "None")


def _wait(what: str, ready: Callable[[], bool], cluster: SlurmCluster, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{cluster.logs()}")
        time.sleep(0.2)


@pytest.mark.slow
def test_actions_on_real_slurm(slurm: SlurmCluster, tmp_path: Path) -> None:
    run = runner(slurm.env, timeout_s=30)
    assert require_supported(run)[0][:2] == (22, 5)

    def submit(name: str, *extra: str) -> int:
        argv = ["sbatch", "--parsable", "-J", name, "-o", f"{tmp_path}/%j.out", "--gres=gpu:1", *extra]
        result = run([*argv, "--wrap", "sleep 30"])
        assert result.ok, result.stderr
        return int(result.stdout.strip().split(";")[0])

    comment = opt_in_comment("resnet18", 1000)
    a = submit("a", "--hold", f"--comment={comment}")
    b = submit("b", "--hold", f"--comment={comment}")
    other = submit("other", "--hold")  # held too, so any stray release or update would show on it
    untouched = ("JobState", "Reason", "Priority", "TresPerNode", "ReqNodeList", "NumNodes", "Restarts")

    def other_fields() -> dict[str, str]:
        return {f: slurm.job_field(str(other), f) for f in untouched}

    other_before = other_fields()
    assert other_before["JobState"] == "PENDING" and other_before["Priority"] == "0"

    def managed() -> dict[int, ManagedJob]:
        q = query_queue(run)
        assert q.problems == () and q.unmanaged == 1
        return {j.job_id: j for j in q.jobs}

    jobs = managed()
    assert sorted(jobs) == [a, b]
    nodes = query_nodes(run)
    assert nodes.problems == () and sorted(n.name for n in nodes.nodes) == sorted(slurm.node_names)
    assert all((n.gpus, n.gpu_type) == (8, "v100") for n in nodes.nodes)
    assert all(
        (j.held, j.job_type, j.total_steps, j.gpus_per_node) == (True, "resnet18", 1000, 1) for j in jobs.values()
    )

    # resize and start a
    outcomes = apply([Release(a), Update(a, gres="gpu:2")], dry_run=False, run=run)
    assert [o.call.argv for o in outcomes] == [
        ("scontrol", "update", f"JobId={a}", "Gres=gpu:2"),
        ("scontrol", "release", str(a)),
    ]
    assert all(o.ok for o in outcomes), outcomes
    _wait("job a to run", lambda: slurm.job_field(str(a), "JobState") == "RUNNING", slurm)
    assert "GRES=gpu:v100:2(IDX:" in slurm.show_job(str(a))
    assert managed()[a].gpus_per_node == 2 and managed()[a].start_time_s is not None

    # a running job's GRES cannot change: an outcome with Slurm's message
    (refused,) = apply([Update(a, gres="gpu:4")], dry_run=False, run=run)
    assert refused.ran and refused.returncode != 0
    assert "no longer pending" in refused.refused[a], refused

    # grouped requeuehold of a running and a pending job: Slurm requeues a and refuses b by id
    (grouped,) = apply([RequeueHold(a), RequeueHold(b)], dry_run=False, run=run)
    assert grouped.call.argv == ("scontrol", "requeuehold", f"{a},{b}")
    assert set(grouped.refused) == {b} and "pending" in grouped.refused[b]
    _wait("job a to be pending again", lambda: slurm.job_field(str(a), "JobState") == "PENDING", slurm)
    again = managed()[a]
    assert (again.state, again.held, again.node_list, again.gpus_per_node) == ("PENDING", True, "", 2)

    # a requeued job is pending again, so it can be changed: one update call per job
    updates = apply([Update(a, gres="gpu:1"), Update(b, gres="gpu:1")], dry_run=False, run=run)
    assert [u.call.argv for u in updates] == [
        ("scontrol", "update", f"JobId={a}", "Gres=gpu:1"),
        ("scontrol", "update", f"JobId={b}", "Gres=gpu:1"),
    ]
    assert all(u.ok for u in updates)

    # resize running b in one apply: requeuehold, update, release. Slurm then keeps a requeued job pending
    # until its begin time (AuthInfo cred_expire, 120 s by default) has passed: Reason=BeginTime (so a, requeued
    # above, would not start again within this test either)
    assert all(o.ok for o in apply([Release(b)], dry_run=False, run=run))
    _wait("job b to run", lambda: slurm.job_field(str(b), "JobState") == "RUNNING", slurm)
    resize = apply([Release(b), Update(b, "gpu:2", "v100-1", 1), RequeueHold(b)], dry_run=False, run=run)
    assert [o.call.argv[1] for o in resize] == ["requeuehold", "update", "release"]
    assert all(o.ok for o in resize), [str(o) for o in resize]
    # after COMPLETING; Slurm shows Reason=None until its scheduler has looked at the requeued job (seen under load)
    _wait("job b to be pending again, with its reason", lambda: _pending_with_reason(managed()[b]), slurm)
    resized = managed()[b]
    assert (resized.state, resized.held, resized.reason, resized.gpus_per_node) == ("PENDING", False, "BeginTime", 2)
    assert managed()[a].held  # requeuehold leaves a job held
    assert (slurm.job_field(str(b), "ReqNodeList"), slurm.job_field(str(b), "NumNodes")) == ("v100-1", "1")

    (cancel,) = apply([Cancel(a), Cancel(b)], dry_run=False, run=run)
    assert cancel.ok and cancel.call.argv == ("scancel", str(a), str(b))
    # squeue --json lists finished jobs too (for MinJobAge seconds), in their final state
    _wait("a and b cancelled", lambda: {j.state for j in managed().values()} == {"CANCELLED"}, slurm)
    assert other_fields() == other_before  # the unmanaged job was never touched
