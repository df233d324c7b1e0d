"""A recorded Slurm the agent's loop runs against without a cluster, and an agent built on it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.agent.commands import CommandResult
from wattplan.planner.agent.loop import Agent, AgentConfig
from wattplan.planner.agent.store import AgentStore
from wattplan.planner.contracts.request import PlanRequest
from wattplan.planner.contracts.rules import RoundRules
from wattplan.planner.profile_library.library import load_profile_library

DATA = Path(__file__).resolve().parent.parent / "data" / "agent"
TYPES = {"resnet18": "ResNet-18 (batch size 64)", "bert": "Transformer (batch size 64)"}


def recorded_queue() -> str:
    """The recorded ``squeue --json`` of three held jobs, their types renamed to the shipped library's."""
    doc = json.loads((DATA / "squeue_held.json").read_text())
    for job in doc["jobs"]:
        for old, new in TYPES.items():
            job["comment"] = job["comment"].replace(f"type={old};", f"type={new};")
    return json.dumps(doc)


class FakeSlurm:
    """Answers the agent's commands from recorded documents; ``refuse`` maps a verb to Slurm's refusal."""

    def __init__(self, down: bool = False, refuse: dict[str, str] | None = None):
        self.down = down
        self.refuse = refuse or {}
        self.seen: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        args = tuple(argv)
        self.seen.append(args)
        if self.down:
            return CommandResult(
                args, 1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
            )
        if args == ("squeue", "--json"):
            return CommandResult(args, 0, recorded_queue(), "")
        if args == ("sinfo", "--json"):
            return CommandResult(args, 0, (DATA / "sinfo_mixed.json").read_text(), "")
        if args[:3] == ("scontrol", "show", "job"):
            return CommandResult(
                args, 0, "JobId=5 JobName=x\n     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)\n", ""
            )
        verb = args[1] if args[0] == "scontrol" else args[0]
        if verb in self.refuse:
            jobs = args[-1].split(",") if verb != "update" else [args[2].split("=")[1]]
            return CommandResult(args, 1, "", "\n".join(f"{self.refuse[verb]} for job {j}" for j in jobs))
        return CommandResult(args, 0, "", "")


def fake_agent(
    tmp_path: Path, slurm: FakeSlurm, solver: str = "greedy", dry_run: bool = False, **config_fields: Any
) -> tuple[Agent, list[str]]:
    """An agent on ``slurm`` with the shipped profiles, no Prometheus; ``config_fields`` set its configuration."""
    lines: list[str] = []
    config = AgentConfig(
        load_profile_library(None),
        RoundRules(objective="efficiency"),
        PlanRequest(solver=solver, time_limit_s=5.0, threads=1, lp_bound=False),
        settings_dir=tmp_path / "settings",
        dry_run=dry_run,
        retry_s=(0.0, 0.0, 0.0),
        **config_fields,
    )
    return Agent(config, AgentStore(tmp_path / "agent.db"), slurm, None, lines.append), lines
