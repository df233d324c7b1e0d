"""``wattplan cluster up`` and ``down`` run as root on a folder the user names (issue 41, docs/design.md §11.7).

``up`` checks every option and the folder before it touches anything, takes only a new, empty or marked folder,
deletes only what an earlier ``up`` recorded, never changes the mode of a folder it did not create, and writes
root's ``bin/`` wrappers with every word quoted. ``down`` ends every job of its cluster, every user's.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import wattplan.planner.cluster.up as up
from tests.slurm_cluster import need_emulated_cluster
from wattplan.planner.cli import app
from wattplan.planner.cluster import owned
from wattplan.planner.cluster.layout import ClusterLayout, write_json_atomic
from wattplan.planner.cluster.processes import command_line, start_ticks

HOSTILE = "a b'c\"$(touch PWNED1)`touch PWNED2`;touch PWNED3\nz"
"""A folder name made to break out of shell quoting: spaces, both quotes, $(...), back quotes, ; and a newline."""


class _NoStart(RuntimeError):
    pass


@pytest.fixture
def no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cluster up`` in-process without daemons: Slurm's start fails at once (cluster_up then cleans up)."""

    def refuse(self: object, timeout_s: float = 60.0) -> None:
        raise _NoStart("no daemons in this test")

    monkeypatch.setattr(up.SlurmCluster, "start", refuse)


def _up(folder: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["cluster", "up", "--dir", str(folder), "--gpus", "v100:8", *extra])
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short scratch folder, in place of pytest's own.

    Under pytest-xdist (``.../popen-gw0/test_an_empty_folder_keeps_its0``) that can exceed what munge's socket path
    allows, which ``cluster up`` refuses before anything else.
    """
    folder = Path(tempfile.mkdtemp(prefix="wpt-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _user_folder(tmp_path: Path, mode: int) -> Path:
    """A folder a user made, holding what a careless ``--dir`` would hit: work/, log/, agent.db and the like."""
    folder = tmp_path / "mine"
    (folder / "work").mkdir(parents=True)
    (folder / "work" / "thesis.tex").write_text("months of work")
    (folder / "log").mkdir()
    (folder / "agent.db").write_text("someone's database")
    (folder / "agent.db.bak").write_text("its backup")
    folder.chmod(mode)
    return folder


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() if p.is_file() else "/" for p in folder.rglob("*")}


def test_bad_options_are_refused_before_the_folder_is_touched(tmp_path: Path, no_start: None) -> None:
    folder = _user_folder(tmp_path, 0o1777)  # like /tmp
    before = _snapshot(folder)
    for args, named in (
        (["--gpus", "nosuch:8"], "--gpus"),
        (["--gpus", "v100:7"], "--gpus"),
        (["--time-scale", "0"], "--time-scale"),
    ):
        result = CliRunner().invoke(app, ["cluster", "up", "--dir", str(folder), *args])
        assert result.exit_code == 2 and named in result.output, (args, result.output)
        assert _snapshot(folder) == before, args
        assert stat.S_IMODE(folder.stat().st_mode) == 0o1777, args


def test_a_non_empty_folder_without_the_marker_is_refused_untouched(tmp_path: Path, no_start: None) -> None:
    folder = _user_folder(tmp_path, 0o1777)
    before = _snapshot(folder)
    code, output = _up(folder)
    assert code == 2, output
    assert str(folder) in output and owned.MARKER in output and "not empty" in output, output
    assert "Traceback" not in output and "_NoStart" not in output
    assert _snapshot(folder) == before
    assert stat.S_IMODE(folder.stat().st_mode) == 0o1777


def test_an_empty_folder_keeps_its_mode_and_a_new_one_is_marked_and_searchable(tmp_path: Path, no_start: None) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    empty.chmod(0o700)
    code, output = _up(empty)
    assert code == 1 and "no daemons in this test" in output, output
    assert stat.S_IMODE(empty.stat().st_mode) == 0o700  # not wattplan's folder: its mode stays
    assert (empty / owned.MARKER).is_file()
    new = tmp_path / "new" / "cluster"
    code, output = _up(new)
    assert code == 1, output
    assert stat.S_IMODE(new.stat().st_mode) == 0o755  # wattplan made it: munge's clients must reach the socket
    assert owned.read_marker(new) is not None and owned.read_marker(new)["created_root"] is True  # type: ignore[index]


def test_a_second_up_deletes_only_what_the_first_recorded(tmp_path: Path, no_start: None) -> None:
    folder = tmp_path / "cluster"
    assert _up(folder)[0] == 1
    layout = ClusterLayout(folder)
    (layout.work_dir / "slurm-1.out").write_text("an old job's output")
    (folder / "agent.db").write_text("the old cluster's agent state")
    (folder / "notes.txt").write_text("the operator's notes")
    (folder / "agent.db.bak").write_text("the operator's backup")
    code, output = _up(folder)
    assert code == 1, output
    assert not (layout.work_dir / "slurm-1.out").exists() and not (folder / "agent.db").exists()
    assert (folder / "notes.txt").read_text() == "the operator's notes"
    assert (folder / "agent.db.bak").read_text() == "the operator's backup"


def test_a_tampered_marker_deletes_nothing_outside_the_clusters_names(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "f").write_text("x")
    folder = tmp_path / "cluster"
    folder.mkdir()
    (folder / "bin").symlink_to(outside)  # a recorded name that is a link: the link goes, never what it points to
    entries = ["../precious", str(outside), "bin"]
    (folder / owned.MARKER).write_text(
        json.dumps({"format": owned.MARKER_FORMAT, "created_root": True, "entries": entries})
    )
    claimed = owned.claim(folder)
    assert claimed.recorded == ("bin",)
    owned.prepare(claimed)
    assert (outside / "f").read_text() == "x" and not (folder / "bin").exists()


def test_a_damaged_marker_is_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / owned.MARKER).write_text("{not json")
    with pytest.raises(owned.InputError) as caught:
        owned.claim(tmp_path)
    assert "damaged" in str(caught.value.problems[0]) and str(tmp_path) in str(caught.value.problems[0])


@pytest.mark.parametrize("name", ["line\nbreak", "with space", 'dq"uote', "co:lon", "hash#", "pct%n"])
def test_a_path_slurm_or_path_cannot_carry_is_refused_before_anything_is_made(
    tmp_path: Path, no_start: None, name: str
) -> None:
    folder = tmp_path / name
    code, output = _up(folder)
    assert code == 2 and "--dir" in output, output
    assert not folder.exists() and list(tmp_path.iterdir()) == []
    if "\n" in name:  # the path is shown escaped, not as a raw line break
        assert "line\\nbreak" in output, output


def test_root_wrappers_carry_a_hostile_path_as_one_literal_word(tmp_path: Path) -> None:
    """Every ``bin/`` wrapper Slurm runs as root exports the folder's path literally and runs no part of it."""
    root = tmp_path / HOSTILE
    layout = ClusterLayout(root)
    env = up._write_bin(layout)
    assert env["WATTPLAN_CLUSTER_DIR"] == str(root)
    show = 'printf "%s\\0" "$WATTPLAN_CLUSTER_DIR" "$WATTPLAN_SETTINGS_DIR" "$PATH" "$@"'
    for name in ("prolog", "epilog", "task_prolog", "apply_settings", "nvidia-smi"):
        wrapper = layout.bin_dir / name
        done = subprocess.run(
            ["bash", "-c", f'exec() {{ {show}; }}; . "$1" extra', "sh", str(wrapper)],
            cwd=tmp_path,
            capture_output=True,
            timeout=20,
        )
        assert done.returncode == 0, (name, done.stderr)
        words = done.stdout.decode().split("\0")
        assert words[0] == str(root), name
        assert words[-2] == "extra", name
        if name != "nvidia-smi":
            assert words[1] == str(layout.settings_dir) and words[2].startswith(f"{layout.bin_dir}:"), name
    assert not [p for p in tmp_path.rglob("PWNED*")] and not list(Path.cwd().glob("PWNED*"))


# ---------------------------------------------------------------- a real cluster (root, Slurm, Prometheus)


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wattplan", *args], capture_output=True, text=True, timeout=timeout)


def _pids_running(text: str) -> list[int]:
    """PIDs whose command line is exactly ``text``."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and command_line(int(p.name)) == text]


@pytest.fixture
def base() -> Iterator[Path]:
    need_emulated_cluster()
    folder = Path(tempfile.mkdtemp(prefix="wp-trust-"))
    folder.chmod(0o755)  # this test's own folder: another user's sbatch must reach the munge socket below it
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_up_with_quotes_in_the_path_and_down_ends_every_users_jobs(base: Path) -> None:
    """A path with quotes, $(...) and back quotes runs as a cluster; ``down`` ends root's and nobody's jobs."""
    root = base / "c'$(touch${IFS}PWNED)`touch${IFS}PWNED`;x"
    started = _cli("cluster", "up", "--dir", str(root), "--gpus", "v100:8", "--time-scale", "60")
    marks = (f"sleep {4000 + os.getpid() % 1000}", f"sleep {5000 + os.getpid() % 1000}")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert not list(base.rglob("PWNED")) and not list(Path.cwd().glob("PWNED"))
        env = {**os.environ, "SLURM_CONF": str(ClusterLayout(root).slurm_conf)}
        for user, mark in zip(("root", "nobody"), marks, strict=True):
            done = subprocess.run(
                ["runuser", "-u", user, "--", "sbatch", "--parsable", "-o", "/dev/null", "--chdir", "/tmp"]
                + ["--wrap", f"exec {mark}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert done.returncode == 0, (user, done.stderr)
        deadline = time.monotonic() + 300  # an event wait: Slurm starts them within seconds on an idle machine
        while not all(_pids_running(m) for m in marks):
            assert time.monotonic() < deadline, "the jobs never ran"
            time.sleep(0.3)
        assert not list(base.rglob("PWNED")), "a node script ran part of the folder's path"
        stopped = _cli("cluster", "down", "--dir", str(root))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        deadline = time.monotonic() + 30
        while any(_pids_running(m) for m in marks):
            assert time.monotonic() < deadline, f"jobs left running after cluster down: {stopped.stdout}"
            time.sleep(0.3)
    finally:
        _cli("cluster", "down", "--dir", str(root))
        for mark in marks:  # this test's own jobs, should cluster down have left them
            for pid in _pids_running(mark):
                os.kill(pid, 9)


def test_down_stops_a_recorded_pid_only_while_it_is_the_process_up_started(tmp_path: Path) -> None:
    """A PID the system gave to another process since (another start time) is never signalled."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        started = start_ticks(proc.pid)
        assert started is not None
        layout = ClusterLayout(tmp_path)
        entry = {"pid": proc.pid, "match": "sleep", "started": started + 1}
        write_json_atomic(layout.manifest, {"nodes": [], "processes": {"emulator": entry}})
        assert up.cluster_down(tmp_path, log=lambda _m: None) == []
        assert proc.poll() is None, "cluster down signalled a process it did not start"
        write_json_atomic(layout.manifest, {"nodes": [], "processes": {"emulator": {**entry, "started": started}}})
        assert up.cluster_down(tmp_path, log=lambda _m: None) == ["emulator"]
        assert proc.wait(timeout=20) is not None
    finally:
        proc.kill()
        proc.wait()


def test_down_stops_last_started_first() -> None:
    names = ["emulator", "munged", "node-agent-v100-0", "prometheus", "slurmctld", "slurmd-v100-0"]  # JSON's order
    assert sorted(names, key=up._stop_rank) == [
        "prometheus",
        "node-agent-v100-0",
        "emulator",
        "slurmd-v100-0",
        "slurmctld",
        "munged",
    ]


def test_a_second_up_refuses_while_an_agent_holds_the_folders_state(tmp_path: Path, no_start: None) -> None:
    folder = tmp_path / "cluster"
    assert _up(folder)[0] == 1
    (folder / "agent.db").write_text("a running agent's state")
    fd = os.open(folder / "agent.db.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running agent holds it (planner.agent.store)
        os.write(fd, b"4242\n")
        code, output = _up(folder)
        assert code == 1 and "pid 4242" in output and "stop it first" in output, output
        assert (folder / "agent.db").read_text() == "a running agent's state"
    finally:
        os.close(fd)
    assert _up(folder)[0] == 1 and not (folder / "agent.db").exists()  # once the agent is gone


def test_the_node_scripts_slurm_runs_are_the_cluster_folders_own(tmp_path: Path) -> None:
    """Every script a wrapper in ``bin/`` runs lies in the cluster's folder, readable by every user.

    The task prolog runs as the job's user: run from the package's folder, it failed for a job of user nobody when
    the checkout was private (mode 700, as ``mktemp -d`` makes it), and that job never ran.
    """
    layout = ClusterLayout(tmp_path / "c")
    up._write_bin(layout)
    for name in ("prolog", "epilog", "task_prolog", "apply_settings"):
        script = Path(shlex.split((layout.bin_dir / name).read_text().splitlines()[-1])[2])
        assert script.is_relative_to(layout.root), script
        for path in (script, script.parent / "common.sh"):
            assert path.read_text() == (up.node_files_dir() / path.name).read_text()
            assert path.stat().st_mode & 0o444 == 0o444
