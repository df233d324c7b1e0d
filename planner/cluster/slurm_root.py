"""The emulated cluster on the Slurm of another root filesystem (``wattplan cluster up --slurm-root DIR``).

A root filesystem built from another distribution's packages (``make slurm-rootfs``: Debian 13's Slurm 24.11,
beside the host's 22.05) holds its own ``slurmctld``, ``slurmd``, ``munged`` and client commands, each linked
against that system's libraries: they run only inside it. The cluster runs them there with ``chroot``, in a
mount namespace of its own, so that nothing is mounted where the host (or its ``rm -r``) sees it:

- a *holder* process, ``unshare --mount --propagation private``, bind-mounts into the root filesystem, at the same
  paths, the cluster's folder (read-write) and what the cluster's Python programs need (the interpreter's
  prefixes and wattplan's source, read-only; the node scripts, the stand-in ``nvidia-smi``, the trainer and the
  power programs run inside), ``/proc``, ``/dev`` and ``/sys``, and the host's ``/etc/hosts`` (read-only: the
  node names resolve as on the host); then it execs ``chroot DIR sleep infinity``. Its mounts live as long as
  it or a process inside its namespace does, and vanish with the last of them;
- every daemon and client is started through a wrapper in the cluster's ``slurm-bin/`` that enters the holder's
  mount namespace and root with ``nsenter`` and execs the program there, in the caller's folder when that folder
  is seen inside (else ``/``), with ``PATH`` reset to the root's own. A wrapper first checks that the holder still
  runs in that root (a reused PID is never entered). ``PATH=CLUSTER/slurm-bin:$PATH`` makes the emulated
  cluster's commands those of its Slurm (:func:`client_path`; ``wattplan agent --cluster`` sets it itself).

Mount points the bind mounts need are created in the root filesystem (empty folders, left there). Everything
needs root, as the emulated cluster does. The rules of a usable root filesystem are :func:`rootfs_problems`'.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import wattplan
from wattplan.planner.cluster.slurm_daemons import CLIENTS, DAEMONS
from wattplan.planner.contracts.jsonio import write_text_atomic

BIN_DIR = "slurm-bin"
"""The wrappers' folder in the cluster's folder."""
PROGRAMS: dict[str, str] = {
    **{name: f"/usr/sbin/{name}" for name in DAEMONS},
    **{name: f"/usr/bin/{name}" for name in CLIENTS},
}
"""Where each program lives in a Debian root filesystem."""
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""``PATH`` inside the root filesystem."""
HOLDER_MATCH = "sleep infinity"
"""The holder's command line once it runs in the root (what ``cluster down`` matches before stopping it)."""
READY_S = 20.0
"""Seconds the holder has to mount everything and enter the root."""


class SlurmRootError(RuntimeError):
    """The root filesystem cannot hold the cluster's Slurm; the message says why."""


def rootfs_problems(rootfs: Path) -> list[str]:
    """Why ``rootfs`` cannot run the cluster's Slurm (empty when it can).

    It must be a folder other than ``/`` holding every program of :data:`PROGRAMS`, ``/bin/sh``, ``/bin/sleep``
    and the ``/proc``, ``/dev`` and ``/sys`` mount points.
    """
    if not rootfs.is_dir():
        return [f"{rootfs} is not a folder (build one with: make slurm-rootfs DIR={rootfs})"]
    if rootfs.resolve() == Path("/"):
        return ["the host's own root is not another root filesystem: give the folder make slurm-rootfs built"]
    # lexists: Debian's programs are absolute links (/usr/sbin/slurmd -> /etc/alternatives/slurmd), which mean the
    # root filesystem's own only inside it
    programs = (*PROGRAMS.values(), "/bin/sh", "/bin/sleep")
    missing = [p for p in programs if not os.path.lexists(rootfs / p.lstrip("/"))]
    missing += [d for d in ("/proc", "/dev", "/sys") if not (rootfs / d.lstrip("/")).is_dir()]
    if missing:
        return [f"{rootfs} lacks {', '.join(missing)}: build it with make slurm-rootfs DIR={rootfs}"]
    return []


def python_paths() -> tuple[Path, ...]:
    """The host folders the cluster's Python programs need inside the root.

    The interpreter's prefixes, its executable's folder and wattplan's source folder, resolved, none inside another.
    """
    source = Path(next(iter(wattplan.__path__))).resolve().parent
    found = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), source}
    found.add(Path(sys.executable).resolve().parent)
    return outermost(found)


def outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """``paths`` without those inside another of them, sorted."""
    ordered = sorted(set(paths), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for p in ordered:
        if not any(p == k or p.is_relative_to(k) for k in kept):
            kept.append(p)
    return tuple(sorted(kept))


def holder_script(rootfs: Path, cluster_root: Path, read_only: Sequence[Path]) -> str:
    """The shell program the holder runs inside its new mount namespace (module docstring); every path quoted."""
    q = shlex.quote
    r = str(rootfs)
    lines = ["set -eu"]
    for path in read_only:
        target = q(r + str(path))
        lines += [f"mkdir -p {target}", f"mount --bind {q(str(path))} {target}", f"mount -o remount,bind,ro {target}"]
    target = q(r + str(cluster_root))
    lines += [f"mkdir -p {target}", f"mount --bind {q(str(cluster_root))} {target}"]
    lines += [
        f"mount -t proc proc {q(r + '/proc')}",
        f"mount --rbind /dev {q(r + '/dev')}",
        f"mount --rbind /sys {q(r + '/sys')}",
        f"touch {q(r + '/etc/hosts')}",
        f"mount --bind /etc/hosts {q(r + '/etc/hosts')}",
        f"mount -o remount,bind,ro {q(r + '/etc/hosts')}",
        f"exec chroot {q(r)} /bin/sleep infinity",
    ]
    return "\n".join(lines)


def holder_root(pid: int) -> str | None:
    """The root folder ``pid`` runs in, as the host sees it; None when no such process."""
    try:
        return os.readlink(f"/proc/{pid}/root")
    except OSError:
        return None


def start_holder(rootfs: Path, cluster_root: Path, log: Path) -> int:
    """Start the holder (module docstring) and wait until it runs inside ``rootfs``; its PID.

    SlurmRootError, with the holder's output, when it exits or does not get there within :data:`READY_S`.
    """
    rootfs = rootfs.resolve()
    if cluster_root.resolve().is_relative_to(rootfs):
        raise SlurmRootError(f"the cluster's folder {cluster_root} lies inside the root filesystem {rootfs}")
    script = holder_script(rootfs, cluster_root.resolve(), python_paths())
    argv = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if holder_root(proc.pid) == str(rootfs):
            return proc.pid
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise SlurmRootError(
        f"could not enter {rootfs} in a mount namespace of its own (needs root, unshare and mount): {tail.strip()}"
    )


def wrapper_text(name: str, rootfs: Path, holder_pid: int) -> str:
    """``slurm-bin/NAME``: run the root filesystem's ``NAME`` in the holder's namespace and root (module docstring)."""
    q = shlex.quote
    inner = 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"'
    return "\n".join(
        [
            "#!/bin/sh",
            f"# written by wattplan cluster up --slurm-root: {name} of {rootfs}",
            f'if [ "$(readlink /proc/{holder_pid}/root)" != {q(str(rootfs))} ]; then',
            f"  echo {q(f'{name}: the namespace of {rootfs} (process {holder_pid}) is gone: cluster up again')} >&2",
            "  exit 127",
            "fi",
            f"exec nsenter --target={holder_pid} --mount --root --wd -- /usr/bin/env PATH={q(ROOT_PATH)} "
            f'/bin/sh -c {q(inner)} sh "$PWD" {q(name)} "$@"',
        ]
    )


def write_wrappers(bin_dir: Path, rootfs: Path, holder_pid: int) -> None:
    """One wrapper per program of :data:`PROGRAMS` in ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in PROGRAMS:
        path = bin_dir / name
        write_text_atomic(path, wrapper_text(name, rootfs.resolve(), holder_pid) + "\n")
        path.chmod(0o755)


def client_path(cluster_root: Path, path: str | None = None) -> str:
    """``PATH`` with the cluster's ``slurm-bin`` first (``path``: the rest; the environment's by default)."""
    rest = os.environ.get("PATH", "") if path is None else path
    return f"{cluster_root / BIN_DIR}:{rest}" if rest else str(cluster_root / BIN_DIR)
