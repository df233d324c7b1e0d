"""Launch files trust nothing of a job before it runs as its user, and nothing of a folder they did not write.

Issue 41 (High 1, 3, 5): a node script exported a job's ``env`` (``PATH``, ``LD_PRELOAD``) as root before it
dropped to the job's user, and a job's ``env`` overrode the launcher's ``CUDA_VISIBLE_DEVICES`` and
``WATTPLAN_JOB_ID`` (twice the name in a Kubernetes container, the job's last); ``apply.sh`` found the previous
round's jobs by name across all users; launching again into a launch folder deleted ``submitted.tsv``,
``applied.tsv`` and the logs, so ``apply.sh`` submitted and extended twice.

The node-script tests run the rendered script for real as root, with a job of user ``nobody``; they skip when
not root or when ``runuser`` or the ``nobody`` user is missing.
"""

from __future__ import annotations

import copy
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.launch_helpers import hand_plan, install_fake_nvidia, launch_instance_doc
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.launcher import launch_plan
from wattplan.planner.launch.render import build_model, is_launcher_env

JOB = "train-4"  # jobs[0] of the launch instance: 4 GPUs on v100-0, alone
HIJACK_ENV = {
    "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    "WATTPLAN_JOB_ID": "someone-else",
    "CUDA_MPS_PIPE_DIRECTORY": "/x",
}


def _instance(job: dict[str, Any]) -> Any:
    """The launch instance with ``job``'s fields merged into jobs[0] (``train-4``)."""
    doc = copy.deepcopy(launch_instance_doc())
    doc["jobs"][0].update(job)
    return parse_instance(doc)


def _root_only() -> None:
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser (the node scripts run as root)")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("needs the user nobody")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder under /tmp that ``nobody`` can read and write (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="wattplan-trust-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _start_node(script: Path, tmp_path: Path, run_dir: Path, allow_root: bool = True) -> None:
    """Run ``HOST.sh start`` with the fake nvidia-smi and wait (generously) for every job it started."""
    install_fake_nvidia(tmp_path / "bin", tmp_path / "smi.log")
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_RUN_DIR": str(run_dir), "HOME": "/root"}
    if allow_root:
        env["WATTPLAN_ROOT_JOBS"] = "allow"  # the other jobs of the node name no user
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    for pid_file in run_dir.glob("*.pid"):
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 60
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def _job_log(tmp_path: Path, run_dir: Path, inst: Any) -> str:
    model = build_model(hand_plan(inst), inst, HostMap())
    name = next(m.name for u in model.units for m in u.members if m.job_id == JOB)
    return (run_dir / f"{name}.log").read_text()


# ----------------------------------------------------------------------------- High 1: node scripts


def test_node_script_takes_nothing_of_the_job_before_it_drops_root(tmp_path: Path, shared_dir: Path) -> None:
    """The job's PATH would find a planted ``id``/``runuser``/``bash`` as root; its workdir is root's alone."""
    _root_only()
    evil, marks, secret = shared_dir / "evil-bin", shared_dir / "marks", shared_dir / "root-only"
    evil.mkdir(mode=0o755)
    marks.mkdir(mode=0o777)
    marks.chmod(0o777)
    secret.mkdir(mode=0o700)
    for tool in ("id", "runuser", "bash", "sh", "env", "setpriv"):
        real = shutil.which(tool) or f"/usr/bin/{tool}"
        (evil / tool).write_text(f'#!/bin/sh\ntouch "{marks}/{tool}-as-$(/usr/bin/id -u)"\nexec {real} "$@"\n')
        (evil / tool).chmod(0o755)
    job = {
        "user": "nobody",
        "workdir": str(secret),
        "env": {"PATH": f"{evil}:/usr/bin:/bin", "LD_PRELOAD": str(shared_dir / "no-such-lib.so")},
        "command": ["/bin/sh", "-c", "echo uid=$(/usr/bin/id -u) pwd=$(pwd)"],
    }
    inst = _instance(job)
    launch_plan(hand_plan(inst), inst, "shell", tmp_path / "shell")
    run_dir = tmp_path / "run"
    _start_node(tmp_path / "shell" / "v100-0.sh", tmp_path, run_dir)
    as_root = sorted(p.name for p in marks.iterdir() if p.name.endswith("-as-0"))
    assert as_root == [], f"the job's PATH ran {as_root} as root"
    log = _job_log(tmp_path, run_dir, inst)
    assert f"pwd={secret}" not in log, "the job entered a folder only root may enter"
    assert "uid=0" not in log

    job["workdir"] = str(shared_dir)  # a folder nobody may enter: the job runs there, as nobody
    inst = _instance(job)
    launch_plan(hand_plan(inst), inst, "shell", tmp_path / "shell2")
    _start_node(tmp_path / "shell2" / "v100-0.sh", tmp_path, tmp_path / "run2")
    log = _job_log(tmp_path, tmp_path / "run2", inst)
    assert f"uid={pwd.getpwnam('nobody').pw_uid} pwd={shared_dir}\n" in log


def test_node_script_as_root_refuses_jobs_without_a_user(tmp_path: Path) -> None:
    _root_only()
    inst = _instance({})
    launch_plan(hand_plan(inst), inst, "shell", tmp_path / "shell")
    install_fake_nvidia(tmp_path / "bin", tmp_path / "smi.log")
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "WATTPLAN_RUN_DIR": str(tmp_path / "run")}
    script = str(tmp_path / "shell" / "v100-0.sh")
    run = subprocess.run(["bash", script], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert run.returncode == 2 and '"train-4"' in run.stderr and "WATTPLAN_ROOT_JOBS=allow" in run.stderr
    assert not (tmp_path / "smi.log").exists() and not (tmp_path / "run").exists()  # nothing touched


def test_node_script_gives_the_launchers_variables_not_the_jobs(tmp_path: Path) -> None:
    inst = _instance({"env": {**HIJACK_ENV, "MINE": "kept"}, "command": ["env"]})
    launch_plan(hand_plan(inst), inst, "shell", tmp_path / "shell")
    run_dir = tmp_path / "run"
    _start_node(tmp_path / "shell" / "v100-0.sh", tmp_path, run_dir)
    env = dict(line.split("=", 1) for line in _job_log(tmp_path, run_dir, inst).splitlines() if "=" in line)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and env["WATTPLAN_JOB_ID"] == JOB
    assert "CUDA_MPS_PIPE_DIRECTORY" not in env and env["MINE"] == "kept"
    text = (tmp_path / "shell" / "v100-0.sh").read_text()
    assert "someone-else" not in text
    note = "# Not from the job's env (the launcher sets them): CUDA_MPS_PIPE_DIRECTORY, CUDA_VISIBLE_DEVICES, WATTPLAN_"
    assert note in text


def test_sbatch_script_gives_the_launchers_variables_not_the_jobs(tmp_path: Path) -> None:
    inst = _instance({"env": {**HIJACK_ENV, "MINE": "kept"}, "command": ["env"]})
    launch_plan(hand_plan(inst), inst, "slurm", tmp_path / "slurm")
    unit = next(u for u in build_model(hand_plan(inst), inst, HostMap()).units if u.job_ids == (JOB,))
    env = {
        "PATH": os.environ["PATH"],
        "SLURMD_NODENAME": unit.parts[0].host,
        "SLURM_JOB_GPUS": unit.parts[0].indices_text,
        "CUDA_VISIBLE_DEVICES": unit.parts[0].indices_text,  # what Slurm gives the job
    }
    script = tmp_path / "slurm" / "jobs" / f"{unit.name}.sbatch"
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert run.returncode == 0, run.stderr
    got = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    assert got["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and got["WATTPLAN_JOB_ID"] == JOB and got["MINE"] == "kept"
    assert "CUDA_MPS_PIPE_DIRECTORY" not in got and "someone-else" not in script.read_text()


def test_kubernetes_container_names_each_variable_once_with_the_launchers_value(tmp_path: Path) -> None:
    inst = _instance({"env": {**HIJACK_ENV, "WATTPLAN_GPUS": "0-7", "NVIDIA_VISIBLE_DEVICES": "all", "MINE": "1"}})
    launch_plan(hand_plan(inst), inst, "kubernetes", tmp_path / "k8s")
    jobs = list(yaml.safe_load_all((tmp_path / "k8s" / "jobs.yaml").read_text()))
    for job in jobs:
        container = job["spec"]["template"]["spec"]["containers"][0]
        names = [e["name"] for e in container["env"]]
        assert len(names) == len(set(names)), f"a name twice in {job['metadata']['name']}: {names}"
    ours = next(j for j in jobs if j["metadata"]["annotations"]["wattplan.dev/job-id"] == JOB)
    env = {e["name"]: e["value"] for e in ours["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["WATTPLAN_JOB_ID"] == JOB and env["WATTPLAN_GPUS"] == "0,1,2,3" and env["MINE"] == "1"
    assert "NVIDIA_VISIBLE_DEVICES" not in env and "CUDA_VISIBLE_DEVICES" not in env
    dropped = ours["metadata"]["annotations"]["wattplan.dev/env-not-used"].split(",")
    assert set(dropped) == {*HIJACK_ENV, "WATTPLAN_GPUS", "NVIDIA_VISIBLE_DEVICES"}


def test_launcher_variable_names() -> None:
    assert all(is_launcher_env(n) for n in ("CUDA_VISIBLE_DEVICES", "WATTPLAN_ANY", "CUDA_MPS_LOG_DIRECTORY"))
    assert not any(is_launcher_env(n) for n in ("PATH", "CUDA_HOME", "WATTPLAN", "MY_WATTPLAN_X"))


# ----------------------------------------------------------------------------- High 3: apply.sh acts by id

FAKE_SLURM = r'''#!{python}
"""Fake Slurm for apply.sh/submit.sh: a queue file of "ID<TAB>NAME<TAB>USER" lines; every call is logged."""
import os, sys
from pathlib import Path

state = Path({state!r})
queue, log = state / "queue.tsv", state / "calls.log"
tool, args = Path(sys.argv[0]).name, sys.argv[1:]
with open(log, "a") as fh:
    fh.write(tool + " " + " ".join(args) + "\n")
rows = [l.split("\t") for l in queue.read_text().splitlines()] if queue.exists() else []


def opt(name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    if name in args:
        return args[args.index(name) + 1]
    return None


if tool == "sbatch":
    script = Path(args[-1]).read_text()
    name = next(l.split("=", 1)[1] for l in script.splitlines() if l.startswith("#SBATCH --job-name="))
    user = opt("--uid") or "root"
    new = str(1000 + len(rows) + int((state / "gone").read_text() if (state / "gone").exists() else 0))
    rows.append([new, name, user])
    print(new)
elif tool == "squeue":
    fmt, ids, name, user = opt("-o"), opt("-j"), opt("--name"), opt("-u")
    for i, n, u in rows:
        if (ids and i not in ids.split(",")) or (name and n != name) or (user and u != user):
            continue
        print(fmt.replace("%i", i).replace("%j", n).replace("%u", u))
elif tool == "scancel":
    gone = [a for a in args if not a.startswith("-")]
    rows = [r for r in rows if r[0] not in gone]
    old = int((state / "gone").read_text()) if (state / "gone").exists() else 0
    (state / "gone").write_text(str(old + len(gone)))
queue.write_text("".join("\t".join(r) + "\n" for r in rows))
'''


def _fake_slurm(bin_dir: Path, state: Path) -> dict[str, str]:
    import sys

    bin_dir.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    for tool in ("sbatch", "squeue", "scontrol", "scancel"):
        path = bin_dir / tool
        path.write_text(FAKE_SLURM.format(python=sys.executable, state=str(state)))
        path.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "WATTPLAN_CHECKPOINT_WAIT_S": "0",
        "HOME": "/root",
        "WATTPLAN_ROOT_JOBS": "allow",  # the rounds' jobs name no user
    }


def _two_round_folders(tmp_path: Path, from_dir: bool = True) -> tuple[Path, Path]:
    from tests.followon_rounds import two_rounds
    from wattplan.planner.launch.launcher import LaunchOptions, launch_followon

    _, plan7, inst8, plan8 = two_rounds()
    r7, r8 = tmp_path / "round 7", tmp_path / "r8"  # a space: the path is quoted in apply.sh
    launch_plan(plan7, two_rounds()[0], "slurm", r7)
    launch_followon(plan8, inst8, plan7, r8, LaunchOptions(from_dir=r7 if from_dir else None))
    return r7, r8


def _run(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=60)


def test_apply_acts_only_on_the_recorded_job_ids_never_on_a_namesake(tmp_path: Path) -> None:
    r7, r8 = _two_round_folders(tmp_path)
    state = tmp_path / "slurm"
    env = _fake_slurm(tmp_path / "bin", state)
    assert _run(r7 / "submit.sh", env).returncode == 0
    ours = {line.split("\t")[0] for line in (r7 / "jobs.tsv").read_text().splitlines()}
    # mallory queues jobs named like round 7's (names are predictable and visible to everyone)
    names = [line.split("\t")[1] for line in (r7 / "jobs.tsv").read_text().splitlines()]
    with open(state / "queue.tsv", "a") as fh:
        fh.writelines(f"{900 + k}\t{n}\tmallory\n" for k, n in enumerate(names))
    (state / "calls.log").unlink()

    done = _run(r8 / "apply.sh", env)
    assert done.returncode == 0, done.stderr
    calls = (state / "calls.log").read_text().splitlines()
    touched = [c for c in calls if c.startswith(("scontrol", "scancel"))]
    assert touched, calls
    for call in touched:
        ids = [w.split("=", 1)[1] if w.startswith("JobId=") else w for w in call.split()[1:]]
        ids = [i for i in ids if i.isdigit()]
        assert ids and set(ids) <= ours, f"apply.sh acted on a job round 7 did not submit: {call}"
    assert not any("--name" in c for c in calls if c.startswith("squeue"))
    extends = [c for c in calls if "TimeLimit" in c]
    assert len(extends) == 2  # keep and "a re-set"

    (state / "calls.log").unlink()  # a second run: nothing submitted, extended or ended again
    again = _run(r8 / "apply.sh", env)
    assert again.returncode == 0, again.stderr
    assert not [c for c in (state / "calls.log").read_text().splitlines() if c.startswith(("sbatch", "scontrol"))]
    assert [line.split("\t")[2] for line in (r8 / "jobs.tsv").read_text().splitlines()].count("mallory") == 0


def test_apply_refuses_an_ended_job_it_has_no_id_for_and_needs_the_previous_folder(tmp_path: Path) -> None:
    r7, r8 = _two_round_folders(tmp_path)
    state = tmp_path / "slurm"
    env = _fake_slurm(tmp_path / "bin", state)
    assert _run(r7 / "submit.sh", env).returncode == 0
    rows = (r7 / "jobs.tsv").read_text().splitlines()
    (r7 / "jobs.tsv").write_text("".join(r + "\n" for r in rows if "wattplan-done-" not in r))
    (state / "calls.log").unlink()
    refused = _run(r8 / "apply.sh", env)
    assert (
        refused.returncode == 1 and "wattplan-done-" in refused.stderr and "no Slurm job id recorded" in refused.stderr
    )
    calls = (state / "calls.log").read_text().splitlines()
    assert not [c for c in calls if c.startswith(("sbatch", "scancel", "scontrol"))]

    _, bare = _two_round_folders(tmp_path / "bare", from_dir=False)
    needs = _run(bare / "apply.sh", env)
    assert needs.returncode == 2 and "PREVIOUS_FOLDER" in needs.stderr
    assert _run(bare / "apply.sh", env, str(r7)).returncode == 1  # the same refusal, folder given at run time


def test_from_dir_must_be_the_previous_rounds_slurm_folder(tmp_path: Path) -> None:
    from wattplan.planner.contracts.problems import InputError

    r7, r8 = _two_round_folders(tmp_path)
    with pytest.raises(InputError) as exc:
        _two_round_folders_from(tmp_path, r8)
    assert exc.value.problems[0].code == "bad-from-dir"


def _two_round_folders_from(tmp_path: Path, from_dir: Path) -> None:
    from tests.followon_rounds import two_rounds
    from wattplan.planner.launch.launcher import LaunchOptions, launch_followon

    _, plan7, inst8, plan8 = two_rounds()
    launch_followon(plan8, inst8, plan7, tmp_path / "other", LaunchOptions(from_dir=from_dir))


# ----------------------------------------------------------------------------- High 5: the launch folder


def test_launching_again_keeps_what_the_scripts_recorded(tmp_path: Path) -> None:
    r7, r8 = _two_round_folders(tmp_path)
    state = tmp_path / "slurm"
    env = _fake_slurm(tmp_path / "bin", state)
    assert _run(r7 / "submit.sh", env).returncode == 0
    assert _run(r8 / "apply.sh", env).returncode == 0
    (r8 / "logs" / "wattplan-r8-new-x.1234.out").write_text("a running job's log\n")
    records = {name: (r8 / name).read_text() for name in ("submitted.tsv", "applied.tsv", "jobs.tsv")}
    assert all(records.values())

    _two_round_folders(tmp_path)  # the same round rendered again into both folders
    assert {name: (r8 / name).read_text() for name in records} == records
    assert (r8 / "logs" / "wattplan-r8-new-x.1234.out").exists()
    (state / "calls.log").unlink()
    assert _run(r8 / "apply.sh", env).returncode == 0
    calls = (state / "calls.log").read_text().splitlines()
    assert not [c for c in calls if c.startswith(("sbatch", "scontrol", "scancel"))], calls


def test_a_folder_with_another_launchs_records_is_refused(tmp_path: Path) -> None:
    from wattplan.planner.contracts.problems import InputError

    r7, _ = _two_round_folders(tmp_path)
    (r7 / "submitted.tsv").write_text("1001\tjob\twattplan-r7-keep\n")
    inst = _instance({})
    with pytest.raises(InputError) as exc:
        launch_plan(hand_plan(inst), inst, "slurm", r7)  # round 7 of another plan
    assert exc.value.problems[0].code == "launch-state"
    assert (r7 / "submitted.tsv").read_text() == "1001\tjob\twattplan-r7-keep\n"


def test_an_existing_folder_keeps_its_mode_and_a_foreign_one_is_refused(tmp_path: Path) -> None:
    from wattplan.planner.contracts.problems import InputError

    inst = _instance({})
    mine = tmp_path / "shared-out"
    mine.mkdir()
    mine.chmod(0o2770)
    launch_plan(hand_plan(inst), inst, "slurm", mine)
    assert mine.stat().st_mode & 0o7777 == 0o2770
    assert (mine / "submit.sh").exists() and not [p for p in mine.iterdir() if p.name.startswith(".")]

    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "notes").write_text("mine")
    with pytest.raises(InputError):
        launch_plan(hand_plan(inst), inst, "slurm", foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes"]


def test_submit_as_root_refuses_jobs_without_a_user(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (the guard is for scripts run as root)")
    r7, _ = _two_round_folders(tmp_path)
    env = _fake_slurm(tmp_path / "bin", tmp_path / "slurm")
    del env["WATTPLAN_ROOT_JOBS"]
    refused = _run(r7 / "submit.sh", env)
    assert refused.returncode == 2 and '"keep"' in refused.stderr and "jobs[].user" in refused.stderr
    assert not (tmp_path / "slurm" / "calls.log").exists() and not (r7 / "submitted.tsv").exists()


def test_cli_from_dir_is_checked_and_named(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from cli import app
    from tests.followon_rounds import two_rounds
    from wattplan.planner.contracts.instance_io import instance_to_doc
    from wattplan.planner.contracts.plan import write_plan

    _, plan7, inst8, plan8 = two_rounds()
    write_plan(plan7, tmp_path / "p7.json")
    write_plan(plan8, tmp_path / "p8.json")
    (tmp_path / "i8.json").write_text(json.dumps(instance_to_doc(inst8)))
    (tmp_path / "not-a-launch").mkdir()
    args = ["launch", str(tmp_path / "p8.json"), "--instance", str(tmp_path / "i8.json"), "--to", "slurm"]
    bad = CliRunner().invoke(
        app,
        [
            *args,
            "--from",
            str(tmp_path / "p7.json"),
            "--from-dir",
            str(tmp_path / "not-a-launch"),
            "-o",
            str(tmp_path / "x"),
        ],
    )
    assert bad.exit_code == 2 and "bad-from-dir" in bad.output and "--from-dir" in bad.output
    alone = CliRunner().invoke(app, [*args, "--from-dir", str(tmp_path / "not-a-launch"), "-o", str(tmp_path / "y")])
    assert alone.exit_code == 2 and "--from-dir" in alone.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
