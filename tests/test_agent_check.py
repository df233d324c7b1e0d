"""``wattplan agent check``: each finding on captured answers, one missing piece at a time.

The end-to-end check on a real emulated cluster (exit 0 with everything in place, then a piece removed at a time)
is ``tests/test_agent_check_live.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.helpers.agent_fakes import DATA, recorded_queue
from wattplan.planner.agent.check import CheckTarget, Finding, exit_code, node_scripts, run_checks
from wattplan.planner.agent.commands import CommandResult
from wattplan.planner.agent.prometheus import PrometheusError, Sample
from wattplan.planner.agent.slurm_config import slurm_config

NODE_FILES = Path(__file__).resolve().parent.parent / "planner" / "agent" / "node_files"


def _config(**changes: str) -> str:
    """``scontrol show config`` of a cluster with power saving and wattplan's node scripts, ``changes`` applied."""
    keys = {
        "SlurmUser": "slurm(64030)",
        "SuspendTime": "600 sec",
        "SuspendProgram": "/usr/local/sbin/suspend",
        "ResumeProgram": "/usr/local/sbin/resume",
        "Prolog": str(NODE_FILES / "prolog.sh"),
        "Epilog": str(NODE_FILES / "epilog.sh"),
        "TaskProlog": str(NODE_FILES / "task_prolog.sh"),
        "PrologFlags": "Alloc,Contain",
    } | changes
    lines = ["Configuration data as of 2026-11-29T18:00:00", *(f"{k:<23}= {v}" for k, v in keys.items()), ""]
    return "\n".join(lines)


def _clean_queue() -> str:
    """The recorded queue without its job whose opt-in is malformed (``steps=lots``)."""
    doc = json.loads(recorded_queue())
    doc["jobs"] = [job for job in doc["jobs"] if "steps=lots" not in job["comment"]]
    return json.dumps(doc)


class Slurm:
    def __init__(self, config: str, version: str = "slurm-wlm 22.05.8\n", down: bool = False, queue: str = ""):
        self.config, self.version, self.down = config, version, down
        self.queue = queue or _clean_queue()

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        args = tuple(argv)
        if self.down:
            return CommandResult(args, 1, "", "Unable to contact slurm controller (connect failure)")
        answers = {
            ("sinfo", "--version"): self.version,
            ("squeue", "--json"): self.queue,
            ("sinfo", "--json"): (DATA / "sinfo_mixed.json").read_text(),
            ("scontrol", "show", "config"): self.config,
        }
        return CommandResult(args, 0, answers[args], "")


class Prometheus:
    def __init__(
        self, energy: int = 2, labelled: int = 1, steps: int = 1, down: bool = False, targets: int = 1, up: float = 1.0
    ):
        self.energy, self.labelled, self.steps, self.down, self.targets = energy, labelled, steps, down, targets
        self.up = up

    def instant(self, query: str, at_unix: float | None = None) -> tuple[Sample, ...]:
        if self.down:
            raise PrometheusError("cannot reach Prometheus at http://p:9090: connection refused")
        if query == "up":
            return tuple(Sample({"job": "dcgm"}, 0.0, self.up) for _ in range(self.targets))
        if query == "wattplan_job_steps_done":
            return tuple(Sample({"hpc_job": str(i)}, 0.0, 5.0) for i in range(self.steps))
        labels = [{"hpc_job": "12"} if i < self.labelled else {} for i in range(self.energy)]
        return tuple(Sample(label, 0.0, 1e6) for label in labels)


def _check(tmp_path: Path, slurm: Slurm | None = None, prom: Prometheus | None = None, **kw: object) -> list[Finding]:
    settings = tmp_path / "settings"
    settings.mkdir(exist_ok=True)
    target = CheckTarget(
        slurm or Slurm(_config()),
        prom if prom is not None else Prometheus(),
        "http://p:9090",
        kw.pop("settings_dir", settings),  # type: ignore[arg-type]
        kw.pop("power_save", True),  # type: ignore[arg-type]
        euid=kw.pop("euid", 0),  # type: ignore[arg-type]
        user=kw.pop("user", "root"),  # type: ignore[arg-type]
        cap_port=kw.pop("cap_port", None),  # type: ignore[arg-type]
        cap_file=kw.pop("cap_file", None),  # type: ignore[arg-type]
        cap_token_file=kw.pop("cap_token_file", None),  # type: ignore[arg-type]
    )
    return run_checks(target)


def _verdicts(found: list[Finding]) -> dict[str, str]:
    return {f.check: f.verdict for f in found}


def test_everything_in_place_is_ok_and_exits_0(tmp_path: Path) -> None:
    found = _check(tmp_path)
    assert set(_verdicts(found).values()) == {"ok"}, found
    assert exit_code(found) == 0
    names = [f.check for f in found]
    assert names[:3] == ["Slurm version", "squeue --json", "sinfo --json"]
    assert {"permissions", "power saving", "Prolog", "Epilog", "TaskProlog", "settings folder", "Prometheus"} <= set(
        names
    )


@pytest.mark.parametrize(
    ("change", "check", "words"),
    [
        ({"slurm": Slurm(_config(), version="slurm 23.02.7\n")}, "Slurm version", "23.02.7 is not supported"),
        ({"slurm": Slurm(_config(SuspendTime="NONE"))}, "power saving", "--power-save is given but Slurm powers no"),
        ({"slurm": Slurm(_config(Prolog="(null)"))}, "Prolog", "slurm.conf has no Prolog="),
        ({"slurm": Slurm(_config(Epilog="/bin/true"))}, "Epilog", "not wattplan's epilog.sh"),
        ({"slurm": Slurm(_config(PrologFlags="Contain"))}, "PrologFlags", "add Alloc"),
        ({"settings_dir": Path("/nonexistent/settings")}, "settings folder", "does not exist"),
        ({"prom": Prometheus(down=True)}, "Prometheus", "connection refused"),
        ({"prom": Prometheus(targets=0)}, "Prometheus", "none of its 0 scrape targets is up"),
        ({"prom": Prometheus(targets=2, up=0.0)}, "Prometheus", "none of its 2 scrape targets is up"),
        ({"prom": Prometheus(energy=0)}, "DCGM energy", "is dcgm-exporter scraped"),
    ],
)
def test_each_missing_piece_is_named_and_exits_1(tmp_path: Path, change: dict, check: str, words: str) -> None:
    found = _check(tmp_path, **change)
    missing = [f for f in found if f.verdict == "missing"]
    assert [f.check for f in missing] == [check], found
    assert words in missing[0].detail
    assert exit_code(found) == 1


@pytest.mark.parametrize(
    ("change", "check", "words"),
    [
        ({"power_save": False}, "power saving", "--power-save is not given"),
        ({"euid": 1000, "user": "ana"}, "permissions", "neither root nor SlurmUser (slurm)"),
        ({"prom": Prometheus(labelled=0)}, "DCGM job labels", "--hpc-job-mapping-dir"),
        ({"prom": Prometheus(steps=0)}, "job progress", "estimates steps from the profiles"),
        ({"slurm": Slurm(_config(), queue=recorded_queue())}, "squeue --json", "job 4.comment: malformed opt-in"),
    ],
)
def test_what_the_agent_runs_without_is_a_warning_and_exits_0(
    tmp_path: Path, change: dict, check: str, words: str
) -> None:
    found = _check(tmp_path, **change)
    assert [f.check for f in found if f.verdict != "ok"] == [check], found
    assert words in next(f.detail for f in found if f.check == check)
    assert exit_code(found) == 0


def test_slurms_user_is_allowed_and_a_slurm_that_does_not_answer_is_missing(tmp_path: Path) -> None:
    assert _verdicts(_check(tmp_path, euid=64030, user="slurm"))["permissions"] == "ok"
    found = _check(tmp_path, slurm=Slurm("", down=True))
    verdicts = _verdicts(found)
    assert verdicts["Slurm version"] == verdicts["scontrol show config"] == "missing"
    assert "squeue --json" not in verdicts, "the version decides which JSON to ask for: none is asked without it"
    assert "connect failure" in found[0].detail


def test_scontrol_show_config_is_read_as_keys_and_values() -> None:
    config = slurm_config(_config(SuspendTime="NONE"))
    assert config["SuspendTime"] == "NONE" and config["SlurmUser"] == "slurm(64030)"
    assert config["PrologFlags"] == "Alloc,Contain" and "Configuration" not in config


def test_indexed_keys_of_newer_slurms_are_read_as_one_list(tmp_path: Path) -> None:
    """24.11 prints ``Prolog[0] = ...``: each script is read, and one of them being wattplan's is enough."""
    ours = tmp_path / "prolog"
    ours.write_text("#!/bin/sh\nexec /bin/bash /opt/wattplan/node_files/prolog.sh\n")
    ours.chmod(0o755)
    text = f"Configuration data\nProlog[0]               = /etc/site/other\nProlog[1]               = {ours}\n"
    config = slurm_config(text + "PrologFlags             = Alloc\nTaskProlog              = (null)\n")
    assert config["Prolog"] == f"/etc/site/other,{ours}"
    found = {f.check: f for f in node_scripts(config)}
    assert found["Prolog"].verdict == "ok" and found["Prolog"].detail == str(ours)
    assert found["TaskProlog"].verdict == "missing" and found["Epilog"].verdict == "missing"


def test_the_cap_endpoint_is_checked_only_with_its_port(tmp_path: Path) -> None:
    assert "power cap endpoint" not in _verdicts(_check(tmp_path))
    token = tmp_path / "token"
    token.write_text("0123456789abcdef0123\n")
    token.chmod(0o600)
    given = {"cap_port": 9465, "cap_file": tmp_path / "cap", "cap_token_file": token}
    found = {f.check: f for f in _check(tmp_path, **given)}
    assert found["power cap endpoint"].verdict == "ok", found
    token.chmod(0o644)
    found = {f.check: f for f in _check(tmp_path, **given)}
    assert found["power cap endpoint"].verdict == "missing" and "chmod 600" in found["power cap endpoint"].detail
    token.chmod(0o600)
    elsewhere = {**given, "cap_file": Path("/nonexistent/cap")}
    found = {f.check: f for f in _check(tmp_path, **elsewhere)}
    assert found["power cap endpoint"].verdict == "missing" and "may not write" in found["power cap endpoint"].detail
