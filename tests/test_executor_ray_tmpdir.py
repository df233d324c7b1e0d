"""``--ray local`` keeps Ray's files in a short private folder and removes it (issue 22, item 13).

Ray wrote every session under ``$TMPDIR/ray`` (``/tmp/ray``) and left it there; with a ``TMPDIR`` of 150
characters its Unix socket paths passed the 107-byte limit and Ray failed to start. Slow: each test starts
(and stops) a local Ray instance, in a fresh interpreter with its own ``TMPDIR``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers.processes import live_in_session, pool_workers
from tests.sim_helpers import A3C, R50, write_gavel_trace
from wattplan.planner.executor import RAY_TEMP_DIR_MAX, RAY_TEMP_PREFIX, ray_temp_dir, remove_ray_temp_dir

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import operator
from wattplan.planner.executor import run_tasks
outcomes = dict(run_tasks(operator.add, [(1, 2), (3, 4)], workers=2, ray_address="local", mode="thread"))
assert [outcomes[i].value for i in range(2)] == [3, 7], outcomes
print("ok")
"""


def _long_dir(tmp_path: Path, length: int) -> Path:
    folder = tmp_path / ("t" * (length - len(str(tmp_path)) - 1))
    folder.mkdir()
    assert len(str(folder)) == length
    return folder


def _ours_in_tmp() -> set[str]:
    return {p.name for p in Path("/tmp").glob(f"{RAY_TEMP_PREFIX}*")}


def _run_local_ray(tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("RAY_TMPDIR", None)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False
    )


@pytest.mark.slow
def test_local_ray_starts_with_a_150_character_tmpdir_and_leaves_nothing(tmp_path: Path) -> None:
    tmpdir = _long_dir(tmp_path, 150)
    before = _ours_in_tmp()
    done = _run_local_ray(tmpdir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
    assert list(tmpdir.iterdir()) == []  # no ray/ session folder under the TMPDIR
    assert _ours_in_tmp() == before  # the short folder under /tmp is gone again


@pytest.mark.slow
def test_local_ray_keeps_its_files_under_a_short_tmpdir_and_removes_them() -> None:
    tmpdir = Path(tempfile.mkdtemp(prefix="wpt-", dir="/tmp"))  # short enough for Ray's folder to go under it
    try:
        before = _ours_in_tmp()
        done = _run_local_ray(tmpdir)
        assert done.returncode == 0, done.stderr[-3000:]
        assert list(tmpdir.iterdir()) == []
        assert _ours_in_tmp() == before
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def test_the_folder_is_fresh_private_and_short_enough_for_ray_sockets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(_long_dir(tmp_path, 150)))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    first, second = ray_temp_dir(), ray_temp_dir()
    try:
        assert first != second
        for folder in (first, second):
            assert folder.parent == Path("/tmp") and folder.name.startswith(RAY_TEMP_PREFIX)
            assert len(os.fsencode(folder)) <= RAY_TEMP_DIR_MAX
            assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        remove_ray_temp_dir(first)
        remove_ray_temp_dir(second)
    assert not first.exists() and not second.exists()
    short = tmp_path / "s"
    short.mkdir()
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = ray_temp_dir()
    try:
        expected = Path("/tmp") if len(str(short)) + 15 > RAY_TEMP_DIR_MAX else short
        assert folder.parent == expected
    finally:
        remove_ray_temp_dir(folder)


@pytest.mark.slow
def test_sigterm_of_simulate_on_local_ray_removes_its_folder(tmp_path: Path) -> None:
    """SIGTERM while Ray tasks run: exit 143, and the folder of the local instance is gone with it."""
    tmpdir = _long_dir(tmp_path, 150)
    rows = [(A3C if k % 2 else R50, 2_000_000 + 1000 * k, 60 * k, 1 + k % 4) for k in range(300)]
    trace = write_gavel_trace(tmp_path / "long.trace", rows)  # minutes of replay: still running when signalled
    args = [str(trace), "--cluster", "v100:8", "--solver", "greedy", "--workers", "2", "-o", str(tmp_path / "o")]
    args += ["--policy", "fifo-max", "--policy", "wattplan", "--no-plots", "-q", "--ray", "local"]
    before = _ours_in_tmp()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("RAY_TMPDIR", None)
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wattplan", "simulate", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while len(pool_workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(pool_workers(proc.pid)) == 2, (tmp_path / "stderr").read_text()
        assert len(_ours_in_tmp() - before) == 1  # the running instance's folder, under /tmp: TMPDIR is too long
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143, (tmp_path / "stderr").read_text()
        assert _ours_in_tmp() == before
        assert list(tmpdir.iterdir()) == []
    finally:
        for pid in live_in_session(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
