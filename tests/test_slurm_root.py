"""``wattplan cluster up --slurm-root``: the emulated cluster on the Slurm of another root filesystem (issue 45).

The unit tests check what is refused before anything starts and that every path reaches the shell as one literal
word. The slow test starts a cluster on the root filesystem CI builds (``make slurm-rootfs``, Slurm 24.11): its
commands answer as 24.11 through ``slurm-bin``, the host sees none of its mounts, and ``cluster down`` ends the
namespace, after which a wrapper says so instead of entering something else.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.slurm_cluster import need_emulated_cluster, up_args
from wattplan.planner.agent.commands import slurm_env
from wattplan.planner.cluster.processes import command_line
from wattplan.planner.cluster.slurm_root import (
    BIN_DIR,
    PROGRAMS,
    holder_script,
    outermost,
    python_paths,
    rootfs_problems,
    wrapper_text,
)

WATTPLAN = [sys.executable, "-m", "wattplan"]


def _fake_rootfs(root: Path, leave_out: str = "") -> Path:
    """A folder shaped like a Debian root filesystem: the programs as absolute links, as Debian installs them."""
    for path in (*PROGRAMS.values(), "/bin/sh", "/bin/sleep"):
        if path == leave_out:
            continue
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(f"/etc/alternatives/{target.name}")  # dangling on the host, as in a real root
    for folder in ("proc", "dev", "sys"):
        (root / folder).mkdir(exist_ok=True)
    return root


def test_a_root_filesystem_is_checked_before_anything_starts(tmp_path: Path) -> None:
    assert rootfs_problems(_fake_rootfs(tmp_path / "ok")) == []
    (missing,) = rootfs_problems(_fake_rootfs(tmp_path / "partial", leave_out="/usr/sbin/slurmctld"))
    assert "lacks /usr/sbin/slurmctld" in missing and "make slurm-rootfs DIR=" in missing
    assert "not a folder" in rootfs_problems(tmp_path / "nowhere")[0]
    assert "host's own root" in rootfs_problems(Path("/"))[0]


def test_cluster_up_names_a_bad_root_and_touches_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cluster"
    args = ["cluster", "up", "--dir", str(folder), "--gpus", "v100:8", "--slurm-root", str(tmp_path / "none")]
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr  # bad input
    said = done.stdout + done.stderr
    assert "--slurm-root" in said and "is not a folder" in said
    assert not folder.exists(), "nothing is made before the options are checked"
    # a root filesystem inside the cluster's folder, which every up empties of its entries: refused
    inner = _fake_rootfs(folder / "slurm")
    args = ["cluster", "up", "--dir", str(folder), "--gpus", "v100:8", "--slurm-root", str(inner)]
    done = subprocess.run([*WATTPLAN, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert done.returncode == 2 and "must not lie one inside the other" in done.stdout + done.stderr
    assert (inner / "usr" / "sbin").is_dir(), "left as it was"


def test_outermost_keeps_no_folder_inside_another() -> None:
    found = outermost([Path("/a/b"), Path("/a"), Path("/c/d"), Path("/a/b/c"), Path("/ab")])
    assert found == (Path("/a"), Path("/ab"), Path("/c/d"))
    assert all(p.is_absolute() for p in python_paths())


def test_every_path_reaches_the_shell_as_one_word(tmp_path: Path) -> None:
    odd = tmp_path / "it's a $(folder) `x`"
    script = holder_script(odd / "root", odd / "cluster", (odd / "py",))
    words = [shlex.split(line) for line in script.splitlines()]
    assert ["mount", "--bind", str(odd / "cluster"), f"{odd / 'root'}{odd / 'cluster'}"] in words
    assert ["mount", "-o", "remount,bind,ro", f"{odd / 'root'}{odd / 'py'}"] in words
    assert words[-1] == ["exec", "chroot", str(odd / "root"), "/bin/sleep", "infinity"]
    wrapper = wrapper_text("squeue", odd / "root", 4242)
    assert subprocess.run(["sh", "-n"], input=wrapper, text=True).returncode == 0
    assert "/proc/4242/root" in wrapper and "--target=4242" in wrapper


@pytest.mark.slow
def test_the_cluster_runs_on_the_root_filesystems_slurm_and_leaves_nothing_mounted() -> None:
    need_emulated_cluster()
    extra = up_args("rootfs")
    rootfs = Path(extra[1]).resolve()
    root = Path(tempfile.mkdtemp(prefix="wp-root-"))
    try:
        up = subprocess.run([*WATTPLAN, "cluster", "up", "--dir", str(root), "--gpus", "v100:8", *extra],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"PATH={root / BIN_DIR}:$PATH" in " ".join(up.stdout.split())
        manifest = json.loads((root / "cluster.json").read_text())
        env = slurm_env(manifest)
        version = subprocess.run(["sinfo", "--version"], env=env, capture_output=True, text=True, timeout=60)
        assert version.stdout.startswith("slurm-wlm 24.11"), version.stdout + version.stderr
        mounts = Path("/proc/self/mounts").read_text()
        assert str(rootfs) not in mounts, "the root filesystem's mounts live in the cluster's own namespace"
        holder = int(manifest["processes"]["slurm-root"]["pid"])
        assert os.readlink(f"/proc/{holder}/root") == str(rootfs)
    finally:
        subprocess.run([*WATTPLAN, "cluster", "down", "--dir", str(root)], capture_output=True, timeout=300)
    try:
        assert command_line(holder) is None, "cluster down ends the namespace's holder (a zombie has ended too)"
        gone = subprocess.run(["sinfo", "--version"], env=env, capture_output=True, text=True, timeout=60)
        assert gone.returncode == 127 and "is gone: cluster up again" in gone.stderr
    finally:
        shutil.rmtree(root, ignore_errors=True)
