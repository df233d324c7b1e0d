"""The agent's readers on every JSON generation it supports (issue 45, item 1).

v0.0.40 to v0.0.42 were captured from Debian 13's Slurm 24.11.5 (``squeue --json=v0.0.4x`` and ``scontrol show
nodes --json=v0.0.4x`` on the emulated cluster, ``cluster up --slurm-root``); v0.0.43 to v0.0.46 were built from
SchedMD's own schema descriptions (``tests/data/slurm_json/README.md`` says which file of which tag). Every
document holds the same scene: job 1 running on v100-0 with two V100 GPUs, job 2 held by its user and asking one
GPU on each of two nodes, job 3 not managed; v100-0 in use and v100-1 drained (v100-2 powered down where present).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wattplan.planner.agent.commands import CommandResult, SlurmError
from wattplan.planner.agent.slurm_queue import job_state, query_nodes, query_queue, read_nodes, read_queue
from wattplan.planner.agent.slurm_schema import GENERATIONS, LEGACY, RELEASES, generation_for
from wattplan.planner.agent.slurm_version import require_supported, supported_problem

DATA = Path(__file__).parent / "data" / "slurm_json"
CAPTURED = ("v0.0.40", "v0.0.41", "v0.0.42")
FROM_SCHEMA = ("v0.0.43", "v0.0.44", "v0.0.45", "v0.0.46")


def _doc(generation: str, name: str) -> dict[str, Any]:
    path = DATA / generation / f"{name}.json"
    if not path.exists():
        pytest.fail(f"{path} is missing")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


@pytest.mark.parametrize("name", CAPTURED + FROM_SCHEMA)
def test_the_queue_reads_the_same_in_every_generation(name: str) -> None:
    generation = GENERATIONS[name]
    read = read_queue(json.dumps(_doc(name, "squeue")), generation)
    assert read.problems == ()
    assert read.unmanaged == 1 and read.listed == frozenset({1, 2, 3})
    running, held = sorted(read.jobs, key=lambda j: j.job_id)
    assert (running.state, running.held, running.node_list, running.node_count) == ("RUNNING", False, "v100-0", 1)
    assert (running.gpus_per_node, running.gpu_type, running.job_type, running.total_steps) == (
        2,
        "v100",
        "resnet",
        100,
    )
    assert running.start_time_s is not None and running.start_time_s >= running.submit_time_s > 1_600_000_000
    assert (held.state, held.held, held.reason, held.start_time_s) == ("PENDING", True, "JobHeldUser", None)
    assert (held.node_count, held.gpus_per_node, held.gpu_type, held.user_name) == (2, 1, None, "root")


@pytest.mark.parametrize("name", CAPTURED + FROM_SCHEMA)
def test_the_nodes_read_the_same_in_every_generation(name: str) -> None:
    generation = GENERATIONS[name]
    read = read_nodes(json.dumps(_doc(name, "nodes")), generation)
    assert read.problems == ()
    states = {n.name: (n.state, n.gpus, n.gpu_type, n.partitions) for n in read.nodes}
    assert states["v100-0"] == ("mixed", 8, "v100", ("gpu",))
    assert states["v100-1"] == ("drained", 8, "v100", ("gpu",))
    assert {n.name: n.slurm_state for n in read.nodes}["v100-1"] == "idle+DRAIN"
    if "v100-2" in states:
        assert states["v100-2"][0] == "off"


@pytest.mark.parametrize("name", CAPTURED + FROM_SCHEMA)
def test_a_document_of_another_generation_is_refused_by_name(name: str) -> None:
    other = GENERATIONS["v0.0.42" if name != "v0.0.42" else "v0.0.41"]
    with pytest.raises(SlurmError, match=rf"data_parser/{name}.*not the data_parser/{other.name} it was asked for"):
        read_queue(json.dumps(_doc(name, "squeue")), other)
    with pytest.raises(SlurmError, match=r"openapi/v0\.0\.38"):
        read_nodes(json.dumps(_doc(name, "nodes")), LEGACY)


def _job(doc: dict[str, Any], job_id: int) -> dict[str, Any]:
    job: dict[str, Any] = next(j for j in doc["jobs"] if j["job_id"] == job_id)
    return job


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda j: j.update(node_count=1), "node_count", "number object"),
        (lambda j: j["submit_time"].update(infinite=True), "submit_time", "is infinite"),
        (lambda j: j["start_time"].update(number=-3), "start_time.number", "must be >= 0"),
        (lambda j: j.update(job_state="RUNNING"), "job_state", "list of text"),
        (lambda j: j.update(job_state=["RUNNING", "PENDING"]), "job_state", "exactly one base state"),
        (lambda j: j.update(tres_per_node="gres:gpu:v100:2"), "tres_per_node", "asks GPUs per node"),
    ],
)
def test_a_bad_field_is_a_problem_naming_job_and_field(change: Any, field: str, words: str) -> None:
    doc = _doc("v0.0.42", "squeue")
    change(_job(doc, 1))
    read = read_queue(json.dumps(doc), GENERATIONS["v0.0.42"])
    assert [j.job_id for j in read.jobs] == [2], "the other job is still read"
    (problem,) = read.problems
    assert problem.path == f"job 1.{field}" and words in problem.message, problem


def test_an_unset_start_is_no_start_and_states_fold_as_slurm_prints_them() -> None:
    doc = _doc("v0.0.42", "squeue")
    _job(doc, 1)["start_time"].update(set=False, number=0)
    _job(doc, 1)["job_state"] = ["RUNNING", "CONFIGURING"]
    (job,) = [j for j in read_queue(json.dumps(doc), GENERATIONS["v0.0.42"]).jobs if j.job_id == 1]
    assert job.start_time_s is None and job.state == "CONFIGURING"
    assert job_state("COMPLETED", ("COMPLETING",)) == "COMPLETING"
    assert job_state("PENDING", ("REQUEUED", "CONFIGURING")) == "CONFIGURING"  # Slurm tests CONFIGURING first
    assert job_state("PENDING", ()) == "PENDING"


def test_a_node_with_two_base_states_is_a_problem() -> None:
    doc = _doc("v0.0.42", "nodes")
    doc["nodes"][0]["state"] = ["IDLE", "MIXED"]
    read = read_nodes(json.dumps(doc), GENERATIONS["v0.0.42"])
    assert [p.path for p in read.problems] == ["node v100-0.state"]


@pytest.mark.parametrize(
    ("version", "name"), [((22, 5, 8), "v0.0.38"), ((24, 11, 5), "v0.0.42"), ((25, 5, 1), "v0.0.43")]
)
def test_each_release_is_asked_for_its_newest_generation(version: tuple[int, int, int], name: str) -> None:
    generation = generation_for(version)
    assert generation is not None and generation.name == name
    assert supported_problem(version) is None
    seen: list[tuple[str, ...]] = []
    text = f"slurm-wlm {version[0]}.{version[1]:02d}.{version[2]}\n"

    def run(argv: Any) -> CommandResult:
        seen.append(tuple(argv))
        if tuple(argv) == ("sinfo", "--version"):
            return CommandResult(tuple(argv), 0, text, "")
        folder = "v0.0.42" if name == "v0.0.38" else name  # 22.05's own answers are test_agent_slurm's
        doc = "squeue" if argv[0] == "squeue" else "nodes"
        return CommandResult(tuple(argv), 0, json.dumps(_doc(folder, doc)), "")

    assert require_supported(run) == (version, generation)
    if generation.data_parser:
        assert len(query_queue(run, generation).jobs) == 2 and len(query_nodes(run, generation).nodes) >= 2
        assert seen[-2:] == [
            ("squeue", "--states=all", f"--json={name}"),
            ("scontrol", "show", "nodes", f"--json={name}"),
        ]


def test_every_release_asks_for_a_generation_whose_documents_the_readers_are_tested_on() -> None:
    for (major, minor), name in RELEASES.items():
        generation = generation_for((major, minor, 0))
        assert generation is not None and generation.name == name
        if generation is LEGACY:
            continue
        for document in ("squeue", "nodes"):
            assert _doc(name, document)["meta"]["plugin"]["data_parser"] == generation.plugin, (name, document)
    release = _doc("v0.0.42", "squeue")["meta"]["slurm"]["version"]  # captured from a real 24.11
    captured = generation_for((int(release["major"]), int(release["minor"]), int(release["micro"])))
    assert captured is not None and captured.name == "v0.0.42"
    assert generation_for((23, 2, 7)) is None  # 23.02 prints only v0.0.39, which the agent does not read
