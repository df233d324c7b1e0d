"""A real, throwaway Slurm cluster on this host for end-to-end tests (docs/design.md §11.1).

The cluster itself is :mod:`planner.cluster.slurm_daemons` (``wattplan cluster up`` starts the same one); this
module adds the pytest side: skip (or fail in CI) when Slurm is missing, start and delete a fresh one per test.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from wattplan.planner.cluster.slurm_daemons import SlurmCluster, SlurmNode, SlurmStartError, missing_binaries

__all__ = [
    "REQUIRED",
    "SLURMS",
    "SLURM_ROOTFS",
    "SlurmCluster",
    "SlurmNode",
    "SlurmStartError",
    "missing_binaries",
    "running_cluster",
    "up_args",
]


REQUIRED = os.environ.get("WATTPLAN_REQUIRE_SLURM") == "1"
"""CI sets this: a missing Slurm is then a failure, not a skip."""
SLURM_ROOTFS = os.environ.get("WATTPLAN_SLURM_ROOTFS", "")
"""A root filesystem with another Slurm (``make slurm-rootfs``; CI builds Slurm 24.11 and sets it)."""
SLURMS = ("host", "rootfs")
"""The Slurms an emulated-cluster test runs on (``@pytest.mark.parametrize("slurm", SLURMS)``): the host's own and
the one in :data:`SLURM_ROOTFS`."""


def up_args(slurm: str) -> list[str]:
    """``cluster up``'s arguments for ``slurm`` (one of :data:`SLURMS`); skips (fails in CI) a missing root."""
    if slurm == "host":
        return []
    if not SLURM_ROOTFS:
        _unavailable("WATTPLAN_SLURM_ROOTFS is not set: make slurm-rootfs DIR=... and export it")
    return ["--slurm-root", SLURM_ROOTFS]


def _unavailable(reason: str) -> None:
    import pytest

    if REQUIRED:
        pytest.fail(f"WATTPLAN_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def need_emulated_cluster() -> None:
    """Skip (or, in CI, fail) unless ``wattplan cluster up`` can run here: Slurm, munge, Prometheus and root."""
    missing = missing_binaries() + ([] if shutil.which("prometheus") else ["prometheus"])
    if missing:
        _unavailable(f"missing {', '.join(missing)}: apt-get install slurmctld slurmd slurm-client munge prometheus")
    if os.geteuid() != 0:
        _unavailable("the emulated cluster runs slurmd and mknod, which need root")


def running_cluster(prefix: str, nodes: Sequence[SlurmNode] | None = None) -> Iterator[SlurmCluster]:
    """A started cluster under a fresh folder named ``prefix*``, stopped (by PID) and deleted afterwards.

    ``nodes``: the cluster's nodes (default: :class:`SlurmCluster`'s two V100 nodes).

    Skips the test (fails it under ``WATTPLAN_REQUIRE_SLURM=1``) when Slurm is missing or this is not root.
    """
    missing = missing_binaries()
    if missing:
        _unavailable(
            f"Slurm is not installed ({', '.join(missing)} missing): "
            "apt-get install slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        _unavailable("the test cluster runs slurmd and mknod, which need root")
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)  # this fixture's own folder: any user's sbatch must reach the munge socket below it
    cluster = SlurmCluster(root) if nodes is None else SlurmCluster(root, nodes=tuple(nodes))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
