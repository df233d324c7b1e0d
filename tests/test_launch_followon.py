"""``wattplan launch --from OLD_PLAN`` and the jobs' time limit, without a cluster (docs/design.md §11.1).

The rounds are :mod:`tests.followon_rounds`: from round 7 to 8 ``keep`` runs on, ``a re-set`` changes its power
limit in place, ``grow`` is resized, ``done`` stops and ``new`` starts. On a real Slurm: ``test_slurm_followon``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.followon_rounds import round_doc, two_rounds
from tests.launch_helpers import hand_plan, launch_instance, shellcheck
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import write_plan
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.launch.launcher import LaunchOptions, launch_followon, launch_plan
from wattplan.planner.launch.limits import LimitOptions, round_limits


def _directives(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", text, flags=re.M))


def test_time_limit_is_the_round_plus_grace_in_whole_minutes() -> None:
    limits = round_limits(300, LimitOptions(grace_s=130, signal_lead_s=45))
    assert (limits.time_limit_min, limits.signal_lead_s, limits.extend_min) == (8, 45, 5)  # 430 s -> 8 min
    assert round_limits(300, LimitOptions(enabled=False)).time_limit_min is None
    assert round_limits(300, LimitOptions(signal_lead_s=0)).signal_lead_s is None
    with pytest.raises(InputError) as exc:
        round_limits(300, LimitOptions(signal_lead_s=301))
    assert exc.value.problems[0].path == "--signal-lead-s"


def test_sbatch_gets_time_and_signal(tmp_path: Path) -> None:
    inst = launch_instance(v100_only=True)  # round.duration_s 300
    launch_plan(hand_plan(inst, v100_only=True), inst, "slurm", tmp_path / "a")
    script = next((tmp_path / "a" / "jobs").iterdir()).read_text()
    assert _directives(script)["time"] == "7" and _directives(script)["signal"] == "B:USR1@60"
    off = LaunchOptions(limits=LimitOptions(enabled=False))
    launch_plan(hand_plan(inst, v100_only=True), inst, "slurm", tmp_path / "b", off)
    script = next((tmp_path / "b" / "jobs").iterdir()).read_text()
    assert "time" not in _directives(script) and "signal" not in _directives(script)


def test_kubernetes_jobs_get_a_deadline(tmp_path: Path) -> None:
    inst = launch_instance(v100_only=True)
    launch_plan(hand_plan(inst, v100_only=True), inst, "kubernetes", tmp_path / "k")
    assert "activeDeadlineSeconds: 420" in (tmp_path / "k" / "jobs.yaml").read_text()


@pytest.fixture
def followon(tmp_path: Path) -> Path:
    _, plan7, inst8, plan8 = two_rounds()
    out = tmp_path / "round8"
    launch_followon(plan8, inst8, plan7, out)
    return out


def test_only_what_changes_is_rendered(followon: Path) -> None:
    jobs = sorted(p.name for p in (followon / "jobs").iterdir())
    assert len(jobs) == 2 and jobs[0].startswith("wattplan-r8-grow-") and jobs[1].startswith("wattplan-r8-new-")
    doc = json.loads((followon / "changes.json").read_text())
    assert [(a["action"], a["job_id"]) for a in doc["diff"]["actions"]] == [
        ("stop", "done"),
        ("resize", "grow"),
        ("re-set", "a re-set"),
        ("start", "new"),
    ]
    slurm = doc["slurm"]
    assert [(k["jobs"], k["re_set"], k["extend_min"]) for k in slurm["keep"]] == [
        (["keep"], False, 5),
        (["a re-set"], True, 5),
    ]
    assert [e["jobs"] for e in slurm["end"]] == [["grow"], ["done"]]
    assert [(s["jobs"], s["restart"]) for s in slurm["submit"]] == [(["grow"], True), (["new"], False)]
    assert '| re-set | "a re-set" |' in (followon / "changes.md").read_text()


def test_node_steps_touch_only_changed_gpus(followon: Path) -> None:
    setup = (followon / "nodes" / "v100-0.setup.sh").read_text()
    assert "smi 4,5 -pl 250" in setup  # re-set in place
    assert "smi 6,7 -pl 150" in setup  # the resized job's GPUs
    assert not re.search(r"smi [0-9,]*[0-3][0-9,]* ", setup)  # the kept job's GPUs are left alone
    assert "gres" not in _directives(setup)  # the kept jobs hold GPUs of this node
    assert "smi 0 -pl 150" in (followon / "nodes" / "v100-1.setup.sh").read_text()


def test_apply_runs_in_a_safe_order(followon: Path) -> None:
    text = (followon / "apply.sh").read_text()
    order = [
        text.index("TimeLimit=+5"),
        text.index('scancel "${row%% *}"'),
        text.index("scancel --batch --signal=USR1"),
        text.index("submit setup v100-0"),
        text.index("submit job wattplan-r8-grow-"),
        text.index("submit job wattplan-r8-new-"),
        text.index("submit reset v100-0"),
    ]
    assert order == sorted(order)
    # by the ids the previous round's folder recorded (jobs.tsv), never by name
    assert "previous wattplan-keep-" in text and "previous wattplan-done-" in text and "--name" not in text
    shellcheck(sorted(followon.rglob("*.sh")) + sorted(followon.rglob("*.sbatch")))


def _files(tmp_path: Path, plan, inst, name: str) -> tuple[Path, Path]:
    plan_path, inst_path = tmp_path / f"{name}.plan.json", tmp_path / f"{name}.instance.json"
    write_plan(plan, plan_path)
    inst_path.write_text(json.dumps(instance_to_doc(inst)))
    return plan_path, inst_path


def test_cli_follow_on_and_a_plan_of_another_cluster(tmp_path: Path) -> None:
    _, plan7, inst8, plan8 = two_rounds()
    old, _ = _files(tmp_path, plan7, inst8, "r7")
    new, inst = _files(tmp_path, plan8, inst8, "r8")
    args = ["launch", str(new), "--instance", str(inst), "--to", "slurm", "--out", str(tmp_path / "o")]
    ok = CliRunner().invoke(app, [*args, "--from", str(old)])
    assert ok.exit_code == 0, ok.output
    assert "keep 2 (1 re-set in place), end 2, submit 2" in " ".join(ok.output.split())

    doc = round_doc(7)
    doc["gpu_types"][0]["name"] = "h100"
    doc["profiles"] = [{**p, "gpu_type": "h100"} for p in doc["profiles"]]
    doc["pairs"] = [{**p, "gpu_type": "h100"} for p in doc["pairs"]]
    from wattplan.planner.contracts.instance_io import parse_instance
    from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan

    other = parse_instance(doc)
    other_plan = assemble_plan(other, [Allocation(("keep",), "h100", 4, 250)], SolveInfo("hand", "feasible"))
    other_path, _ = _files(tmp_path, other_plan, other, "other")
    bad = CliRunner().invoke(app, [*args, "--from", str(other_path)])
    assert bad.exit_code == 2, bad.output
    assert "from-other-cluster" in bad.output and "jobs[0].gpu_type" in bad.output

    later = CliRunner().invoke(app, [*args, "--from", str(new)])  # round 8 after round 8
    assert later.exit_code == 2 and "from-not-earlier" in later.output
    kube = CliRunner().invoke(app, [*args[:5], "kubernetes", *args[6:], "--from", str(old)])
    assert kube.exit_code == 2 and "--from" in kube.output
