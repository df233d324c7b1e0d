"""Instances and plans for the launch tests: hostile job ids, a pair, two nodes, both setting units.

Plans are built with the planner's own :func:`planner.core.assemble.assemble_plan` from chosen
allocations (placement, claims and totals are computed as for any planner) and must pass the
validator, so the launch tests never depend on what a solver happens to choose.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.domain import Instance
from wattplan.planner.contracts.instance_io import parse_instance
from wattplan.planner.contracts.plan import Plan
from wattplan.planner.core.assemble import Allocation, SolveInfo, assemble_plan
from wattplan.planner.core.validate import validate_plan

HOSTILE_IDS = (
    "x; rm -rf /",
    "$(reboot)",
    "`touch pwned`",
    "quote ' \" back\\slash",
    "new\nline # not a comment",
    "ünï-côdé ${HOME} > /tmp/out",
)

COMMAND = ["sh", "-c", "sleep 1; env"]


def _profiles(job_type: str, gpu_type: str, counts: tuple[int, ...], settings: tuple[int, ...]) -> list[dict]:
    out = []
    for n in counts:
        for s in settings:
            out.append(
                {
                    "type": job_type,
                    "gpu_type": gpu_type,
                    "gpus": n,
                    "setting": s,
                    "steps_per_s": 1.0 * n * s / 100,
                    "power_w": 40 + s * 0.6,
                }
            )
    return out


def launch_instance_doc(with_commands: bool = True, command: list[str] | None = None) -> dict[str, Any]:
    r"""v100: 2 nodes x 8 GPUs (power limits 150/250 W); a100: 1 node x 4 GPUs (SM clocks 1005/1410 MHz).

    Jobs (A and B may share one GPU): ``train-4`` (4 GPUs), ``x; rm -rf /`` (2), ``$(reboot)`` and
    ``\`touch pwned\``` (a pair on 1 GPU), ``quote ...`` (1), ``two-more`` (2, lands on the second
    node), ``clocked`` (2 a100 GPUs), ``clock-pair-a``/``clock-pair-b`` (a pair on 1 a100 GPU), and
    ``waiting`` (never allocated).
    """
    jobs = [
        ("train-4", "A", [4]),
        (HOSTILE_IDS[0], "B", [2]),
        (HOSTILE_IDS[1], "A", [1]),
        (HOSTILE_IDS[2], "B", [1]),
        (HOSTILE_IDS[3], "A", [1]),
        ("two-more", "B", [2]),
        (HOSTILE_IDS[4], "A", [1]),
        (HOSTILE_IDS[5], "A", [1]),
        ("clocked", "A", [2]),
        ("clock-pair-a", "A", [1]),
        ("clock-pair-b", "B", [1]),
        ("waiting", "A", [1]),
    ]
    job_docs = []
    for job_id, job_type, counts in jobs:
        doc: dict[str, Any] = {
            "id": job_id,
            "type": job_type,
            "remaining_steps": 1000,
            "gpus": counts,
            "weight": 1.0,
            "current": None,
        }
        if with_commands:
            doc["command"] = list(command or COMMAND)
            doc["env"] = {"WATTPLAN_TEST_ID": job_id, "EVIL": "$(touch /tmp/wattplan-pwned) `id` ; exit 9"}
            doc["workdir"] = "/tmp"
        job_docs.append(doc)
    profiles = (
        _profiles("A", "v100", (1, 2, 4), (150, 250))
        + _profiles("B", "v100", (1, 2), (150, 250))
        + _profiles("A", "a100", (1, 2), (1005, 1410))
        + _profiles("B", "a100", (1, 2), (1005, 1410))
    )
    return {
        "schema": "wattplan.instance/1",
        "round": {"index": 7, "duration_s": 300, "budget_j": None, "restart_s": 0, "min_pair_rate": 0.5},
        "gpu_types": [
            {
                "name": "v100",
                "nodes": 2,
                "gpus_per_node": 8,
                "idle_power_w": 40,
                "node_power_w": 200,
                "setting_unit": "power_limit_w",
                "settings": [150, 250],
            },
            {
                "name": "a100",
                "nodes": 1,
                "gpus_per_node": 4,
                "idle_power_w": 50,
                "node_power_w": 200,
                "setting_unit": "sm_clock_mhz",
                "settings": [1005, 1410],
            },
        ],
        "jobs": job_docs,
        "profiles": profiles,
        "pairs": [
            {"a": "A", "b": "B", "gpu_type": "v100", "gpus": 1, "rho_a": 0.8, "rho_b": 0.7},
            {"a": "A", "b": "B", "gpu_type": "a100", "gpus": 1, "rho_a": 0.8, "rho_b": 0.7},
        ],
    }


def launch_instance(with_commands: bool = True, v100_only: bool = False, command: list[str] | None = None) -> Instance:
    """The instance of :func:`launch_instance_doc`; ``v100_only`` drops the a100 pool and its jobs."""
    doc = copy.deepcopy(launch_instance_doc(with_commands, command))
    if v100_only:
        doc["gpu_types"] = [g for g in doc["gpu_types"] if g["name"] == "v100"]
        doc["jobs"] = [j for j in doc["jobs"] if j["id"] not in ("clocked", "clock-pair-a", "clock-pair-b")]
        doc["profiles"] = [p for p in doc["profiles"] if p["gpu_type"] == "v100"]
        doc["pairs"] = [p for p in doc["pairs"] if p["gpu_type"] == "v100"]
    return parse_instance(doc)


def launch_allocations(v100_only: bool = False) -> list[Allocation]:
    allocations = [
        Allocation(("train-4",), "v100", 4, 250),
        Allocation((HOSTILE_IDS[0],), "v100", 2, 150),
        Allocation((HOSTILE_IDS[1], HOSTILE_IDS[2]), "v100", 1, 150),
        Allocation((HOSTILE_IDS[3],), "v100", 1, 250),
        Allocation(("two-more",), "v100", 2, 250),
        Allocation((HOSTILE_IDS[4],), "v100", 1, 150),
        Allocation((HOSTILE_IDS[5],), "v100", 1, 250),
    ]
    if not v100_only:
        allocations += [
            Allocation(("clocked",), "a100", 2, 1410),
            Allocation(("clock-pair-a", "clock-pair-b"), "a100", 1, 1005),
        ]
    return allocations


def hand_plan(instance: Instance, v100_only: bool = False) -> Plan:
    """A validated plan of :func:`launch_allocations` (v100 jobs fill node 0 and spill onto node 1)."""
    plan = assemble_plan(instance, launch_allocations(v100_only), SolveInfo(solver="hand", status="feasible"))
    problems = validate_plan(instance, plan)
    assert not problems, problems
    return plan


FAKE_NVIDIA_SMI = """\
#!/bin/sh
# Fake nvidia-smi for tests: records "NODE: ARGS", answers the two queries the scripts make (-i takes a list, as
# nvidia-smi's does). FAKE_SMI_NO_LISTS=1: refuses a list, as an nvidia-smi without them would; FAKE_SMI_REFUSE=I:
# GPU I refuses every call.
printf '%s: %s\\n' "${{SLURMD_NODENAME:-local}}" "$*" >> {log}
if [ "${{FAKE_SMI_NO_LISTS:-0}}" = 1 ]; then
  case "$2" in *,*) echo "Invalid combination of input arguments" >&2; exit 2 ;; esac
fi
old_ifs=$IFS
IFS=,
for i in $2; do
  [ "$i" = "${{FAKE_SMI_REFUSE:-}}" ] && {{ echo "GPU $i: Insufficient Permissions" >&2; IFS=$old_ifs; exit 4; }}
done
case "$*" in
  *--query-gpu=index,power.default_limit*) for i in $2; do echo "$i, 300.00"; done ;;
  *--query-gpu=uuid*) for i in $2; do echo "GPU-fake-$i"; done ;;
esac
IFS=$old_ifs
"""

FAKE_MPS_CONTROL = """\
#!/bin/sh
# Fake nvidia-cuda-mps-control for tests: records how it was started.
printf 'mps %s CUDA_VISIBLE_DEVICES=%s pipe=%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" >> {log}
"""


def install_fake_nvidia(bin_dir: Path, log: Path) -> None:
    """Put fake ``nvidia-smi`` and ``nvidia-cuda-mps-control`` (logging to ``log``) into ``bin_dir``."""
    import shlex

    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("nvidia-smi", FAKE_NVIDIA_SMI), ("nvidia-cuda-mps-control", FAKE_MPS_CONTROL)):
        path = bin_dir / name
        path.write_text(text.format(log=shlex.quote(str(log))))
        path.chmod(0o755)


def require_tool(name: str) -> str:
    """The path of ``name``; skips the test when it is missing.

    Under ``WATTPLAN_REQUIRE_SLURM=1`` (CI, where ``.ci/run`` installs shellcheck and Slurm)
    a missing tool fails the test instead.
    """
    import os
    import shutil

    import pytest

    path = shutil.which(name)
    if path is None:
        reason = f"{name} is not installed (Debian: apt-get install {name})"
        if os.environ.get("WATTPLAN_REQUIRE_SLURM") == "1":
            pytest.fail(f"WATTPLAN_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    return path


def shellcheck(paths: list[Path]) -> None:
    """Assert that ``bash -n`` and ``shellcheck`` find nothing in the scripts."""
    import subprocess

    for path in paths:
        syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert syntax.returncode == 0, f"{path}: {syntax.stderr}"
    result = subprocess.run(
        [require_tool("shellcheck"), "--shell=bash", *map(str, paths)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def multi_node_instance() -> Instance:
    """v100: 2 nodes x 8 GPUs, one job ``big`` on all 16 GPUs (power limit 250 W), without launch fields."""
    doc = launch_instance_doc(with_commands=False)
    doc["gpu_types"] = [g for g in doc["gpu_types"] if g["name"] == "v100"]
    doc["jobs"] = [
        {"id": "Big Job/16", "type": "A", "remaining_steps": 1000, "gpus": [16], "weight": 1.0, "current": None}
    ]
    doc["profiles"] = _profiles("A", "v100", (16,), (150, 250))
    doc["pairs"] = []
    return parse_instance(doc)


def multi_node_plan(instance: Instance) -> Plan:
    plan = assemble_plan(instance, [Allocation(("Big Job/16",), "v100", 16, 250)], SolveInfo("hand", "feasible"))
    assert not validate_plan(instance, plan)
    return plan
