"""Every profile library load is checked: structure (profiles.schema.json) and meaning, with the file named."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wattplan.planner.cli import app
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files.resources import profile_library
from wattplan.planner.profile_library.library import library_from_doc, load_profile_library

Edit = Callable[[dict[str, Any]], None]
SIM = ["simulate", "6c71a0.trace", "--cluster", "v100:16,p100:8", "--start-s", "2510560", "--max-jobs", "4"]
SMI = Path(__file__).parent / "data" / "nvidia_smi"
SIM_TAIL = ["--solver", "greedy", "--no-plots", "-q"]


@cache
def _shipped_text() -> str:
    return profile_library().read_text(encoding="utf-8")


def _shipped() -> dict[str, Any]:
    """A fresh copy of the shipped library document."""
    return copy.deepcopy(json.loads(_shipped_text()))


def _write(tmp_path: Path, edit: Edit, name: str = "lib.json") -> Path:
    """The shipped library with ``edit`` applied, written to ``tmp_path / name``."""
    doc = _shipped()
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _set(kind: str, index: int, **values: Any) -> Edit:
    return lambda doc: doc[kind][index].update(values)


def _duplicate_profile(doc: dict[str, Any]) -> None:
    doc["profiles"].append(dict(doc["profiles"][0]))


def _duplicate_pair(doc: dict[str, Any]) -> None:
    doc["pairs"].append(dict(doc["pairs"][0]))


def _below_idle(doc: dict[str, Any]) -> None:
    p = doc["profiles"][3]
    idle = next(g["idle_power_w"] for g in doc["gpu_types"] if g["name"] == p["gpu_type"])
    p["power_w"] = idle - 1


BAD: list[tuple[str, Edit, str, str]] = [
    ("rate 0", _set("profiles", 3, steps_per_s=0), "profiles[3].steps_per_s", "bad-library"),
    ("rate < 0", _set("profiles", 3, steps_per_s=-2.0), "profiles[3].steps_per_s", "bad-library"),
    ("rate nan", _set("profiles", 3, steps_per_s=float("nan")), "profiles[3].steps_per_s", "not-finite"),
    ("power 1e308", _set("profiles", 3, power_w=1e308), "profiles[3].power_w", "bad-library"),
    ("power 5001", _set("profiles", 3, power_w=5001.0), "profiles[3].power_w", "bad-library"),
    ("power -300", _set("profiles", 3, power_w=-300.0), "profiles[3].power_w", "bad-library"),
    ("power inf", _set("profiles", 3, power_w=float("inf")), "profiles[3].power_w", "not-finite"),
    ("power below idle", _below_idle, "profiles[3].power_w", "power-below-idle"),
    ("gpus 0", _set("profiles", 3, gpus=0), "profiles[3].gpus", "bad-library"),
    ("gpus 1.5", _set("profiles", 3, gpus=1.5), "profiles[3].gpus", "bad-library"),
    ("gpus text", _set("profiles", 3, gpus="2"), "profiles[3].gpus", "bad-library"),
    ("rho -0.5", _set("pairs", 2, rho_a=-0.5), "pairs[2].rho_a", "bad-library"),
    ("rho 5", _set("pairs", 2, rho_b=5.0), "pairs[2].rho_b", "bad-library"),
    ("unknown GPU type", _set("profiles", 3, gpu_type="h100"), "profiles[3].gpu_type", "unknown-gpu-type"),
    ("pair unknown GPU type", _set("pairs", 2, gpu_type="h100"), "pairs[2].gpu_type", "unknown-gpu-type"),
    ("setting not listed", _set("profiles", 3, setting=999), "profiles[3].setting", "setting-not-listed"),
    ("duplicate profile", _duplicate_profile, "profiles[", "duplicate-profile"),
    ("duplicate pair", _duplicate_pair, "pairs[", "duplicate-pair"),
    ("idle power < 0", _set("gpu_types", 0, idle_power_w=-1), "gpu_types[0].idle_power_w", "bad-library"),
    ("node power < 0", _set("gpu_types", 0, node_power_w=-5.0), "gpu_types[0].node_power_w", "bad-library"),
    ("node power nan", _set("gpu_types", 0, node_power_w=float("nan")), "gpu_types[0].node_power_w", "not-finite"),
    ("missing key", lambda doc: doc["profiles"][3].pop("type"), "profiles[3].type", "bad-library"),
    ("profiles not a list", lambda doc: doc.update(profiles={}), "profiles", "bad-library"),
]


def test_the_shipped_library_passes() -> None:
    assert len(load_profile_library(profile_library()).profiles) > 1000


@pytest.mark.parametrize(("edit", "path", "code"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_malformed_library_is_refused_with_its_path(edit: Edit, path: str, code: str) -> None:
    doc = _shipped()
    edit(doc)
    with pytest.raises(InputError) as caught:
        library_from_doc(doc, "lib.json")
    assert caught.value.source == "lib.json"
    assert any(p.code == code and p.path.startswith(path) for p in caught.value.problems), caught.value.problems


def _every_loader(lib: Path, tmp_path: Path) -> list[list[str]]:
    """Command lines that each load ``lib`` as a profile library."""
    out = tmp_path / "out"
    return [
        [*SIM, *SIM_TAIL, "--profiles", str(lib), "-o", str(out / "sim")],
        [*SIM, *SIM_TAIL, "--truth", str(lib), "-o", str(out / "truth")],
        ["profiles", "fit", str(lib), "--out", str(out / "fit.json")],
        ["profiles", "truth", str(lib), "--out", str(out / "truth.json")],
        ["profiles", "check", str(lib), str(SMI / "v100_units.csv")],
        ["profiles", "ingest", str(SMI / "v100_units.csv"), "--job-side", str(SMI / "v100_units.jobs.json")]
        + ["--library", str(lib), "--out", str(out / "ingested.json")],
        ["instance", "from-trace", "6c71a0.trace", "--cluster", "v100:16", "--at", "2510560"]
        + ["--profiles", str(lib), "-o", str(out / "i.json")],
    ]


def test_every_command_refuses_a_malformed_library(tmp_path: Path) -> None:
    """Each loader (simulate --profiles/--truth, profiles fit/truth/check/ingest, instance from-trace) exits 2."""
    lib = _write(tmp_path, _set("profiles", 3, power_w=-300.0), "neg.json")
    for args in _every_loader(lib, tmp_path):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "neg.json" in result.output and "profiles[3].power_w" in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


def test_a_truth_missing_a_job_type_is_refused_before_round_one(tmp_path: Path) -> None:
    gone = _shipped()["profiles"][0]["type"]

    def drop(doc: dict[str, Any]) -> None:
        doc["profiles"] = [p for p in doc["profiles"] if p["type"] != gone]
        doc["pairs"] = [q for q in doc["pairs"] if gone not in (q["a"], q["b"])]

    truth = _write(tmp_path, drop, "short_truth.json")
    result = CliRunner().invoke(app, [*SIM, *SIM_TAIL, "--truth", str(truth), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "short_truth.json" in result.output and "truth-missing-type" in result.output and gone in result.output


def test_a_truth_missing_a_gpu_type_is_refused(tmp_path: Path) -> None:
    def drop_p100(doc: dict[str, Any]) -> None:
        doc["gpu_types"] = [g for g in doc["gpu_types"] if g["name"] != "p100"]
        doc["profiles"] = [p for p in doc["profiles"] if p["gpu_type"] != "p100"]
        doc["pairs"] = [q for q in doc["pairs"] if q["gpu_type"] != "p100"]

    truth = _write(tmp_path, drop_p100, "v100_only.json")
    result = CliRunner().invoke(app, [*SIM, *SIM_TAIL, "--truth", str(truth), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "v100_only.json" in result.output and "p100" in result.output


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--alpha", "nan"),
        ("--alpha", "1.5"),
        ("--cap", "nan"),
        ("--cap", "inf"),
        ("--cap", "0"),
        ("--cap-spread", "nan"),
        ("--cap-spread", "-1"),
        ("--pair-factor", "100"),
        ("--pair-factor", "nan"),
        ("--idle-power-w", "inf"),
        ("--node-power-w", "-1"),
    ],
)
def test_truth_options_out_of_range_are_refused(tmp_path: Path, option: str, value: str) -> None:
    out = tmp_path / "truth.json"
    result = CliRunner().invoke(app, ["profiles", "truth", option, value, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert option in result.output and "bad-option" in result.output
    assert not out.exists()


def test_a_truth_whose_pair_rates_leave_the_range_is_refused(tmp_path: Path) -> None:
    """A prior pair rate of 1.2 times the largest pair factor, 1.5: 1.8, above 1.5; nothing written."""
    prior = _write(tmp_path, _set("pairs", 0, rho_a=1.2), "prior.json")
    out = tmp_path / "truth.json"
    result = CliRunner().invoke(app, ["profiles", "truth", str(prior), "--pair-factor", "1.5", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "pairs[0].rho_a" in result.output and "prior.json" in result.output
    assert not out.exists()


def test_a_library_read_again_is_the_one_made_before_until_its_text_changes(tmp_path: Path) -> None:
    path = tmp_path / "lib.json"
    path.write_text(_shipped_text(), encoding="utf-8")
    first = load_profile_library(path)
    assert load_profile_library(path) is first  # the same text: parsed and checked once
    doc = _shipped()
    doc["profiles"][0]["power_w"] += 1.0
    path.write_text(json.dumps(doc), encoding="utf-8")  # the same file, rewritten in place at once
    again = load_profile_library(path)
    assert again is not first and again.profiles[0].power_w == first.profiles[0].power_w + 1.0
    doc["profiles"][0]["steps_per_s"] = float("nan")
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as bad:  # a bad text is never remembered: it is checked every time
        load_profile_library(path)
    assert str(path) in str(bad.value)
